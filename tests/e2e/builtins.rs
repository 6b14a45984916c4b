//! `/model` and the built-in commands against the fake LLM: a model id is checked against its
//! provider's catalogue or its server's list before anything changes; and `/model`,
//! `/context`, `/help`, `/clear` are answered by the daemon as turns of their own, the same
//! for `ask`, the TUI and an editor.

use stepper_e2e::output::{stderr, stdout};
use stepper_e2e::{TestEnv, read_until, submit, until_turn_finished};
use stepper_protocol::client::{ClientError, DaemonClient};
use stepper_protocol::error as code;
use stepper_protocol::methods::{
    SessionGet, SessionParams, SessionSetModel, SessionSetModelParams,
};
use stepper_protocol::{AppEvent, EventEnvelope};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A local server (the fake, which lists `qwen3:8b` and `llama3.2:3b`) and one nothing
/// answers for, in a project the user trusts.
fn local_servers(env: &TestEnv) {
    let settings = serde_json::json!({"providers": {
        "local": {"kind": "openai-chat", "baseUrl": format!("{}/v1", env.fake.url)},
        "down": {"kind": "openai-chat", "baseUrl": "http://127.0.0.1:9/v1"},
    }});
    write(
        &env.project.path().join(".stepper/setting.json"),
        &settings.to_string(),
    );
    env.trust_project();
}

async fn set_model(client: &DaemonClient, id: &str, model: &str) -> Result<(), (i32, String)> {
    client
        .call::<SessionSetModel>(SessionSetModelParams {
            session_id: id.into(),
            model: model.into(),
        })
        .await
        .map(drop)
        .map_err(|e| match e {
            ClientError::Rpc { code, message, .. } => (code, message),
            other => panic!("{other}"),
        })
}

async fn model_of(client: &DaemonClient, id: &str) -> String {
    client
        .call::<SessionGet>(SessionParams {
            session_id: id.into(),
        })
        .await
        .unwrap()
        .session
        .model
}

