//! git as the daemon runs it for itself (the environment's facts, worktrees for isolated
//! workers): with the repository's configured programs that git would start on its own
//! turned off (`core.fsmonitor`, hooks), no prompt for credentials, plain output, and only
//! the session's `PATH` and `HOME` from its environment.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use stepper_protocol::session::Env;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A git command with the daemon's own settings, run in `cwd`.
pub(crate) fn command(cwd: &Path, env: &Env) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("git");
    command
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(["-c", "color.ui=false", "-c", "core.quotePath=false"])
        .current_dir(cwd)
        .env_clear()
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for var in ["PATH", "HOME", "SYSTEMROOT"] {
        if let Some(value) = env.get(var) {
            command.env(var, value);
        }
    }
    command
}

/// Why a git command could not be run to its end (how it ended is its [`Output`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    #[error("git has no {0} pipe")]
    NoPipe(&'static str),
    #[error("cannot read git's output: {0}")]
    Read(std::io::Error),
    #[error("cannot wait for git: {0}")]
    Wait(std::io::Error),
    #[error("git took longer than {} s", .0.as_secs())]
    TimedOut(Duration),
}

/// What a finished git command said.
#[derive(Debug)]
pub(crate) struct Output {
    /// Its exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Its first line of output, trimmed (an object id, a path).
    pub fn line(&self) -> String {
        String::from_utf8_lossy(&self.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Why it failed, in git's words.
    pub fn why(&self) -> String {
        let said = self.stderr.trim();
        match (said.is_empty(), self.code) {
            (false, _) => said.lines().last().unwrap_or(said).to_string(),
            (true, Some(code)) => format!("git exited with {code}"),
            (true, None) => "git was killed".to_string(),
        }
    }
}

/// Run `command` (from [`command`]) with `input` on its stdin, reading at most `max` bytes
/// of its output, for at most `timeout`; killed when dropped or late. Spawned through
/// `lineage` so the daemon's reaper knows it for its own child.
pub(crate) async fn run(
    mut command: tokio::process::Command,
    input: Option<Vec<u8>>,
    max: u64,
    timeout: Duration,
) -> Result<Output, GitError> {
    command.stderr(Stdio::piped()).kill_on_drop(true);
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = stepper_process::lineage::spawn(&mut command).map_err(GitError::Spawn)?;
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().ok_or(GitError::NoPipe("output"))?;
    let mut stderr = child.stderr.take().ok_or(GitError::NoPipe("error"))?;
    let work = async {
        let feed = async {
            if let (Some(mut stdin), Some(input)) = (stdin, input) {
                // A git that stops reading early says why on stderr.
                let _ = stdin.write_all(&input).await;
            }
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut out_pipe = (&mut stdout).take(max);
        let mut err_pipe = (&mut stderr).take(64 * 1024);
        let read_out = out_pipe.read_to_end(&mut out);
        let read_err = err_pipe.read_to_end(&mut err);
        let ((), out_read, _) = tokio::join!(feed, read_out, read_err);
        out_read.map_err(GitError::Read)?;
        drop(stdout);
        let status = child.wait().await.map_err(GitError::Wait)?;
        Ok(Output {
            code: status.code(),
            stdout: out,
            stderr: String::from_utf8_lossy(&err).into_owned(),
        })
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| GitError::TimedOut(timeout))?
}
