//! The permission gate's decisions: modes, and rules in Claude Code's syntax ([`rules`]),
//! deny before ask before allow. Deny rules hold in every mode.
//!
//! Shell lines are judged on what bash will run ([`shell`]), command by command against an
//! allow-list of read-only programs and their options ([`commands`]), with the paths they
//! read checked like the read tool's, the program found on `PATH` outside the project, and
//! git's configuration checked ([`repo`]); anything that cannot be judged that way asks
//! (the `bash` module). Paths are resolved (symlinks too) and anything outside the project
//! asks.
//!
//! A decision that fails — a panic anywhere inside it — is "ask", never "allow" and never
//! the daemon's end.
//!
//! *Links under `/proc` are not followed*: `/proc/self`, `/proc/<pid>/cwd` and `/proc/self/fd/N`
//! (where `/dev/fd/N` and `/dev/stdin` lead) mean what they mean to the process following them, and
//! the daemon following them finds itself, not the command. `gate::resolve` stops at such a link
//! and keeps the rest as written — a path outside every project — so a read through one asks (links
//! in the project, `cd`, patterns included), and a `PATH` or loader folder, a `HOME`, or a git
//! directory, common directory or work tree through one is refused. A second red-team corpus had
//! links in the project to `/proc/self/fd/N` and `/proc/self/cwd` read as the daemon's own files.
//!
//! *A file with several names is read with a question*: a hard link in the project may be a file
//! outside (a key) under another name, and no name tells which. `Policy::path` asks before a
//! regular file with more than one link is read — by the read tool or a shell line — unless it is
//! empty or one of git's object files (in a `.git`'s `objects`, starting as a zlib stream or a
//! pack's, index's… signature: `git clone` links them from a local repository, and git reads them
//! anyway). Searches read whole folders: `grep -r` (the gate walks the same files), `rg` (its walk
//! for ignore files meets them) and `git diff` and `git grep` (the tracked files of the work tree,
//! from the index, submodules' included; every file below for `--untracked`) ask for such a file
//! unless every one of its names is among what the command reads — cargo links two names of each
//! binary in `target/`. Listings of folders only show metadata, unasked. Known gap: the grep tool's
//! own walk (`daemon/tools/src/search`) reads such files, and files a `Read` deny rule names,
//! without asking.

mod bash;
pub mod commands;
pub mod protected;
pub mod repo;
pub mod rules;
pub mod shell;

use std::path::{Component, Path, PathBuf};

pub use rules::Rule;

use self::rules::Permissions;
use crate::tool::GateRequest;
use stepper_protocol::session::PermissionMode;

/// What the gate decides for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Ask a person; the reason says what needs approving.
    Ask(String),
    Deny(String),
}

/// The rules and mode of a session, and where its project is.
#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: PermissionMode,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub project_root: PathBuf,
    /// Whether commands run in an OS sandbox. `Active` in `accept-edits` lets a line run
    /// without asking when only what it could change was in doubt (the sandbox keeps that
    /// inside the project); `Unavailable` makes `accept-edits` and `auto` ask about commands
    /// as `default` does, since the sandbox they were meant to run in is not there.
    pub sandbox: SandboxState,
    /// The sandbox also confines reads (`readableRoots`): reads outside the project need no
    /// question either.
    pub sandbox_confines_reads: bool,
}

pub use stepper_protocol::session::SandboxState;

impl Policy {
    /// The session rules "allow always" adds for `request`: the same simple commands, file,
    /// domain (the host this policy compares rules against) or MCP tool — never a prefix.
    pub fn rules_for(&self, request: &GateRequest) -> Vec<Rule> {
        let texts: Vec<String> = match request {
            GateRequest::Bash { command, .. } => shell::analyse(command)
                .commands
                .iter()
                .filter(|c| !c.nested)
                .map(|c| format!("Bash({})", c.shown()))
                .collect(),
            GateRequest::Edit { path, .. } => vec![format!("Edit(/{})", path.display())],
            GateRequest::Read { path } => vec![format!("Read(/{})", path.display())],
            GateRequest::WebFetch { url } => vec![format!("WebFetch(domain:{})", host_of(url))],
            GateRequest::Mcp { server, tool, .. } => vec![format!("mcp__{server}__{tool}")],
            GateRequest::Tool { name, .. } => vec![name.clone()],
            // Leaving the sandbox is asked every time: no rule stands for it.
            GateRequest::Unsandboxed { .. } => Vec::new(),
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
            sandbox: SandboxState::Off,
            sandbox_confines_reads: false,
        };
        (policy, problems)
    }

