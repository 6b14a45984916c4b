//! What the store's check at start costs, and what a rebuild costs: a store of 2,000
//! sessions (100 events each by default; `STEPPER_BENCH_EVENTS` changes it) opened with
//! `Store::open_checked` — once sound (`PRAGMA quick_check`), once with a page of its events
//! written over (the check, then the rebuild) — next to a plain `Store::open`.
//!
//! `cargo bench -p stepper-store --bench check`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use stepper_protocol::event::{AppEvent, EventEnvelope};
use stepper_protocol::session::Env;
use stepper_store::{NewSession, Recover, Store, now_ms};

const SESSIONS: usize = 2000;
const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let events: u64 = std::env::var("STEPPER_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let built = dir.path().join("built.db");
    let store = Store::open(&built).await.unwrap();
    for n in 0..SESSIONS {
        let id = format!("01900000-0000-7000-8000-{n:012}");
        store
            .create_session(&NewSession {
                id: id.clone(),
                title: Some(format!("session {n}")),
                cwd: "/home/me/project".into(),
                model: "anthropic/claude-sonnet-4-5".into(),
                env: Env::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
                created_at: now_ms(),
                mode: None,
                sandbox: None,
                instructions: None,
            })
            .await
            .unwrap();
        // Text deltas of a streamed answer: the bulk of a real session's events.
        let batch: Vec<EventEnvelope> = (2..=events)
            .map(|seq| EventEnvelope {
                session_id: id.clone(),
                seq,
                at: now_ms(),
                turn: Some(1),
                agent: None,
                event: AppEvent::TextDelta {
                    text: format!("word {seq} of a streamed answer, about this long. "),
                },
            })
            .collect();
        store.append_events(&id, &batch).await.unwrap();
    }
    store.close().await;
    let size = std::fs::metadata(&built).unwrap().len();
    println!(
        "store: {SESSIONS} sessions x {events} events, {:.1} MB",
        size as f64 / 1e6
    );

    let path = dir.path().join("stepper.db");
    let mut open = Vec::new();
    let mut checked = Vec::new();
    let mut check = Vec::new();
    for _ in 0..RUNS {
        std::fs::copy(&built, &path).unwrap();
        let start = Instant::now();
        let store = Store::open(&path).await.unwrap();
        open.push(start.elapsed());
        store.close().await;

        std::fs::copy(&built, &path).unwrap();
        let start = Instant::now();
        let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
            .await
            .unwrap();
        checked.push(start.elapsed());
        check.push(health.check);
        assert!(health.recovery.is_none());
        store.close().await;
    }
    println!("Store::open                      {}", ms(median(open)));
    println!(
        "Store::open_checked (sound)      {}, of which quick_check {}",
        ms(median(checked)),
        ms(median(check))
    );

    // A page in the middle written over: the check fails, the store is rebuilt.
    std::fs::copy(&built, &path).unwrap();
    let pages = size / 4096;
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.seek(SeekFrom::Start(pages / 2 * 4096)).unwrap();
        file.write_all(&[0xee; 4096]).unwrap();
    }
    let start = Instant::now();
    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let took = start.elapsed();
    let recovery = health.recovery.expect("a rebuild");
    println!(
        "Store::open_checked (damaged)    {} (rebuild {}): {}",
        ms(took),
        ms(recovery.took),
        recovery.summary()
    );
    store.close().await;
}
