//! ChatGPT sign-in as a provider: the Responses format sent to the ChatGPT Codex back end
//! with the signed-in account's token, refreshed before it expires.

use std::path::PathBuf;
use std::sync::Arc;

use futures::stream::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use stepper_engine::{ChatRequest, ChatStream, LlmProvider, ProviderError};
use tokio_util::sync::CancellationToken;

use crate::auth::{CodexOAuth, CredentialStore, codex::now_ms};
use crate::openai::{ResponsesWire, endpoint, request_body};
use crate::stream::post_stream;

pub const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";
/// Overrides the back end (tests point it at a fake server).
pub const BASE_URL_ENV: &str = "STEPPER_CODEX_BASE_URL";
/// The back end wants instructions; these stand in when the session has none.
const DEFAULT_INSTRUCTIONS: &str =
    "You are stepper, a coding agent running in the user's terminal.";

pub struct Codex {
    http: reqwest::Client,
    base_url: String,
    oauth: Arc<CodexOAuth>,
    credentials: PathBuf,
}

impl Codex {
    pub fn new(
        http: reqwest::Client,
        base_url: String,
        oauth: Arc<CodexOAuth>,
        credentials: PathBuf,
    ) -> Codex {
        Codex {
            http,
            base_url,
            oauth,
            credentials,
        }
    }
}

pub(crate) fn not_signed_in() -> ProviderError {
    ProviderError::Config("not signed in to ChatGPT — run 'stepper auth login --codex'".into())
}

/// The current tokens, refreshed (and saved) first when they are about to expire.
async fn fresh_tokens(
    http: &reqwest::Client,
    oauth: &CodexOAuth,
    path: PathBuf,
) -> Result<crate::auth::CodexTokens, ProviderError> {
    let load = path.clone();
    let store = tokio::task::spawn_blocking(move || CredentialStore::load(load))
        .await
        .map_err(|e| ProviderError::Config(e.to_string()))?
        .map_err(|e| ProviderError::Config(e.to_string()))?;
    let tokens = store.codex().cloned().ok_or_else(not_signed_in)?;
    if !tokens.needs_refresh(now_ms()) {
        return Ok(tokens);
    }
    tracing::info!("refreshing the ChatGPT access token");
    let fresh = oauth
        .refresh(http, &tokens)
        .await
        .map_err(|e| ProviderError::Config(e.to_string()))?;
    let saved = fresh.clone();
    tokio::task::spawn_blocking(move || {
        // Reload: another request may have changed the file meanwhile.
        let mut store = CredentialStore::load(path)?;
        store.set_codex(saved);
        store.save()
    })
    .await
    .map_err(|e| ProviderError::Config(e.to_string()))?
    .map_err(|e| ProviderError::Config(e.to_string()))?;
    Ok(fresh)
}

impl LlmProvider for Codex {
    fn name(&self) -> &str {
        "codex"
    }

    fn chat_stream(&self, mut request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        if let Err(e) = crate::stream::check_media(&request) {
            return crate::stream::refusal(e);
        }
        let (http, oauth, path, base) = (
            self.http.clone(),
            Arc::clone(&self.oauth),
            self.credentials.clone(),
            self.base_url.clone(),
        );
        let start = async move {
            let tokens = fresh_tokens(&http, &oauth, path).await?;
            let mut headers = HeaderMap::new();
            if let Some(account) = tokens
                .account_id
                .as_deref()
                .and_then(|a| HeaderValue::from_str(a).ok())
            {
                headers.insert("chatgpt-account-id", account);
            }
            headers.insert(
                "openai-beta",
                HeaderValue::from_static("responses=experimental"),
            );
            headers.insert("originator", HeaderValue::from_static("stepper"));
            let endpoint = endpoint(
                "codex",
                http,
                &base,
                "responses",
                Some(&tokens.access_token),
                &headers,
            )?;
            if request.system.is_none() {
                request.system = Some(DEFAULT_INSTRUCTIONS.into());
            }
            let mut body = request_body(&request);
            // The back end refuses an output limit.
            if let Some(obj) = body.as_object_mut() {
                obj.remove("max_output_tokens");
            }
            Ok::<_, ProviderError>(post_stream(
                Arc::new(endpoint),
                body,
                ResponsesWire::default,
                cancel,
            ))
        };
        futures::stream::once(start)
            .flat_map(|started| match started {
                Ok(stream) => stream,
                Err(e) => futures::stream::iter([Err(e)]).boxed(),
            })
            .boxed()
    }
}
