//! A session's event log: persist, then publish.
//!
//! One writer task per session numbers events, commits them in batches and only then
//! publishes them. Batches form by themselves: while one commit (an fsync) runs, the events
//! that arrive queue up and go in the next. Nothing is published that a crash could take back,
//! and nobody waits for a slow subscriber: the broadcast drops what a laggard missed, and the
//! laggard reads it back from the store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stepper_protocol::event::RawEnvelope;
use stepper_protocol::{AppEvent, EventEnvelope};
use stepper_store::{ContextRows, Encoded, Store, now_ms};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::task::TaskTracker;

/// Events waiting for the writer. When full, `append` waits: a producer that outruns the
/// disk slows down rather than lose events or grow without bound.
const QUEUE: usize = 4096;
/// The most events committed in one transaction.
const MAX_BATCH: usize = 512;
/// Published events kept for subscribers that fall behind before they must catch up from the
/// store.
const LIVE_BUFFER: usize = 4096;
/// Attempts at committing a batch before the log is declared failed.
const COMMIT_ATTEMPTS: u32 = 3;
/// How long a batch nobody waits on may wait for company before it is committed. Every
/// commit is an fsync; on a short turn this folds `TurnStarted`, the streamed pieces and
/// the end of the turn into one or two commits instead of three. A turn's end never waits.
const LINGER: Duration = Duration::from_millis(1);

/// A committed event, as subscribers receive it: encoded once, for all of them.
#[derive(Debug, Clone)]
pub struct Published {
    pub seq: u64,
    /// The envelope's JSON, byte for byte what a replay from the store sends.
    pub json: Arc<RawEnvelope>,
    /// When its transaction committed (for latency measurement).
    pub committed_at: Instant,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum LogError {
    #[error("the session's event log failed and takes no more events: {0}")]
    Failed(String),
    #[error("the session's event log is closed")]
    Closed,
}

enum Append {
    Event {
        turn: Option<u32>,
        /// The agent inside the turn that produced it (none: the turn's own).
        agent: Option<String>,
        event: AppEvent,
        committed: Option<oneshot::Sender<Result<u64, LogError>>>,
        /// Context rows committed in the same transaction as the event.
        context: Vec<ContextRows>,
    },
    Flush(oneshot::Sender<Result<u64, LogError>>),
}

/// The handle producers and subscribers share. Cloning it is cheap.
#[derive(Clone)]
pub struct EventLog {
    queue: mpsc::Sender<Append>,
    live: broadcast::Sender<Published>,
    failed: Arc<Mutex<Option<String>>>,
    /// Appends queued and not yet handled by the writer.
    outstanding: Arc<AtomicUsize>,
}

impl EventLog {
    /// Start the writer of `session_id`, whose last committed seq is `last_seq`. The writer
    /// ends when every handle is dropped, after committing what was queued.
    pub fn spawn(store: Store, session_id: String, last_seq: u64, tasks: &TaskTracker) -> EventLog {
        let (queue, rx) = mpsc::channel(QUEUE);
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        let failed = Arc::new(Mutex::new(None));
        let outstanding = Arc::new(AtomicUsize::new(0));
        let writer = Writer {
            store,
            session_id,
            last_seq,
            live: live.clone(),
            failed: Arc::clone(&failed),
            outstanding: Arc::clone(&outstanding),
        };
        tasks.spawn(writer.run(rx));
        EventLog {
            queue,
            live,
            failed,
            outstanding,
        }
    }

    /// Queue an event; it is committed and published shortly. Returns once queued.
    pub async fn append(&self, turn: Option<u32>, event: AppEvent) -> Result<(), LogError> {
        self.enqueue(turn, None, event, None, Vec::new()).await
    }

    /// [`EventLog::append`] for an event of an agent inside the turn (a layer, a worker, a
    /// subagent): its envelope carries `agent`.
    pub async fn append_in(
        &self,
        turn: Option<u32>,
        agent: Option<String>,
        event: AppEvent,
    ) -> Result<(), LogError> {
        self.enqueue(turn, agent, event, None, Vec::new()).await
    }

    /// Queue an event whose commit also stores `context` (a turn's end and its messages):
    /// either both are committed or neither.
    pub async fn append_with_context(
        &self,
        turn: Option<u32>,
        event: AppEvent,
        context: Vec<ContextRows>,
    ) -> Result<(), LogError> {
        self.enqueue(turn, None, event, None, context).await
    }

    /// Queue an event and wait until it is committed; returns its seq.
    pub async fn append_committed(
        &self,
        turn: Option<u32>,
        event: AppEvent,
    ) -> Result<u64, LogError> {
        self.append_committed_in(turn, None, event).await
    }

    /// [`EventLog::append_committed`] for an event of an agent inside the turn.
    pub async fn append_committed_in(
        &self,
        turn: Option<u32>,
        agent: Option<String>,
        event: AppEvent,
    ) -> Result<u64, LogError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(turn, agent, event, Some(tx), Vec::new())
            .await?;
        rx.await.map_err(|_| LogError::Closed)?
    }

    async fn enqueue(
        &self,
        turn: Option<u32>,
        agent: Option<String>,
        event: AppEvent,
        committed: Option<oneshot::Sender<Result<u64, LogError>>>,
        context: Vec<ContextRows>,
    ) -> Result<(), LogError> {
        self.check()?;
        self.send(Append::Event {
            turn,
            agent,
            event,
            committed,
            context,
        })
        .await
    }

