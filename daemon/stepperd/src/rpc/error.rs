//! Every error a method answers with becomes a protocol error here, and only here: each
//! daemon module's own error type maps to one [`ErrorKind`], which carries the code and
//! whether a retry can help.

use jsonrpsee::types::ErrorObjectOwned;
use stepper_protocol::PROTOCOL_VERSION;
use stepper_protocol::error::{ErrorData, ErrorKind};

use crate::auth::AuthError;
use crate::hub::mcp::{McpError, WaitLoginError};
use crate::hub::{HubError, LogError, SettingsError};
use stepper_engine::config::trust::TrustError;
use stepper_mcp::oauth::OAuthError;

/// Why a method failed, before it becomes a JSON-RPC error.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error(
        "this client speaks protocol {client} but stepperd {daemon_version} speaks \
         {PROTOCOL_VERSION} — restart the daemon with 'stepper daemon stop' (the next command \
         starts the matching one), or update the client"
    )]
    VersionMismatch {
        client: stepper_protocol::ProtocolVersion,
        daemon_version: &'static str,
    },
    #[error("call 'initialize' first: every connection starts with it")]
    NotInitialized,
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    InvalidCursor(String),
    #[error("{what} is {size} bytes; the most stepperd takes is {limit} bytes — {hint}")]
    TooLarge {
        what: &'static str,
        size: usize,
        limit: usize,
        hint: &'static str,
    },
    #[error(transparent)]
    Hub(#[from] HubError),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    McpLogin(#[from] WaitLoginError),
    #[error(transparent)]
    Mcp(#[from] McpError),
    #[error(transparent)]
    Trust(#[from] TrustError),
    #[error("{0}")]
    Internal(String),
    /// The connection's peer may not be a client (it descends from a tool call): why.
    #[error(transparent)]
    PeerRefused(Refusal),
}

impl From<stepper_store::StoreError> for RpcError {
    fn from(e: stepper_store::StoreError) -> RpcError {
        RpcError::Hub(HubError::Store(e))
    }
}

impl From<SettingsError> for RpcError {
    fn from(e: SettingsError) -> RpcError {
        RpcError::Hub(HubError::Settings(e))
    }
}

impl RpcError {
    /// The one mapping from what went wrong to what the protocol says.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RpcError::VersionMismatch { .. } => ErrorKind::VersionMismatch,
            RpcError::NotInitialized => ErrorKind::NotInitialized,
            RpcError::InvalidParams(_) => ErrorKind::InvalidParams,
            RpcError::InvalidCursor(_) => ErrorKind::InvalidCursor,
            RpcError::TooLarge { .. } => ErrorKind::TooLarge,
            RpcError::Internal(_) => ErrorKind::Internal,
            RpcError::PeerRefused(_) => ErrorKind::PeerRefused,
            RpcError::Auth(AuthError::NoSuchLogin(_)) => ErrorKind::LoginNotFound,
            RpcError::Auth(AuthError::EmptyKey) => ErrorKind::InvalidParams,
            RpcError::Auth(AuthError::Failed(_)) => ErrorKind::Auth,
            RpcError::McpLogin(WaitLoginError::Unknown(_)) => ErrorKind::LoginNotFound,
            RpcError::McpLogin(WaitLoginError::Failed(e)) => oauth_kind(e),
            RpcError::Mcp(e) => match e {
                McpError::NoSuchServer(_) => ErrorKind::McpServerNotFound,
                McpError::Untrusted(_) => ErrorKind::UntrustedFolder,
                McpError::NotRemote(_) | McpError::BadEntry(_) | McpError::LocalScope => {
                    ErrorKind::InvalidParams
                }
                McpError::BadConfig(_) | McpError::File(_) => ErrorKind::Settings,
                McpError::Io(_) | McpError::LoginsOff => ErrorKind::Internal,
                McpError::SignIn { error, .. } => oauth_kind(error),
            },
            // The trust file is one of the user's settings files: the message names it.
            RpcError::Trust(TrustError::Refused(_)) => ErrorKind::InvalidParams,
            RpcError::Trust(
                TrustError::Read { .. } | TrustError::Parse { .. } | TrustError::Write { .. },
            ) => ErrorKind::Settings,
            RpcError::Hub(e) => match e {
                HubError::NotFound(_) => ErrorKind::SessionNotFound,
                HubError::Store(stepper_store::StoreError::InvalidCursor(_)) => {
                    ErrorKind::InvalidCursor
                }
                HubError::Store(e) if e.is_unwritable() => ErrorKind::StoreUnavailable,
                HubError::Store(_) => ErrorKind::Store,
                HubError::Log(LogError::Failed(_)) => ErrorKind::LogFailed,
                HubError::Log(LogError::Unavailable(_)) => ErrorKind::StoreUnavailable,
                HubError::Log(LogError::Closed) => ErrorKind::ShuttingDown,
                HubError::Settings(_) => ErrorKind::Settings,
                HubError::Checkpoint(_) => ErrorKind::Rewind,
                HubError::Approval(_) => ErrorKind::ApprovalAnswered,
                HubError::QueueFull => ErrorKind::QueueFull,
                HubError::TurnRunning { .. } => ErrorKind::TurnRunning,
                HubError::NoSuchTurn { .. } => ErrorKind::NoSuchTurn,
                HubError::Invalid(_) => ErrorKind::InvalidParams,
                HubError::ProviderUnavailable(_) => ErrorKind::ProviderUnavailable,
                HubError::ShuttingDown => ErrorKind::ShuttingDown,
            },
        }
    }
}

