//! Other agent CLIs as back-ends, first against the scripted fake in `tests/fake-clis/claude`
//! (the edge cases: chunks cut mid-line and mid-UTF-8, noise, a crash, an interrupt honoured
//! and one ignored, a last line without newline), then against the real Claude Code from
//! npm (`STEPPER_TEST_CLAUDE_CODE`, installed by `.ci/run`) talking to the fake LLM.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use stepper_e2e::{TestEnv, read_until, submit, until_turn_finished, wait_until};
use stepper_protocol::methods::{
    SessionApprove, SessionApproveParams, SessionCreate, SessionCreateParams, SessionInterrupt,
    SessionParams, SessionRewind, SessionRewindParams, SessionSetModel, SessionSetModelParams,
    SessionSteer,
};
use stepper_protocol::{AppEvent, ApprovalDecision, EventEnvelope, ToolCallStatus, TurnStatus};

fn fake_claude() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fake-clis/claude")
}

/// Settings naming the CLI for `claude-code/…`, and more.
fn settings(env: &TestEnv, command: &Path, more: serde_json::Value) {
    let dir = env.places().config_dir;
    std::fs::create_dir_all(&dir).unwrap();
    let mut value = serde_json::json!({
        "providers": {"claude-code": {"kind": "claude-code", "command": command}},
    });
    if let (Some(obj), Some(more)) = (value.as_object_mut(), more.as_object()) {
        obj.extend(more.clone());
    }
    std::fs::write(dir.join("setting.json"), value.to_string()).unwrap();
}

/// One start of the fake CLI, as it logged it.
struct Start {
    pid: i32,
    argv: Vec<String>,
    /// The conversation it ran.
    session: String,
}

impl Start {
    fn resumes(&self, conversation: &str) -> bool {
        self.argv
            .windows(2)
            .any(|w| w[0] == "--resume" && w[1] == conversation)
    }
}

/// The starts the fake CLI logged.
fn starts(log: &Path) -> Vec<Start> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Start {
                pid: v["pid"].as_i64().unwrap() as i32,
                argv: v["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .collect(),
                session: v["session"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

async fn session(
    env: &TestEnv,
    client: &stepper_protocol::client::DaemonClient,
    model: &str,
) -> String {
    let mut vars: std::collections::BTreeMap<String, String> = env.envs().into_iter().collect();
    vars.insert(
        "FAKE_CLAUDE_LOG".into(),
        env.home
            .path()
            .join("claude-starts.jsonl")
            .display()
            .to_string(),
    );
    client
        .call::<SessionCreate>(create_params(env, model, vars))
        .await
        .expect("session/create")
        .session
        .id
}

/// `session/create` in the project with `model` and the environment `vars`.
fn create_params(
    env: &TestEnv,
    model: &str,
    vars: std::collections::BTreeMap<String, String>,
) -> SessionCreateParams {
    SessionCreateParams {
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
    }
}

fn text_of(events: &[EventEnvelope]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[EventEnvelope]) -> (TurnStatus, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::TurnFinished { status, error, .. } => Some((*status, error.clone())),
            _ => None,
        })
        .expect("a TurnFinished")
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|s| s != 'Z' && s != 'X'),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_cli_turn_streams_reuses_its_process_and_switches_model_on_the_control_channel() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/sonnet").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let log = env.home.path().join("claude-starts.jsonl");

    submit(&client, &id, "hello").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    // Reassembled from chunks cut mid-line and mid-character.
    assert_eq!(text_of(&seen), "héllo wörld ✓ from sonnet");
    assert!(
        seen.iter().any(|e| matches!(&e.event, AppEvent::Notice { message } if message.contains("warning: this is not JSON"))),
        "a non-protocol line is a notice: {seen:#?}"
    );
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::UsageUpdated { usage, cost_usd: Some(c) } if usage.input_tokens == 100 && (*c - 0.0125).abs() < 1e-9)));
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::MessageCompleted { text, stop_reason: Some(r) } if text.starts_with("héllo") && r == "end_turn")));
    let first = starts(&log);
    assert_eq!(first.len(), 1);
    let argv = &first[0].argv;
    for flag in [
        "-p",
        "--input-format",
        "--output-format",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
    ] {
        assert!(argv.iter().any(|a| a == flag), "{flag} missing: {argv:?}");
    }
    assert!(
        argv.windows(2).any(|w| w == ["--model", "sonnet"]),
        "{argv:?}"
    );
    assert!(
        argv.windows(2)
            .any(|w| w == ["--permission-mode", "default"])
    );
    // An untrusted folder's settings stay out of the CLI too.
    assert!(
        argv.windows(2).any(|w| w == ["--setting-sources", "user"])
            && argv.iter().any(|a| a == "--strict-mcp-config"),
        "{argv:?}"
    );
    assert!(
        wait_for_log(&env, "some noise on stderr"),
        "stderr goes to the daemon's log"
    );

    // A second turn: the same process.
    submit(&client, &id, "again").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(text_of(&seen), "you said again");
    // `/model`: the control channel, still the same process.
    client
        .call::<SessionSetModel>(SessionSetModelParams {
            session_id: id.clone(),
            model: "claude-code/opus".into(),
        })
        .await
        .unwrap();
    submit(&client, &id, "hello").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(text_of(&seen), "héllo wörld ✓ from opus");
    assert_eq!(starts(&log).len(), 1, "one process for three turns");

    // Trusted now: the next turn's process loads the project's settings.
    env.trust_project();
    submit(&client, &id, "hello").await;
    until_turn_finished(&mut events).await;
    let all = starts(&log);
    assert_eq!(all.len(), 2, "trust changes how the CLI starts");
    assert!(
        !all[1].argv.iter().any(|a| a == "--setting-sources"),
        "{:?}",
        all[1].argv
    );
}

