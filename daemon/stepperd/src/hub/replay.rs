//! Fan-out beside the event log: a subscriber gets the session's events after the seq it
//! names — from the store first, then live — in order, without gaps or repeats, each as the
//! JSON text that was committed. A subscriber that falls behind the live buffer catches up
//! from the store; it never slows the writer or anyone else.
//!
//! *Server-side lag is healed in the daemon.* DESIGN.md has a lagging subscription end with a lag
//! reason and the client resubscribe. The daemon instead catches the subscription up from the store
//! when its broadcast receiver lags: same guarantee, one round trip fewer. Client- side lag
//! (jsonrpsee's per-subscription buffer) still ends the subscription, and `EventStream`
//! resubscribes.
//!
//! *Arrays of events, asked for.* jsonrpsee writes and flushes one socket message per notification,
//! which capped 8 subscribers at ~25k events/s each. A subscription that asks for `batch` gets
//! whatever is ready together in one notification (up to 256 events / 1 MiB): the same events and
//! bytes, ~6x the throughput. One event per notification stays the default for clients written from
//! PROTOCOL.md alone.
//!
//! *History for a view skips what a later event repeats.* `skipFinishedDeltas` leaves out the text,
//! reasoning and tool-output pieces of completed turns (their `MessageCompleted` and
//! `ToolCallFinished` carry the text); the TUI attaches that way, so a session of 100k events shows
//! in ~60 events. Interrupted and failed turns keep every piece: they may have no finished message
//! to stand for them.
//!
//! What is ready together goes out together: one notification per array for clients that ask for
//! arrays (`batch`). [`Deliveries`] records how far each subscription has sent, so a stopping
//! daemon lets every client receive the end of its turn before the connections close.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use stepper_protocol::event::RawEnvelope;
use stepper_protocol::session::SessionId;
use stepper_store::Store;
use tokio::sync::broadcast::{
    self,
    error::{RecvError, TryRecvError},
};

use super::log::Published;

/// Events read from the store per query while replaying.
const REPLAY_PAGE: u32 = 1000;
/// Text read from the store per query while replaying, past the first event.
const REPLAY_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// The most events handed to an outlet at once.
pub const BATCH_EVENTS: usize = 256;
/// The most event text handed to an outlet at once, past the first event.
pub const BATCH_BYTES: usize = 1024 * 1024;

/// Where a subscription's events go. `send` gets consecutive events in seq order (at most
/// [`BATCH_EVENTS`]), and fails once the client is gone.
pub trait Outlet {
    fn send(&self, events: &[&RawEnvelope]) -> impl Future<Output = Result<(), Gone>> + Send;
    /// Resolves when the client has gone (or unsubscribed).
    fn closed(&self) -> impl Future<Output = ()> + Send;
}

/// The client went away, or the store could not be read.
#[derive(Debug)]
pub struct Gone;

/// Where a subscription starts and what its reading back from the store leaves out.
pub struct Start<'a> {
    pub session_id: &'a str,
    /// Fired when the session is deleted: the subscription ends.
    pub ended: &'a tokio_util::sync::CancellationToken,
    pub after_seq: u64,
    /// Leave out the streamed pieces of completed turns (see `SessionSubscribeParams`).
    pub skip_finished_deltas: bool,
    /// The log's trouble: when the store stops taking its events, the subscription ends
    /// with the reason (see `log.rs`).
    pub trouble: tokio::sync::watch::Receiver<super::log::Trouble>,
}

/// Why a subscription ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The client went (or unsubscribed), or the store could not be read.
    Gone,
    /// The session was deleted.
    Deleted,
    /// The daemon is stopping.
    Stopped,
    /// The store stopped taking the session's events; the reason says why and what to do.
    StoreTrouble(std::sync::Arc<str>),
}

