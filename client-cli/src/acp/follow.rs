//! Following a session: one subscription per session the editor opened or loaded, whose
//! events become `session/update`s (through `map`'s `View`), approvals put to the editor,
//! and turn ends handed to the prompts waiting for them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use stepper_protocol::client::EventStream;
use tokio::sync::watch;

use super::map::{Effect, View};
use super::{AcpError, Conn, Live, Turns};

impl Conn {
    pub(super) fn live(&self, id: &str) -> Result<Arc<Live>, AcpError> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| {
                AcpError::new(
                    -32002,
                    format!("session {id} is not open here: session/new or session/load it first"),
                )
            })
    }

    /// Follow a session's events from `events`: updates to the editor, approvals put to it,
    /// turn ends to the prompts waiting for them. Events up to `replay_to` are history.
    pub(super) async fn follow(
        self: &Arc<Self>,
        id: &str,
        cwd: &str,
        model: &str,
        events: EventStream,
        replay_to: u64,
    ) -> Arc<Live> {
        let window = match self.daemon().await {
            Ok(daemon) => {
                crate::attach::context_window(daemon, model, std::path::Path::new(cwd)).await
            }
            Err(_) => None,
        };
        let live = Arc::new(Live {
            id: id.to_string(),
            cwd: cwd.to_string(),
            view: Mutex::new(View::new(cwd, window, &self.name)),
            turns: Mutex::new(Turns::default()),
            asks: Mutex::new(HashMap::new()),
            handled: watch::channel(0).0,
            pump: Mutex::new(None),
        });
        let pump = tokio::spawn(pump(
            Arc::clone(self),
            Arc::downgrade(&live),
            events,
            replay_to,
        ));
        *live.pump.lock().unwrap_or_else(|p| p.into_inner()) = Some(pump);
        // A session loaded again replaces its old follower.
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), Arc::clone(&live));
        live
    }
}

/// The event loop of one followed session.
async fn pump(
    conn: Arc<Conn>,
    live: std::sync::Weak<Live>,
    mut events: EventStream,
    replay_to: u64,
) {
    // Approvals seen in the history wait until it is all read: most were answered since.
    let mut deferred: Vec<(String, Value)> = Vec::new();
    let mut replaying = replay_to > 0;
    while let Some(next) = events.next().await {
        let Some(live) = live.upgrade() else { return };
        let envelope = match next {
            Ok(envelope) => envelope,
            Err(e) => {
                eprintln!("stepper acp: session {}: {e}", live.id);
                break;
            }
        };
        let seq = envelope.seq;
        let (updates, effects) = {
            let mut view = live.view.lock().unwrap_or_else(|p| p.into_inner());
            view.replaying = replaying;
            view.apply(&envelope)
        };
        for update in updates {
            conn.notify(
                "session/update",
                json!({"sessionId": live.id, "update": update}),
            );
        }
        for effect in effects {
            match effect {
                Effect::TurnStarted { input, own } => {
                    live.turns.lock().unwrap_or_else(|p| p.into_inner()).current =
                        Some((input, own));
                }
                Effect::TurnFinished { status, error } => {
                    let mut turns = live.turns.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some((input, own)) = turns.current.take() {
                        match turns.waiters.remove(&input) {
                            Some(waiter) => {
                                let _ = waiter.send((status, error));
                            }
                            None if own => {
                                turns.ended.insert(input, (status, error));
                            }
                            None => {}
                        }
                    }
                }
                Effect::Ask {
                    request_id,
                    tool_call,
                } => {
                    if replaying {
                        deferred.push((request_id, tool_call));
                    } else {
                        tokio::spawn(Arc::clone(&conn).ask(
                            Arc::clone(&live),
                            request_id,
                            tool_call,
                        ));
                    }
                }
                Effect::Answered(request_id) => {
                    deferred.retain(|(id, _)| *id != request_id);
                    conn.withdraw(&live, &request_id);
                }
            }
        }
        if replaying && seq >= replay_to {
            replaying = false;
            for (request_id, tool_call) in deferred.drain(..) {
                tokio::spawn(Arc::clone(&conn).ask(Arc::clone(&live), request_id, tool_call));
            }
        }
        live.handled.send_replace(seq);
    }
    // The daemon went away: prompts waiting on this session learn it (their senders drop).
    if let Some(live) = live.upgrade() {
        live.turns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .waiters
            .clear();
    }
}
