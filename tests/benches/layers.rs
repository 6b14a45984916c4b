//! What the layered orchestrator costs. A parallel layer of 4 workers, each of whose model
//! calls takes 1 s (the fake streams, waits a second, then ends the message), is timed
//! from its `LayerStarted` to its `LayerFinished`, next to the same layer with one task:
//! 4 workers at once should take about one worker's time. Then the overhead of a layer: a
//! turn of 3 plain layers next to a single-loop turn (both against instant replies), with
//! what each added layer costs. Runs are interleaved, so noise falls on every column alike.
//!
//! `cargo bench -p stepper-e2e --bench layers`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use stepper_e2e::fake_llm::{stream_end, stream_start, text_deltas, tool_use_stream};
use stepper_e2e::{Reply, TestEnv, read_until};
use stepper_protocol::client::{DaemonClient, EventStream};
use stepper_protocol::methods::{
    SessionCreate, SessionCreateParams, SessionSubmit, SessionSubmitParams,
};
use stepper_protocol::{AppEvent, EventEnvelope};

const PARALLEL_RUNS: usize = 3;
const LAYER_RUNS: usize = 30;
const MODEL_TIME: Duration = Duration::from_secs(1);

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn folder(root: &Path, name: &str, stepper_md: Option<&str>) -> String {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    if let Some(text) = stepper_md {
        std::fs::write(dir.join(".stepper/stepper.md"), text).unwrap();
    }
    dir.display().to_string()
}

async fn session(env: &TestEnv, client: &DaemonClient, cwd: String) -> (String, EventStream) {
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd,
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: Some(stepper_protocol::PermissionMode::Auto),
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap();
    let id = created.session.id;
    let events = client.subscribe_events(&id, 0).await.unwrap();
    (id, events)
}

async fn turn(client: &DaemonClient, id: &str, events: &mut EventStream) -> Vec<EventEnvelope> {
    client
        .call::<SessionSubmit>(SessionSubmitParams {
            parts: Vec::new(),
            session_id: id.to_string(),
            text: "go".into(),
            env: None,
        })
        .await
        .unwrap();
    read_until(events, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await
}

/// A parallel turn with `tasks` workers; the parallel layer's wall time.
async fn parallel(
    env: &TestEnv,
    client: &DaemonClient,
    id: &str,
    events: &mut EventStream,
    tasks: usize,
    run: usize,
) -> Duration {
    let names: Vec<String> = (0..tasks).map(|k| format!("RUN{run}-TASK{k}")).collect();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_a",
        "assign_tasks",
        json!({ "tasks": names }),
    )])));
    env.fake.push(Reply::text(&["assigned"]));
    for name in &names {
        env.fake.push_when(
            name,
            Reply::Paced {
                before: stream_start() + &text_deltas(&["working"]),
                delay: MODEL_TIME,
                after: text_deltas(&[" done"]) + &stream_end(),
            },
        );
    }
    let seen = turn(client, id, events).await;
    let at = |f: &dyn Fn(&AppEvent) -> bool| {
        seen.iter()
            .find(|e| f(&e.event))
            .map(|e| e.at)
            .expect("a layer event")
    };
    let started = at(&|e| matches!(e, AppEvent::LayerStarted { index: 2, .. }));
    let finished = at(&|e| matches!(e, AppEvent::LayerFinished { index: 2, .. }));
    let workers = seen
        .iter()
        .filter(|e| matches!(e.event, AppEvent::SubagentFinished { .. }))
        .count();
    assert_eq!(workers, tasks, "every worker ran");
    Duration::from_millis(u64::try_from(finished - started).unwrap_or(0))
}

fn main() {
    let env = TestEnv::new();
    env.start_daemon();
    let root = env.project.path();
    let fan = "---\nname: split\n---\nSplit.\n\n---\nname: work\nparallel: true\nparallel-max: 4\n---\nDo it.\n";
    let three = "---\nname: one\n---\nA.\n\n---\nname: two\n---\nB.\n\n---\nname: three\n---\nC.\n";
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = env.client().await;
        let (fan_id, mut fan_events) = session(&env, &client, folder(root, "fan", Some(fan))).await;
        let (three_id, mut three_events) =
            session(&env, &client, folder(root, "three", Some(three))).await;
        let (plain_id, mut plain_events) = session(&env, &client, folder(root, "plain", None)).await;

        let (mut four, mut one) = (vec![], vec![]);
        for run in 0..PARALLEL_RUNS {
            four.push(parallel(&env, &client, &fan_id, &mut fan_events, 4, run * 2).await);
            one.push(parallel(&env, &client, &fan_id, &mut fan_events, 1, run * 2 + 1).await);
        }
        let (four, one) = (median(&mut four), median(&mut one));

        // Warm both, then interleave.
        for _ in 0..3 {
            env.fake.push(Reply::text(&["ok"]));
        }
        turn(&client, &three_id, &mut three_events).await;
        env.fake.push(Reply::text(&["ok"]));
        turn(&client, &plain_id, &mut plain_events).await;
        let (mut layered, mut single) = (vec![], vec![]);
        for _ in 0..LAYER_RUNS {
            for _ in 0..3 {
                env.fake.push(Reply::text(&["ok"]));
            }
            let t = Instant::now();
            turn(&client, &three_id, &mut three_events).await;
            layered.push(t.elapsed());
            env.fake.push(Reply::text(&["ok"]));
            let t = Instant::now();
            turn(&client, &plain_id, &mut plain_events).await;
            single.push(t.elapsed());
        }
        let (layered, single) = (median(&mut layered), median(&mut single));
        let per_layer = layered.saturating_sub(single) / 2;

        println!("medians; model calls of the workers take {} ms each:", MODEL_TIME.as_millis());
        println!(
            "  parallel layer, 4 workers      {:>8.1} ms   one worker: {:.1} ms ({:.2}x; the goal is at most 1.3x)",
            ms(four),
            ms(one),
            four.as_secs_f64() / one.as_secs_f64()
        );
        println!(
            "  turn of 3 layers               {:>8.1} ms   single-loop turn: {:.1} ms ({:.2}x)",
            ms(layered),
            ms(single),
            layered.as_secs_f64() / single.as_secs_f64()
        );
        println!(
            "  each added layer               {:>8.1} ms   (its model call to the fake included; {LAYER_RUNS} runs)",
            ms(per_layer)
        );
    });
}
