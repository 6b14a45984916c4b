//! The credentials file: the ChatGPT tokens and the API keys a user entered through
//! `stepper auth`, so that the daemon can use them without the key being in every shell's
//! environment.
//!
//! It is a JSON file readable by its owner only (mode 0600, set when the file is created, never
//! loosened after), replaced atomically on every save so a crash leaves the old or the new
//! version and never half of one. The OS keyring would be better on desktops and may come later;
//! a file works the same on every Unix, including headless machines where no keyring runs.
//!
//! **Credentials stay in one file, for the user only**: `credentials.json` (0600, replaced
//! atomically). Key headers are marked sensitive; recordings hold normalised exchanges, never
//! headers, and scrub the keys in use from their text.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::codex::CodexTokens;
use super::error::{AuthError, Result};
use super::redact;

/// The name `remove` knows the ChatGPT sign-in by (API keys go by their provider's name).
pub const CODEX: &str = "codex";

/// The credentials file, loaded. Changes are in memory until [`CredentialStore::save`].
///
/// `load` and `save` do blocking file I/O (a few hundred bytes and an fsync): from async code,
/// call them through `tokio::task::spawn_blocking`.
pub struct CredentialStore {
    path: PathBuf,
    data: Credentials,
}

/// The file's format: `{ "codex": {...}?, "apiKeys": { "anthropic": "...", ... } }`.
/// Deliberately not `Debug`: it holds secrets in the clear.
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Credentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    codex: Option<CodexTokens>,
    #[serde(default)]
    api_keys: BTreeMap<String, String>,
    /// Local OpenAI-compatible servers by provider name. Not secret, but stored with the
    /// keys: both say how the daemon reaches a provider, and both are set by `stepper auth`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    local_servers: BTreeMap<String, StoredServer>,
}

/// A local server as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredServer {
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl CredentialStore {
    /// Reads the file at `path`; a missing file is an empty store (nobody has signed in yet).
    pub fn load(path: impl Into<PathBuf>) -> Result<CredentialStore> {
        let path = path.into();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(AuthError::StoreRead { path, source }),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(CredentialStore {
                path,
                data: Credentials::default(),
            });
        }
        match serde_json::from_slice(&bytes) {
            Ok(data) => Ok(CredentialStore { path, data }),
            // serde's own message can quote a value from the file, which may be a key; only
            // its position is used.
            Err(e) => {
                let what = if e.is_data() {
                    "unexpected content"
                } else {
                    "not valid JSON"
                };
                Err(AuthError::StoreCorrupt {
                    reason: format!("{what} at line {} column {}", e.line(), e.column()),
                    path,
                })
            }
        }
    }

    /// Writes the store to its file: a new private file beside it, flushed to disk, then
    /// renamed over the old one. The directory is created (owner-only) if missing.
    pub fn save(&self) -> Result<()> {
        let failed = |source| AuthError::StoreWrite {
            path: self.path.clone(),
            source,
        };
        let mut json = serde_json::to_vec_pretty(&self.data)
            .map_err(io::Error::other)
            .map_err(failed)?;
        json.push(b'\n');
        write_atomically(&self.path, &json).map_err(failed)
    }

    /// The file this store reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn codex(&self) -> Option<&CodexTokens> {
        self.data.codex.as_ref()
    }

    /// Stores the tokens of a sign-in or a refresh, replacing the previous ones (after a
    /// refresh, the previous refresh token may be spent).
    pub fn set_codex(&mut self, tokens: CodexTokens) {
        self.data.codex = Some(tokens);
    }

    /// Every secret the store holds: API keys and sign-in tokens.
    pub fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self.data.api_keys.values().cloned().collect();
        if let Some(codex) = &self.data.codex {
            values.extend([
                codex.id_token.clone(),
                codex.access_token.clone(),
                codex.refresh_token.clone(),
            ]);
        }
        values
    }

    /// The API key stored for `provider` ("anthropic", "openai", ...).
    pub fn api_key(&self, provider: &str) -> Option<&str> {
        self.data.api_keys.get(provider).map(String::as_str)
    }

    /// Stores `key` for `provider`. Surrounding whitespace is dropped: a pasted key often
    /// brings a newline along.
    pub fn set_api_key(&mut self, provider: &str, key: &str) -> Result<()> {
        let key = key.trim();
        if key.is_empty() {
            return Err(AuthError::EmptyApiKey {
                provider: provider.to_string(),
            });
        }
        self.data
            .api_keys
            .insert(provider.to_string(), key.to_string());
        Ok(())
    }

    /// The local server stored under `name`.
    pub fn local_server(&self, name: &str) -> Option<&StoredServer> {
        self.data.local_servers.get(name)
    }

    /// Every stored local server, by name.
    pub fn local_servers(&self) -> impl Iterator<Item = (&str, &StoredServer)> {
        self.data
            .local_servers
            .iter()
            .map(|(name, server)| (name.as_str(), server))
    }

    pub fn set_local_server(&mut self, name: &str, server: StoredServer) {
        self.data.local_servers.insert(name.to_string(), server);
    }

    /// Forgets the credentials of `provider` ([`CODEX`] for the ChatGPT sign-in, else an API
    /// key's provider and a local server of that name), for logout. Returns whether there
    /// was anything to forget.
    pub fn remove(&mut self, provider: &str) -> bool {
        if provider == CODEX {
            self.data.codex.take().is_some()
        } else {
            let key = self.data.api_keys.remove(provider).is_some();
            let server = self.data.local_servers.remove(provider).is_some();
            key || server
        }
    }
}

