//! The session the TUI shows: its state, its clients and its events, pumped in from seq 0
//! and then live, followed again after a daemon restart; the actions that change which
//! session is shown (`/fork`) or what the folder holds (`/init`); the status line.

use std::path::Path;

use anyhow::Context;
use stepper_protocol::AppEvent;
use stepper_protocol::PermissionMode;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_tui::{Action, CoreEvent};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::link::{Link, reconnect};
use super::{actions, get};

/// The session the TUI shows, and the task pumping its events in.
pub(super) struct Follow {
    pub(super) link: Link,
    pub(super) core: mpsc::Sender<CoreEvent>,
    pub(super) me: String,
    pub(super) cwd: std::path::PathBuf,
    pub(super) id: String,
    pub(super) pump: Option<tokio::task::JoinHandle<()>>,
    /// Set when the TUI leaves: a pump that loses the daemon then does not reconnect (nor
    /// start a daemon nobody will use, as when the terminal closes while the daemon stops).
    pub(super) leaving: CancellationToken,
}

impl Follow {
    /// Show `session`: its state, who is attached, then its events from seq 0 and live —
    /// without the streamed pieces of completed turns, whose finished messages and tool
    /// results carry the same text. The session shown before, if any, stops being followed.
    pub(super) async fn show(&mut self, session: SessionResponse) -> anyhow::Result<()> {
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

    pub(super) async fn perform(&mut self, action: Action) -> Option<String> {
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
            action => {
                actions::perform(&self.link.get(), &self.id, &self.cwd, action, &self.core).await
            }
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
