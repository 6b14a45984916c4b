//! Persist-then-publish: events per second through one session's writer (commit in SQLite
//! with synchronous=FULL, then broadcast) to 1 and to 8 subscribers, and the latency from a
//! batch's commit to each subscriber receiving its events.
//!
//! For reference, the same run also appends the same events straight to the store in
//! batches of the writer's size (no channel, no publish): the ratio is what the writer costs.
//!
//! `cargo bench -p stepperd --bench event_log`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, EventEnvelope};
use stepper_store::{NewSession, Store, now_ms};
use stepperd::hub::EventLog;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::task::TaskTracker;

const EVENTS: u64 = 50_000;

fn delta() -> AppEvent {
    AppEvent::TextDelta {
        text: "token ".into(),
    }
}

async fn new_store(dir: &std::path::Path, id: &str) -> Store {
    let store = Store::open(&dir.join("bench.db")).await.unwrap();
    let new = NewSession {
        id: id.into(),
        title: None,
        cwd: "/".into(),
        model: "anthropic/m".into(),
        env: Env::new(),
        created_at: now_ms(),
        mode: None,
        sandbox: None,
        instructions: None,
    };
    store.create_session(&new).await.unwrap();
    store
}

struct Run {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    lagged: u64,
}

async fn through_log(subscribers: usize) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), "s").await;
    let tasks = TaskTracker::new();
    let log = EventLog::spawn(store.clone(), "s".into(), 1, &tasks);
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let mut rx = log.subscribe();
        readers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(EVENTS as usize);
            let mut lagged = 0;
            let mut seen = 0;
            while seen < EVENTS {
                match rx.recv().await {
                    Ok(p) => {
                        latencies.push(p.committed_at.elapsed());
                        seen += 1;
                    }
                    Err(RecvError::Lagged(n)) => {
                        lagged += n;
                        seen += n;
                    }
                    Err(RecvError::Closed) => break,
                }
            }
            (latencies, lagged)
        }));
    }
    let start = Instant::now();
    for _ in 0..EVENTS {
        log.append(Some(1), delta()).await.unwrap();
    }
    log.flush().await.unwrap();
    let mut all = Vec::new();
    let mut lagged = 0;
    for r in readers {
        let (lat, lag) = r.await.unwrap();
        all.extend(lat);
        lagged += lag;
    }
    let elapsed = start.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    Run {
        per_sec: EVENTS as f64 / elapsed.as_secs_f64(),
        p50: pct(0.50),
        p99: pct(0.99),
        max: *all.last().unwrap(),
        lagged,
    }
}

async fn store_only() -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), "s").await;
    let start = Instant::now();
    let mut seq = 1;
    let mut batch = Vec::new();
    while seq <= EVENTS {
        batch.clear();
        for _ in 0..512 {
            if seq > EVENTS {
                break;
            }
            seq += 1;
            batch.push(EventEnvelope {
                session_id: "s".into(),
                seq,
                at: now_ms(),
                turn: Some(1),
                agent: None,
                event: delta(),
            });
        }
        store.append_events("s", &batch).await.unwrap();
    }
    EVENTS as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let reference = store_only().await;
        println!("event log: {EVENTS} TextDelta events, SQLite WAL synchronous=FULL");
        println!("  reference: store.append_events in batches of 512 .. {reference:>9.0} events/s");
        for subscribers in [1, 8] {
            let r = through_log(subscribers).await;
            println!(
                "  persist-then-publish to {subscribers} subscriber(s) .. {:>9.0} events/s ({:.2}x reference); \
                 commit->receive p50 {:?} p99 {:?} max {:?}; lagged {}",
                r.per_sec,
                r.per_sec / reference,
                r.p50,
                r.p99,
                r.max,
                r.lagged
            );
        }
    });
}
