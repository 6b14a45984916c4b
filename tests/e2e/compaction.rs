//! Compaction against the fake LLM: a long session on a model with a small window is
//! compacted before a model call (tool outputs pruned, older messages summarised, the last
//! ones kept), the stored context is the compacted one across turns and a daemon restart,
//! rewind still reaches before it, and `/compact` (`session/compact`) compacts on demand.

use nix::sys::signal::Signal;
use stepper_e2e::{Reply, TestEnv, read_until, submit};
use stepper_protocol::methods::{
    SessionCompact, SessionCompactParams, SessionContext, SessionCreate, SessionCreateParams,
    SessionParams, SessionRewind, SessionRewindParams,
};
use stepper_protocol::{AppEvent, EventEnvelope, TurnStatus};

const SUMMARY_ASK: &str = "Summarise this conversation";

fn settings(env: &TestEnv, window: u64, extra: serde_json::Value) {
    let mut value = serde_json::json!({
        "providers": {"small": {
            "kind": "anthropic",
            "baseUrl": env.fake.url,
            "apiKeyEnv": "ANTHROPIC_API_KEY",
            "models": {"tiny": {"contextWindow": window, "maxOutput": 1000}}
        }}
    });
    if let (Some(v), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    let dir = env.project.path().join(".stepper");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("setting.json"), value.to_string()).unwrap();
    // A project of the user's own: its providers and hooks apply.
    env.trust_project();
}

async fn session(env: &TestEnv, client: &stepper_protocol::client::DaemonClient) -> String {
    client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: env.project.path().display().to_string(),
            env: env.envs().into_iter().collect(),
            model: Some("small/tiny".into()),
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
        .id
}

