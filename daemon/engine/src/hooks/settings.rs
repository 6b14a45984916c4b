//! The `hooks` of a settings file, read by one parser for both their users: the daemon runs
//! the hooks it returns and says its problems as notices; `config --validate` shows the same
//! problems at their file, line and column. So the two cannot disagree about what runs.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::HookEvent;
use crate::config::problem::{Severity, closest};

/// How long a handler may run when its `timeout` does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The hooks that run, by event, and what could not be understood (the rest still runs).
#[derive(Debug, Default)]
pub struct Hooks {
    pub by_event: HashMap<HookEvent, Vec<HookGroup>>,
    pub problems: Vec<HookProblem>,
}

/// A `{matcher, hooks}` group: its handlers run for what the matcher matches.
#[derive(Debug)]
pub struct HookGroup {
    pub matcher: Matcher,
    pub handlers: Vec<HookHandler>,
}

/// A `{"type": "command", "command": ..., "timeout": ...}` handler.
#[derive(Debug, Clone)]
pub struct HookHandler {
    pub command: String,
    pub timeout: Duration,
}

/// A matcher as Claude Code reads it: empty or `*` (everything), tool names joined by `|`,
/// or else a regex over the whole name.
#[derive(Debug)]
pub enum Matcher {
    Any,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

impl Matcher {
    pub fn parse(text: Option<&str>) -> Result<Matcher, String> {
        let text = text.unwrap_or("").trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::Any);
        }
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(
                text.split('|').map(str::to_string).collect(),
            ));
        }
        regex::Regex::new(&format!("^(?:{text})$"))
            .map(Matcher::Pattern)
            .map_err(|e| {
                let e = e.to_string();
                let why = e.lines().last().unwrap_or(&e).trim_start_matches("error: ");
                format!("the matcher {text:?} is not a valid regex: {why}")
            })
    }

    /// Whether it matches `key` (a tool's name, a source); an event without one matches.
    pub fn matches(&self, key: Option<&str>) -> bool {
        match (self, key) {
            (Matcher::Any, _) => true,
            (_, None) => true,
            (Matcher::Names(names), Some(key)) => names.iter().any(|n| n == key),
            (Matcher::Pattern(re), Some(key)) => re.is_match(key),
        }
    }
}

/// What is wrong with part of `hooks`, and what becomes of that part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookProblemKind {
    /// `hooks` is not an object: nothing runs.
    NotAnObject,
    /// An event Claude Code has and stepper never fires ([`super::NOT_FIRED`]): accepted.
    NotFired,
    /// Not an event's name: its hooks are left out.
    UnknownEvent,
    /// An event's value is not a list: its hooks are left out.
    NotAList,
    /// A matcher that does not compile: its group is left out.
    BadMatcher,
    /// A group without handlers.
    NoHandlers,
    /// A handler of another type than `command`: not run.
    NotCommand,
    /// A `command` handler without a command: not run.
    NoCommand,
    /// A `timeout` that is not seconds above 0: the handler runs with the default.
    BadTimeout,
}

/// One problem, where it is in the settings (`path` from the file's root, `at_key`: the
/// key there rather than its value), with what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookProblem {
    pub kind: HookProblemKind,
    pub path: Vec<String>,
    pub at_key: bool,
    pub message: String,
    pub hint: Option<String>,
}

impl HookProblem {
    pub fn severity(&self) -> Severity {
        match self.kind {
            HookProblemKind::NotFired | HookProblemKind::NotCommand => Severity::Warning,
            _ => Severity::Error,
        }
    }

    /// What a turn says of it, or `None`: an event that is accepted and never fired is
    /// said by `config --validate` only (no notice every turn for what Claude Code would not
    /// run in a session either).
    pub fn notice(&self) -> Option<String> {
        if self.kind == HookProblemKind::NotFired {
            return None;
        }
        let mut at = String::new();
        for part in &self.path {
            match part.parse::<usize>() {
                Ok(i) => at.push_str(&format!("[{i}]")),
                Err(_) if at.is_empty() => at.push_str(part),
                Err(_) => at.push_str(&format!(".{part}")),
            }
        }
        Some(match &self.hint {
            Some(hint) => format!("{at}: {} — {hint}", self.message),
            None => format!("{at}: {}", self.message),
        })
    }
}

