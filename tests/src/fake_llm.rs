//! A fake LLM service: real HTTP on loopback speaking each provider's real wire format —
//! Anthropic Messages, OpenAI Responses, Chat Completions, the ChatGPT Codex back end — and a
//! fake OpenAI authorization server for the ChatGPT sign-in. Replies come from fixtures
//! written after the public API references, scripted per test and per route.
//!
//! It runs on its own thread and runtime, so sync and async tests use it alike, and it checks
//! what a real server checks (keys, versions, tokens) so a wrong request fails loudly.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use base64::Engine;
use tokio::sync::Semaphore;

pub const FAKE_KEY: &str = "sk-ant-test-0123456789";
pub const FAKE_OPENAI_KEY: &str = "sk-openai-test-9876543210";
pub const FAKE_ACCOUNT: &str = "acct_fake_123";
pub const FAKE_EMAIL: &str = "ada@example.com";

/// The endpoints the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `POST /v1/messages`
    Anthropic,
    /// `POST /v1/responses`
    Responses,
    /// `POST /v1/chat/completions`
    Chat,
    /// `POST /codex/responses` (base URL `<url>/codex`)
    Codex,
}

impl Route {
    fn default_fixture(self) -> &'static str {
        match self {
            Route::Anthropic => "anthropic/text.sse",
            Route::Responses | Route::Codex => "openai/text.sse",
            Route::Chat => "openai-chat/text.sse",
        }
    }
}

/// A fixture under `tests/fixtures/`, e.g. `anthropic/text.sse`.
pub fn fixture(name: &str) -> String {
    // A bare name is an Anthropic fixture.
    let name = if name.contains('/') {
        name.to_string()
    } else {
        format!("anthropic/{name}")
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
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

/// What the server answers to the next request on a route.
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
    /// Send `before`, wait for the gate (so the client surely has it), then break the
    /// connection mid-body.
    Cut { before: String, gate: Gate },
    /// Accept the request and answer nothing (not even headers) until the gate opens, then
    /// a 503: a provider that hangs.
    Silent(Gate),
    /// Send `before`, wait `delay` (the model thinking), then send `after`: for
    /// benchmarks of work that overlaps model time.
    Paced {
        before: String,
        delay: std::time::Duration,
        after: String,
    },
    /// An HTTP error with a JSON body and extra headers (`retry-after`).
    Status {
        code: u16,
        message: String,
        headers: Vec<(String, String)>,
    },
}

impl Reply {
    /// A complete, valid Anthropic stream whose text is `deltas` concatenated.
    pub fn text(deltas: &[&str]) -> Reply {
        Reply::Sse(text_stream(deltas))
    }

    /// Stream `deltas` (Anthropic), then hold the message open until `gate` opens.
    pub fn held(deltas: &[&str], gate: &Gate) -> Reply {
        Reply::Held {
            before: stream_start() + &text_deltas(deltas),
            gate: gate.clone(),
            after: stream_end(),
        }
    }

    pub fn status(code: u16, message: &str) -> Reply {
        Reply::Status {
            code,
            message: message.into(),
            headers: Vec::new(),
        }
    }
}

/// The SSE body of an Anthropic message streaming `deltas` as text.
pub fn text_stream(deltas: &[&str]) -> String {
    stream_start() + &text_deltas(deltas) + &stream_end()
}

/// The Anthropic events that open a message and its text block.
pub fn stream_start() -> String {
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_t\",\
     \"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\
     \"stop_reason\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n\
     event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
     \"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        .to_string()
}

/// Just the Anthropic `content_block_delta` events for `deltas`.
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

/// An Anthropic message that calls tools: `(id, name, arguments as JSON)`, each streamed
/// with `input_json_delta` in two pieces.
pub fn tool_use_stream(calls: &[(&str, &str, serde_json::Value)]) -> String {
    let mut s = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_tu\",\
         \"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\
         \"stop_reason\":null,\"usage\":{\"input_tokens\":50,\"output_tokens\":1}}}\n\n",
    );
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let start = serde_json::json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}});
        s.push_str(&format!("event: content_block_start\ndata: {start}\n\n"));
        let json = args.to_string();
        let (a, b) = json.split_at(json.len() / 2);
        for piece in [a, b] {
            let delta = serde_json::json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}});
            s.push_str(&format!("event: content_block_delta\ndata: {delta}\n\n"));
        }
        s.push_str(&format!("event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n"));
    }
    s.push_str(
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\
         \"stop_sequence\":null},\"usage\":{\"output_tokens\":30}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    s
}

