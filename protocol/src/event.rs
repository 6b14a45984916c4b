//! Events: the durable log of a session, as every client receives it.
//!
//! Each event is committed to the store before any client sees it, numbered by a per-session
//! `seq` that is gap-free and monotonic. A client that has seen up to `seq` N can always ask
//! for the rest with `session/subscribe {afterSeq: N}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::SessionId;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventEnvelope {
    pub session_id: SessionId,
    /// Per session, starting at 1, gap-free.
    pub seq: u64,
    /// Commit time, ms since the Unix epoch (UTC).
    pub at: i64,
    /// The turn the event belongs to, numbered from 1; absent for session-level events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The agent inside the turn that produced it: a layer before the last, a parallel
    /// layer's worker, or a dispatched subagent (see `LayerStarted`, `SubagentStarted`).
    /// Absent for the turn's own agent, whose text is the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub event: AppEvent,
}

/// An [`EventEnvelope`] as the JSON text that was committed, sent on without being decoded
/// and encoded again: a replayed or exported event is byte for byte what was sent live.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawEnvelope(Box<serde_json::value::RawValue>);

impl RawEnvelope {
    /// The envelope of an event whose payload (the `AppEvent` as JSON text) is `payload`.
    /// The payload is checked to be JSON, then copied in as it is.
    pub fn from_parts(
        session_id: &str,
        seq: u64,
        at: i64,
        (turn, agent): (Option<u32>, Option<&str>),
        payload: &str,
    ) -> serde_json::Result<RawEnvelope> {
        let payload: &serde_json::value::RawValue = serde_json::from_str(payload)?;
        RawEnvelope::with_payload(session_id, seq, at, (turn, agent), payload)
    }

    /// [`RawEnvelope::from_parts`] for a payload known to be JSON. Live and replayed
    /// events are both made here, so their bytes agree.
    pub fn with_payload(
        session_id: &str,
        seq: u64,
        at: i64,
        (turn, agent): (Option<u32>, Option<&str>),
        payload: &serde_json::value::RawValue,
    ) -> serde_json::Result<RawEnvelope> {
        /// `EventEnvelope`'s own encoding, with the event as text.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Parts<'a> {
            session_id: &'a str,
            seq: u64,
            at: i64,
            #[serde(skip_serializing_if = "Option::is_none")]
            turn: Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agent: Option<&'a str>,
            event: &'a serde_json::value::RawValue,
        }
        serde_json::value::to_raw_value(&Parts {
            session_id,
            seq,
            at,
            turn,
            agent,
            event: payload,
        })
        .map(RawEnvelope)
    }

    /// An envelope received as JSON text (a client keeping what it was sent).
    pub fn from_raw(raw: Box<serde_json::value::RawValue>) -> RawEnvelope {
        RawEnvelope(raw)
    }

    /// The JSON value, borrowed (for encoding several into one array).
    pub fn as_raw_value(&self) -> &serde_json::value::RawValue {
        &self.0
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Decode it (a client that wants the typed event).
    pub fn parse(&self) -> serde_json::Result<EventEnvelope> {
        serde_json::from_str(self.0.get())
    }

    /// The JSON, ready to be sent.
    pub fn to_raw_value(&self) -> Box<serde_json::value::RawValue> {
        self.0.clone()
    }
}

impl PartialEq for RawEnvelope {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawEnvelope {}

impl JsonSchema for RawEnvelope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        EventEnvelope::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        EventEnvelope::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        EventEnvelope::json_schema(generator)
    }
}

open_enum! {
    /// A hook event, by Claude Code's name (`HookRan`'s `event`).
    pub enum HookEvent {
        SessionStart = "SessionStart",
        UserPromptSubmit = "UserPromptSubmit",
        PreToolUse = "PreToolUse",
        PermissionRequest = "PermissionRequest",
        PostToolUse = "PostToolUse",
        PostToolUseFailure = "PostToolUseFailure",
        Notification = "Notification",
        Stop = "Stop",
        SubagentStart = "SubagentStart",
        SubagentStop = "SubagentStop",
        PreCompact = "PreCompact",
        PostCompact = "PostCompact",
        SessionEnd = "SessionEnd",
    }
}

open_enum! {
    /// How a hook's run ended (`HookRan`'s `outcome`).
    pub enum HookOutcome {
        /// Exit 0.
        Ok = "ok",
        /// Exit 2: what it ran for was blocked.
        Blocked = "blocked",
        /// Another exit code; nothing was blocked.
        Error = "error",
        /// It was killed at its timeout.
        Timeout = "timeout",
    }
}

