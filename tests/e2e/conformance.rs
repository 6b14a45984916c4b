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
        json!({"major": 1, "minor": 14})
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

/// `initialize` with a client name of its own.
fn initialize_as(ws: &mut Ws, name: &str) {
    let reply = ws.call(
        1,
        "initialize",
        json!({"protocolVersion": {"major": 1, "minor": 0},
               "client": {"name": name, "kind": "other", "version": "0"}}),
    );
    result(&reply);
}

/// The next message that is not a notification, as sent.
fn next_reply(ws: &mut Ws) -> Value {
    loop {
        let message = ws.receive();
        let value: Value = serde_json::from_str(&message).unwrap();
        if value.get("method").is_none() {
            return value;
        }
        ws.notifications.push_back(message);
    }
}

/// Section 8's example is what the daemon says: its `initialize` answer carries the daemon's
/// own protocol version, whatever minor the client speaks, and the title names the same.
#[test]
fn the_example_session_shows_what_the_daemon_answers() {
    let doc = include_str!("../../PROTOCOL.md");
    let example = &doc[doc.find("## 8. An example session").unwrap()..];
    let line_after = |prefix: &str| -> Value {
        let line = example
            .lines()
            .find(|l| l.starts_with(prefix) && l.contains("\"id\":1"))
            .unwrap_or_else(|| panic!("{prefix} initialize in the example"));
        serde_json::from_str(line.trim_start_matches(prefix)).unwrap()
    };
    let request = line_after("→ ");
    let documented = line_after("← ");
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    let reply = ws.call(1, "initialize", request["params"].clone());
    let answered = &result(&reply)["protocolVersion"];
    assert_eq!(&documented["result"]["protocolVersion"], answered);
    let title = doc.lines().next().unwrap();
    let version = format!("{}.{}", answered["major"], answered["minor"]);
    assert!(title.ends_with(&format!("version {version}")), "{title}");
    assert_ne!(
        request["params"]["protocolVersion"], *answered,
        "the example shows a client of another minor version"
    );
}

/// `session/steer` answers with the `inputId` its `Steered` event carries, or, with no turn
/// running, the one its `InputQueued` carries.
#[test]
fn steer_answers_with_the_id_its_event_carries() {
    let env = TestEnv::new();
    let gate = stepper_e2e::Gate::new();
    env.fake.push(stepper_e2e::Reply::held(&["working"], &gate));
    env.fake.push(Reply::text(&["steered"]));
    env.fake.push(Reply::text(&["queued"]));
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    let session = create(&mut ws, &env, 2);
    let reply = ws.call(
        3,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 0}),
    );
    let sub = result(&reply).clone();
    ws.call(
        4,
        "session/submit",
        json!({"sessionId": session, "text": "go"}),
    );
    loop {
        let (_, raw) = ws.event();
        if raw.get().contains("\"TextDelta\"") {
            break;
        }
    }
    let reply = ws.call(
        5,
        "session/steer",
        json!({"sessionId": session, "text": "also this"}),
    );
    let steered = result(&reply).clone();
    let input_id = steered["inputId"].as_str().unwrap().to_string();
    assert!(!input_id.is_empty(), "{steered}");
    gate.open();
    let events = until_turn_finished(&mut ws, &sub);
    let event: Value = events
        .iter()
        .map(|(_, _, text)| serde_json::from_str::<Value>(text).unwrap())
        .find(|e| e["event"]["type"] == "Steered")
        .expect("a Steered event");
    assert_eq!(event["event"]["inputId"], input_id.as_str());
    assert_eq!(event["seq"], steered["seq"]);

    let reply = ws.call(
        6,
        "session/steer",
        json!({"sessionId": session, "text": "later"}),
    );
    let queued = result(&reply).clone();
    let events = until_turn_finished(&mut ws, &sub);
    let event: Value = events
        .iter()
        .map(|(_, _, text)| serde_json::from_str::<Value>(text).unwrap())
        .find(|e| e["event"]["type"] == "InputQueued")
        .expect("an InputQueued event");
    assert!(!queued["inputId"].as_str().unwrap().is_empty(), "{queued}");
    assert_eq!(event["event"]["inputId"], queued["inputId"]);
}