/// An OpenAI Responses stream that calls functions: `(call_id, name, arguments as JSON)`.
pub fn responses_call_stream(calls: &[(&str, &str, serde_json::Value)]) -> String {
    let mut s = String::from(
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_c\",\
         \"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
    );
    for (index, (call_id, name, args)) in calls.iter().enumerate() {
        let arguments = args.to_string();
        let item = |status: &str, arguments: &str| {
            serde_json::json!({"type": "function_call", "id": format!("fc_{index}"),
                "call_id": call_id, "name": name, "arguments": arguments, "status": status})
        };
        let added = serde_json::json!({"type": "response.output_item.added",
            "output_index": index, "item": item("in_progress", "")});
        s.push_str(&format!(
            "event: response.output_item.added\ndata: {added}\n\n"
        ));
        let delta = serde_json::json!({"type": "response.function_call_arguments.delta",
            "item_id": format!("fc_{index}"), "output_index": index, "delta": arguments});
        s.push_str(&format!(
            "event: response.function_call_arguments.delta\ndata: {delta}\n\n"
        ));
        let done = serde_json::json!({"type": "response.output_item.done",
            "output_index": index, "item": item("completed", &arguments)});
        s.push_str(&format!(
            "event: response.output_item.done\ndata: {done}\n\n"
        ));
    }
    s.push_str(
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_c\",\
         \"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":90,\
         \"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":40,\"total_tokens\":130}}}\n\n",
    );
    s
}

