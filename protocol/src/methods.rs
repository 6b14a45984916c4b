//! The method table: every method's name, params and response, in one place.
//!
//! Each method is an uninhabited type implementing [`Method`]; the daemon registers handlers by
//! it and clients call by it, so a name or a payload can only change here. [`table`] lists
//! them all for the generated schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::event::{EventEnvelope, Usage};
use crate::session::{Env, PermissionMode, SandboxInfo, SandboxMode, SessionId, SessionInfo};
use crate::version::ProtocolVersion;

/// The largest input text (`session/submit`, `session/steer`) the daemon takes, in bytes of
/// UTF-8. Larger inputs are refused with `TOO_LARGE`; a request over the transport's message
/// limit never reaches a method, so clients check this before sending.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;

/// A request/response method.
pub trait Method {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
    type Response: Serialize + DeserializeOwned + JsonSchema + Clone + Send + 'static;
}

/// A subscription: a subscribe method, the notifications it sends, and how to end it.
pub trait Subscription {
    const NAME: &'static str;
    const NOTIFICATION: &'static str;
    const UNSUBSCRIBE: &'static str;
    type Params: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
    type Item: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
}

/// One row of the table, for the schema.
pub struct MethodEntry {
    pub name: &'static str,
    pub notification: Option<&'static str>,
    pub unsubscribe: Option<&'static str>,
    pub params: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    /// A subscription's result is its id ([`SubscriptionId`]); its items come as
    /// `notification`s, whose params are `notification_params`.
    pub result: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    pub notification_params: Option<fn(&mut schemars::SchemaGenerator) -> schemars::Schema>,
}

