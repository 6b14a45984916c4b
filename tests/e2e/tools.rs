//! The agent at work: a model (the fake server, scripted) that reads, edits and runs a
//! command in a temp project; and approvals answered from another client.

use std::process::Stdio;

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{
    Asked, Reply, TestEnv, next_approval, read_until, stream_json, until_turn_finished,
};
use stepper_protocol::PermissionMode;
use stepper_protocol::methods::{SessionApprove, SessionApproveParams};
use stepper_protocol::{AppEvent, ApprovalDecision, ToolCallStatus};

#[test]
fn the_agent_reads_edits_and_runs_a_command() {
    let env = TestEnv::new();
    let file = env.project.path().join("hello.txt");
    std::fs::write(&file, "hello world\n").unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "read",
        json!({"path": "hello.txt"}),
    )])));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "edit",
        json!({"path": "hello.txt", "old_string": "world", "new_string": "stepper"}),
    )])));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t3",
        "bash",
        json!({"command": "cat hello.txt; echo done >&2"}),
    )])));
    env.fake.push(Reply::text(&["Changed it."]));

    // accept-edits: the edit runs without asking; `cat` is read-only.
    let out = env.run(&[
        "ask",
        "--mode",
        "accept-edits",
        "--format",
        "stream-json",
        "greet stepper",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello stepper\n");

    let events = stream_json(&out);
    let finished: Vec<(String, ToolCallStatus)> = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallFinished {
                call_id, status, ..
            } => Some((call_id.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        [
            ("t1".into(), ToolCallStatus::Ok),
            ("t2".into(), ToolCallStatus::Ok),
            ("t3".into(), ToolCallStatus::Ok)
        ]
    );
    let diff = events.iter().find_map(|e| match &e.event {
        AppEvent::ToolCallFinished { call_id, diff, .. } if call_id == "t2" => diff.clone(),
        _ => None,
    });
    assert!(diff.unwrap().contains("+hello stepper"));
    assert!(events.iter().any(|e| matches!(&e.event, AppEvent::ToolOutputDelta { call_id, text } if call_id == "t3" && text.contains("hello stepper"))));

    // The model saw each result before its next call.
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 4);
    let tool_names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Claude Code's names: the dialect Anthropic's models were trained on.
    for name in [
        "Bash", "Read", "Edit", "Write", "Grep", "Glob", "LS", "WebFetch",
    ] {
        assert!(tool_names.contains(&name), "{name} offered: {tool_names:?}");
    }
    let last = requests[3]["messages"].as_array().unwrap();
    let result = &last[last.len() - 1]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "t3");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("hello stepper")
    );
}

