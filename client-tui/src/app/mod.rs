//! The TUI's state and what changes it: core events in, keys in, actions out.
//!
//! Everything here is synchronous and terminal-free, so tests drive it with events and keys
//! and read back actions, committed lines and rendered frames. Cells move one way: live (in
//! the viewport) → finished (queued for scrollback) → written to scrollback and dropped, always
//! in transcript order.

use std::collections::VecDeque;

use ratatui::text::Line;
use stepper_protocol::session::{PermissionMode, SessionInfo};
use stepper_protocol::view::SessionView;

use crate::completion::{Popup, popup_for};
use crate::composer::Composer;
use crate::transcript::Cell;
use crate::{Exit, TuiOptions};

mod approval;
mod events;
mod keys;
mod live;
mod notes;

/// The request id of an approval that asks about a project's MCP server: this, and its name.
/// What an approval asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asks {
    /// A tool call of the session's turn, by its request id: over when the turn is.
    Tool(String),
    /// Whether a project's MCP server may run, by its name: outlasts turns.
    McpServer(String),
    /// Whether to trust the session's folder: outlasts turns.
    Trust,
}

/// An approval waiting for this user's answer.
#[derive(Debug, Clone)]
pub(crate) struct Approval {
    pub asks: Asks,
    pub tool: String,
    pub summary: String,
    pub command: Option<String>,
    pub diff: Option<String>,
}

/// An MCP server's form waiting for this user's answer: its fields, what is typed in each,
/// and the field being typed in.
#[derive(Debug, Clone)]
pub(crate) struct Elicit {
    pub request_id: String,
    pub server: String,
    pub message: String,
    pub fields: Vec<stepper_protocol::elicit::Field>,
    pub typed: Vec<String>,
    pub at: usize,
    /// Why the last Enter was refused.
    pub problem: Option<String>,
}

/// `/model`'s list: the daemon's models, one of them selected.
#[derive(Debug)]
pub(crate) struct ModelMenu {
    pub models: Vec<crate::ModelEntry>,
    pub selected: usize,
}

/// The whole state of the attached TUI.
#[derive(Debug)]
pub struct App {
    pub(crate) session: Option<SessionInfo>,
    pub(crate) model: String,
    /// The mode as the daemon last said: shown only once it is committed.
    pub(crate) mode: PermissionMode,
    /// The session's OS sandbox, as the daemon applies it.
    pub(crate) sandbox: Option<stepper_protocol::SandboxInfo>,
    /// The mode last asked with Shift-Tab and not confirmed yet: the next press cycles on
    /// from it.
    mode_asked: Option<PermissionMode>,
    pub(crate) context_window: Option<u64>,
    /// The session's events, folded: the turn, the queue, usage and context.
    pub(crate) events: SessionView,
    me: String,
    pub(crate) others: Vec<String>,
    /// Presence events up to this seq are history: `CoreEvent::Clients` already says who is
    /// here now, and replaying old attaches would count people twice.
    presence_after: u64,
    /// What the user's `statusLine` command printed last (`session/statusLine`).
    pub(crate) custom_status: Option<String>,
    files: Vec<String>,
    /// The daemon's own commands (custom and skills), for completion.
    pub(crate) commands: Vec<crate::CommandEntry>,
    /// Finished cells not yet written to scrollback, in order. Once written they are the
    /// terminal's: the app keeps nothing of them.
    finished: Vec<Cell>,
    /// Cells still changing, in transcript order.
    pub(crate) live: Vec<Cell>,
    pub(crate) approvals: VecDeque<Approval>,
    /// MCP servers' forms, answered after the approvals.
    pub(crate) elicits: VecDeque<Elicit>,
    /// MCP servers last said to have failed: their coming back is worth a line.
    mcp_failed: std::collections::HashSet<String>,
    /// When the approval in front appeared (app time): its answer keys count after the guard.
    approval_since: i64,
    pub(crate) composer: Composer,
    pub(crate) popup: Option<Popup>,
    popup_dismissed: Option<String>,
    pub(crate) running: bool,
    pub(crate) now_ms: i64,
    pub(crate) flash: Option<(String, i64)>,
    /// The user denied a call and asked to say what to do instead: the next words typed
    /// are the next input (the turn is being interrupted), not a steer.
    pub(crate) telling: bool,
    /// Tool cells show their whole output, and agent cells their activity and final text
    /// (Ctrl-O), not only their tail.
    pub(crate) expanded: bool,
    /// The last tool call gone to scrollback, while its output is cut there: Ctrl-O shows it
    /// again whole.
    last_tool: Option<crate::transcript::ToolCell>,
    /// `/model`'s list, while it is open.
    pub(crate) model_menu: Option<ModelMenu>,
    /// The session shown changed: the screen is cleared of the old one before the next draw.
    clear_screen: bool,
    exit: Option<Exit>,
}

