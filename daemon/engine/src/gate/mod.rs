//! The permission gate's decisions: modes, and rules in Claude Code's syntax
//! (`Bash(npm test:*)`, `Read(./src/**)`, `Edit(...)`, `WebFetch(domain:docs.rs)`,
//! `mcp__server__tool`), deny before ask before allow. Deny rules hold in every mode.
//!
//! Shell lines are judged command by command (see [`bash`]); anything that cannot be judged
//! that way asks. Paths are resolved (symlinks too) and anything outside the project asks.

pub mod bash;

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobMatcher};

use crate::config::{PermissionMode, Permissions};
use crate::tool::GateRequest;

/// What the gate decides for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Ask a person; the reason says what needs approving.
    Ask(String),
    Deny(String),
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
            ("Bash", Some(spec)) => match spec.strip_suffix(":*") {
                Some(prefix) => Matcher::BashPrefix(words(prefix)),
                None => Matcher::BashExact(words(spec)),
            },
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
            _ => {
                return Err(format!(
                    "rule {text:?}: unknown tool (Bash, Read, Edit, Write, WebFetch, mcp__server__tool)"
                ));
            }
        };
        Ok(Rule {
            text: text.into(),
            matcher,
        })
    }

    fn matches_command(&self, command: &[String]) -> bool {
        match &self.matcher {
            Matcher::AnyBash => true,
            Matcher::BashPrefix(prefix) => {
                command.len() >= prefix.len() && command[..prefix.len()] == prefix[..]
            }
            Matcher::BashExact(exact) => command == exact.as_slice(),
            _ => false,
        }
    }

    fn matches_path(&self, path: &Path, edit: bool) -> bool {
        match &self.matcher {
            // An Edit rule covers writes; a Read rule covers reads (and an Edit allow does not
            // imply reading, nor the reverse).
            Matcher::Path { edit: e, glob } if *e == edit => {
                glob.as_ref().is_none_or(|g| g.is_match(path))
            }
            _ => false,
        }
    }

    fn matches_host(&self, host: &str) -> bool {
        match &self.matcher {
            Matcher::Domain(None) => true,
            Matcher::Domain(Some(d)) => host == d || host.ends_with(&format!(".{d}")),
            _ => false,
        }
    }

    fn matches_mcp(&self, server: &str, tool: &str) -> bool {
        match &self.matcher {
            Matcher::Mcp { server: s, tool: t } => {
                s == server && t.as_deref().is_none_or(|t| t == tool)
            }
            _ => false,
        }
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// Commands that only read, allowed without asking outside `plan`-breaking flags.
const READ_ONLY: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "grep",
    "rg",
    "which",
    "whoami",
    "date",
    "uname",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "sort",
    "uniq",
    "cut",
    "basename",
    "dirname",
    "realpath",
    "true",
    "false",
    "diff",
    "cmp",
    "md5sum",
    "sha256sum",
    "id",
    "hostname",
    "nproc",
    "free",
    "uptime",
    "test",
    "[",
];
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "rev-parse",
    "ls-files",
    "describe",
    "shortlog",
];

/// Whether a simple command only reads.
pub fn is_read_only(command: &[String]) -> bool {
    let Some(name) = command.first() else {
        return false;
    };
    let args = &command[1..];
    match name.as_str() {
        "git" => {
            let sub = args.iter().find(|a| !a.starts_with('-'));
            match sub.map(String::as_str) {
                Some("branch") => args
                    .iter()
                    .skip(1)
                    .all(|a| matches!(a.as_str(), "-a" | "-r" | "-v" | "-vv" | "--list" | "--all")),
                Some(s) => {
                    GIT_READ_ONLY.contains(&s) && !args.iter().any(|a| a.starts_with("--output"))
                }
                None => false,
            }
        }
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "sort" => !args.iter().any(|a| a == "-o" || a.starts_with("--output")),
        n => READ_ONLY.contains(&n),
    }
}

/// Whether a command's flags make it write a file or run another program, which a prefix
/// rule such as `Bash(git diff:*)` never meant to allow (`git diff --output=~/.bashrc`).
fn writes_by_flag(command: &[String]) -> bool {
    command.iter().skip(1).any(|a| {
        a == "-o"
            || a.starts_with("--output")
            || a.starts_with("--out=")
            || a.starts_with("--exec")
            || a == "-exec"
            || a == "-execdir"
            || a.starts_with("--upload-pack")
            || a.starts_with("--receive-pack")
            || a == "--ext-diff"
    })
}

/// The rules and mode of a session, and where its project is.
#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: PermissionMode,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub project_root: PathBuf,
}

impl Policy {
    /// The session rules "allow always" adds for `request`: the same simple commands, file,
    /// domain (the host this policy compares rules against) or MCP tool — never a prefix.
    pub fn rules_for(&self, request: &GateRequest) -> Vec<Rule> {
        let texts: Vec<String> = match request {
            GateRequest::Bash { command } => bash::analyse(command)
                .commands
                .iter()
                .map(|c| format!("Bash({})", c.join(" ")))
                .collect(),
            GateRequest::Edit { path, .. } => vec![format!("Edit(/{})", path.display())],
            GateRequest::Read { path } => vec![format!("Read(/{})", path.display())],
            GateRequest::WebFetch { url } => vec![format!("WebFetch(domain:{})", host_of(url))],
            GateRequest::Mcp { server, tool, .. } => vec![format!("mcp__{server}__{tool}")],
        };
        texts
            .iter()
            .filter_map(|t| Rule::parse(t, &self.project_root, None).ok())
            .collect()
    }

