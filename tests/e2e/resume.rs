//! Sessions outlive clients and daemons: the model's context (tool calls and results
//! included) is stored, and `ask` continues a session by id, by folder, or leaves it running.

use nix::sys::signal::Signal;
use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Gate, Reply, TestEnv};
use stepper_protocol::PermissionMode;
use stepper_protocol::methods::AskResult;
use stepper_protocol::{SessionInfo, SessionStatus, TurnStatus};

fn ask(env: &TestEnv, args: &[&str]) -> AskResult {
    let mut all = vec!["ask", "--format", "json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn the_context_survives_a_crash_and_sessions_continue() {
    let env = TestEnv::new();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "echo from-the-tool"}),
    )])));
    env.fake.push(Reply::text(&["first answer"]));
    let first = ask(&env, &["--yes", "run it"]);
    assert_eq!(first.status, TurnStatus::Completed);

    env.signal_daemon(Signal::SIGKILL);

    // A new daemon; the session goes on with exactly the context the model had.
    let second = ask(&env, &["--session", &first.session_id, "and again"]);
    assert_eq!(second.status, TurnStatus::Completed);
    assert_eq!(second.session_id, first.session_id);
    let requests = env.fake.requests();
    let messages = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let kinds: Vec<String> = messages
        .iter()
        .map(|m| {
            format!(
                "{}:{}",
                m["role"].as_str().unwrap(),
                m["content"][0]["type"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user:text",
            "assistant:tool_use",
            "user:tool_result",
            "assistant:text",
            "user:text"
        ],
        "{}",
        env.daemon_log()
    );
    assert!(
        messages[2]["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("from-the-tool")
    );

    // --continue: the latest session in this folder.
    let third = ask(&env, &["--continue", "once more"]);
    assert_eq!(third.session_id, first.session_id);
    let n = env.fake.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(n, 7);

    let out = env.run(&["ask", "--session", "no-such-session", "hi"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("stepper sessions"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_leaves_the_turn_running() {
    let env = TestEnv::new();
    let gate = Gate::new();
    env.fake.push(Reply::held(&["working on it"], &gate));
    let out = env.run(&["ask", "--detach", "long job"]);
    assert!(out.status.success());
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    env.running_session(3).await;
    gate.open();
    let client = env.client().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let s: SessionInfo = client
            .call::<stepper_protocol::methods::SessionGet>(
                stepper_protocol::methods::SessionParams {
                    session_id: id.clone(),
                },
            )
            .await
            .unwrap()
            .session;
        if s.status == SessionStatus::Idle && s.turns == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the detached turn did not finish"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[test]
fn sessions_show_export_and_rm() {
    let env = TestEnv::new();
    let first = ask(&env, &["explain the build"]);
    let second = ask(&env, &["--session", &first.session_id, "and the tests"]);
    assert_eq!(second.session_id, first.session_id);

    insta::assert_snapshot!("list", env.shown(&["sessions"]));
    // How many events: the last client's leaving may be recorded yet or not.
    let show = env.shown(&["sessions", "show", &first.session_id]);
    insta::assert_snapshot!("show", show.replace(r"events:  \d+", "events:  [n]"));

    // The JSON-lines export round-trips: the same events a subscriber gets, in order.
    let out = env.run(&["sessions", "export", &first.session_id]);
    let exported: Vec<stepper_protocol::EventEnvelope> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = exported.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let again: Vec<String> = exported
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(
        again.join("\n") + "\n",
        String::from_utf8_lossy(&out.stdout)
    );

    let md = env.run(&[
        "sessions",
        "export",
        &first.session_id,
        "--format",
        "markdown",
    ]);
    insta::assert_snapshot!("markdown", env.normalized(&md));

    insta::assert_snapshot!(
        env.shown(&["sessions", "rm", &first.session_id]),
        @"deleted session [id]"
    );
    insta::assert_snapshot!(
        "show_deleted",
        env.shown(&["sessions", "show", &first.session_id])
    );
    let list = env.run(&["sessions", "--json"]);
    assert_eq!(String::from_utf8_lossy(&list.stdout).trim(), "[]");
}

#[test]
fn fork_starts_a_session_from_a_turn() {
    let env = TestEnv::new();
    env.fake.push(Reply::text(&["answer one"]));
    env.fake.push(Reply::text(&["answer two"]));
    let first = ask(&env, &["question one"]);
    ask(&env, &["--session", &first.session_id, "question two"]);

    let out = env.run(&["sessions", "fork", &first.session_id, "--turn", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fork = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_ne!(fork, first.session_id);
    let show = env.run(&["sessions", "show", &fork]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("turn   1  completed   question one"),
        "{text}"
    );
    assert!(!text.contains("question two"), "{text}");

    // The fork goes on from turn 1's context; the original keeps both turns.
    env.fake.push(Reply::text(&["forked answer"]));
    let next = ask(&env, &["--session", &fork, "question three"]);
    assert_eq!(next.session_id, fork);
    let requests = env.fake.requests();
    let texts: Vec<String> = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(texts, ["question one", "answer one", "question three"]);
    let show = env.run(&["sessions", "show", &fork]);
    assert!(String::from_utf8_lossy(&show.stdout).contains("turn   2  completed   question three"));

    insta::assert_snapshot!(
        "fork_past_the_end",
        env.shown(&["sessions", "fork", &first.session_id, "--turn", "9"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mode_holds_after_a_restart() {
    use stepper_protocol::methods::{
        SessionGet, SessionParams, SessionSetMode, SessionSetModeParams,
    };
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let created = env
        .create_session(&client, Some(PermissionMode::Plan))
        .await;
    let other = env.create_session(&client, None).await;
    client
        .call::<SessionSetMode>(SessionSetModeParams {
            session_id: other.clone(),
            mode: PermissionMode::AcceptEdits,
        })
        .await
        .unwrap();
    drop(client);

    env.signal_daemon(Signal::SIGKILL);
    env.start_daemon();
    let client = env.client().await;
    for (id, mode) in [
        (created, PermissionMode::Plan),
        (other, PermissionMode::AcceptEdits),
    ] {
        let got = client
            .call::<SessionGet>(SessionParams { session_id: id })
            .await
            .unwrap();
        assert_eq!(got.mode, Some(mode));
    }
}

/// A session nothing uses leaves the daemon's memory (a daemon serving many `ask`s would
/// otherwise grow by each) and comes back whole from the store; a followed one stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiescent_sessions_leave_memory_and_come_back_whole() {
    use stepper_protocol::methods::{DaemonInfo, Empty, SessionSubmit, SessionSubmitParams};
    let env = TestEnv::new();
    env.fake.push(Reply::text(&["one"]));
    let first = ask(&env, &["first"]);
    env.fake.push(Reply::text(&["other"]));
    ask(&env, &["another session"]);

    let client = env.client().await;
    let followed = env.create_session(&client, None).await;
    let mut stream = client.subscribe_events(&followed, 0).await.unwrap();
    let live = || async {
        client
            .call::<DaemonInfo>(Empty {})
            .await
            .unwrap()
            .live_sessions
    };
    let only_followed = || async { live().await == 1 };
    stepper_e2e::wait::wait_until_async(
        "the unused sessions to leave memory",
        std::time::Duration::from_secs(20),
        only_followed,
    )
    .await;

    // The first session continues from the store: its context and its seqs go on.
    env.fake.push(Reply::text(&["three"]));
    let again = ask(&env, &["--session", &first.session_id, "and again"]);
    assert_eq!(again.text, "three");
    let request = env.fake.requests().pop().unwrap();
    assert_eq!(
        request["messages"].as_array().unwrap().len(),
        3,
        "{request}"
    );
    let mut history = client.subscribe_events(&first.session_id, 0).await.unwrap();
    let events = stepper_e2e::events::read_until(&mut history, |e| {
        e.turn == Some(2) && matches!(e.event, stepper_protocol::AppEvent::TurnFinished { .. })
    })
    .await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    drop(history);

    // The followed session was never let go: its subscription sees its next turn.
    stepper_e2e::wait::wait_until_async(
        "the continued session to leave memory again",
        std::time::Duration::from_secs(20),
        only_followed,
    )
    .await;
    env.fake.push(Reply::text(&["still here"]));
    client
        .call::<SessionSubmit>(SessionSubmitParams {
            parts: Vec::new(),
            session_id: followed.clone(),
            text: "hello".into(),
            env: Some(env.envs().into_iter().collect()),
        })
        .await
        .unwrap();
    let events = stepper_e2e::events::until_turn_finished(&mut stream).await;
    assert!(events.iter().any(|e| matches!(
        &e.event,
        stepper_protocol::AppEvent::TextDelta { text } if text == "still here"
    )));
}

/// Two sessions made moments apart share their ids' time prefix: their short forms come
/// from the random part and differ, every command takes them (or any unique prefix), and a
/// prefix that names both is refused with the candidates.
#[test]
fn short_ids_are_unique_and_every_command_takes_a_prefix() {
    let env = TestEnv::new();
    env.fake.push(Reply::text(&["one"]));
    env.fake.push(Reply::text(&["two"]));
    env.fake.push(Reply::text(&["three"]));
    let a = ask(&env, &["first"]).session_id;
    let b = ask(&env, &["second"]).session_id;
    let short = stepper_protocol::session::short_ids(&[&b, &a]);
    let listed = env.run(&["sessions"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    let first_column: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        first_column,
        [short[0].as_str(), short[1].as_str()],
        "{table}"
    );
    assert_ne!(
        a[..8],
        short[1][..8],
        "the short form is not the time prefix"
    );

    // The short form names the session, for `sessions show` and `ask --session` alike.
    let show = env.run(&["sessions", "show", &short[1]]);
    assert!(show.status.success(), "{show:?}");
    assert!(String::from_utf8_lossy(&show.stdout).contains(&a));
    let again = ask(&env, &["--session", &short[1], "third"]);
    assert_eq!(again.session_id, a);

    // The time prefix both share names both: refused, with the candidates.
    let shared = common(&a, &b);
    let out = env.run(&["sessions", "show", &a[..shared.max(4)]]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("names 2 sessions"), "{said}");
    assert!(
        said.contains(&short[0]) && said.contains(&short[1]),
        "{said}"
    );
    insta::assert_snapshot!("no_match", env.shown(&["sessions", "show", "zzzzzzzz"]));
}

fn common(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}
