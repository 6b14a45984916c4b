//! A session's event log: persist, then publish.
//!
//! One writer task per session numbers events, commits them in batches and only then
//! publishes them. Batches form by themselves: while one commit (an fsync) runs, the events
//! that arrive queue up and go in the next. Nothing is published that a crash could take back,
//! and nobody waits for a slow subscriber: the broadcast drops what a laggard missed, and the
//! laggard reads it back from the store.
//!
//! **A store that cannot write loses nothing and hangs nobody.** The session's writer keeps what it
//! accepted in a backlog (unnumbered, unseen) and tries again with a growing pause (100 ms to 2 s,
//! and at once for a waited append) until the store takes it; a waited append (a submit) is refused
//! with `storeUnavailable` and dropped, so a client is never told something is stored that is not.
//! While the log is in trouble its subscriptions end with the reason, new ones are refused, the
//! running turn is interrupted and ends `failed` with the reason, and no queued input starts a
//! turn; all of it undoes itself at the first commit that succeeds.
//!
//! *Group commit, with a short linger.* The writer takes whatever queued while the previous commit
//! ran (up to 512 events). A batch nobody waits on (no submit, no flush) waits up to 1 ms for what
//! follows before it commits: on a short turn `TurnStarted`, the streamed pieces and the end of the
//! turn share one or two fsyncs instead of three. A batch someone waits on commits at once.
//!
//! *Events are sent as they were committed.* The writer encodes each event once; the payload stored
//! is the text every subscriber gets, live or replayed, and export sends stored text without
//! decoding it (`RawEnvelope`). Decoding and encoding again is not neutral: serde_json reads some
//! floats back one unit off (`costUsd` 0.00009599999999999999 came back 0.000096).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use stepper_protocol::event::RawEnvelope;
use stepper_protocol::{AppEvent, EventEnvelope};
use stepper_store::{ContextRows, Encoded, Store, now_ms};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::task::TaskTracker;

use super::transcript::TranscriptWriter;

/// Events waiting for the writer. When full, `append` waits: a producer that outruns the
/// disk slows down rather than lose events or grow without bound.
const QUEUE: usize = 4096;
/// The most events committed in one transaction.
const MAX_BATCH: usize = 512;
/// Published events kept for subscribers that fall behind before they must catch up from the
/// store.
const LIVE_BUFFER: usize = 4096;
/// Attempts at committing a batch somebody waits on before they are told it failed.
const COMMIT_ATTEMPTS: u32 = 3;
/// The pause before the first attempt at the backlog after a failure, doubled after each
/// failed one up to [`MAX_RETRY_PAUSE`].
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(100);
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(2);
/// The most events the backlog holds; past it, appends wait for room (a producer slows
/// down rather than lose events or grow without bound). The session's turn ends when the
/// trouble starts, so little more comes.
const MAX_BACKLOG: usize = 100_000;
/// How long a writer whose every handle is gone (the daemon stopping) keeps trying to store
/// its backlog.
const LAST_TRIES: Duration = Duration::from_secs(5);
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
    /// The events could not be encoded; nothing of them was stored.
    #[error("the session's events could not be stored: {0}")]
    Failed(String),
    /// The store cannot write right now; the message says why and what to do. The same
    /// call may succeed later.
    #[error("{0}")]
    Unavailable(String),
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

/// An event waiting in the backlog: nobody waits on it, nobody has seen it.
struct Pending {
    turn: Option<u32>,
    agent: Option<String>,
    event: AppEvent,
    context: Vec<ContextRows>,
}

/// Why the store cannot write, as people are told: what happened and what to do.
pub type Trouble = Option<Arc<str>>;

/// The handle producers and subscribers share. Cloning it is cheap.
#[derive(Clone)]
pub struct EventLog {
    queue: mpsc::Sender<Append>,
    live: broadcast::Sender<Published>,
    /// Set while the store cannot write this log's events.
    trouble: watch::Receiver<Trouble>,
    /// Appends queued and not yet handled by the writer.
    outstanding: Arc<AtomicUsize>,
}

impl EventLog {
    /// Start the writer of `session_id`, whose last committed seq is `last_seq`. The writer
    /// ends when every handle is dropped, after committing what was queued.
    pub fn spawn(store: Store, session_id: String, last_seq: u64, tasks: &TaskTracker) -> EventLog {
        EventLog::spawn_with(store, session_id, last_seq, tasks, None)
    }