impl Hooks {
    /// `hooks` as a settings file has it (`None`: it has none).
    pub fn parse(value: Option<&Value>) -> Hooks {
        let mut hooks = Hooks::default();
        if let Some(value) = value {
            hooks.read(value);
        }
        hooks
    }

    pub fn is_empty(&self) -> bool {
        self.by_event.is_empty()
    }

    fn problem(
        &mut self,
        kind: HookProblemKind,
        path: &[&str],
        message: String,
        hint: Option<String>,
    ) {
        self.problems.push(HookProblem {
            kind,
            path: path.iter().map(|s| s.to_string()).collect(),
            at_key: matches!(
                kind,
                HookProblemKind::NotFired | HookProblemKind::UnknownEvent
            ),
            message,
            hint,
        });
    }

    fn read(&mut self, value: &Value) {
        let Some(events) = value.as_object() else {
            self.problem(
                HookProblemKind::NotAnObject,
                &["hooks"],
                "hooks must be an object of events".into(),
                Some(
                    "{\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \
                     \"command\", \"command\": \"...\"}]}]}"
                        .into(),
                ),
            );
            return;
        };
        for (name, groups) in events {
            if let Some(why) = super::not_fired(name) {
                self.problem(
                    HookProblemKind::NotFired,
                    &["hooks", name],
                    format!("{name} hooks are accepted and never run"),
                    Some(why.to_string()),
                );
                continue;
            }
            let event = HookEvent::parse(name);
            if event == HookEvent::Unknown {
                let names = super::event_names();
                self.problem(
                    HookProblemKind::UnknownEvent,
                    &["hooks", name],
                    format!("{name:?} is not a hook event"),
                    Some(match closest(name, &names) {
                        Some(near) => format!("did you mean {near:?}?"),
                        None => format!("the events are {}", names.join(", ")),
                    }),
                );
                continue;
            }
            let Some(groups) = groups.as_array() else {
                self.problem(
                    HookProblemKind::NotAList,
                    &["hooks", name],
                    format!("hooks.{name} must be a list"),
                    Some("a list of {\"matcher\": ..., \"hooks\": [...]}".into()),
                );
                continue;
            };
            for (i, group) in groups.iter().enumerate() {
                if let Some(group) = self.group(name, &i.to_string(), group) {
                    self.by_event.entry(event).or_default().push(group);
                }
            }
        }
    }