#[tokio::test]
async fn text_steered_in_reaches_the_cli_within_the_same_turn() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let release = env.home.path().join("release");
    let prompt = format!("wait {}", release.display());
    submit(&client, &id, &prompt).await;
    read_until(
        &mut events,
        |e| matches!(&e.event, AppEvent::TextDelta { text } if text == "waiting"),
    )
    .await;
    let steer = |text: &str| stepper_protocol::methods::SessionSubmitParams {
        parts: Vec::new(),
        session_id: id.clone(),
        text: text.into(),
        env: None,
    };
    client
        .call::<SessionSteer>(steer("also this"))
        .await
        .unwrap();
    client
        .call::<SessionSteer>(steer("and that"))
        .await
        .unwrap();
    std::fs::write(&release, "").unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    // The CLI finished what it was doing, then got both steered texts as one message.
    assert_eq!(
        text_of(&seen),
        "done waitingyou said also this\n\nand that",
        "{seen:#?}"
    );
    assert_eq!(
        starts(&env.home.path().join("claude-starts.jsonl")).len(),
        1
    );

    // The session's conversation has both exchanges: another model sees them.
    client
        .call::<SessionSetModel>(SessionSetModelParams {
            session_id: id.clone(),
            model: "anthropic/claude-sonnet-4-5".into(),
        })
        .await
        .unwrap();
    submit(&client, &id, "what happened?").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    let request = env.fake.requests().last().cloned().unwrap();
    let said: Vec<(String, String)> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                serde_json::Value::String(s) => s.clone(),
                blocks => blocks
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    // The environment the model is told of is nobody's words.
                    .filter(|t| !t.starts_with("<environment_context>"))
                    .collect(),
            };
            (m["role"].as_str().unwrap_or("").to_string(), text)
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("user", prompt.as_str()),
        ("assistant", "waitingdone waiting"),
        ("user", "also this\n\nand that"),
        ("assistant", "you said also this\n\nand that"),
        ("user", "what happened?"),
    ]
    .iter()
    .map(|(r, t)| (r.to_string(), t.to_string()))
    .collect();
    assert_eq!(said, expected);
}

