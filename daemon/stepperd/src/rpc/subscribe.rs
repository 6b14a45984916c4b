//! `session/subscribe`: the session's events after `afterSeq`, then live, as
//! `session/event` notifications; the subscriber is listed as attached while it lasts.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionMessage, SubscriptionSink};
use stepper_protocol::event::RawEnvelope;
use stepper_protocol::methods::{SessionSubscribe, SessionSubscribeParams, Subscription};

use super::{Conn, RpcError, parse};
use crate::hub::replay::{self, Gone, Outlet};

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    let registered = m.register_subscription(
        SessionSubscribe::NAME,
        SessionSubscribe::NOTIFICATION,
        SessionSubscribe::UNSUBSCRIBE,
        |params, pending, conn, _| async move { subscribe(params, pending, conn).await },
    );
    if let Err(e) = registered {
        tracing::error!(error = %e, "subscription registered twice");
    }
}

async fn subscribe(params: Params<'static>, pending: PendingSubscriptionSink, conn: Arc<Conn>) {
    if !conn.initialized.load(Ordering::Acquire) {
        pending
            .reject(ErrorObjectOwned::from(RpcError::NotInitialized))
            .await;
        return;
    }
    let p: SessionSubscribeParams = match parse(&params) {
        Ok(p) => p,
        Err(e) => return pending.reject(e).await,
    };
    let session = match conn.daemon.hub.get(&p.session_id).await {
        Ok(s) => s,
        Err(e) => {
            return pending
                .reject(ErrorObjectOwned::from(RpcError::from(e)))
                .await;
        }
    };
    // Subscribe to live events before reading the store: nothing can fall in between.
    let mut live = session.log.subscribe();
    let store = conn.daemon.hub.deps().store.clone();
    let Ok(sink) = pending.accept().await else {
        return;
    };
    let delivery = conn.daemon.hub.deliveries.open(&p.session_id);
    let attached = session.attach(conn.attached_client()).await;
    replay::follow(
        &store,
        &p.session_id,
        p.after_seq,
        &mut live,
        &Sink(sink),
        &delivery,
    )
    .await;
    session.detach(attached).await;
}

/// A jsonrpsee subscription as the place events go.
struct Sink(SubscriptionSink);

impl Outlet for Sink {
    async fn send(&self, event: &RawEnvelope) -> Result<(), Gone> {
        self.0
            .send(SubscriptionMessage::from(event.to_raw_value()))
            .await
            .map_err(|_| Gone)
    }

    async fn closed(&self) {
        self.0.closed().await;
    }
}