impl App {
    pub fn new(opts: TuiOptions) -> Self {
        App {
            session: None,
            model: String::new(),
            mode: PermissionMode::Default,
            sandbox: None,
            mode_asked: None,
            context_window: None,
            events: SessionView::default(),
            me: String::new(),
            others: Vec::new(),
            presence_after: 0,
            custom_status: None,
            files: Vec::new(),
            commands: Vec::new(),
            finished: Vec::new(),
            live: Vec::new(),
            approvals: VecDeque::new(),
            elicits: VecDeque::new(),
            mcp_failed: Default::default(),
            approval_since: 0,
            composer: Composer::with_history(opts.history),
            popup: None,
            popup_dismissed: None,
            running: false,
            now_ms: 0,
            flash: None,
            expanded: false,
            last_tool: None,
            telling: false,
            model_menu: None,
            clear_screen: false,
            exit: None,
        }
    }

    /// Set when the core disconnected: the loop stops with it.
    pub fn exit(&self) -> Option<&Exit> {
        self.exit.as_ref()
    }

    /// Whether the screen is to be cleared (the session shown changed); asked once.
    pub fn take_clear_screen(&mut self) -> bool {
        std::mem::take(&mut self.clear_screen)
    }

    /// The seq of the last session event applied.
    pub fn last_seq(&self) -> u64 {
        self.events.last_seq()
    }

    /// Whether a turn runs (as far as the events say).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The text in the input box.
    pub fn input(&self) -> &str {
        self.composer.text()
    }

    /// The current time, ms since the epoch: drives the spinner, elapsed time and hints.
    pub fn tick(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        if self
            .flash
            .as_ref()
            .is_some_and(|(_, until)| *until <= now_ms)
        {
            self.flash = None;
        }
    }

    /// Whether the screen changes with time alone (a spinner, a hint that expires, a
    /// question whose keys are about to answer: with no turn running, a project's MCP server
    /// or trust in the folder, nothing else would show them).
    pub fn animating(&self) -> bool {
        self.running
            || self.flash.is_some()
            || self.live.iter().any(Cell::is_live)
            || ((!self.approvals.is_empty() || !self.elicits.is_empty())
                && !self.answer_keys_live())
    }

    /// The finished cells not yet committed, rendered at `width` for the scrollback, each
    /// after an empty line.
    pub fn take_history(&mut self, width: u16) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for cell in self.finished.drain(..) {
            if !cell.joins_previous() {
                out.push(Line::default());
            }
            out.extend(cell.lines(width, ""));
        }
        out
    }

    /// Leaving: the finished cells not yet committed, then what is still live (a message
    /// half streamed, a tool running) as it stands, so what the user saw stays on their
    /// screen. The turn goes on in the daemon; reattaching replays it whole.
    pub fn take_history_on_exit(&mut self, width: u16) -> Vec<Line<'static>> {
        let mut out = self.take_history(width);
        for cell in &self.live {
            let lines = cell.lines(width, "");
            if lines.iter().any(|l| l.width() > 0) {
                if !cell.joins_previous() {
                    out.push(Line::default());
                }
                out.extend(lines);
            }
        }
        out
    }

    fn push(&mut self, cell: Cell) {
        self.live.push(cell);
        self.settle();
    }

    fn refresh_popup(&mut self) {
        let text = self.composer.text();
        if self.popup_dismissed.as_deref() == Some(text) {
            self.popup = None;
            return;
        }
        self.popup_dismissed = None;
        let selected = self.popup.as_ref().map_or(0, |p| p.selected);
        self.popup =
            popup_for(text, self.composer.cursor(), &self.files, &self.commands).map(|mut p| {
                p.selected = selected.min(p.items.len().saturating_sub(1));
                p
            });
    }
}
