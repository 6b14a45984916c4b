//! `stepper attach`: the bridge between the TUI (`stepper-tui`, which knows no socket) and
//! the daemon. Session events flow in as `CoreEvent`s — replayed from seq 0, then live, with
//! the client library resubscribing from its last seq when it lags — and each `Action` the
//! TUI sends becomes one daemon call. Leaving never stops the session's turn.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use stepper_protocol::client::ClientError;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_protocol::{AppEvent, PermissionMode, SandboxMode, SessionStatus};
use stepper_tui::{Action, CoreEvent, Exit, Pick, TuiOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::connect::{ATTACH_CLIENT, connect_or_start, places};
use crate::first_run;
use crate::session::{self, NewSession, client_env};

mod link;
use link::{Link, reconnect};

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
    let session = match choose(&client, &args, new, &cwd).await? {
        Some(session) => session,
        None => return Ok(ExitCode::SUCCESS),
    };
    attach(client, session, name, &cwd).await
}

/// Which session: the one named, the latest here, a new one, or the user's pick.
async fn choose(
    client: &DaemonClient,
    args: &AttachArgs,
    new: bool,
    cwd: &Path,
) -> anyhow::Result<Option<SessionResponse>> {
    if let Some(id) = &args.id {
        let id = crate::session::resolve(client, id).await?;
        return Ok(Some(get(client, &id).await?));
    }
    let here = client
        .call::<SessionList>(SessionListParams {
            cwd: Some(cwd.display().to_string()),
            limit: Some(20),
            cursor: None,
        })
        .await?
        .sessions;
    if args.last {
        return match here.first() {
            Some(s) => Ok(Some(get(client, &s.id).await?)),
            None => bail!(
                "no session was started in {} — run 'stepper' to start one",
                cwd.display()
            ),
        };
    }
    if new || here.is_empty() {
        return create(client, args, cwd).await;
    }
    match stepper_tui::pick(here.clone())
        .await
        .context("showing the session picker")?
    {
        Pick::New => create(client, args, cwd).await,
        Pick::Session(id) => Ok(Some(get(client, &id).await?)),
        Pick::Cancelled => Ok(None),
    }
}

async fn get(client: &DaemonClient, id: &str) -> anyhow::Result<SessionResponse> {
    Ok(client
        .call::<SessionGet>(SessionParams {
            session_id: id.to_string(),
        })
        .await?)
}

