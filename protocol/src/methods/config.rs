//! A folder's configuration: `config/*` (the settings' schema and problems), `commands/list`
//! and `project/init`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
