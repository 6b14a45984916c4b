//! What an MCP tool call costs through the daemon. The reference server
//! (`@modelcontextprotocol/server-everything`, `STEPPER_TEST_MCP_EVERYTHING` as for the
//! tests) is called directly with stepper's MCP client, `echo` after `echo`; then a turn
//! that calls the same tool through the daemon (gate, events, the model's next call) is set
//! next to the same turn calling the built-in `read` on a small file. Interleaved runs.
//! Then the time to a session's first turn (text only) on a fresh daemon with 3 servers
//! configured, next to none: servers never seen before (their first start is waited for),
//! and the same servers after a daemon restart (their tools known: nothing waits).
//!
//! `STEPPER_TEST_MCP_EVERYTHING=DIR/node_modules cargo bench -p stepper-e2e --bench mcp`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, read_until, submit};
use stepper_protocol::AppEvent;

const CALLS: usize = 200;
const TURNS: usize = 30;
const FIRST_TURNS: usize = 7;

/// From submitting a session's first input on a fresh daemon to its `TurnFinished`.
async fn first_turn(env: &TestEnv) -> Duration {
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::text(&["hello"]));
    let t = Instant::now();
    submit(&client, &id, "hi").await;
    read_until(&mut events, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    let took = t.elapsed();
    drop(events);
    drop(client);
    assert!(env.run(&["daemon", "stop"]).status.success());
    took
}

/// A test home whose user settings name `servers`.
fn home_with(servers: serde_json::Value) -> TestEnv {
    let env = TestEnv::new();
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("setting.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    env
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let Some(dir) = std::env::var_os("STEPPER_TEST_MCP_EVERYTHING").map(PathBuf::from) else {
        eprintln!("skipped: set STEPPER_TEST_MCP_EVERYTHING (see README, the tests' programs)");
        return;
    };
    let entry = dir.join("@modelcontextprotocol/server-everything/dist/index.js");
    let server = json!({"command": "node", "args": [entry.display().to_string(), "stdio"]});
    let env = TestEnv::new();
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("setting.json"),
        json!({"mcpServers": {"everything": server}}).to_string(),
    )
    .unwrap();
    std::fs::write(env.project.path().join("small.txt"), "a small file\n").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Directly: stepper's client, no daemon.
        let servers: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(json!({"everything": server})).unwrap();
        let vars: stepper_protocol::session::Env = std::env::vars().collect();
        let (specs, _) = stepper_mcp::parse_servers(&servers, &vars);
        let direct = stepper_mcp::McpServer::connect(
            &specs[0],
            &vars,
            env.project.path(),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
        let mut calls = Vec::new();
        for _ in 0..CALLS {
            let t = Instant::now();
            direct
                .call("echo", json!({"message": "x"}), Duration::from_secs(10), Default::default())
                .await
                .unwrap();
            calls.push(t.elapsed());
        }
        let direct_call = median(&mut calls);

        env.start_daemon();
        let client = env.client().await;
        let id = env
            .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
            .await;
        let mut events = client.subscribe_events(&id, 0).await.unwrap();
        let turn = |tool: &'static str, args: serde_json::Value| {
            env.fake.push(Reply::Sse(tool_use_stream(&[("toolu_1", tool, args)])));
            env.fake.push(Reply::text(&["ok"]));
        };
        let (mut via_mcp, mut via_read) = (Vec::new(), Vec::new());
        for i in 0..=TURNS {
            turn("mcp__everything__echo", json!({"message": "x"}));
            let t = Instant::now();
            submit(&client, &id, "echo").await;
            read_until(&mut events, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await;
            // The first turn starts the server: it is warm-up.
            if i > 0 {
                via_mcp.push(t.elapsed());
            }
            turn("read", json!({"path": "small.txt"}));
            let t = Instant::now();
            submit(&client, &id, "read").await;
            read_until(&mut events, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await;
            if i > 0 {
                via_read.push(t.elapsed());
            }
        }
        drop(events);
        drop(client);
        assert!(env.run(&["daemon", "stop"]).status.success());

        // The first turn of a fresh daemon: no servers, 3 never seen, the same 3 known.
        let three = json!({"one": server, "two": server, "three": server});
        let (mut none, mut unseen, mut known) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..FIRST_TURNS {
            none.push(first_turn(&home_with(json!({}))).await);
            let env = home_with(three.clone());
            unseen.push(first_turn(&env).await);
            known.push(first_turn(&env).await);
        }
        let (none, unseen, known) = (median(&mut none), median(&mut unseen), median(&mut known));

        let (mcp, read) = (median(&mut via_mcp), median(&mut via_read));
        println!("medians:");
        println!(
            "  echo, called directly (stepper's client, no daemon)  {:>8.3} ms ({CALLS} calls)",
            direct_call.as_secs_f64() * 1000.0
        );
        println!(
            "  turn calling mcp__everything__echo via the daemon    {:>8.3} ms   the same turn calling read: {:.3} ms (+{:.3} ms; {TURNS} turns each)",
            mcp.as_secs_f64() * 1000.0,
            read.as_secs_f64() * 1000.0,
            mcp.saturating_sub(read).as_secs_f64() * 1000.0
        );
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "  first turn of a fresh daemon, no MCP servers          {:>8.3} ms ({FIRST_TURNS} daemons each)",
            ms(none)
        );
        println!(
            "  … with 3 servers never seen (their start waited for)  {:>8.3} ms ({:.2}x)",
            ms(unseen),
            ms(unseen) / ms(none)
        );
        println!(
            "  … with the same 3 servers, their tools known          {:>8.3} ms ({:.2}x)",
            ms(known),
            ms(known) / ms(none)
        );
    });
}
