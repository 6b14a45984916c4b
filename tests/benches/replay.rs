//! Attach-and-replay: a client connects to the daemon and replays a session of 100k events
//! from seq 0 to the end (what `stepper attach` does on a long session), next to the floor:
//! reading the same events straight from the store in the same process (SQLite read and JSON
//! decode, no socket, no daemon).
//!
//! `cargo bench -p stepper-e2e --bench replay`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use stepper_e2e::{Reply, TestEnv};
use stepper_protocol::AppEvent;
use stepper_protocol::methods::{SessionGet, SessionParams};

const EVENTS: usize = 100_000;
const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let env = TestEnv::new();
    env.start_daemon();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // One turn streaming ~100k text deltas makes a session of ~100k events.
        let deltas: Vec<String> = (0..EVENTS).map(|i| format!("t{i} ")).collect();
        env.fake.push(Reply::text(
            &deltas.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        let owner = env.client().await;
        let session = env.create_session(&owner, None).await;
        let mut stream = owner.subscribe_events(&session, 0).await.unwrap();
        stepper_e2e::submit(&owner, &session, "stream").await;
        loop {
            let e = stream.next().await.unwrap().unwrap();
            if matches!(e.event, AppEvent::TurnFinished { .. }) {
                break;
            }
        }
        drop(stream);
        let last = owner
            .call::<SessionGet>(SessionParams {
                session_id: session.clone(),
            })
            .await
            .unwrap()
            .session
            .last_seq;

        let mut attach = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            let client = env.client().await;
            let mut stream = client.subscribe_events(&session, 0).await.unwrap();
            loop {
                let e = stream.next().await.unwrap().unwrap();
                if e.seq == last {
                    break;
                }
            }
            attach.push(start.elapsed());
        }

        let store = stepper_store::Store::open(&env.places().store_path())
            .await
            .unwrap();
        let mut raw = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            let mut after = 0;
            while after < last {
                let page = store.events_after(&session, after, 1000).await.unwrap();
                after = page.last().unwrap().seq;
            }
            raw.push(start.elapsed());
        }

        let (attach, raw) = (median(attach), median(raw));
        println!("attach and replay a session of {last} events, median of {RUNS}:");
        println!(
            "  store read + decode, in process .. {:>8.1?}  ({:.0} events/s)",
            raw,
            last as f64 / raw.as_secs_f64()
        );
        println!(
            "  connect + replay over the socket . {:>8.1?}  ({:.0} events/s, {:.1}x the store read)",
            attach,
            last as f64 / attach.as_secs_f64(),
            attach.as_secs_f64() / raw.as_secs_f64()
        );
    });
}
