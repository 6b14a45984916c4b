//! Signing in, for the daemon: API keys stored for a daemon started without them in its
//! environment, and ChatGPT sign-in — OAuth with PKCE whose localhost callback the daemon
//! itself serves (axum), so the browser can come back to it whatever terminal asked.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::Uri;
use axum::response::Html;
use axum::routing::get;
use stepper_protocol::methods::{AuthStatusResponse, CodexAccount, LocalServer};
use stepper_providers::HttpClient;
use stepper_providers::auth::store::StoredServer;
use stepper_providers::auth::{CodexOAuth, CredentialStore, Pkce, codex, random_state};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long a sign-in may wait for the browser.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Providers whose stored keys `auth/status` reports.
const KEY_PROVIDERS: [&str; 3] = ["anthropic", "openai", "openrouter"];

type Outcome = Result<AuthStatusResponse, AuthError>;

/// Why signing in, storing a key or signing out failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    #[error("{0}")]
    Failed(String),
    #[error("no sign-in {0} is waiting — start one with 'stepper auth login --codex'")]
    NoSuchLogin(String),
    #[error("the key is empty")]
    EmptyKey,
}

fn failed(e: impl std::fmt::Display) -> AuthError {
    AuthError::Failed(e.to_string())
}

/// Sign-ins under way, by login id.
pub struct Logins {
    http: HttpClient,
    credentials: PathBuf,
    pending: Mutex<HashMap<String, oneshot::Receiver<Outcome>>>,
    /// The callback server of the sign-in under way, if any: a new sign-in ends it (a client
    /// that went back from one must be able to start another on the same port).
    serving: tokio::sync::Mutex<Option<(CancellationToken, tokio::task::JoinHandle<()>)>>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

impl Logins {
    pub fn new(http: HttpClient, credentials: PathBuf, shutdown: CancellationToken) -> Logins {
        Logins {
            http,
            credentials,
            pending: Mutex::new(HashMap::new()),
            serving: tokio::sync::Mutex::new(None),
            tasks: TaskTracker::new(),
            shutdown,
        }
    }

    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut CredentialStore) -> Result<T, AuthError> + Send + 'static,
    ) -> Result<T, AuthError> {
        let path = self.credentials.clone();
        tokio::task::spawn_blocking(move || {
            let mut store = CredentialStore::load(path).map_err(failed)?;
            f(&mut store)
        })
        .await
        .map_err(failed)?
    }

    pub async fn status(&self) -> Outcome {
        self.with_store(|store| Ok(status_of(store))).await
    }

    /// Store `key` for `provider`; a key in a client's environment still wins over it.
    pub async fn store_key(&self, provider: String, key: String) -> Outcome {
        if key.trim().is_empty() {
            return Err(AuthError::EmptyKey);
        }
        self.with_store(move |store| {
            store.set_api_key(&provider, key.trim()).map_err(failed)?;
            store.save().map_err(failed)?;
            Ok(status_of(store))
        })
        .await
    }

    /// Store a local server under `name`, with the model new sessions on it start on.
    pub async fn store_local(
        &self,
        name: String,
        base_url: String,
        model: Option<String>,
    ) -> Outcome {
        self.with_store(move |store| {
            store.set_local_server(&name, StoredServer { base_url, model });
            store.save().map_err(failed)?;
            Ok(status_of(store))
        })
        .await
    }

    pub async fn logout(&self, provider: String) -> Result<bool, AuthError> {
        self.with_store(move |store| {
            let removed = store.remove(&provider);
            store.save().map_err(failed)?;
            Ok(removed)
        })
        .await
    }

    /// Begin signing in with ChatGPT: listen for the callback, return the login id and the
    /// URL to open.
    pub async fn begin_codex(&self) -> Result<(String, String), AuthError> {
        let mut serving = self.serving.lock().await;
        if let Some((finished, server)) = serving.take() {
            finished.cancel();
            // Its waiter, if any, hears that the sign-in ended without an answer.
            let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
        }
        // Sign-ins begun but never waited for end with it.
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let port: u16 = std::env::var("STEPPER_CODEX_CALLBACK_PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(codex::CALLBACK_PORT);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| {
                AuthError::Failed(format!(
                    "cannot listen on localhost:{port} for the sign-in callback ({e}) — is another \
                 sign-in (or Codex CLI's) still waiting? Finish or close it and try again"
                ))
            })?;
        let port = listener.local_addr().map_err(failed)?.port();
        let issuer =
            std::env::var(codex::ISSUER_ENV_VAR).unwrap_or_else(|_| codex::DEFAULT_ISSUER.into());
        let issuer = CodexOAuth::parse_issuer(&issuer).map_err(failed)?;
        let oauth = CodexOAuth::new(issuer, format!("http://localhost:{port}/auth/callback"));
        let pkce = Pkce::new().map_err(failed)?;
        let state = random_state().map_err(failed)?;
        let url = oauth.authorize_url(&pkce, &state).to_string();

        let (done_tx, done_rx) = oneshot::channel();
        let login_id = uuid::Uuid::now_v7().to_string();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(login_id.clone(), done_rx);
        let finished = CancellationToken::new();
        let callback = Arc::new(Callback {
            oauth,
            pkce,
            state,
            port,
            http: self.http.clone(),
            credentials: self.credentials.clone(),
            done: Mutex::new(Some(done_tx)),
            finished: finished.clone(),
        });
        let app = Router::new()
            .route("/auth/callback", get(on_callback))
            .with_state(callback);
        let shutdown = self.shutdown.clone();
        let stopping = finished.clone();
        let server = self.tasks.spawn(async move {
            let stop = async move {
                tokio::select! {
                    () = finished.cancelled() => {}
                    () = shutdown.cancelled() => {}
                    () = tokio::time::sleep(LOGIN_TIMEOUT) => tracing::info!("sign-in timed out"),
                }
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                tracing::error!(error = %e, "sign-in callback server failed");
            }
        });
        *serving = Some((stopping, server));
        tracing::info!(port, "waiting for the ChatGPT sign-in callback");
        Ok((login_id, url))
    }

    /// Wait for the sign-in `login_id` to finish in the browser.
    pub async fn wait(&self, login_id: &str) -> Outcome {
        let rx = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(login_id)
            .ok_or_else(|| AuthError::NoSuchLogin(login_id.to_string()))?;
        match rx.await {
            Ok(outcome) => outcome,
            Err(_) => Err(failed(
                "the sign-in ended without an answer from the browser (it timed out after 10 minutes, another sign-in began, or the daemon is stopping) — run 'stepper auth login --codex' again",
            )),
        }
    }
}

