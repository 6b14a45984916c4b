//! Settings: `setting.json` from the user's config dir, then the project's
//! `.stepper/setting.json` and `.stepper/setting.local.json`, merged in that order, each
//! after Claude Code's file of the same scope ([`claude`]), and the machine's managed file
//! last.
//!
//! The files are JSON with comments and trailing commas allowed (see [`jsonc`]). Unknown keys
//! are ignored when loading, so a file written for a newer stepper still loads, and reported
//! as warnings by [`validate`]. The JSON Schema comes from these types.
//!
//! `PermissionMode` is the protocol's enum, so the wire, the settings and the gate share one set of
//! names.

pub mod check;
pub mod claude;
pub mod extensions;
pub mod jsonc;
pub mod layers;
pub mod locate;
pub mod memory;
pub mod problem;
pub mod repository;
pub mod templates;
pub mod trust;
pub mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalogue::ModelInfo;

pub use crate::provider::ProviderKind;

/// Whose login a CLI back-end uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackendAuth {
    /// The session's API key and base URL when it has them, else the CLI's own login.
    #[default]
    Auto,
    /// Always the CLI's own login (a Claude or ChatGPT plan): API keys are taken away.
    Subscription,
}

/// A provider: its wire format, where it is, and how to authenticate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key (looked up in the session's environment,
    /// then the daemon's).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Models of this provider, with what is known of them.
    #[serde(default)]
    pub models: BTreeMap<String, ModelInfo>,
    /// A CLI back-end's executable (`claude-code`, `codex-cli`): a path, or a name on PATH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A CLI back-end's login: `auto` (the default) or `subscription`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<BackendAuth>,
}

/// `setting.json`: the user's, the project's and the project's local one, merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// The default model, `provider/model-id` (e.g. `anthropic/claude-sonnet-4-5`).
    #[serde(default)]
    pub model: Option<String>,
    /// The model Claude Code's settings files name (as `anthropic/…`): used only where no
    /// `model` is set and Anthropic is set up, since Claude Code's files can name no other
    /// provider and a user of another one would otherwise be refused in a Claude Code project.
    #[serde(skip)]
    #[schemars(skip)]
    pub claude_model: Option<String>,
    /// Providers by the name used in model references (`local` in `local/qwen3`).
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Record every provider exchange of new sessions to this file (play it back with
    /// `--model replay/<file>`).
    #[serde(default)]
    pub record: Option<String>,
    /// When tools may run without asking: a mode and rules in Claude Code's syntax.
    #[serde(default)]
    pub permissions: Option<Permissions>,
    /// Environment variables for the session's tools.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Provider key variables (`OPENAI_API_KEY`, a provider's `apiKeyEnv`) the session's
    /// tools may see; the others are kept from them.
    #[serde(default)]
    pub pass_keys_to_tools: Vec<String>,
    /// MCP servers by name (stdio `command`/`args`/`env`, or `url` for HTTP).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, serde_json::Value>,
    /// Hooks in Claude Code's format (`PreToolUse`, `PostToolUse`, ...).
    #[serde(default)]
    pub hooks: Option<serde_json::Value>,
    /// A command whose output the TUI shows under its prompt, as Claude Code's
    /// `statusLine`: it gets the session as JSON on stdin. Not taken from a folder you have
    /// not trusted.
    #[serde(default)]
    pub status_line: Option<StatusLine>,
    /// When and with which model long conversations are summarised.
    #[serde(default)]
    pub compaction: Option<Compaction>,
    /// The OS sandbox commands run in: `"workspace-write"`, or an object with `mode`,
    /// `writableRoots`, `readableRoots`, `network` and `denyRead`.
    #[serde(default)]
    pub sandbox: Option<SandboxSetting>,
    /// Instructions in place of stepper's own for the model's family; the environment,
    /// memory files and layers still follow. Not taken from a folder you have not trusted.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Instructions added after stepper's own, the environment and the memory files.
    #[serde(default)]
    pub append_system_prompt: Option<String>,
    /// The most bytes of instructions (`stepper.md`, `AGENTS.md`, `CLAUDE.md` and their
    /// imports) a turn is given; what is over is cut, with a notice. Default 32768.
    #[serde(default)]
    pub memory_max_bytes: Option<usize>,
    /// Offer the `dispatch` tool (subagents the model starts): `true` in every layer, not
    /// only in those whose front matter says `dispatch: true`; `false` only in those. Absent,
    /// the answering agent is offered it whenever there are agent files, as Claude Code
    /// offers its Task tool.
    #[serde(default)]
    pub dispatch: Option<bool>,
    /// Mark prompt-cache breakpoints (Anthropic's `cache_control`: the system prompt, the
    /// tools, the conversation so far) so the next request reads them from the cache.
    /// Default on; off sends no breakpoints (a gateway that rejects them, a test of cold
    /// requests).
    #[serde(default)]
    pub prompt_cache: Option<bool>,
    /// Where a parallel layer's workers and dispatched subagents work when their layer or
    /// agent file does not say: `worktree` (each in its own git worktree, merged back) or
    /// `none` (the default: in the session's folder).
    #[serde(default)]
    pub worker_isolation: Option<layers::Isolation>,
    /// Run every MCP server a project names (`.mcp.json`, its `setting.json`) without
    /// asking. Honoured from your own `setting.json` and the project's
    /// `setting.local.json` only: a repository cannot approve its own servers.
    #[serde(default)]
    pub enable_all_project_mcp_servers: Option<bool>,
    /// Project MCP servers you approved, by name (same files as above).
    #[serde(default)]
    pub enabled_mcpjson_servers: Vec<String>,
    /// Project MCP servers you refused, by name; they never run.
    #[serde(default)]
    pub disabled_mcpjson_servers: Vec<String>,
    /// Let MCP servers use the session's model (sampling), each request asked like a tool
    /// call. Off by default: servers asking for it are refused.
    #[serde(default)]
    pub mcp_sampling: Option<bool>,
    /// How many MCP servers may keep running while no turn uses them, across every folder
    /// of the daemon (default 4); past it, the least recently used stop first. A server a
    /// turn uses is never stopped. Your `setting.json` sets it; a project's file may only
    /// lower it, for its own folder's servers.
    #[serde(default)]
    pub mcp_max_idle_servers: Option<u32>,
}

