//! The protocol as PROTOCOL.md documents it, spoken the way an outside client would: a plain
//! WebSocket written here from RFC 6455 (no project code, no WebSocket library) and JSON-RPC
//! messages built by hand, through the document's example session and its error table.

use serde_json::value::RawValue;
use serde_json::{Value, json};
use stepper_e2e::fake_llm::{stream_start, text_deltas};
use stepper_e2e::ws::Ws;
use stepper_e2e::{Reply, TestEnv};

fn result(reply: &Value) -> &Value {
    assert!(reply.get("error").is_none(), "expected a result: {reply}");
    &reply["result"]
}

fn error(reply: &Value) -> (i64, &str, &Value) {
    let e = &reply["error"];
    assert!(e.is_object(), "expected an error: {reply}");
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap(),
        &e["data"],
    )
}

fn initialize(ws: &mut Ws) -> Value {
    ws.call(
        1,
        "initialize",
        json!({
            "protocolVersion": {"major": 1, "minor": 2},
            "client": {"name": "conformance", "kind": "other", "version": "0"}
        }),
    )
}

fn create(ws: &mut Ws, env: &TestEnv, id: u64) -> String {
    let env_vars: serde_json::Map<String, Value> = env
        .envs()
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let reply = ws.call(
        id,
        "session/create",
        json!({"cwd": env.project.path(), "env": env_vars}),
    );
    let r = result(&reply);
    assert_eq!(r["mode"], "default");
    r["session"]["id"].as_str().unwrap().to_string()
}

/// Events of `subscription` until the end of a turn, as (seq, type, text sent).
fn until_turn_finished(ws: &mut Ws, subscription: &Value) -> Vec<(u64, String, String)> {
    let mut seen = Vec::new();
    loop {
        let (sub, raw) = ws.event();
        assert_eq!(&sub, subscription);
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        let kind = v["event"]["type"].as_str().unwrap().to_string();
        seen.push((
            v["seq"].as_u64().unwrap(),
            kind.clone(),
            raw.get().to_string(),
        ));
        if kind == "TurnFinished" {
            return seen;
        }
    }
}