impl fmt::Debug for CredentialStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let api_keys: BTreeMap<&str, String> = self
            .data
            .api_keys
            .iter()
            .map(|(provider, key)| (provider.as_str(), redact(key)))
            .collect();
        f.debug_struct("CredentialStore")
            .field("path", &self.path)
            .field("codex", &self.data.codex)
            .field("api_keys", &api_keys)
            .finish()
    }
}

/// Tells apart the temporary files of saves running at the same time in one process.
static SAVES: AtomicU64 = AtomicU64::new(0);

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    create_private_dir(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "credentials".to_string());
    // Same directory, so the rename stays within one file system and is atomic.
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        SAVES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = create_private_file(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = fs::remove_file(&tmp);
        return written;
    }
    sync_dir(dir);
    Ok(())
}

/// A new file that only its owner can read, private from its first byte: creating it open
/// and tightening it afterwards would leave a moment in which others could open it.
fn create_private_file(path: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Makes the rename itself durable. Best effort: some file systems refuse to fsync a
/// directory, and by now the new file is in place either way.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANTHROPIC_KEY: &str = "sk-ant-api03-SECRETSECRETSECRETSECRET";
    const OPENAI_KEY: &str = "sk-proj-ALSOSECRETALSOSECRETALSOSECRET";

    fn tokens() -> CodexTokens {
        CodexTokens {
            id_token: "eyJhbGciOiJub25lIn0.ID-TOKEN-SECRET-PART.sig".into(),
            access_token: "eyJhbGciOiJub25lIn0.ACCESS-TOKEN-SECRET-PART.sig".into(),
            refresh_token: "rt_REFRESH-TOKEN-SECRET-PART-0123456789".into(),
            expires_at: 1_900_000_000_000,
            account_id: Some("acct-123".into()),
            email: Some("ada@example.com".into()),
            plan: Some("plus".into()),
        }
    }

    fn filled(path: &Path) -> CredentialStore {
        let mut store = CredentialStore::load(path).unwrap();
        store.set_codex(tokens());
        store.set_api_key("anthropic", ANTHROPIC_KEY).unwrap();
        store.set_api_key("openai", OPENAI_KEY).unwrap();
        store
    }

    #[test]
    fn saved_credentials_load_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        filled(&path).save().unwrap();

        let loaded = CredentialStore::load(&path).unwrap();
        assert_eq!(loaded.codex(), Some(&tokens()));
        assert_eq!(loaded.api_key("anthropic"), Some(ANTHROPIC_KEY));
        assert_eq!(loaded.api_key("openai"), Some(OPENAI_KEY));
        assert_eq!(loaded.api_key("mistral"), None);

        // The documented shape, which the daemon and any future migration rely on.
        let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(json["apiKeys"]["anthropic"], ANTHROPIC_KEY);
        assert_eq!(json["codex"]["accountId"], "acct-123");
        assert_eq!(json["codex"]["expiresAt"], 1_900_000_000_000_i64);
    }

    #[test]
    fn a_missing_file_is_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::load(dir.path().join("credentials.json")).unwrap();
        assert!(store.codex().is_none());
        assert_eq!(store.api_key("anthropic"), None);
    }

    #[test]
    fn save_creates_the_missing_directory_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("stepper");
        let path = data_dir.join("credentials.json");
        filled(&path).save().unwrap();
        filled(&path).save().unwrap();

        let names: Vec<_> = fs::read_dir(&data_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["credentials.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("stepper");
        let path = data_dir.join("credentials.json");
        filled(&path).save().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&data_dir), 0o700);

        // A file someone loosened is replaced by a private one on the next save.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        filled(&path).save().unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_corrupt_file_is_named_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        fs::write(&path, "{\"apiKeys\": {\"anthropic\": ").unwrap();

        let err = CredentialStore::load(&path).unwrap_err();
        assert!(matches!(err, AuthError::StoreCorrupt { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("not valid JSON at line 1"), "{msg}");
        assert!(msg.contains("delete it"), "{msg}");
    }

    #[test]
    fn a_corrupt_file_error_never_quotes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        // Valid JSON of the wrong shape: serde's message would quote the string.
        fs::write(&path, format!("{{\"codex\": \"{ANTHROPIC_KEY}\"}}")).unwrap();

        let msg = CredentialStore::load(&path).unwrap_err().to_string();
        assert!(msg.contains("unexpected content"), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
    }

    #[test]
    fn debug_output_contains_no_secret() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(&dir.path().join("credentials.json"));
        let shown = format!("{store:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("anthropic"), "{shown}");
        assert!(shown.contains("acct-123"), "{shown}");
    }

    #[test]
    fn remove_forgets_one_provider_and_says_whether_it_had_any() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = filled(&dir.path().join("credentials.json"));
        assert!(store.remove("anthropic"));
        assert!(!store.remove("anthropic"));
        assert_eq!(store.api_key("anthropic"), None);
        assert_eq!(store.api_key("openai"), Some(OPENAI_KEY));
        assert!(store.remove(CODEX));
        assert!(store.codex().is_none());
        assert!(!store.remove(CODEX));
    }

    #[test]
    fn pasted_keys_are_trimmed_and_empty_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = CredentialStore::load(dir.path().join("credentials.json")).unwrap();
        store.set_api_key("openai", "  sk-proj-abc\n").unwrap();
        assert_eq!(store.api_key("openai"), Some("sk-proj-abc"));
        let err = store.set_api_key("openai", " \n").unwrap_err();
        assert!(matches!(err, AuthError::EmptyApiKey { .. }), "{err:?}");
        assert_eq!(store.api_key("openai"), Some("sk-proj-abc"));
    }
}
