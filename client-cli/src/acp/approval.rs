//! Approvals put to the editor (`session/request_permission`): the editor's answer goes to
//! the daemon, where the first answer from any client wins; one answered elsewhere is
//! withdrawn from the editor.
//!
//! An approval answered by another client withdraws the editor's question with `$/cancel_request`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use stepper_protocol::ApprovalDecision;
use stepper_protocol::methods::{SessionApprove, SessionApproveParams};
use tokio::sync::oneshot;

use super::{Conn, Live, map};

impl Conn {
    /// A new id for a request to the editor, and where its answer will arrive.
    pub(super) fn expect_answer(&self) -> (u64, oneshot::Receiver<Result<Value, Value>>) {
        let ours = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ours, tx);
        (ours, rx)
    }

    /// Ask the editor `session/request_permission` as request `ours`.
    pub(super) fn request_permission(
        &self,
        ours: u64,
        session_id: &str,
        tool_call: Value,
        options: Value,
    ) {
        self.send(json!({
            "jsonrpc": "2.0",
            "id": ours,
            "method": "session/request_permission",
            "params": {"sessionId": session_id, "toolCall": tool_call, "options": options},
        }));
    }

    /// Put an approval to the editor; its answer goes to the daemon (the first answer from
    /// any client wins).
    pub(super) async fn ask(
        self: Arc<Self>,
        live: Arc<Live>,
        request_id: String,
        tool_call: Value,
    ) {
        let (ours, rx) = self.expect_answer();
        live.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request_id.clone(), ours);
        self.request_permission(ours, &live.id, tool_call, map::permission_options());
        // Dropped: answered elsewhere (the request was withdrawn) or the editor left.
        let Ok(answer) = rx.await else { return };
        live.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&request_id);
        let decision = match &answer {
            Ok(result) => match result.pointer("/outcome/outcome").and_then(Value::as_str) {
                Some("selected") => {
                    match result.pointer("/outcome/optionId").and_then(Value::as_str) {
                        Some("allow") => ApprovalDecision::Allow,
                        Some("always") => ApprovalDecision::AllowAlways,
                        _ => ApprovalDecision::Deny,
                    }
                }
                // Cancelled: the editor cancelled the turn, or gave up on the question.
                _ => ApprovalDecision::Deny,
            },
            Err(error) => {
                // The editor could not ask: another client still may.
                eprintln!("stepper acp: the editor did not answer an approval: {error}");
                return;
            }
        };
        let Ok(daemon) = self.daemon().await else {
            return;
        };
        if let Err(e) = daemon
            .call::<SessionApprove>(SessionApproveParams {
                session_id: live.id.clone(),
                request_id,
                decision,
            })
            .await
            // Answered by someone else a moment earlier: theirs stands.
            && e.code() != Some(-32053)
        {
            eprintln!("stepper acp: approve: {e}");
        }
    }

    /// An approval was answered elsewhere: withdraw the editor's question.
    pub(super) fn withdraw(&self, live: &Live, request_id: &str) {
        let ours = live
            .asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(request_id);
        let Some(ours) = ours else { return };
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ours);
        self.notify("$/cancel_request", json!({"requestId": ours}));
    }
}
