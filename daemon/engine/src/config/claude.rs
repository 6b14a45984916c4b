//! Claude Code's settings files (`~/.claude/settings.json`, `.claude/settings.json`,
//! `.claude/settings.local.json`, the machine's `managed-settings.json`): read as they are and
//! turned into stepper's [`Settings`], so a project set up for Claude Code behaves the same
//! here. Only the keys stepper can honour are taken; [`validate_text`] names the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::StatusLine;
use super::problem::{Problem, Severity, closest};
use super::{PermissionMode, Permissions, Settings, jsonc, locate::Positions};

/// Claude Code's settings file in a `.claude` folder (the user's or a project's).
pub const SHARED: &str = "settings.json";
/// Claude Code's git-ignored project file.
pub const LOCAL: &str = "settings.local.json";
/// The file an administrator puts above every other.
pub const MANAGED: &str = "managed-settings.json";

/// Whether `path` is one of Claude Code's settings files rather than stepper's
/// (`setting.json`, singular): the name tells them apart.
pub fn is_claude(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| matches!(n, SHARED | LOCAL | MANAGED))
}

/// Where Claude Code keeps its own settings: the user's folder and the machine's managed
/// file. The daemon takes this machine's; a test gives its own, so a developer's
/// `~/.claude` does not reach it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    pub user_dir: Option<PathBuf>,
    pub managed_file: Option<PathBuf>,
}

impl Places {
    /// This machine's: `CLAUDE_CONFIG_DIR` or `~/.claude`, and the managed file.
    pub fn of_this_machine() -> Places {
        Places {
            user_dir: user_dir(),
            managed_file: Some(managed_file()),
        }
    }
}

/// The user's Claude Code folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn user_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".claude"))
}

/// Where an administrator's settings live on this system.
pub fn managed_file() -> PathBuf {
    if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/ClaudeCode").join(MANAGED)
    } else {
        PathBuf::from("/etc/claude-code").join(MANAGED)
    }
}

/// The keys of Claude Code's settings stepper honours.
const KEYS: &[&str] = &[
    "$schema",
    "model",
    "permissions",
    "env",
    "hooks",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "statusLine",
];
const PERMISSION_KEYS: &[&str] = &[
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "additionalDirectories",
];

/// A Claude Code settings file, as far as stepper reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeSettings {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    permissions: Option<ClaudePermissions>,
    /// Claude Code's values are strings; a number or a boolean is taken as its text.
    #[serde(default)]
    env: BTreeMap<String, Value>,
    #[serde(default)]
    hooks: Option<Value>,
    #[serde(default)]
    enable_all_project_mcp_servers: Option<bool>,
    #[serde(default)]
    enabled_mcpjson_servers: Vec<String>,
    #[serde(default)]
    disabled_mcpjson_servers: Vec<String>,
    /// Taken when it is a `command` ([`StatusLine`]); another shape is a warning from
    /// [`validate_text`], and must not keep a folder's settings from loading.
    #[serde(default)]
    status_line: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudePermissions {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    /// A name, not an enum: a mode Claude Code adds later is ignored, not an error that keeps
    /// the folder's settings from loading.
    #[serde(default)]
    default_mode: Option<String>,
    #[serde(default)]
    additional_directories: Vec<String>,
}

/// stepper's mode of a Claude Code `defaultMode` of the same meaning. `dontAsk` (refuse what
/// no rule allows) and `auto` (approve after a background check) have none: they run as
/// `default`, asking.
pub fn mode(name: &str) -> Option<PermissionMode> {
    match name {
        "default" => Some(PermissionMode::Default),
        "acceptEdits" => Some(PermissionMode::AcceptEdits),
        "plan" => Some(PermissionMode::Plan),
        "bypassPermissions" => Some(PermissionMode::Auto),
        _ => None,
    }
}

/// The model a Claude Code `model` names, as `provider/model-id`: an alias (`sonnet`, `opus`,
/// `haiku`, with or without `[1m]`) as agent files map it, a Claude id (`claude-…`) as
/// Anthropic's; `None` for `default` and what stepper cannot place (a Bedrock or Vertex id).
pub fn model(word: &str) -> Option<String> {
    let word = word.trim();
    let bare = word.strip_suffix("[1m]").unwrap_or(word);
    let bare = if bare == "opusplan" { "opus" } else { bare };
    if let Some(model) = crate::catalogue::alias(bare) {
        return Some(model.to_string());
    }
    if bare.starts_with("claude-") {
        return Some(format!("anthropic/{bare}"));
    }
    None
}

