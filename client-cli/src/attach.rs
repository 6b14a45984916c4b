//! `stepper attach`: the bridge between the TUI (`stepper-tui`, which knows no socket) and
//! the daemon. Session events flow in as `CoreEvent`s — replayed from seq 0, then live, with
//! the client library resubscribing from its last seq when it lags — and each `Action` the
//! TUI sends becomes one daemon call. Leaving never stops the session's turn.
//!
//! This file starts the bridge and ends it: `choose` finds the session, `follow` shows it
//! (and follows it again after a daemon restart, through `link`), and `actions` makes each
//! action a daemon call.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_protocol::{PermissionMode, SandboxMode, SessionStatus};
use stepper_tui::{CoreEvent, Exit, TuiOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::connect::{ATTACH_CLIENT, connect_or_start, places};

mod actions;
mod choose;
mod clipboard;
mod follow;
mod link;

use follow::Follow;
pub(crate) use follow::context_window;
use link::Link;

#[derive(Args, Default)]
pub struct AttachArgs {
    /// The session to attach to (as `stepper sessions` lists them).
    #[arg(conflicts_with = "last")]
    id: Option<String>,
    /// The latest session started in this folder.
    #[arg(long)]
    last: bool,
    /// The model of a new session, as provider/model-id.
    #[arg(long, short)]
    model: Option<String>,
    /// The permission mode of a new session: default, accept-edits, plan or auto.
    #[arg(long)]
    mode: Option<PermissionMode>,
    /// The OS sandbox of a new session's commands: read-only, workspace-write or off (the
    /// settings' when absent).
    #[arg(long, value_name = "MODE")]
    sandbox: Option<SandboxMode>,
}

/// Files offered for `@file` completion, at most.
const COMPLETION_FILES: usize = 5000;
/// Core events waiting for the TUI: when full, the event pump waits (the daemon keeps the
/// log, and the client library resubscribes if its own buffer overflows meanwhile).
const EVENTS: usize = 1024;

/// `stepper attach [ID | --last]`; `new` opens a new session in the cwd (plain `stepper`).
pub async fn run(args: AttachArgs, new: bool) -> anyhow::Result<ExitCode> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        bail!(
            "stepper attach needs a terminal — use 'stepper ask' in scripts, or \
             'stepper sessions show ID' to read a session"
        );
    }
    let cwd = crate::connect::working_dir()?;
    let name = format!("{ATTACH_CLIENT} {}", std::process::id());
    let client = connect_or_start(&places()?, &name).await?;
    let session = match choose::choose(&client, &args, new, &cwd).await? {
        Some(session) => session,
        None => return Ok(ExitCode::SUCCESS),
    };
    attach(client, session, name, &cwd).await
}

async fn get(client: &DaemonClient, id: &str) -> anyhow::Result<SessionResponse> {
    Ok(client
        .call::<SessionGet>(SessionParams {
            session_id: id.to_string(),
        })
        .await?)
}

