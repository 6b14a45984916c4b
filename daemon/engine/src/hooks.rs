//! What a turn asks of the user's hooks (Claude Code's `PreToolUse`, `PostToolUse`, `Stop`):
//! the engine says when, the daemon runs them. A hook can change a call's input, settle its
//! permission, block it, give the model feedback on a result, or keep the turn going.

use futures::future::BoxFuture;

pub mod settings;

/// The events hooks may be configured for, by Claude Code's names ([`HookEvent::ALL`]).
pub use stepper_protocol::event::HookEvent;

/// The events' names, as settings spell them.
pub fn event_names() -> Vec<&'static str> {
    HookEvent::ALL.iter().map(|e| e.as_str()).collect()
}

/// Claude Code's events stepper accepts in settings and never fires, each with why and
/// what to do instead: a repository's settings that have them load as they are.
pub const NOT_FIRED: &[(&str, &str)] = &[(
    "Setup",
    "Claude Code fires it only for `claude --init` and `--maintenance`, which stepper has no \
     counterpart of; to set a project up at each session's start, use SessionStart with the \
     matcher \"startup\"",
)];

/// Why `event` is accepted and not run, if it is one of [`NOT_FIRED`].
pub fn not_fired(event: &str) -> Option<&'static str> {
    NOT_FIRED
        .iter()
        .find_map(|(name, why)| (*name == event).then_some(*why))
}

/// What a `PreToolUse` hook settled about a call's permission. Deny rules hold either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateHint {
    /// Run without asking (unless a deny rule refuses it).
    Allow,
    /// Ask the user, even where the gate would allow it; the reason is shown.
    Ask(String),
}

/// Before a tool call runs.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeTool {
    /// Run it: with this input instead of the model's, and this permission, when given;
    /// `context` is added to what the model reads of its result.
    Run {
        input: Option<serde_json::Value>,
        hint: Option<GateHint>,
        context: Option<String>,
    },
    /// Do not run it; the reason goes to the model.
    Block(String),
    /// Do not run it, and end the turn after this step; the reason is said to the user.
    StopTurn(String),
}

impl BeforeTool {
    pub const RUN: BeforeTool = BeforeTool::Run {
        input: None,
        hint: None,
        context: None,
    };
}

/// After a tool call ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AfterTool {
    /// Added to what the model reads of the result.
    pub feedback: Option<String>,
    /// End the turn after this step (`continue: false`); the reason is said to the user.
    pub stop: Option<String>,
}

pub trait TurnHooks: Send + Sync {
    /// `tool` is about to run with `input` (the names are stepper's: `bash`, `edit`, …).
    fn before_tool<'a>(
        &'a self,
        call_id: &'a str,
        tool: &'a str,
        input: &'a serde_json::Value,
    ) -> BoxFuture<'a, BeforeTool>;

    /// `tool` ran (`ok`: it succeeded) and gave `output`: what to add to what the model
    /// reads of it, and whether the turn ends after this step.
    fn after_tool<'a>(
        &'a self,
        call_id: &'a str,
        tool: &'a str,
        input: &'a serde_json::Value,
        output: &'a str,
        ok: bool,
    ) -> BoxFuture<'a, AfterTool>;

    /// A call's input as a hook changed it when asked for permission (`changed`, in the
    /// hook's spelling), over the call's own `input`, in stepper's spelling.
    fn changed_input(
        &self,
        tool: &str,
        changed: &serde_json::Value,
        input: &serde_json::Value,
    ) -> serde_json::Value {
        let _ = (tool, input);
        changed.clone()
    }

    /// The model is done; `Some(reason)` keeps the turn going with the reason as the user's
    /// words. `active`: a hook already kept it going once in this turn.
    fn before_stop<'a>(&'a self, active: bool, last_text: &'a str)
    -> BoxFuture<'a, Option<String>>;

    /// The context is being compacted (`done`: it was): `trigger` is `auto` or `manual`,
    /// `instructions` what the user asked the summary to keep (`PreCompact`, `PostCompact`).
    fn compacting<'a>(
        &'a self,
        trigger: &'a str,
        instructions: Option<&'a str>,
        done: bool,
    ) -> BoxFuture<'a, ()> {
        let _ = (trigger, instructions, done);
        Box::pin(async {})
    }
}