fn wait_for_log(env: &TestEnv, needle: &str) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if env.daemon_log().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test]
async fn the_clis_tool_calls_go_through_the_gate_and_any_client_answers() {
    let env = TestEnv::new();
    settings(
        &env,
        &fake_claude(),
        serde_json::json!({"permissions": {"deny": ["Bash(rm:*)"]}}),
    );
    env.start_daemon();
    let client = env.client().await;
    let second = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let mut watching = second.subscribe_events(&id, 0).await.unwrap();

    // A command that writes is asked, and the second client's answer lets it run.
    submit(&client, &id, "bash touch made-by-cli").await;
    let asked = stepper_e2e::events::next_approval(&mut watching).await;
    assert_eq!(asked.command.as_deref(), Some("touch made-by-cli"));
    second
        .call::<SessionApprove>(SessionApproveParams {
            session_id: id.clone(),
            request_id: asked.request_id,
            decision: ApprovalDecision::Allow,
        })
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed, "{seen:#?}");
    assert!(env.project.path().join("made-by-cli").exists());
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallStarted { tool, .. } if tool == "Bash")));
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::ToolCallFinished {
            status: ToolCallStatus::Ok,
            ..
        }
    )));
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, AppEvent::CheckpointCreated { .. })),
        "what the CLI changed is checkpointed: {seen:#?}"
    );

    // A read-only command runs without asking: the shell gate judged it.
    submit(&client, &id, "bash ls").await;
    let seen = until_turn_finished(&mut events).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. }))
    );
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallFinished { status: ToolCallStatus::Ok, output, .. } if output.contains("made-by-cli"))));

    // A deny rule holds for the CLI's commands too.
    submit(&client, &id, "bash rm made-by-cli").await;
    let seen = until_turn_finished(&mut events).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. }))
    );
    assert!(
        seen.iter().any(|e| matches!(
            &e.event,
            AppEvent::ToolCallFinished {
                status: ToolCallStatus::Denied,
                ..
            }
        )),
        "{seen:#?}"
    );
    assert!(env.project.path().join("made-by-cli").exists());
}

#[tokio::test]
async fn what_the_cli_says_has_the_keys_taken_out() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit(&client, &id, "leak").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed, "{seen:#?}");
    let all = serde_json::to_string(&seen).unwrap();
    assert!(!all.contains(stepper_e2e::fake_llm::FAKE_KEY), "{all}");
    assert_eq!(text_of(&seen), "the key is [redacted] indeed");
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallFinished { output, .. } if output == "ANTHROPIC_API_KEY=[redacted]")));
    // Nor in the store, nor the log.
    drop(events);
    drop(client);
    assert!(env.run(&["daemon", "stop"]).status.success());
    for entry in stepper_e2e::files_under(env.home.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(
            !hay.contains(stepper_e2e::fake_llm::FAKE_KEY)
                || entry.ends_with("claude-starts.jsonl"),
            "the key is in {}",
            entry.display()
        );
    }
}

#[tokio::test]
async fn files_the_cli_changed_without_asking_are_rewound() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    std::fs::write(env.project.path().join("notes.txt"), "before").unwrap();
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let notes = env.project.path().join("notes.txt");
    submit(&client, &id, &format!("write {} after", notes.display())).await;
    let seen = until_turn_finished(&mut events).await;
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, AppEvent::CheckpointCreated { .. })),
        "{seen:#?}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "after");
    client
        .call::<SessionRewind>(SessionRewindParams {
            session_id: id.clone(),
            turn: 1,
            files: true,
            conversation: true,
        })
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "before");
}

#[tokio::test]
async fn a_crash_fails_the_turn_and_the_next_resumes_the_conversation() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let log = env.home.path().join("claude-starts.jsonl");
    submit(&client, &id, "crash").await;
    let seen = until_turn_finished(&mut events).await;
    let (status, error) = finished(&seen);
    assert_eq!(status, TurnStatus::Failed);
    let error = error.unwrap();
    assert!(
        error.contains("exit code 3") && error.contains("the fake fell over"),
        "{error}"
    );
    assert_eq!(text_of(&seen), "about to", "what streamed stays");
    let first = &starts(&log)[0];
    assert!(
        !first.argv.iter().any(|a| a == "--resume"),
        "{:?}",
        first.argv
    );

    // The last line without a newline is read when the process closes.
    submit(&client, &id, "last").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    let all = starts(&log);
    assert_eq!(all.len(), 2);
    assert!(all[1].resumes(&all[0].session), "{:?}", all[1].argv);
}