async fn attach(
    client: DaemonClient,
    session: SessionResponse,
    me: String,
    cwd: &Path,
) -> anyhow::Result<ExitCode> {
    let (core, events) = mpsc::channel(EVENTS);
    let (actions, mut requests) = mpsc::channel(64);
    let cancel = CancellationToken::new();
    let mut follow = Follow {
        link: Link::new(client.clone()),
        core: core.clone(),
        me,
        cwd: cwd.to_path_buf(),
        id: String::new(),
        pump: None,
        leaving: cancel.clone(),
    };
    // Subscribed before the TUI starts, so a session that cannot be followed fails here,
    // with the terminal untouched.
    follow.show(session).await?;

    let files = {
        let core = core.clone();
        let root = cwd.to_path_buf();
        tokio::spawn(async move {
            if let Ok(files) = tokio::task::spawn_blocking(move || project_files(&root)).await {
                let _ = core.send(CoreEvent::Files(files)).await;
            }
        })
    };
    // The daemon's custom commands and skills, for completion.
    {
        let (core, client) = (core.clone(), client.clone());
        let cwd = cwd.display().to_string();
        tokio::spawn(async move {
            if let Ok(list) = client.call::<CommandsList>(CwdParams { cwd }).await {
                let commands = list
                    .commands
                    .into_iter()
                    .filter(|c| c.kind != stepper_protocol::methods::CommandKind::Builtin)
                    .map(|c| stepper_tui::CommandEntry {
                        name: c.name,
                        description: c.description,
                    })
                    .collect();
                let _ = core.send(CoreEvent::Commands(commands)).await;
            }
        });
    }
    // An undecided folder whose files ask for what only trust gives is asked about first.
    {
        let (core, client) = (core.clone(), client.clone());
        let cwd = cwd.display().to_string();
        tokio::spawn(async move {
            if let Ok(report) = client
                .call::<stepper_protocol::methods::TrustGet>(CwdParams { cwd })
                .await
                && report.decided_by.is_none()
                && !report.ignored.is_empty()
                && report.too_broad.is_none()
            {
                let question = stepper_tui::TrustQuestion {
                    folder: report.folder,
                    ignored: report.ignored,
                };
                let _ = core.send(CoreEvent::Trust(question)).await;
            }
        });
    }
    // The project's MCP servers waiting for approval are asked about like approvals.
    tokio::spawn(actions::ask_pending_mcp(
        client.clone(),
        cwd.to_path_buf(),
        core.clone(),
    ));
    // Ends when the TUI drops its sender or leaves, handing back the session it was showing
    // last. A call still in flight when the user leaves is not waited for.
    let calls = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            loop {
                let action = tokio::select! {
                    () = cancel.cancelled() => break,
                    action = requests.recv() => match action {
                        Some(action) => action,
                        None => break,
                    },
                };
                let failed = tokio::select! {
                    () = cancel.cancelled() => break,
                    failed = follow.perform(action) => failed,
                };
                if let Some(message) = failed {
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        _ = follow.core.send(CoreEvent::Error(message)) => {}
                    }
                }
            }
            follow
        })
    };
    // A terminal closed or a `kill` ends the TUI like a detach: the terminal is restored.
    let signals = tokio::spawn(leave_on_signal(cancel.clone()));

    let exit = stepper_tui::run(TuiOptions::default(), actions, events, cancel.clone()).await;
    cancel.cancel();
    files.abort();
    signals.abort();
    let follow = calls.await.context("the bridge to the daemon stopped")?;
    if let Some(pump) = &follow.pump {
        pump.abort();
    }
    let exit = exit.context("running the terminal UI")?;
    let id = follow.id;

    let running = follow
        .link
        .get()
        .call::<SessionGet>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .map(|s| s.session.status == SessionStatus::Running)
        .unwrap_or(false);
    match exit {
        Exit::Detached | Exit::Cancelled => {
            let turn = if running { "; its turn goes on" } else { "" };
            println!("detached from session {id}{turn} — come back with: stepper attach {id}");
            Ok(ExitCode::SUCCESS)
        }
        Exit::Disconnected(reason) => {
            eprintln!(
                "stepper: {reason}\nthe session is kept: 'stepper attach {id}' comes back to it"
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Cancel `cancel` on SIGTERM, SIGHUP or SIGINT (in raw mode Ctrl-C is a key, so a SIGINT
/// comes from `kill`), or on Windows when the console closes.
async fn leave_on_signal(cancel: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = hup.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let Ok(mut close) = tokio::signal::windows::ctrl_close() else {
            return;
        };
        close.recv().await;
    }
    cancel.cancel();
}

/// Files of the project for `@file` completion, relative to `root`: gitignore respected,
/// hidden files skipped, at most `COMPLETION_FILES`.
fn project_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if files.len() >= COMPLETION_FILES {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = entry.path().strip_prefix(root)
        {
            files.push(rel.display().to_string());
        }
    }
    files.sort();
    files
}
