//! JSON-RPC error codes the daemon answers with, beyond the standard ones.
//!
//! The daemon maps every internal error to one of these in a single place; clients branch on
//! the code, and show the message (which always says what to do next).

/// The standard JSON-RPC codes, for reference by clients.
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;

/// `initialize` was refused: the protocol major versions differ.
pub const VERSION_MISMATCH: i32 = -32001;
/// A method other than `initialize` was called first.
pub const NOT_INITIALIZED: i32 = -32002;
/// No session with that id.
pub const SESSION_NOT_FOUND: i32 = -32003;
/// The request is valid but the session or daemon is in a state that forbids it.
pub const INVALID_STATE: i32 = -32004;
/// The store failed (disk full, corrupt file, ...).
pub const STORE_ERROR: i32 = -32005;
/// The daemon is shutting down and takes no new work.
pub const SHUTTING_DOWN: i32 = -32006;
