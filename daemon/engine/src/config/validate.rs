//! `stepper config --validate`: every problem of every settings file, each with its file,
//! line, column and a hint — not just the first one serde trips on.
//!
//! Each top-level key (and each provider) is checked on its own, so one mistake does not
//! hide the next; unknown keys are warnings with a suggestion.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::locate::Positions;
pub use super::problem::{Problem, Severity, closest};
use super::{Compaction, Permissions, ProviderConfig, ProviderKind, jsonc};
use crate::model::ModelRef;

const KEYS: &[&str] = &[
    "model",
    "providers",
    "record",
    "permissions",
    "env",
    "passKeysToTools",
    "mcpServers",
    "hooks",
    "memoryMaxBytes",
    "dispatch",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "mcpSampling",
    "mcpMaxIdleServers",
    "compaction",
    "sandbox",
    "systemPrompt",
    "appendSystemPrompt",
    "promptCache",
    "workerIsolation",
];
const MCP_SERVER_KEYS: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "oauth",
];
/// A pre-registered client, as Claude Code spells it (`clientSecret` is stepper's: Claude
/// Code keeps the secret in the system's keychain; so are a machine client's `grant` and
/// `privateKeyFile`).
const MCP_OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecret",
    "callbackPort",
    "grant",
    "privateKeyFile",
];
const PROVIDER_KEYS: &[&str] = &["kind", "baseUrl", "apiKeyEnv", "headers", "models"];
const KINDS: &str = "anthropic, openai, openai-chat, codex, replay";

struct Checker<'a> {
    file: &'a Path,
    positions: Positions,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn at(
        &mut self,
        path: &[String],
        key: bool,
        severity: Severity,
        message: String,
        hint: Option<String>,
    ) {
        let (line, column) = if key {
            self.positions.key(path)
        } else {
            self.positions.value(path)
        };
        self.problems.push(Problem {
            file: self.file.to_path_buf(),
            line,
            column,
            severity,
            message,
            hint,
        });
    }

    /// Deserialize `value` as `T`; a failure is reported at the exact spot inside it.
    fn typed<T: DeserializeOwned>(
        &mut self,
        path: &[String],
        value: &Value,
        hint: &dyn Fn(&[String]) -> Option<String>,
    ) -> Option<T> {
        match serde_path_to_error::deserialize::<_, T>(value) {
            Ok(v) => Some(v),
            Err(e) => {
                let mut at = path.to_vec();
                for segment in e.path().iter() {
                    match segment {
                        serde_path_to_error::Segment::Map { key } => at.push(key.clone()),
                        serde_path_to_error::Segment::Seq { index } => at.push(index.to_string()),
                        _ => {}
                    }
                }
                let shown = at.join(".");
                let h = hint(&at);
                self.at(
                    &at,
                    false,
                    Severity::Error,
                    format!("{shown}: {}", e.inner()),
                    h,
                );
                None
            }
        }
    }

    fn unknown_keys(
        &mut self,
        path: &[String],
        object: &serde_json::Map<String, Value>,
        known: &[&str],
    ) {
        for key in object.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let mut at = path.to_vec();
            at.push(key.clone());
            let hint = match closest(key, known) {
                Some(k) => format!("did you mean \"{k}\"?"),
                None => format!(
                    "stepper ignores it; the keys here are: {}",
                    known.join(", ")
                ),
            };
            self.at(
                &at,
                true,
                Severity::Warning,
                format!("unknown key \"{}\"", at.join(".")),
                Some(hint),
            );
        }
    }
}