    /// The decision for `request`. Deny rules first, in every mode; then ask rules; then
    /// allow rules and the mode. A failure inside the decision asks.
    pub fn decide(&self, request: &GateRequest) -> Verdict {
        let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match request {
            GateRequest::Bash { command, cwd, env } => self.bash(command, cwd, &env.0),
            GateRequest::Read { path } => self.path(path, false),
            GateRequest::Edit { path, .. } => self.path(path, true),
            GateRequest::WebFetch { url } => self.web(url),
            GateRequest::Mcp {
                server,
                tool,
                annotations,
                ..
            } => self.mcp(server, tool, annotations.as_deref()),
            GateRequest::Unsandboxed {
                command, failure, ..
            } => self.unsandboxed(command, failure),
            GateRequest::Tool { name, .. } => self.tool(name),
        }));
        decided.unwrap_or_else(|_| {
            tracing::error!("the permission check failed; asking instead");
            Verdict::Ask(
                "the permission check failed on this request: approve it only if you know what \
                 it does"
                    .into(),
            )
        })
    }

    pub(crate) fn path(&self, path: &Path, edit: bool) -> Verdict {
        let (resolved, found) = resolve_with_metadata(path);
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
        let root = resolve(&self.project_root);
        // Whatever the rules allow: what the next turn or the user's own git would run.
        if edit && let Some(why) = protected::why(&resolved, &root) {
            return Verdict::Ask(format!("change {}: {why}", resolved.display()));
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
        let inside = resolved.starts_with(&root);
        // A file with several names may be a file outside under another: no name tells.
        if !edit
            && inside
            && let Some(names) = found.and_then(|meta| several_names(&resolved, &meta))
        {
            return Verdict::Ask(format!(
                "read {}: the file has {names} names, and another may be outside the project",
                resolved.display()
            ));
        }
        match (edit, inside, self.mode) {
            (false, true, _) => Verdict::Allow,
            (true, true, PermissionMode::AcceptEdits) => Verdict::Allow,
            (_, false, _) if is_process_view(&resolved) => Verdict::Ask(format!(
                "{what} {}, which leads through {}: what that names depends on the process \
                 reading it",
                path.display(),
                resolved.display()
            )),
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

    /// Another agent's tool, by name: rules that name it, else `auto` allows and every
    /// other mode asks (stepper cannot tell what it will do).
    fn tool(&self, name: &str) -> Verdict {
        if let Some(rule) = self.deny.iter().find(|r| r.matches_tool(name)) {
            return Verdict::Deny(format!("{name} is denied by the rule {}", rule.text));
        }
        let ask = || Verdict::Ask(format!("use {name}"));
        if self.ask.iter().any(|r| r.matches_tool(name)) {
            return ask();
        }
        if self.mode == PermissionMode::Auto || self.allow.iter().any(|r| r.matches_tool(name)) {
            return Verdict::Allow;
        }
        ask()
    }

    fn mcp(&self, server: &str, tool: &str, annotations: Option<&str>) -> Verdict {
        let name = format!("mcp__{server}__{tool}");
        let ask = || match annotations {
            Some(said) => Verdict::Ask(format!("call {name} ({said})")),
            None => Verdict::Ask(format!("call {name}")),
        };
        if let Some(rule) = self.deny.iter().find(|r| r.matches_mcp(server, tool)) {
            return Verdict::Deny(format!("{name} is denied by the rule {}", rule.text));
        }
        if self.ask.iter().any(|r| r.matches_mcp(server, tool)) {
            return ask();
        }
        if self.mode == PermissionMode::Auto
            || self.allow.iter().any(|r| r.matches_mcp(server, tool))
        {
            return Verdict::Allow;
        }
        ask()
    }
}

/// Links a path may pass through before the gate stops following them (Linux's limit).
#[cfg(unix)]
const MAX_LINKS: usize = 40;

/// The real path: symlinks followed for the part that exists, `..` folded for the rest.
///
/// Except a link under `/proc` (`/proc/self`, `/proc/<pid>/cwd`, `/proc/self/fd/3`, and so
/// `/dev/fd/3` and `/dev/stdin`, which lead there): what it leads to depends on the process
/// that follows it, and the daemon following it would see itself, not the command that will.
/// The path stops there — the link and what follows it, as written — which is outside every
/// project: whoever compares it with a folder finds it elsewhere.
#[cfg(unix)]
pub fn resolve(path: &Path) -> PathBuf {
    resolve_with_metadata(path).0
}

/// [`resolve`], and the metadata of what the path names when it exists (and is not under
/// `/proc`).
#[cfg(unix)]
fn resolve_with_metadata(path: &Path) -> (PathBuf, Option<std::fs::Metadata>) {
    use std::ffi::OsString;
    enum Part {
        Root,
        Up,
        Name(OsString),
    }
    fn parts(path: &Path) -> impl DoubleEndedIterator<Item = Part> + '_ {
        path.components().filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Part::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Part::Up),
            Component::Normal(name) => Some(Part::Name(name.to_os_string())),
        })
    }
    let mut out = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    // What is left to walk, the next part last.
    let mut rest: Vec<Part> = parts(path).rev().collect();
    let mut links = 0usize;
    // Past a part that does not exist, the rest is folded as written (nothing can be read
    // through it).
    let mut missing = false;
    // What the last part found is.
    let mut found = None;
    let as_written = |mut at: PathBuf, rest: Vec<Part>| {
        for part in rest.into_iter().rev() {
            match part {
                Part::Root => at = PathBuf::from("/"),
                Part::Up => at.push(".."),
                Part::Name(name) => at.push(name),
            }
        }
        at
    };
    while let Some(part) = rest.pop() {
        found = None;
        let name = match part {
            Part::Root => {
                out = PathBuf::from("/");
                continue;
            }
            Part::Up => {
                out.pop();
                continue;
            }
            Part::Name(name) => name,
        };
        let next = out.join(&name);
        if missing {
            out = next;
            continue;
        }
        // One call per part, as realpath(3) makes: a link's target, or "not a link" — and
        // for the last part, what it is.
        let link = if rest.is_empty() {
            match std::fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(&next),
                Ok(meta) => {
                    found = Some(meta);
                    Err(std::io::ErrorKind::InvalidInput.into())
                }
                Err(e) => Err(e),
            }
        } else {
            std::fs::read_link(&next)
        };
        match link {
            Ok(_) if next.starts_with("/proc") || links >= MAX_LINKS => {
                return (as_written(next, rest), None);
            }
            Ok(target) => {
                links += 1;
                rest.extend(parts(&target).rev());
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => out = next,
            Err(_) => {
                missing = true;
                out = next;
            }
        }
    }
    (out, found)
}

