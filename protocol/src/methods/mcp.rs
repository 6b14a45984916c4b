//! The MCP servers a folder has and the daemon runs (`mcp/*`): listing, adding, removing,
//! approving and signing in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::Env;

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
