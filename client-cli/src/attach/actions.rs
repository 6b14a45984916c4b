//! Each TUI `Action` as one daemon call (`Follow::perform` keeps those that change the
//! session shown), and what the TUI is told back: the models, `/memory`, the project's MCP
//! servers waiting for approval.

use std::path::Path;

use stepper_protocol::client::{ClientError, DaemonClient};
use stepper_protocol::methods::*;
use stepper_tui::{Action, CoreEvent};
use tokio::sync::mpsc;

use crate::media::Media;
use crate::session::client_env;

/// What the TUI holds as what this client sends, and back.
fn media_of(a: stepper_tui::Attached) -> Media {
    Media {
        name: a.name,
        media_type: a.media_type,
        kind: a.kind,
        bytes: a.bytes.to_vec(),
    }
}

fn attached_of(m: Media) -> stepper_tui::Attached {
    stepper_tui::Attached {
        name: m.name,
        kind: m.kind,
        media_type: m.media_type,
        bytes: m.bytes.into(),
    }
}

/// One action as one daemon call; the error to show, if it failed.
pub(super) async fn perform(
    client: &DaemonClient,
    id: &str,
    cwd: &Path,
    action: Action,
    core: &mpsc::Sender<CoreEvent>,
) -> Option<String> {
    let session_id = id.to_string();
    let result: Result<(), ClientError> = match action {
        Action::Submit { text, attachments } => {
            let media: Vec<Media> = attachments.into_iter().map(media_of).collect();
            let parts = match crate::media::parts(&media) {
                Ok(parts) => parts,
                Err(e) => return Some(format!("not sent: {e:#}")),
            };
            client
                .call::<SessionSubmit>(SessionSubmitParams {
                    parts,
                    session_id,
                    text,
                    env: Some(client_env()),
                })
                .await
                .map(drop)
        }
        Action::Attach { path } => {
            let path = crate::media::resolve(&path, cwd);
            let read = tokio::task::spawn_blocking(move || Media::read(&path)).await;
            let told = match read {
                Ok(Ok(media)) => CoreEvent::Attached(attached_of(media)),
                Ok(Err(e)) => CoreEvent::Notice(format!("not attached: {e:#}")),
                Err(e) => CoreEvent::Notice(format!("not attached: {e}")),
            };
            let _ = core.send(told).await;
            Ok(())
        }
        Action::PasteImage => {
            let told = match super::clipboard::image().await {
                Ok(bytes) => match Media::pasted(bytes) {
                    Ok(media) => CoreEvent::Attached(attached_of(media)),
                    Err(e) => CoreEvent::Notice(format!("not attached: {e:#}")),
                },
                Err(why) => CoreEvent::Notice(why),
            };
            let _ = core.send(told).await;
            Ok(())
        }
        Action::Steer { text } => client
            .call::<SessionSteer>(SessionSubmitParams {
                parts: Vec::new(),
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
                    parts: Vec::new(),
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

/// Send the TUI the project's MCP servers waiting for this user's approval, if any.
pub(super) async fn ask_pending_mcp(
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
