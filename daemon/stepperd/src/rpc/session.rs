//! `session/*`: create, list, get, delete, fork, export; submit, steer, interrupt, approve;
//! model, mode, clients, rewind. Creation and fork live in the hub; handlers check what the
//! wire brings (sizes, shapes) and hand on.

use jsonrpsee::RpcModule;
use stepper_protocol::methods::*;

use super::{Conn, RpcError, register};
use crate::hub::{HubError, Input, NewSessionRequest, take_parts};

/// Events per `session/export` page, at most.
const EXPORT_PAGE: u32 = 5000;
/// Event text per `session/export` page past its first event: well under the message limit.
const EXPORT_PAGE_BYTES: usize = 8 * 1024 * 1024;

/// An input's text and parts, made one input: refused when empty, over the limits, or with
/// a part that cannot be read (paths inside `cwd` only).
async fn input(
    cwd: &std::path::Path,
    text: String,
    parts: Vec<stepper_protocol::InputPart>,
) -> Result<Input, RpcError> {
    if text.len() > MAX_INPUT_BYTES {
        input_text(&text, "submit")?;
    }
    let input = take_parts(cwd, text, parts).await?;
    if input.is_empty() {
        return Err(RpcError::InvalidParams(
            "nothing to submit: the input is empty".into(),
        ));
    }
    if !input.text.trim().is_empty() {
        input_text(&input.text, "submit")?;
    }
    Ok(input)
}