macro_rules! method_table {
    (
        methods { $( $(#[$m:meta])* $ty:ident = $name:literal ($params:ty) -> $resp:ty; )* }
        subscriptions { $( $(#[$s:meta])* $sty:ident = $sname:literal ($sparams:ty) => $notif:literal ($item:ty), $unsub:literal; )* }
    ) => {
        $(
            $(#[$m])*
            pub enum $ty {}
            impl Method for $ty {
                const NAME: &'static str = $name;
                type Params = $params;
                type Response = $resp;
            }
        )*
        $(
            $(#[$s])*
            pub enum $sty {}
            impl Subscription for $sty {
                const NAME: &'static str = $sname;
                const NOTIFICATION: &'static str = $notif;
                const UNSUBSCRIBE: &'static str = $unsub;
                type Params = $sparams;
                type Item = $item;
            }
        )*
        /// Every method and subscription, in table order.
        pub fn table() -> Vec<MethodEntry> {
            vec![
                $( MethodEntry {
                    name: $name,
                    notification: None,
                    unsubscribe: None,
                    params: |g| g.subschema_for::<$params>(),
                    result: |g| g.subschema_for::<$resp>(),
                    notification_params: None,
                }, )*
                $( MethodEntry {
                    name: $sname,
                    notification: Some($notif),
                    unsubscribe: Some($unsub),
                    params: |g| g.subschema_for::<$sparams>(),
                    result: |g| g.subschema_for::<SubscriptionId>(),
                    notification_params: Some(|g| g.subschema_for::<SubscriptionNotification<$item>>()),
                }, )*
            ]
        }
    };
}

method_table! {
    methods {
        /// The first call of every connection: who the client is and which protocol it speaks.
        Initialize = "initialize" (InitializeParams) -> InitializeResponse;
        /// What the daemon is and how it is doing.
        DaemonInfo = "daemon/info" (Empty) -> DaemonInfoResponse;
        /// Stop the daemon: running turns get a grace period, then end as interrupted.
        DaemonShutdown = "daemon/shutdown" (Empty) -> Empty;
        /// Create a session in a working directory, with the client's environment.
        SessionCreate = "session/create" (SessionCreateParams) -> SessionResponse;
        /// Sessions, most recently updated first.
        SessionList = "session/list" (SessionListParams) -> SessionListResponse;
        /// One session.
        SessionGet = "session/get" (SessionParams) -> SessionResponse;
        /// Queue an input; it runs as a turn when the turns before it are done.
        SessionSubmit = "session/submit" (SessionSubmitParams) -> SessionSubmitResponse;
        /// Interrupt the running turn, if any.
        SessionInterrupt = "session/interrupt" (SessionParams) -> SessionInterruptResponse;
        /// Answer an approval; the first answer wins, a late one is an error.
        SessionApprove = "session/approve" (SessionApproveParams) -> Empty;
        /// Answer an MCP server's elicitation (`ElicitationRequested`): the first answer
        /// wins, a late one is an error.
        SessionElicit = "session/elicit" (SessionElicitParams) -> Empty;
        /// Change the model of the session's next turns.
        SessionSetModel = "session/setModel" (SessionSetModelParams) -> Empty;
        /// Change the session's permission mode (applies from the next tool call).
        SessionSetMode = "session/setMode" (SessionSetModeParams) -> Empty;
        /// The clients attached to a session right now.
        SessionClients = "session/clients" (SessionParams) -> SessionClientsResponse;
        /// The instructions the session's next turn is given, and the files they come from.
        SessionMemory = "session/memory" (SessionParams) -> SessionMemoryResponse;
        /// Compact the session's conversation now: queued like an input (`/compact
        /// [instructions]`), so it runs after the turns before it.
        SessionCompact = "session/compact" (SessionCompactParams) -> SessionSubmitResponse;
        /// How full the session's context window is: what its next model call would send,
        /// by part, in estimated tokens.
        SessionContext = "session/context" (SessionParams) -> SessionContextResponse;
        /// The session's status line: what its `statusLine` command prints, run now with the
        /// session as JSON on stdin (Claude Code's status line input).
        SessionStatusLine = "session/statusLine" (SessionParams) -> SessionStatusLineResponse;
        /// Add to the running turn: the text reaches the model at its next call. With no turn
        /// running it is queued like `session/submit`.
        SessionSteer = "session/steer" (SessionSubmitParams) -> SessionSubmitResponse;
        /// Put the session back as it was before `turn`: the files its turns changed
        /// (tools and shell alike), the conversation, or both.
        SessionRewind = "session/rewind" (SessionRewindParams) -> SessionRewindResponse;
        /// A new session that starts with this one's turns before `fromTurn`: their
        /// conversation, events and checkpoints. The project's files are not touched.
        SessionFork = "session/fork" (SessionForkParams) -> SessionResponse;
        /// Delete a session and everything stored of it (refused while a turn runs).
        SessionDelete = "session/delete" (SessionParams) -> Empty;
        /// A page of a session's events, in order, for export.
        SessionExport = "session/export" (SessionExportParams) -> SessionExportResponse;
        /// The models stepper knows: the catalogue and those configured for a folder.
        ModelsList = "models/list" (ModelsListParams) -> ModelsListResponse;
        /// Who is signed in, and which API keys are stored.
        AuthStatus = "auth/status" (Empty) -> AuthStatusResponse;
        /// Store an API key, or begin signing in with ChatGPT (returns the URL to open).
        AuthLogin = "auth/login" (AuthLoginParams) -> AuthLoginResponse;
        /// Wait until the sign-in begun by `auth/login` completes in the browser.
        AuthWaitLogin = "auth/waitLogin" (AuthWaitLoginParams) -> AuthStatusResponse;
        /// Forget a stored key or the ChatGPT sign-in.
        AuthLogout = "auth/logout" (AuthLogoutParams) -> AuthLogoutResponse;
        /// Which providers a session started here could use, how each was found, and the
        /// model a new session would start on.
        ProvidersStatus = "providers/status" (ProvidersStatusParams) -> ProvidersStatusResponse;
        /// Ask an OpenAI-compatible server which models it serves (`GET {baseUrl}/models`).
        ProvidersProbe = "providers/probe" (ProvidersProbeParams) -> ProvidersProbeResponse;
        /// The agent CLIs stepper can drive as back-ends (Claude Code, Codex): where each is,
        /// its version, its login, and the MCP servers it has.
        BackendsList = "backends/list" (BackendsListParams) -> BackendsListResponse;
        /// The JSON Schema of `setting.json`.
        ConfigSchema = "config/schema" (Empty) -> ConfigSchemaResponse;
        /// Every problem of the settings files that apply to a folder.
        ConfigValidate = "config/validate" (CwdParams) -> ConfigValidateResponse;
        /// The slash commands a session in a folder has: built-in, custom and skills.
        CommandsList = "commands/list" (CwdParams) -> CommandsListResponse;
        /// Scaffold `.stepper/stepper.md` and `.stepper/setting.json` in a folder.
        ProjectInit = "project/init" (ProjectInitParams) -> ProjectInitResponse;
        /// The MCP servers a session in a folder has, each with its status; those that may
        /// run and never ran are started (a first start is waited for, up to the connect
        /// timeout); one stopped while idle is `stopped`, not started again.
        McpList = "mcp/list" (McpListParams) -> McpListResponse;
        /// Every MCP server the daemon runs now, of every folder: in use or idle, and its
        /// memory.
        McpRunning = "mcp/running" (Empty) -> McpRunningResponse;
        /// Add a server to the user's `setting.json` or the project's `.mcp.json`.
        McpAdd = "mcp/add" (McpAddParams) -> McpAddResponse;
        /// Remove a server from the files that name it (those `scope` names, or any).
        McpRemove = "mcp/remove" (McpRemoveParams) -> McpRemoveResponse;
        /// Begin signing in to a remote server (OAuth): returns the URL to open.
        McpLogin = "mcp/login" (McpServerParams) -> McpLoginResponse;
        /// Wait until the sign-in begun by `mcp/login` completes in the browser.
        McpWaitLogin = "mcp/waitLogin" (McpWaitLoginParams) -> Empty;
        /// Forget a remote server's sign-in.
        McpLogout = "mcp/logout" (McpServerParams) -> McpLogoutResponse;
        /// The project's servers waiting for the user's approval (nothing is started).
        McpPending = "mcp/pending" (CwdParams) -> McpListResponse;
        /// Approve or refuse a project's servers, remembered in the project's git-ignored
        /// `.stepper/setting.local.json`.
        McpApprove = "mcp/approve" (McpApproveParams) -> McpAddResponse;
        /// Whether a folder is trusted, what trusting it records, and what its project files
        /// ask for that applies only once it is.
        TrustGet = "trust/get" (CwdParams) -> TrustGetResponse;
        /// Trust the folder `trust/get` names for `cwd`, or take trust back; remembered in the
        /// user's config folder, never in the project. Applies from the next turn.
        TrustSet = "trust/set" (TrustSetParams) -> TrustGetResponse;
        /// Every folder the user decided about.
        TrustList = "trust/list" (Empty) -> TrustListResponse;
    }
    subscriptions {
        /// Replay a session's events after `afterSeq` from the store, then follow it live.
        SessionSubscribe = "session/subscribe" (SessionSubscribeParams)
            => "session/event" (EventEnvelope), "session/unsubscribe";
    }
}

/// A subscription's id, as the subscribe method returned it: opaque JSON (today a number),
/// kept and sent back as given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SubscriptionId {
    Number(u64),
    String(String),
}

/// An unsubscribe method's params: exactly this object (an extra field is refused), or
/// `[id]`, the form JSON-RPC libraries send when a subscription is dropped. Its result is
/// `true`, or `false` when the subscription had ended already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeParams {
    pub subscription: SubscriptionId,
}

/// The params of a subscription's notifications (`session/event`): `result` carries the
/// items (one, or an array of them when the subscription asked for `batch`); the last
/// notification of a subscription the daemon ends carries `error` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubscriptionNotification<T> {
    pub subscription: SubscriptionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<OneOrMany<T>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// One item, or an array of them in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

/// A JSON-RPC error object, as a subscription's last notification carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<crate::error::ErrorData>,
}

/// Params or a response with nothing in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

/// What kind of program a client is. A kind this build does not know (from a newer client
/// or daemon) is read as `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ClientKind {
    Cli,
    Tui,
    #[serde(other)]
    Other,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Cli => "cli",
            ClientKind::Tui => "tui",
            ClientKind::Other => "other",
        }
    }
}

impl std::fmt::Display for ClientKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

open_enum! {
    /// A provider's wire format (`providers/status`'s `kind`).
    pub enum ProviderKind {
        Anthropic = "anthropic",
        Openai = "openai",
        OpenaiChat = "openai-chat",
        Codex = "codex",
        Replay = "replay",
        ClaudeCode = "claude-code",
        CodexCli = "codex-cli",
    }
}

open_enum! {
    /// Where a slash command comes from, and so who runs it (`commands/list`'s `kind`).
    pub enum CommandKind {
        /// The daemon answers it when submitted, for any client: `model`, `context`,
        /// `compact`, `clear`, `help`.
        Builtin = "builtin",
        /// A client runs it itself (the TUI's `/mode`, `/rewind`, …).
        Client = "client",
        /// A file, expanded by the daemon when submitted as `/name args`.
        Command = "command",
        /// The same, from a skill.
        Skill = "skill",
        /// A running MCP server's prompt (`mcp__server__prompt`), given by the server.
        Mcp = "mcp",
    }
}

open_enum! {
    /// Whose a command or skill is.
    pub enum CommandScope {
        /// The project's (`.stepper/`, `.claude/`).
        Project = "project",
        /// The user's own (the config folder, `~/.claude/`).
        User = "user",
    }
}

open_enum! {
    /// How bad a problem in a settings or extension file is.
    pub enum Severity {
        /// The file (or that part of it) is not used.
        Error = "error",
        /// It is used; something in it is ignored or doubtful.
        Warning = "warning",
    }
}

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

open_enum! {
    /// How the daemon reaches an MCP server (`mcp/list`'s `transport`).
    pub enum McpTransport {
        Stdio = "stdio",
        Http = "http",
        Sse = "sse",
        /// Its configuration is invalid: no transport could be told.
        Invalid = "",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub name: String,
    pub kind: ClientKind,
    pub version: String,
    #[serde(default)]
    pub pid: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: ProtocolVersion,
    pub client: ClientInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: ProtocolVersion,
    pub daemon_version: String,
    pub pid: u32,
    /// The daemon's executable, and the build of it the daemon runs (see
    /// `places::build_id`): a client compares it with the file on disk to find a daemon
    /// left running by an older install.
    #[serde(default)]
    pub executable: Option<String>,
    #[serde(default)]
    pub build: Option<String>,
    /// Turns running right now: an idle daemon may be restarted without losing anything.
    #[serde(default)]
    pub running_turns: u32,
    /// What every user of this daemon should hear, once per command (the session store was
    /// damaged and rebuilt at its start, say). Empty for nearly every daemon.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonInfoResponse {
    pub version: String,
    pub protocol_version: ProtocolVersion,
    pub pid: u32,
    pub started_at: i64,
    pub data_dir: String,
    pub socket: String,
    /// Sessions loaded in memory right now.
    pub live_sessions: u32,
    /// Turns running right now.
    pub running_turns: u32,
    /// Connected clients right now.
    pub clients: u32,
    /// Whether the login shell's environment was read (absent from a 1.2 daemon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_env: Option<LoginEnvInfo>,
    /// The session store as the daemon found it at start (absent from a 1.8 daemon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreInfo>,
}

/// The session store as the daemon found it at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreInfo {
    pub path: String,
    /// How long the check at start (`PRAGMA quick_check`) took, in milliseconds.
    pub check_ms: u64,
    /// The store was found damaged (or its rebuild was asked for) and rebuilt at this start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<StoreRecovery>,
    /// The store's write-ahead log was damaged and SQLite dropped its tail at this start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_dropped: Option<WalDropped>,
    /// Copies kept aside in the data folder (damaged stores, damaged logs), by this start
    /// or an earlier one: they may hold more than was recovered, and take room until
    /// deleted.
    #[serde(default)]
    pub kept_aside: Vec<KeptCopy>,
}

/// A rebuild of the session store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreRecovery {
    /// The whole story in one line, as the daemon logged it.
    pub summary: String,
    /// What SQLite said of the file, or that the rebuild was asked for.
    pub reason: String,
    /// Found damaged (rather than rebuilt on request).
    pub damaged: bool,
    /// Where the old file is now.
    pub damaged_copy: String,
    pub sessions: u64,
    pub events: u64,
    /// Events of the kept sessions that could not be read.
    pub events_missing: u64,
}

/// A write-ahead log whose tail was dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalDropped {
    pub summary: String,
    /// Where the log, as it was before SQLite opened it, is kept.
    pub copy: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeptCopy {
    pub path: String,
    pub bytes: u64,
}

/// The login shell's environment, which fills what a session's own environment lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginEnvInfo {
    pub state: LoginEnvState,
    /// The shell it was read from.
    #[serde(default)]
    pub shell: Option<String>,
    /// How many variables it gave.
    #[serde(default)]
    pub variables: u32,
    /// Why it could not be read.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LoginEnvState {
    /// Read.
    Read,
    /// Still being read (the daemon starts reading it when it starts).
    Pending,
    /// The shell failed or timed out: sessions use their own environment only.
    Failed,
    /// `STEPPER_LOGIN_ENV=off`.
    Off,
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
    pub text: String,
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

/// The JSON `stepper ask --format json` prints (part of the CLI's contract, so it lives here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskResult {
    pub session_id: SessionId,
    pub status: crate::event::TurnStatus,
    pub text: String,
    pub usage: Usage,
    /// What the turn cost in US dollars, when the model's prices are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure `error` is, where it is known (as `TurnFinished` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::event::TurnErrorKind>,
    /// Each layer of a layered turn, in order (empty for a turn of one agent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerResult>,
    /// The tool calls of the turn that were denied: by a person, or because nobody could
    /// answer (no terminal, no attached client).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_denials: Vec<PermissionDenial>,
}

