//! Fan-out beside the event log: a subscriber gets the session's events after the seq it
//! names — from the store first, then live — in order, without gaps or repeats, each as the
//! JSON text that was committed. A subscriber that falls behind the live buffer catches up
//! from the store; it never slows the writer or anyone else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use stepper_protocol::event::RawEnvelope;
use stepper_protocol::session::SessionId;
use stepper_store::Store;
use tokio::sync::broadcast::{self, error::RecvError};

use super::log::Published;

/// Events read from the store per query while replaying.
const REPLAY_PAGE: u32 = 1000;
/// Text read from the store per query while replaying, past the first event.
const REPLAY_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Where a subscription's events go. `send` fails once the client is gone.
pub trait Outlet {
    fn send(&self, event: &RawEnvelope) -> impl Future<Output = Result<(), Gone>> + Send;
    /// Resolves when the client has gone (or unsubscribed).
    fn closed(&self) -> impl Future<Output = ()> + Send;
}

/// The client went away, or the store could not be read.
#[derive(Debug)]
pub struct Gone;

/// Send the session's events after `after_seq`, then follow it live, until the client goes
/// or the writer ends (the daemon stops). `live` must have been subscribed before this is
/// called, so that nothing falls between the store and the broadcast.
pub async fn follow(
    store: &Store,
    session_id: &str,
    after_seq: u64,
    live: &mut broadcast::Receiver<Published>,
    outlet: &impl Outlet,
    delivery: &Delivery,
) {
    let mut last = after_seq;
    if catch_up(store, session_id, outlet, &mut last)
        .await
        .is_err()
    {
        return;
    }
    delivery.delivered(last);
    loop {
        let received = tokio::select! {
            () = outlet.closed() => return,
            r = live.recv() => r,
        };
        let sent = match received {
            Ok(published) => {
                if published.seq <= last {
                    continue;
                }
                if published.seq == last + 1 {
                    outlet
                        .send(&published.json)
                        .await
                        .map(|()| last = published.seq)
                } else {
                    catch_up(store, session_id, outlet, &mut last).await
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(session = %session_id, missed, "subscriber lagged; catching up from the store");
                catch_up(store, session_id, outlet, &mut last).await
            }
            // The writer ended: the daemon is shutting down.
            Err(RecvError::Closed) => return,
        };
        if sent.is_err() {
            return;
        }
        delivery.delivered(last);
    }
}

async fn catch_up(
    store: &Store,
    session_id: &str,
    outlet: &impl Outlet,
    last: &mut u64,
) -> Result<(), Gone> {
    loop {
        let page = match store
            .events_after_raw(session_id, *last, REPLAY_PAGE, REPLAY_PAGE_BYTES)
            .await
        {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(session = %session_id, error = %e, "replay failed");
                return Err(Gone);
            }
        };
        if page.is_empty() {
            return Ok(());
        }
        for (seq, event) in &page {
            outlet.send(event).await?;
            *last = *seq;
        }
    }
}

/// How far each open subscription has sent its session's events, so that a stopping daemon
/// lets every client receive the end of its turn before the connections close.
#[derive(Default)]
pub struct Deliveries {
    next: std::sync::atomic::AtomicU64,
    open: Mutex<HashMap<u64, (SessionId, u64)>>,
}

/// One subscription's entry; removed when dropped.
pub struct Delivery {
    id: u64,
    registry: Arc<Deliveries>,
}

impl Deliveries {
    fn open_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SessionId, u64)>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn open(self: &Arc<Self>, session_id: &str) -> Delivery {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.open_map().insert(id, (session_id.to_string(), 0));
        Delivery {
            id,
            registry: Arc::clone(self),
        }
    }

    /// Wait until every open subscription has sent its session up to `targets` (or
    /// `timeout`: a stalled client is not waited for).
    pub async fn wait_delivered(
        &self,
        targets: &HashMap<SessionId, u64>,
        timeout: std::time::Duration,
    ) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let behind = self
                .open_map()
                .values()
                .filter(|(session, seq)| targets.get(session).is_some_and(|t| seq < t))
                .count();
            if behind == 0 || tokio::time::Instant::now() >= deadline {
                if behind > 0 {
                    tracing::warn!(
                        behind,
                        "some subscribers had not received everything at shutdown"
                    );
                }
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

impl Delivery {
    pub fn delivered(&self, seq: u64) {
        if let Some(entry) = self.registry.open_map().get_mut(&self.id) {
            entry.1 = seq;
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.registry.open_map().remove(&self.id);
    }
}
