//! What driving another agent CLI as a back-end costs, for Claude Code and Codex. The real
//! CLIs (`STEPPER_TEST_CLAUDE_CODE`, `STEPPER_TEST_CODEX_CLI`, as for the tests) answer from
//! the fake LLM. Per CLI and round, interleaved:
//! - through the daemon, a new session's first turn (the CLI is started) and its second
//!   (the warm process is reused);
//! - the same CLI run directly with the same arguments, environment and prompts: a fresh
//!   process's first turn, then a second message on the same process (Claude Code's
//!   stream-json; Codex's app-server: `initialize`, `thread/start`, `turn/start`).
//!
//! Each time runs from sending the prompt to the turn's end (`TurnFinished` through the
//! daemon; the CLI's `result` line, or Codex's `turn/completed`, directly).
//!
//! `STEPPER_TEST_CLAUDE_CODE=DIR/node_modules/.bin/claude STEPPER_TEST_CODEX_CLI=DIR/node_modules/.bin/codex cargo bench -p stepper-e2e --bench backends`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stepper_e2e::{TestEnv, read_until, submit};
use stepper_protocol::AppEvent;
use stepper_protocol::methods::{SessionCreate, SessionCreateParams};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const ROUNDS: usize = 9;

const EXTRA: [(&str, &str); 3] = [
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_TELEMETRY", "1"),
];

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A session's first and second turn through the daemon.
async fn through_daemon(env: &TestEnv, model: &str) -> (Duration, Duration) {
    let client = env.client().await;
    let mut vars: std::collections::BTreeMap<String, String> = env.envs().into_iter().collect();
    for (k, v) in EXTRA {
        vars.insert(k.into(), v.into());
    }
    let id = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: env.project.path().display().to_string(),
            env: vars,
            model: Some(model.into()),
            title: None,
            record: None,
            mode: None,
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap()
        .session
        .id;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let first = daemon_turn(&client, &id, &mut events, "say hello").await;
    let second = daemon_turn(&client, &id, &mut events, "say it again").await;
    // The session's process goes with the session.
    client
        .call::<stepper_protocol::methods::SessionDelete>(
            stepper_protocol::methods::SessionParams {
                session_id: id.clone(),
            },
        )
        .await
        .unwrap();
    (first, second)
}

/// One turn through the daemon: from the submit to its `TurnFinished`.
async fn daemon_turn(
    client: &stepper_protocol::client::DaemonClient,
    id: &str,
    events: &mut stepper_protocol::client::EventStream,
    text: &str,
) -> Duration {
    let t = Instant::now();
    submit(client, id, text).await;
    let seen = read_until(events, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await;
    let took = t.elapsed();
    assert!(
        seen.iter().any(|e| matches!(
            &e.event,
            AppEvent::TurnFinished {
                status: stepper_protocol::TurnStatus::Completed,
                ..
            }
        )),
        "{seen:#?}"
    );
    took
}

/// `command` started as the daemon starts a CLI: the session's environment, in the project,
/// talking over its stdin and stdout.
fn start(
    mut command: tokio::process::Command,
    env: &TestEnv,
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) {
    command
        .env_clear()
        .envs(env.envs())
        .envs(EXTRA)
        .current_dir(env.project.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, lines)
}

/// The same prompts to the CLI run directly: a fresh process's first turn, then its second.
async fn direct(env: &TestEnv, claude: &Path) -> (Duration, Duration) {
    let mut command = tokio::process::Command::new(claude);
    command.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        "default",
        "--model",
        "claude-sonnet-4-5",
    ]);
    let t = Instant::now();
    let (mut child, mut stdin, mut lines) = start(command, env);
    let mut turn = async |text: &str| {
        let message = serde_json::json!({"type": "user", "message": {"role": "user", "content": text},
            "parent_tool_use_id": null, "session_id": "default"});
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("\"type\":\"result\"") {
                return;
            }
        }
        panic!("the CLI closed its output before a result");
    };
    turn("say hello").await;
    let first = t.elapsed();
    let t = Instant::now();
    turn("say it again").await;
    let second = t.elapsed();
    drop(stdin);
    let _ = child.kill().await;
    (first, second)
}