/// `stepper ask` with no terminal and nobody attached to answer denies what needs approval
/// at once, finishes the turn, lists the denials and exits 4; with `--wait-approval=SECS`
/// it waits that long first.
#[test]
fn a_headless_ask_denies_what_needs_approval_and_says_so() {
    let env = TestEnv::new();
    for _ in 0..2 {
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            "t1",
            "bash",
            json!({"command": "touch made.txt"}),
        )])));
        env.fake.push(Reply::text(&["could not"]));
    }
    let out = env
        .stepper()
        .args(["ask", "--format", "json", "make a file"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("denied: no terminal to ask at"), "{stderr}");
    assert!(stderr.contains("1 tool call denied"), "{stderr}");
    let result: stepper_protocol::methods::AskResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result.status, stepper_protocol::TurnStatus::Completed);
    assert_eq!(result.text, "could not");
    let [denied] = &result.permission_denials[..] else {
        panic!("{result:?}");
    };
    assert_eq!(denied.tool, "bash");
    assert_eq!(denied.command.as_deref(), Some("touch made.txt"));
    assert!(!env.project.path().join("made.txt").exists());
    // The model was told, and the turn is over: the session is idle.
    let last = env.fake.requests().last().unwrap().clone();
    assert!(last.to_string().contains("did not allow"), "{last}");
    let sessions = env.run(&["sessions", "--json"]);
    assert!(
        !String::from_utf8_lossy(&sessions.stdout).contains("\"running\""),
        "{}",
        String::from_utf8_lossy(&sessions.stdout)
    );

    // Told to wait a second, it waits, then denies the same way.
    let out = env
        .stepper()
        .args(["ask", "--wait-approval=1", "make a file"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("waiting 1 s"), "{stderr}");
    // What the model was told of the call is said, not only that it was denied.
    assert!(
        stderr.contains("⎿ Denied: ") && stderr.contains("did not allow"),
        "{stderr}"
    );
    assert!(!env.project.path().join("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_by_a_second_client_while_the_first_waits() {
    let env = TestEnv::new();
    env.start_daemon();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch made.txt"}),
    )])));
    env.fake.push(Reply::text(&["ok"]));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "bash",
        json!({"command": "rm -rf keep"}),
    )])));
    env.fake.push(Reply::text(&["fine"]));

    // The first client has no terminal: told to wait, it waits, saying how to answer.
    let ask = env
        .stepper()
        .args([
            "ask",
            "--format",
            "stream-json",
            "--wait-approval",
            "make a file",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let session_id = env.running_session(3).await;
    let second = env.client().await;
    let mut stream = second.subscribe_events(&session_id, 0).await.unwrap();
    let Asked {
        request_id,
        command,
        ..
    } = next_approval(&mut stream).await;
    assert_eq!(command.as_deref(), Some("touch made.txt"));
    assert!(
        !env.project.path().join("made.txt").exists(),
        "nothing runs before the answer"
    );
    let answer = |decision| SessionApproveParams {
        session_id: session_id.clone(),
        request_id: request_id.clone(),
        decision,
    };
    second
        .call::<SessionApprove>(answer(ApprovalDecision::Allow))
        .await
        .unwrap();
    // A late answer is refused, clearly.
    let late = second
        .call::<SessionApprove>(answer(ApprovalDecision::Deny))
        .await
        .unwrap_err();
    assert!(late.to_string().contains("not waiting"), "{late}");

    let out = ask.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stepper approve"),
        "the waiting client says how to answer"
    );
    assert!(env.project.path().join("made.txt").exists());
    let resolved = stream_json(&out).into_iter().find_map(|e| match e.event {
        AppEvent::ApprovalResolved { decision, by, .. } => Some((decision, by)),
        _ => None,
    });
    let (decision, by) = resolved.unwrap();
    assert_eq!(decision, ApprovalDecision::Allow);
    assert!(by.unwrap().starts_with("e2e"), "who answered is recorded");

    // A denial: the command never runs and the model is told.
    std::fs::create_dir(env.project.path().join("keep")).unwrap();
    let ask = env
        .stepper()
        .args([
            "ask",
            "--format",
            "stream-json",
            "--wait-approval",
            "clean up",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session_id = env.running_session(3).await;
    let mut stream = second.subscribe_events(&session_id, 0).await.unwrap();
    let request_id = next_approval(&mut stream).await.request_id;
    second
        .call::<SessionApprove>(SessionApproveParams {
            session_id,
            request_id,
            decision: ApprovalDecision::Deny,
        })
        .await
        .unwrap();
    let out = ask.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "completed, with a denial");
    assert!(env.project.path().join("keep").exists());
    assert!(stream_json(&out).iter().any(|e| matches!(
        e.event,
        AppEvent::ToolCallFinished {
            status: ToolCallStatus::Denied,
            ..
        }
    )));
    let last = env.fake.requests().last().unwrap().clone();
    let msgs = last["messages"].as_array().unwrap();
    assert!(
        msgs[msgs.len() - 1]["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("did not allow")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_reaches_the_model_at_its_next_call() {
    use stepper_protocol::methods::{SessionSteer, SessionSubmitParams};
    let env = TestEnv::new();
    env.start_daemon();
    // The first call runs a command that waits for a file the test creates after steering.
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "while [ ! -f go ]; do sleep 0.02; done; echo waited"}),
    )])));
    env.fake.push(Reply::text(&["ok, in French"]));
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    stepper_e2e::submit(&client, &session, "do it").await;
    read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::ToolCallStarted { .. })
    })
    .await;
    let steer = SessionSubmitParams {
        parts: Vec::new(),
        session_id: session.clone(),
        text: "answer in French".into(),
        env: None,
    };
    client.call::<SessionSteer>(steer).await.unwrap();
    std::fs::write(env.project.path().join("go"), "").unwrap();
    until_turn_finished(&mut stream).await;
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][1]["text"], "answer in French", "{last}");
}