#[tokio::test]
async fn an_interrupt_is_asked_then_forced_after_the_grace_period() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    env.start_daemon_with(&[("STEPPER_BACKEND_GRACE_MS", "400")]);
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let log = env.home.path().join("claude-starts.jsonl");
    let interrupt = || async {
        client
            .call::<SessionInterrupt>(SessionParams {
                session_id: id.clone(),
            })
            .await
            .unwrap();
    };

    // Honoured: the CLI ends the turn and stays.
    submit(&client, &id, "slow").await;
    read_until(
        &mut events,
        |e| matches!(&e.event, AppEvent::TextDelta { text } if text == "working"),
    )
    .await;
    interrupt().await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Interrupted);
    submit(&client, &id, "still there").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(text_of(&seen), "you said still there");
    assert_eq!(starts(&log).len(), 1);

    // Ignored: its group is stopped after the grace period, and the next turn resumes.
    submit(&client, &id, "hang").await;
    read_until(
        &mut events,
        |e| matches!(&e.event, AppEvent::TextDelta { text } if text == "stuck"),
    )
    .await;
    interrupt().await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Interrupted);
    let pid = starts(&log)[0].pid;
    wait_until("the hung CLI to be gone", Duration::from_secs(10), || {
        !alive(pid)
    });
    submit(&client, &id, "back").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(text_of(&seen), "you said back");
    let all = starts(&log);
    assert_eq!(all.len(), 2);
    assert!(all[1].resumes(&all[0].session), "{:?}", all[1].argv);
}

#[tokio::test]
async fn a_sigkilled_daemon_leaves_no_cli_and_the_next_one_resumes() {
    let env = TestEnv::new();
    settings(&env, &fake_claude(), serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client, "claude-code/default").await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let log = env.home.path().join("claude-starts.jsonl");
    submit(&client, &id, "first").await;
    until_turn_finished(&mut events).await;
    let pid = starts(&log)[0].pid;
    assert!(alive(pid));
    drop(events);
    drop(client);
    env.signal_daemon(Signal::SIGKILL);
    wait_until(
        "the CLI to die with its daemon",
        Duration::from_secs(10),
        || !alive(pid),
    );

    env.start_daemon();
    let client = env.client().await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit(&client, &id, "second").await;
    let seen = read_until(&mut events, |e| {
        matches!(&e.event, AppEvent::TurnFinished { .. }) && e.turn == Some(2)
    })
    .await;
    assert!(text_of(&seen).ends_with("you said second"), "{seen:#?}");
    let all = starts(&log);
    assert_eq!(all.len(), 2);
    assert!(all[1].resumes(&all[0].session), "{:?}", all[1].argv);
}

#[tokio::test]
async fn a_missing_or_old_cli_says_how_to_install_it() {
    let env = TestEnv::new();
    settings(
        &env,
        Path::new("/nonexistent/claude"),
        serde_json::json!({}),
    );
    env.start_daemon();
    let client = env.client().await;
    let refused = client
        .call::<SessionCreate>(create_params(
            &env,
            "claude-code/default",
            env.envs().into_iter().collect(),
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("npm install -g @anthropic-ai/claude-code"),
        "{refused}"
    );

    settings(&env, &fake_claude(), serde_json::json!({}));
    let mut vars: std::collections::BTreeMap<String, String> = env.envs().into_iter().collect();
    vars.insert("FAKE_CLAUDE_VERSION".into(), "1.0.44 (Claude Code)".into());
    let id = client
        .call::<SessionCreate>(create_params(&env, "claude-code/default", vars))
        .await
        .unwrap()
        .session
        .id;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit(&client, &id, "hello").await;
    let seen = until_turn_finished(&mut events).await;
    let (status, error) = finished(&seen);
    assert_eq!(status, TurnStatus::Failed);
    let error = error.unwrap();
    assert!(
        error.contains("1.0.44") && error.contains("too old") && error.contains("@latest"),
        "{error}"
    );
}

/// The real Claude Code from npm, or `None` (the test skips, or fails in CI).
fn real_claude() -> Option<PathBuf> {
    let found = std::env::var_os("STEPPER_TEST_CLAUDE_CODE")
        .map(PathBuf::from)
        .filter(|p| p.exists());
    if found.is_none() {
        assert!(
            !stepper_e2e::needs::strict(),
            "STEPPER_TEST_CLAUDE_CODE must name an installed claude (npm install --prefix DIR \
             @anthropic-ai/claude-code)"
        );
        eprintln!(
            "skipped: needs Claude Code (npm install --prefix DIR @anthropic-ai/claude-code, \
             then STEPPER_TEST_CLAUDE_CODE=DIR/node_modules/.bin/claude)"
        );
    }
    found
}

/// A session on the real CLI, talking to this test's fake LLM with its dummy key.
async fn real_session(env: &TestEnv, client: &stepper_protocol::client::DaemonClient) -> String {
    let mut vars: std::collections::BTreeMap<String, String> = env.envs().into_iter().collect();
    for (k, v) in [
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
    ] {
        vars.insert(k.into(), v.into());
    }
    client
        .call::<SessionCreate>(create_params(env, "claude-code/claude-sonnet-4-5", vars))
        .await
        .expect("session/create")
        .session
        .id
}

/// The pids of live processes of this test (their `HOME` is its home: tests run side by
/// side) whose command line or executable holds one of `markers` (a CLI started through a
/// wrapper has its own process too: Codex's node script runs a native binary).
fn running(env: &TestEnv, markers: &[&str]) -> Vec<i32> {
    let home = format!("HOME={}", env.home.path().display());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).into_owned())
                .unwrap_or_default();
            let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|e| e.display().to_string())
                .unwrap_or_default();
            let ours = std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == home.as_bytes()));
            ours && markers
                .iter()
                .any(|m| cmdline.contains(m) || exe.contains(m))
                && alive(*pid)
        })
        .collect()
}

