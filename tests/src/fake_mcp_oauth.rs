//! A remote MCP server behind OAuth, as the spec has it: protected resource metadata
//! (RFC 9728), authorization server metadata (RFC 8414), dynamic client registration
//! (RFC 7591), an authorization endpoint that approves at once (redirecting back with a code),
//! a token endpoint that checks the PKCE verifier, and a streamable HTTP endpoint (JSON
//! answers) that refuses a request without the access token it issued. Started with a
//! client of its own (`start_with_client`), it is a confidential client's server: it
//! advertises `client_secret_basic` and takes the token request only with that client's id
//! and secret. A machine client's server (`start_machine`) grants `client_credentials` only.
//! A step-up server (`start_step_up`) answers a tool call 403 `insufficient_scope` unless the
//! token was granted `mcp:write` too.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

/// The access token the server issues; a test checks it never reaches a log.
pub const ACCESS_TOKEN: &str = "fake-mcp-access-token-7f3a";
/// The token a sign-in that asked for `mcp:write` gets (`start_step_up`).
pub const WIDE_TOKEN: &str = "fake-mcp-wide-token-52d1";

#[derive(Default)]
struct Shared {
    base: String,
    /// The code handed out and the PKCE challenge it was asked with.
    code: Option<(String, String)>,
    /// Requests refused for want of the token.
    refused: usize,
    /// The pre-registered client's id and secret, when there is one.
    client: Option<(String, String)>,
    /// Clients registered dynamically.
    registered: usize,
    /// Only `client_credentials` is granted.
    machine: bool,
    /// A tool call needs `mcp:write`.
    step_up: bool,
    /// The scope of each authorization request, and the one of the code handed out.
    scopes: Vec<String>,
    /// The tokens handed out so far are no longer taken (until a new one is).
    revoked: bool,
    /// Token requests answered.
    tokens: usize,
}

pub struct FakeMcpOAuth {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeMcpOAuth {
    pub fn start() -> FakeMcpOAuth {
        FakeMcpOAuth::serve(Shared::default())
    }

    /// A server whose owner registered the client `id` with `secret` beforehand.
    pub fn start_with_client(id: &str, secret: &str) -> FakeMcpOAuth {
        FakeMcpOAuth::serve(Shared {
            client: Some((id.to_string(), secret.to_string())),
            ..Shared::default()
        })
    }

    /// A server that grants the client `id` with `secret` tokens for itself
    /// (`client_credentials`), and nothing else.
    pub fn start_machine(id: &str, secret: &str) -> FakeMcpOAuth {
        FakeMcpOAuth::serve(Shared {
            client: Some((id.to_string(), secret.to_string())),
            machine: true,
            ..Shared::default()
        })
    }

    /// A server whose tool calls need the scope `mcp:write` beyond the `mcp` it asks for
    /// first.
    pub fn start_step_up() -> FakeMcpOAuth {
        FakeMcpOAuth::serve(Shared {
            step_up: true,
            ..Shared::default()
        })
    }

    /// Take no token handed out so far: the next request is refused (401) until a new
    /// token is granted.
    pub fn revoke(&self) {
        self.shared.lock().unwrap().revoked = true;
    }

    /// Tokens granted.
    pub fn tokens_granted(&self) -> usize {
        self.shared.lock().unwrap().tokens
    }

    /// The scope each authorization request asked for.
    pub fn scopes_asked(&self) -> Vec<String> {
        self.shared.lock().unwrap().scopes.clone()
    }

    fn serve(shared: Shared) -> FakeMcpOAuth {
        let shared = Arc::new(Mutex::new(shared));
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
                let base = format!("http://{}", listener.local_addr().unwrap());
                state.lock().unwrap().base = base.clone();
                url_tx.send(base).unwrap();
                let app = Router::new()
                    .route("/.well-known/oauth-protected-resource", get(resource))
                    .route("/.well-known/oauth-protected-resource/mcp", get(resource))
                    .route("/.well-known/oauth-authorization-server", get(issuer))
                    .route("/register", post(register))
                    .route("/authorize", get(authorize))
                    .route("/token", post(token))
                    .route("/mcp", post(mcp))
                    .with_state(state);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let base = url_rx.recv().unwrap();
        FakeMcpOAuth {
            url: format!("{base}/mcp"),
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// Requests refused because they lacked the token.
    pub fn refused(&self) -> usize {
        self.shared.lock().unwrap().refused
    }

    /// How many clients registered dynamically.
    pub fn registered(&self) -> usize {
        self.shared.lock().unwrap().registered
    }
}

impl Drop for FakeMcpOAuth {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

type Shared_ = State<Arc<Mutex<Shared>>>;

async fn resource(State(s): Shared_) -> Response {
    let base = s.lock().unwrap().base.clone();
    axum::Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["mcp"],
    }))
    .into_response()
}

async fn issuer(State(s): Shared_) -> Response {
    let base = s.lock().unwrap().base.clone();
    let methods = match s.lock().unwrap().client {
        Some(_) => json!(["client_secret_basic"]),
        None => json!(["none"]),
    };
    let grants = match s.lock().unwrap().machine {
        true => json!(["client_credentials"]),
        false => json!(["authorization_code", "refresh_token"]),
    };
    axum::Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": grants,
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": methods,
        "scopes_supported": ["mcp"],
    }))
    .into_response()
}