/// How many names (hard links) the regular file at `path` (whose metadata is `meta`) has,
/// when more than one: under another name it may be a file outside the project, whose
/// content reading it reads. Empty files (nothing to read) and git's object files (`git
/// clone` links them from the repository cloned; their content is the repository's, which
/// git reads anyway) are not counted.
#[cfg(unix)]
pub(crate) fn several_names(path: &Path, meta: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    (meta.is_file() && meta.nlink() > 1 && meta.len() > 0 && !is_git_object(path))
        .then_some(meta.nlink())
}

#[cfg(not(unix))]
pub(crate) fn several_names(_: &Path, _: &std::fs::Metadata) -> Option<u64> {
    None
}

/// Whether `path` is one of git's object files: under the `objects` folder of a `.git`, and
/// starting as one does — a loose object's zlib stream, or the signature of a pack, its
/// index, reverse index, mtimes or bitmap, a commit graph, a multi-pack index, or the list
/// of packs.
#[cfg(unix)]
fn is_git_object(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut in_git = false;
    let mut in_objects = false;
    for part in path.components() {
        match part.as_os_str().to_str() {
            Some(".git") => in_git = true,
            Some("objects") if in_git => in_objects = true,
            _ => {}
        }
    }
    if !in_objects {
        return false;
    }
    let mut head = [0u8; 4];
    let read = std::fs::File::options()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .and_then(|mut f| f.read_exact(&mut head));
    if read.is_err() {
        return false;
    }
    // zlib, a 32 KiB window, no preset dictionary, any level (RFC 1950).
    let zlib = head[0] == 0x78 && matches!(head[1], 0x01 | 0x5e | 0x9c | 0xda);
    zlib || matches!(
        &head,
        b"PACK" | b"\xfftOc" | b"RIDX" | b"MTME" | b"BITM" | b"CGPH" | b"MIDX" | b"P pa"
    )
}

/// Paths under `/proc`, and `/dev` paths other than the null device: what they name depends
/// on the process reading them.
pub(crate) fn is_process_view(path: &Path) -> bool {
    let path = normalize(path);
    path.starts_with("/proc") || (path.starts_with("/dev") && path != Path::new("/dev/null"))
}

#[cfg(not(unix))]
fn resolve_with_metadata(path: &Path) -> (PathBuf, Option<std::fs::Metadata>) {
    let resolved = resolve(path);
    let meta = std::fs::metadata(&resolved).ok();
    (resolved, meta)
}

/// The real path: symlinks followed for the part that exists, `..` folded for the rest.
#[cfg(not(unix))]
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
