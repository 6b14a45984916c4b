//! The wire contract between `stepperd` and its clients.
//!
//! Default features are types only: serde + schemars, nothing that runs. The `client` and
//! `server` features add the one transport both sides share (jsonrpsee over WebSocket framing
//! on a local socket), so the two can never drift apart.

pub mod elicit;
pub mod error;
pub mod event;
pub mod methods;
pub mod schema;
pub mod session;
pub mod version;

#[cfg(feature = "transport")]
pub mod places;
#[cfg(feature = "transport")]
pub mod transport;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod inbound;
#[cfg(feature = "server")]
pub mod server;

pub use event::{
    AppEvent, ApprovalDecision, ElicitAction, EventEnvelope, KeptReason, KeptWorktree, TodoItem,
    TodoStatus, ToolCallStatus, TurnErrorKind, TurnStatus, Usage, Worktree, WorktreeConflict,
};
pub use methods::{Method, Subscription};
pub use session::{
    PermissionMode, SandboxInfo, SandboxMechanism, SandboxMode, SandboxState, SessionId,
    SessionInfo, SessionStatus,
};
pub use version::{PROTOCOL_VERSION, ProtocolVersion};
