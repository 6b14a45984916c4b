//! The daemon killed with SIGKILL at points inside a turn, then started again: every event a
//! client saw is still there, the turn ends as interrupted, the session goes on with what
//! the turn had done in its context, queued inputs run, and no child of the dead daemon
//! survives it (a command's reaper takes it down; the child registry is the second line).

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Gate, Reply, TestEnv, read_until, submit, wait_until};
use stepper_process::testing::processes_with;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{SessionCreate, SessionCreateParams};
use stepper_protocol::{AppEvent, EventEnvelope, ToolCallStatus, TurnStatus};
use stepper_protocol::{PermissionMode, SandboxMode};

/// Kill the daemon, start a new one, and check that it still has every event `seen` — the
/// same seq, the same event — then follow the session until `done`.
async fn crash_and_replay(
    env: &TestEnv,
    session: &str,
    seen: &[EventEnvelope],
    done: impl FnMut(&EventEnvelope) -> bool,
) -> (DaemonClient, Vec<EventEnvelope>) {
    env.signal_daemon(Signal::SIGKILL);
    env.start_daemon();
    let client = env.client().await;
    let mut stream = client
        .subscribe_events(&session.to_string(), 0)
        .await
        .unwrap();
    let replayed = read_until(&mut stream, done).await;
    for e in seen {
        let kept = replayed.get(e.seq as usize - 1);
        assert_eq!(kept, Some(e), "an event a client saw is missing or changed");
    }
    (client, replayed)
}

fn finished(events: &[EventEnvelope], turn: u32) -> Option<(TurnStatus, Option<String>)> {
    events.iter().find_map(|e| match &e.event {
        AppEvent::TurnFinished { status, error, .. } if e.turn == Some(turn) => {
            Some((*status, error.clone()))
        }
        _ => None,
    })
}

/// Kills what a failed test left behind.
struct Sweep(String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for pid in processes_with(&self.0) {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
}

fn text_of(message: &serde_json::Value) -> String {
    message["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str().or(p["content"].as_str()))
                // What the environment was is not what anyone said.
                .filter(|t| !t.starts_with("<environment_context>"))
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_stream_with_an_input_queued() {
    let env = TestEnv::new();
    env.start_daemon();
    let gate = Gate::new();
    env.fake.push(Reply::held(&["one ", "two "], &gate));
    env.fake.push(Reply::text(&["second answer"]));
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(PermissionMode::Default))
        .await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    submit(&client, &session, "first").await;
    submit(&client, &session, "second").await;
    let mut text = String::new();
    let seen = read_until(&mut stream, |e| {
        if let AppEvent::TextDelta { text: t } = &e.event {
            text.push_str(t);
        }
        text == "one two "
    })
    .await;

    let (_client, replayed) = crash_and_replay(&env, &session, &seen, |e| {
        e.turn == Some(2) && matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    let (status, error) = finished(&replayed, 1).expect("turn 1 ended");
    assert_eq!(status, TurnStatus::Interrupted);
    assert!(error.unwrap().contains("submit again"));
    // The input queued behind the dead turn ran, once.
    assert_eq!(finished(&replayed, 2).unwrap().0, TurnStatus::Completed);
    let started: Vec<&str> = replayed
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TurnStarted { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["first", "second"]);
    // The model saw the interrupted turn: its input and the text it had streamed.
    let requests = env.fake.requests();
    let messages = requests.last().unwrap()["messages"].as_array().unwrap();
    let texts: Vec<String> = messages.iter().map(text_of).collect();
    assert_eq!(
        texts,
        ["first", "one two ", "second"],
        "{}",
        env.daemon_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_a_command_runs() {
    let env = TestEnv::new();
    env.start_daemon();
    let marker = format!("{}.{}", std::process::id(), 5151);
    let _sweep = Sweep(marker.clone());
    // `sleep 60<pid>.5151` is a valid (very long) duration and a command line to look for.
    let command = format!("sleep 60{marker} & sleep 60{marker}; echo never");
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({ "command": command }),
    )])));
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    submit(&client, &session, "run the long thing").await;
    let seen = read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::ToolCallStarted { .. })
    })
    .await;
    wait_until("the command to start", Duration::from_secs(20), || {
        processes_with(&marker).len() >= 2
    });
    // The group is written down just after it is spawned: a kill between the two (a window
    // of microseconds, wider on a loaded machine) would leave nothing to reap.
    let registry = env.places().data_dir.join("children");
    wait_until(
        "the group in the child registry",
        Duration::from_secs(20),
        || std::fs::read_dir(&registry).is_ok_and(|d| d.count() > 0),
    );

    env.signal_daemon(Signal::SIGKILL);
    // The command's reaper saw its daemon die and took the command with it. (Whatever
    // survived that, the next daemon would kill from the child registry before serving.)
    wait_until(
        "the command to die with its daemon",
        Duration::from_secs(20),
        || processes_with(&marker).is_empty(),
    );
    env.start_daemon();
    let client = env.client().await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    let replayed = read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    for e in &seen {
        assert_eq!(replayed.get(e.seq as usize - 1), Some(e));
    }
    assert_eq!(finished(&replayed, 1).unwrap().0, TurnStatus::Interrupted);

    // Resumable: the model is told what it called and that the call never finished.
    env.fake.push(Reply::text(&["picking up"]));
    submit(&client, &session, "go on").await;
    let rest = read_until(&mut stream, |e| {
        e.turn == Some(2) && matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    assert_eq!(finished(&rest, 2).unwrap().0, TurnStatus::Completed);
    let requests = env.fake.requests();
    let messages = requests.last().unwrap()["messages"].as_array().unwrap();
    let kinds: Vec<String> = messages
        .iter()
        .map(|m| {
            let parts: Vec<&str> = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["type"].as_str().unwrap())
                .collect();
            format!("{}:{}", m["role"].as_str().unwrap(), parts.join("+"))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user:text",
            "assistant:tool_use",
            "user:tool_result",
            "assistant:text",
            // The words, and the environment: the recovered turn's was not kept.
            "user:text+text"
        ]
    );
    assert!(text_of(&messages[2]).contains("daemon stopped before this tool call finished"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_waiting_for_an_approval() {
    let env = TestEnv::new();
    env.start_daemon();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch made-by-the-tool"}),
    )])));
    let client = env.client().await;
    let session = env
        .create_session(&client, Some(PermissionMode::Default))
        .await;
    let mut stream = client.subscribe_events(&session, 0).await.unwrap();
    submit(&client, &session, "make a file").await;
    let seen = read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::ApprovalRequested { .. })
    })
    .await;

    let (client, replayed) = crash_and_replay(&env, &session, &seen, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    assert_eq!(finished(&replayed, 1).unwrap().0, TurnStatus::Interrupted);
    assert!(!env.project.path().join("made-by-the-tool").exists());

    env.fake.push(Reply::text(&["fine, not now"]));
    submit(&client, &session, "never mind").await;
    let mut stream = client
        .subscribe_events(&session, replayed.last().unwrap().seq)
        .await
        .unwrap();
    let rest = read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    assert_eq!(finished(&rest, 2).unwrap().0, TurnStatus::Completed);
    let denied_or_unfinished = rest.iter().all(|e| {
        !matches!(
            e.event,
            AppEvent::ToolCallFinished {
                status: ToolCallStatus::Ok,
                ..
            }
        )
    });
    assert!(denied_or_unfinished);
}

