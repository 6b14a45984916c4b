//! Every wire format end to end through `stepper ask`, the faults each must survive, record
//! and replay, stored keys, and the ChatGPT sign-in against a fake authorization server.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Output, Stdio};

use stepper_e2e::fake_llm::{
    FAKE_ACCOUNT, FAKE_EMAIL, FAKE_OPENAI_KEY, fixture, stream_start, text_deltas,
};
use stepper_e2e::output::stderr;
use stepper_e2e::{Gate, Reply, Route, TestEnv};
use stepper_protocol::methods::AskResult;
use stepper_protocol::{AppEvent, EventEnvelope, TurnStatus};

const SONNET: &str = "anthropic/claude-sonnet-4-5";

fn ask_json(env: &TestEnv, args: &[&str]) -> (AskResult, Output) {
    let mut all = vec!["ask", "--format", "json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let result = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON result ({e}); stderr: {}", stderr(&out)));
    (result, out)
}

fn stream_events(env: &TestEnv, args: &[&str]) -> (Vec<EventEnvelope>, Output) {
    let mut all = vec!["ask", "--format", "stream-json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, out)
}

fn notices(events: &[EventEnvelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn anthropic_usage_is_priced() {
    let env = TestEnv::new();
    let (result, _) = ask_json(&env, &["hi"]);
    assert_eq!(result.status, TurnStatus::Completed);
    // claude-sonnet-4-5: 25 input at $3/M and 15 output at $15/M.
    let expected = 25.0 * 3.0 / 1e6 + 15.0 * 15.0 / 1e6;
    assert!(
        (result.cost_usd.unwrap() - expected).abs() < 1e-12,
        "{:?}",
        result.cost_usd
    );
}

#[test]
fn openai_responses_text_reasoning_and_usage() {
    let env = TestEnv::new();
    let (result, out) = ask_json(&env, &["--model", "openai/gpt-5", "hi"]);
    assert_eq!(result.status, TurnStatus::Completed, "{}", stderr(&out));
    assert_eq!(result.text, "Hello, world!");
    assert_eq!(
        (
            result.usage.input_tokens,
            result.usage.cache_read_tokens,
            result.usage.output_tokens
        ),
        (16, 1024, 5)
    );
    assert!(result.cost_usd.is_some());
    let seen = env.fake.seen(Route::Responses);
    assert_eq!(
        seen[0].headers["authorization"],
        format!("Bearer {FAKE_OPENAI_KEY}")
    );
    assert_eq!(seen[0].body["model"], "gpt-5");
    assert_eq!(seen[0].body["input"][0]["content"][0]["text"], "hi");

    env.fake.push_to(
        Route::Responses,
        Reply::Sse(fixture("openai/reasoning.sse")),
    );
    let (events, _) = stream_events(&env, &["--model", "openai/o4-mini", "how many r's?"]);
    let reasoning: String = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(reasoning.contains("Counting letters"), "{reasoning}");
}

#[test]
fn openai_compatible_server_from_settings() {
    let env = TestEnv::new();
    let settings = serde_json::json!({
        "model": "local/qwen3:8b",
        "providers": { "local": {
            "kind": "openai-chat",
            "baseUrl": format!("{}/v1", env.fake.url),
            "headers": { "x-extra": "from-settings" },
            "models": { "qwen3:8b": { "contextWindow": 32768, "maxOutput": 4096 } }
        }}
    });
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        settings.to_string(),
    )
    .unwrap();
    env.trust_project();
    let (result, out) = ask_json(&env, &["hi"]);
    assert_eq!(result.status, TurnStatus::Completed, "{}", stderr(&out));
    assert_eq!(result.text, "Hello there!");
    let seen = env.fake.seen(Route::Chat);
    assert_eq!(seen[0].headers["x-extra"], "from-settings");
    assert_eq!(seen[0].body["model"], "qwen3:8b");
    assert_eq!(
        seen[0].body["max_tokens"], 4096,
        "the model's maxOutput from the settings"
    );
    assert!(
        !seen[0].headers.contains_key("authorization"),
        "no key configured, none sent"
    );

    env.fake.push_to(
        Route::Chat,
        Reply::Sse(fixture("openai-chat/tool_calls.sse")),
    );
    let (result, _) = ask_json(&env, &["weather?"]);
    assert_eq!(result.status, TurnStatus::Completed);

    let out = env.run(&["models", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["default"], "local/qwen3:8b");
    let local = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "local/qwen3:8b")
        .unwrap();
    assert_eq!(local["contextWindow"], 32768);
    assert_eq!(local["configured"], true);

    // A broken settings file is a clear error naming the spot.
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        "{\n  \"model\": ,\n}",
    )
    .unwrap();
    let out = env.run(&["ask", "hi"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("setting.json:2:"), "{}", stderr(&out));
}

#[test]
fn rate_limits_and_overload_are_retried_with_notices() {
    let env = TestEnv::new();
    env.fake.push(Reply::Status {
        code: 429,
        message: "rate limited".into(),
        headers: vec![("retry-after-ms".into(), "20".into())],
    });
    env.fake.push(Reply::status(503, "unavailable"));
    env.fake.push(Reply::Sse(fixture("overloaded_first.sse")));
    let (events, out) = stream_events(&env, &["hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let notices = notices(&events);
    assert_eq!(notices.len(), 3, "{notices:?}");
    assert!(
        notices[0].contains("429") && notices[0].contains("retrying in 0.0s"),
        "{notices:?}"
    );
    assert!(notices[1].contains("503"), "{notices:?}");
    assert!(notices[2].contains("Overloaded"), "{notices:?}");
    assert_eq!(env.fake.requests().len(), 4);
    let text: String = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        text, "Hello, world! ✓",
        "nothing from the failed attempts leaks into the answer"
    );

    for _ in 0..5 {
        env.fake.push(Reply::status(500, "boom"));
    }
    let (result, _) = ask_json(&env, &["again"]);
    assert_eq!(result.status, TurnStatus::Failed);
    assert!(result.error.unwrap().contains("gave up after 5 attempts"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_midway_keeps_the_partial_text() {
    let env = TestEnv::new();
    env.start_daemon();
    let gate = Gate::new();
    env.fake.push(Reply::Cut {
        before: stream_start() + &text_deltas(&["half ", "way"]),
        gate: gate.clone(),
    });
    let ask = env
        .stepper()
        .args(["ask", "--format", "json", "hi"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Cut the connection once the partial answer is committed.
    env.running_session(6).await;
    gate.open();
    let out = ask.wait_with_output().unwrap();
    let result: AskResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result.status, TurnStatus::Failed);
    assert_eq!(result.text, "half way");
    let error = result.error.unwrap();
    assert!(error.contains("broke off"), "{error}");
    // The daemon serves the next ask as usual.
    let (next, _) = ask_json(&env, &["go on"]);
    assert_eq!(next.status, TurnStatus::Completed);
}

#[test]
fn an_idle_stream_times_out() {
    let env = TestEnv::new();
    let out = env
        .stepper()
        .env("STEPPER_STREAM_IDLE_TIMEOUT_MS", "300")
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let gate = Gate::new();
    env.fake.push(Reply::held(&["thinking…"], &gate));
    let (result, _) = ask_json(&env, &["hi"]);
    assert_eq!(result.status, TurnStatus::Failed);
    assert_eq!(result.text, "thinking…");
    let error = result.error.unwrap();
    assert!(
        error.starts_with("anthropic sent no data for 0.3s")
            && error.contains("raise STEPPER_STREAM_IDLE_TIMEOUT_MS (now 300)"),
        "{error}"
    );
    gate.open();
}

/// A provider that takes the request and never answers fails the turn after one wait, not
/// one per attempt, and the error says which setting to change.
#[test]
fn a_provider_that_never_answers_is_given_up_after_one_wait() {
    let env = TestEnv::new();
    let out = env
        .stepper()
        .env("STEPPER_STREAM_IDLE_TIMEOUT_MS", "1500")
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let gate = Gate::new();
    env.fake.push(Reply::Silent(gate.clone()));
    let (result, _) = ask_json(&env, &["hi"]);
    assert_eq!(result.status, TurnStatus::Failed);
    let error = result.error.unwrap();
    assert_eq!(
        error,
        "anthropic took the request but sent no answer in 1.5s — given up; if it is only slow, \
         raise STEPPER_STREAM_IDLE_TIMEOUT_MS (now 1500)"
    );
    assert_eq!(env.fake.requests().len(), 1, "no second attempt");
    gate.open();
}

#[test]
fn record_then_replay_without_the_provider() {
    let env = TestEnv::new();
    let (first, _) = ask_json(&env, &["--record", "session.jsonl", "hi"]);
    assert_eq!(first.status, TurnStatus::Completed);
    let recording = std::fs::read_to_string(env.project.path().join("session.jsonl")).unwrap();
    assert_eq!(recording.lines().count(), 1);
    assert!(!recording.contains(stepper_e2e::fake_llm::FAKE_KEY));
    let (replayed, out) = ask_json(&env, &["--model", "replay/session.jsonl", "hi"]);
    assert_eq!(replayed.status, TurnStatus::Completed, "{}", stderr(&out));
    assert_eq!(replayed.text, first.text);
    assert_eq!(env.fake.requests().len(), 1, "replay asks nobody");

    let missing = env.run(&["ask", "--model", "replay/nope.jsonl", "hi"]);
    assert_eq!(missing.status.code(), Some(3), "the provider's exit code");
    assert!(
        stderr(&missing).contains("cannot read the recording"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn a_stored_key_serves_a_daemon_without_one_and_the_environment_wins() {
    let env = TestEnv::new();
    let start = env
        .stepper()
        .env_remove("ANTHROPIC_API_KEY")
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(start.status.success());
    // Without a key anywhere, the session is refused before any request, with the fix.
    let out = env
        .stepper()
        .env_remove("ANTHROPIC_API_KEY")
        .args(["ask", "--model", SONNET, "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "the provider's exit code");
    assert!(
        stderr(&out).contains("stepper auth login --anthropic"),
        "{}",
        stderr(&out)
    );
    assert!(env.fake.requests().is_empty());

    let mut login = env
        .stepper()
        .args(["auth", "login", "--anthropic"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    login
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", stepper_e2e::fake_llm::FAKE_KEY).as_bytes())
        .unwrap();
    assert!(login.wait().unwrap().success());
    let out = env
        .stepper()
        .env_remove("ANTHROPIC_API_KEY")
        .args(["ask", "--model", SONNET, "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let out = env
        .stepper()
        .env("ANTHROPIC_API_KEY", "sk-ant-wrong-key")
        .args(["ask", "--model", SONNET, "hi"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("401"),
        "the client's key wins over the stored one: {}",
        stderr(&out)
    );

    let status = env.run(&["auth", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["storedKeys"], serde_json::json!(["anthropic"]));
    assert!(env.run(&["auth", "logout", "--anthropic"]).status.success());
    let creds = std::fs::read_to_string(env.places().data_dir.join("credentials.json")).unwrap();
    assert!(!creds.contains(stepper_e2e::fake_llm::FAKE_KEY));
}

/// Act as the browser: follow the redirect back to the daemon's callback.
fn browser_returns(redirect_uri: &str, state: &str) -> String {
    let url = url::Url::parse(redirect_uri).unwrap();
    let port = url.port().unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {}?code=fake-code&state={state} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n", url.path()).unwrap();
    let mut page = String::new();
    stream.read_to_string(&mut page).unwrap();
    page
}

#[test]
fn codex_sign_in_then_requests_with_refreshed_tokens() {
    let env = TestEnv::new();
    // Tokens that expire within the refresh margin: the first request must refresh them.
    env.fake.set_token_lifetime(60);
    let mut login = env
        .stepper()
        .args(["auth", "login", "--codex"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(login.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("the sign-in URL").unwrap();
        if let Some(start) = line.find("http") {
            break url::Url::parse(line[start..].trim()).unwrap();
        }
    };
    let query: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(url.path(), "/oauth/authorize");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["response_type"], "code");
    env.fake.expect_challenge(&query["code_challenge"]);

    // A forged state is refused, and the real sign-in still completes after it.
    let forged = browser_returns(&query["redirect_uri"], "forged");
    assert!(forged.contains("Sign-in failed"), "{forged}");
    let out = login.wait_with_output().unwrap();
    assert!(
        !out.status.success(),
        "the forged callback ends that sign-in"
    );

    let mut login = env
        .stepper()
        .args(["auth", "login", "--codex"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(login.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("the sign-in URL").unwrap();
        if let Some(start) = line.find("http") {
            break url::Url::parse(line[start..].trim()).unwrap();
        }
    };
    let query: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    env.fake.expect_challenge(&query["code_challenge"]);
    let page = browser_returns(&query["redirect_uri"], &query["state"]);
    assert!(
        page.contains("Signed in") && page.contains(FAKE_EMAIL),
        "{page}"
    );
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(login.wait().unwrap().success());
    assert!(
        rest.iter()
            .any(|l| l.contains(&format!("Signed in as {FAKE_EMAIL}"))),
        "{rest:?}"
    );
    assert_eq!(env.fake.tokens().exchanges, 1);

    let status = env.run(&["auth", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["codex"]["email"], FAKE_EMAIL);
    assert_eq!(status["codex"]["plan"], "plus");

    let (result, out) = ask_json(&env, &["--model", "codex/gpt-5-codex", "hi"]);
    assert_eq!(result.status, TurnStatus::Completed, "{}", stderr(&out));
    assert_eq!(result.text, "Hello, world!");
    assert_eq!(
        env.fake.tokens().refreshes,
        1,
        "the near-expiry token was refreshed first"
    );
    let seen = env.fake.seen(Route::Codex);
    assert_eq!(seen[0].headers["chatgpt-account-id"], FAKE_ACCOUNT);
    assert!(seen[0].body["instructions"].is_string());

    // Tokens never reach the daemon's log or the sessions.
    let access = env.fake.tokens().access_token.unwrap();
    assert!(!env.daemon_log().contains(&access));

    assert!(env.run(&["auth", "logout", "--codex"]).status.success());
    // Signed out, a codex session is refused up front with the fix.
    let after = env.run(&["ask", "--model", "codex/gpt-5-codex", "hi"]);
    assert_eq!(after.status.code(), Some(3), "the provider's exit code");
    assert!(
        stderr(&after).contains("stepper auth login --codex"),
        "{}",
        stderr(&after)
    );
}

#[test]
fn nobody_listening_is_a_fast_clear_error() {
    let env = TestEnv::new();
    let settings = serde_json::json!({ "providers": { "local": { "kind": "openai-chat", "baseUrl": "http://127.0.0.1:1/v1" } } });
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        settings.to_string(),
    )
    .unwrap();
    env.trust_project();
    let (events, _) = stream_events(&env, &["--model", "local/any", "hi"]);
    assert!(
        notices(&events).is_empty(),
        "a refused connection is not retried"
    );
    match &events.last().unwrap().event {
        AppEvent::TurnFinished {
            status: TurnStatus::Failed,
            error: Some(e),
            error_kind: Some(stepper_protocol::TurnErrorKind::Provider),
        } => {
            assert!(
                e.contains("connection refused — is the server running"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_malformed_event_is_a_clear_error_and_tool_use_ends_the_turn() {
    let env = TestEnv::new();
    env.fake.push(Reply::Sse(stream_start() + &text_deltas(&["fine so far"]) + "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": 42}}\n\n"));
    let (result, _) = ask_json(&env, &["hi"]);
    assert_eq!(result.status, TurnStatus::Failed);
    assert_eq!(result.text, "fine so far");
    let error = result.error.unwrap();
    assert!(
        error.contains("stream stepper cannot read") && error.contains("malformed"),
        "{error}"
    );

    env.fake.push(Reply::Sse(fixture("tool_use.sse")));
    let (events, _) = stream_events(&env, &["weather in SF?"]);
    let done = events.iter().find_map(|e| match &e.event {
        AppEvent::MessageCompleted { text, stop_reason } => {
            Some((text.clone(), stop_reason.clone()))
        }
        _ => None,
    });
    assert_eq!(
        done,
        Some((
            "Okay, let's check the weather for San Francisco, CA:".into(),
            Some("tool_use".into())
        ))
    );
}