/// Text steered in while the model gives what would be its last answer gets one more model
/// call in the same turn, once, under the `inputId` `session/steer` answered with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_steered_during_the_last_call_gets_one_more_call() {
    use stepper_protocol::methods::{SessionSteer, SessionSubmitParams};
    let env = TestEnv::new();
    env.start_daemon();
    let gate = stepper_e2e::Gate::new();
    env.fake.push(Reply::held(&["here is the plan"], &gate));
    env.fake.push(Reply::text(&["and in French too"]));
    let client = env.client().await;
    let session = env.create_session(&client, None).await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    stepper_e2e::submit(&client, &session, "plan it").await;
    read_until(
        &mut stream,
        |e| matches!(&e.event, AppEvent::TextDelta { text } if text == "here is the plan"),
    )
    .await;
    let steer = SessionSubmitParams {
        parts: Vec::new(),
        session_id: session.clone(),
        text: "say it in French".into(),
        env: None,
    };
    let steered = client.call::<SessionSteer>(steer).await.unwrap();
    assert!(!steered.input_id.is_empty());
    gate.open();
    let seen = until_turn_finished(&mut stream).await;
    let ids: Vec<_> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::Steered { input_id, .. } => Some(input_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, [Some(steered.input_id.clone())]);
    assert!(
        matches!(seen.last().map(|e| &e.event), Some(AppEvent::TurnFinished { status, .. }) if *status == stepper_protocol::TurnStatus::Completed),
        "{seen:#?}"
    );
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 2, "one more call for the steered text");
    let messages = requests[1]["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["content"][0]["text"], "here is the plan");
    assert_eq!(messages[n - 1]["role"], "user");
    assert_eq!(messages[n - 1]["content"][0]["text"], "say it in French");

    // The next turn sees it once, where it was said, and nothing is left over.
    env.fake.push(Reply::text(&["ok"]));
    stepper_e2e::submit(&client, &session, "thanks").await;
    until_turn_finished(&mut stream).await;
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 3);
    let said = requests[2].to_string();
    assert_eq!(said.matches("say it in French").count(), 1, "{said}");
}

/// Text steered in after the answering agent took its last look (here while a Stop hook
/// runs) is not lost: it is queued as the next input, under the same `inputId`, and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_steered_as_the_turn_ends_runs_next_under_its_id() {
    use stepper_protocol::methods::{SessionSteer, SessionSubmitParams};
    let env = TestEnv::new();
    let started = env.home.path().join("stop-started");
    let go = env.home.path().join("go");
    let hook = format!(
        "touch '{}'; while [ ! -f '{}' ]; do sleep 0.02; done",
        started.display(),
        go.display()
    );
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("setting.json"),
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}}).to_string(),
    )
    .unwrap();
    env.start_daemon();
    env.fake.push(Reply::text(&["done"]));
    env.fake.push(Reply::text(&["noted"]));
    let client = env.client().await;
    let session = env.create_session(&client, None).await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    stepper_e2e::submit(&client, &session, "finish up").await;
    stepper_e2e::wait_until("the Stop hook", std::time::Duration::from_secs(20), || {
        started.exists()
    });
    let steer = SessionSubmitParams {
        parts: Vec::new(),
        session_id: session.clone(),
        text: "one more thing".into(),
        env: None,
    };
    let steered = client.call::<SessionSteer>(steer).await.unwrap();
    std::fs::write(&go, "").unwrap();
    let first = until_turn_finished(&mut stream).await;
    let answers = first
        .iter()
        .filter(|e| matches!(e.event, AppEvent::MessageCompleted { .. }))
        .count();
    assert_eq!(
        answers, 1,
        "no more model calls in the first turn: {first:#?}"
    );
    let second = until_turn_finished(&mut stream).await;
    let queued = second.iter().chain(&first).find_map(|e| match &e.event {
        AppEvent::InputQueued { input_id, text, .. } if text == "one more thing" => {
            Some(input_id.clone())
        }
        _ => None,
    });
    assert_eq!(queued.as_deref(), Some(steered.input_id.as_str()));
    assert!(
        second.iter().any(|e| matches!(&e.event,
            AppEvent::TurnStarted { input_id, .. } if *input_id == steered.input_id)),
        "{second:#?}"
    );
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 2);
    let said = requests[1].to_string();
    assert_eq!(said.matches("one more thing").count(), 1, "{said}");
}

