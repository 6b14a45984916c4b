//! The agent CLIs stepper can drive as back-ends (`backends/list`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::McpTransport;
use crate::session::Env;

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
