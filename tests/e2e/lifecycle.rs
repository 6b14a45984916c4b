//! The daemon's life: crash and restart, one daemon per data dir, clean shutdown.

use nix::sys::signal::Signal;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Gate, Reply, TestEnv};
use stepper_process::testing::processes_with;
use stepper_protocol::methods::{
    AskResult, SessionExport, SessionExportParams, SessionGet, SessionParams,
};
use stepper_protocol::{
    AppEvent, EventEnvelope, SessionInfo, SessionStatus, ToolCallStatus, TurnStatus,
};

async fn all_events(env: &TestEnv, session_id: &str) -> Vec<EventEnvelope> {
    let client = env.client().await;
    let last = client
        .call::<SessionGet>(SessionParams {
            session_id: session_id.into(),
        })
        .await
        .unwrap()
        .session
        .last_seq;
    let mut stream = client
        .subscribe_events(&session_id.to_string(), 0)
        .await
        .unwrap();
    let mut events = Vec::new();
    while events.len() < last as usize {
        events.push(stream.next().await.unwrap().unwrap());
    }
    events
}

/// A daemon whose clean stop waits only 200 ms for running turns: a held turn will not
/// finish in it.
fn start_with_a_short_grace(env: &TestEnv) {
    let out = env
        .stepper()
        .env("STEPPER_SHUTDOWN_GRACE_MS", "200")
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(out.status.success());
}