async fn turn_done(events: &mut stepper_protocol::client::EventStream) -> Vec<EventEnvelope> {
    let seen = read_until(events, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await;
    let status = seen.iter().find_map(|e| match &e.event {
        AppEvent::TurnFinished { status, error, .. } => Some((*status, error.clone())),
        _ => None,
    });
    assert_eq!(status, Some((TurnStatus::Completed, None)), "{seen:#?}");
    seen
}

fn first_message(request: &serde_json::Value) -> String {
    request["messages"][0].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_is_compacted_and_stays_compacted_across_a_restart() {
    let env = TestEnv::new();
    settings(&env, 12_000, serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake
        .push_when(SUMMARY_ASK, Reply::text(&["SUMMARY-OF-EARLY-WORK"]));
    // Each input is ~3 KB; the window's 70% is reached after several turns.
    let mut compacted_in = None;
    let mut finished = None;
    for n in 1..=20u32 {
        env.fake.push(Reply::text(&[&format!("reply {n}")]));
        let words = format!("TURN-{n}-MARK {}", "lorem ipsum ".repeat(250));
        submit(&client, &id, &words).await;
        let seen = turn_done(&mut events).await;
        if let Some(done) = seen.iter().find_map(|e| match &e.event {
            AppEvent::CompactionFinished {
                before_tokens,
                after_tokens,
                summarized,
                error,
                ..
            } => Some((*before_tokens, *after_tokens, *summarized, error.clone())),
            _ => None,
        }) {
            compacted_in = Some(n);
            finished = Some(done);
            assert!(
                seen.iter()
                    .any(|e| matches!(e.event, AppEvent::CompactionStarted { manual: false, .. }))
            );
            break;
        }
    }
    let n = compacted_in.expect("the session was compacted");
    let (before, after, summarized, error) = finished.unwrap();
    assert_eq!(error, None);
    assert!(
        summarized > 0 && after < before,
        "{before} → {after}, {summarized}"
    );
    assert!(n >= 3, "compacted at turn {n}, too early");

    // The call after the summary: the summary first, the last turns verbatim, turn 1 gone.
    let requests = env.fake.requests();
    let summary_request = requests
        .iter()
        .position(|r| r["messages"][0].to_string().contains(SUMMARY_ASK))
        .expect("the summary was asked for");
    assert!(
        requests[summary_request]["messages"][0]
            .to_string()
            .contains("TURN-1-MARK")
    );
    let next = &requests[summary_request + 1];
    assert!(first_message(next).contains("SUMMARY-OF-EARLY-WORK"));
    let all = next["messages"].to_string();
    assert!(!all.contains("TURN-1-MARK"), "turn 1 was summarised");
    assert!(all.contains(&format!("TURN-{n}-MARK")));

    // Another turn, then a restart, then another: the stored context is the compacted one.
    env.fake.push(Reply::text(&["after compaction"]));
    submit(&client, &id, "small one").await;
    turn_done(&mut events).await;
    assert!(first_message(env.fake.requests().last().unwrap()).contains("SUMMARY-OF-EARLY-WORK"));
    drop(events);
    drop(client);
    env.signal_daemon(Signal::SIGTERM);
    env.start_daemon();
    let client = env.client().await;
    let last_seq = client
        .call::<stepper_protocol::methods::SessionGet>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap()
        .session
        .last_seq;
    let mut events = client.subscribe_events(&id, last_seq).await.unwrap();
    env.fake.push(Reply::text(&["after the restart"]));
    submit(&client, &id, "after restart").await;
    turn_done(&mut events).await;
    let last = env.fake.requests().last().unwrap().clone();
    assert!(first_message(&last).contains("SUMMARY-OF-EARLY-WORK"));
    assert!(last["messages"].to_string().contains("small one"));

    // A rewind to before the compacting turn finds the turns it replaced.
    client
        .call::<SessionRewind>(SessionRewindParams {
            session_id: id.clone(),
            turn: n,
            files: false,
            conversation: true,
        })
        .await
        .unwrap();
    env.fake.push(Reply::text(&["rewound"]));
    submit(&client, &id, "after the rewind").await;
    turn_done(&mut events).await;
    let last = env.fake.requests().last().unwrap().clone();
    assert!(
        first_message(&last).contains("TURN-1-MARK"),
        "{}",
        first_message(&last)
    );
    assert!(
        !last["messages"]
            .to_string()
            .contains("SUMMARY-OF-EARLY-WORK")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_on_demand_with_instructions_and_the_precompact_hook() {
    let env = TestEnv::new();
    settings(
        &env,
        200_000,
        serde_json::json!({"hooks": {"PreCompact": [{"matcher": "manual", "hooks": [
            {"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR\"/precompact.json"}
        ]}]}}),
    );
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    for n in 1..=5 {
        env.fake.push(Reply::text(&[&format!("REPLY-{n}")]));
        submit(&client, &id, &format!("INPUT-{n} {}", "words ".repeat(200))).await;
        turn_done(&mut events).await;
    }
    let before = client
        .call::<SessionContext>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    assert_eq!(before.window, 200_000);
    assert!(before.messages > 1000 && before.tools > 0, "{before:?}");
    assert_eq!(before.compact_at, 140_000);

    env.fake
        .push_when(SUMMARY_ASK, Reply::text(&["SUMMARY-ON-DEMAND"]));
    client
        .call::<SessionCompact>(SessionCompactParams {
            session_id: id.clone(),
            instructions: Some("keep the INPUT names".into()),
        })
        .await
        .unwrap();
    let seen = turn_done(&mut events).await;
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, AppEvent::CompactionStarted { manual: true, .. }))
    );
    let summary = env.fake.requests().last().unwrap().to_string();
    assert!(summary.contains("keep the INPUT names"), "{summary}");
    let hook = std::fs::read_to_string(env.project.path().join("precompact.json")).unwrap();
    let hook: serde_json::Value = serde_json::from_str(&hook).unwrap();
    assert_eq!(hook["trigger"], "manual");
    assert_eq!(hook["custom_instructions"], "keep the INPUT names");
    assert_eq!(hook["hook_event_name"], "PreCompact");

    let after = client
        .call::<SessionContext>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    assert!(after.messages < before.messages, "{before:?} → {after:?}");
    env.fake.push(Reply::text(&["next"]));
    submit(&client, &id, "next turn").await;
    turn_done(&mut events).await;
    let next = env.fake.requests().last().unwrap().clone();
    assert!(first_message(&next).contains("SUMMARY-ON-DEMAND"));
    assert!(
        next["messages"].to_string().contains("REPLY-5"),
        "the last messages are kept"
    );
    assert!(
        !next["messages"].to_string().contains("INPUT-1 "),
        "the first turn was summarised"
    );
}

/// Compaction's figures, automatic and manual, are in `/context`'s unit: estimated tokens of
/// all a model call sends (system prompt, memory, tools and conversation), not of the
/// conversation alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_figures_count_what_context_counts() {
    let env = TestEnv::new();
    settings(&env, 12_000, serde_json::json!({}));
    env.start_daemon();
    let client = env.client().await;
    let id = session(&env, &client).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push_when(SUMMARY_ASK, Reply::text(&["SUMMARY"]));
    let context = || async {
        client
            .call::<SessionContext>(SessionParams {
                session_id: id.clone(),
            })
            .await
            .unwrap()
    };
    let used = |c: &stepper_protocol::methods::SessionContextResponse| c.window - c.free;

    // Automatic: the turn that compacts starts from what `/context` said before it, plus its
    // input (the environment the turn adds is a few hundred bytes of the difference).
    let mut automatic = None;
    for n in 1..=20u32 {
        let said = used(&context().await);
        env.fake.push(Reply::text(&[&format!("reply {n}")]));
        let words = format!("TURN-{n} {}", "lorem ipsum ".repeat(250));
        submit(&client, &id, &words).await;
        let seen = turn_done(&mut events).await;
        if let Some(before) = seen.iter().find_map(|e| match e.event {
            AppEvent::CompactionStarted {
                before_tokens,
                manual: false,
            } => Some(before_tokens),
            _ => None,
        }) {
            automatic = Some((said + words.len() as u64 / 4, before));
            break;
        }
    }
    let (expected, before) = automatic.expect("the session was compacted");
    assert!(
        before.abs_diff(expected) * 10 <= expected,
        "automatic compaction counted {before} tokens where /context gave {expected}"
    );

    // Manual: exactly what `/context` says, before and after.
    for n in 1..=3 {
        env.fake.push(Reply::text(&[&format!("more {n}")]));
        submit(&client, &id, &format!("MORE-{n} {}", "words ".repeat(100))).await;
        turn_done(&mut events).await;
    }
    let said = context().await;
    client
        .call::<SessionCompact>(SessionCompactParams {
            session_id: id.clone(),
            instructions: None,
        })
        .await
        .unwrap();
    let seen = turn_done(&mut events).await;
    let (started, finished) = (
        seen.iter().find_map(|e| match e.event {
            AppEvent::CompactionStarted {
                before_tokens,
                manual: true,
            } => Some(before_tokens),
            _ => None,
        }),
        seen.iter().find_map(|e| match e.event {
            AppEvent::CompactionFinished {
                before_tokens,
                after_tokens,
                ..
            } => Some((before_tokens, after_tokens)),
            _ => None,
        }),
    );
    assert_eq!(started, Some(used(&said)), "{said:?}");
    let after = used(&context().await);
    assert_eq!(finished, Some((used(&said), after)), "{said:?}");
}
