//! "Sign in with ChatGPT", as OpenAI's Codex CLI does it: an OAuth authorization-code flow with
//! PKCE against auth.openai.com, with the Codex CLI's public client id and loopback redirect.
//! It exists so that a ChatGPT subscription can pay for turns instead of an API key.
//!
//! The parameters follow `codex-rs/login/src/server.rs` (authorize URL, code exchange),
//! `codex-rs/login/src/auth/manager.rs` (refresh) and `codex-rs/login/src/token_data.rs`
//! (claims) in github.com/openai/codex. JWTs are decoded without checking their signature: the
//! tokens come straight from the issuer over TLS, and we only read our own account's details
//! from them; the resource server is the one that verifies them.
//!
//! *ChatGPT sign-in uses the Codex CLI's public OAuth client* (the only one the issuer accepts for
//! this flow), with its four basic scopes, and `originator: stepper` on requests.

use crate::stream::root_cause;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use url::Url;

use super::error::{AuthError, Result, TokenOperation};
use super::pkce::Pkce;
use super::redact;

/// OpenAI's authorization server.
pub const DEFAULT_ISSUER: &str = "https://auth.openai.com";
/// Points sign-in at another issuer (a staging server, or a fake in end-to-end tests). Read by
/// the caller, which passes the result of [`CodexOAuth::parse_issuer`] to [`CodexOAuth::new`].
pub const ISSUER_ENV_VAR: &str = "STEPPER_CODEX_ISSUER";
/// The Codex CLI's public OAuth client (no secret: PKCE protects the code instead).
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The loopback port registered for that client: the callback server must listen on it, since
/// the issuer only redirects to the exact URIs on its allow-list.
pub const CALLBACK_PORT: u16 = 1455;
pub const DEFAULT_REDIRECT_URI: &str = "http://localhost:1455/auth/callback";
/// The Codex CLI also asks for `api.connectors.read api.connectors.invoke`; stepper does not use
/// ChatGPT connectors, so it asks only for identity and a refresh token.
pub const SCOPES: &str = "openid profile email offline_access";
/// Names the calling app to the issuer; only the Codex CLI's own value is known to be accepted
/// with its client id.
const ORIGINATOR: &str = "codex_cli_rs";

/// Where OpenAI puts ChatGPT details (account id, plan) in its JWTs.
const AUTH_CLAIMS: &str = "https://api.openai.com/auth";
const PROFILE_CLAIMS: &str = "https://api.openai.com/profile";

/// Refresh this long before expiry, so a token never expires in the middle of a turn.
const REFRESH_MARGIN_MS: i64 = 5 * 60 * 1000;
/// Lifetime assumed when the server states none; short, so the worst case is an early refresh.
const ASSUMED_LIFETIME_MS: i64 = 60 * 60 * 1000;
/// A sign-in server that accepts the connection but never answers must not hang a turn.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The OAuth client: which issuer, as which client, coming back to which redirect URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexOAuth {
    pub issuer: Url,
    pub client_id: String,
    /// Sent verbatim (not as a parsed `Url`): the issuer compares it with the registered string.
    pub redirect_uri: String,
}

impl CodexOAuth {
    /// The Codex CLI's public client at `issuer`.
    pub fn new(issuer: Url, redirect_uri: impl Into<String>) -> CodexOAuth {
        CodexOAuth {
            issuer,
            client_id: CLIENT_ID.to_string(),
            redirect_uri: redirect_uri.into(),
        }
    }

