//! The layered orchestrator against the fake LLM: layers from `.stepper/stepper.md` with
//! their own models and contexts, the handoff, a parallel layer's workers, `dispatch`, and
//! interrupts and crashes while workers run.

use std::time::Duration;

use nix::sys::signal::Signal;
use stepper_e2e::fake_llm::{text_stream, tool_use_stream};
use stepper_e2e::{Gate, Reply, TestEnv, read_until, submit, until_turn_finished};
use stepper_protocol::methods::{SessionApprove, SessionApproveParams, SessionGet, SessionParams};
use stepper_protocol::{AppEvent, ApprovalDecision, EventEnvelope, SessionStatus, TurnStatus};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn last_user_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
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

const TWO_LAYERS: &str = "Shared project words.\n\n---\nname: plan\nmodel: anthropic/claude-opus-4-1\ntools: [read, grep]\n---\nPLAN-INSTRUCTIONS: write a plan.\n\n---\nname: code\nmodel: anthropic/claude-sonnet-4-5\n---\nCODE-INSTRUCTIONS: carry out the plan.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_layers_with_their_own_models_and_the_handoff() {
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), TWO_LAYERS);
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::text(&["PLAN-TEXT: step one"]));
    env.fake.push(Reply::text(&["the ANSWER"]));
    submit(&client, &id, "fix the bug").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None));

    let requests = env.fake.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0]["model"], "claude-opus-4-1");
    assert_eq!(requests[1]["model"], "claude-sonnet-4-5");
    let system = |r: &serde_json::Value| r["system"].to_string();
    assert!(system(&requests[0]).contains("PLAN-INSTRUCTIONS"));
    assert!(system(&requests[0]).contains("Shared project words."));
    assert!(!system(&requests[0]).contains("CODE-INSTRUCTIONS"));
    assert!(system(&requests[1]).contains("CODE-INSTRUCTIONS"));
    // The plan layer's tools are its allow list.
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // In Claude Code's names: an Anthropic model's dialect.
    assert_eq!(tools, ["Read", "Grep"]);
    // The second layer gets the user's words and the first one's final text.
    let handed = last_user_text(&requests[1]);
    assert!(handed.contains("fix the bug"), "{handed}");
    assert!(handed.contains("PLAN-TEXT: step one"), "{handed}");

    // Layer events, and the first layer's events carry its agent id.
    let starts: Vec<(u32, String, Option<String>)> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::LayerStarted {
                index,
                model,
                agent_id,
                ..
            } => Some((*index, model.clone(), agent_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            (
                1,
                "anthropic/claude-opus-4-1".into(),
                Some("layer-1".into())
            ),
            (2, "anthropic/claude-sonnet-4-5".into(), None),
        ]
    );
    let plan_text = seen.iter().find(|e| {
        matches!(&e.event, AppEvent::MessageCompleted { text, .. } if text.contains("PLAN-TEXT"))
    });
    assert_eq!(plan_text.unwrap().agent.as_deref(), Some("layer-1"));
    let answer = seen.iter().find(
        |e| matches!(&e.event, AppEvent::MessageCompleted { text, .. } if text == "the ANSWER"),
    );
    assert_eq!(answer.unwrap().agent, None);

    // A second turn: each layer continues its own context.
    env.fake.push(Reply::text(&["PLAN-TWO"]));
    env.fake.push(Reply::text(&["ANSWER-TWO"]));
    submit(&client, &id, "and the other bug").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed);
    let requests = env.fake.requests();
    let plan = requests[2]["messages"].to_string();
    assert!(
        plan.contains("PLAN-TEXT: step one") && !plan.contains("the ANSWER"),
        "{plan}"
    );
    let code = requests[3]["messages"].to_string();
    assert!(
        code.contains("the ANSWER") && code.contains("PLAN-TWO"),
        "{code}"
    );

    // Rewind to before turn 2: every layer's context loses that turn.
    client
        .call::<stepper_protocol::methods::SessionRewind>(
            stepper_protocol::methods::SessionRewindParams {
                session_id: id.clone(),
                turn: 2,
                files: true,
                conversation: true,
            },
        )
        .await
        .unwrap();
    env.fake.push(Reply::text(&["PLAN-THREE"]));
    env.fake.push(Reply::text(&["ANSWER-THREE"]));
    submit(&client, &id, "third").await;
    read_until(&mut events, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    let requests = env.fake.requests();
    let (plan, code) = (
        requests[4]["messages"].to_string(),
        requests[5]["messages"].to_string(),
    );
    assert!(
        plan.contains("PLAN-TEXT") && !plan.contains("PLAN-TWO"),
        "{plan}"
    );
    assert!(
        code.contains("the ANSWER") && !code.contains("ANSWER-TWO"),
        "{code}"
    );

    // A fork before the third turn starts both layers from the first.
    let fork = client
        .call::<stepper_protocol::methods::SessionFork>(
            stepper_protocol::methods::SessionForkParams {
                session_id: id.clone(),
                from_turn: 3,
                title: None,
            },
        )
        .await
        .unwrap()
        .session
        .id;
    let mut forked = client.subscribe_events(&fork, 0).await.unwrap();
    env.fake.push(Reply::text(&["PLAN-FORK"]));
    env.fake.push(Reply::text(&["ANSWER-FORK"]));
    submit(&client, &fork, "in the fork").await;
    read_until(&mut forked, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. }) && e.turn.is_some_and(|t| t > 1)
    })
    .await;
    let requests = env.fake.requests();
    let (plan, code) = (
        requests[6]["messages"].to_string(),
        requests[7]["messages"].to_string(),
    );
    assert!(
        plan.contains("PLAN-TEXT") && !plan.contains("PLAN-THREE"),
        "{plan}"
    );
    assert!(
        code.contains("the ANSWER") && !code.contains("ANSWER-THREE"),
        "{code}"
    );
}