/// `session/unsubscribe` takes `{"subscription": id}`, or `[id]` (what JSON-RPC libraries
/// send when a subscription is dropped); any other shape is INVALID_PARAMS.
#[test]
fn unsubscribe_takes_the_documented_shapes_and_refuses_others() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    let session = create(&mut ws, &env, 2);
    let subscribe = |ws: &mut Ws, id| {
        let reply = ws.call(id, "session/subscribe", json!({"sessionId": session}));
        result(&reply).clone()
    };
    let sub = subscribe(&mut ws, 3);
    for (id, params) in [
        (4, json!({"subscription": sub, "also": 1})),
        (5, json!([sub, 1])),
        (6, json!([])),
        (7, json!({"subscription": {"id": sub}})),
    ] {
        let reply = ws.call(id, "session/unsubscribe", params.clone());
        let (code, message, data) = error(&reply);
        assert_eq!(
            (code, data["kind"].as_str()),
            (-32602, Some("invalidParams")),
            "{params}"
        );
        assert!(message.contains("\"subscription\""), "{message}");
    }
    let reply = ws.call(8, "session/unsubscribe", json!([sub]));
    assert_eq!(result(&reply), &json!(true));
    let reply = ws.call(9, "session/unsubscribe", json!({"subscription": sub}));
    assert_eq!(
        result(&reply),
        &json!(false),
        "ended by the positional call"
    );
}

/// A request over 32 MiB is answered with its own id, wherever the id stands in it and
/// however it was framed; the connection goes on.
#[test]
fn a_request_over_the_limit_is_answered_with_its_id() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    let filler = "x".repeat(32 * 1024 * 1024);
    let id_last = format!(
        r#"{{"jsonrpc":"2.0","method":"session/submit","params":{{"sessionId":"s","text":"{filler}"}},"id":21}}"#
    );
    ws.send(&id_last);
    let reply = next_reply(&mut ws);
    assert_eq!(reply["id"], 21, "{reply}");
    let (code, message, _) = error(&reply);
    assert_eq!(code, -32007);
    assert!(message.contains("33554432"), "{message}");

    // In fragments, the first of them small: the same.
    let head = r#"{"jsonrpc":"2.0","id":"frag","method":"session/submit","params":{"text":""#;
    ws.send_fragments(&[head, &filler, &filler[..1024], r#""}}"#]);
    let reply = next_reply(&mut ws);
    assert_eq!(reply["id"], "frag", "{reply}");
    assert_eq!(error(&reply).0, -32007);

    // Under the limit a request is read as always, and the connection still serves.
    let reply = ws.call(22, "daemon/info", Value::Null);
    assert!(result(&reply)["pid"].is_u64());
    ws.send_fragments(&[r#"{"jsonrpc":"2.0","id":23,"#, r#""method":"daemon/info"}"#]);
    let reply = next_reply(&mut ws);
    assert_eq!(reply["id"], 23, "{reply}");
    assert!(result(&reply)["pid"].is_u64());
}

/// A request whose `id` JSON-RPC does not allow (an object, an array, a boolean; stepperd
/// takes strings and integers from 0 to 2^64-1) is answered INVALID_REQUEST with `id: null`,
/// not taken for a notification and left unanswered.
#[test]
fn a_request_with_an_id_json_rpc_does_not_allow_is_refused() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    for id in [
        json!({"n": 1}),
        json!([1]),
        json!(true),
        json!(-1),
        json!(1.5),
    ] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "daemon/info"});
        ws.send(&request.to_string());
        let reply = next_reply(&mut ws);
        assert!(reply["id"].is_null(), "{id}: {reply}");
        let (code, message, _) = error(&reply);
        assert_eq!(code, -32600, "{id}");
        assert!(message.contains("id must be"), "{message}");
    }
    // A notification (no id) is still not answered: the next reply is the next call's.
    ws.send(r#"{"jsonrpc":"2.0","method":"daemon/info"}"#);
    let reply = ws.call(5, "daemon/info", Value::Null);
    assert_eq!(reply["id"], 5);
}

/// Waiting on a sign-in nobody began is NOT_FOUND (`loginNotFound`), for a provider's and
/// for an MCP server's alike.
#[test]
fn waiting_on_an_unknown_sign_in_is_not_found_for_both_kinds() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    for (id, method) in [(2, "auth/waitLogin"), (3, "mcp/waitLogin")] {
        let reply = ws.call(id, method, json!({"loginId": "no-such-login"}));
        let (code, message, data) = error(&reply);
        assert_eq!(
            (code, data["kind"].as_str()),
            (-32052, Some("loginNotFound")),
            "{method}: {reply}"
        );
        assert!(message.contains("no-such-login"), "{message}");
    }
}