    /// The Codex CLI's public client at OpenAI's issuer.
    pub fn default_for(redirect_uri: impl Into<String>) -> CodexOAuth {
        #[expect(
            clippy::expect_used,
            reason = "DEFAULT_ISSUER is a constant, valid URL; the test \
                      default_issuer_is_openai proves it parses"
        )]
        let issuer = Url::parse(DEFAULT_ISSUER).expect("DEFAULT_ISSUER is a valid URL");
        CodexOAuth::new(issuer, redirect_uri)
    }

    /// Reads an issuer given in [`ISSUER_ENV_VAR`], with an error that names the variable.
    pub fn parse_issuer(value: &str) -> Result<Url> {
        let bad = |reason: &str| AuthError::BadIssuer {
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let url = Url::parse(value.trim()).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
            return Err(bad("the scheme must be http or https"));
        }
        Ok(url)
    }

    /// The page to open in the user's browser. `state` must come back unchanged in the
    /// callback (see [`code_from_callback`]).
    pub fn authorize_url(&self, pkce: &Pkce, state: &str) -> Url {
        let mut url = self.endpoint("oauth/authorize");
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("scope", SCOPES)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", Pkce::METHOD)
            // Puts the user's organizations in the id_token, as the Codex CLI asks.
            .append_pair("id_token_add_organizations", "true")
            // The issuer's flag for the Codex CLI's own sign-in pages (undocumented; sent
            // because the issuer is only known to work with the CLI's exact request).
            .append_pair("codex_cli_simplified_flow", "true")
            .append_pair("state", state)
            .append_pair("originator", ORIGINATOR);
        url
    }

    /// The token endpoint, for both the code exchange and refreshes.
    pub fn token_url(&self) -> Url {
        self.endpoint("oauth/token")
    }

    /// Trades the authorization code from the callback for tokens (form-encoded, per RFC 6749).
    pub async fn exchange_code(
        &self,
        http: &reqwest::Client,
        code: &str,
        pkce: &Pkce,
    ) -> Result<CodexTokens> {
        let operation = TokenOperation::SignIn;
        let request = http.post(self.token_url()).form(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("client_id", self.client_id.as_str()),
            ("code_verifier", pkce.verifier.as_str()),
        ]);
        let answer = self
            .call_token_endpoint(operation, request, &[code, &pkce.verifier])
            .await?;
        tokens_from_sign_in(&answer, now_ms())
    }

    /// Trades the refresh token for a new access token. The issuer may rotate the refresh
    /// token: the returned tokens replace the old ones everywhere (the old refresh token may
    /// already be spent). Sent as JSON, as the Codex CLI sends it.
    pub async fn refresh(
        &self,
        http: &reqwest::Client,
        tokens: &CodexTokens,
    ) -> Result<CodexTokens> {
        let operation = TokenOperation::Refresh;
        if tokens.refresh_token.is_empty() {
            return Err(AuthError::NoRefreshToken);
        }
        let request = http.post(self.token_url()).json(&serde_json::json!({
            "client_id": self.client_id,
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
        }));
        let answer = self
            .call_token_endpoint(operation, request, &[&tokens.refresh_token])
            .await?;
        tokens_from_refresh(&answer, tokens, now_ms())
    }

    /// `issuer` + `tail`, keeping any path the issuer has (a proxy or test prefix).
    fn endpoint(&self, tail: &str) -> Url {
        let mut url = self.issuer.clone();
        let base = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{base}/{tail}"));
        url.set_query(None);
        url.set_fragment(None);
        url
    }

    /// Sends a token request and returns the JSON object it answers. `sent` lists the secrets
    /// in the request, scrubbed from any error text in case the server echoes them.
    async fn call_token_endpoint(
        &self,
        operation: TokenOperation,
        request: reqwest::RequestBuilder,
        sent: &[&str],
    ) -> Result<Map<String, Value>> {
        let unreachable = |e: reqwest::Error| {
            let mut url = self.token_url();
            // An issuer from the environment may carry credentials; they stay out of messages.
            let _ = url.set_username("");
            let _ = url.set_password(None);
            let reason = if e.is_timeout() {
                format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
            } else {
                root_cause(&e)
            };
            AuthError::Unreachable {
                operation,
                url: url.to_string(),
                reason,
            }
        };
        let response = request
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status();
        let body = response.bytes().await.map_err(unreachable)?;
        if !status.is_success() {
            let (code, description) = error_fields(&body, sent);
            return Err(AuthError::TokenEndpoint {
                operation,
                status: status.as_u16(),
                code,
                description,
            });
        }
        // The body holds tokens: nothing of it may reach an error message, so serde's own
        // messages (which quote values) are not used.
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(AuthError::UnexpectedResponse {
                operation,
                reason: "the answer is JSON but not an object".into(),
            }),
            Err(_) => Err(AuthError::UnexpectedResponse {
                operation,
                reason: format!("the answer ({status}) is not JSON"),
            }),
        }
    }
}