/// What happened. Tagged by `type`; new variants are added, never changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum AppEvent {
    /// The first event of every session.
    SessionCreated {
        cwd: String,
        model: String,
        title: Option<String>,
    },
    /// An input was accepted and will run as a turn, in order.
    InputQueued {
        input_id: String,
        text: String,
        client: Option<String>,
        /// Its images and documents, stored in the session (`session/attachment` gives the
        /// bytes).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<crate::Attachment>,
    },
    /// A turn began for a queued input.
    TurnStarted {
        input_id: String,
        text: String,
        model: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<crate::Attachment>,
    },
    /// A piece of assistant text, as it streams.
    TextDelta { text: String },
    /// A piece of the model's reasoning, as it streams.
    ReasoningDelta { text: String },
    /// An assistant message is complete (or was cut short: `stopReason` says which).
    MessageCompleted {
        text: String,
        stop_reason: Option<String>,
    },
    /// The model called a tool. The permission gate decides next: when it asks,
    /// `ApprovalRequested` follows (then `ApprovalResolved`); the tool then runs or is
    /// refused, and `ToolCallFinished` ends the call either way.
    ToolCallStarted {
        call_id: String,
        tool: String,
        input: serde_json::Value,
    },
    /// Output of a running tool, as it comes (display only: the result holds what counts).
    ToolOutputDelta { call_id: String, text: String },
    /// A tool call ended.
    ToolCallFinished {
        call_id: String,
        status: ToolCallStatus,
        /// What the model was given back (may be cut for the event).
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        duration_ms: u64,
        /// A unified diff of what an edit changed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    /// Text added to the running turn (`session/steer`), given to the model at its next call
    /// (one more call when the model had finished). Text the turn did not take before it
    /// ended is queued as the next input under the same `inputId` (an `InputQueued`).
    Steered {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// The id `session/steer` answered with (absent in events of protocol 1.10 and before).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_id: Option<String>,
    },
    /// The files this turn changed were checkpointed: a rewind can put them back.
    CheckpointCreated { files: u32 },
    /// The session was rewound to before `turn`: its files, its conversation, or both.
    Rewound {
        turn: u32,
        files: u32,
        conversation: bool,
    },
    /// A client attached to the session (subscribed to its events).
    ClientAttached {
        client: String,
        kind: crate::methods::daemon::ClientKind,
        pid: Option<u32>,
    },
    /// A client left the session. The turn goes on.
    ClientDetached { client: String },
    /// The model of the session's next turns changed.
    ModelChanged {
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The permission mode of the session changed.
    ModeChanged {
        mode: crate::session::PermissionMode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The session's todo list, whole, as the model last wrote it.
    TodosUpdated { todos: Vec<TodoItem> },
    /// A tool call needs a person's yes: any attached client may answer (`session/approve`).
    ApprovalRequested {
        request_id: String,
        tool: String,
        /// What is asked, in a sentence.
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    /// An approval was answered (the first answer wins), and by whom.
    ApprovalResolved {
        request_id: String,
        decision: ApprovalDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// An MCP server asks the user for input while one of its tools runs
    /// (`elicitation/create`): a form of `schema`'s fields (a flat JSON Schema object of
    /// strings, numbers, integers, booleans and enums, each maybe with a `default`). Any
    /// client may answer with `session/elicit`; the first answer wins.
    ElicitationRequested {
        request_id: String,
        server: String,
        message: String,
        schema: serde_json::Value,
    },
    /// An elicitation was answered, or ended with its turn, and by whom. What was entered
    /// is not recorded.
    ElicitationResolved {
        request_id: String,
        action: ElicitAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// An MCP server of the session's folder changed state (`starting`, `connected`,
    /// `failed`, `needsLogin`): said in every live session of the folder, in a turn or not.
    McpServerStatus {
        server: String,
        status: crate::methods::mcp::McpStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Its tools, once connected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<u32>,
    },
    /// Token usage of the turn so far, and what it cost when the model's prices are known.
    UsageUpdated {
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The turn ended.
    TurnFinished {
        status: TurnStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// What kind of failure `error` is, where it is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_kind: Option<TurnErrorKind>,
    },
    /// Something went wrong; the message says what to do.
    Error { message: String },
    /// Something worth telling the user that is not an error.
    Notice { message: String },
    /// A hook of the user's ran (`setting.json`'s `hooks`, Claude Code's format).
    HookRan {
        /// The hook event.
        event: HookEvent,
        /// The handler's command line (shortened).
        command: String,
        outcome: HookOutcome,
        duration_ms: u64,
        /// What it said: its stderr when it blocked or failed, its `systemMessage` when ok.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A layer of a layered turn (`.stepper/stepper.md` with front matter) began. Its
    /// events carry `agentId` (the last layer's do not: its text is the answer); a parallel
    /// layer's come from its workers (`SubagentStarted`).
    LayerStarted {
        /// From 1.
        index: u32,
        /// How many layers the turn has.
        count: u32,
        name: String,
        model: String,
        parallel: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
    },
    /// A layer ended; `text` is what it hands to the next layer (the last one's is the
    /// turn's answer).
    LayerFinished {
        index: u32,
        name: String,
        status: TurnStatus,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The workers a parallel layer ran (0 otherwise).
        workers: u32,
    },
    /// A subagent began: a parallel layer's worker (`layer` is that layer's index) or one
    /// the model started with `dispatch`. Every event it produces carries `agentId`.
    SubagentStarted {
        agent_id: String,
        name: String,
        model: String,
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        layer: Option<u32>,
        /// The git worktree it works in, when it runs isolated (`isolation: worktree`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<Box<Worktree>>,
    },
    /// What isolated workers or subagents changed came back to the session's folder, in
    /// task order, after they all ended. A conflict stops the merge at that agent; its
    /// worktree and those of the agents after it (and of any that failed) are kept.
    WorktreesMerged {
        /// The parallel layer's index; absent for subagents started with `dispatch`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        layer: Option<u32>,
        /// The agents whose changes were applied, in task order.
        merged: Vec<String>,
        /// Files of the folder the applied changes wrote or removed.
        files: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conflict: Option<Box<WorktreeConflict>>,
        /// Worktrees left in place (with their branches) for the user to look at.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<KeptWorktree>,
        /// Why nothing could be merged (git failed), when that happened.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A subagent ended, with its final text (what its layer or its caller receives).
    SubagentFinished {
        agent_id: String,
        name: String,
        status: TurnStatus,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        usage: Usage,
    },
    /// The context is being compacted: older tool outputs pruned, older messages summarised.
    CompactionStarted {
        /// The context's estimated size before, in tokens.
        before_tokens: u64,
        /// Asked for (`/compact`) rather than reached the threshold.
        manual: bool,
    },
    /// Compaction ended: the context the model sees from now on, and that is stored.
    CompactionFinished {
        before_tokens: u64,
        after_tokens: u64,
        /// Tool outputs cut short.
        pruned: u32,
        /// Messages replaced by the summary (0: pruning was enough, or it failed).
        summarized: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An event of a newer daemon that this client does not know; never sent, only
    /// received. Clients skip it, so a minor protocol version can add variants.
    #[serde(other)]
    Unknown,
}

impl AppEvent {
    /// A `WorktreesMerged` told in a line, as every client shows it.
    pub fn worktrees_summary(&self) -> Option<String> {
        let AppEvent::WorktreesMerged {
            merged,
            files,
            conflict,
            kept,
            error,
            ..
        } = self
        else {
            return None;
        };
        let mut parts = Vec::new();
        if let Some(error) = error {
            parts.push(format!("not merged: {error}"));
        } else if merged.is_empty() {
            parts.push("no worktree changes to merge".to_string());
        } else {
            parts.push(format!(
                "merged {} into the folder ({files} file{})",
                merged.join(", "),
                if *files == 1 { "" } else { "s" }
            ));
        }
        if let Some(conflict) = conflict {
            parts.push(format!(
                "{} conflicts in {}",
                conflict.agent_id,
                conflict.files.join(", ")
            ));
        }
        for k in kept {
            let why = match k.reason {
                KeptReason::Unfinished => "unfinished",
                KeptReason::Conflict => "conflict",
                KeptReason::NotMerged => "not merged",
            };
            parts.push(format!("kept {} ({why}): {}", k.branch, k.path));
        }
        Some(parts.join("; "))
    }

    /// The variant name, as it appears in `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            AppEvent::SessionCreated { .. } => "SessionCreated",
            AppEvent::InputQueued { .. } => "InputQueued",
            AppEvent::TurnStarted { .. } => "TurnStarted",
            AppEvent::TextDelta { .. } => "TextDelta",
            AppEvent::ReasoningDelta { .. } => "ReasoningDelta",
            AppEvent::MessageCompleted { .. } => "MessageCompleted",
            AppEvent::UsageUpdated { .. } => "UsageUpdated",
            AppEvent::ToolCallStarted { .. } => "ToolCallStarted",
            AppEvent::ApprovalRequested { .. } => "ApprovalRequested",
            AppEvent::TodosUpdated { .. } => "TodosUpdated",
            AppEvent::ClientAttached { .. } => "ClientAttached",
            AppEvent::Steered { .. } => "Steered",
            AppEvent::CheckpointCreated { .. } => "CheckpointCreated",
            AppEvent::Rewound { .. } => "Rewound",
            AppEvent::ClientDetached { .. } => "ClientDetached",
            AppEvent::ModelChanged { .. } => "ModelChanged",
            AppEvent::ModeChanged { .. } => "ModeChanged",
            AppEvent::ApprovalResolved { .. } => "ApprovalResolved",
            AppEvent::ElicitationRequested { .. } => "ElicitationRequested",
            AppEvent::ElicitationResolved { .. } => "ElicitationResolved",
            AppEvent::McpServerStatus { .. } => "McpServerStatus",
            AppEvent::ToolOutputDelta { .. } => "ToolOutputDelta",
            AppEvent::ToolCallFinished { .. } => "ToolCallFinished",
            AppEvent::TurnFinished { .. } => "TurnFinished",
            AppEvent::Error { .. } => "Error",
            AppEvent::Notice { .. } => "Notice",
            AppEvent::HookRan { .. } => "HookRan",
            AppEvent::LayerStarted { .. } => "LayerStarted",
            AppEvent::LayerFinished { .. } => "LayerFinished",
            AppEvent::SubagentStarted { .. } => "SubagentStarted",
            AppEvent::WorktreesMerged { .. } => "WorktreesMerged",
            AppEvent::SubagentFinished { .. } => "SubagentFinished",
            AppEvent::CompactionStarted { .. } => "CompactionStarted",
            AppEvent::CompactionFinished { .. } => "CompactionFinished",
            AppEvent::Unknown => "Unknown",
        }
    }
}

/// A git worktree an isolated worker or subagent works in, on a branch of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    /// The agent's working folder inside the worktree.
    pub path: String,
    /// `stepper/…`; for a folder that is not a repository, a branch of a private
    /// repository stepper made to copy it.
    pub branch: String,
}

/// The agent whose changes did not apply over those merged before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeConflict {
    pub agent_id: String,
    /// The files both changed, relative to the repository's top.
    pub files: Vec<String>,
}

/// A worktree left in place after a merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeptWorktree {
    pub agent_id: String,
    pub path: String,
    pub branch: String,
    pub reason: KeptReason,
}

/// Why a worktree was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeptReason {
    /// Its agent failed or was interrupted: what it changed was not merged.
    Unfinished,
    /// Its changes conflicted with those merged before it.
    Conflict,
    /// It came after a conflict: the merge had stopped.
    NotMerged,
}

/// One item of the session's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
    /// The item in the present continuous, shown while it is in progress ("Running tests").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// How an elicitation was answered: `accept` (with what was entered), `decline`, or
/// `cancel` (dismissed without a choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    Allow,
    /// Allow, and the same again in this session without asking.
    AllowAlways,
    Deny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolCallStatus {
    Ok,
    /// The tool ran and failed (bad arguments, a missing file, a timeout).
    Error,
    /// The permission gate refused it.
    Denied,
    Cancelled,
}

/// What kind of failure ended a turn (`TurnFinished.errorKind`), for a client to branch on
/// (`stepper ask` exits 3 for `provider`). New kinds may be added in a minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnErrorKind {
    /// The model's provider refused or failed the call: an HTTP error (a bad key, a rate
    /// limit, an overload), a broken stream, an answer cut short.
    Provider,
    /// The store could not write the session's events (a full disk, a lock held too long).
    Store,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    Completed,
    Interrupted,
    Failed,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_envelope_is_the_envelopes_own_encoding() {
        for (turn, agent) in [(None, None), (Some(3), None), (Some(3), Some("layer-1"))] {
            let envelope = EventEnvelope {
                session_id: "01a2-\"odd\"".into(),
                seq: 42,
                at: -5,
                turn,
                agent: agent.map(String::from),
                event: AppEvent::TextDelta {
                    text: "é\n\u{1}".into(),
                },
            };
            let payload = serde_json::to_string(&envelope.event).unwrap();
            let raw =
                RawEnvelope::from_parts(&envelope.session_id, 42, -5, (turn, agent), &payload)
                    .unwrap();
            assert_eq!(raw.get(), serde_json::to_string(&envelope).unwrap());
            assert_eq!(raw.parse().unwrap(), envelope);
        }
    }

    #[test]
    fn events_from_a_newer_daemon_are_skippable() {
        let json = r#"{"sessionId":"s","seq":3,"at":1,"event":{"type":"FromTheFuture","x":1}}"#;
        let e: EventEnvelope = serde_json::from_str(json).unwrap();
        assert_eq!(e.event, AppEvent::Unknown);
    }

    #[test]
    fn wire_shape_is_camel_case_and_tagged() {
        let e = AppEvent::InputQueued {
            attachments: Vec::new(),
            input_id: "i".into(),
            text: "t".into(),
            client: None,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "InputQueued");
        assert_eq!(v["inputId"], "i");
    }
}