/// What finds a CLI's processes: its path as given, and where npm put its package.
fn markers(program: &Path) -> Vec<String> {
    let mut markers = vec![program.display().to_string()];
    if let Ok(real) = std::fs::canonicalize(program) {
        markers.push(real.display().to_string());
    }
    if let Some(modules) = program.parent().and_then(Path::parent) {
        for package in ["@openai/codex", "@anthropic-ai/claude-code"] {
            markers.push(modules.join(package).display().to_string());
        }
    }
    markers
}

#[tokio::test]
async fn the_real_claude_code_answers_asks_a_second_client_and_dies_with_a_killed_daemon() {
    let Some(claude) = real_claude() else { return };
    let env = TestEnv::new();
    settings(&env, &claude, serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let second = env.client().await;
    let id = real_session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let mut watching = second.subscribe_events(&id, 0).await.unwrap();

    // A turn with text: the fake's answer, streamed through the CLI.
    submit(&client, &id, "say hello").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(
        finished(&seen),
        (TurnStatus::Completed, None),
        "{seen:#?}\n{}",
        env.daemon_log()
    );
    assert_eq!(text_of(&seen), "Hello, world! ✓");
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::UsageUpdated {
            cost_usd: Some(_),
            ..
        }
    )));
    let request = env.fake.requests().last().cloned().unwrap();
    assert_eq!(request["model"], "claude-sonnet-4-5");

    // A shell command the model wants: Claude Code asks, stepper's gate asks every client,
    // the second answers, the command runs.
    env.fake.push_when(
        "make the file",
        stepper_e2e::Reply::Sse(stepper_e2e::fake_llm::tool_use_stream(&[(
            "toolu_real_1",
            "Bash",
            serde_json::json!({"command": "touch made-by-claude", "description": "make a file"}),
        )])),
    );
    submit(&client, &id, "make the file").await;
    let asked = stepper_e2e::events::next_approval(&mut watching).await;
    assert_eq!(asked.command.as_deref(), Some("touch made-by-claude"));
    second
        .call::<SessionApprove>(SessionApproveParams {
            session_id: id.clone(),
            request_id: asked.request_id,
            decision: ApprovalDecision::Allow,
        })
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed, "{seen:#?}");
    assert!(env.project.path().join("made-by-claude").exists());
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallStarted { tool, call_id, .. } if tool == "Bash" && call_id == "toolu_real_1")));
    assert!(seen.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallFinished { call_id, status: ToolCallStatus::Ok, .. } if call_id == "toolu_real_1")), "{seen:#?}");
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, AppEvent::CheckpointCreated { .. }))
    );

    // One process served both turns; a SIGKILLed daemon takes it along.
    let markers = markers(&claude);
    let markers: Vec<&str> = markers.iter().map(String::as_str).collect();
    let pids = running(&env, &markers);
    assert_eq!(pids.len(), 1, "{pids:?}");
    drop((events, watching, client, second));
    env.signal_daemon(Signal::SIGKILL);
    wait_until("no Claude Code left", Duration::from_secs(10), || {
        running(&env, &markers).is_empty()
    });
}

