//! The environment the model works in, in two parts: what stays for the session (folder,
//! platform, shell, mode, sandbox, servers) in the system prompt, and what moves (date, git's
//! branch, changes and last commits) as an `<environment_context>` message, sent again only
//! when it changed. Gathering it (running git, reading the OS) is the daemon's; this only
//! renders, so the text is the same for the same facts.
//!
//! *The environment's moving part goes after the user's words*, in the same message, not in the
//! system prompt: the date and git's state change between turns, and in the system prompt they
//! would invalidate the prompt cache every time. The user's words stay the first part (what reads a
//! turn's input reads that).

use std::fmt::Write as _;
use std::path::PathBuf;

use stepper_protocol::session::{PermissionMode, SandboxMode};

/// The most changed files the context lists by name; the rest are counted.
pub const LISTED_CHANGES: usize = 10;
/// The most recent commits the context lists.
pub const LISTED_COMMITS: usize = 5;
/// A commit subject or a path longer than this is cut.
const LINE_MAX: usize = 100;

/// What stays the same across a session's turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub cwd: PathBuf,
    /// The repository's top folder, when the folder is in one.
    pub repository: Option<PathBuf>,
    /// `linux`, `macos`, `windows`.
    pub platform: String,
    /// The OS's own name and version, when known (`Debian GNU/Linux 12 (bookworm)`).
    pub os: Option<String>,
    /// The shell commands run in (`bash`).
    pub shell: String,
    pub mode: PermissionMode,
    pub sandbox: SandboxMode,
    /// Whether the sandbox lets commands reach the network.
    pub network: bool,
    /// The MCP servers whose tools are offered.
    pub mcp_servers: Vec<String>,
    /// The session's folder, when this agent works in a worktree of its own made from it.
    pub worktree_of: Option<PathBuf>,
}

impl Environment {
    /// The system prompt's part.
    pub fn render(&self) -> String {
        let mut out = String::from("# Environment\n");
        let _ = writeln!(out, "- Working folder: {}", self.cwd.display());
        match &self.repository {
            Some(root) if *root == self.cwd => {
                out.push_str("- It is the top of a git repository.\n");
            }
            Some(root) => {
                let _ = writeln!(out, "- In the git repository at {}.", root.display());
            }
            None => out.push_str("- Not a git repository.\n"),
        }
        if let Some(main) = &self.worktree_of {
            let _ = writeln!(
                out,
                "- This folder is a git worktree made for your task alone, from {} as it was \
                 when you started. Work only here: when every task is done your changes are \
                 merged into that folder. Do not commit, switch branches or change {}.",
                main.display(),
                main.display()
            );
        }
        let os = self
            .os
            .as_deref()
            .map_or_else(String::new, |os| format!(" ({os})"));
        let _ = writeln!(
            out,
            "- Platform: {}{os}; commands run in {}.",
            self.platform, self.shell
        );
        let _ = writeln!(out, "- Permissions: {}", mode_text(self.mode));
        if let Some(sandbox) = sandbox_text(self.sandbox, self.network) {
            let _ = writeln!(out, "- Sandbox: {sandbox}");
        }
        if !self.mcp_servers.is_empty() {
            let _ = writeln!(
                out,
                "- MCP servers: {} (their tools are named mcp__<server>__<tool>).",
                self.mcp_servers.join(", ")
            );
        }
        out.trim_end().to_string()
    }
}

fn mode_text(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => {
            "reading and searching run at once; file edits and commands that change things \
             wait for the user's approval."
        }
        PermissionMode::AcceptEdits => {
            "file edits in the project apply at once; commands that change things wait for \
             the user's approval."
        }
        PermissionMode::Plan => {
            "plan mode: read-only. Explore and propose a plan; edits and commands that change \
             things are refused until the user leaves plan mode."
        }
        PermissionMode::Auto => {
            "tools run without asking; the user's deny rules still refuse some calls."
        }
    }
}

fn sandbox_text(sandbox: SandboxMode, network: bool) -> Option<String> {
    let net = if network {
        "network allowed"
    } else {
        "no network"
    };
    match sandbox {
        SandboxMode::Off => None,
        SandboxMode::WorkspaceWrite => Some(format!(
            "commands may write only inside the project and the temp folder ({net}); a \
             command that fails for that can be run outside the sandbox with the user's \
             approval."
        )),
        SandboxMode::ReadOnly => Some(format!("commands may not write files ({net}).")),
    }
}