#[test]
fn rewind_restores_edits_and_removes_what_the_shell_created() {
    let env = TestEnv::new();
    let project = env.project.path();
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    std::fs::create_dir(project.join("src")).unwrap();
    std::fs::write(project.join("src/keep.rs"), "fn main() {}\n").unwrap();
    let ask = |args: &[&str]| {
        let mut all = vec!["ask", "--format", "json"];
        all.extend_from_slice(args);
        let out = env.run(&all);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<stepper_protocol::methods::AskResult>(&out.stdout).unwrap()
    };
    env.fake.push(Reply::text(&["hello"]));
    let first = ask(&["--yes", "hi"]);
    let id = first.session_id;

    env.fake.push(Reply::Sse(tool_use_stream(&[
        (
            "t1",
            "edit",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        ),
        (
            "t2",
            "bash",
            json!({"command": "echo fresh > src/new.txt && rm src/keep.rs"}),
        ),
    ])));
    env.fake.push(Reply::text(&["done"]));
    ask(&["--session", &id, "change things"]);
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "two\n"
    );
    assert!(project.join("src/new.txt").exists() && !project.join("src/keep.rs").exists());

    let out = env.run(&["rewind", &id, "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("3 file(s) restored"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "one\n",
        "the edit is undone"
    );
    assert!(
        !project.join("src/new.txt").exists(),
        "what the shell created is gone"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/keep.rs")).unwrap(),
        "fn main() {}\n",
        "what it deleted is back"
    );

    // The conversation is rewound too: the next call sees turn 1 only.
    env.fake.push(Reply::text(&["again"]));
    ask(&["--session", &id, "next"]);
    let messages = env.fake.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        messages, 3,
        "turn 1 (question, answer) and the new question"
    );

    let bad = env.run(&["rewind", &id, "99"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("does not exist"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_turn_closes_its_approval_for_everyone() {
    let env = TestEnv::new();
    env.start_daemon();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch never.txt"}),
    )])));
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(PermissionMode::Default))
        .await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    stepper_e2e::submit(&client, &session, "make a file").await;
    let request_id = next_approval(&mut stream).await.request_id;
    client
        .call::<stepper_protocol::methods::SessionInterrupt>(
            stepper_protocol::methods::SessionParams {
                session_id: session.clone(),
            },
        )
        .await
        .unwrap();
    let resolved = until_turn_finished(&mut stream)
        .await
        .into_iter()
        .find_map(|e| match e.event {
            AppEvent::ApprovalResolved {
                request_id: id,
                decision,
                ..
            } => Some((id, decision)),
            _ => None,
        });
    assert_eq!(resolved, Some((request_id, ApprovalDecision::Deny)));
    assert!(!env.project.path().join("never.txt").exists());
}

