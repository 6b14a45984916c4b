//! Subscribers: replay then live, gap-free, and a slow one misses nothing and slows nobody.

use std::time::Duration;

use stepper_e2e::{Reply, TestEnv, submit, until_turn_finished};
use stepper_protocol::PermissionMode;
use stepper_protocol::client::ConnectOptions;
use stepper_protocol::{AppEvent, EventEnvelope};

fn assert_gap_free(events: &[EventEnvelope], first: u64) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (first..first + seqs.len() as u64).collect();
    assert_eq!(seqs, expected);
}

fn many_deltas(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("token{i} ")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscribers_see_the_same_gap_free_seqs() {
    let env = TestEnv::new();
    env.start_daemon();
    let deltas = many_deltas(300);
    env.fake.push(Reply::text(
        &deltas.iter().map(String::as_str).collect::<Vec<_>>(),
    ));

    let a = env.client().await;
    let b = env.client().await;
    let session = env.create_session(&a, None).await;
    let mut sa = a.subscribe_events(&session, 0).await.unwrap();
    let mut sb = b.subscribe_events(&session, 0).await.unwrap();
    submit(&a, &session, "stream a lot").await;

    let (ea, eb) = tokio::join!(until_turn_finished(&mut sa), until_turn_finished(&mut sb));
    assert_gap_free(&ea, 1);
    assert_eq!(ea, eb, "both subscribers saw the same events");
    let text: String = ea
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TextDelta { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, deltas.concat());

    // A late subscriber replays from any point.
    let mut late = b.subscribe_events(&session, 5).await.unwrap();
    let first = late.next().await.unwrap().unwrap();
    assert_eq!(first.seq, 6);
    assert_eq!(first, ea[5]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscriber_ends_with_every_event() {
    let env = TestEnv::new();
    env.start_daemon();
    let deltas = many_deltas(2000);
    env.fake.push(Reply::text(
        &deltas.iter().map(String::as_str).collect::<Vec<_>>(),
    ));

    let fast = env.client().await;
    // A tiny client buffer: jsonrpsee closes the subscription as soon as the reader lags.
    let slow = env
        .client_with(ConnectOptions {
            subscription_buffer: 8,
            ..Default::default()
        })
        .await;
    let session = env.create_session(&fast, None).await;
    let mut fast_stream = fast.subscribe_events(&session, 0).await.unwrap();
    let mut slow_stream = slow.subscribe_events(&session, 0).await.unwrap();
    submit(&fast, &session, "stream a lot").await;

    // The slow reader reads nothing until the fast one has the whole turn: the session does
    // not wait for it.
    let fast_events = until_turn_finished(&mut fast_stream).await;
    let slow_events = until_turn_finished(&mut slow_stream).await;
    assert!(fast_events.len() > 2000);
    assert_eq!(
        slow_events, fast_events,
        "the slow subscriber got every event, once, in order"
    );
    assert!(
        slow_stream.resubscribes() >= 1,
        "the slow subscriber's buffer overflowed and it resubscribed (else this test proves nothing)"
    );
    assert_eq!(fast_stream.resubscribes(), 0);
}

/// A subscriber whose socket is not read at all: the daemon's send to it blocks, its live
/// buffer overflows, and it catches up from the store — while the turn and the other
/// subscriber run at full speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_catches_up_from_the_store() {
    use jsonrpsee::core::client::{ReceivedMessage, TransportReceiverT, TransportSenderT};
    let env = TestEnv::new();
    env.start_daemon();
    let deltas = many_deltas(12_000);
    env.fake.push(Reply::text(
        &deltas.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let fast = env.client().await;
    let session = env.create_session(&fast, None).await;

    let stream = stepper_protocol::client::connect_stream(&env.places().socket)
        .await
        .unwrap();
    let url =
        jsonrpsee::client_transport::ws::Url::parse(stepper_protocol::transport::WS_URI).unwrap();
    let (mut tx, mut rx) = jsonrpsee::client_transport::ws::WsTransportClientBuilder::default()
        .build_with_stream(url, stream)
        .await
        .unwrap();
    let mut receive = async move || -> serde_json::Value {
        match rx.receive().await.unwrap() {
            ReceivedMessage::Text(t) => serde_json::from_str(&t).unwrap(),
            ReceivedMessage::Bytes(b) => serde_json::from_slice(&b).unwrap(),
            ReceivedMessage::Pong => serde_json::Value::Null,
        }
    };
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": stepper_protocol::PROTOCOL_VERSION,
        "client": {"name": "stalled", "kind": "other", "version": "0"}}});
    tx.send(init.to_string()).await.unwrap();
    assert!(receive().await["result"].is_object());
    let sub = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/subscribe",
        "params": {"sessionId": session, "afterSeq": 0}});
    tx.send(sub.to_string()).await.unwrap();
    let id = receive().await;
    assert!(
        id["result"].is_string() || id["result"].is_number(),
        "a subscription id: {id}"
    );

    let mut fast_stream = fast.subscribe_events(&session, 0).await.unwrap();
    submit(&fast, &session, "a lot").await;
    let fast_events = until_turn_finished(&mut fast_stream).await;

    let mut seqs = Vec::new();
    loop {
        let msg = receive().await;
        let envelope: EventEnvelope =
            serde_json::from_value(msg["params"]["result"].clone()).unwrap();
        let done = matches!(envelope.event, AppEvent::TurnFinished { .. });
        seqs.push(envelope.seq);
        if done {
            break;
        }
    }
    assert_eq!(seqs, fast_events.iter().map(|e| e.seq).collect::<Vec<_>>());
    // The log is written in the background: wait for the line.
    stepper_e2e::wait_until("the log line", std::time::Duration::from_secs(10), || {
        env.daemon_log().contains("catching up from the store")
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_submitted_at_once_run_one_at_a_time_in_seq_order() {
    let env = TestEnv::new();
    env.start_daemon();
    let clients = [
        env.client().await,
        env.client().await,
        env.client().await,
        env.client().await,
    ];
    let session = env.create_session(&clients[0], None).await;
    let mut stream = clients[0].subscribe_events(&session, 0).await.unwrap();
    let submits = clients.iter().enumerate().map(|(i, c)| {
        let session = session.clone();
        async move { submit(c, &session, &format!("input {i}")).await }
    });
    futures::future::join_all(submits).await;

    let mut queued = Vec::new();
    let mut started = Vec::new();
    let mut finished = 0;
    let mut open_turn = None;
    while finished < clients.len() {
        let e = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match e.event {
            AppEvent::InputQueued { input_id, .. } => queued.push(input_id),
            AppEvent::TurnStarted { input_id, .. } => {
                assert_eq!(open_turn, None, "a turn started while another ran");
                open_turn = e.turn;
                started.push(input_id);
            }
            AppEvent::TurnFinished { .. } => {
                assert_eq!(open_turn, e.turn);
                open_turn = None;
                finished += 1;
            }
            _ => {}
        }
    }
    assert_eq!(queued.len(), clients.len());
    assert_eq!(
        started, queued,
        "turns run in the order their inputs were queued"
    );
    let turns: Vec<_> = env
        .fake
        .requests()
        .iter()
        .map(|r| r["messages"].as_array().unwrap().len())
        .collect();
    assert_eq!(
        turns,
        [1, 3, 5, 7],
        "each turn sees the conversation before it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presence_model_and_mode_changes_reach_every_client() {
    use stepper_protocol::methods::{
        SessionClients, SessionParams, SessionSetMode, SessionSetModeParams, SessionSetModel,
        SessionSetModelParams,
    };
    let env = TestEnv::new();
    env.start_daemon();
    let a = env.client().await;
    let session = env.create_session(&a, None).await;
    let mut watching = a.subscribe_events(&session, 0).await.unwrap();
    let b = env.client().await;
    let sub_b = b.subscribe_events(&session, 0).await.unwrap();

    let clients = a
        .call::<SessionClients>(SessionParams {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .clients;
    assert_eq!(clients.len(), 2);
    a.call::<SessionSetModel>(SessionSetModelParams {
        session_id: session.clone(),
        model: "anthropic/claude-opus-4-1".into(),
    })
    .await
    .unwrap();
    a.call::<SessionSetMode>(SessionSetModeParams {
        session_id: session.clone(),
        mode: PermissionMode::Plan,
    })
    .await
    .unwrap();
    drop(sub_b);
    drop(b);

    let mut seen = Vec::new();
    while !seen.iter().any(|k: &String| k == "ClientDetached") {
        let e = tokio::time::timeout(Duration::from_secs(20), watching.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push(match &e.event {
            AppEvent::ModelChanged { model, by } => {
                assert_eq!(model, "anthropic/claude-opus-4-1");
                assert!(by.as_deref().unwrap().starts_with("e2e"));
                "ModelChanged".to_string()
            }
            AppEvent::ModeChanged { mode, .. } => {
                assert_eq!(*mode, PermissionMode::Plan);
                "ModeChanged".to_string()
            }
            other => other.kind().to_string(),
        });
    }
    // Only the second client's attaching was news (to the first); each left once.
    assert_eq!(
        seen.iter().filter(|k| *k == "ClientAttached").count(),
        1,
        "{seen:?}"
    );
    assert!(
        seen.contains(&"ModelChanged".to_string()) && seen.contains(&"ModeChanged".to_string()),
        "{seen:?}"
    );

    // The next turn uses the new model.
    submit(&a, &session, "hi").await;
    until_turn_finished(&mut watching).await;
    assert_eq!(
        env.fake.requests().last().unwrap()["model"],
        "claude-opus-4-1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_ends_its_subscriptions() {
    use stepper_protocol::methods::{SessionDelete, SessionParams};
    let env = TestEnv::new();
    env.start_daemon();
    let a = env.client().await;
    let session = env.create_session(&a, None).await;
    let mut watching = a.subscribe_events(&session, 0).await.unwrap();
    // Its history first: SessionCreated (a client alone is not logged as attaching).
    watching.next().await.unwrap().unwrap();
    let b = env.client().await;
    b.call::<SessionDelete>(SessionParams {
        session_id: session.clone(),
    })
    .await
    .unwrap();
    // The subscription ends; subscribing again finds no session.
    let next = tokio::time::timeout(Duration::from_secs(20), watching.next())
        .await
        .expect("the subscription ended");
    match next {
        Some(Err(e)) => assert!(e.to_string().contains("no session"), "{e}"),
        other => panic!("expected the end of the stream, got {other:?}"),
    }
}

/// A session attached to alone, visit after visit, does not grow: presence is logged only
/// when another client is attached to be told (issue 37).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_alone_again_and_again_logs_nothing() {
    use stepper_protocol::methods::{SessionClients, SessionGet, SessionParams};
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let session = env.create_session(&client, None).await;
    let last_seq = || async {
        client
            .call::<SessionGet>(SessionParams {
                session_id: session.clone(),
            })
            .await
            .unwrap()
            .session
            .last_seq
    };
    let before = last_seq().await;
    for _ in 0..5 {
        let visit = env.client().await;
        let stream = visit.subscribe_events(&session, 0).await.unwrap();
        let attached = client
            .call::<SessionClients>(SessionParams {
                session_id: session.clone(),
            })
            .await
            .unwrap()
            .clients;
        assert_eq!(attached.len(), 1, "listed while it is attached");
        drop(stream);
        drop(visit);
        stepper_e2e::wait_until_async("the visit to leave", Duration::from_secs(20), || async {
            client
                .call::<SessionClients>(SessionParams {
                    session_id: session.clone(),
                })
                .await
                .unwrap()
                .clients
                .is_empty()
        })
        .await;
    }
    assert_eq!(last_seq().await, before, "five visits, not one event");
}
