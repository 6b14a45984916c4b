//! OAuth for streamable HTTP servers that answer 401, on the SDK's authorization client:
//! discovery (protected resource and authorization server metadata), client registration
//! (pre-registered, metadata document or dynamic), PKCE, token exchange and refresh. A
//! sign-in opens the authorization URL and takes the browser's return on a listener on
//! 127.0.0.1, as the ChatGPT sign-in does. Tokens live in a file of their own (0600), by
//! server URL, each with the issuer that minted it; they never reach a log or an event, nor
//! does a pre-registered client's secret.
//!
//! A machine client (`oauth.grant: "client_credentials"`, or a client with a secret or key
//! where the authorization server names no other grant) signs in by itself, without a user:
//! with its secret (`client_secret_basic` or `_post`) or an ES256 assertion signed with its
//! private key (`private_key_jwt`, RFC 7523). A call the server refuses with 403
//! `insufficient_scope` asks for more: the wider scope (what was granted and what the server
//! names) is kept with the tokens, so that the next sign-in asks for it; a machine client
//! signs in again at once, and the call is tried once more.
//!
//! A server of the 2025-03-26 revision publishes no protected resource metadata; its
//! authorization server metadata sits at the root of its own origin, and may name an issuer
//! on that origin under a path (`https://host/oauth`), which RFC 8414's strict check refuses.
//! That one case is accepted (`legacy_metadata`), as the MCP conformance suite expects; a
//! server that publishes protected resource metadata keeps the strict check.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::service::RoleClient;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata,
    AuthorizationMetadataSource, AuthorizationRequest, AuthorizationSession, CredentialStore,
    OAuthClientConfig, OAuthState, StoredCredentials,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::{Grant, OAuthClient};

pub mod machine;

/// Why a sign-in (or the discovery before it) failed, told apart by what can be done about
/// it: the daemon answers each with its own error kind.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OAuthError {
    /// The server or its authorization server could not be reached, or answered with a
    /// server error: the network, or the server is down. Trying again later may work.
    #[error("{0}")]
    Unreachable(String),
    /// It answered, and refused or answered something unusable (wrong metadata, a refused
    /// client or code).
    #[error("{0}")]
    Refused(String),
    /// The server's `oauth` entry cannot be used as written (its grant, its key file).
    #[error("{0}")]
    Config(String),
    /// This machine could not do its part: listen for the browser's return, keep the tokens.
    #[error("{0}")]
    Local(String),
    /// The user did not finish the sign-in in the browser in time, or it was stopped.
    #[error("{0}")]
    NotCompleted(String),
}

impl OAuthError {
    /// The SDK's error, said with `doing` (what failed), sorted: a request that got no
    /// answer is `Unreachable`; everything the servers answered is `Refused`.
    fn from_sdk(doing: &str, e: AuthError) -> OAuthError {
        let unreachable = match &e {
            AuthError::DiscoveryRequestFailed { .. } => true,
            AuthError::HttpError(e) => e.is_connect() || e.is_timeout() || e.is_request(),
            _ => false,
        };
        let message = format!("{doing}: {}", with_sources(&e));
        match unreachable {
            true => OAuthError::Unreachable(message),
            false => OAuthError::Refused(message),
        }
    }
}

/// An error and its sources, as one line: the SDK's discovery error names the URL and keeps
/// why (connection refused, a timeout) in its source.
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(source) = next {
        let more = source.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        next = source.source();
    }
    text
}

/// The scopes a call's 403 asked for, kept in the server's entry of the tokens file until
/// a sign-in grants them.
const STEP_UP: &str = "stepperStepUp";

/// The file of MCP servers' tokens.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
}