    /// Wait until everything queued so far is committed; returns the last seq.
    pub async fn flush(&self) -> Result<u64, LogError> {
        let (tx, rx) = oneshot::channel();
        self.send(Append::Flush(tx)).await?;
        rx.await.map_err(|_| LogError::Closed)?
    }

    async fn send(&self, append: Append) -> Result<(), LogError> {
        // Counted from before it is queued until the writer has handled it; a send that
        // fails or is dropped while waiting for room takes its count back.
        struct Counted<'a>(&'a AtomicUsize, bool);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let mut counted = Counted(&self.outstanding, false);
        self.queue
            .send(append)
            .await
            .map_err(|_| LogError::Closed)?;
        counted.1 = true;
        Ok(())
    }

    /// Everything appended so far has been committed (or has failed) and published.
    pub fn is_settled(&self) -> bool {
        self.outstanding.load(Ordering::SeqCst) == 0
    }

    /// Committed events from now on. Subscribe before reading the store, then skip what the
    /// store already gave: no event falls between the two.
    pub fn subscribe(&self) -> broadcast::Receiver<Published> {
        self.live.subscribe()
    }

    fn check(&self) -> Result<(), LogError> {
        match &*self.failed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(reason) => Err(LogError::Failed(reason.clone())),
            None => Ok(()),
        }
    }
}

/// Whether this batch commits without lingering: someone waits for it, or it ends a turn
/// (nothing follows a turn's end for a while, and its clients wait to see it).
fn commit_now(batch: &[Append]) -> bool {
    batch.iter().any(|a| match a {
        Append::Event {
            committed, event, ..
        } => committed.is_some() || matches!(event, AppEvent::TurnFinished { .. }),
        Append::Flush(_) => true,
    })
}

struct Writer {
    store: Store,
    session_id: String,
    last_seq: u64,
    live: broadcast::Sender<Published>,
    failed: Arc<Mutex<Option<String>>>,
    outstanding: Arc<AtomicUsize>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Append>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
            // A batch someone waits on (a submit, a flush) or that ends a turn goes at once;
            // any other lingers briefly for what follows it.
            let deadline = tokio::time::Instant::now() + LINGER;
            while batch.len() < MAX_BATCH && !commit_now(&batch) {
                let room = MAX_BATCH - batch.len();
                let more = rx.recv_many(&mut batch, room);
                match tokio::time::timeout_at(deadline, more).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            let handled = batch.len();
            self.commit(&mut batch).await;
            self.outstanding.fetch_sub(handled, Ordering::SeqCst);
        }
    }

    async fn commit(&mut self, batch: &mut Vec<Append>) {
        let at = now_ms();
        let first_seq = self.last_seq + 1;
        let mut events: Vec<Encoded> = Vec::with_capacity(batch.len());
        let mut raws: Vec<RawEnvelope> = Vec::with_capacity(batch.len());
        let mut unencodable = None;
        let mut contexts = Vec::new();
        for item in batch.iter_mut() {
            if let Append::Event {
                turn,
                agent,
                event,
                context,
                ..
            } = item
            {
                contexts.append(context);
                // The event moves into its envelope; the placeholder left behind is never read.
                let event = std::mem::replace(
                    event,
                    AppEvent::Notice {
                        message: String::new(),
                    },
                );
                let envelope = EventEnvelope {
                    session_id: self.session_id.clone(),
                    seq: first_seq + events.len() as u64,
                    at,
                    turn: *turn,
                    agent: agent.take(),
                    event,
                };
                // Encoded once: the payload stored is the text every subscriber gets.
                match Encoded::new(envelope).and_then(|e| e.raw().map(|raw| (e, raw))) {
                    Ok((event, raw)) => {
                        events.push(event);
                        raws.push(raw);
                    }
                    Err(e) => unencodable = Some(e),
                }
            }
        }
        let result = if self.is_failed() {
            Err(LogError::Failed("an earlier commit failed".into()))
        } else if let Some(e) = unencodable {
            // Only a float that is not a number can fail to encode; nothing of the batch is
            // written rather than leave a gap in the seqs.
            Err(LogError::Failed(e.to_string()))
        } else {
            self.store_with_retries(&events, &contexts).await
        };
        if result.is_ok() {
            self.last_seq += events.len() as u64;
            let committed_at = Instant::now();
            for (event, raw) in events.iter().zip(raws) {
                // No receivers is fine: nobody is watching this session right now.
                let _ = self.live.send(Published {
                    seq: event.envelope.seq,
                    json: Arc::new(raw),
                    committed_at,
                });
            }
        }
        let mut seq = first_seq;
        for item in batch.drain(..) {
            let (tx, value) = match item {
                Append::Event { committed, .. } => {
                    seq += 1;
                    (committed, seq - 1)
                }
                Append::Flush(tx) => (Some(tx), self.last_seq),
            };
            if let Some(tx) = tx {
                // The waiter may have gone (its client left): nothing to tell.
                let _ = tx.send(result.clone().map(|()| value));
            }
        }
    }

    async fn store_with_retries(
        &self,
        events: &[Encoded],
        contexts: &[ContextRows],
    ) -> Result<(), LogError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self
                .store
                .append_encoded_with(&self.session_id, events, contexts)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) if attempt < COMMIT_ATTEMPTS => {
                    tracing::warn!(session = %self.session_id, error = %e, attempt, "commit failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                }
                Err(e) => {
                    tracing::error!(session = %self.session_id, error = %e, "commit failed; the log stops");
                    let reason = e.to_string();
                    *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.clone());
                    return Err(LogError::Failed(reason));
                }
            }
        }
    }

    fn is_failed(&self) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}