/// Check the text of a settings file (JSON with comments).
pub fn validate_text(file: &Path, text: &str) -> Vec<Problem> {
    let plain = jsonc::strip(text);
    let root: Value = match serde_json::from_str(&plain) {
        Ok(v) => v,
        Err(e) => {
            return vec![Problem {
                file: file.to_path_buf(),
                line: e.line().max(1),
                column: e.column().max(1),
                severity: Severity::Error,
                message: format!("not valid JSON: {e}"),
                hint: Some("check the quotes, commas and braces just before this point (comments and trailing commas are fine)".into()),
            }];
        }
    };
    let mut c = Checker {
        file,
        positions: Positions::of(&plain),
        problems: Vec::new(),
    };
    let Some(object) = root.as_object() else {
        c.at(
            &[],
            false,
            Severity::Error,
            "the settings must be a JSON object".into(),
            Some("start the file with { and end it with }".into()),
        );
        return c.problems;
    };
    c.unknown_keys(&[], object, KEYS);
    let p = |s: &str| vec![s.to_string()];
    let no_hint = |_: &[String]| None;
    for (key, value) in object {
        match key.as_str() {
            "model" => {
                if let Some(model) = c.typed::<String>(&p("model"), value, &|_| Some(model_hint()))
                    && let Err(e) = ModelRef::parse(&model)
                {
                    c.at(
                        &p("model"),
                        false,
                        Severity::Error,
                        e.to_string(),
                        Some(model_hint()),
                    );
                }
            }
            "record" => {
                c.typed::<String>(&p("record"), value, &|_| {
                    Some("a file path, relative to the project".into())
                });
            }
            "providers" => check_providers(&mut c, value),
            "permissions" => {
                c.typed::<Permissions>(&p("permissions"), value, &|at: &[String]| match at
                    .get(1)
                    .map(String::as_str)
                {
                    Some("mode") => Some("one of default, accept-edits, plan, auto".into()),
                    Some("allow" | "deny" | "ask") => Some(
                        "a list of rules such as \"Bash(npm test:*)\" or \"Read(./src/**)\"".into(),
                    ),
                    _ => Some("an object with mode, allow, deny, ask".into()),
                });
                check_rules(&mut c, value);
            }
            "env" => {
                c.typed::<std::collections::BTreeMap<String, String>>(&p("env"), value, &|_| {
                    Some("variable names to string values: put numbers in quotes".into())
                });
            }
            "passKeysToTools" => {
                c.typed::<Vec<String>>(&p("passKeysToTools"), value, &|_| {
                    Some("a list of variable names, such as [\"OPENAI_API_KEY\"]".into())
                });
            }
            "mcpServers" => {
                let servers = c
                    .typed::<std::collections::BTreeMap<String, serde_json::Map<String, Value>>>(
                        &p("mcpServers"),
                        value,
                        &|_| {
                            Some("servers by name, each an object with command/args or url".into())
                        },
                    );
                for (name, server) in servers.unwrap_or_default() {
                    let at = vec!["mcpServers".to_string(), name];
                    c.unknown_keys(&at, &server, MCP_SERVER_KEYS);
                    if let Some(Value::Object(oauth)) = server.get("oauth") {
                        let mut at = at.clone();
                        at.push("oauth".into());
                        c.unknown_keys(&at, oauth, MCP_OAUTH_KEYS);
                    }
                }
            }
            "compaction" => {
                c.typed::<Compaction>(&p("compaction"), value, &no_hint);
            }
            "memoryMaxBytes" => {
                c.typed::<usize>(&p("memoryMaxBytes"), value, &|_| {
                    Some("a number of bytes, such as 32768".into())
                });
            }
            "mcpMaxIdleServers" => {
                c.typed::<u32>(&p(key), value, &|_| {
                    Some(
                        "a number of servers, such as 4 (0 stops each as soon as it is idle)"
                            .into(),
                    )
                });
            }
            "systemPrompt" | "appendSystemPrompt" => {
                c.typed::<String>(&p(key), value, &|_| {
                    Some("text, such as \"Answer in French.\"".into())
                });
            }
            "dispatch" | "enableAllProjectMcpServers" | "mcpSampling" | "promptCache" => {
                c.typed::<bool>(&p(key), value, &|_| Some("true or false".into()));
            }
            "workerIsolation" => {
                c.typed::<super::layers::Isolation>(&p(key), value, &|_| {
                    Some("\"worktree\" or \"none\"".into())
                });
            }
            "enabledMcpjsonServers" | "disabledMcpjsonServers" => {
                c.typed::<Vec<String>>(&p(key), value, &|_| {
                    Some("a list of server names, such as [\"github\"]".into())
                });
            }
            "hooks" => check_hooks(&mut c, value),
            "sandbox" => {
                c.typed::<super::SandboxSetting>(&p("sandbox"), value, &|_| {
                    Some(
                        "\"read-only\", \"workspace-write\" or \"off\", or an object with mode, \
                         writableRoots, readableRoots (lists of absolute or ~/ paths) and network \
                         (true or false)"
                            .into(),
                    )
                });
                check_sandbox_roots(&mut c, value);
            }
            _ => {}
        }
    }
    c.problems.sort_by_key(|p| (p.line, p.column));
    c.problems
}

/// Rules in `permissions` that do not parse: the gate would skip them, so a deny rule
/// among them would deny nothing.
fn check_rules(c: &mut Checker<'_>, permissions: &Value) {
    for list in ["allow", "ask", "deny"] {
        let rules = permissions.get(list).and_then(Value::as_array);
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            let Some(text) = rule.as_str() else { continue };
            if let Err(e) = crate::gate::Rule::parse(text, Path::new("/"), None) {
                let at = ["permissions", list, &i.to_string()].map(String::from);
                c.at(
                    &at,
                    false,
                    Severity::Error,
                    e,
                    Some(format!("this {list} rule is skipped until it is fixed")),
                );
            }
        }
    }
}

