//! JSON-RPC error codes the daemon answers with, and the `data` every stepper error carries.
//!
//! The daemon maps every internal error to one code and one [`ErrorKind`] in a single place;
//! clients branch on the code (or, finer, on `data.kind`) and show the message, which always
//! says what to do next. PROTOCOL.md lists each code with whether a retry can help.
//!
//! stepper's own codes are `-32050` to `-32069`, clear of the standard ones and of those the
//! JSON-RPC library itself answers with (`-32000` to `-32011`, listed below for clients).
//!
//! *Stepper's error codes sit at -32050…* (1.1): 1.0's -32001…-32006 collided with jsonrpsee's own
//! codes, so one number meant two things. Every error carries `data {kind, hint?, retry}`; the
//! mapping from each module's error type is `rpc/error.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The standard JSON-RPC codes.
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;

/// Codes the JSON-RPC library answers with before a method runs.
/// A request over the message limit (32 MiB: `transport::MAX_MESSAGE_BYTES`).
pub const OVERSIZED_REQUEST: i32 = -32007;
/// The response would exceed the message limit (page with a smaller `limit`).
pub const OVERSIZED_RESPONSE: i32 = -32008;
/// A batch (an array of requests): stepperd takes one request per message.
pub const BATCHES_NOT_SUPPORTED: i32 = -32005;
/// The connection has too many subscriptions open.
pub const TOO_MANY_SUBSCRIPTIONS: i32 = -32006;
/// The daemon is at its connection limit.
pub const SERVER_IS_BUSY: i32 = -32009;

/// `initialize` was refused: the protocol major versions differ.
pub const VERSION_MISMATCH: i32 = -32050;
/// A method other than `initialize` was called first.
pub const NOT_INITIALIZED: i32 = -32051;
/// What the call names does not exist: a session or a sign-in.
pub const NOT_FOUND: i32 = -32052;
/// The request is valid but the session or daemon is in a state that forbids it now (a turn
/// is running, an approval was answered already, the input queue is full).
pub const INVALID_STATE: i32 = -32053;
/// The store failed (disk full, corrupt file, ...).
pub const STORE_ERROR: i32 = -32054;
/// The daemon is shutting down and takes no new work.
pub const SHUTTING_DOWN: i32 = -32055;
/// An input is larger than the daemon accepts (the message names the limit).
pub const TOO_LARGE: i32 = -32056;
/// Signing in or storing a credential failed.
pub const AUTH_FAILED: i32 = -32057;
/// Settings files that apply could not be read (the message names the file and line).
pub const BAD_SETTINGS: i32 = -32058;
/// The session's model cannot be used: its provider has no key, no sign-in or no address
/// (the message says how to set one up). Refused at `session/create` and
/// `session/setModel`, before anything is stored.
pub const PROVIDER_UNAVAILABLE: i32 = -32059;
/// The connection comes from a process a tool call started (or one the daemon cannot tell
/// apart from such a process): every call on it is refused, `initialize` included.
pub const PEER_REFUSED: i32 = -32060;
/// A server the call had to reach (an MCP server, its authorization server) did not answer:
/// the connection failed, timed out, or the server answered with a server error.
pub const UNREACHABLE: i32 = -32061;

/// The `data` of every error stepper itself answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorData {
    /// What went wrong, finer than the code, for a client to branch on.
    pub kind: ErrorKind,
    /// What to do about it, when there is more to say than the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether the same call may succeed later without changing it (after the state
    /// changes, or the daemon restarts).
    pub retry: bool,
}

/// Machine-readable reasons. New kinds may be added in a minor version: treat an unknown
/// one by its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    VersionMismatch,
    NotInitialized,
    /// Params that are not what the method takes (a wrong shape, a bad value).
    InvalidParams,
    /// A cursor that no list or export handed out.
    InvalidCursor,
    SessionNotFound,
    /// No MCP server by that name is configured for the folder.
    McpServerNotFound,
    /// The approval was answered already (by another client, or the turn ended).
    ApprovalAnswered,
    LoginNotFound,
    /// A turn is running and the call needs the session idle.
    TurnRunning,
    /// No such turn in the session.
    NoSuchTurn,
    QueueFull,
    /// The session's events could not be stored (they could not be encoded).
    LogFailed,
    Store,
    /// The store cannot write right now (a full disk, a lock another program holds past
    /// the busy timeout): nothing of the call was stored, and the message says what to do.
    /// What the daemon accepted before is stored by itself once the store writes again.
    StoreUnavailable,
    ShuttingDown,
    TooLarge,
    Auth,
    Settings,
    /// The model's provider is not set up (no key, sign-in or address).
    ProviderUnavailable,
    /// A checkpoint could not be restored.
    Rewind,
    /// Something inside the daemon failed that is none of the above (a task panicked).
    Internal,
    /// The client's process descends from one of the daemon's tool calls, or the daemon
    /// cannot tell that it does not.
    PeerRefused,
    /// A server the call had to reach (an MCP server, its authorization server) could not
    /// be reached or failed on its side; the same call may work later.
    Unreachable,
    /// What the call names belongs to a folder the user has not trusted (`stepper trust`).
    UntrustedFolder,
}

impl ErrorKind {
    /// The code a kind is answered with.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::VersionMismatch => VERSION_MISMATCH,
            ErrorKind::NotInitialized => NOT_INITIALIZED,
            ErrorKind::InvalidParams | ErrorKind::InvalidCursor => INVALID_PARAMS,
            ErrorKind::SessionNotFound
            | ErrorKind::LoginNotFound
            | ErrorKind::McpServerNotFound => NOT_FOUND,
            ErrorKind::ApprovalAnswered
            | ErrorKind::TurnRunning
            | ErrorKind::NoSuchTurn
            | ErrorKind::QueueFull
            | ErrorKind::Rewind
            | ErrorKind::UntrustedFolder => INVALID_STATE,
            ErrorKind::LogFailed | ErrorKind::Store | ErrorKind::StoreUnavailable => STORE_ERROR,
            ErrorKind::ShuttingDown => SHUTTING_DOWN,
            ErrorKind::TooLarge => TOO_LARGE,
            ErrorKind::Auth => AUTH_FAILED,
            ErrorKind::Settings => BAD_SETTINGS,
            ErrorKind::ProviderUnavailable => PROVIDER_UNAVAILABLE,
            ErrorKind::Internal => INTERNAL_ERROR,
            ErrorKind::PeerRefused => PEER_REFUSED,
            ErrorKind::Unreachable => UNREACHABLE,
        }
    }

    /// Whether the same call may succeed later, unchanged.
    pub fn retry(self) -> bool {
        matches!(
            self,
            ErrorKind::TurnRunning
                | ErrorKind::QueueFull
                | ErrorKind::Store
                | ErrorKind::StoreUnavailable
                | ErrorKind::ShuttingDown
                | ErrorKind::Internal
                | ErrorKind::Unreachable
        )
    }
}
