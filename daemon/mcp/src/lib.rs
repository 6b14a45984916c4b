//! The MCP client: servers from `mcpServers`, their tools exposed as
//! `mcp__<server>__<tool>` through the engine's `Tool` trait, every call through the gate.
//!
//! On the official SDK, `rmcp`: stdio servers over the pipes of a child spawned in its own
//! process group and recorded in the child registry (so no server outlives the daemon),
//! streamable HTTP servers on the SDK's transport, and legacy HTTP+SSE servers on our own.

pub mod config;
pub mod content;
pub mod http;
pub mod oauth;
pub mod pool;
pub mod prompts;
pub mod resources;
pub mod server;
pub mod sse;
pub mod tool;
pub mod watch;

pub use config::{Grant, OAuthClient, Secret, ServerSpec, Transport, parse_servers};
pub use pool::{IdleCap, Pool, Running, Servers, Slot, State, Stopped};
pub use server::{CallWith, McpError, McpServer};
pub use tool::{McpTool, McpTools, tool_name};

use std::time::Duration;

/// How long a server may take to start and answer `initialize`.
pub fn connect_timeout() -> Duration {
    millis_from_env("STEPPER_MCP_CONNECT_TIMEOUT_MS", 10_000)
}

/// How long one tool call may take.
pub fn call_timeout() -> Duration {
    millis_from_env("STEPPER_MCP_TOOL_TIMEOUT_MS", 120_000)
}

/// How long a server no turn uses keeps running. Ten minutes covers a pause between turns
/// (reading what the last one did, an edit); longer, a server mostly holds memory for turns
/// that may never come, and starting it again is cheap: its tools are kept, so a turn does
/// not wait for it.
pub fn idle_timeout() -> Duration {
    millis_from_env("STEPPER_MCP_IDLE_MS", 10 * 60_000)
}

fn millis_from_env(name: &str, default: u64) -> Duration {
    let ms = std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .unwrap_or(default);
    Duration::from_millis(ms)
}