/// What moves between turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// `2026-12-05`.
    pub date: String,
    /// `Saturday`.
    pub weekday: String,
    /// `UTC`, `Europe/Paris`, or an offset `+01:00`.
    pub timezone: String,
    pub git: Option<GitState>,
}

/// The repository's state, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitState {
    /// The branch, or `None` on a detached HEAD.
    pub branch: Option<String>,
    /// `git status --short` lines (`M src/a.rs`, `?? b.txt`).
    pub changes: Vec<String>,
    /// `hash subject`, newest first.
    pub commits: Vec<String>,
    /// Whether the status was left out (an untrusted folder: git's status can run the
    /// repository's configured programs).
    pub status_unknown: bool,
}

/// The tag the context is sent in; the daemon looks for it in the history.
pub const CONTEXT_TAG: &str = "<environment_context>";

impl Moment {
    /// The message text.
    pub fn render(&self) -> String {
        let mut out = String::from(CONTEXT_TAG);
        out.push('\n');
        let _ = writeln!(
            out,
            "Today's date: {} ({}), timezone {}",
            self.date, self.weekday, self.timezone
        );
        if let Some(git) = &self.git {
            let branch = git
                .branch
                .as_deref()
                .map_or_else(|| "(detached HEAD)".to_string(), cut);
            let _ = writeln!(out, "Git branch: {branch}");
            if git.status_unknown {
                out.push_str("Git status: not read (the folder is not trusted)\n");
            } else if git.changes.is_empty() {
                out.push_str("Git status: clean\n");
            } else {
                let _ = writeln!(out, "Git status: {} changed", git.changes.len());
                for line in git.changes.iter().take(LISTED_CHANGES) {
                    let _ = writeln!(out, "  {}", cut(line));
                }
                if git.changes.len() > LISTED_CHANGES {
                    let _ = writeln!(out, "  … {} more", git.changes.len() - LISTED_CHANGES);
                }
            }
            if !git.commits.is_empty() {
                out.push_str("Recent commits:\n");
                for line in git.commits.iter().take(LISTED_COMMITS) {
                    let _ = writeln!(out, "  {}", cut(line));
                }
            }
        }
        out.push_str("</environment_context>");
        out
    }
}

fn cut(line: &str) -> String {
    if line.chars().count() <= LINE_MAX {
        return line.to_string();
    }
    let mut s: String = line.chars().take(LINE_MAX).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment {
            cwd: "/home/ada/shop".into(),
            repository: Some("/home/ada/shop".into()),
            platform: "linux".into(),
            os: Some("Debian GNU/Linux 12 (bookworm)".into()),
            shell: "bash".into(),
            mode: PermissionMode::Default,
            sandbox: SandboxMode::WorkspaceWrite,
            network: false,
            mcp_servers: vec!["github".into()],
            worktree_of: None,
        }
    }

    #[test]
    fn the_stable_part() {
        insta::assert_snapshot!(env().render(), @r"
        # Environment
        - Working folder: /home/ada/shop
        - It is the top of a git repository.
        - Platform: linux (Debian GNU/Linux 12 (bookworm)); commands run in bash.
        - Permissions: reading and searching run at once; file edits and commands that change things wait for the user's approval.
        - Sandbox: commands may write only inside the project and the temp folder (no network); a command that fails for that can be run outside the sandbox with the user's approval.
        - MCP servers: github (their tools are named mcp__<server>__<tool>).
        ");
    }

    #[test]
    fn the_moving_part_is_bounded() {
        let moment = Moment {
            date: "2026-12-05".into(),
            weekday: "Saturday".into(),
            timezone: "UTC".into(),
            git: Some(GitState {
                branch: Some("main".into()),
                changes: (0..12).map(|i| format!("M src/f{i}.rs")).collect(),
                commits: vec!["613951d fix the layers test".into()],
                status_unknown: false,
            }),
        };
        let text = moment.render();
        assert!(text.starts_with(CONTEXT_TAG) && text.ends_with("</environment_context>"));
        assert!(text.contains("Git status: 12 changed") && text.contains("… 2 more"));
        assert!(!text.contains("f10.rs"), "only the first ten are listed");
        let untrusted = Moment {
            git: Some(GitState {
                status_unknown: true,
                ..Default::default()
            }),
            ..moment
        };
        assert!(untrusted.render().contains("(detached HEAD)"));
        assert!(untrusted.render().contains("not read"));
    }
}