/// A command that leaves its process group (`setsid … &`) does not outlive its turn: it
/// still carries the group's token, and the token is swept.
#[test]
fn what_a_command_starts_with_setsid_ends_with_the_turn() {
    let env = TestEnv::new();
    let marker = format!("301.{}{}", std::process::id(), 7);
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        // The line ends only once the sleeper is in its own session (it wrote its pid).
        json!({"command": format!(
            "setsid sh -c 'echo $$ > sleeper.pid; exec sleep {marker}' </dev/null >/dev/null 2>&1 & \
             while [ ! -s sleeper.pid ]; do :; done; echo started"
        )}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    let out = env.run(&["ask", "--yes", "--format", "json", "start something"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.fake.requests();
    assert!(
        requests.last().unwrap().to_string().contains("started"),
        "the command ran"
    );
    stepper_e2e::wait::wait_until(
        "the setsid sleeper to be gone",
        std::time::Duration::from_secs(10),
        || stepper_process::testing::processes_with(&marker).is_empty(),
    );
    // Its group's entry goes too, once nothing carries the token (swept at the turn's end).
    let registry = env.places().data_dir.join("children");
    let entries = std::fs::read_dir(&registry).unwrap().count();
    assert_eq!(entries, 0, "entries left in {}", registry.display());
}

/// Read syscalls the daemon made so far (`/proc/<pid>/io`'s `syscr`): its own count, so
/// another test's work on the machine does not change it.
fn daemon_reads(pid: i32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("syscr: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// `n` idle processes, killed when dropped.
struct Idle(Vec<std::process::Child>);

impl Drop for Idle {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A bash call keeps to its own processes (its reaper holds them): the daemon reads nothing
/// of the machine's other processes, so a call costs it the same whether 100 or 600 run.
/// Before, every call read `/proc/<pid>/stat` and `environ` of every process, looking for
/// the ones carrying its group's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_call_reads_nothing_of_other_processes() {
    const MORE: usize = 500;
    let env = TestEnv::new();
    // Dumpable, so that its `/proc/<pid>/io` can be read.
    env.start_daemon_with(&[("STEPPER_DUMPABLE", "1")]);
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    let pid = env.daemon_pid().unwrap();
    // The reads of one turn that runs `true` (the fewest of a few: a turn's own reads vary a
    // little with how the model's answer was cut into packets).
    let mut turn = async || {
        let mut fewest = u64::MAX;
        for _ in 0..5 {
            env.fake.push(Reply::Sse(tool_use_stream(&[(
                "t1",
                "bash",
                json!({"command": "true"}),
            )])));
            env.fake.push(Reply::text(&["done"]));
            let before = daemon_reads(pid);
            stepper_e2e::submit(&client, &session, "go").await;
            until_turn_finished(&mut stream).await;
            fewest = fewest.min(daemon_reads(pid) - before);
        }
        fewest
    };
    turn().await;
    let alone = turn().await;
    let idle = Idle(
        (0..MORE)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("3600")
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    let crowded = turn().await;
    drop(idle);
    eprintln!("reads per turn: {alone} alone, {crowded} with {MORE} more processes");
    // Looking at each process once would take at least two reads of each (its stat).
    assert!(
        crowded < alone + (MORE as u64) / 2,
        "a bash call's reads grow with the machine's processes: {alone} alone, {crowded} \
         with {MORE} more"
    );
}

/// "Always" holds for the rest of the session, as Claude Code's "don't ask again this
/// session" does: the same command in a later turn runs unasked, and another does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_holds_for_the_sessions_later_turns() {
    let env = TestEnv::new();
    env.start_daemon();
    let call = |id: &str, command: &str| {
        Reply::Sse(tool_use_stream(&[(
            id,
            "bash",
            json!({ "command": command }),
        )]))
    };
    env.fake.push(call("t1", "touch first.txt"));
    env.fake.push(Reply::text(&["one"]));
    env.fake.push(call("t2", "touch first.txt"));
    env.fake.push(Reply::text(&["two"]));
    env.fake.push(call("t3", "touch other.txt"));
    env.fake.push(Reply::text(&["three"]));
    let client = env.client().await;
    let session = env.create_session(&client, None).await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    stepper_e2e::submit(&client, &session, "make it").await;
    let asked = next_approval(&mut stream).await;
    client
        .call::<SessionApprove>(SessionApproveParams {
            session_id: session.clone(),
            request_id: asked.request_id,
            decision: ApprovalDecision::AllowAlways,
        })
        .await
        .unwrap();
    until_turn_finished(&mut stream).await;

    // The next turn: the same command runs without a question.
    stepper_e2e::submit(&client, &session, "again").await;
    let seen = until_turn_finished(&mut stream).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. })),
        "{seen:#?}"
    );
    assert!(seen.iter().any(|e| matches!(
        e.event,
        AppEvent::ToolCallFinished {
            status: ToolCallStatus::Ok,
            ..
        }
    )));

    // Another command is still asked about.
    stepper_e2e::submit(&client, &session, "something else").await;
    let asked = next_approval(&mut stream).await;
    assert_eq!(asked.command.as_deref(), Some("touch other.txt"));
    client
        .call::<SessionApprove>(SessionApproveParams {
            session_id: session.clone(),
            request_id: asked.request_id,
            decision: ApprovalDecision::Deny,
        })
        .await
        .unwrap();
    until_turn_finished(&mut stream).await;
    assert!(!env.project.path().join("other.txt").exists());
}