/// `session/list` with `limit: 0` is refused rather than taken as 1.
#[test]
fn listing_no_sessions_is_refused() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    create(&mut ws, &env, 2);
    create(&mut ws, &env, 3);
    let reply = ws.call(4, "session/list", json!({"limit": 0}));
    let (code, message, _) = error(&reply);
    assert_eq!(code, -32602);
    assert!(message.contains("at least 1"), "{message}");
    let reply = ws.call(5, "session/list", json!({"limit": 1}));
    let page = result(&reply);
    assert_eq!(page["sessions"].as_array().unwrap().len(), 1);
    assert!(page["nextCursor"].is_string());
}

/// Subscribing after a seq the session never reached is refused, saying the last one; the
/// last seq itself is fine (nothing to replay, then live).
#[test]
fn subscribing_past_the_last_seq_is_refused() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    let session = create(&mut ws, &env, 2);
    let reply = ws.call(
        3,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 5}),
    );
    let (code, message, data) = error(&reply);
    assert_eq!(
        (code, data["kind"].as_str()),
        (-32602, Some("invalidParams"))
    );
    assert!(message.contains("seq 1"), "{message}");
    let reply = ws.call(
        4,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 1}),
    );
    let sub = result(&reply).clone();
    ws.call(
        5,
        "session/setMode",
        json!({"sessionId": session, "mode": "plan"}),
    );
    let (got, raw) = ws.event();
    assert_eq!(got, sub);
    let event: Value = serde_json::from_str(raw.get()).unwrap();
    assert_eq!(
        (event["seq"].as_u64(), &event["event"]["type"]),
        (Some(2), &json!("ModeChanged"))
    );
}

/// The committed schema describes subscriptions as they are spoken: `session/subscribe`
/// returns the subscription's id, its events come as `session/event` notifications, and
/// `session/unsubscribe` has params and a result.
#[test]
fn the_schema_describes_subscribing_as_spoken() {
    let schema: Value =
        serde_json::from_str(include_str!("../../protocol/schema/stepper.schema.json")).unwrap();
    let def = |r: &Value| -> Value {
        let name = r["$ref"].as_str().unwrap().trim_start_matches("#/$defs/");
        schema["$defs"][name].clone()
    };
    let id = def(&schema["methods"]["session/subscribe"]["result"]);
    let types: Vec<&str> = id["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["type"].as_str())
        .collect();
    assert_eq!(types, ["integer", "string"], "{id}");
    let unsubscribe = &schema["methods"]["session/unsubscribe"];
    assert_eq!(
        def(&unsubscribe["params"])["required"],
        json!(["subscription"])
    );
    assert_eq!(unsubscribe["result"]["type"], "boolean");
    let event = def(&schema["notifications"]["session/event"]["params"]);
    assert_eq!(event["required"], json!(["subscription"]), "{event}");
}

/// A connection is one client however many subscriptions it holds: `session/clients` lists
/// it once, and only another connection's arrival is logged.
#[test]
fn a_connection_is_one_client_however_often_it_subscribes() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut ws = Ws::connect(&env, "/");
    initialize(&mut ws);
    let session = create(&mut ws, &env, 2);
    for id in [3, 4] {
        let reply = ws.call(
            id,
            "session/subscribe",
            json!({"sessionId": session, "afterSeq": 0}),
        );
        result(&reply);
    }
    let clients = |ws: &mut Ws, id| {
        let reply = ws.call(id, "session/clients", json!({"sessionId": session}));
        result(&reply)["clients"].as_array().unwrap().clone()
    };
    let listed = clients(&mut ws, 5);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["name"], "conformance");

    let mut other = Ws::connect(&env, "/");
    initialize_as(&mut other, "second");
    let reply = other.call(
        2,
        "session/subscribe",
        json!({"sessionId": session, "afterSeq": 0}),
    );
    result(&reply);
    let listed = clients(&mut ws, 6);
    let names: Vec<&str> = listed.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["conformance", "second"]);

    // Presence events: the second connection's arrival, and nothing of the first's second
    // subscription.
    let attached = |ws: &mut Ws| -> Vec<String> {
        let reply = ws.call(7, "session/export", json!({"sessionId": session}));
        result(&reply)["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"]["type"] == "ClientAttached")
            .map(|e| e["event"]["client"].as_str().unwrap().to_string())
            .collect()
    };
    stepper_e2e::wait_until(
        "the second client logged",
        std::time::Duration::from_secs(20),
        || !attached(&mut ws).is_empty(),
    );
    let logged = attached(&mut ws);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].starts_with("second"), "{logged:?}");
}