/// A reply whose usage makes a cost the JSON parser cannot read back exactly: live it is
/// `0.00009599999999999999`; decoded and encoded again it would be `0.000096`.
fn reply_with_an_awkward_cost() -> Reply {
    Reply::Sse(
        stream_start()
            + &text_deltas(&["hello ", "outside ", "world"])
            + "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
               event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":\
               {\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\
               \"usage\":{\"output_tokens\":5}}\n\n\
               event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )
}

#[test]
fn the_documented_session_works_over_a_plain_websocket() {
    let env = TestEnv::new();
    env.fake.push(reply_with_an_awkward_cost());
    env.fake.push(Reply::text(&["second"]));
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/any/path/works");

    // Every connection starts with initialize.
    let reply = ws.call(7, "daemon/info", Value::Null);
    let (code, message, data) = error(&reply);
    assert_eq!(code, -32051);
    assert_eq!(data["kind"], "notInitialized");
    assert_eq!(data["retry"], false);
    assert!(message.contains("initialize"), "{message}");
    let reply = initialize(&mut ws);
    assert_eq!(
        result(&reply)["protocolVersion"],
        json!({"major": 1, "minor": 13})
    );

    let session = create(&mut ws, &env, 2);
    let reply = ws.call(
        3,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 0}),
    );
    // The subscription's id is opaque JSON: kept as given, compared as given.
    let live_sub = result(&reply).clone();
    assert!(live_sub.is_string() || live_sub.is_u64(), "{live_sub}");
    // The replay: the session's first event. A client alone with the session is not logged
    // as attaching: presence is logged only when another client is attached to be told.
    let (_, first) = ws.event();
    let first: Value = serde_json::from_str(first.get()).unwrap();
    assert_eq!(
        (first["seq"].as_u64(), &first["event"]["type"]),
        (Some(1), &json!("SessionCreated"))
    );

    let reply = ws.call(
        4,
        "session/submit",
        json!({"sessionId": session, "text": "say hello"}),
    );
    let submitted = result(&reply).clone();
    assert!(submitted["inputId"].is_string() && submitted["seq"].is_u64());
    let live = until_turn_finished(&mut ws, &live_sub);
    let kinds: Vec<&str> = live.iter().map(|(_, k, _)| k.as_str()).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k} in {kinds:?}"))
    };
    assert!(at("InputQueued") < at("TurnStarted"));
    assert!(at("TurnStarted") < at("TextDelta"));
    assert!(at("MessageCompleted") < at("TurnFinished"));
    assert!(at("UsageUpdated") < at("TurnFinished"));
    for pair in live.windows(2) {
        assert_eq!(pair[1].0, pair[0].0 + 1, "seqs are gap-free: {kinds:?}");
    }
    let usage = &live
        .iter()
        .rev()
        .find(|(_, k, _)| k == "UsageUpdated")
        .unwrap()
        .2;
    assert!(
        usage.contains("0.00009599999999999999"),
        "the cost this test is built around: {usage}"
    );

    // A replay is byte for byte what was sent live: a second subscription from the start…
    let reply = ws.call(
        5,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 0}),
    );
    let replay_sub = result(&reply).clone();
    assert_ne!(replay_sub, live_sub);
    let last_live = live.last().unwrap().0;
    let mut replayed = Vec::new();
    while replayed.len() < last_live as usize {
        let (sub, raw) = ws.event();
        if sub == replay_sub {
            replayed.push(raw.get().to_string());
        }
    }
    for (seq, _, text) in &live {
        assert_eq!(&replayed[*seq as usize - 1], text, "event {seq} replayed");
    }
    // … and an export.
    let reply = ws.call_raw(
        6,
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/export",
                "params": {"sessionId": session}})
        .to_string(),
    );
    #[derive(serde::Deserialize)]
    struct Export {
        result: ExportResult,
    }
    #[derive(serde::Deserialize)]
    struct ExportResult {
        events: Vec<Box<RawValue>>,
    }
    let export: Export = serde_json::from_str(&reply).unwrap();
    for (seq, _, text) in &live {
        assert_eq!(
            export.result.events[*seq as usize - 1].get(),
            text,
            "event {seq} exported"
        );
    }

    // Unsubscribe by name; a wrong shape is an error, not a silent false.
    let reply = ws.call(9, "session/unsubscribe", json!({"id": live_sub}));
    let (code, _, data) = error(&reply);
    assert_eq!(
        (code, data["kind"].as_str()),
        (-32602, Some("invalidParams"))
    );
    let reply = ws.call(10, "session/unsubscribe", json!({"subscription": live_sub}));
    assert_eq!(result(&reply), &json!(true));
    let reply = ws.call(11, "session/unsubscribe", json!({"subscription": live_sub}));
    assert_eq!(result(&reply), &json!(false), "already ended");
    // Events still pending for it were read before the reply; none come after it.
    ws.notifications.retain(|m| {
        serde_json::from_str::<Value>(m).unwrap()["params"]["subscription"] != live_sub
    });
    ws.call(
        12,
        "session/submit",
        json!({"sessionId": session, "text": "again"}),
    );
    loop {
        let (sub, raw) = ws.event();
        assert_eq!(sub, replay_sub, "no event for an ended subscription");
        if raw.get().contains("\"TurnFinished\"") {
            break;
        }
    }

    // History for a view: completed turns without their streamed pieces, seqs with gaps.
    let reply = ws.call(
        13,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 0, "skipFinishedDeltas": true}),
    );
    let history_sub = result(&reply).clone();
    let mut seqs = Vec::new();
    let mut finished = 0;
    while finished < 2 {
        let (sub, raw) = ws.event();
        if sub != history_sub {
            continue;
        }
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        let kind = v["event"]["type"].as_str().unwrap().to_string();
        assert_ne!(kind, "TextDelta", "{raw}");
        finished += usize::from(kind == "TurnFinished");
        seqs.push(v["seq"].as_u64().unwrap());
        let live_text = live
            .iter()
            .find(|(seq, _, _)| Some(*seq) == v["seq"].as_u64());
        if let Some((_, _, text)) = live_text {
            assert_eq!(text, raw.get(), "what is sent is sent as it was");
        }
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    assert!(
        seqs.windows(2).any(|w| w[1] > w[0] + 1),
        "the deltas left gaps"
    );

    // Events in arrays: the same events, the same bytes, fewer messages.
    let reply = ws.call(
        14,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 0, "batch": true}),
    );
    let batch_sub = result(&reply).clone();
    let mut got: Vec<String> = Vec::new();
    let mut messages = 0;
    while got.len() < last_live as usize {
        let (sub, raw) = ws.event();
        if sub != batch_sub {
            continue;
        }
        messages += 1;
        let array: Vec<Box<RawValue>> = serde_json::from_str(raw.get()).unwrap();
        assert!(!array.is_empty());
        got.extend(array.iter().map(|e| e.get().to_string()));
    }
    assert!(
        messages < got.len(),
        "{messages} messages for {} events",
        got.len()
    );
    for (seq, _, text) in &live {
        assert_eq!(&got[*seq as usize - 1], text, "event {seq} in an array");
    }
}