    /// The group `i` of `event`, or `None` when nothing of it runs.
    fn group(&mut self, event: &str, i: &str, group: &Value) -> Option<HookGroup> {
        let matcher = match Matcher::parse(group.get("matcher").and_then(Value::as_str)) {
            Ok(matcher) => Some(matcher),
            Err(e) => {
                self.problem(
                    HookProblemKind::BadMatcher,
                    &["hooks", event, i, "matcher"],
                    e,
                    Some("tool names (\"Bash\"), a list (\"Edit|Write\") or a regex".into()),
                );
                None
            }
        };
        let listed = group.get("hooks").and_then(Value::as_array);
        let Some(listed) = listed.filter(|h| !h.is_empty()) else {
            self.problem(
                HookProblemKind::NoHandlers,
                &["hooks", event, i],
                "a hook group needs \"hooks\": a list of handlers".into(),
                Some("[{\"type\": \"command\", \"command\": \"./check.sh\"}]".into()),
            );
            return None;
        };
        let mut handlers = Vec::new();
        for (j, handler) in listed.iter().enumerate() {
            let j = j.to_string();
            let path = ["hooks", event, i, "hooks", &j];
            let kind = handler.get("type").and_then(Value::as_str);
            let command = handler
                .get("command")
                .and_then(Value::as_str)
                .filter(|c| !c.trim().is_empty());
            // Absent: the default; `Some(None)`: not seconds above 0 (said below).
            let timeout = handler.get("timeout").map(|t| {
                t.as_f64().filter(|t| *t > 0.0).map(|seconds| {
                    // Past what a Duration holds: as long as one can wait anyway.
                    Duration::try_from_secs_f64(seconds)
                        .unwrap_or(Duration::from_secs(u64::from(u32::MAX)))
                })
            });
            match (kind, command) {
                (Some("command"), Some(command)) => handlers.push(HookHandler {
                    command: command.to_string(),
                    timeout: timeout.flatten().unwrap_or(DEFAULT_TIMEOUT),
                }),
                (Some("command"), None) => self.problem(
                    HookProblemKind::NoCommand,
                    &path,
                    "this hook has no command".into(),
                    Some("\"command\": \"./script.sh\" (run by /bin/sh in the project)".into()),
                ),
                (other, _) => self.problem(
                    HookProblemKind::NotCommand,
                    &path,
                    format!(
                        "type {:?} is not run: stepper runs type \"command\"",
                        other.unwrap_or("")
                    ),
                    None,
                ),
            }
            if timeout == Some(None) {
                self.problem(
                    HookProblemKind::BadTimeout,
                    &[&path[..], &["timeout"]].concat(),
                    "timeout must be a number of seconds above 0".into(),
                    None,
                );
            }
        }
        let matcher = matcher?;
        (!handlers.is_empty()).then_some(HookGroup { matcher, handlers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(hooks: &Hooks) -> Vec<HookProblemKind> {
        hooks.problems.iter().map(|p| p.kind).collect()
    }

    #[test]
    fn what_runs_and_what_is_said_come_from_one_reading() {
        let hooks = Hooks::parse(Some(&json!({
            "PreToolUse": [
                {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "a"}]},
                {"matcher": "(", "hooks": [{"type": "command", "command": "b"}]},
                {"matcher": "Read"},
                {"hooks": [
                    {"type": "prompt", "prompt": "x"},
                    {"type": "command", "command": " "},
                    {"type": "command", "command": "c", "timeout": 0}
                ]}
            ],
            "Setup": [],
            "OnSunday": [],
            "Stop": {}
        })));
        use HookProblemKind::*;
        // Events in the order of their names (as serde_json keeps an object).
        assert_eq!(
            kinds(&hooks),
            [
                UnknownEvent,
                BadMatcher,
                NoHandlers,
                NotCommand,
                NoCommand,
                BadTimeout,
                NotFired,
                NotAList
            ],
            "{:#?}",
            hooks.problems
        );
        // The groups that run: the first, and the last's one command, at the default timeout.
        let groups = &hooks.by_event[&HookEvent::PreToolUse];
        let handlers: Vec<(&str, Duration)> = groups
            .iter()
            .flat_map(|g| &g.handlers)
            .map(|h| (h.command.as_str(), h.timeout))
            .collect();
        assert_eq!(handlers, [("a", DEFAULT_TIMEOUT), ("c", DEFAULT_TIMEOUT)]);
        assert!(groups[0].matcher.matches(Some("Write")));
        assert!(!groups[0].matcher.matches(Some("Read")));
        assert!(groups[1].matcher.matches(Some("Read")));
        assert_eq!(hooks.by_event.len(), 1);
        // A turn says each, by where it is, but the event accepted and never fired.
        let notices: Vec<String> = hooks.problems.iter().filter_map(|p| p.notice()).collect();
        assert_eq!(notices.len(), 7, "{notices:#?}");
        assert!(
            notices[5].starts_with("hooks.PreToolUse[3].hooks[2].timeout: timeout must be"),
            "{notices:#?}"
        );
        assert!(!notices.iter().any(|n| n.contains("Setup")), "{notices:#?}");
    }

    #[test]
    fn a_timeout_past_what_a_duration_holds_is_as_long_as_can_be_waited() {
        let hooks = Hooks::parse(Some(&json!({
            "Stop": [{"hooks": [{"type": "command", "command": "a", "timeout": 1e300}]}]
        })));
        assert!(hooks.problems.is_empty(), "{:?}", hooks.problems);
        let handler = &hooks.by_event[&HookEvent::Stop][0].handlers[0];
        assert!(handler.timeout > Duration::from_secs(100 * 365 * 86_400));
    }

    #[test]
    fn hooks_that_are_not_an_object_run_nothing_and_say_so() {
        let hooks = Hooks::parse(Some(&json!(["PreToolUse"])));
        assert!(hooks.is_empty());
        assert_eq!(kinds(&hooks), [HookProblemKind::NotAnObject]);
        assert_eq!(Hooks::parse(None).problems, []);
    }
}