/// Codex's app-server run directly: started, a thread, then two turns.
async fn direct_codex(env: &TestEnv, codex: &Path) -> (Duration, Duration) {
    let mut command = tokio::process::Command::new(codex);
    command.arg("app-server");
    let t = Instant::now();
    let (mut child, mut stdin, mut lines) = start(command, env);
    let mut next_id = 0;
    // Send, then read until a line for which `done` holds; returns that line (a notification,
    // with no `done`, returns at once).
    let mut exchange =
        async |message: serde_json::Value, done: Option<&dyn Fn(&serde_json::Value) -> bool>| {
            stdin
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
            stdin.flush().await.unwrap();
            let Some(done) = done else {
                return serde_json::Value::Null;
            };
            while let Some(line) = lines.next_line().await.unwrap() {
                let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if done(&value) {
                    return value;
                }
            }
            panic!("Codex closed its output");
        };
    let mut request = |method: &str, params: serde_json::Value| {
        next_id += 1;
        (
            next_id,
            serde_json::json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}),
        )
    };
    let answer = |id: u64| move |v: &serde_json::Value| v["id"] == id && v.get("method").is_none();
    let (id, init) = request(
        "initialize",
        serde_json::json!({"clientInfo": {"name": "bench", "title": "bench", "version": "0"}}),
    );
    exchange(init, Some(&answer(id))).await;
    exchange(
        serde_json::json!({"jsonrpc": "2.0", "method": "initialized"}),
        None,
    )
    .await;
    let (id, start) = request(
        "thread/start",
        serde_json::json!({"cwd": env.project.path(), "approvalPolicy": "untrusted",
            "sandbox": "danger-full-access", "model": "gpt-5-codex"}),
    );
    let thread = exchange(start, Some(&answer(id))).await["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let completed = |v: &serde_json::Value| v["method"] == "turn/completed";
    let mut turn = async |text: &str| {
        let (_, start) = request(
            "turn/start",
            serde_json::json!({"threadId": thread, "model": "gpt-5-codex",
                "input": [{"type": "text", "text": text, "text_elements": []}]}),
        );
        exchange(start, Some(&completed)).await;
    };
    turn("say hello").await;
    let first = t.elapsed();
    let t = Instant::now();
    turn("say it again").await;
    let second = t.elapsed();
    let _ = child.kill().await;
    (first, second)
}

/// Medians of both ways over `ROUNDS` interleaved rounds, printed.
fn measure(
    name: &str,
    daemon: &dyn Fn() -> (Duration, Duration),
    direct: &dyn Fn() -> (Duration, Duration),
) {
    // One of each first, unmeasured: the CLI's own first start (its files in the home).
    daemon();
    direct();
    let (mut d_first, mut d_second, mut c_first, mut c_second) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (a, b) = daemon();
        d_first.push(a);
        d_second.push(b);
        let (a, b) = direct();
        c_first.push(a);
        c_second.push(b);
    }
    let (df, ds, cf, cs) = (
        median(&mut d_first),
        median(&mut d_second),
        median(&mut c_first),
        median(&mut c_second),
    );
    println!("{name} back-end, {ROUNDS} rounds, medians:");
    println!(
        "  through the daemon: first turn {:.1} ms (the CLI started), second {:.1} ms (warm) — \
         warm/first {:.3}",
        ms(df),
        ms(ds),
        ds.as_secs_f64() / df.as_secs_f64()
    );
    println!(
        "  the CLI directly:   first turn {:.1} ms, second {:.1} ms",
        ms(cf),
        ms(cs)
    );
    println!(
        "  stepper's overhead: first turn {:+.1} ms ({:.2}x), warm turn {:+.1} ms ({:.2}x)",
        ms(df) - ms(cf),
        df.as_secs_f64() / cf.as_secs_f64(),
        ms(ds) - ms(cs),
        ds.as_secs_f64() / cs.as_secs_f64()
    );
}

fn main() {
    let claude = std::env::var_os("STEPPER_TEST_CLAUDE_CODE").map(PathBuf::from);
    let codex = std::env::var_os("STEPPER_TEST_CODEX_CLI").map(PathBuf::from);
    if claude.is_none() && codex.is_none() {
        eprintln!(
            "skipped: set STEPPER_TEST_CLAUDE_CODE and/or STEPPER_TEST_CODEX_CLI (see README, \
             the tests' programs)"
        );
        return;
    }
    let env = TestEnv::new();
    let mut providers = serde_json::Map::new();
    if let Some(claude) = &claude {
        providers.insert(
            "claude-code".into(),
            serde_json::json!({"kind": "claude-code", "command": claude}),
        );
    }
    if let Some(codex) = &codex {
        providers.insert(
            "codex-cli".into(),
            serde_json::json!({"kind": "codex-cli", "command": codex}),
        );
        // Codex talks to the fake LLM's Responses API with the test's dummy key.
        env.codex_config();
    }
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("setting.json"),
        serde_json::json!({ "providers": providers }).to_string(),
    )
    .unwrap();
    env.start_daemon();
    let rt = tokio::runtime::Runtime::new().unwrap();
    if let Some(claude) = &claude {
        measure(
            "claude-code",
            &|| rt.block_on(through_daemon(&env, "claude-code/claude-sonnet-4-5")),
            &|| rt.block_on(direct(&env, claude)),
        );
    }
    if let Some(codex) = &codex {
        measure(
            "codex-cli",
            &|| rt.block_on(through_daemon(&env, "codex-cli/gpt-5-codex")),
            &|| rt.block_on(direct_codex(&env, codex)),
        );
    }
    drop(rt);
    let _ = env.run(&["daemon", "stop"]);
}