const PARALLEL: &str = "---\nname: split\n---\nSplit the work.\n\n---\nname: work\nparallel: true\nparallel-max: 3\n---\nDo your one task.\n";

fn assign(tasks: &[&str]) -> Reply {
    Reply::Sse(tool_use_stream(&[(
        "toolu_assign",
        "assign_tasks",
        serde_json::json!({ "tasks": tasks }),
    )]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_layers_workers_run_at_once_and_hand_back_in_task_order() {
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), PARALLEL);
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(assign(&["TASK-A", "TASK-B", "TASK-C"]));
    env.fake.push(Reply::text(&["three tasks assigned"]));
    let gate = Gate::new();
    for (task, answer) in [
        ("TASK-A", "A-DONE"),
        ("TASK-B", "B-DONE"),
        ("TASK-C", "C-DONE"),
    ] {
        env.fake.push_when(task, Reply::held(&[answer], &gate));
    }
    submit(&client, &id, "do three things").await;
    // All three workers' requests are in while every one is held: they overlap.
    stepper_e2e::wait_until(
        "three workers calling the model",
        Duration::from_secs(20),
        || env.fake.requests().len() == 5,
    );
    for _ in 0..3 {
        gate.open();
    }
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None));

    let workers: Vec<(String, String)> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::SubagentStarted {
                agent_id,
                task,
                layer: Some(2),
                ..
            } => Some((agent_id.clone(), task.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(workers.len(), 3, "{seen:#?}");
    // Each worker's own events carry its id.
    for (agent, _) in &workers {
        assert!(
            seen.iter().any(|e| e.agent.as_deref() == Some(agent)
                && matches!(e.event, AppEvent::MessageCompleted { .. })),
            "no message of {agent}"
        );
    }
    // The answer is the workers' results in task order, said by the turn itself.
    let answer = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::MessageCompleted { text, .. }
                if e.agent.is_none() && text.contains("## Task") =>
            {
                Some(text.clone())
            }
            _ => None,
        })
        .expect("the joined answer");
    let a = answer.find("A-DONE").unwrap();
    let b = answer.find("B-DONE").unwrap();
    let c = answer.find("C-DONE").unwrap();
    assert!(a < b && b < c, "{answer}");
    assert!(seen.iter().any(|e| matches!(
        e.event,
        AppEvent::LayerFinished {
            index: 2,
            workers: 3,
            ..
        }
    )));
    // A worker gets its task, not the others'.
    let requests = env.fake.requests();
    let worker_inputs: Vec<String> = requests[2..].iter().map(last_user_text).collect();
    assert!(
        worker_inputs
            .iter()
            .all(|t| t.matches("TASK-").count() == 1),
        "{worker_inputs:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_task_list_runs_the_parallel_layer_once_and_a_failing_worker_is_reported() {
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), PARALLEL);
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    // An empty list: the parallel layer runs once, as a plain layer.
    env.fake.push(assign(&[]));
    env.fake.push(Reply::text(&["nothing to split"]));
    env.fake.push(Reply::text(&["ONE-RUN"]));
    submit(&client, &id, "small thing").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed);
    assert!(
        seen.iter()
            .all(|e| !matches!(e.event, AppEvent::SubagentStarted { .. }))
    );
    assert_eq!(env.fake.requests().len(), 3);

    // Two tasks; one worker's model call fails: it is reported, the other goes on.
    env.fake.push(assign(&["TASK-OK", "TASK-BAD"]));
    env.fake.push(Reply::text(&["assigned"]));
    env.fake.push_when("TASK-OK", Reply::text(&["OK-DONE"]));
    env.fake.push_when(
        "TASK-BAD",
        Reply::status(400, "bad request for this worker"),
    );
    submit(&client, &id, "two things").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed);
    let failed = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::SubagentFinished {
                status: TurnStatus::Failed,
                error,
                ..
            } => error.clone(),
            _ => None,
        })
        .expect("the failed worker");
    assert!(failed.contains("bad request for this worker"), "{failed}");
    let answer = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::LayerFinished { index: 2, text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        answer.contains("OK-DONE") && answer.contains("TASK-BAD") && answer.contains("failed"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_starts_two_subagents_and_a_workers_approval_is_answered_by_another_client() {
    let env = TestEnv::new();
    env.trust_project();
    write(
        &env.project.path().join(".stepper/setting.json"),
        &serde_json::json!({"dispatch": true, "hooks": {
            "SubagentStart": [{"hooks": [{"type": "command",
                "command": "cat > \"$CLAUDE_PROJECT_DIR\"/started.$$.json"}]}],
            "SubagentStop": [{"hooks": [{"type": "command",
                "command": "cat > \"$CLAUDE_PROJECT_DIR\"/stopped.$$.json"}]}]
        }})
        .to_string(),
    );
    write(
        &env.project.path().join(".claude/agents/reviewer.md"),
        // `Write` gives it a tool of the `edit` capability: without one, its commands
        // could not make the marker (see capabilities.rs).
        "---\nname: reviewer\ndescription: Reviews changes\ntools: Read, Bash, Write\n---\nREVIEWER-PROMPT\n",
    );
    env.start_daemon();
    let client = env.client().await;
    let other = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_d",
        "dispatch",
        serde_json::json!({"tasks": [
            {"task": "SUB-ONE: make the marker", "agent": "reviewer"},
            {"task": "SUB-TWO: just answer"},
        ]}),
    )])));
    env.fake.push_when(
        "SUB-ONE",
        Reply::Sse(tool_use_stream(&[(
            "toolu_b",
            "bash",
            serde_json::json!({"command": "touch marker"}),
        )])),
    );
    env.fake.push_when("SUB-TWO", Reply::text(&["TWO-SAYS-HI"]));
    // After the bash result, the reviewer's second call; then the main agent's answer.
    env.fake
        .push_when("toolu_b", Reply::Sse(text_stream(&["ONE-MADE-IT"])));
    env.fake.push_when("toolu_d", Reply::text(&["both done"]));
    submit(&client, &id, "dispatch two").await;

    let mut seen = read_until(&mut events, |e| {
        matches!(e.event, AppEvent::ApprovalRequested { .. })
    })
    .await;
    let Some(AppEvent::ApprovalRequested {
        request_id,
        command,
        ..
    }) = seen.last().map(|e| e.event.clone())
    else {
        unreachable!()
    };
    assert_eq!(command.as_deref(), Some("touch marker"));
    // The question is the worker's: its agent id is on it.
    assert!(
        seen.last()
            .unwrap()
            .agent
            .as_deref()
            .is_some_and(|a| a.starts_with("agent-"))
    );
    other
        .call::<SessionApprove>(SessionApproveParams {
            session_id: id.clone(),
            request_id,
            decision: ApprovalDecision::Allow,
        })
        .await
        .unwrap();
    seen.extend(until_turn_finished(&mut events).await);
    assert_eq!(finished(&seen), (TurnStatus::Completed, None));
    assert!(env.project.path().join("marker").exists());

    // The subagents, their events tagged, the approval's resolution among them.
    let subagents: Vec<(String, String)> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::SubagentFinished { agent_id, text, .. } => {
                Some((agent_id.clone(), text.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(subagents.len(), 2, "{seen:#?}");
    assert!(subagents.iter().any(|(_, t)| t == "ONE-MADE-IT"));
    assert!(subagents.iter().any(|(_, t)| t == "TWO-SAYS-HI"));
    let resolved = seen
        .iter()
        .find(|e| matches!(e.event, AppEvent::ApprovalResolved { .. }))
        .unwrap();
    assert!(
        resolved
            .agent
            .as_deref()
            .is_some_and(|a| a.starts_with("agent-"))
    );
    // The reviewer ran with its definition's prompt and tools, without dispatch.
    let requests = env.fake.requests();
    let reviewer = requests
        .iter()
        .find(|r| r["system"].to_string().contains("REVIEWER-PROMPT"))
        .expect("the reviewer's request");
    let names: Vec<&str> = reviewer["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Bash", "Read", "Write"]);
    // SubagentStart and SubagentStop ran once per subagent (at once: one file per run).
    let lines = |prefix: &str| {
        std::fs::read_dir(env.project.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| {
                let text = std::fs::read_to_string(e.path()).unwrap();
                serde_json::from_str::<serde_json::Value>(&text).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let started = lines("started.");
    assert_eq!(started.len(), 2, "{started:?}");
    assert!(started.iter().any(|h| h["agent_type"] == "reviewer"));
    assert!(
        started
            .iter()
            .all(|h| h["hook_event_name"] == "SubagentStart")
    );
    assert_eq!(lines("stopped.").len(), 2);
    // Prompt caching: the subagents' requests mark their prefix too.
    assert_eq!(reviewer["system"][0]["cache_control"]["type"], "ephemeral");
    // The main agent got both results from the tool.
    let last = requests.last().unwrap().to_string();
    assert!(
        last.contains("ONE-MADE-IT") && last.contains("TWO-SAYS-HI"),
        "{last}"
    );
}

/// A session whose turn has two workers started and streaming, held there.
async fn two_held_workers(
    env: &TestEnv,
    split_says: &str,
    input: &str,
) -> (
    stepper_protocol::client::DaemonClient,
    String,
    stepper_protocol::client::EventStream,
) {
    write(&env.project.path().join(".stepper/stepper.md"), PARALLEL);
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(assign(&["TASK-X", "TASK-Y"]));
    env.fake.push(Reply::text(&[split_says]));
    let never = Gate::new();
    env.fake.push_when("TASK-X", Reply::held(&["x…"], &never));
    env.fake.push_when("TASK-Y", Reply::held(&["y…"], &never));
    submit(&client, &id, input).await;
    let mut started = 0;
    read_until(&mut events, |e| {
        started += usize::from(matches!(e.event, AppEvent::SubagentStarted { .. }));
        started == 2
    })
    .await;
    stepper_e2e::wait_until("both workers streaming", Duration::from_secs(20), || {
        env.fake.requests().len() == 4
    });
    // The gates are never opened: dropping them leaves the replies held.
    (client, id, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_every_worker() {
    let env = TestEnv::new();
    let (client, id, mut events) = two_held_workers(&env, "assigned", "two").await;
    client
        .call::<stepper_protocol::methods::SessionInterrupt>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Interrupted);
    let interrupted = seen
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                AppEvent::SubagentFinished {
                    status: TurnStatus::Interrupted,
                    ..
                }
            )
        })
        .count();
    assert_eq!(interrupted, 2, "{seen:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_during_workers_ends_the_turn_interrupted_with_the_finished_layer_kept() {
    let env = TestEnv::new();
    let (client, id, events) = two_held_workers(&env, "SPLIT-FINISHED", "crash me").await;
    drop(events);
    drop(client);
    env.signal_daemon(Signal::SIGKILL);
    env.start_daemon();
    let client = env.client().await;
    let info = client
        .call::<SessionGet>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    assert_eq!(info.session.status, SessionStatus::Interrupted);
    // The next turn goes on from what finished: the first layer's text.
    env.fake.push(Reply::text(&["no split now"]));
    env.fake.push(Reply::text(&["RESUMED"]));
    let mut events = client
        .subscribe_events(&id, info.session.last_seq)
        .await
        .unwrap();
    submit(&client, &id, "go on").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed);
    let requests = env.fake.requests();
    let main = requests.last().unwrap()["messages"].to_string();
    assert!(
        main.contains("SPLIT-FINISHED") && main.contains("crash me"),
        "{main}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_stepper_md_fails_the_turn_at_once_with_file_and_line() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: a\ntools: [read, shel]\n---\nA.\n",
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit(&client, &id, "hello").await;
    let seen = until_turn_finished(&mut events).await;
    let (status, error) = finished(&seen);
    assert_eq!(status, TurnStatus::Failed);
    let error = error.unwrap();
    assert!(
        error.contains("stepper.md:3: unknown tool `shel`"),
        "{error}"
    );
    assert!(
        error.contains("did you mean `bash`?") || error.contains("the tools are"),
        "{error}"
    );
    assert!(env.fake.requests().is_empty());
}

#[test]
fn ask_prints_the_last_layers_answer_and_json_has_each_layer() {
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), TWO_LAYERS);
    env.fake.push(Reply::text(&["PLAN-TEXT"]));
    env.fake.push(Reply::text(&["FINAL-ANSWER"]));
    let out = env.run(&["ask", "fix it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not a terminal: stdout has the answer alone, the plan is not in it.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "FINAL-ANSWER\n");

    env.fake.push(Reply::text(&["PLAN-AGAIN"]));
    env.fake.push(Reply::text(&["ANSWER-AGAIN"]));
    let out = env.run(&["ask", "--format", "json", "again"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: stepper_protocol::methods::AskResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result.text, "ANSWER-AGAIN");
    let layers: Vec<(&str, &str, TurnStatus)> = result
        .layers
        .iter()
        .map(|l| (l.name.as_str(), l.text.as_str(), l.status))
        .collect();
    assert_eq!(
        layers,
        [
            ("plan", "PLAN-AGAIN", TurnStatus::Completed),
            ("code", "ANSWER-AGAIN", TurnStatus::Completed)
        ]
    );
    // The transcript names each layer, and says whose text is whose.
    let out = env.run(&[
        "sessions",
        "export",
        &result.session_id,
        "--format",
        "markdown",
    ]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("### Layer 1/2: plan (anthropic/claude-opus-4-1)"),
        "{md}"
    );
    assert!(md.contains("**layer-1:** PLAN-AGAIN"), "{md}");
    assert!(md.contains("\nANSWER-AGAIN\n"), "{md}");
}

#[test]
fn config_validate_reports_layer_problems_with_file_and_line() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: fan\nparallel: true\nmodle: x\n---\nA.\n\n---\nname: b\ntools: [reed]\n---\nB.\n",
    );
    write(
        &env.project.path().join(".stepper/agents/x.md"),
        "---\nname: x\nmodel: bad model\n---\nX.\n",
    );
    let out = env.run(&["config", "--validate"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    for expected in [
        "stepper.md:1:1: error: layer `fan` is parallel but is the first layer",
        "stepper.md:4:1: error: unknown field `modle` in a layer — did you mean `model`?",
        "stepper.md:10:1: error: unknown tool `reed` in `tools` — did you mean `read`?",
        "x.md:3:1: error: \"bad model\" is not a model reference",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
}

#[test]
fn config_validate_warns_of_what_an_agent_or_command_runs_without() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".claude/agents/notes.md"),
        "---\nname: notes\ndescription: >\n  Edits notebooks\ntools:\n  - NotebookEdit\n  - KillShell\n---\nN.\n",
    );
    write(
        &env.project.path().join(".claude/commands/guarded.md"),
        "---\ndescription: Guarded\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./guard.sh\n---\nDo it.\n",
    );
    let out = env.run(&["config", "--validate"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // The agent and the command load (without them): warnings, not errors.
    assert_eq!(out.status.code(), Some(0), "{text}");
    for expected in [
        "notes.md:5:1: warning: `NotebookEdit` in `tools` is a Claude Code tool stepper does \
         not have (stepper has no notebook editor) — the agent runs without it",
        "notes.md:5:1: warning: `KillShell` in `tools` is a Claude Code tool stepper does not \
         have (stepper's bash does not run commands in the background)",
        "notes.md:5:1: warning: agent `notes` is left with no tools: none of `tools` \
         (NotebookEdit, KillShell) is one stepper gives a subagent",
        "guarded.md:3:1: warning: `hooks` in a command's front matter are not run by stepper: \
         the command loads without them",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
}

#[test]
fn the_tui_shows_layers_as_cells_and_the_answer_as_the_reply() {
    if !stepper_e2e::Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), TWO_LAYERS);
    env.fake.push(Reply::text(&["PLAN-IN-A-CELL"]));
    env.fake.push(Reply::text(&["THE-REPLY"]));
    let tmux = stepper_e2e::Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("stepper");
    pane.wait_for_text("● idle");
    pane.type_text("fix it");
    pane.press("Enter");
    let shown = pane.wait_for_history("the reply", |s| {
        s.contains("THE-REPLY") && s.contains("● idle")
    });
    assert!(
        shown.contains("layer 1/2 plan · anthropic/claude-opus-4-1 · done"),
        "{shown}"
    );
    assert!(shown.contains("  PLAN-IN-A-CELL"), "{shown}");
    assert!(
        shown.contains("layer 2/2 code · anthropic/claude-sonnet-4-5"),
        "{shown}"
    );
    pane.press("C-d");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_steered_in_while_a_layer_runs_reach_the_next_layer() {
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), TWO_LAYERS);
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let gate = Gate::new();
    env.fake.push(Reply::held(&["planning"], &gate));
    env.fake.push(Reply::text(&["done"]));
    submit(&client, &id, "start").await;
    stepper_e2e::wait_until("the plan layer streaming", Duration::from_secs(20), || {
        env.fake.requests().len() == 1
    });
    client
        .call::<stepper_protocol::methods::SessionSteer>(
            stepper_protocol::methods::SessionSubmitParams {
                parts: Vec::new(),
                session_id: id.clone(),
                text: "ALSO-THIS".into(),
                env: None,
            },
        )
        .await
        .unwrap();
    gate.open();
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed);
    let second = last_user_text(&env.fake.requests()[1]);
    assert!(
        second.contains("ALSO-THIS") && second.contains("planning"),
        "{second}"
    );
}

/// A crash while a worker of a parallel layer runs a command: the command dies with the
/// daemon, and the next start ends the worker's call (in the worker's own agent), then the
/// workers, then the layer, then the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_a_worker_runs_a_command_ends_it_inside_out() {
    let env = TestEnv::new();
    write(&env.project.path().join(".stepper/stepper.md"), PARALLEL);
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let marker = format!("{}.{}", std::process::id(), 8181);
    env.fake.push(assign(&["TASK-X", "TASK-Y"]));
    env.fake.push(Reply::text(&["assigned"]));
    env.fake.push_when(
        "TASK-X",
        Reply::Sse(tool_use_stream(&[(
            "toolu_x",
            "bash",
            serde_json::json!({ "command": format!("sleep 60{marker}") }),
        )])),
    );
    let never = Gate::new();
    env.fake.push_when("TASK-Y", Reply::held(&["y…"], &never));
    submit(&client, &id, "two").await;
    // The worker's call committed (seen by a client), not just its command started: what
    // was never committed may die with the daemon.
    read_until(
        &mut events,
        |e| matches!(&e.event, AppEvent::ToolCallStarted { call_id, .. } if call_id == "toolu_x"),
    )
    .await;
    let running = || stepper_process::testing::processes_with(&marker);
    stepper_e2e::wait_until("the command to start", Duration::from_secs(20), || {
        !running().is_empty()
    });
    drop(events);
    drop(client);
    env.signal_daemon(Signal::SIGKILL);
    stepper_e2e::wait_until(
        "the command to die with its daemon",
        Duration::from_secs(20),
        || running().is_empty(),
    );

    env.start_daemon();
    let client = env.client().await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let seen = until_turn_finished(&mut events).await;
    let worker = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::ToolCallStarted { call_id, .. } if call_id == "toolu_x" => e.agent.clone(),
            _ => None,
        })
        .expect("the worker's call");
    let ends: Vec<(Option<String>, String)> = seen
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                AppEvent::ToolCallFinished { .. }
                    | AppEvent::SubagentFinished { .. }
                    | AppEvent::LayerFinished { .. }
                    | AppEvent::TurnFinished { .. }
            )
        })
        .map(|e| (e.agent.clone(), e.event.kind().to_string()))
        .collect();
    let call_end = ends
        .iter()
        .position(|(agent, kind)| kind == "ToolCallFinished" && *agent == Some(worker.clone()))
        .unwrap_or_else(|| panic!("the worker's call never ended: {ends:?}"));
    let kinds: Vec<&str> = ends[call_end..].iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ToolCallFinished",
            "SubagentFinished",
            "SubagentFinished",
            "LayerFinished",
            "TurnFinished"
        ],
        "{ends:?}"
    );
    assert_eq!(finished(&seen).0, TurnStatus::Interrupted);
}