/// An input's text, refused when empty or over [`MAX_INPUT_BYTES`].
fn input_text(text: &str, what: &'static str) -> Result<(), RpcError> {
    if text.trim().is_empty() {
        return Err(RpcError::InvalidParams(format!(
            "nothing to {what}: the input is empty"
        )));
    }
    if text.len() > MAX_INPUT_BYTES {
        return Err(RpcError::TooLarge {
            what: "the input",
            size: text.len(),
            limit: MAX_INPUT_BYTES,
            hint: "put long material in a file in the project and refer to it",
        });
    }
    Ok(())
}

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<SessionCreate, _, _>(m, |conn, p| async move {
        let first = if p.input.is_some() || !p.input_parts.is_empty() {
            let text = p.input.unwrap_or_default();
            let first = input(std::path::Path::new(&p.cwd), text, p.input_parts).await?;
            Some((first, conn.client_label()))
        } else {
            None
        };
        for text in [&p.system_prompt, &p.append_system_prompt]
            .into_iter()
            .flatten()
        {
            input_text(text, "create")?;
        }
        let created = conn
            .daemon
            .hub
            .create(NewSessionRequest {
                cwd: p.cwd,
                env: p.env,
                model: p.model,
                title: p.title,
                record: p.record,
                mode: p.mode,
                sandbox: p.sandbox,
                input: first,
                instructions: stepper_engine::prompt::UserInstructions {
                    system_prompt: p.system_prompt,
                    append_system_prompt: p.append_system_prompt,
                },
            })
            .await?;
        Ok(SessionResponse {
            session: created.info,
            mode: Some(created.mode),
            sandbox: Some(created.sandbox),
            queued: created
                .queued
                .map(|(input_id, seq)| SessionSubmitResponse { input_id, seq }),
        })
    });

    register::<SessionList, _, _>(m, |conn, p| async move {
        // A page of none would say nothing (and its cursor would go nowhere): a limit of 0
        // is a mistake, said as one, rather than quietly taken as 1.
        let limit = match p.limit {
            Some(0) => {
                return Err(RpcError::InvalidParams(
                    "limit must be at least 1 (at most 500; 50 when left out)".into(),
                ));
            }
            limit => limit.unwrap_or(50).min(500),
        };
        let page = conn
            .daemon
            .hub
            .deps()
            .store
            .list_sessions(p.cwd.as_deref(), limit, p.cursor.as_deref())
            .await?;
        Ok(SessionListResponse {
            sessions: page.sessions,
            next_cursor: page.next_cursor,
        })
    });

    register::<SessionGet, _, _>(m, |conn, p| async move {
        let hub = &conn.daemon.hub;
        let live = hub.get(&p.session_id).await?;
        let session = hub
            .deps()
            .store
            .session(&p.session_id)
            .await?
            .ok_or_else(|| HubError::NotFound(p.session_id.clone()))?;
        let mode = hub.mode_of(&live).await.ok();
        let sandbox = hub.sandbox_of(&live).await.ok();
        Ok(SessionResponse {
            session,
            mode,
            sandbox,
            queued: None,
        })
    });

    register::<SessionSubmit, _, _>(m, |conn, p| async move {
        if conn.daemon.shutdown.is_cancelled() {
            return Err(HubError::ShuttingDown.into());
        }
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let submitted = input(&session.cwd(), p.text, p.parts).await?;
        let (input_id, seq) = session
            .submit(submitted, p.env, conn.client_label())
            .await?;
        Ok(SessionSubmitResponse { input_id, seq })
    });

    register::<SessionCompact, _, _>(m, |conn, p| async move {
        if conn.daemon.shutdown.is_cancelled() {
            return Err(HubError::ShuttingDown.into());
        }
        let text = match p.instructions.as_deref().map(str::trim) {
            Some(extra) if !extra.is_empty() => format!("/compact {extra}"),
            _ => "/compact".to_string(),
        };
        input_text(&text, "compact")?;
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let (input_id, seq) = session
            .submit(Input::text(text), None, conn.client_label())
            .await?;
        Ok(SessionSubmitResponse { input_id, seq })
    });

    register::<SessionContext, _, _>(m, |conn, p| async move {
        let hub = &conn.daemon.hub;
        let session = hub.get(&p.session_id).await?;
        Ok(crate::hub::context_window(hub.deps(), &session, &p.session_id).await?)
    });

    register::<SessionInterrupt, _, _>(m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let interrupted = session.interrupt(stepper_engine::interrupt::Interruption::User);
        if interrupted {
            tracing::info!(session = %p.session_id, client = ?conn.client_label(), "interrupted");
        }
        Ok(SessionInterruptResponse { interrupted })
    });

    register::<SessionApprove, _, _>(m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        session
            .approvals
            .answer(&p.request_id, p.decision, conn.client_label())
            .map_err(HubError::from)?;
        Ok(Empty {})
    });

    register::<SessionElicit, _, _>(m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let answer = match p.action {
            stepper_protocol::ElicitAction::Accept => {
                stepper_engine::tool::ElicitAnswer::Accept(p.content.unwrap_or_default())
            }
            stepper_protocol::ElicitAction::Decline => stepper_engine::tool::ElicitAnswer::Decline,
            stepper_protocol::ElicitAction::Cancel => stepper_engine::tool::ElicitAnswer::Cancel,
        };
        session
            .approvals
            .elicited(&p.request_id, answer, conn.client_label())
            .map_err(HubError::from)?;
        Ok(Empty {})
    });

    register::<SessionSteer, _, _>(m, |conn, p| async move {
        if !p.parts.is_empty() {
            return Err(RpcError::InvalidParams(
                "session/steer takes text only: send images and documents with session/submit, \
                 as the next input"
                    .into(),
            ));
        }
        input_text(&p.text, "steer with")?;
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let (input_id, seq) = session.steer(p.text, conn.client_label()).await?;
        Ok(SessionSubmitResponse { input_id, seq })
    });

    register::<SessionSetModel, _, _>(m, |conn, p| async move {
        let hub = &conn.daemon.hub;
        let session = hub.get(&p.session_id).await?;
        crate::hub::model::change(hub.deps(), &session, &p.model, conn.client_label(), None)
            .await?;
        Ok(Empty {})
    });

    register::<SessionSetMode, _, _>(m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        session
            .set_mode(p.mode, conn.client_label(), &conn.daemon.hub.deps().store)
            .await?;
        Ok(Empty {})
    });

    register::<SessionMemory, _, _>(m, |conn, p| async move {
        let hub = &conn.daemon.hub;
        let session = hub.get(&p.session_id).await?;
        let cwd = session.cwd();
        let home = session
            .env_and_mode()
            .0
            .get("HOME")
            .map(std::path::PathBuf::from);
        let settings = hub.deps().settings.get(Some(&cwd)).await?;
        let cap = settings
            .memory_max_bytes
            .unwrap_or(stepper_engine::config::memory::DEFAULT_CAP);
        let memory = crate::hub::instructions(
            &cwd,
            home.as_deref(),
            &settings,
            hub.deps().settings.config_dir(),
        )
        .await;
        Ok(SessionMemoryResponse {
            files: memory
                .files
                .iter()
                .map(|f| MemoryFileInfo {
                    path: f.path.display().to_string(),
                    source: MemorySource::parse(f.source.as_str()),
                    bytes: f.bytes as u64,
                    cut: f.cut,
                })
                .collect(),
            bytes: memory.text.len() as u64,
            cap: cap as u64,
            notices: memory.notices,
        })
    });

    register::<SessionStatusLine, _, _>(m, |conn, p| async move {
        let hub = &conn.daemon.hub;
        let session = hub.get(&p.session_id).await?;
        let settings = hub.deps().settings.get(Some(&session.cwd())).await?;
        Ok(crate::hub::status_line::status_line(hub.deps(), &session, &settings).await)
    });

    register::<SessionClients, _, _>(m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        Ok(SessionClientsResponse {
            clients: session.clients(),
        })
    });

    register::<SessionRewind, _, _>(m, |conn, p| async move {
        if !p.files && !p.conversation {
            return Err(RpcError::InvalidParams(
                "rewind what? files, conversation, or both".into(),
            ));
        }
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let files = session
            .rewind(
                p.turn,
                p.files,
                p.conversation,
                &conn.daemon.hub.deps().store,
            )
            .await?;
        Ok(SessionRewindResponse { files })
    });

    register::<SessionFork, _, _>(m, |conn, p| async move {
        let (session, mode) = conn
            .daemon
            .hub
            .fork(&p.session_id, p.from_turn, p.title)
            .await?;
        let hub = &conn.daemon.hub;
        let sandbox = match hub.get(&session.id).await {
            Ok(live) => hub.sandbox_of(&live).await.ok(),
            Err(_) => None,
        };
        Ok(SessionResponse {
            session,
            mode: Some(mode),
            sandbox,
            queued: None,
        })
    });

    register::<SessionDelete, _, _>(m, |conn, p| async move {
        conn.daemon.hub.delete(&p.session_id).await?;
        tracing::info!(session = %p.session_id, client = ?conn.client_label(), "session deleted");
        Ok(Empty {})
    });

    register::<SessionExport, _, _>(m, |conn, p| async move {
        let store = &conn.daemon.hub.deps().store;
        let session = store
            .session(&p.session_id)
            .await?
            .ok_or_else(|| HubError::NotFound(p.session_id.clone()))?;
        let limit = p.limit.unwrap_or(EXPORT_PAGE).clamp(1, EXPORT_PAGE);
        let page = store
            .events_after_raw(&p.session_id, p.after_seq, limit, EXPORT_PAGE_BYTES)
            .await?;
        let last = page.last().map(|(seq, _)| *seq);
        let next_after_seq = last.filter(|seq| *seq < session.last_seq);
        Ok(SessionExportResponse {
            session,
            events: page.into_iter().map(|(_, raw)| raw).collect(),
            next_after_seq,
        })
    });

    register::<SessionAttachment, _, _>(m, |conn, p| async move {
        use base64::Engine as _;
        let store = &conn.daemon.hub.deps().store;
        if store.session(&p.session_id).await?.is_none() {
            return Err(HubError::NotFound(p.session_id.clone()).into());
        }
        let (attachment, bytes) = store
            .attachment(&p.session_id, &p.sha256)
            .await?
            .ok_or_else(|| {
                RpcError::InvalidParams(format!(
                    "session {} has no attachment {}: take the sha256 from an event's \
                     attachments",
                    p.session_id, p.sha256
                ))
            })?;
        Ok(SessionAttachmentResponse {
            attachment,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    });
}
