//! `stepper attach`: the ratatui terminal UI, behind a channel contract — [`Action`]s out,
//! [`CoreEvent`]s in, a cancellation token — so it never sees a socket or daemon code.
//!
//! The state and its keys live in [`App`], testable without a terminal; [`run`] only glues
//! the terminal's events, the core's events, a redraw tick and an inline screen together.
//! Finished cells go to the terminal's own scrollback; only what still changes (the streaming
//! cell, running tools, an approval, the input and the status line) stays in the viewport.

mod app;
mod command;
mod completion;
mod composer;
mod highlight;
mod markdown;
mod picker;
mod screen;
mod setup;
mod terminal;
mod theme;
mod transcript;
mod view;
mod wrap;

pub use app::App;
pub use picker::{Pick, Picker, pick, pick_with};
pub use screen::Screen;
pub use setup::{
    Setup, SetupCalls, SetupOffer, SetupOutcome, SetupReply, SetupRequest, SetupStep, setup,
    setup_with,
};
pub use stepper_protocol::event::{ApprovalDecision, EventEnvelope};
pub use stepper_protocol::methods::{AttachedClient, ModelEntry};
pub use stepper_protocol::session::{PermissionMode, SandboxInfo, SessionInfo};
pub use terminal::{KeySource, run, run_with};

/// What the TUI asks of the core (the bridge turns each into a daemon call).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A new input; the daemon queues it if a turn runs. `attachments` go as its parts.
    Submit {
        text: String,
        attachments: Vec<Attached>,
    },
    /// Text added to the running turn.
    Steer {
        text: String,
    },
    /// Esc (or Ctrl-C on an empty input) while a turn runs.
    Interrupt,
    Approve {
        request_id: String,
        decision: ApprovalDecision,
    },
    /// A project's MCP server answered: `Allow` lets it run, `AllowAlways` lets all of the
    /// project's servers run, `Deny` refuses it (each remembered for the project).
    ApproveMcpServer {
        name: String,
        decision: ApprovalDecision,
    },
    /// The answer to [`CoreEvent::Trust`]: trust the session's folder or not (remembered
    /// either way, in the user's own config).
    Trust {
        trusted: bool,
    },
    /// An MCP server's form answered: `content` with `accept`.
    Elicit {
        request_id: String,
        action: stepper_protocol::ElicitAction,
        content: Option<stepper_protocol::elicit::Content>,
    },
    SetMode {
        mode: PermissionMode,
    },
    SetModel {
        model: String,
    },
    /// `/model` alone: the models to choose from, answered with [`CoreEvent::Models`].
    ListModels,
    Rewind {
        turn: u32,
        files: bool,
        conversation: bool,
    },
    /// `/memory`: show where the session's instructions come from.
    Memory,
    /// `/compact [instructions]`: compact the conversation now, keeping what they say.
    Compact {
        instructions: String,
    },
    /// `/fork [N]`: a new session with this one's conversation (before turn N), shown here.
    Fork {
        args: String,
    },
    /// `/init`: scaffold the project's `.stepper/` files.
    Init,
    /// A slash command the TUI does not handle itself, without its `/`: a custom command or
    /// skill, for the daemon to expand.
    Command {
        name: String,
        args: String,
    },
    /// Ctrl-D on an empty input, `/detach`, `/quit`, `/exit`: leave; the turn goes on.
    Detach,
    /// A file to attach to the input being written (a pasted path, an `@` completion):
    /// absolute, or from the client's folder. The core reads and checks it and answers with
    /// [`CoreEvent::Attached`], or [`CoreEvent::Notice`] saying why not.
    Attach {
        path: String,
    },
    /// Ctrl-V: the clipboard's image, answered as [`Action::Attach`] is.
    PasteImage,
}

/// An image or a PDF in the input being written, read and checked by the core; its bytes
/// go with the input when it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Attached {
    /// For people: the file's name (`clipboard.png` for a pasted image).
    pub name: String,
    pub kind: stepper_protocol::AttachmentKind,
    pub media_type: String,
    pub bytes: std::sync::Arc<[u8]>,
}

impl Attached {
    /// How the input box shows it: `[image: shot.png 120 KB]`, as the transcript shows it
    /// once sent (`Attachment::label`).
    pub fn label(&self) -> String {
        format!(
            "[{}: {} {}]",
            self.kind,
            self.name,
            stepper_protocol::attachment::human_size(self.bytes.len() as u64)
        )
    }
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Attached({} {})", self.media_type, self.label())
    }
}

/// A project's MCP server that runs only once the user approves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingMcpServer {
    pub name: String,
    /// The file that names it (`.mcp.json`).
    pub file: String,
    /// What it runs: its command line or URL.
    pub target: String,
}

/// A folder the user never decided about, whose project files ask for what only trust
/// gives (hooks, allow rules, MCP servers, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustQuestion {
    /// What trusting records: the top of the folder's repository, or the folder.
    pub folder: String,
    /// What the files ask for, one item each (`.stepper/setting.json: hooks (Stop)`).
    pub ignored: Vec<String>,
}

/// A slash command the daemon knows beyond the TUI's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEntry {
    /// Without its `/`.
    pub name: String,
    pub description: String,
}

/// What the core tells the TUI.
#[derive(Debug, Clone, PartialEq)]
pub enum CoreEvent {
    /// Session events in seq order, from replay and then live. Envelopes whose seq is not
    /// above the last applied one are dropped, so a resubscription never duplicates.
    Event(EventEnvelope),
    /// The session shown (sent first, and again when it changes).
    Session {
        info: SessionInfo,
        mode: PermissionMode,
        /// The OS sandbox its commands run in (absent from an older daemon).
        sandbox: Option<SandboxInfo>,
        context_window: Option<u64>,
    },
    /// The clients attached now; `me` is this client's name, not counted as another.
    Clients {
        clients: Vec<AttachedClient>,
        me: String,
    },
    /// Paths (relative to the cwd) for `@file` completion.
    Files(Vec<String>),
    /// What the user's `statusLine` command printed, drawn under the status line (`None`:
    /// nothing to draw).
    StatusLine(Option<String>),
    /// An action failed (an approval already answered elsewhere): shown, not fatal.
    Error(String),
    /// What a command asked to see (`/memory`), shown in the transcript.
    Info(String),
    /// Something the user asked for could not be done, and why (no image on the clipboard,
    /// a file that is not an image): shown as a warning, not fatal.
    Notice(String),
    /// A file or the clipboard's image, read for [`Action::Attach`] or
    /// [`Action::PasteImage`]: it joins the input being written.
    Attached(Attached),
    /// The daemon's custom commands and skills (`/name`), for completion.
    Commands(Vec<CommandEntry>),
    /// The project's MCP servers waiting for this user's approval: asked like approvals.
    PendingMcp(Vec<PendingMcpServer>),
    /// Whether to trust the session's folder: asked like an approval, before anything else.
    Trust(TrustQuestion),
    /// The models the daemon knows (`models/list`), for `/model`'s picker.
    Models(Vec<ModelEntry>),
    /// The connection to the daemon dropped for good.
    Disconnected(String),
}

/// How the TUI starts.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// Previous inputs, oldest first, for Up/Down.
    pub history: Vec<String>,
}

/// Why [`run`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// The user left (Ctrl-D, `/detach`); `Action::Detach` was sent first.
    Detached,
    /// The cancellation token fired.
    Cancelled,
    /// The core disconnected, or closed a channel.
    Disconnected(String),
}