/// A tool call denied in a turn (`stepper ask --format json`'s `permissionDenials`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionDenial {
    /// The approval's `requestId`.
    pub request_id: String,
    pub tool: String,
    /// What was asked, in a sentence.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Who denied it (the client's name), as `ApprovalResolved` said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// How one layer of a turn ended (`stepper ask --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LayerResult {
    pub index: u32,
    pub name: String,
    pub model: String,
    pub status: crate::event::TurnStatus,
    /// What it handed on (the last layer's is the answer).
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The workers of a parallel layer.
    pub workers: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListParams {
    /// Include the providers and models configured for this folder's settings.
    #[serde(default)]
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelEntry {
    /// `provider/model-id`.
    pub id: String,
    pub provider: String,
    pub context_window: u64,
    pub max_output: u32,
    /// US dollars per million tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_price: Option<f64>,
    /// Described in the settings (rather than only in the built-in catalogue).
    pub configured: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListResponse {
    /// The model new sessions in that folder get.
    pub default: String,
    pub models: Vec<ModelEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodexAccount {
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub plan: Option<String>,
    /// When the access token expires (it is refreshed before then), ms since epoch.
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthStatusResponse {
    /// The ChatGPT sign-in, when there is one.
    #[serde(default)]
    pub codex: Option<CodexAccount>,
    /// Providers with a stored API key (the keys themselves never leave the daemon).
    pub stored_keys: Vec<String>,
    /// Local OpenAI-compatible servers stored with `auth/login {baseUrl}`.
    #[serde(default)]
    pub local_servers: Vec<LocalServer>,
}

/// A local OpenAI-compatible server, stored by name: models `NAME/<model>` go to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalServer {
    pub name: String,
    pub base_url: String,
    /// The model a new session starts on when this server is the provider in use.
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLoginParams {
    /// `codex` to sign in with ChatGPT, or a provider name (`anthropic`, `openai`, ...) to
    /// store `apiKey` for it, or a name for the local server at `baseUrl` (`local`).
    pub provider: String,
    #[serde(default)]
    pub api_key: Option<String>,
    /// A local OpenAI-compatible server (`http://localhost:11434/v1`): probed, then stored
    /// under `provider`, so that `provider/<model>` goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// With `baseUrl`: the model new sessions start on (the server's first when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLoginResponse {
    /// For ChatGPT: the page to open in a browser.
    #[serde(default)]
    pub url: Option<String>,
    /// For ChatGPT: pass to `auth/waitLogin`.
    #[serde(default)]
    pub login_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendsListParams {
    /// The folder whose settings apply (an absolute path); the user's settings alone when
    /// absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The client's environment (its `PATH` finds the CLIs), as `session/create` would.
    #[serde(default)]
    pub env: Env,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendsListResponse {
    pub backends: Vec<BackendStatus>,
}

/// One agent CLI, as `backends/list` finds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendStatus {
    /// The provider its models go by (`claude-code` in `claude-code/sonnet`).
    pub name: String,
    /// The product (`Claude Code`).
    pub title: String,
    /// Where the executable is, when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it cannot be used (not installed, too old), with the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Whether the CLI says it is logged in (`claude auth status`, `codex login status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_in: Option<bool>,
    /// How, in the CLI's words (`api_key from ANTHROPIC_API_KEY`, `Logged in using ChatGPT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<String>,
    /// The MCP servers the CLI reports (`claude mcp list`, `codex mcp list --json`).
    #[serde(default)]
    pub mcp_servers: Vec<BackendMcpServer>,
    /// Why the servers could not be listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_problem: Option<String>,
}

/// An MCP server another agent CLI has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendMcpServer {
    pub name: String,
    /// The command line or URL, as the CLI prints it.
    pub target: String,
    pub transport: McpTransport,
    /// The CLI's health check without its mark (`Connected`, `Failed to connect — …`),
    /// when it made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersStatusParams {
    /// The folder whose settings apply (an absolute path); the user's settings alone when
    /// absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The client's environment, searched for keys before the login shell's and the
    /// daemon's, as `session/create` would.
    #[serde(default)]
    pub env: Env,
    /// Also ask local servers whether they answer (`GET /models`, a second or two at most
    /// each, all at once). Without it a local server counts as usable when it is configured.
    #[serde(default)]
    pub probe: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersStatusResponse {
    pub providers: Vec<ProviderStatus>,
    /// The model a new session here starts on when none is asked for (the settings', else
    /// the first usable provider's), and whether it can.
    pub default_model: String,
    pub default_usable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    /// The name models go by (`anthropic` in `anthropic/claude-sonnet-4-5`).
    pub name: String,
    /// Its wire format.
    pub kind: ProviderKind,
    pub usable: bool,
    /// Where its credentials (or its address) were found, when usable.
    #[serde(default)]
    pub source: Option<ProviderSource>,
    /// What was found, or what is missing, in words (never a key).
    pub detail: String,
    /// What to do to make it usable, when it is not.
    #[serde(default)]
    pub fix: Option<String>,
    /// The model a session on this provider starts on.
    #[serde(default)]
    pub default_model: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProviderSource {
    /// A variable in the client's environment.
    Environment,
    /// A variable the login shell sets.
    LoginShell,
    /// A variable in the daemon's own environment.
    Daemon,
    /// A key stored with `stepper auth login`.
    StoredKey,
    /// The ChatGPT sign-in.
    SignIn,
    /// A server stored with `stepper auth login --local`.
    LocalServer,
    /// `providers` in setting.json (a server that needs no key).
    Settings,
    /// A conventional address (Ollama's) that answered.
    Default,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersProbeParams {
    /// The server's OpenAI-compatible base URL, such as `http://localhost:11434/v1`.
    pub base_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersProbeResponse {
    /// The base URL as it will be used (trailing slash dropped).
    pub base_url: String,
    /// The model ids it serves, as it lists them.
    pub models: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthWaitLoginParams {
    pub login_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLogoutParams {
    pub provider: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLogoutResponse {
    /// Whether there was something to forget.
    pub removed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandsListResponse {
    pub commands: Vec<CommandInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// Without its `/`: `model`, `review`, `frontend:component`.
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    pub kind: CommandKind,
    /// For commands and skills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<CommandScope>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CwdParams {
    /// An absolute path.
    pub cwd: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSchemaResponse {
    pub schema: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigProblem {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    pub message: String,
    #[serde(default)]
    pub hint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValidateResponse {
    /// The files that apply, in merge order, whether they exist or not.
    pub files: Vec<String>,
    pub problems: Vec<ConfigProblem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectInitParams {
    pub cwd: String,
    /// Overwrite files that exist.
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectInitResponse {
    pub created: Vec<String>,
    /// Files left as they were (they exist; pass `force` to overwrite).
    pub skipped: Vec<String>,
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

/// Where an MCP server is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpScope {
    /// The user's `setting.json`: runs in every folder.
    User,
    /// The project's `.mcp.json` or `.stepper/setting.json`: runs once the user approved it.
    Project,
    /// The project's git-ignored `.stepper/setting.local.json`: the user's own, runs.
    Local,
}

/// How an MCP server is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpStatus {
    Connected,
    /// Still starting (past the wait): its tools join once it answers.
    Starting,
    /// It did not start or it stopped; `reason` says why.
    Failed,
    /// A remote server that answers 401: it needs a sign-in (or a token in `headers`).
    NeedsLogin,
    /// A project's server the user has not approved (`enabledMcpjsonServers`).
    NotApproved,
    /// A project's server the user refused (`disabledMcpjsonServers`).
    Disabled,
    /// A server in the `.mcp.json` of a folder the user has not trusted (`stepper trust`):
    /// not started, and not offered for approval. Only `mcp/list` shows it.
    Untrusted,
    /// Its configuration is wrong; `reason` says what to fix.
    Invalid,
    /// It ran, and was stopped while no turn used it (idle too long, or more servers idle
    /// than `mcpMaxIdleServers`): it starts again at the next turn here. `tools` are those
    /// it listed last.
    Stopped,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpListParams {
    /// An absolute path: the folder whose servers are listed.
    pub cwd: String,
    /// The environment `${VAR}`s in the configuration expand from (a session's would be its
    /// client's); the daemon's login environment fills what it lacks.
    #[serde(default)]
    pub env: Env,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpListResponse {
    /// By name.
    pub servers: Vec<McpServerInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    pub name: String,
    pub scope: McpScope,
    /// The file that names it.
    pub source: String,
    /// Empty (`Invalid`) when its configuration is invalid.
    pub transport: McpTransport,
    /// The command line or URL as written (`${VAR}`s not expanded, so no secret shows).
    pub target: String,
    pub status: McpStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its tools as the model and the rules name them (`mcp__server__tool`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// The protocol revision it speaks, once connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The resident memory of a running stdio server's processes (the server and what it
    /// started), in bytes. Absent for remote servers, servers not running, and where the
    /// system does not say (Linux only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpRunningResponse {
    /// Most recently used first.
    pub servers: Vec<McpRunningServer>,
    /// How many servers may stay running while no turn uses them (the user's
    /// `mcpMaxIdleServers`; a project may only lower it for its own servers).
    pub max_idle: u32,
    /// How long a server no turn uses keeps running (`STEPPER_MCP_IDLE_MS`).
    pub idle_timeout_ms: u64,
}

/// A server the daemon runs now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpRunningServer {
    /// The folder whose sessions use it.
    pub cwd: String,
    pub name: String,
    pub transport: McpTransport,
    /// A turn (or a listing) holds it now: it is not stopped while it does.
    pub in_use: bool,
    /// Since when no turn has used it, in milliseconds (0 while in use).
    pub idle_ms: u64,
    /// As `mcp/list`'s `memoryBytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpAddParams {
    /// An absolute path: the project, for `scope: project`.
    pub cwd: String,
    pub name: String,
    /// `user` or `project` (`local` is refused: edit `.stepper/setting.local.json`).
    pub scope: McpScope,
    /// The server as `.mcp.json` has it: `{"command", "args", "env", "cwd"}` or
    /// `{"type": "http" | "sse", "url", "headers"}`.
    pub server: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpAddResponse {
    /// The file written.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpRemoveParams {
    pub cwd: String,
    pub name: String,
    /// Only from this scope's files; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<McpScope>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpRemoveResponse {
    /// The files it was removed from (none: no file named it).
    pub removed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerParams {
    /// An absolute path: the folder whose servers the name is looked up in.
    pub cwd: String,
    pub name: String,
    /// The environment the server's `${VAR}`s expand from, as for `mcp/list`.
    #[serde(default)]
    pub env: Env,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLoginResponse {
    /// For `mcp/waitLogin`.
    pub login_id: String,
    /// The authorization page to open in a browser.
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpWaitLoginParams {
    pub login_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLogoutResponse {
    /// Whether a sign-in was stored.
    pub removed: bool,
}

/// What the user says of a project's servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpApproval {
    /// These run (`enabledMcpjsonServers`).
    Allow,
    /// All of this project's servers run, these and later ones (`enableAllProjectMcpServers`).
    AllowAll,
    /// These do not run, and are not asked about again (`disabledMcpjsonServers`).
    Deny,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpApproveParams {
    pub cwd: String,
    /// The servers (none with `allowAll`).
    #[serde(default)]
    pub names: Vec<String>,
    pub decision: McpApproval,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustGetResponse {
    /// What trusting from `cwd` records: the top of its git repository, else the folder
    /// itself (canonical).
    pub folder: String,
    /// Whether sessions in `cwd` get the project's files in full.
    pub trusted: bool,
    /// The folder whose decision applies (`folder` or one above it); absent when the user
    /// never decided, which is when a client asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// What the project's files ask for that applies only once the folder is trusted
    /// (`file: what`), when it is not. Empty: trusting changes nothing, so nothing to ask.
    #[serde(default)]
    pub ignored: Vec<String>,
    /// Why `folder` should not be trusted as a whole (the home folder, `/`): `trust/set`
    /// refuses it unless `allBelow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_broad: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustSetParams {
    /// An absolute path: the decision is recorded for the folder `trust/get` names for it.
    pub cwd: String,
    pub trusted: bool,
    /// Trust even the home folder or `/` as a whole (every folder below it).
    #[serde(default)]
    pub all_below: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustListResponse {
    pub folders: Vec<TrustEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustEntry {
    pub folder: String,
    pub trusted: bool,
    /// When the user decided, ms since the epoch.
    pub decided_at: u64,
}