#[tokio::test]
async fn the_real_claude_code_is_interrupted() {
    let Some(claude) = real_claude() else { return };
    let env = TestEnv::new();
    settings(&env, &claude, serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = real_session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let gate = stepper_e2e::fake_llm::Gate::new();
    env.fake.push_when(
        "take your time",
        stepper_e2e::Reply::held(&["thinking it over"], &gate),
    );
    submit(&client, &id, "take your time").await;
    read_until(
        &mut events,
        |e| matches!(&e.event, AppEvent::TextDelta { text } if text.contains("thinking")),
    )
    .await;
    client
        .call::<SessionInterrupt>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Interrupted, "{seen:#?}");
    gate.open();
    // The session goes on.
    submit(&client, &id, "and now?").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    assert_eq!(text_of(&seen), "Hello, world! ✓");
}

#[tokio::test]
async fn stepper_backends_lists_the_real_cli_its_login_and_its_mcp_servers() {
    let Some(claude) = real_claude() else { return };
    let env = TestEnv::new();
    settings(&env, &claude, serde_json::json!({}));
    // A server of Claude Code's own, added with its own command in the test's home.
    let added = std::process::Command::new(&claude)
        .args([
            "mcp",
            "add",
            "-s",
            "user",
            "--transport",
            "http",
            "docs",
            "http://127.0.0.1:9/mcp",
        ])
        .env_clear()
        .envs(env.envs())
        .current_dir(env.project.path())
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let out = env.run(&["backends", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude_code = &list["backends"][0];
    assert_eq!(claude_code["name"], "claude-code");
    assert!(
        claude_code["version"].as_str().unwrap().starts_with("2."),
        "{list:#}"
    );
    assert_eq!(claude_code["loggedIn"], true, "{list:#}");
    assert!(
        claude_code["login"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{list:#}"
    );
    let servers = claude_code["mcpServers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{list:#}");
    assert_eq!(servers[0]["name"], "docs");
    assert_eq!(servers[0]["transport"], "http");
    assert!(
        servers[0]["status"].as_str().unwrap().starts_with("Failed"),
        "{list:#}"
    );
    let codex = &list["backends"][1];
    assert_eq!(codex["name"], "codex-cli");
    if let Some(problem) = codex["problem"].as_str() {
        assert!(
            problem.contains("npm install -g @openai/codex"),
            "{problem}"
        );
    }
    // And in words.
    let out = env.run(&["backends"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Claude Code 2.") && text.contains("docs (http)"),
        "{text}"
    );
}

/// The real Codex CLI from npm, or `None` (the test skips, or fails in CI).
fn real_codex() -> Option<PathBuf> {
    let found = std::env::var_os("STEPPER_TEST_CODEX_CLI")
        .map(PathBuf::from)
        .filter(|p| p.exists());
    if found.is_none() {
        assert!(
            !stepper_e2e::needs::strict(),
            "STEPPER_TEST_CODEX_CLI must name an installed codex (npm install --prefix DIR \
             @openai/codex)"
        );
        eprintln!(
            "skipped: needs the Codex CLI (npm install --prefix DIR @openai/codex, then \
             STEPPER_TEST_CODEX_CLI=DIR/node_modules/.bin/codex)"
        );
    }
    found
}

/// Codex on the fake LLM, and stepper's setting naming it.
fn codex_home(env: &TestEnv, codex: &Path) {
    env.codex_config();
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("setting.json"),
        serde_json::json!({"providers": {"codex-cli": {"kind": "codex-cli", "command": codex}}})
            .to_string(),
    )
    .unwrap();
}

/// A Responses stream that calls Codex's `exec_command` with `cmd`.
fn exec_command_stream(call_id: &str, cmd: &str) -> String {
    let args = serde_json::json!({"cmd": cmd}).to_string();
    let item = |status: &str, arguments: &str| {
        serde_json::json!({"type": "function_call", "id": "fc_1", "call_id": call_id,
            "name": "exec_command", "arguments": arguments, "status": status})
    };
    let events = [
        serde_json::json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "resp_x", "object": "response", "status": "in_progress", "output": []}}),
        serde_json::json!({"type": "response.output_item.added", "sequence_number": 1,
            "output_index": 0, "item": item("in_progress", "")}),
        serde_json::json!({"type": "response.function_call_arguments.delta", "sequence_number": 2,
            "item_id": "fc_1", "output_index": 0, "delta": args}),
        serde_json::json!({"type": "response.function_call_arguments.done", "sequence_number": 3,
            "item_id": "fc_1", "output_index": 0, "arguments": args}),
        serde_json::json!({"type": "response.output_item.done", "sequence_number": 4,
            "output_index": 0, "item": item("completed", &args)}),
        serde_json::json!({"type": "response.completed", "sequence_number": 5,
            "response": {"id": "resp_x", "object": "response", "status": "completed",
                "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 10, "total_tokens": 110}}}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

async fn codex_session(env: &TestEnv, client: &stepper_protocol::client::DaemonClient) -> String {
    client
        .call::<SessionCreate>(create_params(
            env,
            "codex-cli/gpt-5-codex",
            env.envs().into_iter().collect(),
        ))
        .await
        .expect("session/create")
        .session
        .id
}

#[tokio::test]
async fn the_real_codex_answers_asks_a_second_client_and_dies_with_a_killed_daemon() {
    let Some(codex) = real_codex() else { return };
    let env = TestEnv::new();
    codex_home(&env, &codex);
    env.start_daemon();
    let client = env.client().await;
    let second = env.client().await;
    let id = codex_session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let mut watching = second.subscribe_events(&id, 0).await.unwrap();

    submit(&client, &id, "say hello").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(
        finished(&seen),
        (TurnStatus::Completed, None),
        "{seen:#?}\n{}",
        env.daemon_log()
    );
    assert_eq!(text_of(&seen), "Hello, world!");
    assert!(seen.iter().any(
        |e| matches!(&e.event, AppEvent::UsageUpdated { usage, .. } if usage.output_tokens > 0)
    ));
    let sent = env.fake.seen(stepper_e2e::fake_llm::Route::Responses);
    assert_eq!(sent.last().unwrap().body["model"], "gpt-5-codex");

    // A command Codex does not know to be safe: asked through stepper's gate, answered by
    // the second client.
    env.fake.push_to(
        stepper_e2e::fake_llm::Route::Responses,
        stepper_e2e::Reply::Sse(exec_command_stream("call_touch", "touch made-by-codex")),
    );
    submit(&client, &id, "make the file").await;
    let asked = stepper_e2e::events::next_approval(&mut watching).await;
    assert!(
        asked
            .command
            .as_deref()
            .unwrap_or("")
            .contains("touch made-by-codex"),
        "{:?}",
        asked.command
    );
    second
        .call::<SessionApprove>(SessionApproveParams {
            session_id: id.clone(),
            request_id: asked.request_id,
            decision: ApprovalDecision::Allow,
        })
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed, "{seen:#?}");
    assert!(
        env.project.path().join("made-by-codex").exists(),
        "{seen:#?}"
    );
    assert!(
        seen.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallStarted { tool, .. } if tool == "exec_command")),
        "{seen:#?}"
    );
    assert!(
        seen.iter().any(|e| matches!(
            &e.event,
            AppEvent::ToolCallFinished {
                status: ToolCallStatus::Ok,
                ..
            }
        )),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, AppEvent::CheckpointCreated { .. }))
    );

    let markers = markers(&codex);
    let markers: Vec<&str> = markers.iter().map(String::as_str).collect();
    let pids = running(&env, &markers);
    assert!(
        pids.len() >= 2,
        "Codex's script and its binary serve the session: {pids:?}"
    );
    drop((events, watching, client, second));
    env.signal_daemon(Signal::SIGKILL);
    wait_until("no Codex left", Duration::from_secs(10), || {
        running(&env, &markers).is_empty()
    });
}

#[tokio::test]
async fn the_real_codex_is_interrupted_and_its_thread_resumed_after_a_restart() {
    let Some(codex) = real_codex() else { return };
    let env = TestEnv::new();
    codex_home(&env, &codex);
    env.start_daemon();
    let client = env.client().await;
    let id = codex_session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let gate = stepper_e2e::fake_llm::Gate::new();
    let text = stepper_e2e::fake_llm::fixture("openai/text.sse");
    // The text fixture held open after its first delta.
    let cut = text.find("event: response.output_text.delta").unwrap();
    let cut = cut + text[cut..].find("\n\n").unwrap() + 2;
    env.fake.push_to(
        stepper_e2e::fake_llm::Route::Responses,
        stepper_e2e::Reply::Held {
            before: text[..cut].to_string(),
            gate: gate.clone(),
            after: text[cut..].to_string(),
        },
    );
    submit(&client, &id, "take your time").await;
    read_until(
        &mut events,
        |e| matches!(&e.event, AppEvent::TextDelta { text } if text == "Hello"),
    )
    .await;
    client
        .call::<SessionInterrupt>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Interrupted, "{seen:#?}");
    gate.open();

    // After a restart the thread is resumed: Codex sends the earlier turn's words again.
    drop(events);
    drop(client);
    assert!(env.run(&["daemon", "stop"]).status.success());
    env.start_daemon();
    let client = env.client().await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit(&client, &id, "and now?").await;
    let seen = read_until(&mut events, |e| {
        matches!(&e.event, AppEvent::TurnFinished { .. }) && e.turn == Some(2)
    })
    .await;
    assert!(
        seen.iter().any(|e| matches!(
            &e.event,
            AppEvent::TurnFinished {
                status: TurnStatus::Completed,
                ..
            }
        ) && e.turn == Some(2)),
        "{seen:#?}"
    );
    let last = env
        .fake
        .seen(stepper_e2e::fake_llm::Route::Responses)
        .last()
        .unwrap()
        .body
        .to_string();
    assert!(
        last.contains("take your time") && last.contains("and now?"),
        "the thread was not resumed: {last}"
    );
}