/// How a session's commands run: plainly (under the reaper), in bubblewrap (no reaper: its
/// PID namespace holds the command), or under Landlock alone (the reaper, then the helper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Confinement {
    None,
    Bubblewrap,
    Landlock,
}

/// Those this machine has (a missing sandbox skips, or fails under STEPPER_TEST_STRICT).
fn confinements(env: &TestEnv) -> Vec<Confinement> {
    let mut all = vec![Confinement::None];
    if crate::sandbox::landlock(env) {
        if crate::sandbox::bubblewrap(env) {
            all.push(Confinement::Bubblewrap);
        }
        all.push(Confinement::Landlock);
    }
    all
}

/// The daemon SIGKILLed while a command runs: the command and what it started die with the
/// daemon, not at the next start; and the next start ends the call (`ToolCallFinished`,
/// saying the daemon stopped) before it ends the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cut_by_a_crash_dies_with_the_daemon_and_its_call_is_closed() {
    let probe = TestEnv::new();
    for (i, confinement) in confinements(&probe).into_iter().enumerate() {
        let env = TestEnv::new();
        let vars: &[(&str, &str)] = match confinement {
            Confinement::Landlock => &[("STEPPER_SANDBOX_BWRAP", "off")],
            Confinement::None | Confinement::Bubblewrap => &[],
        };
        env.start_daemon_with(vars);
        let marker = format!("{}.{}", std::process::id(), 6160 + i);
        let _sweep = Sweep(marker.clone());
        let command = format!("sleep 60{marker} & sleep 60{marker}; echo never");
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            "t1",
            "bash",
            json!({ "command": command }),
        )])));
        let client = env.client().await;
        let params = SessionCreateParams {
            input_parts: Vec::new(),
            cwd: env.project.path().display().to_string(),
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: Some(PermissionMode::Auto),
            sandbox: Some(match confinement {
                Confinement::None => SandboxMode::Off,
                Confinement::Bubblewrap | Confinement::Landlock => SandboxMode::WorkspaceWrite,
            }),
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        };
        let session = client
            .call::<SessionCreate>(params)
            .await
            .unwrap()
            .session
            .id;
        let mut stream = client.subscribe_events(&session, 0).await.unwrap();
        submit(&client, &session, "run the long thing").await;
        read_until(&mut stream, |e| {
            matches!(e.event, AppEvent::ToolCallStarted { .. })
        })
        .await;
        // The two sleeps (and, sandboxed, the helper and bubblewrap holding them).
        wait_until("the command to start", Duration::from_secs(20), || {
            processes_with(&marker)
                .into_iter()
                .filter(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/comm"))
                        .is_ok_and(|c| c.trim() == "sleep")
                })
                .count()
                >= 2
        });
        drop(stream);
        drop(client);

        env.signal_daemon(Signal::SIGKILL);
        wait_until(
            &format!("the command to die with its daemon ({confinement:?})"),
            Duration::from_secs(20),
            || processes_with(&marker).is_empty(),
        );

        env.start_daemon_with(vars);
        let client = env.client().await;
        let mut stream = client.subscribe_events(&session, 0).await.unwrap();
        let replayed = read_until(&mut stream, |e| {
            matches!(e.event, AppEvent::TurnFinished { .. })
        })
        .await;
        let closed = replayed.iter().find_map(|e| match &e.event {
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                ..
            } if call_id == "t1" => Some((e.seq, e.agent.clone(), *status, output.clone())),
            _ => None,
        });
        let Some((seq, agent, status, output)) = closed else {
            panic!("{confinement:?}: the call was never closed: {replayed:#?}");
        };
        assert_eq!(status, ToolCallStatus::Cancelled, "{confinement:?}");
        assert!(output.contains("the daemon stopped"), "{output}");
        assert_eq!(agent, None, "the call's own agent (the answering one)");
        let end = replayed.last().unwrap();
        assert!(seq < end.seq, "the call ends before its turn");
        assert_eq!(finished(&replayed, 1).unwrap().0, TurnStatus::Interrupted);
    }
}