#[test]
fn errors_carry_codes_kinds_and_say_what_to_do() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);

    let reply = ws.call(2, "session/get", json!({"sessionId": "no-such-session"}));
    let (code, message, data) = error(&reply);
    assert_eq!(
        (code, data["kind"].as_str()),
        (-32052, Some("sessionNotFound"))
    );
    assert!(message.contains("stepper sessions"), "{message}");
    assert!(data["hint"].is_string());

    let reply = ws.call(3, "session/get", json!(["positional"]));
    let (code, message, _) = error(&reply);
    assert_eq!(code, -32602);
    assert!(message.contains("by name"), "{message}");

    let reply = ws.call(4, "no/such", json!({}));
    assert_eq!(error(&reply).0, -32601);

    let reply = ws.call(5, "session/list", json!({"cursor": "garbage"}));
    let (code, _, data) = error(&reply);
    assert_eq!(
        (code, data["kind"].as_str()),
        (-32602, Some("invalidCursor"))
    );

    let session = create(&mut ws, &env, 6);
    let reply = ws.call(
        7,
        "session/setMode",
        json!({"sessionId": session, "mode": "yolo"}),
    );
    let (code, message, _) = error(&reply);
    assert_eq!(code, -32602);
    assert!(message.contains("accept-edits"), "{message}");

    let huge = "x".repeat(4 * 1024 * 1024 + 1);
    let reply = ws.call(
        8,
        "session/submit",
        json!({"sessionId": session, "text": huge}),
    );
    let (code, message, data) = error(&reply);
    assert_eq!((code, data["kind"].as_str()), (-32056, Some("tooLarge")));
    assert!(message.contains("4194304"), "{message}");

    let reply = ws.call_text(0, r#"[{"jsonrpc":"2.0","id":0,"method":"daemon/info"}]"#);
    assert!(reply["id"].is_null(), "{reply}");
    assert_eq!(error(&reply).0, -32005, "batches are not supported");

    let reply = ws.call(
        9,
        "session/create",
        json!({"cwd": env.project.path(), "title": "t".repeat(1000)}),
    );
    let title = result(&reply)["session"]["title"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        title.chars().count(),
        201,
        "cut to 200 characters and an ellipsis"
    );

    let reply = ws.call(10, "session/create", json!({"cwd": "relative/path"}));
    let (code, message, _) = error(&reply);
    assert_eq!(code, -32602);
    assert!(message.contains("absolute"), "{message}");

    // A first input goes with the session, in its first commit — or neither is kept.
    let listed = |ws: &mut Ws, id| {
        let reply = ws.call(id, "session/list", json!({}));
        result(&reply)["sessions"].as_array().unwrap().len()
    };
    let before = listed(&mut ws, 11);
    let reply = ws.call(
        12,
        "session/create",
        json!({"cwd": env.project.path(), "input": "x".repeat(4 * 1024 * 1024 + 1)}),
    );
    assert_eq!(error(&reply).0, -32056);
    assert_eq!(listed(&mut ws, 13), before, "no session without its input");
    let reply = ws.call(
        14,
        "session/create",
        json!({"cwd": env.project.path(), "input": "first words"}),
    );
    let r = result(&reply);
    assert_eq!(r["queued"]["seq"], 2, "{r}");
    assert_eq!(r["session"]["lastSeq"], 2, "{r}");
    assert_eq!(r["session"]["title"], "first words", "{r}");
}