/// The problems of `permissions`' rules in a file of another shape (Claude Code's settings),
/// whose plain JSON text is `plain`.
pub(super) fn rule_problems(file: &Path, plain: &str, permissions: &Value) -> Vec<Problem> {
    let mut c = Checker {
        file,
        positions: Positions::of(plain),
        problems: Vec::new(),
    };
    check_rules(&mut c, permissions);
    c.problems
}

/// The problems of `hooks` in a file of another shape (Claude Code's settings), whose plain
/// JSON text is `plain`: the same checks, at the same spots.
pub(super) fn hooks_problems(file: &Path, plain: &str, value: &Value) -> Vec<Problem> {
    let mut c = Checker {
        file,
        positions: Positions::of(plain),
        problems: Vec::new(),
    };
    check_hooks(&mut c, value);
    c.problems
}

/// `hooks` in Claude Code's schema (known events, `{matcher, hooks: [{type, command,
/// timeout}]}` groups, matchers that compile): the problems of the parser the daemon runs
/// hooks from, each at its spot.
fn check_hooks(c: &mut Checker<'_>, value: &Value) {
    for problem in crate::hooks::settings::Hooks::parse(Some(value)).problems {
        let severity = problem.severity();
        c.at(
            &problem.path,
            problem.at_key,
            severity,
            problem.message,
            problem.hint,
        );
    }
}

/// Roots must be absolute (or start with `~/`): a relative one would depend on where the
/// command runs.
fn check_sandbox_roots(c: &mut Checker<'_>, value: &Value) {
    for key in ["writableRoots", "readableRoots", "denyRead"] {
        let Some(roots) = value.get(key).and_then(Value::as_array) else {
            continue;
        };
        for (i, root) in roots.iter().enumerate() {
            if let Some(text) = root.as_str()
                && !(text.starts_with('/') || text.starts_with("~/"))
            {
                c.at(
                    &["sandbox".to_string(), key.to_string(), i.to_string()],
                    false,
                    Severity::Error,
                    format!("{text:?} is not an absolute path"),
                    Some("write it from / or ~/".into()),
                );
            }
        }
    }
}

fn model_hint() -> String {
    "a model reference such as \"anthropic/claude-sonnet-4-5\" (provider/model-id)".into()
}