/// The authorization code from the callback URL the browser was sent to, once its `state` is
/// checked. An `error` in the callback (the user said no, or the workspace has no Codex)
/// becomes a message saying so.
pub fn code_from_callback(callback: &Url, expected_state: &str) -> Result<String> {
    let mut code = None;
    let mut state = None;
    let mut error = None;
    let mut description = None;
    for (key, value) in callback.query_pairs() {
        match key.as_ref() {
            "code" => code = Some(value.into_owned()),
            "state" => state = Some(value.into_owned()),
            "error" => error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    let failed = |reason: String| AuthError::Callback { reason };
    if state.as_deref() != Some(expected_state) {
        return Err(failed(
            "the answer does not belong to this sign-in (its state differs: a stale browser tab \
             or a forged request)"
                .into(),
        ));
    }
    if let Some(error) = error {
        let description = description.unwrap_or_default();
        if error == "access_denied" && description.contains("missing_codex_entitlement") {
            return Err(failed(
                "Codex is not enabled for this ChatGPT workspace — ask its administrator".into(),
            ));
        }
        return Err(failed(if description.is_empty() {
            format!("the sign-in server refused: {error}")
        } else {
            format!("the sign-in server refused: {error}: {description}")
        }));
    }
    code.filter(|c| !c.is_empty())
        .ok_or_else(|| failed("the answer has no authorization code".into()))
}

/// What signing in with ChatGPT yields, as stored in the credentials file.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodexTokens {
    pub id_token: String,
    pub access_token: String,
    pub refresh_token: String,
    /// When the access token expires, in UTC milliseconds since the epoch.
    pub expires_at: i64,
    /// The ChatGPT account (workspace) the requests are billed to; the Codex backend wants it
    /// in a `chatgpt-account-id` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The ChatGPT plan ("plus", "pro", "team", ...), as the issuer names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

impl CodexTokens {
    /// Whether the access token expires within five minutes of `now_ms` (or already has).
    pub fn needs_refresh(&self, now_ms: i64) -> bool {
        now_ms >= self.expires_at.saturating_sub(REFRESH_MARGIN_MS)
    }
}

impl fmt::Debug for CodexTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodexTokens")
            .field("id_token", &redact(&self.id_token))
            .field("access_token", &redact(&self.access_token))
            .field("refresh_token", &redact(&self.refresh_token))
            .field("expires_at", &self.expires_at)
            .field("account_id", &self.account_id)
            .field("email", &self.email)
            .field("plan", &self.plan)
            .finish()
    }
}

/// The current time in UTC milliseconds (0 if the clock is before 1970, which only makes
/// tokens look fresher than they are; the issuer still refuses an expired one).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn tokens_from_sign_in(answer: &Map<String, Value>, now_ms: i64) -> Result<CodexTokens> {
    let operation = TokenOperation::SignIn;
    let required = |name: &str| {
        string_field(answer, name, operation)?.ok_or_else(|| AuthError::UnexpectedResponse {
            operation,
            reason: format!("it has no '{name}'"),
        })
    };
    let id_token = required("id_token")?;
    let access_token = required("access_token")?;
    let refresh_token = required("refresh_token")?;
    let expires_in = number_field(answer, "expires_in", operation)?;
    let identity = Identity::from_tokens(&id_token, &access_token)?;
    Ok(CodexTokens {
        expires_at: expiry(&access_token, expires_in, now_ms),
        id_token,
        access_token,
        refresh_token,
        account_id: identity.account_id,
        email: identity.email,
        plan: identity.plan,
    })
}

/// A refresh answer may leave out the id_token and the refresh token; what it leaves out is
/// kept from `previous`, and so is any account detail the new tokens no longer carry.
fn tokens_from_refresh(
    answer: &Map<String, Value>,
    previous: &CodexTokens,
    now_ms: i64,
) -> Result<CodexTokens> {
    let operation = TokenOperation::Refresh;
    let access_token = string_field(answer, "access_token", operation)?.ok_or_else(|| {
        AuthError::UnexpectedResponse {
            operation,
            reason: "it has no 'access_token'".into(),
        }
    })?;
    let id_token =
        string_field(answer, "id_token", operation)?.unwrap_or_else(|| previous.id_token.clone());
    let refresh_token = string_field(answer, "refresh_token", operation)?
        .unwrap_or_else(|| previous.refresh_token.clone());
    let expires_in = number_field(answer, "expires_in", operation)?;
    let identity = Identity::from_tokens(&id_token, &access_token)?;
    Ok(CodexTokens {
        expires_at: expiry(&access_token, expires_in, now_ms),
        id_token,
        access_token,
        refresh_token,
        account_id: identity.account_id.or_else(|| previous.account_id.clone()),
        email: identity.email.or_else(|| previous.email.clone()),
        plan: identity.plan.or_else(|| previous.plan.clone()),
    })
}

/// Who signed in, from the id_token's claims first and the access token's second.
struct Identity {
    account_id: Option<String>,
    email: Option<String>,
    plan: Option<String>,
}