/// Serialises the file's read-modify-write within the process.
static FILE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl TokenFile {
    pub fn new(path: PathBuf) -> TokenFile {
        TokenFile { path }
    }

    fn read(&self) -> BTreeMap<String, serde_json::Value> {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    fn write(&self, all: &BTreeMap<String, serde_json::Value>) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_string_pretty(all).map_err(std::io::Error::other)?;
        {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&tmp)?;
            std::io::Write::write_all(&mut file, text.as_bytes())?;
            file.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)
    }

    /// Whether tokens for `url` are stored.
    pub fn has(&self, url: &str) -> bool {
        self.read().contains_key(url)
    }

    /// Forget `url`'s tokens.
    pub fn forget(&self, url: &str) -> std::io::Result<bool> {
        let _held = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.read();
        let had = all.remove(url).is_some();
        if had {
            self.write(&all)?;
        }
        Ok(had)
    }

    /// The scopes a sign-in to `url` is to ask for, after a call needed more than was
    /// granted; `None` when nothing more is needed.
    pub fn wanted(&self, url: &str) -> Option<Vec<String>> {
        let wanted = strings(&self.read().get(url)?[STEP_UP]);
        (!wanted.is_empty()).then_some(wanted)
    }

    /// Note that `url` needs `required` (a scope, as a 403 names it) on top of what its
    /// sign-in was granted: the next sign-in asks for the union, which is returned.
    pub fn want(&self, url: &str, required: &str) -> std::io::Result<Vec<String>> {
        let _held = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.read();
        let entry = all
            .entry(url.to_string())
            .or_insert_with(|| serde_json::json!({}));
        let mut wanted = strings(&entry["granted_scopes"]);
        for scope in strings(&entry[STEP_UP])
            .into_iter()
            .chain(required.split_whitespace().map(str::to_string))
        {
            if !wanted.contains(&scope) {
                wanted.push(scope);
            }
        }
        if let Some(entry) = entry.as_object_mut() {
            entry.insert(STEP_UP.into(), serde_json::json!(wanted));
        }
        self.write(&all)?;
        Ok(wanted)
    }

    fn store(&self, url: &str) -> FileStore {
        FileStore {
            file: self.clone(),
            key: url.to_string(),
        }
    }
}

/// One server's entry of the file, as the SDK's credential store.
struct FileStore {
    file: TokenFile,
    key: String,
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let all = self.file.read();
        Ok(all
            .get(&self.key)
            .and_then(|v| serde_json::from_value(v.clone()).ok()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let _held = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.file.read();
        let mut value = serde_json::to_value(&credentials)
            .map_err(|e| AuthError::InternalError(e.to_string()))?;
        // A wider scope still wanted stays until a sign-in grants it.
        let wanted = all
            .get(&self.key)
            .map_or_else(Vec::new, |old| strings(&old[STEP_UP]));
        if wanted
            .iter()
            .any(|s| !credentials.granted_scopes.contains(s))
            && let Some(entry) = value.as_object_mut()
        {
            entry.insert(STEP_UP.into(), serde_json::json!(wanted));
        }
        all.insert(self.key.clone(), value);
        self.file
            .write(&all)
            .map_err(|e| AuthError::InternalError(format!("cannot keep the tokens: {e}")))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.file
            .forget(&self.key)
            .map(drop)
            .map_err(|e| AuthError::InternalError(e.to_string()))
    }
}

/// The strings of a JSON list (none for anything else).
fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The SDK's authorization manager for `url`, with its authorization server's metadata; a
/// server on this machine or the local network may point its metadata at private addresses
/// too. A sign-in (`signing_in`) starts from the server's 401, whose `scope` says what to ask
/// for (MCP's scope selection); a reconnection only needs the endpoints.
async fn manager(url: &str, signing_in: bool) -> Result<AuthorizationManager, OAuthError> {
    Ok(discovered(url, signing_in).await?.0)
}

/// [`manager`], and the authorization server's metadata it was given.
async fn discovered(
    url: &str,
    signing_in: bool,
) -> Result<(AuthorizationManager, AuthorizationMetadata), OAuthError> {
    let private = reqwest::Url::parse(url)
        .ok()
        .is_some_and(|u| match u.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d == "localhost",
            None => false,
        });
    let made = if private {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    };
    let mut manager =
        made.map_err(|e| OAuthError::from_sdk("cannot set up its authorization", e))?;
    let first = match signing_in {
        true => challenge(url).await,
        false => None,
    };
    let resolved = match manager
        .resolve_metadata_from_challenge(first.as_deref())
        .await
    {
        // Nothing at the well-known places: the protected resource metadata may be only
        // where the server's 401 points (RFC 9728 §5.1), which the SDK looks for by GET; an
        // MCP endpoint answers POST.
        Ok(r)
            if first.is_none()
                && r.source == AuthorizationMetadataSource::LegacyEndpointFallback =>
        {
            match challenge(url).await {
                Some(header) => manager.resolve_metadata_from_challenge(Some(&header)).await,
                None => Ok(r),
            }
        }
        other => other,
    };
    let metadata = match resolved {
        Ok(resolution) => resolution.metadata,
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) => legacy_metadata(url, &expected_issuer, &received_issuer)
            .await
            .ok_or_else(|| {
                OAuthError::Refused(format!(
                    "its authorization server says it is {received_issuer}, where it was \
                     looked up as {expected_issuer}: the server's OAuth metadata is wrong — \
                     tell its owner"
                ))
            })?,
        Err(e) => {
            return Err(OAuthError::from_sdk(
                "cannot discover its authorization server",
                e,
            ));
        }
    };
    manager.set_metadata(metadata.clone());
    Ok((manager, metadata))
}