async fn register(State(s): Shared_, axum::Json(asked): axum::Json<Value>) -> Response {
    s.lock().unwrap().registered += 1;
    let mut client = asked.clone();
    client["client_id"] = json!("fake-client");
    client["token_endpoint_auth_method"] = json!("none");
    (StatusCode::CREATED, axum::Json(client)).into_response()
}

fn pairs(text: &str) -> std::collections::HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

async fn authorize(State(s): Shared_, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q.as_deref().unwrap_or(""));
    let (Some(back), Some(challenge)) = (q.get("redirect_uri"), q.get("code_challenge")) else {
        return (StatusCode::BAD_REQUEST, "redirect_uri and code_challenge").into_response();
    };
    let code = "fake-code-1".to_string();
    s.lock().unwrap().code = Some((code.clone(), challenge.clone()));
    let scope = q.get("scope").cloned().unwrap_or_default();
    s.lock().unwrap().scopes.push(scope);
    let state = q.get("state").cloned().unwrap_or_default();
    let iss = s.lock().unwrap().base.clone();
    let to = format!("{back}?code={code}&state={state}&iss={}", urlencode(&iss));
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn token(State(s): Shared_, headers: HeaderMap, body: String) -> Response {
    let form = pairs(&body);
    let client = s.lock().unwrap().client.clone();
    if let Some((id, secret)) = client {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if given != Some(format!("Basic {basic}").as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"error": "invalid_client"})),
            )
                .into_response();
        }
    }
    let grant = form.get("grant_type").map(String::as_str);
    let machine = s.lock().unwrap().machine;
    let fine = match grant {
        Some("client_credentials") => machine,
        _ if machine => false,
        Some("authorization_code") => {
            let given = s.lock().unwrap().code.take();
            match (given, form.get("code"), form.get("code_verifier")) {
                (Some((code, challenge)), Some(asked), Some(verifier)) if *asked == code => {
                    let hash = sha2::Sha256::digest(verifier.as_bytes());
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hash) == challenge
                }
                _ => false,
            }
        }
        Some("refresh_token") => form
            .get("refresh_token")
            .is_some_and(|r| r == "fake-refresh"),
        _ => false,
    };
    if !fine {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    // The last authorization request's scope is what the code (or its refresh) grants.
    let asked = {
        let mut shared = s.lock().unwrap();
        shared.revoked = false;
        shared.tokens += 1;
        shared.scopes.last().cloned().unwrap_or_default()
    };
    let wide = asked.split_whitespace().any(|s| s == "mcp:write");
    axum::Json(json!({
        "access_token": if wide { WIDE_TOKEN } else { ACCESS_TOKEN },
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": "fake-refresh",
        "scope": if wide { "mcp mcp:write" } else { "mcp" },
    }))
    .into_response()
}

async fn mcp(
    State(s): Shared_,
    headers: HeaderMap,
    axum::Json(message): axum::Json<Value>,
) -> Response {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let revoked = s.lock().unwrap().revoked;
    let signed = !revoked && bearer.is_some_and(|t| t == ACCESS_TOKEN || t == WIDE_TOKEN);
    if !signed {
        let mut shared = s.lock().unwrap();
        shared.refused += 1;
        let challenge = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            shared.base
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    }
    let id = message["id"].clone();
    if id.is_null() {
        return StatusCode::ACCEPTED.into_response();
    }
    if s.lock().unwrap().step_up && message["method"] == "tools/call" && bearer != Some(WIDE_TOKEN)
    {
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp mcp:write\", \
             resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            s.lock().unwrap().base
        );
        return (
            StatusCode::FORBIDDEN,
            [(header::WWW_AUTHENTICATE, challenge)],
            axum::Json(json!({"error": "insufficient_scope"})),
        )
            .into_response();
    }
    let result = match message["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-oauth", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Who the server thinks you are.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "hello, signed-in user"}]}),
        "ping" => json!({}),
        _ => {
            return axum::Json(json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"},
            }))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