impl Identity {
    fn from_tokens(id_token: &str, access_token: &str) -> Result<Identity> {
        let id = jwt_claims(id_token, "id_token")?;
        // Only the id_token is promised to be a JWT; the access token's claims are a bonus.
        let access = jwt_claims(access_token, "access_token").unwrap_or_default();
        let find = |read: &dyn Fn(&Map<String, Value>) -> Option<String>| {
            read(&id).or_else(|| read(&access))
        };
        Ok(Identity {
            account_id: find(&|c| nested_str(c, AUTH_CLAIMS, "chatgpt_account_id")),
            email: find(&|c| {
                non_empty(c.get("email")).or_else(|| nested_str(c, PROFILE_CLAIMS, "email"))
            }),
            plan: find(&|c| nested_str(c, AUTH_CLAIMS, "chatgpt_plan_type")),
        })
    }
}

/// Expiry from the access token's `exp`, else from `expires_in`, else an assumed short life.
fn expiry(access_token: &str, expires_in: Option<f64>, now_ms: i64) -> i64 {
    let exp_claim = jwt_claims(access_token, "access_token")
        .ok()
        .and_then(|claims| claims.get("exp").and_then(Value::as_f64));
    if let Some(exp_seconds) = exp_claim {
        return seconds_to_ms(exp_seconds);
    }
    if let Some(seconds) = expires_in {
        return now_ms.saturating_add(seconds_to_ms(seconds));
    }
    tracing::warn!(
        "the ChatGPT access token states no expiry; assuming one hour, after which it is refreshed"
    );
    now_ms.saturating_add(ASSUMED_LIFETIME_MS)
}

fn seconds_to_ms(seconds: f64) -> i64 {
    // `as` saturates at the bounds of i64 and maps NaN to 0, which is what an absurd claim
    // deserves (an immediate refresh).
    (seconds * 1000.0) as i64
}

/// The claims of a JWT, read without checking its signature (see the module doc).
fn jwt_claims(token: &str, which: &'static str) -> Result<Map<String, Value>> {
    let malformed = |reason| AuthError::MalformedJwt { which, reason };
    let mut parts = token.split('.');
    let (Some(_header), Some(payload), Some(_signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("it is not three dot-separated parts"));
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| malformed("its payload is not base64url"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(claims)) => Ok(claims),
        _ => Err(malformed("its payload is not a JSON object")),
    }
}

fn nested_str(claims: &Map<String, Value>, namespace: &str, key: &str) -> Option<String> {
    non_empty(claims.get(namespace)?.get(key))
}

fn non_empty(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// A string field of a token answer: `None` when absent or null, an error when of another type
/// (naming the field, never quoting its value).
fn string_field(
    answer: &Map<String, Value>,
    name: &str,
    operation: TokenOperation,
) -> Result<Option<String>> {
    match answer.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AuthError::UnexpectedResponse {
            operation,
            reason: format!("its '{name}' is not a string"),
        }),
    }
}

fn number_field(
    answer: &Map<String, Value>,
    name: &str,
    operation: TokenOperation,
) -> Result<Option<f64>> {
    match answer.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(AuthError::UnexpectedResponse {
            operation,
            reason: format!("its '{name}' is not a number"),
        }),
    }
}

/// The longest piece of server text put in an error message.
const MAX_ERROR_TEXT: usize = 300;