/// The `WWW-Authenticate` header of the 401 the server at `url` answers an unsigned request
/// with, when it points at protected resource metadata.
async fn challenge(url: &str) -> Option<String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .ok()?;
    let answer = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}))
        .send()
        .await
        .ok()?;
    if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    answer
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.contains("resource_metadata"))
        .map(str::to_string)
}

/// The authorization server metadata of a 2025-03-26 server whose issuer differs from its
/// origin by path, or `None` when this is not that case: the server publishes protected
/// resource metadata (the 2025-06-18 flow, where RFC 8414's check stands), the metadata was
/// found elsewhere than at the origin's root, or its issuer is on another origin.
async fn legacy_metadata(
    url: &str,
    expected_issuer: &str,
    received_issuer: &str,
) -> Option<AuthorizationMetadata> {
    let server = reqwest::Url::parse(url).ok()?;
    let origin = server.join("/").ok()?;
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    if !same(expected_issuer, origin.as_str()) {
        return None;
    }
    let issuer = reqwest::Url::parse(received_issuer).ok()?;
    if issuer.origin() != server.origin() {
        return None;
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .ok()?;
    let get = |path: String| {
        let http = http.clone();
        let at = origin.join(&path);
        async move {
            let at = at.ok()?;
            let answer = http.get(at.as_str()).send().await.ok()?;
            if !answer.status().is_success() {
                return None;
            }
            answer.bytes().await.ok()
        }
    };
    let path = server.path().trim_matches('/');
    let mut resource = vec![".well-known/oauth-protected-resource".to_string()];
    if !path.is_empty() {
        resource.push(format!(".well-known/oauth-protected-resource/{path}"));
        resource.push(format!("{path}/.well-known/oauth-protected-resource"));
    }
    for at in resource {
        if get(at).await.is_some() {
            return None;
        }
    }
    let body = get(".well-known/oauth-authorization-server".into()).await?;
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).ok()?;
    (metadata.issuer.as_deref() == Some(received_issuer)).then_some(metadata)
}

/// A transport for `url` that signs its requests with the stored tokens (refreshing them as
/// they expire), or `None` without stored tokens.
pub async fn signed(
    url: &str,
    headers: HashMap<http::HeaderName, http::HeaderValue>,
    tokens: &TokenFile,
    client: Option<&OAuthClient>,
) -> Result<Option<impl Transport<RoleClient> + 'static>, OAuthError> {
    if !tokens.has(url) {
        return Ok(None);
    }
    crate::http::install_tls();
    let mut manager = manager(url, false).await?;
    manager.set_credential_store(tokens.store(url));
    match manager.initialize_from_store().await {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) => {
            return Err(OAuthError::from_sdk("its stored sign-in is not usable", e));
        }
    }
    // A confidential client authenticates its refreshes with its secret, which the tokens
    // file does not keep.
    if let Some(config) = client
        .filter(|c| c.client_secret.is_some())
        .map(|c| client_config(c, &redirect_uri(c.callback_port.unwrap_or(0), true)))
    {
        manager
            .configure_client(config)
            .map_err(|e| OAuthError::from_sdk("cannot set up its client", e))?;
    }
    let client = AuthClient::new(reqwest013::Client::default(), manager);
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.custom_headers = headers;
    Ok(Some(StreamableHttpClientTransport::with_client(
        client, config,
    )))
}

