//! The wire contract between `stepperd` and its clients.
//!
//! Default features are types only: serde + schemars, nothing that runs but the pure fold of
//! events every client shares ([`view`]). The `client` and `server` features add the one
//! transport both sides share (jsonrpsee over WebSocket framing on a local socket), so the two
//! can never drift apart.
//!
//! `methods` is the one method table and its payloads, `event` the events, `view` their fold,
//! `error` the error codes, `schema` generates `protocol/schema/stepper.schema.json` from the table
//! (a test fails when the committed copy is stale: `UPDATE_SCHEMA=1 cargo test -p
//! stepper-protocol`). Feature `client` adds `client` (`DaemonClient`, `EventStream`, which
//! resubscribes from its last seq); `server` adds `server` (`LocalListener`, `ConnectionServer`
//! with the `Conventions` middleware) and `inbound`; both share `transport` and `places`.

/// A closed set of wire strings that a newer daemon may add to: an enum whose values this
/// build does not know deserialize as `Unknown` (serialized `"unknown"`), so an older client
/// still reads the message. The schema lists the values.
macro_rules! open_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident { $( $(#[$vm:meta])* $variant:ident = $text:literal, )* }
    ) => {
        $(#[$m])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash,
            serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        pub enum $name {
            $( $(#[$vm])* #[serde(rename = $text)] $variant, )*
            /// A value this build does not know (from a newer daemon).
            #[serde(rename = "unknown", other)]
            Unknown,
        }

        impl $name {
            /// Every value this build knows, in the order declared.
            pub const ALL: &'static [$name] = &[$( $name::$variant, )*];

            /// The value as the wire has it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )*
                    $name::Unknown => "unknown",
                }
            }

            /// The value named `text`; `Unknown` when no value is.
            pub fn parse(text: &str) -> $name {
                match text {
                    $( $text => $name::$variant, )*
                    _ => $name::Unknown,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod attachment;
pub mod elicit;
pub mod error;
pub mod event;
pub mod methods;
pub mod schema;
pub mod session;
pub mod version;
pub mod view;

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

pub use attachment::{Attachment, AttachmentKind, InputPart};
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