fn models_changed(events: &[EventEnvelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ModelChanged { model, .. } => Some(model.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_model_takes_only_what_the_provider_has() {
    let env = TestEnv::new();
    local_servers(&env);
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();

    // An id Anthropic does not have: refused, naming the nearest it has; nothing changes.
    let (c, message) = set_model(&client, &id, "anthropic/claude-sonet-4-5")
        .await
        .unwrap_err();
    assert_eq!(c, code::INVALID_PARAMS, "{message}");
    assert!(
        message.contains("anthropic has no model \"claude-sonet-4-5\"")
            && message.contains("claude-sonnet-4-5"),
        "{message}"
    );
    // A bare word names a model only when it names exactly one.
    let (c, message) = set_model(&client, &id, "sonet").await.unwrap_err();
    assert_eq!(c, code::INVALID_PARAMS, "{message}");
    assert!(message.contains("anthropic/claude-sonnet-4"), "{message}");
    assert_eq!(model_of(&client, &id).await, "anthropic/claude-sonnet-4-5");
    set_model(&client, &id, "opus").await.unwrap();
    assert_eq!(model_of(&client, &id).await, "anthropic/claude-opus-4-1");
    set_model(&client, &id, "gpt-5-mini").await.unwrap();
    assert_eq!(model_of(&client, &id).await, "openai/gpt-5-mini");

    // A local server is asked what it serves.
    set_model(&client, &id, "local/qwen3:8b").await.unwrap();
    let (c, message) = set_model(&client, &id, "local/qwen9").await.unwrap_err();
    assert_eq!(c, code::INVALID_PARAMS, "{message}");
    assert!(message.contains("qwen3:8b"), "{message}");
    // One that does not answer is said, not taken on trust.
    let (c, message) = set_model(&client, &id, "down/qwen3").await.unwrap_err();
    assert_eq!(c, code::PROVIDER_UNAVAILABLE, "{message}");
    assert!(
        message.contains("cannot check down/qwen3") && message.contains("127.0.0.1:9"),
        "{message}"
    );
    set_model(&client, &id, "anthropic/claude-sonnet-4-5")
        .await
        .unwrap();

    // One ModelChanged per change made, none for a refusal.
    submit(&client, &id, "hi").await;
    let seen = read_until(&mut events, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    assert_eq!(
        models_changed(&seen),
        [
            "anthropic/claude-opus-4-1",
            "openai/gpt-5-mini",
            "local/qwen3:8b",
            "anthropic/claude-sonnet-4-5"
        ]
    );
}

/// `stepper ask "/context"` and the other built-ins: answered by the daemon without a model
/// call, printed like an answer; one that fails exits by the table.
#[test]
fn ask_gets_the_builtins_answered_by_the_daemon() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $0\n",
    );
    write(
        &env.project.path().join(".stepper/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app to staging\n---\nRun make deploy\n",
    );
    env.fake.push(stepper_e2e::Reply::text(&["first answer"]));
    let out = env.run(&["ask", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let asked = env.fake.requests().len();

    let out = env.run(&["ask", "--continue", "/context"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.starts_with("context of anthropic/claude-sonnet-4-5: ")
            && shown.contains("- tools: ")
            && shown.contains("- messages: "),
        "{shown}"
    );

    let out = env.run(&["ask", "--continue", "/help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stdout(&out), @r"
    Built-in commands:

    - /model [provider/model-id] — switch the model of the next turns (a bare id or alias will do); alone, list the models to switch to
    - /context — how full the model's context window is, by part
    - /compact [what to keep] — compact the conversation now
    - /clear — forget the conversation: the model starts afresh (the transcript stays, and a rewind brings it back)
    - /help — the built-in commands, and the commands and skills of this folder

    Commands:

    - /review FILE — Review a file (project)

    Skills:

    - /deploy — Deploy the app to staging (project)

    An MCP server's prompts are commands too: /mcp__<server>__<prompt>. A client may have its own (the TUI's /help lists its keys and commands).
    ");

    // `/model` alone: the models to switch to, the current one marked.
    let out = env.run(&["ask", "--continue", "/model"]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!("model_alone", env.normalized(&out));
    let out = env.run(&["ask", "--continue", "/model opus"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "The next turns use anthropic/claude-opus-4-1.\n"
    );
    // An id the provider does not have fails the turn: exit 1, saying what it has.
    let out = env.run(&["ask", "--continue", "/model anthropic/claude-nope"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    insta::assert_snapshot!("model_unknown", env.normalized(&out));
    // A provider that is not set up: exit 3, as for a turn.
    let out = env.run(&["ask", "--continue", "/model openrouter/some/model"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    insta::assert_snapshot!("model_of_a_provider_not_set_up", env.normalized(&out));

    // None of them reached the model, and its conversation holds none of them.
    assert_eq!(env.fake.requests().len(), asked);
    env.fake.push(stepper_e2e::Reply::text(&["second answer"]));
    let out = env.run(&["ask", "--continue", "and now?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let request = env.fake.requests().last().unwrap().to_string();
    assert!(request.contains("first answer"), "{request}");
    assert!(
        !request.contains("/context") && !request.contains("/help"),
        "{request}"
    );
    assert!(
        env.fake.requests().last().unwrap()["model"] == "claude-opus-4-1",
        "the model /model chose answered"
    );
}

const PINNED_LAYERS: &str = "---\nname: plan\nmodel: anthropic/claude-opus-4-1\n---\nPLAN.\n\n---\nname: code\nmodel: anthropic/claude-haiku-4-5\n---\nCODE.\n";

/// When every layer names its own model, `/model` still changes the session's, and says
/// that no layer uses it — in the answer and as a notice.
#[test]
fn model_says_which_layers_keep_their_own() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/stepper.md"),
        PINNED_LAYERS,
    );
    let out = env.run(&[
        "ask",
        "--format",
        "stream-json",
        "/model anthropic/claude-sonnet-4-5-20250929",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events = stepper_e2e::stream_json(&out);
    let notice = events
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .expect("a notice");
    assert!(
        notice.starts_with("every layer of ")
            && notice
                .contains("plan (anthropic/claude-opus-4-1), code (anthropic/claude-haiku-4-5)")
            && notice.contains("no layer uses the session's model"),
        "{notice}"
    );
    let said = events
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::MessageCompleted { text, .. } => Some(text.clone()),
            _ => None,
        })
        .expect("the answer");
    assert!(
        said.starts_with("The next turns use anthropic/claude-sonnet-4-5-20250929.")
            && said.contains(&notice),
        "{said}"
    );
    assert_eq!(
        models_changed(&events),
        ["anthropic/claude-sonnet-4-5-20250929"]
    );
    assert!(env.fake.requests().is_empty(), "no model was called");
}

/// `/clear`: the next turn's model sees none of what came before, in any layer, and the
/// `SessionStart` hooks run again (source `clear`); the transcript stays, and a rewind to
/// before it brings the conversation back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_starts_every_layer_afresh_and_a_rewind_undoes_it() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: plan\n---\nPLAN.\n\n---\nname: code\n---\nCODE.\n",
    );
    let hooks = serde_json::json!({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR\"/starts.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/starts.jsonl"}
    ]}]}});
    write(
        &env.project.path().join(".stepper/setting.json"),
        &hooks.to_string(),
    );
    env.trust_project();
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(stepper_e2e::Reply::text(&["PLAN-ONE"]));
    env.fake.push(stepper_e2e::Reply::text(&["CODE-ONE"]));
    submit(&client, &id, "FIRST-INPUT").await;
    until_turn_finished(&mut events).await;
    submit(&client, &id, "/clear").await;
    let seen = until_turn_finished(&mut events).await;
    let said = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::MessageCompleted { text, .. } => Some(text.clone()),
            _ => None,
        })
        .expect("the answer");
    assert!(
        said.starts_with("Cleared: the model starts afresh"),
        "{said}"
    );
    let asked = env.fake.requests().len();
    assert_eq!(asked, 2, "/clear called no model");

    env.fake.push(stepper_e2e::Reply::text(&["PLAN-TWO"]));
    env.fake.push(stepper_e2e::Reply::text(&["CODE-TWO"]));
    submit(&client, &id, "SECOND-INPUT").await;
    until_turn_finished(&mut events).await;
    let requests = env.fake.requests();
    for request in &requests[asked..] {
        let messages = request["messages"].to_string();
        assert!(messages.contains("SECOND-INPUT"), "{messages}");
        assert!(
            !messages.contains("FIRST-INPUT") && !messages.contains("ONE"),
            "what came before /clear reached a layer: {messages}"
        );
    }

    let starts: Vec<String> = std::fs::read_to_string(env.project.path().join("starts.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["source"].to_string())
        .collect();
    assert_eq!(starts, ["\"startup\"", "\"clear\""]);

    // Rewound to before the /clear, the conversation is back.
    client
        .call::<stepper_protocol::methods::SessionRewind>(
            stepper_protocol::methods::SessionRewindParams {
                session_id: id.clone(),
                turn: 2,
                files: false,
                conversation: true,
            },
        )
        .await
        .unwrap();
    env.fake.push(stepper_e2e::Reply::text(&["PLAN-THREE"]));
    env.fake.push(stepper_e2e::Reply::text(&["CODE-THREE"]));
    submit(&client, &id, "THIRD-INPUT").await;
    until_turn_finished(&mut events).await;
    let last = env.fake.requests().last().unwrap()["messages"].to_string();
    assert!(
        last.contains("FIRST-INPUT") && last.contains("CODE-ONE"),
        "{last}"
    );
    assert!(!last.contains("SECOND-INPUT"), "{last}");
}

/// The TUI's `/model ID`, `/help` and `/clear` are the daemon's answers, as `ask` gets them;
/// its status line follows the model.
#[test]
fn the_tui_shows_the_daemons_answers() {
    if !stepper_e2e::Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    let tmux = stepper_e2e::Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("stepper");
    pane.wait_for_text("● idle");
    pane.type_text("/model haiku");
    pane.press("Enter");
    pane.wait_for_history("the daemon's answer", |s| {
        s.contains("The next turns use anthropic/claude-haiku-4-5.")
    });
    pane.wait_for("the status line's model", |s| {
        s.lines()
            .last()
            .is_some_and(|l| l.contains("claude-haiku-4-5"))
    });
    pane.type_text("/model nope");
    pane.press("Enter");
    pane.wait_for_history("the refusal", |s| s.contains("no model is called \"nope\""));
    // Its own keys, then the daemon's built-ins.
    pane.type_text("/help");
    pane.press("Enter");
    pane.wait_for_history("both helps", |s| {
        s.contains("Commands of this terminal") && s.contains("Built-in commands:")
    });
    pane.type_text("/clear");
    pane.press("Enter");
    pane.wait_for_history("the clear", |s| {
        s.contains("Cleared: the model starts afresh")
    });
    assert!(env.fake.requests().is_empty(), "no model was called");
    pane.press("C-d");
}