/// A sign-in under way: open `url`; `finish` waits for the browser's return.
pub struct Login {
    pub url: String,
    done: tokio::task::JoinHandle<Result<(), OAuthError>>,
}

impl Login {
    /// Wait (at most `timeout`) for the sign-in to complete and its tokens to be stored.
    pub async fn finish(self, timeout: Duration) -> Result<(), OAuthError> {
        let abort = self.done.abort_handle();
        match tokio::time::timeout(timeout, self.done).await {
            Ok(Ok(done)) => done,
            Ok(Err(_)) => Err(OAuthError::NotCompleted("the sign-in stopped".into())),
            Err(_) => {
                abort.abort();
                Err(OAuthError::NotCompleted(format!(
                    "the browser did not come back within {} s",
                    timeout.as_secs()
                )))
            }
        }
    }
}

/// The redirect URI of a sign-in listening on `port`: on the port a pre-registered client
/// names, Claude Code's form (`http://localhost:PORT/callback`), the one its owner
/// registered; on any free port, the loopback address (RFC 8252 §7.3).
fn redirect_uri(port: u16, fixed: bool) -> String {
    let host = if fixed { "localhost" } else { "127.0.0.1" };
    format!("http://{host}:{port}/callback")
}

/// The SDK's configuration of a pre-registered client.
fn client_config(client: &OAuthClient, redirect: &str) -> OAuthClientConfig {
    let config = OAuthClientConfig::new(client.client_id.clone(), redirect);
    match &client.client_secret {
        Some(secret) => config.with_client_secret(secret.expose()),
        None => config,
    }
}

/// How a sign-in gets its client: the one the server's owner registered (given by
/// `client`), else the server's metadata document or dynamic registration (RFC 7591).
fn login_request(redirect: &str, client: Option<&OAuthClient>) -> AuthorizationRequest {
    let request = AuthorizationRequest::new(redirect.to_string()).with_client_name("stepper");
    match client {
        Some(client) => {
            let request = request.with_preregistered_client(client.client_id.clone());
            match &client.client_secret {
                Some(secret) => request.with_client_secret(secret.expose()),
                None => request,
            }
        }
        None => request,
    }
}