fn check_providers(c: &mut Checker<'_>, value: &Value) {
    let base = vec!["providers".to_string()];
    let Some(providers) = value.as_object() else {
        c.at(&base, false, Severity::Error, "providers: expected an object of providers by name".into(), Some("{\"local\": {\"kind\": \"openai-chat\", \"baseUrl\": \"http://localhost:11434/v1\"}}".into()));
        return;
    };
    for (name, provider) in providers {
        let mut path = base.clone();
        path.push(name.clone());
        if let Some(object) = provider.as_object() {
            c.unknown_keys(&path, object, PROVIDER_KEYS);
        }
        let hint = |at: &[String]| match at.get(2).map(String::as_str) {
            Some("kind") | None => Some(format!("kind is one of {KINDS}")),
            Some("baseUrl") => Some("a URL such as \"http://localhost:11434/v1\"".into()),
            Some("headers") => Some("header names to string values".into()),
            Some("models") => {
                Some("model ids to {contextWindow, maxOutput, inputPrice, outputPrice, ...}".into())
            }
            _ => None,
        };
        let Some(config) = c.typed::<ProviderConfig>(&path, provider, &hint) else {
            continue;
        };
        let mut at = path.clone();
        at.push("baseUrl".into());
        match &config.base_url {
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                c.at(
                    &at,
                    false,
                    Severity::Error,
                    format!("{}: {url:?} is not an http(s) URL", at.join(".")),
                    Some("a URL such as \"http://localhost:11434/v1\"".into()),
                );
            }
            None if config.kind == ProviderKind::OpenaiChat => {
                c.at(
                    &path,
                    true,
                    Severity::Error,
                    format!("providers.{name}: an openai-chat provider needs a baseUrl"),
                    Some(
                        "where the server listens, e.g. \"http://localhost:11434/v1\" for Ollama"
                            .into(),
                    ),
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(text: &str) -> String {
        validate_text(Path::new("project/.stepper/setting.json"), text)
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn every_problem_with_its_place_and_a_hint() {
        let text = r#"{
  // a comment is fine
  "modle": "anthropic/claude-sonnet-4-5",
  "model": "not a model",
  "providers": {
    "local": { "kind": "openai-chat" },
    "remote": { "kind": "gemini", "baseUrl": "https://x" },
    "other": { "kind": "openai", "baseUrl": "ftp://x", "apiKeyEnvv": "K" },
  },
  "permissions": { "mode": "yolo", "allow": ["Bash(ls)"] },
  "env": { "DEBUG": 1 },
}"#;
        insta::assert_snapshot!(report(text));
    }

    #[test]
    fn hook_problems_are_placed() {
        let text = r#"{
  "hooks": {
    "PreToolUs": [],
    "PreToolUse": [
      {"matcher": "(", "hooks": [{"type": "command", "command": "a"}]},
      {"matcher": "Bash", "hooks": [{"type": "command", "timeout": 0}]},
      {"matcher": "Read"}
    ]
  },
  "memoryMaxBytes": "lots"
}"#;
        let report = report(text);
        for expected in [
            "setting.json:3:5: error: \"PreToolUs\" is not a hook event",
            "did you mean \"PreToolUse\"?",
            "setting.json:5:19: error: the matcher \"(\" is not a valid regex: unclosed group",
            "setting.json:6:37: error: this hook has no command",
            "timeout must be a number of seconds above 0",
            "setting.json:7:7: error: a hook group needs",
            "setting.json:10:21:",
        ] {
            assert!(report.contains(expected), "{expected:?} not in:\n{report}");
        }
    }

    #[test]
    fn an_mcp_servers_keys_and_its_oauth_client_are_known() {
        let text = r#"{
  "mcpServers": {
    "remote": {"type": "http", "url": "https://mcp.example/mcp",
      "oauth": {"clientId": "app", "clientSecret": "${SECRET}", "callbackPort": 8080}},
    "robot": {"url": "https://mcp.example/mcp", "oauth": {"clientId": "robot",
      "grant": "client_credentials", "privateKeyFile": "/keys/robot.pem"}},
    "typo": {"url": "https://mcp.example/mcp",
      "oauth": {"clientID": "app"}, "header": {}}
  }
}"#;
        let report = report(text);
        for expected in [
            "setting.json:8:17: warning: unknown key \"mcpServers.typo.oauth.clientID\"",
            "did you mean \"clientId\"?",
            "setting.json:8:37: warning: unknown key \"mcpServers.typo.header\"",
            "did you mean \"headers\"?",
        ] {
            assert!(report.contains(expected), "{expected:?} not in:\n{report}");
        }
        assert_eq!(report.matches("warning:").count(), 2, "{report}");
    }

    #[test]
    fn broken_json_points_at_the_fault() {
        insta::assert_snapshot!(report("{\n  \"model\": \"a/b\"\n  \"record\": \"x\"\n}"));
    }

    #[test]
    fn sandbox_problems_are_placed() {
        assert_eq!(report(r#"{"sandbox": "workspace-write"}"#), "");
        assert_eq!(
            report(
                r#"{"sandbox": {"mode": "read-only", "writableRoots": ["~/.cache"], "network": true}}"#
            ),
            ""
        );
        let bad = report("{\n  \"sandbox\": \"strict\"\n}");
        assert!(
            bad.starts_with("project/.stepper/setting.json:2:14: error:")
                && bad.contains("workspace-write"),
            "{bad}"
        );
        let relative = report(
            "{\"sandbox\": {\"mode\": \"workspace-write\",\n \"writableRoots\": [\"build\"]}}",
        );
        assert!(
            relative.contains(":2:20: error: \"build\" is not an absolute path"),
            "{relative}"
        );
        assert_eq!(
            report(r#"{"sandbox": {"denyRead": ["~/.ssh", "/srv/keys"]}}"#),
            ""
        );
        let hidden = report(r#"{"sandbox": {"denyRead": ["keys"]}}"#);
        assert!(
            hidden.contains("error: \"keys\" is not an absolute path"),
            "{hidden}"
        );
    }

    #[test]
    fn instructions_and_the_prompt_cache_are_settings() {
        let text = r#"{
  "systemPrompt": "You review code.",
  "appendSystemPrompt": "Answer in French.",
  "promptCache": false
}"#;
        assert_eq!(report(text), "");
        let wrong = r#"{ "systemPrompt": 3, "promptCache": "no" }"#;
        let said = report(wrong);
        assert!(
            said.contains("systemPrompt") && said.contains("promptCache"),
            "{said}"
        );
    }

    #[test]
    fn the_scaffolded_file_is_clean() {
        assert_eq!(report(super::super::templates::SETTING_JSON), "");
    }
}