/// How many idle MCP servers stay running when the settings do not say: a few folders' worth
/// (a server-everything process holds about 67 MiB), enough to switch between projects without
/// a cold start.
pub const DEFAULT_MCP_MAX_IDLE_SERVERS: u32 = 4;

/// The OS sandbox's names: the protocol's type, as for permission modes.
pub use stepper_protocol::session::SandboxMode;

/// `sandbox` in settings: a mode alone, or a mode with what else it allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SandboxSetting {
    Mode(SandboxMode),
    Full(SandboxConfig),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxConfig {
    /// `read-only`, `workspace-write` or `off` (the default).
    #[serde(default)]
    pub mode: Option<SandboxMode>,
    /// More folders commands may change, beside the project and the temp folders
    /// (absolute, or starting with `~/`).
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Where commands may read: when given, only these, the project, the writable roots
    /// and the system's folders; when absent, everywhere.
    #[serde(default)]
    pub readable_roots: Option<Vec<String>>,
    /// Whether commands may use the network (Internet sockets, loopback included).
    #[serde(default)]
    pub network: Option<bool>,
    /// Files and folders commands may not read (absolute, or starting with `~/`): when
    /// absent, the usual homes of credentials ([`DEFAULT_DENY_READ`]); when given, exactly
    /// these (`[]` hides nothing). stepper's own data and config folders are hidden either
    /// way.
    #[serde(default)]
    pub deny_read: Option<Vec<String>>,
}

/// What sandboxed commands cannot read unless `denyRead` says otherwise: where the usual
/// tools keep keys and tokens.
pub const DEFAULT_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.azure",
    "~/.claude/.credentials.json",
    "~/.codex/auth.json",
];

impl SandboxConfig {
    /// The paths commands may not read, as written (`~/` not yet expanded).
    pub fn deny_read(&self) -> Vec<String> {
        match &self.deny_read {
            Some(list) => list.clone(),
            None => DEFAULT_DENY_READ.iter().map(|p| p.to_string()).collect(),
        }
    }
}

impl SandboxSetting {
    /// As the object form.
    pub fn config(&self) -> SandboxConfig {
        match self {
            SandboxSetting::Mode(mode) => SandboxConfig {
                mode: Some(*mode),
                ..SandboxConfig::default()
            },
            SandboxSetting::Full(config) => config.clone(),
        }
    }
}

/// How much tools may do without asking: the protocol's type, so the wire, the settings and
/// the gate can never disagree on a name.
pub use stepper_protocol::session::PermissionMode;

pub use crate::gate::rules::Permissions;