/// Begin signing in to the server at `url`: the authorization URL to open, and the
/// listener on 127.0.0.1 the browser comes back to (on `client`'s `callbackPort` when it
/// names one). `client` is a client the server's owner registered beforehand; without one,
/// the server's metadata document or dynamic registration is used.
pub async fn begin_login(
    url: &str,
    tokens: &TokenFile,
    client: Option<&OAuthClient>,
) -> Result<Login, OAuthError> {
    crate::http::install_tls();
    if client.is_some_and(|c| c.grant == Some(Grant::ClientCredentials)) {
        return Err(OAuthError::Config(
            "its client signs in by itself (`oauth.grant: client_credentials`), \
             with no browser: it does so as it starts"
                .into(),
        ));
    }
    let fixed = client.and_then(|c| c.callback_port);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", fixed.unwrap_or(0)))
        .await
        .map_err(|e| {
            OAuthError::Local(match fixed {
                Some(port) => format!(
                    "cannot listen on port {port} (oauth.callbackPort) for the browser's \
                     return: {e} — stop what uses it, or register another port with the client"
                ),
                None => format!("cannot listen for the browser's return: {e}"),
            })
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Local(e.to_string()))?
        .port();
    let redirect = redirect_uri(port, fixed.is_some());
    let mut manager = manager(url, true).await?;
    manager.set_credential_store(tokens.store(url));
    let mut request = login_request(&redirect, client);
    if let Some(wanted) = tokens.wanted(url) {
        // A call needed more than the last sign-in was granted: ask for both.
        request = request.with_scopes(wanted);
    }
    let mut state = match AuthorizationSession::new(manager, request).await {
        Ok(session) => OAuthState::Session(session),
        Err((_, e)) => return Err(OAuthError::from_sdk("cannot begin the sign-in", e)),
    };
    let auth_url = state
        .get_authorization_url()
        .await
        .map_err(|e| OAuthError::from_sdk("no authorization URL", e))?;
    let done = tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| OAuthError::Local(format!("the browser's return: {e}")))?;
            let Some(path) = request_path(&mut stream).await else {
                continue;
            };
            if !path.starts_with("/callback") {
                let _ = respond(&mut stream, 404, "Not here.").await;
                continue;
            }
            let back = format!("{}{path}", redirect.trim_end_matches("/callback"));
            let result = state
                .handle_callback_url(&back)
                .await
                .map_err(|e| OAuthError::from_sdk("the sign-in failed", e));
            let page = match &result {
                Ok(()) => "Signed in. You can close this tab and go back to stepper.",
                Err(_) => "The sign-in failed: stepper says why.",
            };
            let _ = respond(&mut stream, 200, page).await;
            return result;
        }
    });
    Ok(Login {
        url: auth_url,
        done,
    })
}

/// The path and query of an HTTP request's first line.
async fn request_path(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = vec![0u8; 8192];
    let mut read = 0;
    while read < buf.len() {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf[read..]))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        read += n;
        if buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf[..read]);
    let line = head.lines().next()?;
    let mut parts = line.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_string)
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: u16,
    text: &str,
) -> std::io::Result<()> {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    let body = format!("<!doctype html><meta charset=utf-8><p>{text}</p>");
    let reply = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await
}

/// Where the tokens file is beside the daemon's credentials.
pub fn token_file(data_dir: &Path) -> TokenFile {
    TokenFile::new(data_dir.join("mcp-credentials.json"))
}

#[cfg(test)]
mod tests {
    use super::machine::sign_in_as_client;
    use super::*;
    use crate::config::Secret;
    use std::sync::{Arc, Mutex};