/// A new session here. When its model's provider is not set up, the first-run choice
/// comes up, and the session starts on what the user set up (the model asked for, when the
/// user set up its provider).
async fn create(
    client: &DaemonClient,
    args: &AttachArgs,
    cwd: &Path,
) -> anyhow::Result<Option<SessionResponse>> {
    let mut model = args.model.clone();
    loop {
        let new = NewSession {
            model: model.clone(),
            mode: args.mode,
            sandbox: args.sandbox,
            record: None,
            input: None,
            ..Default::default()
        };
        let e = match session::create(client, cwd, new).await {
            Ok(session) => return Ok(Some(session)),
            Err(e) => e,
        };
        let Some(reason) = first_run::is_unavailable(&e) else {
            return Err(e);
        };
        let Some(chosen) = first_run::choose(client, cwd, reason).await? else {
            println!("no session started — 'stepper doctor' shows what is set up");
            return Ok(None);
        };
        let provider = |m: &str| m.split('/').next().unwrap_or_default().to_string();
        model = match &args.model {
            Some(asked) if provider(asked) == provider(&chosen) => Some(asked.clone()),
            _ => Some(chosen),
        };
    }
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
    tokio::spawn(ask_pending_mcp(
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

/// The session the TUI shows, and the task pumping its events in.
struct Follow {
    link: Link,
    core: mpsc::Sender<CoreEvent>,
    me: String,
    cwd: std::path::PathBuf,
    id: String,
    pump: Option<tokio::task::JoinHandle<()>>,
    /// Set when the TUI leaves: a pump that loses the daemon then does not reconnect (nor
    /// start a daemon nobody will use, as when the terminal closes while the daemon stops).
    leaving: CancellationToken,
}

impl Follow {
    /// Show `session`: its state, who is attached, then its events from seq 0 and live —
    /// without the streamed pieces of completed turns, whose finished messages and tool
    /// results carry the same text. The session shown before, if any, stops being followed.
    async fn show(&mut self, session: SessionResponse) -> anyhow::Result<()> {
        let SessionResponse {
            session,
            mode,
            sandbox,
            ..
        } = session;
        let id = session.id.clone();
        let client = self.link.get();
        let mut stream = client
            .subscribe_history(&id, 0)
            .await
            .with_context(|| format!("following session {id}"))?;
        if let Some(old) = self.pump.take() {
            old.abort();
        }
        self.id = id.clone();
        let shown_to = session.last_seq;
        let window = context_window(&client, &session.model, &self.cwd).await;
        let _ = self
            .core
            .send(CoreEvent::Session {
                info: session,
                mode: mode.unwrap_or(PermissionMode::Default),
                sandbox,
                context_window: window,
            })
            .await;
        if let Ok(c) = client
            .call::<SessionClients>(SessionParams {
                session_id: id.clone(),
            })
            .await
        {
            let _ = self
                .core
                .send(CoreEvent::Clients {
                    clients: c.clients,
                    me: self.me.clone(),
                })
                .await;
        }
        tokio::spawn(status_line(client.clone(), id.clone(), self.core.clone()));
        let core = self.core.clone();
        let (link, me, leaving) = (self.link.clone(), self.me.clone(), self.leaving.clone());
        let cwd = self.cwd.clone();
        self.pump = Some(tokio::spawn(async move {
            // The last event shown: a stream followed again starts after it.
            let mut seen = 0;
            loop {
                let reason = loop {
                    match stream.next().await {
                        Some(Ok(envelope)) => {
                            seen = envelope.seq;
                            // A model changed from now on (`/model` here, or another
                            // client): the status line's share follows its window.
                            let changed = envelope.seq > shown_to
                                && matches!(envelope.event, AppEvent::ModelChanged { .. });
                            // The user's status line is drawn again after each turn, as
                            // Claude Code redraws it when the conversation changes.
                            let redraw = envelope.seq > shown_to
                                && matches!(
                                    envelope.event,
                                    AppEvent::TurnFinished { .. } | AppEvent::ModelChanged { .. }
                                );
                            if core.send(CoreEvent::Event(envelope)).await.is_err() {
                                return;
                            }
                            if changed {
                                refresh(&link.get(), &id, &cwd, &core).await;
                            }
                            if redraw {
                                tokio::spawn(status_line(link.get(), id.clone(), core.clone()));
                            }
                        }
                        Some(Err(e)) => break e.to_string(),
                        None => break "the daemon closed the session's event stream".to_string(),
                    }
                };
                // The daemon went away (a restart, an upgrade, a crash): the session is kept
                // in it, so this TUI reaches it again and goes on where it was.
                if leaving.is_cancelled() {
                    return;
                }
                let _ = core
                    .send(CoreEvent::Info(
                        "the daemon went away — reconnecting…".to_string(),
                    ))
                    .await;
                let again = tokio::select! {
                    () = leaving.cancelled() => return,
                    again = reconnect(&me, &id, seen) => again,
                };
                match again {
                    Ok((client, again)) => {
                        link.set(client);
                        stream = again;
                        let _ = core
                            .send(CoreEvent::Info("reconnected to the daemon".into()))
                            .await;
                    }
                    Err(e) => {
                        let why = format!("{reason}; reconnecting failed: {e:#}");
                        let _ = core.send(CoreEvent::Disconnected(why)).await;
                        return;
                    }
                }
            }
        }));
        Ok(())
    }

    async fn perform(&mut self, action: Action) -> Option<String> {
        match action {
            // The conversation so far (or before turn N) in a new session, shown here.
            Action::Fork { args } => match self.fork(&args).await {
                Ok(()) => None,
                Err(e) => Some(format!("/fork failed: {e:#}")),
            },
            Action::Init => {
                match self
                    .link
                    .get()
                    .call::<ProjectInit>(ProjectInitParams {
                        cwd: self.cwd.display().to_string(),
                        force: false,
                    })
                    .await
                {
                    Ok(done) => {
                        let mut text = String::from("/init:");
                        for file in &done.created {
                            text.push_str(&format!("\n  wrote {file}"));
                        }
                        for file in &done.skipped {
                            text.push_str(&format!("\n  kept {file} (it exists)"));
                        }
                        let _ = self.core.send(CoreEvent::Info(text)).await;
                        None
                    }
                    Err(e) => Some(format!("/init failed: {e}")),
                }
            }
            action => perform(&self.link.get(), &self.id, &self.cwd, action, &self.core).await,
        }
    }

    async fn fork(&mut self, args: &str) -> anyhow::Result<()> {
        let current = get(&self.link.get(), &self.id).await?;
        let from_turn = match args.trim() {
            "" => current.session.turns + 1,
            n => n.parse().map_err(|_| {
                anyhow::anyhow!("usage: /fork [TURN] (the fork holds the turns before TURN)")
            })?,
        };
        let forked = self
            .link
            .get()
            .call::<SessionFork>(SessionForkParams {
                session_id: self.id.clone(),
                from_turn,
                title: None,
            })
            .await?;
        self.show(forked).await
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

/// Send the TUI the project's MCP servers waiting for this user's approval, if any.
async fn ask_pending_mcp(
    client: DaemonClient,
    cwd: std::path::PathBuf,
    core: mpsc::Sender<CoreEvent>,
) {
    let cwd = cwd.display().to_string();
    if let Ok(list) = client
        .call::<stepper_protocol::methods::McpPending>(CwdParams { cwd })
        .await
        && !list.servers.is_empty()
    {
        let servers = list
            .servers
            .into_iter()
            .map(|s| stepper_tui::PendingMcpServer {
                file: std::path::Path::new(&s.source)
                    .file_name()
                    .map_or_else(|| s.source.clone(), |n| n.to_string_lossy().into_owned()),
                name: s.name,
                target: s.target,
            })
            .collect();
        let _ = core.send(CoreEvent::PendingMcp(servers)).await;
    }
}

/// One action as one daemon call; the error to show, if it failed.
async fn perform(
    client: &DaemonClient,
    id: &str,
    cwd: &Path,
    action: Action,
    core: &mpsc::Sender<CoreEvent>,
) -> Option<String> {
    let session_id = id.to_string();
    let result: Result<(), ClientError> = match action {
        Action::Submit { text } => client
            .call::<SessionSubmit>(SessionSubmitParams {
                session_id,
                text,
                env: Some(client_env()),
            })
            .await
            .map(drop),
        Action::Steer { text } => client
            .call::<SessionSteer>(SessionSubmitParams {
                session_id,
                text,
                env: Some(client_env()),
            })
            .await
            .map(drop),
        Action::Interrupt => client
            .call::<SessionInterrupt>(SessionParams { session_id })
            .await
            .map(drop),
        Action::Approve {
            request_id,
            decision,
        } => client
            .call::<SessionApprove>(SessionApproveParams {
                session_id,
                request_id,
                decision,
            })
            .await
            .map(drop),
        Action::ApproveMcpServer { name, decision } => {
            use stepper_protocol::methods::{McpApproval, McpApprove, McpApproveParams};
            let decision = match decision {
                stepper_protocol::ApprovalDecision::Allow => McpApproval::Allow,
                stepper_protocol::ApprovalDecision::AllowAlways => McpApproval::AllowAll,
                stepper_protocol::ApprovalDecision::Deny => McpApproval::Deny,
            };
            client
                .call::<McpApprove>(McpApproveParams {
                    cwd: cwd.display().to_string(),
                    names: vec![name],
                    decision,
                })
                .await
                .map(drop)
        }
        Action::Trust { trusted } => {
            let set = client
                .call::<stepper_protocol::methods::TrustSet>(
                    stepper_protocol::methods::TrustSetParams {
                        cwd: cwd.display().to_string(),
                        trusted,
                        all_below: false,
                    },
                )
                .await;
            // Trusted, the project's own MCP servers are offered: asked about as at start.
            if set.is_ok() && trusted {
                ask_pending_mcp(client.clone(), cwd.to_path_buf(), core.clone()).await;
            }
            set.map(drop)
        }
        Action::Elicit {
            request_id,
            action,
            content,
        } => client
            .call::<stepper_protocol::methods::SessionElicit>(
                stepper_protocol::methods::SessionElicitParams {
                    session_id,
                    request_id,
                    action,
                    content,
                },
            )
            .await
            .map(drop),
        Action::SetMode { mode } => client
            .call::<SessionSetMode>(SessionSetModeParams { session_id, mode })
            .await
            .map(drop),
        // The picker's choice; its `ModelChanged` updates the status line (see `show`).
        Action::SetModel { model } => client
            .call::<SessionSetModel>(SessionSetModelParams { session_id, model })
            .await
            .map(drop),
        Action::ListModels => {
            match client
                .call::<ModelsList>(ModelsListParams {
                    cwd: Some(cwd.display().to_string()),
                })
                .await
            {
                Ok(list) => {
                    let _ = core.send(CoreEvent::Models(list.models)).await;
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
        Action::Rewind {
            turn,
            files,
            conversation,
        } => client
            .call::<SessionRewind>(SessionRewindParams {
                session_id,
                turn,
                files,
                conversation,
            })
            .await
            .map(drop),
        Action::Memory => {
            match client
                .call::<SessionMemory>(SessionParams { session_id })
                .await
            {
                Ok(memory) => {
                    let _ = core.send(CoreEvent::Info(memory_summary(&memory))).await;
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
        Action::Compact { instructions } => client
            .call::<SessionCompact>(SessionCompactParams {
                session_id,
                instructions: (!instructions.is_empty()).then_some(instructions),
            })
            .await
            .map(drop),
        Action::Command { name, args } => {
            // A custom command or a skill: the daemon expands it, as it does for `ask`.
            let known = client
                .call::<CommandsList>(CwdParams {
                    cwd: cwd.display().to_string(),
                })
                .await
                .is_ok_and(|l| {
                    l.commands.iter().any(|c| {
                        c.name == name && c.kind != stepper_protocol::methods::CommandKind::Builtin
                    })
                });
            if !known {
                return Some(format!("/{name} is not a command here — /help lists them"));
            }
            let text = if args.is_empty() {
                format!("/{name}")
            } else {
                format!("/{name} {args}")
            };
            client
                .call::<SessionSubmit>(SessionSubmitParams {
                    session_id,
                    text,
                    env: Some(client_env()),
                })
                .await
                .map(drop)
        }
        // What changes the session shown is done by `Follow::perform`, which holds it.
        Action::Detach | Action::Fork { .. } | Action::Init => Ok(()),
    };
    result.err().map(|e| e.to_string())
}

/// What the user's `statusLine` command prints now, for the TUI to draw; nothing when it
/// failed (a status line that fails is not worth an error each turn).
async fn status_line(client: DaemonClient, id: String, core: mpsc::Sender<CoreEvent>) {
    let Ok(got) = client
        .call::<SessionStatusLine>(SessionParams { session_id: id })
        .await
    else {
        return;
    };
    let _ = core.send(CoreEvent::StatusLine(got.text)).await;
}

/// Tell the TUI the session again (its model changed): the status line's context share
/// follows the new model's window.
async fn refresh(client: &DaemonClient, id: &str, cwd: &Path, core: &mpsc::Sender<CoreEvent>) {
    let Ok(got) = client
        .call::<SessionGet>(SessionParams {
            session_id: id.to_string(),
        })
        .await
    else {
        return;
    };
    let window = context_window(client, &got.session.model, cwd).await;
    let _ = core
        .send(CoreEvent::Session {
            info: got.session,
            mode: got.mode.unwrap_or(PermissionMode::Default),
            sandbox: got.sandbox,
            context_window: window,
        })
        .await;
}

/// What `/memory` shows: each file the instructions come from, then what went wrong.
fn memory_summary(memory: &stepper_protocol::methods::SessionMemoryResponse) -> String {
    if memory.files.is_empty() {
        return "no instructions: add AGENTS.md (or CLAUDE.md) to the project, or \
                .stepper/stepper.md"
            .into();
    }
    let mut text = format!(
        "instructions: {} of {} bytes, from\n",
        memory.bytes, memory.cap
    );
    for file in &memory.files {
        let cut = if file.cut { ", cut" } else { "" };
        text.push_str(&format!(
            "  {} ({}, {} bytes{cut})\n",
            file.path, file.source, file.bytes
        ));
    }
    for notice in &memory.notices {
        text.push_str(&format!("  ! {notice}\n"));
    }
    text.trim_end().to_string()
}

/// The context window of `model`, when the daemon knows it.
pub(crate) async fn context_window(client: &DaemonClient, model: &str, cwd: &Path) -> Option<u64> {
    let list = client
        .call::<ModelsList>(ModelsListParams {
            cwd: Some(cwd.display().to_string()),
        })
        .await
        .ok()?;
    list.models
        .iter()
        .find(|m| format!("{}/{}", m.provider, m.id) == model || m.id == model)
        .map(|m| m.context_window)
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
