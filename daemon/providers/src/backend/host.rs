//! The host of one CLI process, whatever its protocol: the process leads its own group,
//! is in the child registry and runs under the parent-death guard; lines written to it
//! queue in order and go out once it runs; its stdout is reassembled into lines
//! ([`crate::ndjson`]); its stderr goes to the daemon's log (secrets taken out), the last
//! lines kept for the error when it dies.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stepper_engine::redact::Redactor;
use stepper_process::group::GroupChild;
use stepper_protocol::session::Env;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use crate::ndjson::{Line, Lines};

/// What to run.
pub struct HostSpec {
    /// For the log (`claude-code`).
    pub name: &'static str,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The whole environment of the process.
    pub env: Env,
    pub cwd: PathBuf,
    /// The daemon's executable, whose `guard` helper makes the process die with the
    /// daemon; `None` runs it unguarded (tests of this crate).
    pub guard: Option<PathBuf>,
    /// Taken out of what goes to the log.
    pub secrets: Vec<String>,
}

/// How the process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Its exit code (`None`: a signal).
    Code(Option<i32>),
    /// stepper stopped it.
    Stopped,
}

/// How many stderr lines are kept for messages.
const STDERR_KEPT: usize = 20;

/// A running CLI process.
pub struct Host {
    writes: mpsc::UnboundedSender<String>,
    lines: mpsc::Receiver<Line>,
    exited: watch::Receiver<Option<Exit>>,
    stop: mpsc::Sender<Duration>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Set once stderr has ended (read to its end, or failed).
    stderr_done: watch::Receiver<bool>,
    pid: Option<u32>,
}

/// How long the reason a dead CLI gave may take to arrive after its output closed: its
/// stderr is read by a task of its own, which may not have read the last lines yet.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

impl Host {
    /// Start the process.
    pub async fn spawn(spec: HostSpec) -> std::io::Result<Host> {
        let HostSpec {
            name,
            program,
            args,
            env,
            cwd,
            guard,
            secrets,
        } = spec;
        let mut child = match &guard {
            Some(helper) => {
                let mut guarded = stepper_process::guard::command(helper, &program);
                set_up(guarded.command_mut(), &args, &env, &cwd);
                stepper_process::guard::spawn(guarded).await?
            }
            None => {
                let mut command = tokio::process::Command::new(&program);
                set_up(&mut command, &args, &env, &cwd);
                stepper_process::group::spawn(command)?
            }
        };
        let pid = child.child_mut().id();
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            child.child_mut().stdin.take(),
            child.child_mut().stdout.take(),
            child.child_mut().stderr.take(),
        ) else {
            return Err(std::io::Error::other("the CLI's pipes were not set up"));
        };
        let (writes, queued) = mpsc::unbounded_channel();
        tokio::spawn(write_lines(stdin, queued));
        let (tx, lines) = mpsc::channel(256);
        tokio::spawn(read_lines(stdout, tx));
        let kept = Arc::new(Mutex::new(VecDeque::new()));
        let (done_tx, stderr_done) = watch::channel(false);
        let reading = log_stderr(stderr, name, Redactor::new(secrets), Arc::clone(&kept));
        tokio::spawn(async move {
            reading.await;
            let _ = done_tx.send(true);
        });
        let (stop, stopping) = mpsc::channel(1);
        let (exited_tx, exited) = watch::channel(None);
        tokio::spawn(supervise(child, stopping, exited_tx, name));
        tracing::info!(cli = name, pid, program = %program.display(), "started a CLI back-end");
        Ok(Host {
            writes,
            lines,
            exited,
            stop,
            stderr: kept,
            stderr_done,
            pid,
        })
    }

    /// Queue a line (a newline is added); lines go out in the order queued. False when the
    /// process can no longer take them.
    pub fn send(&self, value: &serde_json::Value) -> bool {
        self.writes.send(format!("{value}\n")).is_ok()
    }

    /// The next line of its output; `None` once its stdout closed (the last line flushed).
    pub async fn next_line(&mut self) -> Option<Line> {
        self.lines.recv().await
    }

    /// Whether the process has ended.
    pub fn has_exited(&self) -> bool {
        self.exited.borrow().is_some()
    }

    /// Wait up to `within` for the process to end; how it ended, if it did.
    pub async fn exit(&mut self, within: Duration) -> Option<Exit> {
        let mut exited = self.exited.clone();
        match tokio::time::timeout(within, exited.wait_for(Option::is_some)).await {
            Ok(Ok(exit)) => exit.clone(),
            _ => None,
        }
    }

    /// Stop the whole group: SIGTERM, then SIGKILL after `grace`; waits until it is gone.
    pub async fn stop(&mut self, grace: Duration) {
        let _ = self.stop.try_send(grace);
        let mut exited = self.exited.clone();
        let _ = exited.wait_for(Option::is_some).await;
    }

    /// What it last said on stderr: once stderr has ended (a process that died closes it),
    /// or after [`STDERR_SETTLE`] when something it started holds it open.
    pub async fn stderr_tail(&self) -> Vec<String> {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(STDERR_SETTLE, done.wait_for(|d| *d)).await;
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
}

fn set_up(command: &mut tokio::process::Command, args: &[OsString], env: &Env, cwd: &PathBuf) {
    command
        .args(args)
        .env_clear()
        .envs(env.iter())
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
}

async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut queued: mpsc::UnboundedReceiver<String>,
) {
    while let Some(line) = queued.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

async fn read_lines(mut stdout: tokio::process::ChildStdout, tx: mpsc::Sender<Line>) {
    let mut lines = Lines::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        lines.feed(&buf[..n], &mut out);
        for line in out.drain(..) {
            if tx.send(line).await.is_err() {
                return;
            }
        }
    }
    lines.finish(&mut out);
    for line in out {
        if tx.send(line).await.is_err() {
            return;
        }
    }
}

async fn log_stderr(
    stderr: tokio::process::ChildStderr,
    name: &'static str,
    redactor: Redactor,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = redactor.redact(String::from_utf8_lossy(&line).trim_end());
        if text.is_empty() {
            continue;
        }
        tracing::info!(cli = name, "stderr: {text}");
        let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() == STDERR_KEPT {
            kept.pop_front();
        }
        kept.push_back(text);
    }
}

async fn supervise(
    mut child: GroupChild,
    mut stop: mpsc::Receiver<Duration>,
    exited: watch::Sender<Option<Exit>>,
    name: &'static str,
) {
    let exit = tokio::select! {
        status = child.wait() => Exit::Code(status.ok().and_then(|s| s.code())),
        // A stop asked for, or the host dropped: the group goes either way.
        grace = stop.recv() => {
            child.terminate(grace.unwrap_or(Duration::ZERO)).await;
            Exit::Stopped
        }
    };
    tracing::info!(cli = name, ?exit, "a CLI back-end ended");
    let _ = exited.send(Some(exit));
}
