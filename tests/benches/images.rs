//! A turn with a 2 MB picture next to a text-only turn, and next to a turn whose text is the
//! picture's bytes as base64 (the same payload over the same path — client to daemon to
//! provider — without being an image): the goal is that the picture costs no more than its
//! upload. Then the next turn of each session, where the picture is read back from the store
//! and sent again (providers keep nothing between requests).
//!
//! Each measured turn is `session/create {input, inputParts}` to `TurnFinished` on a warm
//! daemon against the fake LLM, a fresh session each time, the variants interleaved so that
//! the machine's noise falls on all alike. Then the daemon's resident memory over sessions with
//! the picture, and once they have left memory.
//!
//! `cargo bench -p stepper-e2e --bench images`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use base64::Engine as _;
use stepper_e2e::TestEnv;
use stepper_e2e::events::until_turn_finished;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_protocol::{AppEvent, InputPart, TurnStatus};

const RUNS: usize = 15;
/// Sessions with the picture while the daemon's memory is watched.
const MEMORY_RUNS: usize = 60;

/// A PNG of noise of about `bytes` (noise does not compress: the file is its pixels).
fn picture(bytes: usize) -> Vec<u8> {
    let side = ((bytes / 3) as f64).sqrt() as u32;
    let mut state = 0x2545_f491_u32;
    let picture = image::RgbImage::from_fn(side, side, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [a, b, c, _] = state.to_le_bytes();
        image::Rgb([a, b, c])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(picture)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A new session with this first input, to its `TurnFinished`; then a second turn ("and
/// now?") to its end. Returns both durations.
async fn two_turns(
    env: &TestEnv,
    client: &DaemonClient,
    text: &str,
    parts: Vec<InputPart>,
) -> (Duration, Duration) {
    let t = Instant::now();
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            input: Some(text.to_string()),
            input_parts: parts,
            ..env.session_params()
        })
        .await
        .unwrap();
    let id = created.session.id;
    let mut stream = client.subscribe_events(&id, 0).await.unwrap();
    let first = until_turn_finished(&mut stream).await;
    let first_took = t.elapsed();
    ended_well(&first);
    let t = Instant::now();
    client
        .call::<SessionSubmit>(SessionSubmitParams {
            session_id: id.clone(),
            text: "and now?".into(),
            parts: Vec::new(),
            env: None,
        })
        .await
        .unwrap();
    let second = until_turn_finished(&mut stream).await;
    let second_took = t.elapsed();
    ended_well(&second);
    (first_took, second_took)
}

fn ended_well(events: &[stepper_protocol::EventEnvelope]) {
    match events.last().map(|e| &e.event) {
        Some(AppEvent::TurnFinished { status, error, .. }) => {
            assert_eq!(*status, TurnStatus::Completed, "{error:?}")
        }
        other => panic!("{other:?}"),
    }
}

fn rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let png = picture(2 * 1024 * 1024);
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let env = TestEnv::new();
    env.start_daemon();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut text, mut image, mut upload) = (Vec::new(), Vec::new(), Vec::new());
    let (mut text2, mut image2, mut upload2) = (Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        let client = env.client().await;
        // A warm daemon: the first session of each kind is not counted.
        for round in 0..=RUNS {
            let a = two_turns(&env, &client, "what is this?", Vec::new()).await;
            let b = two_turns(
                &env,
                &client,
                "what is this?",
                vec![InputPart::image("noise.png", data.clone())],
            )
            .await;
            let c = two_turns(&env, &client, &format!("what is this?\n{data}"), Vec::new()).await;
            if round > 0 {
                text.push(a.0);
                text2.push(a.1);
                image.push(b.0);
                image2.push(b.1);
                upload.push(c.0);
                upload2.push(c.1);
            }
        }
    });
    let _ = env.run(&["daemon", "stop"]);

    // Memory, on a daemon of its own: sessions with the picture only, then once they have
    // left memory (a session nobody uses is let go), what the daemon still holds.
    let env = TestEnv::new();
    env.start_daemon();
    let pid = env.daemon_pid().unwrap();
    let rss_before = rss_kib(pid);
    // Resident memory after each tenth of the sessions: flat once the allocator and SQLite's
    // caches are warm, or growing with every picture if something kept one.
    let mut rss_along = Vec::new();
    rt.block_on(async {
        let client = env.client().await;
        for i in 1..=MEMORY_RUNS {
            two_turns(
                &env,
                &client,
                "what is this?",
                vec![InputPart::image("noise.png", data.clone())],
            )
            .await;
            if i % (MEMORY_RUNS / 10) == 0 {
                rss_along.push(rss_kib(pid) / 1024);
            }
        }
        let live = || async {
            client
                .call::<DaemonInfo>(Empty {})
                .await
                .unwrap()
                .live_sessions
                == 0
        };
        stepper_e2e::wait::wait_until_async(
            "the sessions to leave memory",
            Duration::from_secs(60),
            live,
        )
        .await;
    });
    let rss_after = rss_kib(pid);
    let _ = env.run(&["daemon", "stop"]);

    let (t, i, u) = (median(&mut text), median(&mut image), median(&mut upload));
    let (t2, i2, u2) = (
        median(&mut text2),
        median(&mut image2),
        median(&mut upload2),
    );
    println!(
        "## A turn with a {:.1} MB picture ({} runs, medians)\n",
        png.len() as f64 / 1e6,
        RUNS
    );
    println!("| turn | first turn | next turn |");
    println!("| --- | ---: | ---: |");
    println!("| text only | {:.1} ms | {:.1} ms |", ms(t), ms(t2));
    println!("| with the picture | {:.1} ms | {:.1} ms |", ms(i), ms(i2));
    println!(
        "| its bytes as text (the upload) | {:.1} ms | {:.1} ms |",
        ms(u),
        ms(u2)
    );
    let over = |x: Duration, base: Duration| ms(x) - ms(base);
    println!(
        "\nThe picture adds {:.1} ms to a first turn, its upload {:.1} ms: ratio {:.2} (goal ≤ 1). \
         A later turn: {:.1} ms against {:.1} ms, ratio {:.2}.",
        over(i, t),
        over(u, t),
        over(i, t) / over(u, t).max(0.001),
        over(i2, t2),
        over(u2, t2),
        over(i2, t2) / over(u2, t2).max(0.001),
    );
    println!(
        "Daemon memory over {MEMORY_RUNS} sessions with the picture: {} MiB before; after each \
         tenth of them {:?} MiB; {} MiB once they left memory.",
        rss_before / 1024,
        rss_along,
        rss_after / 1024,
    );
}