fn status_of(store: &CredentialStore) -> AuthStatusResponse {
    AuthStatusResponse {
        codex: store.codex().map(|t| CodexAccount {
            email: t.email.clone(),
            plan: t.plan.clone(),
            expires_at: t.expires_at,
        }),
        stored_keys: KEY_PROVIDERS
            .iter()
            .filter(|p| store.api_key(p).is_some())
            .map(|p| p.to_string())
            .collect(),
        local_servers: store
            .local_servers()
            .map(|(name, server)| LocalServer {
                name: name.to_string(),
                base_url: server.base_url.clone(),
                model: server.model.clone(),
            })
            .collect(),
    }
}

struct Callback {
    oauth: CodexOAuth,
    pkce: Pkce,
    state: String,
    port: u16,
    http: HttpClient,
    credentials: PathBuf,
    done: Mutex<Option<oneshot::Sender<Outcome>>>,
    finished: CancellationToken,
}

async fn on_callback(State(cb): State<Arc<Callback>>, uri: Uri) -> Html<String> {
    let outcome = complete(&cb, &uri.to_string()).await;
    let page = match &outcome {
        Ok(status) => {
            let who = status
                .codex
                .as_ref()
                .and_then(|c| c.email.clone())
                .unwrap_or_else(|| "your ChatGPT account".into());
            page(
                "Signed in",
                &format!(
                    "stepper is signed in as {who}. You can close this tab and go back to your terminal."
                ),
            )
        }
        Err(e) => page(
            "Sign-in failed",
            &format!("{e}. Run 'stepper auth login --codex' to try again."),
        ),
    };
    if let Some(done) = cb.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
        // The waiting client may have gone; the tokens are stored either way.
        let _ = done.send(outcome);
    }
    cb.finished.cancel();
    Html(page)
}

async fn complete(cb: &Callback, path_and_query: &str) -> Outcome {
    let url = url::Url::parse(&format!("http://localhost:{}{path_and_query}", cb.port))
        .map_err(failed)?;
    let code = codex::code_from_callback(&url, &cb.state).map_err(failed)?;
    let tokens = cb
        .oauth
        .exchange_code(&cb.http, &code, &cb.pkce)
        .await
        .map_err(failed)?;
    tracing::info!(email = ?tokens.email, plan = ?tokens.plan, "signed in to ChatGPT");
    let path = cb.credentials.clone();
    tokio::task::spawn_blocking(move || {
        let mut store = CredentialStore::load(path).map_err(failed)?;
        store.set_codex(tokens);
        store.save().map_err(failed)?;
        Ok(status_of(&store))
    })
    .await
    .map_err(failed)?
}

fn page(title: &str, message: &str) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>stepper — {t}</title></head>\
         <body style=\"font-family: system-ui; margin: 4em auto; max-width: 36em\"><h1>{t}</h1><p>{m}</p></body></html>",
        t = escape(title),
        m = escape(message)
    )
}