/// Send the session's events after `from.after_seq`, then follow it live, until the client
/// goes, the session is deleted, the store stops taking its events (after everything it
/// took is sent) or the writer ends (the daemon stops). `live` must have been
/// subscribed before this is called, so that nothing falls between the store and the
/// broadcast.
pub async fn follow(
    store: &Store,
    from: Start<'_>,
    live: &mut broadcast::Receiver<Published>,
    outlet: &impl Outlet,
    delivery: &Delivery,
) -> Ended {
    let Start {
        session_id,
        ended,
        after_seq,
        skip_finished_deltas: skip,
        mut trouble,
    } = from;
    let mut last = after_seq;
    if catch_up(store, session_id, skip, outlet, &mut last)
        .await
        .is_err()
    {
        return Ended::Gone;
    }
    delivery.delivered(last);
    // Trouble that started before the subscription (or while it caught up) ends it now.
    let already = trouble.borrow_and_update().clone();
    if let Some(why) = already {
        let _ = catch_up(store, session_id, skip, outlet, &mut last).await;
        delivery.delivered(last);
        return Ended::StoreTrouble(why);
    }
    loop {
        let received = tokio::select! {
            () = outlet.closed() => return Ended::Gone,
            () = ended.cancelled() => return Ended::Deleted,
            r = live.recv() => r,
            changed = trouble.changed() => {
                let why = trouble.borrow_and_update().clone();
                match (changed, why) {
                    (Ok(()), Some(why)) => {
                        // Everything stored goes first: the client resumes from its end.
                        let _ = catch_up(store, session_id, skip, outlet, &mut last).await;
                        delivery.delivered(last);
                        return Ended::StoreTrouble(why);
                    }
                    (Ok(()), None) => continue,
                    // The writer ended: the daemon is shutting down.
                    (Err(_), _) => return Ended::Stopped,
                }
            }
        };
        let sent = match received {
            Ok(published) => {
                if published.seq <= last {
                    continue;
                }
                if published.seq == last + 1 {
                    // Whatever else is ready goes along, in one message where the outlet
                    // can: one write instead of one per event.
                    let (batch, behind) = ready_after(published, live);
                    let events: Vec<&RawEnvelope> = batch.iter().map(|p| &*p.json).collect();
                    let sent = outlet.send(&events).await;
                    if let (Ok(()), Some(p)) = (&sent, batch.last()) {
                        last = p.seq;
                    }
                    match sent {
                        Ok(()) if behind => {
                            catch_up(store, session_id, skip, outlet, &mut last).await
                        }
                        other => other,
                    }
                } else {
                    catch_up(store, session_id, skip, outlet, &mut last).await
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(session = %session_id, missed, "subscriber lagged; catching up from the store");
                catch_up(store, session_id, skip, outlet, &mut last).await
            }
            // The writer ended: the daemon is shutting down.
            Err(RecvError::Closed) => return Ended::Stopped,
        };
        if sent.is_err() {
            return Ended::Gone;
        }
        delivery.delivered(last);
    }
}

/// `first` and the events right behind it that are already published, in seq order; and
/// whether the receiver fell behind meanwhile (then the rest comes from the store).
fn ready_after(
    first: Published,
    live: &mut broadcast::Receiver<Published>,
) -> (Vec<Published>, bool) {
    let mut bytes = first.json.get().len();
    let mut next = first.seq + 1;
    let mut batch = vec![first];
    while batch.len() < BATCH_EVENTS && bytes < BATCH_BYTES {
        match live.try_recv() {
            Ok(p) if p.seq < next => {}
            Ok(p) if p.seq == next => {
                bytes += p.json.get().len();
                next += 1;
                batch.push(p);
            }
            // A gap, or events dropped for this receiver: the store has them.
            Ok(_) | Err(TryRecvError::Lagged(_)) => return (batch, true),
            Err(TryRecvError::Empty | TryRecvError::Closed) => break,
        }
    }
    (batch, false)
}

/// Send what the store has after `last`, page by page, up to its end.
async fn catch_up(
    store: &Store,
    session_id: &str,
    skip_finished_deltas: bool,
    outlet: &impl Outlet,
    last: &mut u64,
) -> Result<(), Gone> {
    let skipped = if skip_finished_deltas {
        match store.completed_turns(session_id).await {
            Ok(turns) => turns,
            Err(e) => {
                tracing::error!(session = %session_id, error = %e, "replay failed");
                return Err(Gone);
            }
        }
    } else {
        Vec::new()
    };
    loop {
        let page = match store
            .events_after_filtered(session_id, *last, REPLAY_PAGE, REPLAY_PAGE_BYTES, &skipped)
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
        let mut rest = page.as_slice();
        while !rest.is_empty() {
            let mut take = 0;
            let mut bytes = 0;
            while take < rest.len() && take < BATCH_EVENTS && (take == 0 || bytes < BATCH_BYTES) {
                bytes += rest[take].1.get().len();
                take += 1;
            }
            let (chunk, after) = rest.split_at(take);
            let events: Vec<&RawEnvelope> = chunk.iter().map(|(_, e)| e).collect();
            outlet.send(&events).await?;
            if let Some((seq, _)) = chunk.last() {
                *last = *seq;
            }
            rest = after;
        }
    }
}

/// How far each open subscription has sent its session's events, so that a stopping daemon
/// lets every client receive the end of its turn before the connections close.
#[derive(Default)]
pub struct Deliveries {
    next: AtomicU64,
    open: Mutex<HashMap<u64, (SessionId, Arc<AtomicU64>)>>,
}

/// One subscription's entry; removed when dropped. Marking progress is one atomic store,
/// not a lock: it happens for every event sent.
pub struct Delivery {
    id: u64,
    sent: Arc<AtomicU64>,
    registry: Arc<Deliveries>,
}

impl Deliveries {
    fn open_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SessionId, Arc<AtomicU64>)>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn open(self: &Arc<Self>, session_id: &str) -> Delivery {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let sent = Arc::new(AtomicU64::new(0));
        self.open_map()
            .insert(id, (session_id.to_string(), Arc::clone(&sent)));
        Delivery {
            id,
            sent,
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
                .filter(|(session, sent)| {
                    targets
                        .get(session)
                        .is_some_and(|t| sent.load(Ordering::Acquire) < *t)
                })
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
        self.sent.store(seq, Ordering::Release);
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.registry.open_map().remove(&self.id);
    }
}