/// The names of the tools a request offered.
fn offered(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_files_alone_offer_dispatch_and_dispatch_false_turns_it_off() {
    let env = TestEnv::new();
    // Claude Code's project as it is: an agent file, no settings.
    write(
        &env.project.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: >\n  Reviews changes\n  before a commit.\ntools: Read, Grep\n---\nREVIEWER-PROMPT\n",
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_r",
        "dispatch",
        serde_json::json!({"tasks": [{"task": "REVIEW-IT", "agent": "reviewer"}]}),
    )])));
    env.fake
        .push_when("REVIEW-IT", Reply::text(&["LOOKS-GOOD"]));
    env.fake.push_when("toolu_r", Reply::text(&["reviewed"]));
    submit(&client, &id, "review my change").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None));

    let requests = env.fake.requests();
    let main = &requests[0];
    let dispatch = main["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "dispatch")
        .unwrap_or_else(|| panic!("dispatch is not offered: {:?}", offered(main)));
    assert!(
        dispatch["description"]
            .as_str()
            .unwrap()
            .contains("- reviewer: Reviews changes before a commit."),
        "{dispatch}"
    );
    // The reviewer ran with its own prompt and tools, and its answer came back.
    let reviewer = requests
        .iter()
        .find(|r| r["system"].to_string().contains("REVIEWER-PROMPT"))
        .expect("the reviewer's request");
    assert_eq!(offered(reviewer), ["Read", "Grep"]);
    assert!(requests.last().unwrap().to_string().contains("LOOKS-GOOD"));

    // `"dispatch": false` in the settings: not offered.
    write(
        &env.project.path().join(".stepper/setting.json"),
        r#"{"dispatch": false}"#,
    );
    let quiet = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&quiet, 0).await.unwrap();
    env.fake.push(Reply::text(&["no subagents"]));
    submit(&client, &quiet, "review again").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None));
    let last = env.fake.requests().last().cloned().unwrap();
    assert!(last.to_string().contains("review again"));
    let names = offered(&last);
    assert!(names.contains(&"Read".to_string()), "{names:?}");
    assert!(!names.contains(&"dispatch".to_string()), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_claude_code_tools_stepper_lacks_are_dropped_with_a_notice() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".claude/agents/researcher.md"),
        "---\nname: researcher\ndescription: Looks things up\ntools: WebSearch, NotebookEdit, Read\n---\nRESEARCHER-PROMPT\n",
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_s",
        "dispatch",
        serde_json::json!({"tasks": [{"task": "LOOK-IT-UP", "agent": "researcher"}]}),
    )])));
    env.fake.push_when("LOOK-IT-UP", Reply::text(&["FOUND-IT"]));
    env.fake.push_when("toolu_s", Reply::text(&["done"]));
    submit(&client, &id, "look it up").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None));

    // The turn's start says what the agent runs without, at its line; the agent still runs.
    let notices: Vec<&str> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::Notice { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    let dropped = notices
        .iter()
        .find(|n| n.contains("NotebookEdit"))
        .unwrap_or_else(|| panic!("no notice names NotebookEdit: {notices:?}"));
    assert!(
        dropped.ends_with(
            "researcher.md:4: `NotebookEdit` in `tools` is a Claude Code tool stepper does not \
             have (stepper has no notebook editor) — the agent runs without it"
        ),
        "{dropped}"
    );
    assert!(
        !notices.iter().any(|n| n.contains("WebSearch")),
        "{notices:?}"
    );
    let researcher = env
        .fake
        .requests()
        .into_iter()
        .find(|r| r["system"].to_string().contains("RESEARCHER-PROMPT"))
        .expect("the researcher's request");
    let names = offered(&researcher);
    assert!(names.contains(&"Read".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("Notebook")), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "Bash" || n == "dispatch"),
        "{names:?}"
    );
}

/// A layer whose model no provider serves fails the turn as the provider's failure: `ask`
/// exits 3 (the provider is not set up) and says which layer and which model.
#[test]
fn a_layer_whose_model_no_provider_serves_fails_as_a_provider_failure() {
    let env = TestEnv::new();
    let layers =
        "---\nname: plan\nmodel: nowhere/model-x\n---\nPlan.\n\n---\nname: code\n---\nCode.\n";
    write(&env.project.path().join(".stepper/stepper.md"), layers);
    let out = env.run(&["ask", "--format", "json", "fix it"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let result: stepper_protocol::methods::AskResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result.status, TurnStatus::Failed);
    assert_eq!(
        result.error_kind,
        Some(stepper_protocol::TurnErrorKind::Provider)
    );
    let error = result.error.unwrap_or_default();
    assert!(
        error.starts_with("layer 1 (plan): nowhere/model-x"),
        "{error}"
    );
    assert!(env.fake.requests().is_empty(), "no model was asked");
}