/// `statusLine`: `{"type": "command", "command": "~/.claude/statusline.sh"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusLine {
    /// `command`, the only kind.
    #[serde(rename = "type")]
    pub kind: StatusLineKind,
    /// A shell command line; its first lines of output are shown.
    pub command: String,
    /// Blank columns before it (Claude Code's; the TUI leaves its own margin).
    #[serde(default)]
    pub padding: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusLineKind {
    Command,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// The model that writes summaries (`provider/model-id`); the layer's own by default.
    #[serde(default)]
    pub model: Option<String>,
    /// The same as `model` (the name of earlier versions).
    #[serde(default)]
    pub provider: Option<String>,
    /// The share of the context window at which to compact (default 0.7).
    #[serde(default)]
    pub threshold: Option<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}:{line}:{column}: {message} — fix the file or move it away", .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whose a settings file is: what of it applies in a folder the user has not trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's own (`setting.json` in the config folder, `~/.claude/settings.json`).
    User,
    /// A project's committed file.
    Project,
    /// A project's git-ignored file: the user's own once the folder is trusted.
    Local,
    /// An administrator's (Claude Code's `managed-settings.json`), above every other.
    Managed,
}

/// One settings file and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    pub scope: Scope,
}

impl Source {
    /// Whether it applies whole whatever the folder's trust.
    pub fn is_users(&self) -> bool {
        matches!(self.scope, Scope::User | Scope::Managed)
    }
}

impl Settings {
    /// The files that apply to `cwd`, in merge order: for each scope Claude Code's file,
    /// then stepper's (which wins where both set a key: it is the one written for stepper),
    /// user < project < local, and the machine's managed file above all, as Claude Code
    /// orders them.
    pub fn sources(config_dir: &Path, claude: &claude::Places, cwd: &Path) -> Vec<Source> {
        let at = |path: PathBuf, scope| Source { path, scope };
        let mut sources = Settings::user_sources(config_dir, claude);
        let managed = sources.pop_if(|s| s.scope == Scope::Managed);
        sources.extend([
            at(cwd.join(".claude").join(claude::SHARED), Scope::Project),
            at(cwd.join(".stepper").join("setting.json"), Scope::Project),
            at(cwd.join(".claude").join(claude::LOCAL), Scope::Local),
            at(
                cwd.join(".stepper").join("setting.local.json"),
                Scope::Local,
            ),
        ]);
        sources.extend(managed);
        sources
    }

    /// The user's files alone (and the managed one), in merge order.
    fn user_sources(config_dir: &Path, claude: &claude::Places) -> Vec<Source> {
        let at = |path: PathBuf, scope| Source { path, scope };
        let mut sources: Vec<Source> = claude
            .user_dir
            .as_ref()
            .map(|dir| at(dir.join(claude::SHARED), Scope::User))
            .into_iter()
            .collect();
        sources.push(at(config_dir.join("setting.json"), Scope::User));
        sources.extend(
            claude
                .managed_file
                .clone()
                .map(|path| at(path, Scope::Managed)),
        );
        sources
    }

    /// The files that apply to `cwd`, in merge order.
    pub fn files(config_dir: &Path, claude: &claude::Places, cwd: &Path) -> Vec<PathBuf> {
        Settings::sources(config_dir, claude, cwd)
            .into_iter()
            .map(|s| s.path)
            .collect()
    }

    /// The user's files alone (and the managed one), in merge order.
    pub fn user_files(config_dir: &Path, claude: &claude::Places) -> Vec<PathBuf> {
        Settings::user_sources(config_dir, claude)
            .into_iter()
            .map(|s| s.path)
            .collect()
    }

    /// Load and merge the settings for a session in `cwd`. Missing files are fine.
    pub fn load(
        config_dir: &Path,
        claude: &claude::Places,
        cwd: &Path,
    ) -> Result<Settings, ConfigError> {
        Settings::load_files_in(Settings::files(config_dir, claude, cwd), cwd)
    }

    /// The user's settings alone, for what belongs to no folder.
    pub fn load_user(config_dir: &Path, claude: &claude::Places) -> Result<Settings, ConfigError> {
        Settings::load_files(Settings::user_files(config_dir, claude))
    }