    /// [`EventLog::spawn`], its committed events also written to the session's transcript.
    pub fn spawn_with(
        store: Store,
        session_id: String,
        last_seq: u64,
        tasks: &TaskTracker,
        transcript: Option<TranscriptWriter>,
    ) -> EventLog {
        let (queue, rx) = mpsc::channel(QUEUE);
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        let (trouble_tx, trouble) = watch::channel(None);
        let outstanding = Arc::new(AtomicUsize::new(0));
        let writer = Writer {
            store,
            session_id,
            last_seq,
            live: live.clone(),
            trouble: trouble_tx,
            backlog: Vec::new(),
            pause: FIRST_RETRY_PAUSE,
            next_try: tokio::time::Instant::now(),
            outstanding: Arc::clone(&outstanding),
            transcript,
        };
        tasks.spawn(writer.run(rx));
        EventLog {
            queue,
            live,
            trouble,
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

    /// Everything appended so far has been committed (or has failed) and published, and
    /// nothing waits in the backlog.
    pub fn is_settled(&self) -> bool {
        self.outstanding.load(Ordering::SeqCst) == 0 && self.trouble.borrow().is_none()
    }

    /// Why the store cannot write this log's events right now; `None` while it can.
    pub fn trouble(&self) -> Option<Arc<str>> {
        self.trouble.borrow().clone()
    }

    /// Follows [`EventLog::trouble`] as it comes and goes.
    pub fn watch_trouble(&self) -> watch::Receiver<Trouble> {
        self.trouble.clone()
    }

    /// Committed events from now on. Subscribe before reading the store, then skip what the
    /// store already gave: no event falls between the two.
    pub fn subscribe(&self) -> broadcast::Receiver<Published> {
        self.live.subscribe()
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
    trouble: watch::Sender<Trouble>,
    /// Events that could not be stored yet, in order; empty unless in trouble.
    backlog: Vec<Pending>,
    /// The pause before the next attempt at the backlog.
    pause: Duration,
    next_try: tokio::time::Instant,
    outstanding: Arc<AtomicUsize>,
    /// The session's transcript for hooks, written after each commit.
    transcript: Option<TranscriptWriter>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Append>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut open = true;
        let mut closed_at = None;
        loop {
            if self.trouble.borrow().is_none() {
                if rx.recv_many(&mut batch, MAX_BATCH).await == 0 {
                    break;
                }
                // A batch someone waits on (a submit, a flush) or that ends a turn goes at
                // once; any other lingers briefly for what follows it.
                let deadline = tokio::time::Instant::now() + LINGER;
                while batch.len() < MAX_BATCH && !commit_now(&batch) {
                    let room = MAX_BATCH - batch.len();
                    let more = rx.recv_many(&mut batch, room);
                    match tokio::time::timeout_at(deadline, more).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            } else {
                // In trouble: the backlog is tried again when its pause is over, or at once
                // for an append somebody waits on (space may have come back).
                let next_try = self.next_try;
                if !open {
                    let since: &mut tokio::time::Instant =
                        closed_at.get_or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() > LAST_TRIES {
                        tracing::error!(
                            session = %self.session_id,
                            events = self.backlog.len(),
                            "the daemon stops with events the store could not take; they are lost, \
                             and no client was told they were stored"
                        );
                        break;
                    }
                    tokio::time::sleep_until(next_try).await;
                } else if self.backlog.len() >= MAX_BACKLOG {
                    tokio::time::sleep_until(next_try).await;
                } else {
                    tokio::select! {
                        n = rx.recv_many(&mut batch, MAX_BATCH) => open = n > 0,
                        () = tokio::time::sleep_until(next_try) => {}
                    }
                }
                if !commit_now(&batch) && tokio::time::Instant::now() < self.next_try {
                    // Nobody waits on these: they join the backlog for the next attempt.
                    let handled = batch.len();
                    self.park(&mut batch);
                    self.outstanding.fetch_sub(handled, Ordering::SeqCst);
                    continue;
                }
            }
            let handled = batch.len();
            self.commit(&mut batch).await;
            self.outstanding.fetch_sub(handled, Ordering::SeqCst);
        }
    }

    /// Move the events of `batch` to the backlog (it holds no waiters).
    fn park(&mut self, batch: &mut Vec<Append>) {
        for item in batch.drain(..) {
            if let Append::Event {
                turn,
                agent,
                event,
                context,
                ..
            } = item
            {
                self.backlog.push(Pending {
                    turn,
                    agent,
                    event,
                    context,
                });
            }
        }
    }

    /// Store the backlog and `batch` in one transaction, in that order, then publish them.
    /// When the store cannot write, whoever waits is told so and their events are dropped
    /// (never stored, never seen, and their callers know), and the rest stay in the backlog
    /// for the next attempt.
    async fn commit(&mut self, batch: &mut Vec<Append>) {
        let at = now_ms();
        let first_seq = self.last_seq + 1;
        let mut pending = std::mem::take(&mut self.backlog);
        // Who waits, and on which of `pending` (none: a flush).
        let mut waiting = Vec::new();
        for item in batch.drain(..) {
            match item {
                Append::Event {
                    turn,
                    agent,
                    event,
                    committed,
                    context,
                } => {
                    if let Some(tx) = committed {
                        waiting.push((tx, Some(pending.len())));
                    }
                    pending.push(Pending {
                        turn,
                        agent,
                        event,
                        context,
                    });
                }
                Append::Flush(tx) => waiting.push((tx, None)),
            }
        }
        let mut events: Vec<Encoded> = Vec::with_capacity(pending.len());
        let mut raws: Vec<RawEnvelope> = Vec::with_capacity(pending.len());
        // Each context row with the index in `events` of the event it is stored with.
        let mut contexts: Vec<ContextRows> = Vec::new();
        let mut context_of: Vec<usize> = Vec::new();
        // The index in `events` of each of `pending`; an error for one that cannot encode.
        let mut slots: Vec<Result<usize, String>> = Vec::with_capacity(pending.len());
        for p in pending {
            let envelope = EventEnvelope {
                session_id: self.session_id.clone(),
                seq: first_seq + events.len() as u64,
                at,
                turn: p.turn,
                agent: p.agent,
                event: p.event,
            };
            // Encoded once: the payload stored is the text every subscriber gets.
            match Encoded::new(envelope).and_then(|e| e.raw().map(|raw| (e, raw))) {
                Ok((encoded, raw)) => {
                    for rows in p.context {
                        contexts.push(rows);
                        context_of.push(events.len());
                    }
                    slots.push(Ok(events.len()));
                    events.push(encoded);
                    raws.push(raw);
                }
                Err(e) => {
                    // Only a float that is not a number fails to encode: the event is left
                    // out, and whoever waits on it is told.
                    tracing::error!(session = %self.session_id, error = %e, "an event cannot be encoded; it is left out");
                    slots.push(Err(e.to_string()));
                }
            }
        }
        let attempts = if waiting.is_empty() || self.trouble.borrow().is_some() {
            1
        } else {
            COMMIT_ATTEMPTS
        };
        match self.store_with_retries(&events, &contexts, attempts).await {
            Ok(()) => {
                self.last_seq += events.len() as u64;
                // Before anyone hears of them: a client that saw a turn end, or a hook run
                // after a flush, finds the transcript holding it.
                if let Some(transcript) = self.transcript.as_mut() {
                    transcript.record(events.iter().map(|e| &e.envelope)).await;
                }
                let committed_at = Instant::now();
                for (event, raw) in events.iter().zip(raws) {
                    // No receivers is fine: nobody is watching this session right now.
                    let _ = self.live.send(Published {
                        seq: event.envelope.seq,
                        json: Arc::new(raw),
                        committed_at,
                    });
                }
                self.recovered(events.len());
                for (tx, item) in waiting {
                    let answer = match item.map(|i| &slots[i]) {
                        None => Ok(self.last_seq),
                        Some(Ok(at)) => Ok(first_seq + *at as u64),
                        Some(Err(why)) => Err(LogError::Failed(why.clone())),
                    };
                    // The waiter may have gone (its client left): nothing to tell.
                    let _ = tx.send(answer);
                }
            }
            Err(why) => {
                let error = LogError::Unavailable(why.to_string());
                let mut dropped = vec![false; events.len()];
                for (tx, item) in waiting {
                    if let Some(Ok(at)) = item.map(|i| &slots[i]) {
                        dropped[*at] = true;
                    }
                    let _ = tx.send(Err(error.clone()));
                }
                let mut contexts = contexts.into_iter().zip(context_of).peekable();
                for (at, encoded) in events.into_iter().enumerate() {
                    let mut context = Vec::new();
                    while let Some((rows, _)) = contexts.next_if(|(_, of)| *of == at) {
                        context.push(rows);
                    }
                    if dropped[at] {
                        continue;
                    }
                    let envelope = encoded.envelope;
                    self.backlog.push(Pending {
                        turn: envelope.turn,
                        agent: envelope.agent,
                        event: envelope.event,
                        context,
                    });
                }
                self.in_trouble(why);
            }
        }
    }

    /// `attempts` tries at storing `events`; the error says why the store cannot write.
    async fn store_with_retries(
        &self,
        events: &[Encoded],
        contexts: &[ContextRows],
        attempts: u32,
    ) -> Result<(), Arc<str>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self
                .store
                .append_encoded_with(&self.session_id, events, contexts)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) if attempt < attempts => {
                    tracing::warn!(session = %self.session_id, error = %e, attempt, "commit failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                }
                Err(e) => return Err(self.store.why_not_written(&e).into()),
            }
        }
    }

    fn in_trouble(&mut self, why: Arc<str>) {
        let first = self.trouble.borrow().is_none();
        if first {
            tracing::error!(session = %self.session_id, reason = %why, events = self.backlog.len(), "the store cannot write; the session's events wait");
            self.pause = FIRST_RETRY_PAUSE;
        } else {
            self.pause = (self.pause * 2).min(MAX_RETRY_PAUSE);
        }
        self.next_try = tokio::time::Instant::now() + self.pause;
        if first || self.trouble.borrow().as_deref() != Some(&*why) {
            self.trouble.send_replace(Some(why));
        }
    }

    fn recovered(&mut self, stored: usize) {
        if self.trouble.borrow().is_some() {
            tracing::info!(session = %self.session_id, events = stored, "the store writes again; the waiting events are stored");
            self.trouble.send_replace(None);
        }
    }
}
