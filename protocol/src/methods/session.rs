//! A session's methods (`session/*`): create, list, submit, approve, rewind, fork, export,
//! and what a session reports of its clients, memory, context and status line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ClientKind;
use crate::session::{Env, PermissionMode, SandboxInfo, SandboxMode, SessionId, SessionInfo};

open_enum! {
    /// Where a piece of the session's instructions comes from.
    pub enum MemorySource {
        /// `.stepper/stepper.md`.
        Stepper = "stepper",
        /// `<config>/AGENTS.md`.
        User = "user",
        /// A folder's `AGENTS.md`.
        Agents = "agents",
        /// `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`, `~/.claude/CLAUDE.md`.
        Claude = "claude",
        /// `.claude/rules/*.md`.
        Rules = "rules",
        /// Brought in by `@path`.
        Import = "import",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreateParams {
    pub cwd: String,
    /// The client's environment. Kept in memory for tools and provider keys; only variables
    /// whose names do not look secret are written to disk.
    #[serde(default)]
    pub env: Env,
    /// `provider/model-id`; the daemon's default when absent.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    /// Record every provider exchange of the session to this file (an absolute path), for
    /// `--model replay/<file>`.
    #[serde(default)]
    pub record: Option<String>,
    /// The permission mode (the settings' when absent).
    #[serde(default)]
    pub mode: Option<PermissionMode>,
    /// The OS sandbox of the session's commands (the settings' when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// A first input, queued in the same commit as the session (as `session/submit` would
    /// queue it): one round trip and one commit fewer for a client that asks right away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The first input's images and documents (and more text), as `session/submit`'s
    /// `parts`; with no `input`, these alone are the first input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_parts: Vec<crate::InputPart>,
    /// Instructions in place of stepper's own for the model's family (the settings'
    /// `systemPrompt`); the environment, memory files and layers still follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Instructions added after stepper's own, the environment and memory (the settings'
    /// `appendSystemPrompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    pub session_id: SessionId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResponse {
    pub session: SessionInfo,
    /// The permission mode its next tool call runs under: the session's own, else the
    /// settings' for its folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PermissionMode>,
    /// The OS sandbox its commands run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxInfo>,
    /// The first input `session/create` queued, when it was given one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<SessionSubmitResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionListParams {
    /// Only sessions whose working directory is this one.
    #[serde(default)]
    pub cwd: Option<String>,
    /// At most this many (default 50, at most 500; 0 is refused).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionListResponse {
    pub sessions: Vec<SessionInfo>,
    /// Present when there are more: pass it back as `cursor`.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSubmitParams {
    pub session_id: SessionId,
    /// The input's text (may be empty when `parts` hold it).
    #[serde(default)]
    pub text: String,
    /// Images, documents and more text, after `text`: see PROTOCOL.md for the limits.
    /// Refused by `session/steer`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<crate::InputPart>,
    /// The submitting client's environment; refreshes the session's when present.
    #[serde(default)]
    pub env: Option<Env>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSubmitResponse {
    /// Matches `inputId` of the `InputQueued` and `TurnStarted` events for this input.
    pub input_id: String,
    /// The seq of the `InputQueued` event, already committed.
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInterruptResponse {
    /// Whether a turn was running.
    pub interrupted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSubscribeParams {
    pub session_id: SessionId,
    /// Events with a seq above this are sent; 0 for all.
    #[serde(default)]
    pub after_seq: u64,
    /// Leave out of what is read back from the store the streamed pieces of turns that
    /// completed — `TextDelta`, `ReasoningDelta`, `ToolOutputDelta` — whose
    /// `MessageCompleted` and `ToolCallFinished` carry the text: a client showing history
    /// gets a long session in a fraction of the events. The seqs then have gaps. Events of
    /// turns still running, or interrupted or failed, are all sent, and so is everything live.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_finished_deltas: bool,
    /// Send events in arrays: each `session/event` notification's `result` is then an array
    /// of one or more envelopes, in seq order (up to 256 events or about 1 MiB each). Events
    /// that are ready together go together, which saves most of the per-message cost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionApproveParams {
    pub session_id: SessionId,
    pub request_id: String,
    pub decision: crate::event::ApprovalDecision,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionElicitParams {
    pub session_id: SessionId,
    pub request_id: String,
    pub action: crate::event::ElicitAction,
    /// With `accept`: the fields entered, by name (those left out take the schema's
    /// defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetModelParams {
    pub session_id: SessionId,
    /// `provider/model-id`, or a bare id or alias naming one catalogue model (`opus`,
    /// `gpt-5-mini`); checked against what its provider takes.
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetModeParams {
    pub session_id: SessionId,
    pub mode: PermissionMode,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachedClient {
    pub name: String,
    pub kind: ClientKind,
    #[serde(default)]
    pub pid: Option<u32>,
    /// When it attached, ms since epoch.
    pub since: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionClientsResponse {
    pub clients: Vec<AttachedClient>,
}

/// What `session/memory` found, in the order the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMemoryResponse {
    pub files: Vec<MemoryFileInfo>,
    /// The bytes of the joined instructions.
    pub bytes: u64,
    /// The most they may have (`memoryMaxBytes` in settings).
    pub cap: u64,
    /// What went wrong: an import cycle, an import too deep, an unreadable file, the cap.
    pub notices: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFileInfo {
    pub path: String,
    pub source: MemorySource,
    pub bytes: u64,
    /// Cut by the cap, in part or whole.
    pub cut: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionExportParams {
    pub session_id: SessionId,
    /// Events after this seq (0 from the start).
    #[serde(default)]
    pub after_seq: u64,
    /// At most this many (default and limit 5000). A page also stops at 8 MiB of events
    /// (always holding at least one).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionExportResponse {
    pub session: SessionInfo,
    /// Each event byte for byte as it was sent live.
    pub events: Vec<crate::event::RawEnvelope>,
    /// Present when there are more: pass it back as `afterSeq`.
    #[serde(default)]
    pub next_after_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionAttachmentParams {
    pub session_id: SessionId,
    /// The attachment's `sha256`, as an event names it.
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionAttachmentResponse {
    pub attachment: crate::Attachment,
    /// Its bytes, base64.
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactParams {
    pub session_id: SessionId,
    /// What the summary should keep, in the user's words.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// What a session's `statusLine` command printed: its first lines, escape sequences taken
/// out. Both absent: no `statusLine` is set for the session's folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatusLineResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Why there is no text: the command failed, timed out, or waits for the folder's trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The context window split by what fills it (tokens, estimated at about 4 bytes each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionContextResponse {
    pub model: String,
    /// The model's context window.
    pub window: u64,
    /// The system prompt besides the instructions (the skills' listing, stepper's own).
    pub system: u64,
    /// The tools' definitions.
    pub tools: u64,
    /// The instructions: `stepper.md`, `AGENTS.md`, `CLAUDE.md` and their imports.
    pub memory: u64,
    /// The conversation (after its last compaction).
    pub messages: u64,
    /// What is left of the window.
    pub free: u64,
    /// The size at which the context is compacted before a model call.
    pub compact_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRewindParams {
    pub session_id: SessionId,
    /// Restore what was there before this turn ran (turns count from 1).
    pub turn: u32,
    #[serde(default = "yes")]
    pub files: bool,
    #[serde(default = "yes")]
    pub conversation: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRewindResponse {
    /// Files restored or removed.
    pub files: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkParams {
    pub session_id: SessionId,
    /// The fork holds the turns before this one (turns count from 1; one past the last turn
    /// forks the whole session).
    pub from_turn: u32,
    /// The fork's title; "<title> (fork)" when absent.
    #[serde(default)]
    pub title: Option<String>,
}
