//! Permission rules in Claude Code's syntax: `Bash(npm test:*)` or `Bash(npm test *)` (a
//! prefix of words), `Bash(git diff)` (exactly), `Read(./src/**)`, `Edit(...)`,
//! `WebFetch(domain:docs.rs)`, `mcp__server__tool`.
//!
//! *Prefix rules do not reach options the tables know to write*: `Bash(git diff:*)` covers `git
//! diff HEAD` but not `git diff --output=f`; only an exact rule (what "allow always" adds) does.
//! Commands the tables do not list keep Claude Code's prefix semantics, with the old output/exec
//! flag heuristic.
//!
//! Why a rule does not parse is a `String`: it is only said — by `config --validate` at the
//! rule's line, and as the notice that the rule is skipped.

use std::path::Path;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
use stepper_protocol::session::PermissionMode;

/// The settings' `permissions`: the mode and the rules, as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    #[serde(default)]
    pub mode: Option<PermissionMode>,
    /// Rules that run without asking, e.g. `Bash(npm test:*)`, `Read(./src/**)`.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that never run, whatever the mode.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Rules that always ask.
    #[serde(default)]
    pub ask: Vec<String>,
}

/// One rule: a tool name and an optional specifier.
#[derive(Debug, Clone)]
pub struct Rule {
    /// As written, for messages.
    pub text: String,
    matcher: Matcher,
}

#[derive(Debug, Clone)]
enum Matcher {
    /// `Bash` alone: every command.
    AnyBash,
    /// `Bash(npm test:*)`: commands starting with these words.
    BashPrefix(Vec<String>),
    /// `Bash(git diff)`: exactly this command.
    BashExact(Vec<String>),
    /// `Read(...)` (also covers ls, glob, grep) and `Edit(...)`/`Write(...)`.
    Path {
        edit: bool,
        glob: Option<GlobMatcher>,
    },
    /// `WebFetch` or `WebFetch(domain:x)`.
    Domain(Option<String>),
    /// `mcp__server` or `mcp__server__tool`.
    Mcp {
        server: String,
        tool: Option<String>,
    },
    /// Another tool of Claude Code's by its name alone (`WebSearch`, `Task`, `NotebookEdit`),
    /// for CLI back-ends.
    Tool(String),
}

