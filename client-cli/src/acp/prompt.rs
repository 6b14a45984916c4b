//! `session/prompt`: the editor's blocks made one input, the folder's trust asked about
//! first, and the answer given when the turn that input started ends.
//!
//! A prompt submits, then waits for the end of the turn its input started; a turn that ends before
//! the wait begins is kept until then.

use serde_json::{Value, json};
use std::sync::Arc;
use stepper_protocol::TurnStatus;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{
    CwdParams, SessionSubmit, SessionSubmitParams, TrustGet, TrustSet, TrustSetParams,
};
use tokio::sync::oneshot;

use super::{AcpError, Conn, Live, map, session_id};
use crate::session::client_env;

impl Conn {
    pub(super) async fn prompt(self: &Arc<Self>, params: Value) -> Result<Value, AcpError> {
        let id = session_id(&params)?;
        let live = self.live(&id)?;
        let blocks = params
            .get("prompt")
            .and_then(Value::as_array)
            .ok_or_else(|| AcpError::invalid("session/prompt needs prompt: an array of blocks"))?;
        let text = prompt_text(blocks)?;
        let daemon = self.daemon().await?;
        self.ask_trust(daemon, &live).await;
        let submitted = daemon
            .call::<SessionSubmit>(SessionSubmitParams {
                parts: Vec::new(),
                session_id: id.clone(),
                text,
                env: Some(client_env()),
            })
            .await?;
        let ended = {
            let mut turns = live.turns.lock().unwrap_or_else(|p| p.into_inner());
            match turns.ended.remove(&submitted.input_id) {
                Some(end) => Ok(end),
                None => {
                    let (tx, rx) = oneshot::channel();
                    turns.waiters.insert(submitted.input_id, tx);
                    Err(rx)
                }
            }
        };
        let (status, error) = match ended {
            Ok(end) => end,
            Err(rx) => rx.await.map_err(|_| {
                AcpError::new(
                    -32603,
                    "lost the daemon while the turn ran — the turn goes on there; \
                     session/load shows it",
                )
            })?,
        };
        match status {
            TurnStatus::Completed => Ok(json!({"stopReason": "end_turn"})),
            TurnStatus::Interrupted => Ok(json!({"stopReason": "cancelled"})),
            TurnStatus::Failed => Err(AcpError::new(
                -32603,
                error.unwrap_or_else(|| "the turn failed — see 'stepper daemon logs'".into()),
            )),
        }
    }

    /// Before a folder's first prompt on this connection: when the user never decided about
    /// it and its files ask for what only trust gives, ask the editor (a permission request);
    /// the answer is remembered either way. An editor that cannot answer decides nothing.
    async fn ask_trust(&self, daemon: &DaemonClient, live: &Live) {
        let first = self
            .trust_asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(live.cwd.clone());
        if !first {
            return;
        }
        let Ok(report) = daemon
            .call::<TrustGet>(CwdParams {
                cwd: live.cwd.clone(),
            })
            .await
        else {
            return;
        };
        if report.decided_by.is_some() || report.ignored.is_empty() || report.too_broad.is_some() {
            return;
        }
        let (ours, rx) = self.expect_answer();
        self.request_permission(
            ours,
            &live.id,
            map::trust_question(&report.folder, &report.ignored),
            map::trust_options(),
        );
        let Ok(Ok(answer)) = rx.await else { return };
        let trusted = match answer.pointer("/outcome/optionId").and_then(Value::as_str) {
            Some("trust") => true,
            Some("untrusted") => false,
            _ => return,
        };
        if let Err(e) = daemon
            .call::<TrustSet>(TrustSetParams {
                cwd: live.cwd.clone(),
                trusted,
                all_below: false,
            })
            .await
        {
            eprintln!("stepper acp: trust: {e}");
        }
    }
}

/// A prompt's blocks as the text of one input: text as it is, files the editor embedded
/// in tags the model can tell apart, links as references to read.
fn prompt_text(blocks: &[Value]) -> Result<String, AcpError> {
    let mut text = String::new();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let piece = match kind {
            "text" => block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or_default();
                format!("@{}", uri.strip_prefix("file://").unwrap_or(uri))
            }
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => format!("<file uri=\"{uri}\">\n{body}\n</file>"),
                    None => format!("@{}", uri.strip_prefix("file://").unwrap_or(uri)),
                }
            }
            other => {
                return Err(AcpError::invalid(format!(
                    "stepper takes text, resource links and embedded text resources in a \
                     prompt, not {other:?} (see promptCapabilities)"
                )));
            }
        };
        if !text.is_empty() && !piece.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    if text.trim().is_empty() {
        return Err(AcpError::invalid("the prompt is empty"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_joins_text_links_and_embedded_files() {
        let blocks = [
            json!({"type": "text", "text": "review this"}),
            json!({"type": "resource_link", "uri": "file:///p/src/lib.rs", "name": "lib.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/a.md", "text": "# A"}}),
        ];
        assert_eq!(
            prompt_text(&blocks).unwrap(),
            "review this\n@/p/src/lib.rs\n<file uri=\"file:///p/a.md\">\n# A\n</file>"
        );
        let image = [json!({"type": "image", "data": "", "mimeType": "image/png"})];
        assert_eq!(prompt_text(&image).unwrap_err().code, -32602);
        assert!(prompt_text(&[json!({"type": "text", "text": "  "})]).is_err());
    }
}