/// A Chat Completions stream that calls tools: `(id, name, arguments as JSON)`, each call's
/// arguments streamed in two pieces, then the usage chunk (`stream_options.include_usage`)
/// of `prompt_tokens` 100 and `completion_tokens` 20.
pub fn chat_tool_calls_stream(calls: &[(&str, &str, serde_json::Value)]) -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let c = serde_json::json!({"id": "chatcmpl-tc", "object": "chat.completion.chunk",
            "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut s = chunk(
        serde_json::json!({"role": "assistant", "content": null}),
        None,
    );
    for (index, (id, name, args)) in calls.iter().enumerate() {
        s.push_str(&chunk(
            serde_json::json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        let json = args.to_string();
        let mut cut = json.len() / 2;
        while !json.is_char_boundary(cut) {
            cut += 1;
        }
        let (a, b) = json.split_at(cut);
        for piece in [a, b] {
            s.push_str(&chunk(
                serde_json::json!({"tool_calls": [{"index": index,
                    "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    s.push_str(&chunk(serde_json::json!({}), Some("tool_calls")));
    let usage = serde_json::json!({"id": "chatcmpl-tc", "object": "chat.completion.chunk",
        "created": 1, "model": "m", "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}});
    s.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    s
}

/// The Anthropic events that close a message.
pub fn stream_end() -> String {
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
     event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\
     \"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n\
     event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        .to_string()
}

/// The models the fake lists at `GET /v1/models`, as OpenAI-compatible servers list them.
pub const FAKE_MODELS: [&str; 2] = ["qwen3:8b", "llama3.2:3b"];

async fn models() -> axum::Json<serde_json::Value> {
    let data: Vec<serde_json::Value> = FAKE_MODELS
        .iter()
        .map(|id| serde_json::json!({"id": id, "object": "model", "owned_by": "library"}))
        .collect();
    axum::Json(serde_json::json!({"object": "list", "data": data}))
}

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub route: Route,
    pub headers: HashMap<String, String>,
    pub body: serde_json::Value,
}

/// The fake authorization server's state: what it issued and how often.
#[derive(Debug, Default, Clone)]
pub struct TokenLog {
    pub exchanges: u32,
    pub refreshes: u32,
    /// The access token issued last; the Codex route accepts only it.
    pub access_token: Option<String>,
    /// Seconds the next access tokens live.
    pub lifetime_secs: i64,
    /// Challenges seen at /oauth/authorize are not needed: the verifier is checked against
    /// the challenge the test read from the URL.
    pub expected_challenge: Option<String>,
}

/// Picks the reply to a request from what it holds (a route and its JSON body), or passes
/// (`None`) to the keyed and queued replies.
pub type Responder = Arc<dyn Fn(Route, &serde_json::Value) -> Option<Reply> + Send + Sync>;

#[derive(Default)]
struct Shared {
    /// Consulted first: for many sessions at once, each answered after its own request.
    responder: Option<Responder>,
    replies: HashMap<Route, VecDeque<Reply>>,
    /// Replies for the first request whose last message contains the text, before the
    /// queue: for requests that arrive together in no set order (parallel workers).
    keyed: Vec<(String, Reply)>,
    seen: Vec<Seen>,
    tokens: TokenLog,
}

pub struct FakeLlm {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeLlm {
    pub fn start() -> FakeLlm {
        let shared = Arc::new(Mutex::new(Shared::default()));
        shared.lock().unwrap().tokens.lifetime_secs = 3600;
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        std::thread::spawn(move || {
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
                    .route(
                        "/v1/messages",
                        post(|s, h, b| serve(Route::Anthropic, s, h, b)),
                    )
                    .route(
                        "/v1/responses",
                        post(|s, h, b| serve(Route::Responses, s, h, b)),
                    )
                    .route(
                        "/v1/chat/completions",
                        post(|s, h, b| serve(Route::Chat, s, h, b)),
                    )
                    .route(
                        "/codex/responses",
                        post(|s, h, b| serve(Route::Codex, s, h, b)),
                    )
                    .route("/oauth/token", post(token))
                    .route("/v1/models", axum::routing::get(models))
                    // Requests carry pictures and PDFs (20 MiB as base64 and more), over
                    // axum's 2 MB default.
                    .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024))
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
        FakeLlm {
            url,
            shared,
            shutdown: Some(shutdown),
        }
    }

    /// Queue the reply to a coming Anthropic request.
    pub fn push(&self, reply: Reply) {
        self.push_to(Route::Anthropic, reply);
    }

    /// Queue the reply to a coming request on `route` (in order; when none is queued, the
    /// route's text fixture is sent).
    pub fn push_to(&self, route: Route, reply: Reply) {
        self.shared
            .lock()
            .unwrap()
            .replies
            .entry(route)
            .or_default()
            .push_back(reply);
    }

    /// Answer every request `responder` picks a reply for, ahead of the keyed and queued
    /// replies (on any route): a test that plays many sessions at once, in no set order,
    /// answers each by what its request holds.
    pub fn respond_with(
        &self,
        responder: impl Fn(Route, &serde_json::Value) -> Option<Reply> + Send + Sync + 'static,
    ) {
        self.shared.lock().unwrap().responder = Some(Arc::new(responder));
    }

    /// Answer the first Anthropic request whose last message contains `needle` with
    /// `reply` (ahead of the queue).
    pub fn push_when(&self, needle: &str, reply: Reply) {
        self.shared
            .lock()
            .unwrap()
            .keyed
            .push((needle.to_string(), reply));
    }

    /// The bodies of the Anthropic requests received so far.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.seen(Route::Anthropic)
            .into_iter()
            .map(|s| s.body)
            .collect()
    }

    /// The requests received on `route` so far.
    pub fn seen(&self, route: Route) -> Vec<Seen> {
        self.shared
            .lock()
            .unwrap()
            .seen
            .iter()
            .filter(|s| s.route == route)
            .cloned()
            .collect()
    }

    pub fn tokens(&self) -> TokenLog {
        self.shared.lock().unwrap().tokens.clone()
    }

    /// How long access tokens issued from now on live.
    pub fn set_token_lifetime(&self, secs: i64) {
        self.shared.lock().unwrap().tokens.lifetime_secs = secs;
    }

    /// The PKCE challenge from the authorize URL, which the token exchange must match.
    pub fn expect_challenge(&self, challenge: &str) {
        self.shared.lock().unwrap().tokens.expected_challenge = Some(challenge.into());
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn serve(
    route: Route,
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let bearer = header_text(&headers, "authorization");
    let authorized = match route {
        Route::Anthropic => header_text(&headers, "x-api-key").as_deref() == Some(FAKE_KEY),
        Route::Responses => bearer.as_deref() == Some(&format!("Bearer {FAKE_OPENAI_KEY}")),
        Route::Chat => true,
        Route::Codex => {
            let issued = shared.lock().unwrap().tokens.access_token.clone();
            issued.is_some_and(|t| bearer.as_deref() == Some(&format!("Bearer {t}")))
                && header_text(&headers, "chatgpt-account-id").as_deref() == Some(FAKE_ACCOUNT)
        }
    };
    if !authorized {
        return error(401, "authentication_error", "invalid credentials");
    }
    if route == Route::Anthropic && headers.get("anthropic-version").is_none() {
        return error(
            400,
            "invalid_request_error",
            "anthropic-version header is required",
        );
    }
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error(400, "invalid_request_error", "body is not JSON");
    };
    let well_formed = json["stream"] == true
        && json["model"].as_str().is_some()
        && match route {
            Route::Anthropic => json["messages"].is_array() && json["max_tokens"].is_u64(),
            Route::Responses | Route::Codex => json["input"].is_array() && json["store"] == false,
            Route::Chat => json["messages"].is_array(),
        }
        && (route != Route::Codex
            || (json["instructions"].is_string() && json.get("max_output_tokens").is_none()));
    if !well_formed {
        return error(
            400,
            "invalid_request_error",
            "not a well-formed streaming request for this endpoint",
        );
    }
    let kept = [
        "authorization",
        "x-api-key",
        "anthropic-version",
        "chatgpt-account-id",
        "x-extra",
    ];
    // Called without the lock held: a responder is the test's code.
    let responder = shared.lock().unwrap().responder.clone();
    let picked = responder.and_then(|r| r(route, &json));
    let reply = {
        let mut s = shared.lock().unwrap();
        let last = json["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m.to_string())
            .unwrap_or_default();
        let keyed = s
            .keyed
            .iter()
            .position(|(needle, _)| picked.is_none() && last.contains(needle.as_str()))
            .map(|i| s.keyed.remove(i).1);
        s.seen.push(Seen {
            route,
            headers: kept
                .iter()
                .filter_map(|k| header_text(&headers, k).map(|v| (k.to_string(), v)))
                .collect(),
            body: json,
        });
        picked.or(keyed).unwrap_or_else(|| {
            s.replies
                .get_mut(&route)
                .and_then(VecDeque::pop_front)
                .unwrap_or_else(|| Reply::Sse(fixture(route.default_fixture())))
        })
    };
    match reply {
        Reply::Status {
            code,
            message,
            headers,
        } => {
            let mut r = error(code, "api_error", &message);
            for (k, v) in headers {
                r.headers_mut().insert(
                    axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            r
        }
        Reply::Sse(body) => sse(chunked(body), Tail::End),
        Reply::Held {
            before,
            gate,
            after,
        } => sse(chunked(before), Tail::Gated(gate, chunked(after))),
        Reply::Cut { before, gate } => sse(chunked(before), Tail::Cut(gate)),
        Reply::Paced {
            before,
            delay,
            after,
        } => sse(chunked(before), Tail::Paced(delay, chunked(after))),
        Reply::Silent(gate) => {
            if let Ok(permit) = gate.0.acquire().await {
                permit.forget();
            }
            error(503, "overloaded_error", "answered too late")
        }
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// An unsigned JWT: the client reads claims without checking the signature.
pub fn jwt(claims: serde_json::Value) -> String {
    let enc = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    format!(
        "{}.{}.{}",
        enc(&serde_json::json!({"alg": "none", "typ": "JWT"})),
        enc(&claims),
        "sig"
    )
}

/// The token endpoint: the authorization-code exchange (form) and the refresh (JSON or form).
async fn token(
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form =
        header_text(&headers, "content-type").is_some_and(|c| c.contains("x-www-form-urlencoded"));
    let params: HashMap<String, String> = if form {
        url::form_urlencoded::parse(&body).into_owned().collect()
    } else {
        match serde_json::from_slice::<HashMap<String, serde_json::Value>>(&body) {
            Ok(m) => m
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect(),
            Err(_) => return oauth_error("invalid_request", "body is neither a form nor JSON"),
        }
    };
    let mut s = shared.lock().unwrap();
    match params.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let (Some(code), Some(verifier)) = (params.get("code"), params.get("code_verifier"))
            else {
                return oauth_error("invalid_request", "code and code_verifier are required");
            };
            if code != "fake-code" {
                return oauth_error("invalid_grant", "unknown code");
            }
            if let Some(challenge) = &s.tokens.expected_challenge {
                use sha2::Digest;
                let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(verifier.as_bytes()));
                if &computed != challenge {
                    return oauth_error(
                        "invalid_grant",
                        "code_verifier does not match the challenge",
                    );
                }
            }
            s.tokens.exchanges += 1;
        }
        Some("refresh_token") => {
            if !params
                .get("refresh_token")
                .is_some_and(|r| r.starts_with("rt_"))
            {
                return oauth_error("invalid_grant", "refresh token unknown");
            }
            s.tokens.refreshes += 1;
        }
        _ => return oauth_error("unsupported_grant_type", "grant_type?"),
    }
    let n = s.tokens.exchanges + s.tokens.refreshes;
    let exp = now_secs() + s.tokens.lifetime_secs;
    let auth = serde_json::json!({"chatgpt_account_id": FAKE_ACCOUNT, "chatgpt_plan_type": "plus"});
    let access = jwt(serde_json::json!({"exp": exp, "n": n, "https://api.openai.com/auth": auth}));
    let id = jwt(
        serde_json::json!({"email": FAKE_EMAIL, "exp": exp, "https://api.openai.com/auth": auth}),
    );
    s.tokens.access_token = Some(access.clone());
    axum::Json(serde_json::json!({
        "id_token": id, "access_token": access, "refresh_token": format!("rt_{n}"),
        "expires_in": s.tokens.lifetime_secs, "token_type": "Bearer"
    }))
    .into_response()
}

fn oauth_error(code: &str, description: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(serde_json::json!({"error": code, "error_description": description})),
    )
        .into_response()
}

fn chunked(body: String) -> Vec<Bytes> {
    // Odd-sized chunks land mid-line and mid-character: the parser must not care.
    let bytes = body.into_bytes();
    bytes.chunks(61).map(Bytes::copy_from_slice).collect()
}

enum Tail {
    End,
    Gated(Gate, Vec<Bytes>),
    Paced(std::time::Duration, Vec<Bytes>),
    Cut(Gate),
}

fn sse(first: Vec<Bytes>, tail: Tail) -> Response {
    let (tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut tx = tx;
        use futures::SinkExt;
        for chunk in first {
            if tx.send(Ok(chunk)).await.is_err() {
                return;
            }
        }
        match tail {
            Tail::End => {}
            Tail::Gated(gate, rest) => {
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
            Tail::Paced(delay, rest) => {
                tokio::time::sleep(delay).await;
                for chunk in rest {
                    if tx.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
            }
            // An error from the body stream makes hyper abort the connection mid-body.
            Tail::Cut(gate) => {
                let Ok(permit) = gate.0.acquire().await else {
                    return;
                };
                permit.forget();
                let _ = tx.send(Err(std::io::Error::other("cut"))).await;
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