impl Rule {
    /// Parse a rule; paths in it are relative to `root` (`./src/**`, `src/**`, `/src/**`),
    /// absolute with `//`, or in the home folder with `~/`.
    pub fn parse(text: &str, root: &Path, home: Option<&Path>) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, spec) = match text.split_once('(') {
            Some((tool, rest)) => {
                let spec = rest
                    .strip_suffix(')')
                    .ok_or_else(|| format!("rule {text:?}: missing ')'"))?;
                (tool.trim(), Some(spec.trim()))
            }
            None => (text, None),
        };
        let matcher = match (tool, spec) {
            ("Bash", None | Some("") | Some("*")) => Matcher::AnyBash,
            // A prefix in either of Claude Code's spellings: `npm test:*` or `npm test *`.
            ("Bash", Some(spec)) => {
                match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
                    Some(prefix) if !prefix.contains('*') => Matcher::BashPrefix(words(prefix)),
                    None if !spec.contains('*') => Matcher::BashExact(words(spec)),
                    _ => {
                        return Err(format!(
                            "rule {text:?}: a * is taken only at the end of a command, after a \
                         space (a prefix: \"Bash(git log *)\" or \"Bash(git log:*)\"); stepper \
                         matches commands by words, not by a pattern inside one"
                        ));
                    }
                }
            }
            ("Read" | "Edit" | "Write" | "MultiEdit", spec) => {
                let edit = tool != "Read";
                let glob = match spec.filter(|s| !s.is_empty()) {
                    None => None,
                    Some(s) => {
                        let pattern = if let Some(abs) = s.strip_prefix("//") {
                            format!("/{abs}")
                        } else if let (Some(rest), Some(home)) = (s.strip_prefix("~/"), home) {
                            home.join(rest).display().to_string()
                        } else {
                            root.join(s.trim_start_matches("./").trim_start_matches('/'))
                                .display()
                                .to_string()
                        };
                        let glob =
                            Glob::new(&pattern).map_err(|e| format!("rule {text:?}: {e}"))?;
                        Some(glob.compile_matcher())
                    }
                };
                Matcher::Path { edit, glob }
            }
            ("WebFetch", None) => Matcher::Domain(None),
            ("WebFetch", Some(spec)) => {
                let domain = spec
                    .strip_prefix("domain:")
                    .ok_or_else(|| format!("rule {text:?}: use WebFetch(domain:example.com)"))?;
                Matcher::Domain(Some(domain.to_lowercase()))
            }
            (mcp, None) if mcp.starts_with("mcp__") => {
                let rest = &mcp["mcp__".len()..];
                match rest.split_once("__") {
                    Some((server, tool)) => Matcher::Mcp {
                        server: server.into(),
                        tool: Some(tool.into()),
                    },
                    None => Matcher::Mcp {
                        server: rest.into(),
                        tool: None,
                    },
                }
            }
            (name, None) if is_tool_name(name) => Matcher::Tool(name.to_string()),
            _ => {
                return Err(format!(
                    "rule {text:?}: unknown tool (Bash, Read, Edit, Write, WebFetch, \
                     mcp__server__tool, or another tool's name such as WebSearch)"
                ));
            }
        };
        Ok(Rule {
            text: text.into(),
            matcher,
        })
    }

    /// Whether a Bash rule names `command`. Each word is its literal text, or None when bash
    /// computes it: a computed word matches no word of a rule.
    pub(super) fn matches_command(&self, command: &[Option<&str>]) -> bool {
        let same = |rule: &[String], words: &[Option<&str>]| {
            rule.iter().zip(words).all(|(r, w)| *w == Some(r.as_str()))
        };
        match &self.matcher {
            Matcher::AnyBash => true,
            Matcher::BashPrefix(prefix) => {
                command.len() >= prefix.len() && same(prefix, &command[..prefix.len()])
            }
            Matcher::BashExact(exact) => command.len() == exact.len() && same(exact, command),
            _ => false,
        }
    }

    /// Whether this is a rule for shell commands.
    pub fn is_bash(&self) -> bool {
        matches!(
            self.matcher,
            Matcher::AnyBash | Matcher::BashPrefix(_) | Matcher::BashExact(_)
        )
    }

    /// Whether this rule names `command` exactly (not by a prefix).
    pub(super) fn matches_exactly(&self, command: &[Option<&str>]) -> bool {
        matches!(self.matcher, Matcher::BashExact(_)) && self.matches_command(command)
    }

    pub(super) fn matches_path(&self, path: &Path, edit: bool) -> bool {
        match &self.matcher {
            // An Edit rule covers writes; a Read rule covers reads (and an Edit allow does not
            // imply reading, nor the reverse).
            Matcher::Path { edit: e, glob } if *e == edit => {
                glob.as_ref().is_none_or(|g| g.is_match(path))
            }
            _ => false,
        }
    }

    pub(super) fn matches_host(&self, host: &str) -> bool {
        match &self.matcher {
            Matcher::Domain(None) => true,
            Matcher::Domain(Some(d)) => host == d || host.ends_with(&format!(".{d}")),
            _ => false,
        }
    }

    pub(super) fn matches_tool(&self, name: &str) -> bool {
        matches!(&self.matcher, Matcher::Tool(n) if n == name)
    }

    pub(super) fn matches_mcp(&self, server: &str, tool: &str) -> bool {
        match &self.matcher {
            Matcher::Mcp { server: s, tool: t } => {
                s == server && t.as_deref().is_none_or(|t| t == tool)
            }
            _ => false,
        }
    }
}

/// A tool's name as Claude Code spells them: a capital, then letters and digits.
fn is_tool_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}
