//! Misbehaving clients get JSON-RPC errors, and the daemon stays up for everyone else.

use jsonrpsee::core::client::{ClientT, ReceivedMessage, TransportReceiverT, TransportSenderT};
use jsonrpsee::core::params::ObjectParams;
use jsonrpsee::rpc_params;
use stepper_e2e::TestEnv;
use stepper_protocol::client::{ClientError, ConnectOptions, connect_raw, connect_stream};
use stepper_protocol::error as code;
use stepper_protocol::methods::{DaemonInfo, Empty, SessionGet, SessionParams};
use stepper_protocol::transport::WS_URI;

fn call_error(e: jsonrpsee::core::client::Error) -> (i32, String) {
    match e {
        jsonrpsee::core::client::Error::Call(obj) => (obj.code(), obj.message().to_string()),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

async fn still_up(env: &TestEnv) {
    let info = env
        .client()
        .await
        .call::<DaemonInfo>(Empty {})
        .await
        .unwrap();
    assert_eq!(Some(info.pid as i32), env.daemon_pid());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_frame_gets_a_parse_error() {
    let env = TestEnv::new();
    env.start_daemon();
    let stream = connect_stream(&env.places().socket).await.unwrap();
    let url = jsonrpsee::client_transport::ws::Url::parse(WS_URI).unwrap();
    let (mut tx, mut rx) = jsonrpsee::client_transport::ws::WsTransportClientBuilder::default()
        .build_with_stream(url, stream)
        .await
        .unwrap();
    for garbage in [
        "{\"jsonrpc\": \"2.0\", \"method\": ",
        "\u{0}\u{1}not json at all",
        "[]",
    ] {
        tx.send(garbage.to_string()).await.unwrap();
        let reply = match rx.receive().await.unwrap() {
            ReceivedMessage::Text(t) => t,
            ReceivedMessage::Bytes(b) => String::from_utf8(b).unwrap(),
            ReceivedMessage::Pong => panic!("pong"),
        };
        let json: serde_json::Value = serde_json::from_str(&reply).unwrap();
        let c = json["error"]["code"].as_i64().unwrap() as i32;
        assert!(
            c == code::PARSE_ERROR
                || c == code::INVALID_REQUEST
                || (garbage == "[]" && c == code::BATCHES_NOT_SUPPORTED),
            "{garbage:?} answered with {reply}"
        );
    }
    still_up(&env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_and_bad_params_are_errors() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = connect_raw(&env.places().socket, &ConnectOptions::default())
        .await
        .unwrap();

    // Before initialize, nothing but initialize runs.
    let e = client
        .request::<serde_json::Value, _>("daemon/info", rpc_params![])
        .await
        .unwrap_err();
    let (c, message) = call_error(e);
    assert_eq!(c, code::NOT_INITIALIZED);
    assert!(message.contains("initialize"));

    // A client from the future is told what to do.
    let mut p = ObjectParams::new();
    p.insert(
        "protocolVersion",
        serde_json::json!({"major": 99, "minor": 0}),
    )
    .unwrap();
    p.insert(
        "client",
        serde_json::json!({"name": "future", "kind": "cli", "version": "9"}),
    )
    .unwrap();
    let e = client
        .request::<serde_json::Value, _>("initialize", p)
        .await
        .unwrap_err();
    let (c, message) = call_error(e);
    assert_eq!(c, code::VERSION_MISMATCH);
    assert!(
        message.contains("99.0") && message.contains("stepper daemon stop"),
        "{message}"
    );

    let e = client
        .request::<serde_json::Value, _>("no/such", rpc_params![])
        .await
        .unwrap_err();
    assert_eq!(call_error(e).0, code::METHOD_NOT_FOUND);

    let typed = env.client().await;
    let e = typed
        .call::<SessionGet>(SessionParams {
            session_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Rpc {
                code: code::NOT_FOUND,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("stepper sessions"), "{e}");

    let mut p = ObjectParams::new();
    p.insert("sessionId", 42).unwrap();
    let raw = connect_raw(&env.places().socket, &ConnectOptions::default())
        .await
        .unwrap();
    let mut init = ObjectParams::new();
    init.insert("protocolVersion", stepper_protocol::PROTOCOL_VERSION)
        .unwrap();
    init.insert(
        "client",
        serde_json::json!({"name": "raw", "kind": "other", "version": "0"}),
    )
    .unwrap();
    raw.request::<serde_json::Value, _>("initialize", init)
        .await
        .unwrap();
    let e = raw
        .request::<serde_json::Value, _>("session/get", p)
        .await
        .unwrap_err();
    assert_eq!(call_error(e).0, code::INVALID_PARAMS);

    still_up(&env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_message_limit_is_refused_before_it_is_sent() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let session = env.create_session(&client, None).await;
    let huge = "x".repeat(33 * 1024 * 1024);
    let e = client
        .call::<stepper_protocol::methods::SessionSubmit>(
            stepper_protocol::methods::SessionSubmitParams {
                parts: Vec::new(),
                session_id: session.clone(),
                text: huge,
                env: None,
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::TooLarge { .. }), "{e:?}");
    assert!(e.to_string().contains("33553408"), "{e}");
    // Under the message limit but over the input limit: the daemon says so, by kind.
    let e = client
        .call::<stepper_protocol::methods::SessionSubmit>(
            stepper_protocol::methods::SessionSubmitParams {
                parts: Vec::new(),
                session_id: session,
                text: "y".repeat(5 * 1024 * 1024),
                env: None,
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Rpc {
                code: code::TOO_LARGE,
                kind: Some(stepper_protocol::error::ErrorKind::TooLarge),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(client.is_connected(), "the connection is still good");
}
