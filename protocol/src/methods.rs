//! The method table: every method's name, params and response, in one place.
//!
//! Each method is an uninhabited type implementing [`Method`]; the daemon registers handlers by
//! it and clients call by it, so a name or a payload can only change here. [`table`] lists
//! them all for the generated schema. The payloads live in one submodule per area (`session`,
//! `mcp`, …), each re-exported here: every type is `methods::Name`, wherever it is written.
//!
//! `SessionSubscribe` also implements [`Subscription`]. PROTOCOL.md documents the table for outside
//! clients: a behaviour change on the wire changes both in one commit.

mod ask;
mod backends;
mod config;
pub(crate) mod daemon;
pub(crate) mod mcp;
mod providers;
mod session;
mod subscription;
mod trust;

pub use ask::*;
pub use backends::*;
pub use config::*;
pub use daemon::*;
pub use mcp::*;
pub use providers::*;
pub use session::*;
pub use subscription::*;
pub use trust::*;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::event::EventEnvelope;

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
        /// An image's or document's bytes, as an event of the session names it.
        SessionAttachment = "session/attachment" (SessionAttachmentParams) -> SessionAttachmentResponse;
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

/// Params or a response with nothing in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CwdParams {
    /// An absolute path.
    pub cwd: String,
}
