//! `session/subscribe`: the session's events after `afterSeq`, then live, as
//! `session/event` notifications; the subscriber is listed as attached while it lasts.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use jsonrpsee::core::SubscriptionError;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionMessage, SubscriptionSink};
use serde_json::value::RawValue;
use stepper_protocol::event::RawEnvelope;
use stepper_protocol::methods::{SessionSubscribe, SessionSubscribeParams, Subscription};
use stepper_protocol::server::AcceptGate;

use super::{Conn, RpcError, parse};
use crate::hub::replay::{self, Gone, Outlet};
use crate::hub::{HubError, LogError};

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    let registered = m.register_subscription(
        SessionSubscribe::NAME,
        SessionSubscribe::NOTIFICATION,
        SessionSubscribe::UNSUBSCRIBE,
        |params, pending, conn, extensions| async move {
            let gate = extensions.get::<AcceptGate>().cloned();
            subscribe(params, pending, conn, gate).await
        },
    );
    if let Err(e) = registered {
        tracing::error!(error = %e, "subscription registered twice");
    }
}

/// The subscription's life; a deleted session, or a store that stopped taking the session's
/// events, ends it with an error notification (the error a call about the session would get
/// now), so the client knows it is over and why.
async fn subscribe(
    params: Params<'static>,
    pending: PendingSubscriptionSink,
    conn: Arc<Conn>,
    gate: Option<AcceptGate>,
) -> Result<(), SubscriptionError> {
    if !conn.initialized.load(Ordering::Acquire) {
        pending
            .reject(ErrorObjectOwned::from(RpcError::NotInitialized))
            .await;
        return Ok(());
    }
    let p: SessionSubscribeParams = match parse(&params) {
        Ok(p) => p,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    let session = match conn.daemon.hub.get(&p.session_id).await {
        Ok(s) => s,
        Err(e) => {
            pending
                .reject(ErrorObjectOwned::from(RpcError::from(e)))
                .await;
            return Ok(());
        }
    };
    // While the store cannot take the session's events, following it is refused with the
    // reason: nothing new can be seen until the store writes again.
    if let Some(why) = session.log.trouble() {
        let error = HubError::Log(LogError::Unavailable(why.to_string()));
        pending
            .reject(ErrorObjectOwned::from(RpcError::from(error)))
            .await;
        return Ok(());
    }
    let store = conn.daemon.hub.deps().store.clone();
    // A seq past the last committed one was never given to anyone (a seq is given once
    // committed, and never taken back): following from there would hide the events up to it
    // without a word, so it is refused.
    if let Err(e) = check_after_seq(&store, &p.session_id, p.after_seq).await {
        pending.reject(ErrorObjectOwned::from(e)).await;
        return Ok(());
    }
    // Subscribe to live events before reading the store: nothing can fall in between.
    let mut live = session.log.subscribe();
    // Listed as attached before the call returns: a client that subscribed and then asks
    // `session/clients` finds itself.
    let client = conn.attached_client();
    conn.uses.add(&p.session_id, client.kind);
    let attached = session.attach(conn.id, client).await;
    let accepted = {
        // An unsubscribe for this id waits until it is recorded (see `AcceptGate`).
        let _accepting = match &gate {
            Some(gate) => Some(gate.accepting().await),
            None => None,
        };
        pending.accept().await
    };
    let Ok(sink) = accepted else {
        session.detach(attached).await;
        return Ok(());
    };
    let delivery = conn.daemon.hub.deliveries.open(&p.session_id);
    let from = replay::Start {
        session_id: &p.session_id,
        ended: &session.ended,
        after_seq: p.after_seq,
        skip_finished_deltas: p.skip_finished_deltas,
        trouble: session.log.watch_trouble(),
    };
    let sink = Sink {
        sink,
        batch: p.batch,
    };
    let ended = replay::follow(&store, from, &mut live, &sink, &delivery).await;
    session.detach(attached).await;
    let error = match ended {
        replay::Ended::Deleted => HubError::NotFound(p.session_id),
        replay::Ended::StoreTrouble(why) => HubError::Log(LogError::Unavailable(why.to_string())),
        replay::Ended::Gone | replay::Ended::Stopped => return Ok(()),
    };
    let said = error.to_string();
    let error = ErrorObjectOwned::from(RpcError::from(error));
    match serde_json::value::to_raw_value(&error) {
        Ok(json) => Err(SubscriptionError::from_json(json)),
        Err(_) => Err(SubscriptionError::from(said)),
    }
}

/// `afterSeq` names a seq the session has committed, or 0.
async fn check_after_seq(
    store: &stepper_store::Store,
    session_id: &str,
    after_seq: u64,
) -> Result<(), RpcError> {
    if after_seq == 0 {
        return Ok(());
    }
    let last = store
        .session(session_id)
        .await?
        .ok_or_else(|| HubError::NotFound(session_id.to_string()))?
        .last_seq;
    if after_seq > last {
        return Err(RpcError::InvalidParams(format!(
            "afterSeq {after_seq} is past the last event of session {session_id} (seq {last}): \
             subscribe with the last seq you handled, or 0 for the whole log"
        )));
    }
    Ok(())
}

/// A jsonrpsee subscription as the place events go: one notification per event, or per
/// batch when the client asked for arrays.
struct Sink {
    sink: SubscriptionSink,
    batch: bool,
}

impl Outlet for Sink {
    async fn send(&self, events: &[&RawEnvelope]) -> Result<(), Gone> {
        if self.batch {
            // The events' text copied into one array, not decoded.
            let array: Vec<&RawValue> = events.iter().map(|e| e.as_raw_value()).collect();
            let raw = serde_json::value::to_raw_value(&array).map_err(|_| Gone)?;
            return self
                .sink
                .send(SubscriptionMessage::from(raw))
                .await
                .map_err(|_| Gone);
        }
        for event in events {
            self.sink
                .send(SubscriptionMessage::from(event.to_raw_value()))
                .await
                .map_err(|_| Gone)?;
        }
        Ok(())
    }

    async fn closed(&self) {
        self.sink.closed().await;
    }
}