    /// The settings for a session in `cwd`: the user's, then the project's files — whole in
    /// a folder the user trusts, else only what narrows ([`trust::narrow`]) — and what was
    /// left out, each as `file: what`. Missing files are fine.
    pub fn load_folder(
        config_dir: &Path,
        claude: &claude::Places,
        cwd: &Path,
        trusted: bool,
    ) -> Result<(Settings, Vec<String>), ConfigError> {
        let mut merged = Settings::default();
        let mut ignored = Vec::new();
        for source in Settings::sources(config_dir, claude, cwd) {
            let path = source.path.clone();
            let Some(layer) = Settings::read_layer(&path, cwd)? else {
                continue;
            };
            if source.is_users() || trusted {
                merged.merge(layer);
                continue;
            }
            let shown = path
                .strip_prefix(cwd)
                .unwrap_or(&path)
                .display()
                .to_string();
            let (kept, left_out) = trust::narrow(layer, &merged, &shown);
            ignored.extend(left_out);
            merged.merge(kept);
        }
        Ok((merged, ignored))
    }

    /// What may approve a project's MCP servers: the user's settings (Claude Code's and
    /// stepper's), and in a folder the user trusts the project's git-ignored local files
    /// (`.claude/settings.local.json`, where Claude Code keeps the approvals its user gave,
    /// and `setting.local.json`), merged.
    pub fn load_approvals(
        config_dir: &Path,
        claude: &claude::Places,
        cwd: &Path,
        trusted: bool,
    ) -> Result<Settings, ConfigError> {
        let files = Settings::sources(config_dir, claude, cwd)
            .into_iter()
            .filter(|s| s.is_users() || (trusted && s.scope == Scope::Local))
            .map(|s| s.path)
            .collect();
        Settings::load_files_in(files, cwd)
    }

    /// Whether requests mark prompt-cache breakpoints (`promptCache`, default on).
    pub fn prompt_cache(&self) -> bool {
        self.prompt_cache.unwrap_or(true)
    }

    /// Where workers and subagents work when nothing closer says (`workerIsolation`).
    pub fn worker_isolation(&self) -> layers::Isolation {
        self.worker_isolation.unwrap_or(layers::Isolation::None)
    }

    /// The share of a model's window at which its context is compacted.
    pub fn compaction_threshold(&self) -> f64 {
        self.compaction
            .as_ref()
            .and_then(|c| c.threshold)
            .unwrap_or(crate::compaction::DEFAULT_THRESHOLD)
    }

    /// The permission mode these settings choose (`default` when none).
    pub fn mode(&self) -> PermissionMode {
        self.permissions
            .as_ref()
            .and_then(|p| p.mode)
            .unwrap_or(PermissionMode::Default)
    }

    /// The sandbox these settings choose, in its object form (`off` when none).
    pub fn sandbox(&self) -> SandboxConfig {
        self.sandbox
            .as_ref()
            .map(SandboxSetting::config)
            .unwrap_or_default()
    }