    /// From the settings' permissions; bad rules are skipped and returned as messages.
    pub fn from_settings(
        p: Option<&Permissions>,
        root: &Path,
        home: Option<&Path>,
    ) -> (Policy, Vec<String>) {
        let mut problems = Vec::new();
        let mut parse = |list: &[String]| -> Vec<Rule> {
            list.iter()
                .filter_map(|r| {
                    Rule::parse(r, root, home)
                        .map_err(|e| problems.push(e))
                        .ok()
                })
                .collect()
        };
        let empty = Permissions::default();
        let p = p.unwrap_or(&empty);
        let policy = Policy {
            mode: p.mode.unwrap_or(PermissionMode::Default),
            allow: parse(&p.allow),
            deny: parse(&p.deny),
            ask: parse(&p.ask),
            project_root: root.to_path_buf(),
        };
        (policy, problems)
    }

    /// The decision for `request`. Deny rules first, in every mode; then ask rules; then
    /// allow rules and the mode.
    pub fn decide(&self, request: &GateRequest) -> Verdict {
        match request {
            GateRequest::Bash { command } => self.bash(command),
            GateRequest::Read { path } => self.path(path, false),
            GateRequest::Edit { path, .. } => self.path(path, true),
            GateRequest::WebFetch { url } => self.web(url),
            GateRequest::Mcp { server, tool, .. } => self.mcp(server, tool),
        }
    }

    fn bash(&self, line: &str) -> Verdict {
        let analysis = bash::analyse(line);
        for cmd in &analysis.commands {
            if let Some(rule) = self.deny.iter().find(|r| r.matches_command(cmd)) {
                return Verdict::Deny(format!(
                    "{} is denied by the rule {}",
                    cmd.join(" "),
                    rule.text
                ));
            }
        }
        if self.mode == PermissionMode::Auto {
            return Verdict::Allow;
        }
        let all_read_only =
            analysis.risky.is_empty() && analysis.commands.iter().all(|c| is_read_only(c));
        if self.mode == PermissionMode::Plan {
            return if all_read_only {
                Verdict::Allow
            } else {
                Verdict::Deny("plan mode only reads: this command may change things".into())
            };
        }
        if let Some(risk) = analysis.risky.first() {
            return Verdict::Ask(format!("the command line has {risk}"));
        }
        for cmd in &analysis.commands {
            if let Some(rule) = self.ask.iter().find(|r| r.matches_command(cmd)) {
                return Verdict::Ask(format!(
                    "{} matches the ask rule {}",
                    cmd.join(" "),
                    rule.text
                ));
            }
        }
        let unapproved: Vec<String> = analysis
            .commands
            .iter()
            .filter(|c| {
                !is_read_only(c)
                    && (!self.allow.iter().any(|r| r.matches_command(c)) || writes_by_flag(c))
            })
            .map(|c| c.join(" "))
            .collect();
        if unapproved.is_empty() {
            Verdict::Allow
        } else {
            Verdict::Ask(format!("run {}", unapproved.join(", ")))
        }
    }

    fn path(&self, path: &Path, edit: bool) -> Verdict {
        let resolved = resolve(path);
        let what = if edit { "change" } else { "read" };
        if let Some(rule) = self.deny.iter().find(|r| r.matches_path(&resolved, edit)) {
            return Verdict::Deny(format!(
                "{} is denied by the rule {}",
                resolved.display(),
                rule.text
            ));
        }
        if edit && self.mode == PermissionMode::Plan {
            return Verdict::Deny("plan mode only reads".into());
        }
        if self.mode == PermissionMode::Auto {
            return Verdict::Allow;
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches_path(&resolved, edit)) {
            return Verdict::Ask(format!(
                "{what} {} (rule {})",
                resolved.display(),
                rule.text
            ));
        }
        if self.allow.iter().any(|r| r.matches_path(&resolved, edit)) {
            return Verdict::Allow;
        }
        let root = resolve(&self.project_root);
        let inside = resolved.starts_with(&root);
        match (edit, inside, self.mode) {
            (false, true, _) => Verdict::Allow,
            (true, true, PermissionMode::AcceptEdits) => Verdict::Allow,
            (_, false, _) => Verdict::Ask(format!(
                "{what} {}, outside the project",
                resolved.display()
            )),
            (true, true, _) => Verdict::Ask(format!("change {}", resolved.display())),
        }
    }

    fn web(&self, url: &str) -> Verdict {
        let host = host_of(url);
        if let Some(rule) = self.deny.iter().find(|r| r.matches_host(&host)) {
            return Verdict::Deny(format!("{host} is denied by the rule {}", rule.text));
        }
        if self.mode == PermissionMode::Auto || self.allow.iter().any(|r| r.matches_host(&host)) {
            return Verdict::Allow;
        }
        Verdict::Ask(format!("fetch {url}"))
    }

    fn mcp(&self, server: &str, tool: &str) -> Verdict {
        let name = format!("mcp__{server}__{tool}");
        if let Some(rule) = self.deny.iter().find(|r| r.matches_mcp(server, tool)) {
            return Verdict::Deny(format!("{name} is denied by the rule {}", rule.text));
        }
        if self.ask.iter().any(|r| r.matches_mcp(server, tool)) {
            return Verdict::Ask(format!("call {name}"));
        }
        if self.mode == PermissionMode::Auto
            || self.allow.iter().any(|r| r.matches_mcp(server, tool))
        {
            return Verdict::Allow;
        }
        Verdict::Ask(format!("call {name}"))
    }
}

/// The real path: symlinks followed for the part that exists, `..` folded for the rest.
pub fn resolve(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    // A file about to be created: resolve its nearest existing ancestor.
    let mut missing = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&cur) {
            let mut out = real;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (cur.file_name().map(|n| n.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                cur = parent.to_path_buf();
            }
            _ => return normalize(path),
        }
    }
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .unwrap_or(host)
            .trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host.to_lowercase()
}

#[cfg(test)]
mod tests;
