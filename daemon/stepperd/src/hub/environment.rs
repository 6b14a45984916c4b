//! Gathers what the model is told of its environment (see `stepper_engine::prompt`): the
//! folder's repository, the OS, the date, and git's state, read with bounded git commands.
//!
//! git runs here with the repository's configured programs turned off (`core.fsmonitor`,
//! hooks) and never takes a lock; in a folder the user has not trusted its status is not
//! read at all, since a repository's own config can name filters that `git status` runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use stepper_engine::prompt::{Environment, GitState, Moment};
use stepper_protocol::session::{Env, PermissionMode, SandboxMode};
use tokio::io::AsyncReadExt;

/// How long a git query may take before it is given up (its part is then left out).
const GIT_TIMEOUT: Duration = Duration::from_secs(2);
/// The most bytes of a git query's output read.
const GIT_OUTPUT_MAX: u64 = 64 * 1024;

/// What the session's settings and state say of the turn, for [`gather`].
pub(crate) struct Facts<'a> {
    pub cwd: &'a Path,
    pub env: &'a Env,
    pub mode: PermissionMode,
    pub sandbox: SandboxMode,
    pub network: bool,
    pub mcp_servers: Vec<String>,
    pub trusted: bool,
}

/// The turn's environment: the stable part and the moving one.
pub(crate) async fn gather(facts: Facts<'_>) -> (Environment, Moment) {
    let repository = repository_of(facts.cwd);
    let git = match &repository {
        Some(_) => Some(git_state(facts.cwd, facts.env, facts.trusted).await),
        None => None,
    };
    let environment = Environment {
        cwd: facts.cwd.to_path_buf(),
        repository,
        platform: platform().to_string(),
        os: os_name().await,
        shell: "bash".into(),
        mode: facts.mode,
        sandbox: facts.sandbox,
        network: facts.network,
        mcp_servers: facts.mcp_servers,
        worktree_of: None,
    };
    let now = chrono::Local::now();
    let moment = Moment {
        date: now.format("%Y-%m-%d").to_string(),
        weekday: now.format("%A").to_string(),
        timezone: timezone(facts.env, &now.format("%:z").to_string()),
        git,
    };
    (environment, moment)
}

fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "macos",
        "windows" => "windows",
        other => other,
    }
}