impl ClaudeSettings {
    /// stepper's settings of the same meaning, for a session in `cwd`.
    /// `additionalDirectories` become `Read` allow rules for those folders (relative ones
    /// from `cwd`): reads there stop asking, edits still ask.
    pub fn into_settings(self, cwd: &Path) -> Settings {
        let permissions = self.permissions.map(|p| {
            let mut allow = p.allow;
            allow.extend(p.additional_directories.iter().map(|dir| {
                let dir = dir.trim_end_matches('/');
                if let Some(abs) = dir.strip_prefix('/') {
                    format!("Read(//{abs}/**)")
                } else if dir.starts_with("~/") {
                    format!("Read({dir}/**)")
                } else {
                    let abs = crate::gate::resolve(&cwd.join(dir));
                    format!("Read(/{}/**)", abs.display())
                }
            }));
            Permissions {
                mode: p.default_mode.as_deref().and_then(mode),
                allow,
                ask: p.ask,
                deny: p.deny,
            }
        });
        let env = self
            .env
            .into_iter()
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some((k, s)),
                Value::Number(n) => Some((k, n.to_string())),
                Value::Bool(b) => Some((k, b.to_string())),
                _ => None,
            })
            .collect();
        Settings {
            claude_model: self.model.as_deref().and_then(model),
            permissions,
            env,
            hooks: self.hooks,
            enable_all_project_mcp_servers: self.enable_all_project_mcp_servers,
            enabled_mcpjson_servers: self.enabled_mcpjson_servers,
            disabled_mcpjson_servers: self.disabled_mcpjson_servers,
            status_line: self
                .status_line
                .and_then(|v| serde_json::from_value(v).ok()),
            ..Settings::default()
        }
    }
}

