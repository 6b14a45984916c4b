//! OAuth for streamable HTTP servers that answer 401, on the SDK's authorization client:
//! discovery (protected resource and authorization server metadata), client registration
//! (pre-registered, metadata document or dynamic), PKCE, token exchange and refresh. A
//! sign-in opens the authorization URL and takes the browser's return on a listener on
//! 127.0.0.1, as the ChatGPT sign-in does. Tokens live in a file of their own (0600), by
//! server URL, each with the issuer that minted it; they never reach a log or an event.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::service::RoleClient;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState,
    StoredCredentials,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
        let value = serde_json::to_value(&credentials)
            .map_err(|e| AuthError::InternalError(e.to_string()))?;
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

/// The SDK's authorization manager for `url`; a server on this machine or the local network
/// may point its metadata at private addresses too.
async fn manager(url: &str) -> Result<AuthorizationManager, String> {
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
    made.map_err(|e| format!("cannot set up its authorization: {e}"))
}

/// A transport for `url` that signs its requests with the stored tokens (refreshing them as
/// they expire), or `None` without stored tokens.
pub async fn signed(
    url: &str,
    headers: HashMap<http::HeaderName, http::HeaderValue>,
    tokens: &TokenFile,
) -> Result<Option<impl Transport<RoleClient> + 'static>, String> {
    if !tokens.has(url) {
        return Ok(None);
    }
    crate::http::install_tls();
    let mut manager = manager(url).await?;
    manager.set_credential_store(tokens.store(url));
    match manager.initialize_from_store().await {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) => return Err(format!("its stored sign-in is not usable: {e}")),
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
    done: tokio::task::JoinHandle<Result<(), String>>,
}

impl Login {
    /// Wait (at most `timeout`) for the sign-in to complete and its tokens to be stored.
    pub async fn finish(self, timeout: Duration) -> Result<(), String> {
        let abort = self.done.abort_handle();
        match tokio::time::timeout(timeout, self.done).await {
            Ok(Ok(done)) => done,
            Ok(Err(_)) => Err("the sign-in stopped".into()),
            Err(_) => {
                abort.abort();
                Err(format!(
                    "the browser did not come back within {} s",
                    timeout.as_secs()
                ))
            }
        }
    }
}

/// Begin signing in to the server at `url`: the authorization URL to open, and the
/// listener on 127.0.0.1 the browser comes back to. `client_id` (and `client_secret`) name a
/// client the server registered beforehand; without one, the server's metadata document or
/// dynamic registration is used.
pub async fn begin_login(
    url: &str,
    tokens: &TokenFile,
    client_id: Option<&str>,
    client_secret: Option<&str>,
) -> Result<Login, String> {
    crate::http::install_tls();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen for the browser's return: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut manager = manager(url).await?;
    manager.set_credential_store(tokens.store(url));
    let mut state = OAuthState::Unauthorized(manager);
    let mut request = AuthorizationRequest::new(redirect.clone()).with_client_name("stepper");
    if let Some(id) = client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = client_secret {
            request = request.with_client_secret(secret);
        }
    }
    state
        .start_authorization(request)
        .await
        .map_err(|e| format!("cannot begin the sign-in: {e}"))?;
    let auth_url = state
        .get_authorization_url()
        .await
        .map_err(|e| format!("no authorization URL: {e}"))?;
    let done = tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| format!("the browser's return: {e}"))?;
            let Some(path) = request_path(&mut stream).await else {
                continue;
            };
            if !path.starts_with("/callback") {
                let _ = respond(&mut stream, 404, "Not here.").await;
                continue;
            }
            let back = format!("http://127.0.0.1:{port}{path}");
            let result = state
                .handle_callback_url(&back)
                .await
                .map_err(|e| format!("the sign-in failed: {e}"));
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
    use super::*;

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