    /// An authorization server on 127.0.0.1 answering `routes` (path to JSON; any other path is
    /// 404), keeping every request line and body it was sent.
    async fn server(
        routes: impl Fn(&str, &str) -> Option<serde_json::Value> + Send + Sync + 'static,
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (kept, at) = (seen.clone(), base.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, body) = loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if body.len() >= length || n == 0 {
                            break (head.to_string(), body.to_string());
                        }
                    }
                    if n == 0 {
                        break (text, String::new());
                    }
                };
                let line = head.lines().next().unwrap_or("").to_string();
                let authorization = head
                    .lines()
                    .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
                    .unwrap_or("");
                kept.lock()
                    .unwrap()
                    .push(format!("{line} {body} {authorization}"));
                let path = line.split_whitespace().nth(1).unwrap_or("");
                let (status, json) = match routes(&at, path) {
                    Some(json) => ("200 OK", json.to_string()),
                    None => ("404 Not Found", "{}".to_string()),
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
                    json.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            }
        });
        (base, seen)
    }

    fn metadata(base: &str, issuer: &str) -> serde_json::Value {
        serde_json::json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{base}/oauth/authorize"),
            "token_endpoint": format!("{base}/oauth/token"),
            "registration_endpoint": format!("{base}/oauth/register"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        })
    }

    #[tokio::test]
    async fn a_pre_registered_client_is_used_instead_of_registering_one() {
        let (base, seen) = server(|base, path| match path {
            "/.well-known/oauth-authorization-server" => Some(metadata(base, base)),
            "/oauth/register" => {
                Some(serde_json::json!({"client_id": "dynamic-1", "redirect_uris": []}))
            }
            _ => None,
        })
        .await;
        let url = format!("{base}/mcp");
        let dir = tempfile::tempdir().unwrap();
        let tokens = TokenFile::new(dir.path().join("t.json"));
        let client = OAuthClient {
            client_id: "app-1".into(),
            client_secret: Some(Secret::new("s3cr3t-value".into())),
            callback_port: None,
            grant: None,
            private_key_file: None,
        };
        let login = begin_login(&url, &tokens, Some(&client)).await.unwrap();
        assert!(login.url.contains("client_id=app-1"), "{}", login.url);
        assert!(login.url.contains("code_challenge="), "{}", login.url);
        assert!(!login.url.contains("s3cr3t"), "{}", login.url);
        let registered = |seen: &Mutex<Vec<String>>| {
            seen.lock()
                .unwrap()
                .iter()
                .any(|r| r.starts_with("POST /oauth/register"))
        };
        assert!(!registered(&seen), "{:?}", seen.lock().unwrap());

        // Without one, stepper registers itself.
        let login = begin_login(&url, &tokens, None).await.unwrap();
        assert!(login.url.contains("client_id=dynamic-1"), "{}", login.url);
        assert!(registered(&seen), "{:?}", seen.lock().unwrap());
    }

    #[tokio::test]
    async fn an_issuer_under_a_path_passes_only_without_resource_metadata() {
        // A 2025-03-26 server: its origin's metadata names an issuer under /oauth.
        let (base, _) = server(|base, path| match path {
            "/.well-known/oauth-authorization-server" => {
                Some(metadata(base, &format!("{base}/oauth")))
            }
            "/oauth/register" => {
                Some(serde_json::json!({"client_id": "dynamic-1", "redirect_uris": []}))
            }
            _ => None,
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let tokens = TokenFile::new(dir.path().join("t.json"));
        let login = begin_login(&format!("{base}/mcp"), &tokens, None)
            .await
            .unwrap();
        assert!(
            login.url.starts_with(&format!("{base}/oauth/authorize?")),
            "{}",
            login.url
        );

        // The same metadata behind protected resource metadata (2025-06-18): RFC 8414's
        // check stands.
        let (base, _) = server(|base, path| match path {
            "/.well-known/oauth-protected-resource/mcp" => Some(serde_json::json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": [base],
            })),
            "/.well-known/oauth-authorization-server" => {
                Some(metadata(base, &format!("{base}/oauth")))
            }
            _ => None,
        })
        .await;
        let refused = begin_login(&format!("{base}/mcp"), &tokens, None).await;
        let why = refused.err().unwrap();
        assert!(matches!(why, OAuthError::Refused(_)), "{why:?}");
        let why = why.to_string();
        assert!(
            why.contains("the server's OAuth metadata is wrong"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn a_server_that_does_not_answer_is_unreachable_not_refused() {
        // A port nothing listens on: the connection is refused at once, no network needed.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let dir = tempfile::tempdir().unwrap();
        let tokens = TokenFile::new(dir.path().join("tokens.json"));
        let url = format!("http://127.0.0.1:{port}/mcp");
        let why = begin_login(&url, &tokens, None).await.err().unwrap();
        assert!(matches!(why, OAuthError::Unreachable(_)), "{why:?}");
        // What failed, where, and why (the SDK keeps the why in its error's source).
        let said = why.to_string();
        assert!(
            said.contains("cannot discover its authorization server"),
            "{said}"
        );
        assert!(said.contains(&format!("127.0.0.1:{port}")), "{said}");
        assert!(said.matches(": ").count() >= 2, "{said}");
    }

    /// A machine client's authorization server: only `client_credentials`, authenticated
    /// by `method`; its token endpoint grants `cc-1`.
    async fn machine_server(method: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
        server(move |base, path| match path {
            "/.well-known/oauth-authorization-server" => {
                let mut m = metadata(base, base);
                m["grant_types_supported"] = serde_json::json!(["client_credentials"]);
                m["token_endpoint_auth_methods_supported"] = serde_json::json!([method]);
                Some(m)
            }
            "/oauth/token" => Some(serde_json::json!({
                "access_token": "cc-1", "token_type": "Bearer", "expires_in": 3600,
                "scope": "mcp:read",
            })),
            _ => None,
        })
        .await
    }

    fn machine(secret: Option<&str>, key: Option<PathBuf>) -> OAuthClient {
        OAuthClient {
            client_id: "robot-1".into(),
            client_secret: secret.map(|s| Secret::new(s.into())),
            callback_port: None,
            grant: None,
            private_key_file: key,
        }
    }

    fn token_requests(seen: &Mutex<Vec<String>>) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|r| r.starts_with("POST /oauth/token"))
            .cloned()
            .collect()
    }

    #[tokio::test]
    async fn a_machine_client_signs_in_with_its_secret_over_basic() {
        use base64::Engine;
        let (base, seen) = machine_server("client_secret_basic").await;
        let url = format!("{base}/mcp");
        let dir = tempfile::tempdir().unwrap();
        let tokens = TokenFile::new(dir.path().join("t.json"));
        let client = machine(Some("s3cr3t-value"), None);
        assert!(
            sign_in_as_client(&url, &tokens, Some(&client))
                .await
                .unwrap()
        );
        let sent = token_requests(&seen);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(
            sent[0].contains("grant_type=client_credentials"),
            "{sent:?}"
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("robot-1:s3cr3t-value");
        assert!(sent[0].contains(&format!("Basic {basic}")), "{sent:?}");
        let stored = tokens.store(&url).load().await.unwrap().unwrap();
        assert_eq!(stored.client_id, "robot-1");
        let text = std::fs::read_to_string(dir.path().join("t.json")).unwrap();
        assert!(text.contains("cc-1") && !text.contains("s3cr3t"), "{text}");

        // A client with a secret where the server offers the browser's grant: a user
        // signs in, nothing is asked of the token endpoint.
        let (base, seen) = server(|base, path| {
            (path == "/.well-known/oauth-authorization-server").then(|| metadata(base, base))
        })
        .await;
        let url = format!("{base}/mcp");
        assert!(
            !sign_in_as_client(&url, &tokens, Some(&client))
                .await
                .unwrap()
        );
        assert!(token_requests(&seen).is_empty());
        assert!(!tokens.has(&url));
        // Unless it says it is a machine client.
        let told = OAuthClient {
            grant: Some(Grant::ClientCredentials),
            ..client.clone()
        };
        let why = begin_login(&url, &tokens, Some(&told)).await.err().unwrap();
        assert!(matches!(why, OAuthError::Config(_)), "{why:?}");
        assert!(why.to_string().contains("signs in by itself"), "{why}");
    }

    #[tokio::test]
    async fn a_machine_client_signs_an_es256_assertion_with_its_key() {
        use base64::Engine;
        use ring::signature::KeyPair;
        let rng = ring::rand::SystemRandom::new();
        let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let public = ring::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng)
            .unwrap()
            .public_key()
            .as_ref()
            .to_vec();
        let b64 = base64::engine::general_purpose::STANDARD;
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            b64.encode(pkcs8.as_ref())
        );
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, &pem).unwrap();

        let (base, seen) = machine_server("private_key_jwt").await;
        let url = format!("{base}/mcp");
        let tokens = TokenFile::new(dir.path().join("t.json"));
        let client = machine(None, Some(key.clone()));
        assert!(
            sign_in_as_client(&url, &tokens, Some(&client))
                .await
                .unwrap()
        );
        let sent = token_requests(&seen);
        assert_eq!(sent.len(), 1, "{sent:?}");
        let body = sent[0].split_whitespace().nth(3).unwrap();
        let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(
            form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert_eq!(form["resource"], url);
        let assertion = &form["client_assertion"];
        let (signed, signature) = assertion.rsplit_once('.').unwrap();
        let url_b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &public)
            .verify(signed.as_bytes(), &url_b64.decode(signature).unwrap())
            .expect("signed by the client's key");
        let (header, claims) = signed.split_once('.').unwrap();
        let header: serde_json::Value =
            serde_json::from_slice(&url_b64.decode(header).unwrap()).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&url_b64.decode(claims).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(claims["iss"], "robot-1");
        assert_eq!(claims["sub"], "robot-1");
        assert_eq!(claims["aud"], base.as_str());
        assert!(claims["exp"].as_u64() > claims["iat"].as_u64());
        assert!(claims["jti"].as_str().is_some_and(|j| !j.is_empty()));
        let stored = tokens.store(&url).load().await.unwrap().unwrap();
        assert_eq!(stored.granted_scopes, vec!["mcp:read".to_string()]);

        // A key in SEC1 form is refused saying how to convert it.
        std::fs::write(
            &key,
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
        )
        .unwrap();
        let why = sign_in_as_client(&url, &tokens, Some(&client))
            .await
            .err()
            .unwrap();
        assert!(matches!(why, OAuthError::Config(_)), "{why:?}");
        let why = why.to_string();
        assert!(
            why.contains("openssl pkcs8") && why.contains("key.pem"),
            "{why}"
        );
        // The private key never shows in what is said.
        assert!(!why.contains(&b64.encode(pkcs8.as_ref())[..20]), "{why}");
    }

    #[tokio::test]
    async fn a_wider_scope_is_asked_for_until_a_sign_in_grants_it() {
        let (base, _) = server(|base, path| match path {
            "/.well-known/oauth-authorization-server" => Some(metadata(base, base)),
            "/oauth/register" => {
                Some(serde_json::json!({"client_id": "dynamic-1", "redirect_uris": []}))
            }
            _ => None,
        })
        .await;
        let url = format!("{base}/mcp");
        let dir = tempfile::tempdir().unwrap();
        let tokens = TokenFile::new(dir.path().join("t.json"));
        let store = tokens.store(&url);
        let granted = |scopes: &[&str]| {
            StoredCredentials::new(
                "dynamic-1".into(),
                None,
                scopes.iter().map(|s| s.to_string()).collect(),
                Some(1),
            )
        };
        store.save(granted(&["mcp:basic"])).await.unwrap();
        assert_eq!(tokens.wanted(&url), None);
        let login = begin_login(&url, &tokens, None).await.unwrap();
        assert!(!login.url.contains("mcp%3Awrite"), "{}", login.url);

        // A call's 403 named "mcp:basic mcp:write": the union is asked for next.
        let wanted = tokens.want(&url, "mcp:basic mcp:write").unwrap();
        assert_eq!(wanted, ["mcp:basic", "mcp:write"]);
        let login = begin_login(&url, &tokens, None).await.unwrap();
        let scope = reqwest::Url::parse(&login.url)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "scope")
            .map(|(_, v)| v.into_owned());
        assert_eq!(
            scope.as_deref(),
            Some("mcp:basic mcp:write"),
            "{}",
            login.url
        );

        // A refresh granting the old scope keeps the want; a sign-in granting it ends it.
        store.save(granted(&["mcp:basic"])).await.unwrap();
        assert_eq!(tokens.wanted(&url), Some(wanted));
        store
            .save(granted(&["mcp:basic", "mcp:write"]))
            .await
            .unwrap();
        assert_eq!(tokens.wanted(&url), None);
        assert_eq!(
            store.load().await.unwrap().unwrap().granted_scopes,
            ["mcp:basic", "mcp:write"]
        );
    }

    #[tokio::test]
    async fn tokens_are_kept_by_url_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFile::new(dir.path().join("t.json"));
        let store = file.store("https://mcp.example/mcp");
        assert!(store.load().await.unwrap().is_none());
        let creds = StoredCredentials::new("client-1".into(), None, vec!["read".into()], Some(1))
            .with_issuer(Some("https://auth.example".into()));
        store.save(creds).await.unwrap();
        assert!(file.has("https://mcp.example/mcp"));
        let back = store.load().await.unwrap().unwrap();
        assert_eq!(back.client_id, "client-1");
        assert_eq!(back.issuer.as_deref(), Some("https://auth.example"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("t.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        store.clear().await.unwrap();
        assert!(!file.has("https://mcp.example/mcp"));
    }
}