/// Check the text of a Claude Code settings file: what stepper takes is checked as stepper
/// reads it, and every key it does not use is a warning at its line.
pub fn validate_text(file: &Path, text: &str) -> Vec<Problem> {
    let plain = jsonc::strip(text);
    let problem = |(line, column): (usize, usize), severity, message: String, hint: &str| Problem {
        file: file.to_path_buf(),
        line,
        column,
        severity,
        message,
        hint: Some(hint.to_string()),
    };
    let root: Value = match serde_json::from_str(&plain) {
        Ok(v) => v,
        Err(e) => {
            return vec![problem(
                (e.line().max(1), e.column().max(1)),
                Severity::Error,
                format!("not valid JSON: {e}"),
                "check the quotes, commas and braces just before this point",
            )];
        }
    };
    let positions = Positions::of(&plain);
    let path = |parts: &[&str]| -> Vec<String> { parts.iter().map(|s| s.to_string()).collect() };
    let Some(object) = root.as_object() else {
        return vec![problem(
            (1, 1),
            Severity::Error,
            "the settings must be a JSON object".into(),
            "start the file with { and end it with }",
        )];
    };
    let mut problems = Vec::new();
    let unknown = |at: Vec<String>, known: &[&str], problems: &mut Vec<Problem>| {
        let key = at.join(".");
        let hint = match closest(at.last().map(String::as_str).unwrap_or(""), known) {
            Some(near) => format!("did you mean \"{near}\"? (stepper ignores this key)"),
            None => "a Claude Code setting stepper does not use: it is ignored (README, \
                     \"Claude Code's settings files\", lists what is)"
                .to_string(),
        };
        problems.push(problem(
            positions.key(&at),
            Severity::Warning,
            format!("\"{key}\" is not supported by stepper"),
            &hint,
        ));
    };
    for key in object.keys() {
        if !KEYS.contains(&key.as_str()) {
            unknown(path(&[key]), KEYS, &mut problems);
        }
    }
    if let Some(Value::Object(p)) = object.get("permissions") {
        for key in p.keys() {
            if !PERMISSION_KEYS.contains(&key.as_str()) {
                unknown(path(&["permissions", key]), PERMISSION_KEYS, &mut problems);
            }
        }
        let at = positions.value(&path(&["permissions", "defaultMode"]));
        match p.get("defaultMode").and_then(Value::as_str) {
            Some(name) if mode(name).is_some() => {}
            Some("dontAsk") => problems.push(problem(
                at,
                Severity::Warning,
                "permissions.defaultMode \"dontAsk\": stepper has no such mode, so what no \
                 rule allows is asked about instead of refused"
                    .into(),
                "list what may run in permissions.allow, or use \"plan\" to change nothing",
            )),
            Some(name) => problems.push(problem(
                at,
                Severity::Warning,
                format!(
                    "permissions.defaultMode \"{name}\" is not a mode stepper has: it runs as \
                     \"default\", asking"
                ),
                "default, acceptEdits, plan or bypassPermissions",
            )),
            None => {}
        }
    }
    if let Some(m) = object.get("model").and_then(Value::as_str)
        && m != "default"
        && model(m).is_none()
    {
        problems.push(problem(
            positions.value(&path(&["model"])),
            Severity::Warning,
            format!("model \"{m}\" is not one stepper can place: it is ignored"),
            "an alias (sonnet, opus, haiku) or a Claude id (claude-sonnet-4-5); name other \
             models in .stepper/setting.json as provider/model-id",
        ));
    }
    if let Some(line) = object.get("statusLine")
        && let Err(e) = serde_path_to_error::deserialize::<_, StatusLine>(line)
    {
        let mut at = path(&["statusLine"]);
        at.extend(e.path().iter().filter_map(|s| match s {
            serde_path_to_error::Segment::Map { key } => Some(key.clone()),
            _ => None,
        }));
        // A warning: the folder's settings load without it.
        problems.push(problem(
            positions.value(&at),
            Severity::Warning,
            format!("{}: {}", at.join("."), e.inner()),
            "{\"type\": \"command\", \"command\": \"~/.claude/statusline.sh\"}",
        ));
    }
    // Each key stepper takes, as stepper reads it: the first fault inside it, at its spot.
    for key in KEYS.iter().filter(|k| object.contains_key(**k)) {
        let one: serde_json::Map<String, Value> = object
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Err(e) = serde_path_to_error::deserialize::<_, ClaudeSettings>(Value::Object(one)) {
            let at: Vec<String> = e
                .path()
                .iter()
                .filter_map(|s| match s {
                    serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                    serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                    _ => None,
                })
                .collect();
            problems.push(problem(
                positions.value(&at),
                Severity::Error,
                format!("{}: {}", at.join("."), e.inner()),
                "see Claude Code's settings documentation for this key's shape",
            ));
        }
    }
    if let Some(permissions) = object.get("permissions") {
        problems.extend(super::validate::rule_problems(file, &plain, permissions));
    }
    if let Some(hooks) = object.get("hooks") {
        problems.extend(super::validate::hooks_problems(file, &plain, hooks));
    }
    problems.sort_by_key(|p| (p.line, p.column));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Settings {
        serde_json::from_str::<ClaudeSettings>(json)
            .unwrap()
            .into_settings(Path::new("/work/p"))
    }

    #[test]
    fn claude_code_keys_become_stepper_settings() {
        let s = read(
            r#"{"model": "opus", "env": {"A": "1", "N": 2},
                "permissions": {"defaultMode": "bypassPermissions", "allow": ["Bash(ls)"],
                  "deny": ["Read(./.env)"], "additionalDirectories": ["/data/", "~/notes", "../docs"]},
                "enabledMcpjsonServers": ["gh"], "statusLine": {"type": "command", "command": "x"}}"#,
        );
        assert_eq!(
            s.model, None,
            "stepper's own model, whatever the provider, comes first"
        );
        assert_eq!(s.claude_model.as_deref(), Some("anthropic/claude-opus-4-1"));
        assert_eq!(s.env["N"], "2");
        let p = s.permissions.unwrap();
        assert_eq!(p.mode, Some(PermissionMode::Auto));
        assert_eq!(
            p.allow,
            [
                "Bash(ls)",
                "Read(//data/**)",
                "Read(~/notes/**)",
                "Read(//work/docs/**)"
            ]
        );
        assert_eq!(s.enabled_mcpjson_servers, ["gh"]);
        assert_eq!(
            model("claude-sonnet-4-5"),
            Some("anthropic/claude-sonnet-4-5".into())
        );
        assert_eq!(
            model("sonnet[1m]"),
            Some("anthropic/claude-sonnet-4-5".into())
        );
        assert_eq!(model("us.anthropic.claude-x"), None);
        assert!(is_claude(Path::new("/p/.claude/settings.local.json")));
        assert!(!is_claude(Path::new("/p/.stepper/setting.json")));
    }

    #[test]
    fn unsupported_keys_and_bad_shapes_are_reported_at_their_line() {
        let text = "{\n  \"model\": \"sonnet\",\n  \"cleanupPeriodDays\": 20,\n  \"permissions\": {\n    \"disableBypassPermissionsMode\": \"disable\",\n    \"defaultMode\": \"yolo\",\n    \"deny\": [\"Bash(git * main)\"]\n  },\n  \"statusLine\": {\"type\": \"command\"}\n}\n";
        let found: Vec<String> = validate_text(Path::new("s.json"), text)
            .iter()
            .map(|p| format!("{}:{} {:?} {}", p.line, p.column, p.severity, p.message))
            .collect();
        let all = found.join("\n");
        assert!(
            all.contains("3:3 Warning \"cleanupPeriodDays\" is not supported"),
            "{all}"
        );
        assert!(
            all.contains("5:5 Warning \"permissions.disableBypassPermissionsMode\""),
            "{all}"
        );
        assert!(
            all.contains("6:20 Warning permissions.defaultMode \"yolo\" is not a mode"),
            "{all}"
        );
        // What stepper does not use never keeps the file from loading.
        let loaded: ClaudeSettings = serde_json::from_str(text).unwrap();
        let loaded = loaded.into_settings(Path::new("/p"));
        assert_eq!(loaded.permissions.as_ref().unwrap().mode, None);
        assert!(
            all.contains("7:14 Error rule \"Bash(git * main)\": a * is taken"),
            "{all}"
        );
        assert!(!all.contains("statusLine is read"), "{all}");
        assert_eq!(loaded.status_line, None, "a statusLine without a command");
        assert!(
            all.contains("9:17 Warning statusLine: missing field `command`"),
            "{all}"
        );
    }
}