/// `session/submit` with an image part, on a session of another agent CLI.
async fn submit_image(client: &stepper_protocol::client::DaemonClient, id: &str) {
    client
        .call::<stepper_protocol::methods::SessionSubmit>(
            stepper_protocol::methods::SessionSubmitParams {
                session_id: id.into(),
                text: "what is this?".into(),
                parts: vec![stepper_protocol::InputPart::image(
                    "dot.png",
                    crate::images::DOT_PNG.to_string(),
                )],
                env: None,
            },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_real_claude_code_and_codex_are_given_an_attached_image() {
    let (Some(claude), Some(codex)) = (real_claude(), real_codex()) else {
        return;
    };
    let env = TestEnv::new();
    // Codex's home, then one setting naming both CLIs.
    codex_home(&env, &codex);
    settings(&env, &claude, serde_json::json!({}));
    let setting = env.places().config_dir.join("setting.json");
    let mut both: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&setting).unwrap()).unwrap();
    both["providers"]["codex-cli"] = serde_json::json!({"kind": "codex-cli", "command": codex});
    std::fs::write(&setting, both.to_string()).unwrap();
    env.start_daemon();
    let client = env.client().await;

    // Claude Code takes it in its stream-json input and sends the API an image block.
    let id = real_session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit_image(&client, &id).await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    let request = env.fake.requests().last().cloned().unwrap();
    let user = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        user["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "image" && b["source"]["data"] == crate::images::DOT_PNG),
        "{user}"
    );

    // Codex takes it as a data URL and sends the Responses API an input_image.
    let id = codex_session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit_image(&client, &id).await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    let sent = env.fake.seen(stepper_e2e::fake_llm::Route::Responses);
    let body = sent.last().unwrap().body.to_string();
    assert!(
        body.contains("input_image") && body.contains(crate::images::DOT_PNG),
        "{body}"
    );

    // A PDF Codex cannot take is refused before it starts, saying so.
    let pdf = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        crate::images::tiny_pdf(),
    );
    client
        .call::<stepper_protocol::methods::SessionSubmit>(
            stepper_protocol::methods::SessionSubmitParams {
                session_id: id.clone(),
                text: "and this?".into(),
                parts: vec![stepper_protocol::InputPart::Document {
                    source: stepper_protocol::attachment::PartSource {
                        data: Some(pdf),
                        name: Some("spec.pdf".into()),
                        ..Default::default()
                    },
                }],
                env: None,
            },
        )
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    let (status, error) = finished(&seen);
    assert_eq!(status, TurnStatus::Failed);
    assert!(
        error.unwrap().contains("Codex CLI takes no PDF"),
        "{seen:#?}"
    );
}