/// A sign-in's failure: a server that did not answer is worth trying again; one that
/// refused, or a sign-in the user did not finish, is a failed sign-in; an `oauth` entry that
/// cannot work is the settings'.
fn oauth_kind(e: &OAuthError) -> ErrorKind {
    match e {
        OAuthError::Unreachable(_) => ErrorKind::Unreachable,
        OAuthError::Refused(_) | OAuthError::NotCompleted(_) => ErrorKind::Auth,
        OAuthError::Config(_) => ErrorKind::Settings,
        OAuthError::Local(_) => ErrorKind::Internal,
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> ErrorObjectOwned {
        let kind = e.kind();
        let data = ErrorData {
            kind,
            hint: hint(kind).map(str::to_string),
            retry: kind.retry(),
        };
        ErrorObjectOwned::owned(kind.code(), e.to_string(), Some(data))
    }
}

/// What a client can do about a kind, beyond the message.
fn hint(kind: ErrorKind) -> Option<&'static str> {
    Some(match kind {
        ErrorKind::VersionMismatch => {
            "stop the daemon ('stepper daemon stop'); the next client starts its own version"
        }
        ErrorKind::NotInitialized => "send 'initialize' as the first call of the connection",
        ErrorKind::SessionNotFound => "'session/list' (or 'stepper sessions') lists the sessions",
        ErrorKind::TurnRunning => {
            "'session/interrupt' ends the running turn; or wait for its TurnFinished"
        }
        ErrorKind::QueueFull => "wait for queued inputs to run (each ends with TurnFinished)",
        ErrorKind::ShuttingDown => {
            "retry once a daemon is running again (any stepper command starts one)"
        }
        ErrorKind::ProviderUnavailable => {
            "'providers/status' says which providers are set up and how to set up the others"
        }
        ErrorKind::PeerRefused => {
            "a command stepper runs (and whatever it starts) cannot drive stepperd; the user \
             runs stepper from a terminal of their own"
        }
        ErrorKind::StoreUnavailable => {
            "the same call succeeds once the store writes again; subscribe again with the \
             last seq handled to see what was stored meanwhile"
        }
        ErrorKind::McpServerNotFound => {
            "'mcp/list' (or 'stepper mcp list') lists the MCP servers of the folder"
        }
        ErrorKind::UntrustedFolder => "run 'stepper trust' in the folder if you trust it",
        ErrorKind::Unreachable => {
            "check the network and that the server is up; the same call may work later"
        }
        ErrorKind::InvalidCursor => {
            "pass a cursor exactly as a previous page returned it, or none for the first page"
        }
        _ => return None,
    })
}

/// A params error found before the handler ran (the shape did not decode).
pub fn invalid_params(message: String) -> ErrorObjectOwned {
    RpcError::InvalidParams(message).into()
}

/// Why a connection's peer may not be a client; said to it by every method it calls.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refusal {
    /// Its process descends from the daemon: the peer, then each ancestor up to the daemon.
    #[error(
        "stepperd refuses this client: its process ({}) was started by one of stepperd's \
         tool calls, and what a tool call starts never drives stepper — run stepper from \
         your own terminal instead",
        .0.iter().map(|p| format!("pid {p}")).collect::<Vec<_>>().join(" < ")
    )]
    Descendant(Vec<u32>),
    /// Whether it does could not be told: why.
    #[error(
        "stepperd refuses this client: it cannot tell whether its process was started by \
         one of its tool calls ({0}) — connect again from your own terminal"
    )]
    Unknown(String),
}
