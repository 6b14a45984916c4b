//! `/model` against the fake LLM: a model id is checked against its provider's catalogue or
//! its server's list before anything changes.

use stepper_e2e::{TestEnv, read_until, submit};
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