    /// Load and merge `files` in order. Missing files are fine.
    pub fn load_files(files: Vec<PathBuf>) -> Result<Settings, ConfigError> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        Settings::load_files_in(files, &home)
    }

    /// [`Settings::load_files`], relative folders in Claude Code's files taken from `cwd`.
    fn load_files_in(files: Vec<PathBuf>, cwd: &Path) -> Result<Settings, ConfigError> {
        let mut merged = Settings::default();
        for path in files {
            if let Some(layer) = Settings::read_layer(&path, cwd)? {
                merged.merge(layer);
            }
        }
        Ok(merged)
    }

    /// One settings file (stepper's, or Claude Code's turned into stepper's), or `None` when
    /// it does not exist.
    fn read_layer(path: &Path, cwd: &Path) -> Result<Option<Settings>, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let plain = jsonc::strip(&text);
        let parsed = if claude::is_claude(path) {
            serde_json::from_str::<claude::ClaudeSettings>(&plain).map(|c| c.into_settings(cwd))
        } else {
            serde_json::from_str(&plain)
        };
        parsed.map(Some).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// Later layers win: a scalar replaces, a provider replaces the one of the same name.
    pub fn merge(&mut self, later: Settings) {
        if later.model.is_some() {
            self.model = later.model;
        }
        if later.claude_model.is_some() {
            self.claude_model = later.claude_model;
        }
        if later.record.is_some() {
            self.record = later.record;
        }
        self.providers.extend(later.providers);
        self.env.extend(later.env);
        self.pass_keys_to_tools.extend(later.pass_keys_to_tools);
        self.mcp_servers.extend(later.mcp_servers);
        if let Some(later) = later.hooks {
            self.hooks = Some(merge_hooks(self.hooks.take(), later));
        }
        if later.compaction.is_some() {
            self.compaction = later.compaction;
        }
        if later.status_line.is_some() {
            self.status_line = later.status_line;
        }
        if later.memory_max_bytes.is_some() {
            self.memory_max_bytes = later.memory_max_bytes;
        }
        if later.system_prompt.is_some() {
            self.system_prompt = later.system_prompt;
        }
        if later.append_system_prompt.is_some() {
            self.append_system_prompt = later.append_system_prompt;
        }
        if later.dispatch.is_some() {
            self.dispatch = later.dispatch;
        }
        if later.worker_isolation.is_some() {
            self.worker_isolation = later.worker_isolation;
        }
        if later.prompt_cache.is_some() {
            self.prompt_cache = later.prompt_cache;
        }
        if later.mcp_sampling.is_some() {
            self.mcp_sampling = later.mcp_sampling;
        }
        if later.mcp_max_idle_servers.is_some() {
            self.mcp_max_idle_servers = later.mcp_max_idle_servers;
        }
        if later.enable_all_project_mcp_servers.is_some() {
            self.enable_all_project_mcp_servers = later.enable_all_project_mcp_servers;
        }
        self.enabled_mcpjson_servers
            .extend(later.enabled_mcpjson_servers);
        self.disabled_mcpjson_servers
            .extend(later.disabled_mcpjson_servers);
        if let Some(later) = later.sandbox {
            // The last mode and network win; roots accumulate, as rules do.
            let mut merged = self
                .sandbox
                .as_ref()
                .map(SandboxSetting::config)
                .unwrap_or_default();
            let later = later.config();
            merged.mode = later.mode.or(merged.mode);
            merged.network = later.network.or(merged.network);
            merged.writable_roots.extend(later.writable_roots);
            if let Some(roots) = later.readable_roots {
                merged
                    .readable_roots
                    .get_or_insert_with(Vec::new)
                    .extend(roots);
            }
            if let Some(paths) = later.deny_read {
                merged.deny_read.get_or_insert_with(Vec::new).extend(paths);
            }
            self.sandbox = Some(SandboxSetting::Full(merged));
        }
        if let Some(p) = later.permissions {
            // Rules accumulate across files, as in Claude Code; the last mode wins.
            let merged = self.permissions.get_or_insert_with(Permissions::default);
            if p.mode.is_some() {
                merged.mode = p.mode;
            }
            merged.allow.extend(p.allow);
            merged.deny.extend(p.deny);
            merged.ask.extend(p.ask);
        }
    }

    /// The instructions these settings give in place of or after the base.
    pub fn instructions(&self) -> crate::prompt::UserInstructions {
        crate::prompt::UserInstructions {
            system_prompt: self.system_prompt.clone(),
            append_system_prompt: self.append_system_prompt.clone(),
        }
    }

    /// The JSON Schema of `setting.json`.
    pub fn schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Settings)).unwrap_or_default()
    }
}