fn ask_json(env: &TestEnv, prompt: &str) -> AskResult {
    let out = env.run(&["ask", "--format", "json", prompt]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sessions(env: &TestEnv) -> Vec<SessionInfo> {
    let out = env.run(&["sessions", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_a_turn_loses_nothing() {
    let env = TestEnv::new();
    let result = ask_json(&env, "remember this");
    let before = all_events(&env, &result.session_id).await;
    // The turn ended; only presence (the client leaving) may come after it.
    let last_of_turn = before
        .iter()
        .rev()
        .find(|e| {
            !matches!(
                e.event,
                AppEvent::ClientAttached { .. } | AppEvent::ClientDetached { .. }
            )
        })
        .unwrap();
    assert!(matches!(last_of_turn.event, AppEvent::TurnFinished { .. }));

    env.signal_daemon(Signal::SIGKILL);
    assert!(
        env.places().socket.exists(),
        "a killed daemon leaves its socket behind"
    );

    // The next command finds the stale socket, starts a new daemon, and everything is there.
    let listed = sessions(&env);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, result.session_id);
    assert_eq!(listed[0].status, SessionStatus::Idle);
    assert_eq!(listed[0].title.as_deref(), Some("remember this"));
    // Every event seen before the crash is still there, unchanged (reading adds presence
    // events after them).
    let after = all_events(&env, &result.session_id).await;
    assert_eq!(after[..before.len()], before[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_a_turn_ends_it_as_interrupted_on_restart() {
    let env = TestEnv::new();
    let gate = Gate::new();
    env.fake.push(Reply::held(&["half an ", "answer"], &gate));
    let ask = env
        .stepper()
        .args(["ask", "--format", "json", "long job"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // Wait until the partial answer is committed, then kill the daemon mid-turn.
    env.start_daemon();
    let session_id = env.running_session(6).await;
    env.signal_daemon(Signal::SIGKILL);
    let out = ask.wait_with_output().unwrap();
    assert!(!out.status.success(), "ask reports the lost daemon");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("stepper ask --session {session_id}")),
        "ask names the session to continue: {said}"
    );

    let listed = sessions(&env);
    assert_eq!(
        listed[0].status,
        SessionStatus::Interrupted,
        "not stuck 'running' after a crash, and not 'idle' either"
    );
    let events = all_events(&env, &session_id).await;
    let deltas: String = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas, "half an answer",
        "what streamed before the crash is kept"
    );
    match &events.last().unwrap().event {
        AppEvent::TurnFinished {
            status: TurnStatus::Interrupted,
            error: Some(e),
            error_kind: None,
        } => {
            assert!(e.contains("submit again"), "{e}");
        }
        other => panic!("expected an interrupted turn, got {other:?}"),
    }
    assert_eq!(events.last().unwrap().turn, Some(1));
    gate.open();
}

#[test]
fn a_second_daemon_on_the_same_data_dir_refuses() {
    let env = TestEnv::new();
    env.start_daemon();
    let first = env.daemon_pid().unwrap();
    let out = env.stepperd().output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("another stepperd (pid {first}) already owns")),
        "{stderr}"
    );
    insta::assert_snapshot!(env.normalized(&out));
    assert_eq!(
        env.daemon_pid(),
        Some(first),
        "the first daemon is untouched"
    );
    let status = env.run(&["daemon", "status"]);
    assert!(status.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_interrupts_running_turns_and_removes_the_socket() {
    let env = TestEnv::new();
    start_with_a_short_grace(&env);
    let gate = Gate::new();
    env.fake.push(Reply::held(&["working"], &gate));
    let ask = env
        .stepper()
        .args(["ask", "--format", "json", "long"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    env.running_session(5).await;
    // Signal the daemon directly, as systemd or a logout would.
    let socket = env.places().socket;
    env.signal_daemon(Signal::SIGTERM);
    assert!(!socket.exists(), "a clean stop removes the socket");

    let out = ask.wait_with_output().unwrap();
    let result: AskResult = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ask printed no result ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(
        result.status,
        TurnStatus::Interrupted,
        "the client saw the turn end before the daemon left"
    );
    assert_eq!(result.text, "working");
    assert_eq!(out.status.code(), Some(130));
    gate.open();
}

/// A clean stop (SIGTERM, as systemd or `stepper daemon stop` sends) interrupts a command
/// once the grace period is over: the call and the turn say the daemon was stopped, not that
/// the user cancelled, and the command is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_command_says_the_daemon_was_stopped() {
    let env = TestEnv::new();
    start_with_a_short_grace(&env);
    let marker = format!("{}.{}", std::process::id(), 7171);
    // `sleep 60<pid>.7171` is a valid (very long) duration and a command line to look for.
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        serde_json::json!({ "command": format!("sleep 60{marker}") }),
    )])));
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    stepper_e2e::submit(&client, &session, "run the long thing").await;
    stepper_e2e::wait_until(
        "the command to start",
        std::time::Duration::from_secs(20),
        || !processes_with(&marker).is_empty(),
    );
    drop(client);
    env.signal_daemon(Signal::SIGTERM);
    let left = processes_with(&marker);
    for pid in &left {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid as i32), Signal::SIGKILL);
    }
    assert!(left.is_empty(), "the command outlived a clean stop");

    // Read from the store itself: no daemon runs now.
    let store = stepper_store::Store::open(&env.places().store_path())
        .await
        .unwrap();
    let events = store.events_after(&session, 0, 10_000).await.unwrap();
    store.close().await;
    let call = events.iter().find_map(|e| match &e.event {
        AppEvent::ToolCallFinished { status, output, .. } => Some((*status, output.clone())),
        _ => None,
    });
    let (status, output) = call.unwrap_or_else(|| panic!("the call never ended: {events:#?}"));
    assert_eq!(status, ToolCallStatus::Cancelled);
    assert!(output.contains("the daemon was stopped"), "{output}");
    assert!(!output.contains("user"), "{output}");
    match &events.last().unwrap().event {
        AppEvent::TurnFinished {
            status: TurnStatus::Interrupted,
            error: Some(error),
            error_kind: None,
        } => assert!(error.contains("the daemon was stopped"), "{error}"),
        other => panic!("expected the turn's end, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_queued_at_a_clean_stop_runs_at_the_next_start() {
    let env = TestEnv::new();
    start_with_a_short_grace(&env);
    let gate = Gate::new();
    env.fake.push(Reply::held(&["working"], &gate));
    env.fake.push(Reply::text(&["second answer"]));
    let client = env.client().await;
    let session = env.create_session(&client, None).await;
    stepper_e2e::submit(&client, &session, "first").await;
    stepper_e2e::submit(&client, &session, "second").await;
    env.running_session(5).await;
    drop(client);
    env.signal_daemon(Signal::SIGTERM);
    gate.open();

    // The stopping daemon interrupted the first turn and started no other (read from the
    // store itself: no daemon runs now).
    let store = stepper_store::Store::open(&env.places().store_path())
        .await
        .unwrap();
    let events = store.events_after(&session, 0, 10_000).await.unwrap();
    store.close().await;
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TurnStarted { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["first"], "{events:#?}");
    env.start_daemon();
    stepper_e2e::wait_until_async(
        "the queued input to run",
        std::time::Duration::from_secs(20),
        || async {
            all_events(&env, &session).await.iter().any(|e| {
                e.turn == Some(2)
                    && matches!(
                        e.event,
                        AppEvent::TurnFinished {
                            status: TurnStatus::Completed,
                            ..
                        }
                    )
            })
        },
    )
    .await;
}

/// A daemon a terminal started (here `stepper daemon start` at a real tty) is a session of
/// its own with no controlling terminal: the terminal's job control never stops it or the
/// login shell it reads the environment from, and `doctor` finds that environment read.
#[test]
fn a_daemon_started_at_a_terminal_leaves_the_terminal() {
    let env = TestEnv::new();
    let tmux = stepper_e2e::Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("STEPPER_LOGIN_ENV=on stepper daemon start && echo STAR\"\"TED");
    pane.wait_for_text("STARTED");
    let pid = env.daemon_pid().expect("the daemon runs");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's name (in parentheses): state, ppid, pgrp, session, tty_nr.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    assert_eq!(fields[3], pid.to_string(), "a session of its own: {stat}");
    assert_eq!(fields[4], "0", "no controlling terminal: {stat}");
    // Its login shell (`bash -l -i`) was read, not stopped for touching the terminal.
    let mut said = String::new();
    stepper_e2e::wait_until(
        "the login environment read",
        std::time::Duration::from_secs(30),
        || {
            let doctor = env.run(&["doctor"]);
            said = String::from_utf8_lossy(&doctor.stdout).into_owned();
            !said.contains("still being read")
        },
    );
    assert!(said.contains("variables fill what"), "{said}");
}

#[test]
fn stop_and_status() {
    let env = TestEnv::new();
    assert_eq!(env.run(&["daemon", "status"]).status.code(), Some(3));
    env.start_daemon();
    insta::assert_snapshot!(env.shown(&["daemon", "start"]), @"stepperd is already running");
    let out = env.run(&["daemon", "stop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `daemon stop` returns once the daemon let go of its lock and socket; its process may
    // still be a moment from its end.
    stepper_e2e::wait_until(
        "the daemon's process to end",
        std::time::Duration::from_secs(10),
        || env.daemon_pid().is_none(),
    );
    assert!(!env.places().socket.exists());
    assert_eq!(env.run(&["daemon", "status"]).status.code(), Some(3));
}

#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.start_daemon();
    let places = env.places();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&places.socket), 0o600);
    assert_eq!(mode(&places.data_dir), 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_larger_than_a_message_still_exports_whole() {
    let env = TestEnv::new();
    // A command that prints 40 MB: its output streams into the log as events, more than one
    // reply may carry (32 MiB).
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        serde_json::json!({"command": "yes yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy | head -c 40000000"}),
    )])));
    env.fake.push(Reply::text(&["printed"]));
    let out = env.run(&["ask", "--yes", "--format", "json", "print a lot"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = sessions(&env)[0].id.clone();

    let client = env.client().await;
    let first = client
        .call::<SessionExport>(SessionExportParams {
            session_id: id.clone(),
            after_seq: 0,
            limit: None,
        })
        .await
        .unwrap();
    let bytes: usize = first.events.iter().map(|e| e.get().len()).sum();
    assert!(first.next_after_seq.is_some(), "more than one page");
    assert!(bytes < 9 * 1024 * 1024, "a page stops at 8 MiB: {bytes}");

    let out = env.run(&["sessions", "export", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<EventEnvelope> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let last = sessions(&env)[0].last_seq;
    assert_eq!(lines.len() as u64, last);
    assert!(lines.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
}
