//! A fake Anthropic Messages API: real HTTP on loopback, real SSE bodies from fixtures
//! written after the public API reference, scripted per test.
//!
//! It runs on its own thread and runtime, so sync and async tests use it alike, and it checks
//! what a real server checks (the key and version headers) so a wrong request fails loudly.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use tokio::sync::Semaphore;

pub const FAKE_KEY: &str = "sk-ant-test-0123456789";

/// A fixture from `tests/fixtures/anthropic/`.
pub fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/anthropic")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// A gate a test opens to let a held reply continue.
#[derive(Clone)]
pub struct Gate(Arc<Semaphore>);

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate(Arc::new(Semaphore::new(0)))
    }
    pub fn open(&self) {
        self.0.add_permits(1);
    }
}

/// What the server answers to the next request.
#[derive(Clone)]
pub enum Reply {
    /// An SSE body, sent in small chunks cut at arbitrary places.
    Sse(String),
    /// Send `before`, wait for the gate, then send `after`.
    Held {
        before: String,
        gate: Gate,
        after: String,
    },
    /// An HTTP error with a JSON body.
    Status(u16, String),
}

impl Reply {
    /// A complete, valid stream whose text is `deltas` concatenated.
    pub fn text(deltas: &[&str]) -> Reply {
        Reply::Sse(text_stream(deltas))
    }

    /// Stream `deltas`, then hold the message open until `gate` opens, then end it.
    pub fn held(deltas: &[&str], gate: &Gate) -> Reply {
        Reply::Held {
            before: stream_start() + &text_deltas(deltas),
            gate: gate.clone(),
            after: stream_end(),
        }
    }
}

/// The SSE body of a message streaming `deltas` as text.
pub fn text_stream(deltas: &[&str]) -> String {
    stream_start() + &text_deltas(deltas) + &stream_end()
}

/// The events that open a message and its text block.
pub fn stream_start() -> String {
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_t\",\
     \"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\
     \"stop_reason\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n\
     event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
     \"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        .to_string()
}

/// Just the `content_block_delta` events for `deltas`.
pub fn text_deltas(deltas: &[&str]) -> String {
    let mut s = String::new();
    for d in deltas {
        let delta = serde_json::json!({
            "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": d },
        });
        s.push_str(&format!("event: content_block_delta\ndata: {delta}\n\n"));
    }
    s
}

/// The events that close a message.
pub fn stream_end() -> String {
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
     event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\
     \"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n\
     event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        .to_string()
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    requests: Vec<serde_json::Value>,
}

pub struct FakeAnthropic {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeAnthropic {
    pub fn start() -> FakeAnthropic {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                url_tx
                    .send(format!("http://{}", listener.local_addr().unwrap()))
                    .unwrap();
                let app = Router::new()
                    .route("/v1/messages", post(messages))
                    .with_state(state);
                // Without TCP_NODELAY each small SSE write waits on the client's delayed ACK
                // (~40 ms): real API servers stream with it set.
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let url = url_rx.recv().expect("fake server failed to start");
        FakeAnthropic {
            url,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// Queue the reply to a coming request (replies are used in order; when none is queued,
    /// the `text.sse` fixture is sent).
    pub fn push(&self, reply: Reply) {
        self.shared.lock().unwrap().replies.push_back(reply);
    }

    /// The bodies of the requests received so far.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.shared.lock().unwrap().requests.clone()
    }
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        // Held replies may keep a connection open; the thread ends with the process if so.
        drop(self.thread.take());
    }
}

async fn messages(
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(FAKE_KEY) {
        return error(401, "authentication_error", "invalid x-api-key");
    }
    if headers.get("anthropic-version").is_none() {
        return error(
            400,
            "invalid_request_error",
            "anthropic-version header is required",
        );
    }
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error(400, "invalid_request_error", "body is not JSON");
    };
    if json["stream"] != true || !json["messages"].is_array() || json["model"].as_str().is_none() {
        return error(
            400,
            "invalid_request_error",
            "expected a streaming Messages request",
        );
    }
    let reply = {
        let mut s = shared.lock().unwrap();
        s.requests.push(json);
        s.replies
            .pop_front()
            .unwrap_or_else(|| Reply::Sse(fixture("text.sse")))
    };
    match reply {
        Reply::Status(code, message) => error(code, "api_error", &message),
        Reply::Sse(body) => sse(chunked(body), None),
        Reply::Held {
            before,
            gate,
            after,
        } => sse(chunked(before), Some((gate, chunked(after)))),
    }
}

fn chunked(body: String) -> Vec<Bytes> {
    // Odd-sized chunks land mid-line and mid-character: the parser must not care.
    let bytes = body.into_bytes();
    bytes.chunks(61).map(Bytes::copy_from_slice).collect()
}

fn sse(first: Vec<Bytes>, then: Option<(Gate, Vec<Bytes>)>) -> Response {
    let (tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, Infallible>>(16);
    tokio::spawn(async move {
        let mut tx = tx;
        use futures::SinkExt;
        for chunk in first {
            if tx.send(Ok(chunk)).await.is_err() {
                return;
            }
        }
        if let Some((gate, rest)) = then {
            let Ok(permit) = gate.0.acquire().await else {
                return;
            };
            permit.forget();
            for chunk in rest {
                if tx.send(Ok(chunk)).await.is_err() {
                    return;
                }
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(rx))
        .unwrap()
}

fn error(code: u16, kind: &str, message: &str) -> Response {
    let body =
        serde_json::json!({ "type": "error", "error": { "type": kind, "message": message } });
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(body),
    )
        .into_response()
}