/// `error` and `error_description` of an OAuth error answer (or OpenAI's
/// `{"error": {"code", "message"}}` form), else the start of a non-JSON body, with every
/// secret in `sent` replaced.
fn error_fields(body: &[u8], sent: &[&str]) -> (Option<String>, Option<String>) {
    let clean = |text: &str| -> Option<String> {
        // Scrubbed before it is shortened, so a secret cut in two cannot survive in part.
        let mut text = text.trim().to_string();
        for secret in sent.iter().filter(|s| !s.is_empty()) {
            text = text.replace(secret, "(redacted)");
        }
        let text: String = text.chars().take(MAX_ERROR_TEXT).collect();
        (!text.is_empty()).then_some(text)
    };
    match serde_json::from_slice::<Value>(body) {
        Ok(json) => {
            let error = json.get("error");
            let code = error
                .and_then(Value::as_str)
                .or_else(|| error.and_then(|e| e.get("code")).and_then(Value::as_str))
                .and_then(clean);
            let description = json
                .get("error_description")
                .and_then(Value::as_str)
                .or_else(|| error.and_then(|e| e.get("message")).and_then(Value::as_str))
                .and_then(clean);
            (code, description)
        }
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            (None, text.lines().next().and_then(clean))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::body::Bytes;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode, Uri, header};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};
    use serde_json::json;

    use super::super::pkce::challenge_for;
    use super::*;

    const ACCOUNT: &str = "acct-7f3e";
    const FIRST_EXP: i64 = 2_000_000_000;
    const REFRESHED_EXP: i64 = 2_000_003_600;

    /// An unsigned JWT with `claims`, shaped like the issuer's (the signature is not checked).
    fn jwt(claims: Value) -> String {
        let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.fake-signature",
            part(&json!({"alg": "none", "typ": "JWT"})),
            part(&claims)
        )
    }

    fn id_token() -> String {
        jwt(json!({
            "email": "ada@example.com",
            "exp": FIRST_EXP,
            AUTH_CLAIMS: {"chatgpt_account_id": ACCOUNT, "chatgpt_plan_type": "plus"},
        }))
    }

    fn access_token(exp: i64) -> String {
        jwt(json!({"exp": exp, AUTH_CLAIMS: {"chatgpt_account_id": ACCOUNT}}))
    }

    /// What the fake authorization server remembers between requests.
    #[derive(Default)]
    struct Issued {
        challenge: Option<String>,
        redirect_uri: Option<String>,
        code: Option<String>,
        refresh_token: Option<String>,
    }

    type Shared = Arc<Mutex<Issued>>;

    fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
        let body = json!({"error": error, "error_description": description});
        (status, axum::Json(body)).into_response()
    }

    /// The browser's side: remembers the challenge and redirect URI, answers with a code.
    async fn authorize(State(issued): State<Shared>, uri: Uri) -> Response {
        let query: HashMap<String, String> =
            url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                .into_owned()
                .collect();
        if query.get("client_id").map(String::as_str) != Some(CLIENT_ID)
            || query.get("response_type").map(String::as_str) != Some("code")
            || query.get("code_challenge_method").map(String::as_str) != Some("S256")
        {
            return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "bad authorize");
        }
        let redirect_uri = query["redirect_uri"].clone();
        let code = "code-0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c".to_string();
        let mut issued = issued.lock().unwrap();
        issued.challenge = Some(query["code_challenge"].clone());
        issued.redirect_uri = Some(redirect_uri.clone());
        issued.code = Some(code.clone());
        let mut location = Url::parse(&redirect_uri).unwrap();
        location
            .query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", &query["state"]);
        (
            StatusCode::FOUND,
            [(header::LOCATION, location.to_string())],
        )
            .into_response()
    }

    /// The token endpoint: a form-encoded code exchange, or a JSON refresh.
    async fn token(State(issued): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let mut issued = issued.lock().unwrap();
        if content_type.starts_with("application/x-www-form-urlencoded") {
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let field = |name: &str| form.get(name).cloned().unwrap_or_default();
            if field("grant_type") != "authorization_code" || field("client_id") != CLIENT_ID {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_client", "bad grant");
            }
            if Some(field("redirect_uri")) != issued.redirect_uri {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "redirect_uri");
            }
            if issued.code.take() != Some(field("code")) {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown code");
            }
            if issued.challenge.as_deref() != Some(&challenge_for(&field("code_verifier"))) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "PKCE verification failed",
                );
            }
            let refresh_token = "rt_first_0123456789abcdefghij".to_string();
            issued.refresh_token = Some(refresh_token.clone());
            let answer = json!({
                "id_token": id_token(),
                "access_token": access_token(FIRST_EXP),
                "refresh_token": refresh_token,
                "token_type": "Bearer",
                "expires_in": 864000,
            });
            return axum::Json(answer).into_response();
        }
        if content_type.starts_with("application/json") {
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            if request["grant_type"] != "refresh_token" || request["client_id"] != CLIENT_ID {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_client", "bad grant");
            }
            let sent = request["refresh_token"].as_str().unwrap_or("").to_string();
            if issued.refresh_token.as_deref() != Some(sent.as_str()) {
                // Echoes the token it was sent, as careless servers do, to prove it is scrubbed.
                return oauth_error(
                    StatusCode::UNAUTHORIZED,
                    "refresh_token_reused",
                    &format!("refresh token {sent} was already used"),
                );
            }
            let rotated = "rt_second_0123456789abcdefghij".to_string();
            issued.refresh_token = Some(rotated.clone());
            // No id_token: the issuer may leave it out of a refresh.
            let answer = json!({
                "access_token": access_token(REFRESHED_EXP),
                "refresh_token": rotated,
            });
            return axum::Json(answer).into_response();
        }
        oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "content type")
    }

    /// A fake authorization server on a free loopback port, stopped when dropped.
    struct FakeIssuer {
        url: Url,
        server: tokio::task::JoinHandle<()>,
    }

    impl FakeIssuer {
        async fn start() -> FakeIssuer {
            let app = Router::new()
                .route("/oauth/authorize", get(authorize))
                .route("/oauth/token", post(token))
                .with_state(Shared::default());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
            let server = tokio::spawn(async move {
                axum::serve(listener, app).await.unwrap();
            });
            FakeIssuer { url, server }
        }
    }

    impl Drop for FakeIssuer {
        fn drop(&mut self) {
            self.server.abort();
        }
    }

    /// No proxy: a proxy from the environment must not see (or break) loopback test traffic.
    fn http() -> reqwest::Client {
        reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }

    /// Plays the browser: opens the authorize URL and returns where the issuer redirects.
    async fn browse(http: &reqwest::Client, url: Url) -> Url {
        let response = http.get(url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        let location = response.headers()[header::LOCATION].to_str().unwrap();
        Url::parse(location).unwrap()
    }

    async fn signed_in(fake: &FakeIssuer, http: &reqwest::Client) -> (CodexOAuth, CodexTokens) {
        let oauth = CodexOAuth::new(fake.url.clone(), DEFAULT_REDIRECT_URI);
        let pkce = Pkce::new().unwrap();
        let state = crate::auth::random_state().unwrap();
        let callback = browse(http, oauth.authorize_url(&pkce, &state)).await;
        let code = code_from_callback(&callback, &state).unwrap();
        let tokens = oauth.exchange_code(http, &code, &pkce).await.unwrap();
        (oauth, tokens)
    }

    #[test]
    fn default_issuer_is_openai() {
        let oauth = CodexOAuth::default_for(DEFAULT_REDIRECT_URI);
        assert_eq!(oauth.issuer.as_str(), "https://auth.openai.com/");
        assert_eq!(oauth.client_id, CLIENT_ID);
        assert_eq!(
            oauth.token_url().as_str(),
            "https://auth.openai.com/oauth/token"
        );
    }

    #[test]
    fn authorize_url_carries_every_parameter() {
        let oauth = CodexOAuth::default_for(DEFAULT_REDIRECT_URI);
        let pkce = Pkce::new().unwrap();
        let url = oauth.authorize_url(&pkce, "state-123");
        assert_eq!(url.scheme(), "https");
        assert_eq!(url.host_str(), Some("auth.openai.com"));
        assert_eq!(url.path(), "/oauth/authorize");
        let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
        let expected = [
            ("response_type", "code"),
            ("client_id", "app_EMoamEEZ73f0CkXaXp7hrann"),
            ("redirect_uri", "http://localhost:1455/auth/callback"),
            ("scope", "openid profile email offline_access"),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("id_token_add_organizations", "true"),
            ("codex_cli_simplified_flow", "true"),
            ("state", "state-123"),
            ("originator", "codex_cli_rs"),
        ];
        for (key, value) in expected {
            assert_eq!(query.get(key).map(String::as_str), Some(value), "{key}");
        }
        assert_eq!(query.len(), expected.len(), "{query:?}");
        assert!(!url.as_str().contains(&pkce.verifier));
    }

    #[test]
    fn an_issuer_with_a_path_keeps_it() {
        let issuer = CodexOAuth::parse_issuer("http://127.0.0.1:9/prefix/").unwrap();
        let oauth = CodexOAuth::new(issuer, DEFAULT_REDIRECT_URI);
        assert_eq!(
            oauth.token_url().as_str(),
            "http://127.0.0.1:9/prefix/oauth/token"
        );
    }

    #[test]
    fn a_bad_issuer_override_names_the_variable() {
        for value in ["not a url", "ftp://example.com", "mailto:ada@example.com"] {
            let msg = CodexOAuth::parse_issuer(value).unwrap_err().to_string();
            assert!(msg.contains("STEPPER_CODEX_ISSUER"), "{msg}");
        }
    }

    #[tokio::test]
    async fn sign_in_and_refresh_against_a_fake_issuer() {
        let fake = FakeIssuer::start().await;
        let http = http();
        let (oauth, tokens) = signed_in(&fake, &http).await;

        assert_eq!(tokens.id_token, id_token());
        assert_eq!(tokens.access_token, access_token(FIRST_EXP));
        assert_eq!(tokens.refresh_token, "rt_first_0123456789abcdefghij");
        assert_eq!(
            tokens.expires_at,
            FIRST_EXP * 1000,
            "from the access token's exp"
        );
        assert_eq!(tokens.account_id.as_deref(), Some(ACCOUNT));
        assert_eq!(tokens.email.as_deref(), Some("ada@example.com"));
        assert_eq!(tokens.plan.as_deref(), Some("plus"));

        let refreshed = oauth.refresh(&http, &tokens).await.unwrap();
        assert_eq!(refreshed.access_token, access_token(REFRESHED_EXP));
        assert_eq!(refreshed.refresh_token, "rt_second_0123456789abcdefghij");
        assert_eq!(refreshed.expires_at, REFRESHED_EXP * 1000);
        // Left out of the refresh answer, so kept.
        assert_eq!(refreshed.id_token, tokens.id_token);
        assert_eq!(refreshed.account_id.as_deref(), Some(ACCOUNT));
        assert_eq!(refreshed.plan.as_deref(), Some("plus"));
    }

    #[tokio::test]
    async fn a_spent_refresh_token_is_a_clear_error_without_the_token() {
        let fake = FakeIssuer::start().await;
        let http = http();
        let (oauth, tokens) = signed_in(&fake, &http).await;
        oauth.refresh(&http, &tokens).await.unwrap();

        // The first refresh rotated the token; using the old one again is refused.
        let err = oauth.refresh(&http, &tokens).await.unwrap_err();
        let AuthError::TokenEndpoint {
            operation,
            status,
            code,
            ..
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(*operation, TokenOperation::Refresh);
        assert_eq!(*status, 401);
        assert_eq!(code.as_deref(), Some("refresh_token_reused"));
        assert!(err.needs_sign_in());
        let msg = err.to_string();
        assert!(msg.contains("was already used"), "{msg}");
        assert!(msg.contains("stepper auth login --codex"), "{msg}");
        assert!(!msg.contains(&tokens.refresh_token), "{msg}");
    }

    #[tokio::test]
    async fn a_wrong_verifier_is_refused_with_the_servers_reason() {
        let fake = FakeIssuer::start().await;
        let http = http();
        let oauth = CodexOAuth::new(fake.url.clone(), DEFAULT_REDIRECT_URI);
        let state = "s";
        let callback = browse(&http, oauth.authorize_url(&Pkce::new().unwrap(), state)).await;
        let code = code_from_callback(&callback, state).unwrap();

        let other = Pkce::new().unwrap();
        let err = oauth.exchange_code(&http, &code, &other).await.unwrap_err();
        assert!(
            matches!(&err, AuthError::TokenEndpoint { status: 400, code: Some(c), .. } if c == "invalid_grant"),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("PKCE verification failed"), "{msg}");
        assert!(msg.contains("stepper auth login --codex"), "{msg}");
        assert!(
            !msg.contains(&code) && !msg.contains(&other.verifier),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn an_unreachable_issuer_names_its_url() {
        // A port that was free a moment ago: nothing listens there now.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        drop(listener);
        let oauth = CodexOAuth::new(url.clone(), DEFAULT_REDIRECT_URI);

        let err = oauth
            .exchange_code(&http(), "code", &Pkce::new().unwrap())
            .await
            .unwrap_err();
        assert!(matches!(err, AuthError::Unreachable { .. }), "{err:?}");
        assert!(!err.needs_sign_in());
        assert!(
            err.to_string().contains(oauth.token_url().as_str()),
            "{err}"
        );
    }

    #[test]
    fn callback_state_and_errors_are_checked() {
        let url = |q: &str| Url::parse(&format!("{DEFAULT_REDIRECT_URI}?{q}")).unwrap();
        assert_eq!(
            code_from_callback(&url("code=abc&state=s1"), "s1").unwrap(),
            "abc"
        );

        let forged = code_from_callback(&url("code=abc&state=other"), "s1").unwrap_err();
        assert!(forged.to_string().contains("state differs"), "{forged}");

        let denied = code_from_callback(
            &url("error=access_denied&error_description=missing_codex_entitlement&state=s1"),
            "s1",
        )
        .unwrap_err();
        assert!(
            denied.to_string().contains("Codex is not enabled"),
            "{denied}"
        );

        let no_code = code_from_callback(&url("state=s1"), "s1").unwrap_err();
        assert!(
            no_code.to_string().contains("no authorization code"),
            "{no_code}"
        );
    }

    #[test]
    fn needs_refresh_starts_five_minutes_before_expiry() {
        let tokens = CodexTokens {
            id_token: id_token(),
            access_token: access_token(FIRST_EXP),
            refresh_token: "rt".into(),
            expires_at: 1_000_000_000,
            account_id: None,
            email: None,
            plan: None,
        };
        assert!(!tokens.needs_refresh(1_000_000_000 - 300_001));
        assert!(tokens.needs_refresh(1_000_000_000 - 300_000));
        assert!(tokens.needs_refresh(1_000_000_000));
        assert!(tokens.needs_refresh(1_000_000_001));
        assert!(!tokens.needs_refresh(0));
    }

    #[test]
    fn expiry_falls_back_to_expires_in_then_to_one_hour() {
        let now = 1_700_000_000_000;
        assert_eq!(
            expiry(&access_token(FIRST_EXP), Some(60.0), now),
            FIRST_EXP * 1000
        );
        assert_eq!(expiry("opaque-token", Some(3600.0), now), now + 3_600_000);
        assert_eq!(expiry("opaque-token", None, now), now + ASSUMED_LIFETIME_MS);
        let no_exp = jwt(json!({"sub": "user"}));
        assert_eq!(expiry(&no_exp, Some(10.0), now), now + 10_000);
    }

    #[test]
    fn identity_comes_from_either_token() {
        let id = jwt(json!({AUTH_CLAIMS: {}, PROFILE_CLAIMS: {"email": "bo@example.com"}}));
        let access = jwt(json!({
            "exp": FIRST_EXP,
            AUTH_CLAIMS: {"chatgpt_account_id": "acct-9", "chatgpt_plan_type": "pro"},
        }));
        let identity = Identity::from_tokens(&id, &access).unwrap();
        assert_eq!(identity.account_id.as_deref(), Some("acct-9"));
        assert_eq!(identity.email.as_deref(), Some("bo@example.com"));
        assert_eq!(identity.plan.as_deref(), Some("pro"));
    }

    #[test]
    fn malformed_id_tokens_are_clear_errors_that_do_not_quote_them() {
        let secretish = "SECRET_SECRET_SECRET";
        let cases = [
            (secretish.to_string(), "three dot-separated parts"),
            (format!("a.{secretish}!.c"), "not base64url"),
            (
                format!("a.{}.c", URL_SAFE_NO_PAD.encode("[1,2]")),
                "not a JSON object",
            ),
        ];
        for (token, reason) in cases {
            let answer = json!({
                "id_token": token,
                "access_token": access_token(FIRST_EXP),
                "refresh_token": "rt",
            });
            let err = tokens_from_sign_in(answer.as_object().unwrap(), 0).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("id_token") && msg.contains(reason), "{msg}");
            assert!(!msg.contains(secretish), "{msg}");
            assert!(err.needs_sign_in());
        }
    }

    #[test]
    fn a_sign_in_answer_missing_a_token_says_which() {
        let answer = json!({"id_token": id_token(), "access_token": access_token(FIRST_EXP)});
        let msg = tokens_from_sign_in(answer.as_object().unwrap(), 0)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("no 'refresh_token'"), "{msg}");
    }

    #[test]
    fn error_bodies_in_both_shapes_are_read_and_scrubbed() {
        let (code, description) = error_fields(
            br#"{"error": {"code": "refresh_token_expired", "message": "token rt_x expired"}}"#,
            &["rt_x"],
        );
        assert_eq!(code.as_deref(), Some("refresh_token_expired"));
        assert_eq!(description.as_deref(), Some("token (redacted) expired"));

        let (code, description) = error_fields(b"<html>Bad gateway</html>\n<body>", &[]);
        assert_eq!(code, None);
        assert_eq!(description.as_deref(), Some("<html>Bad gateway</html>"));
    }

    #[test]
    fn debug_output_redacts_every_token() {
        let tokens = CodexTokens {
            id_token: id_token(),
            access_token: access_token(FIRST_EXP),
            refresh_token: "rt_first_0123456789abcdefghij".into(),
            expires_at: FIRST_EXP * 1000,
            account_id: Some(ACCOUNT.into()),
            email: None,
            plan: None,
        };
        let shown = format!("{tokens:?}");
        for secret in [
            &tokens.id_token,
            &tokens.access_token,
            &tokens.refresh_token,
        ] {
            assert!(!shown.contains(secret.as_str()), "{shown}");
            // Not even the payload (the part after the JWT header).
            let tail: String = secret.chars().skip(6).take(20).collect();
            assert!(!shown.contains(&tail), "{shown}");
        }
        assert!(shown.contains(ACCOUNT), "{shown}");
    }
}