/// `/etc/os-release`'s name, where there is one.
async fn os_name() -> Option<String> {
    let text = tokio::fs::read_to_string("/etc/os-release").await.ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// The client's `TZ` when it set one, else the system's zone; with the offset.
fn timezone(env: &Env, offset: &str) -> String {
    let name = env
        .get("TZ")
        .map(|tz| tz.trim_start_matches(':').to_string())
        .filter(|tz| !tz.is_empty())
        .or_else(|| iana_time_zone::get_timezone().ok());
    match name {
        Some(name) => format!("{name} (UTC{offset})"),
        None => format!("UTC{offset}"),
    }
}

/// The repository `cwd` is in: the nearest folder above with a `.git` (a folder, or a file
/// as in a worktree). No process: most turns are in one, and this is on every turn's path.
fn repository_of(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

async fn git_state(cwd: &Path, env: &Env, trusted: bool) -> GitState {
    let log = git(
        cwd,
        env,
        &["log", "--oneline", "--no-decorate", "-n", "5", "--"],
    );
    if trusted {
        let status = git(
            cwd,
            env,
            &[
                "status",
                "--porcelain=v1",
                "--branch",
                "--untracked-files=normal",
            ],
        );
        let (status, log) = tokio::join!(status, log);
        let mut state = parse_status(status.as_deref().unwrap_or_default());
        state.commits = lines(log.as_deref());
        state.status_unknown = status.is_none();
        state
    } else {
        let branch = git(cwd, env, &["symbolic-ref", "--short", "-q", "HEAD"]);
        let (branch, log) = tokio::join!(branch, log);
        GitState {
            branch: branch
                .map(|b| b.trim().to_string())
                .filter(|b| !b.is_empty()),
            changes: Vec::new(),
            commits: lines(log.as_deref()),
            status_unknown: true,
        }
    }
}

fn lines(text: Option<&str>) -> Vec<String> {
    text.unwrap_or_default()
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `git status --porcelain=v1 --branch`: `## main...origin/main [ahead 1]`, then the changes.
fn parse_status(text: &str) -> GitState {
    let mut state = GitState::default();
    for line in text.lines() {
        if let Some(head) = line.strip_prefix("## ") {
            let name = head.split("...").next().unwrap_or(head);
            let name = name.strip_prefix("No commits yet on ").unwrap_or(name);
            if !name.starts_with("HEAD (no branch)") {
                state.branch = Some(name.trim().to_string());
            }
        } else if !line.trim().is_empty() {
            state.changes.push(line.trim().to_string());
        }
    }
    state
}

/// Run git in `cwd` with the session's PATH and HOME, the repository's programs off, no lock
/// taken; its output, or `None` when it failed or took too long.
async fn git(cwd: &Path, env: &Env, args: &[&str]) -> Option<String> {
    let mut command = super::git::command(cwd, env);
    command.args(args).env("GIT_OPTIONAL_LOCKS", "0");
    // Not in a process group of its own (`stepper_process::group`): this git runs on every
    // turn's path with hooks and fsmonitor off, and in an untrusted folder only commands
    // that run none of the repository's programs; the group's registry and its cleanup cost
    // ~10 ms a turn (2.5 ms without), and `kill_on_drop` with the timeout bounds it as well.
    // Still spawned through `lineage`, so the daemon knows it for its own child.
    command.kill_on_drop(true);
    let mut child = stepper_process::lineage::spawn(&mut command).ok()?;
    let mut stdout = child.stdout.take()?;
    let run = async {
        let mut out = Vec::new();
        (&mut stdout)
            .take(GIT_OUTPUT_MAX)
            .read_to_end(&mut out)
            .await
            .ok()?;
        drop(stdout);
        let status = child.wait().await.ok()?;
        status
            .success()
            .then(|| String::from_utf8_lossy(&out).into_owned())
    };
    tokio::time::timeout(GIT_TIMEOUT, run).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_with_its_branch() {
        let state = parse_status("## main...origin/main [ahead 1]\n M src/a.rs\n?? new.txt\n");
        assert_eq!(state.branch.as_deref(), Some("main"));
        assert_eq!(state.changes, ["M src/a.rs", "?? new.txt"]);
        let fresh = parse_status("## No commits yet on trunk\n");
        assert_eq!(fresh.branch.as_deref(), Some("trunk"));
        let detached = parse_status("## HEAD (no branch)\n");
        assert_eq!(detached.branch, None);
    }

    #[tokio::test]
    async fn a_real_repository() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        let mut env = Env::new();
        env.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
        env.insert("HOME".into(), path.display().to_string());
        let run = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(path)
                .env("HOME", path)
                .env("GIT_AUTHOR_NAME", "a")
                .env("GIT_AUTHOR_EMAIL", "a@example.com")
                .env("GIT_COMMITTER_NAME", "a")
                .env("GIT_COMMITTER_EMAIL", "a@example.com")
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
        };
        run(&["init", "-q", "-b", "work"]);
        std::fs::write(path.join("a.txt"), "a").unwrap();
        run(&["add", "a.txt"]);
        run(&["commit", "-q", "-m", "first commit"]);
        std::fs::write(path.join("b.txt"), "b").unwrap();
        // A repository's own fsmonitor is a program git would run: it must not.
        let marker = path.join("ran");
        run(&[
            "config",
            "core.fsmonitor",
            &format!("touch {}; false", marker.display()),
        ]);
        let facts = |trusted| Facts {
            cwd: path,
            env: &env,
            mode: PermissionMode::Default,
            sandbox: SandboxMode::Off,
            network: true,
            mcp_servers: Vec::new(),
            trusted,
        };
        let (environment, moment) = gather(facts(true)).await;
        assert_eq!(environment.repository.as_deref(), Some(path));
        let git = moment.git.unwrap();
        assert_eq!(git.branch.as_deref(), Some("work"));
        assert_eq!(git.changes, ["?? b.txt"]);
        assert!(
            git.commits[0].ends_with("first commit"),
            "{:?}",
            git.commits
        );
        assert!(!marker.exists(), "the repository's fsmonitor ran");
        let (_, untrusted) = gather(facts(false)).await;
        let git = untrusted.git.unwrap();
        assert!(git.status_unknown && git.changes.is_empty());
        assert_eq!(git.branch.as_deref(), Some("work"));
        assert!(!marker.exists());
    }
}