/// Hooks of every file run, as in Claude Code: each event's groups of a later file after
/// those of the earlier ones.
fn merge_hooks(earlier: Option<serde_json::Value>, later: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let (Some(Value::Object(mut merged)), Value::Object(later)) = (earlier, later.clone()) else {
        return later;
    };
    for (event, groups) in later {
        match (merged.get_mut(&event), groups) {
            (Some(Value::Array(have)), Value::Array(more)) => have.extend(more),
            (_, groups) => {
                merged.insert(event, groups);
            }
        }
    }
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_as_a_name_or_an_object_merges_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.json");
        let project = dir.path().join("project.json");
        std::fs::write(
            &user,
            r#"{"sandbox": {"mode": "read-only", "writableRoots": ["~/.cache"], "network": true}}"#,
        )
        .unwrap();
        std::fs::write(&project, r#"{"sandbox": "workspace-write"}"#).unwrap();
        let merged = Settings::load_files(vec![user, project]).unwrap().sandbox();
        assert_eq!(merged.mode, Some(SandboxMode::WorkspaceWrite));
        assert_eq!(merged.network, Some(true));
        assert_eq!(merged.writable_roots, vec!["~/.cache".to_string()]);
        assert_eq!(Settings::default().sandbox().mode, None);
        // denyRead: the credential folders unless given; given, exactly what the files say.
        assert!(merged.deny_read().contains(&"~/.ssh".to_string()));
        let own = dir.path().join("own.json");
        std::fs::write(&own, r#"{"sandbox": {"denyRead": []}}"#).unwrap();
        let more = dir.path().join("more.json");
        std::fs::write(&more, r#"{"sandbox": {"denyRead": ["~/.secrets"]}}"#).unwrap();
        let load = |files: Vec<PathBuf>| Settings::load_files(files).unwrap().sandbox().deny_read();
        assert_eq!(load(vec![own.clone()]), Vec::<String>::new());
        assert_eq!(load(vec![own, more]), vec!["~/.secrets".to_string()]);
        for mode in SandboxMode::ALL {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
        }
    }

    #[test]
    fn mode_names_are_the_settings_names() {
        for mode in PermissionMode::ALL {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
        }
        assert!(
            "yolo"
                .parse::<PermissionMode>()
                .unwrap_err()
                .contains("accept-edits")
        );
    }

    #[test]
    fn layers_merge_in_order_and_errors_point_at_the_spot() {
        let dir = tempfile_dir();
        let user = dir.join("user");
        let project = dir.join("project");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(project.join(".stepper")).unwrap();
        std::fs::write(
            user.join("setting.json"),
            r#"{"model": "anthropic/claude-sonnet-4-5", "providers": {"local": {"kind": "openai-chat", "baseUrl": "http://a"}}, "hooks": {}}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".stepper/setting.local.json"),
            r#"{"model": "local/qwen3", "providers": {"local": {"kind": "openai-chat", "baseUrl": "http://b", "models": {"qwen3": {"contextWindow": 32768}}}}}"#,
        )
        .unwrap();
        let s = Settings::load(&user, &claude::Places::default(), &project).unwrap();
        assert_eq!(s.model.as_deref(), Some("local/qwen3"));
        let local = &s.providers["local"];
        assert_eq!(local.base_url.as_deref(), Some("http://b"));
        assert_eq!(local.models["qwen3"].context_window, Some(32768));

        std::fs::write(
            project.join(".stepper/setting.json"),
            "{\n  \"model\": 3\n}",
        )
        .unwrap();
        let err = Settings::load(&user, &claude::Places::default(), &project)
            .unwrap_err()
            .to_string();
        assert!(err.contains("setting.json:2:"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn claude_codes_file_comes_before_steppers_of_its_scope_and_hooks_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let (config, cwd) = (dir.path().join("config"), dir.path().join("p"));
        let claude = claude::Places {
            user_dir: Some(dir.path().join("home/.claude")),
            managed_file: Some(dir.path().join("etc/managed-settings.json")),
        };
        let order: Vec<(String, Scope)> = Settings::sources(&config, &claude, &cwd)
            .into_iter()
            .map(|s| {
                let shown = s
                    .path
                    .strip_prefix(dir.path())
                    .unwrap()
                    .display()
                    .to_string();
                (shown, s.scope)
            })
            .collect();
        assert_eq!(
            order,
            [
                ("home/.claude/settings.json".into(), Scope::User),
                ("config/setting.json".into(), Scope::User),
                ("p/.claude/settings.json".into(), Scope::Project),
                ("p/.stepper/setting.json".into(), Scope::Project),
                ("p/.claude/settings.local.json".into(), Scope::Local),
                ("p/.stepper/setting.local.json".into(), Scope::Local),
                ("etc/managed-settings.json".into(), Scope::Managed),
            ]
        );
        std::fs::create_dir_all(cwd.join(".claude")).unwrap();
        std::fs::create_dir_all(cwd.join(".stepper")).unwrap();
        let group = |c: &str| serde_json::json!([{"hooks": [{"type": "command", "command": c}]}]);
        std::fs::write(
            cwd.join(".claude/settings.json"),
            serde_json::json!({"model": "sonnet", "hooks": {"Stop": group("a")}}).to_string(),
        )
        .unwrap();
        std::fs::write(
            cwd.join(".stepper/setting.json"),
            serde_json::json!({"model": "openai/gpt-5", "hooks": {"Stop": group("b")}}).to_string(),
        )
        .unwrap();
        let (s, ignored) = Settings::load_folder(&config, &claude, &cwd, true).unwrap();
        assert!(ignored.is_empty());
        assert_eq!(
            s.model.as_deref(),
            Some("openai/gpt-5"),
            "stepper's file wins"
        );
        let stop = s.hooks.unwrap()["Stop"].clone();
        assert_eq!(stop.as_array().map(Vec::len), Some(2), "both run: {stop}");
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "stepper-config-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
