//! Settings, loaded once per folder and kept until one of their files changes.
//!
//! Every handler and every turn asks here instead of reading `setting.json` files itself. A
//! lookup stats the files that apply (stepper's three, Claude Code's four, and the user's
//! trust decisions) and reloads only when one of them appeared, went, or changed size,
//! modification time or inode since the last load. A folder the user has not trusted gets only what its project files
//! narrow (`stepper_engine::config::trust`).
//!
//! A [`Folder`] holds what applies, what may approve the project's MCP servers, the folder's trust
//! and what was left out for want of it; the user's `trust.json` is among the files whose change
//! reloads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use stepper_engine::config::trust::{Trust, TrustStore};
use stepper_engine::config::{ConfigError, Settings, claude};

/// Why settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("loading settings failed: {0}")]
    Task(String),
}

/// What a settings file was when it was read; `None` when it did not exist.
type Stamp = Option<(u64, Option<SystemTime>, u64)>;

/// The settings of one folder, as a session there gets them.
#[derive(Debug, Default)]
pub struct Folder {
    /// The user's settings and the project's (only what narrows, when untrusted).
    pub settings: Arc<Settings>,
    /// What may approve the project's MCP servers: the user's settings, and the project's
    /// `setting.local.json` when the folder is trusted.
    pub approvals: Settings,
    pub trust: Trust,
    /// What the project's settings ask for that does not apply until the folder is trusted
    /// (`file: what`), and a trust file that could not be read.
    pub ignored: Vec<String>,
}

struct Entry {
    stamps: Vec<(PathBuf, Stamp)>,
    folder: Arc<Folder>,
}

/// The merged settings of each folder seen, and the user's alone.
pub struct SettingsCache {
    config_dir: PathBuf,
    /// Where Claude Code's own settings are.
    claude: claude::Places,
    /// By folder; `None` is the user's settings alone.
    entries: Mutex<HashMap<Option<PathBuf>, Arc<Entry>>>,
}

impl SettingsCache {
    /// The cache of this machine: its Claude Code settings too.
    pub fn new(config_dir: PathBuf) -> SettingsCache {
        SettingsCache::with_claude(config_dir, claude::Places::of_this_machine())
    }

    /// A cache that finds Claude Code's settings at `claude`.
    pub fn with_claude(config_dir: PathBuf, claude: claude::Places) -> SettingsCache {
        SettingsCache {
            config_dir,
            claude,
            entries: Mutex::default(),
        }
    }

    /// The settings files that apply to `cwd`, in merge order.
    pub fn files(&self, cwd: &Path) -> Vec<PathBuf> {
        Settings::files(&self.config_dir, &self.claude, cwd)
    }

    /// The user's config folder (`setting.json`, `AGENTS.md`, `trust.json`).
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// The user's trust decisions.
    pub fn trust_store(&self) -> TrustStore {
        TrustStore::new(&self.config_dir)
    }

    /// The merged settings for a folder, or the user's alone (`None`).
    pub async fn get(&self, cwd: Option<&Path>) -> Result<Arc<Settings>, SettingsError> {
        Ok(Arc::clone(&self.folder(cwd).await?.settings))
    }

    /// Everything about a folder's settings: what applies, what approves its MCP servers,
    /// whether it is trusted and what was left out. The files are stat'ed in place (eight
    /// stats); only reading them again goes off the runtime.
    pub async fn folder(&self, cwd: Option<&Path>) -> Result<Arc<Folder>, SettingsError> {
        let key = cwd.map(Path::to_path_buf);
        let mut files = match cwd {
            Some(cwd) => self.files(cwd),
            None => Settings::user_files(&self.config_dir, &self.claude),
        };
        if cwd.is_some() {
            files.push(self.trust_store().path().to_path_buf());
        }
        let stamps: Vec<(PathBuf, Stamp)> = files
            .into_iter()
            .map(|f| {
                let stamp = stamp(&f);
                (f, stamp)
            })
            .collect();
        if let Some(entry) = self.entries().get(&key).filter(|e| e.stamps == stamps) {
            return Ok(Arc::clone(&entry.folder));
        }
        let (config_dir, claude) = (self.config_dir.clone(), self.claude.clone());
        let entry = tokio::task::spawn_blocking(move || -> Result<Arc<Entry>, ConfigError> {
            let folder = match &key {
                None => {
                    let user = Settings::load_user(&config_dir, &claude)?;
                    Folder {
                        approvals: user.clone(),
                        settings: Arc::new(user),
                        trust: Trust::default(),
                        ignored: Vec::new(),
                    }
                }
                Some(cwd) => load_folder(&config_dir, &claude, cwd)?,
            };
            Ok(Arc::new(Entry {
                stamps,
                folder: Arc::new(folder),
            }))
        })
        .await
        .map_err(|e| SettingsError::Task(e.to_string()))??;
        let folder = Arc::clone(&entry.folder);
        self.entries().insert(cwd.map(Path::to_path_buf), entry);
        Ok(folder)
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<Option<PathBuf>, Arc<Entry>>> {
        // Holds only Arcs: a panic elsewhere cannot leave the map inconsistent.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A folder's settings under the user's trust decision. A trust file that cannot be read
/// trusts nothing, and says so.
fn load_folder(
    config_dir: &Path,
    claude: &claude::Places,
    cwd: &Path,
) -> Result<Folder, ConfigError> {
    let (trust, problem) = match TrustStore::new(config_dir).trust(cwd) {
        Ok(trust) => (trust, None),
        Err(e) => (Trust::default(), Some(e.to_string())),
    };
    let (settings, mut ignored) = Settings::load_folder(config_dir, claude, cwd, trust.trusted)?;
    let approvals = Settings::load_approvals(config_dir, claude, cwd, trust.trusted)?;
    ignored.extend(problem);
    Ok(Folder {
        settings: Arc::new(settings),
        approvals,
        trust,
        ignored,
    })
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let ino = 0;
    Some((meta.len(), meta.modified().ok(), ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_untrusted_folder_gets_what_narrows_until_the_user_trusts_it() {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".stepper")).unwrap();
        std::fs::write(
            project.path().join(".stepper/setting.json"),
            r#"{"hooks": {"Stop": []}, "permissions": {"mode": "auto", "deny": ["Read(./.env)"]}}"#,
        )
        .unwrap();
        std::fs::write(
            project.path().join(".stepper/setting.local.json"),
            r#"{"enableAllProjectMcpServers": true}"#,
        )
        .unwrap();
        let cache =
            SettingsCache::with_claude(config.path().to_path_buf(), claude::Places::default());
        let here = cache.folder(Some(project.path())).await.unwrap();
        assert!(!here.trust.trusted);
        assert_eq!(
            here.settings.mode(),
            stepper_engine::config::PermissionMode::Default
        );
        assert_eq!(
            here.settings.permissions.as_ref().unwrap().deny,
            vec!["Read(./.env)".to_string()]
        );
        assert_eq!(here.approvals.enable_all_project_mcp_servers, None);
        assert!(
            here.ignored
                .iter()
                .any(|i| i.contains("permissions.mode auto")),
            "{:?}",
            here.ignored
        );
        // The decision is one of the files the cache watches: the next lookup sees it.
        cache
            .trust_store()
            .decide(project.path(), true, false)
            .unwrap();
        let here = cache.folder(Some(project.path())).await.unwrap();
        assert!(here.trust.trusted);
        assert_eq!(
            here.settings.mode(),
            stepper_engine::config::PermissionMode::Auto
        );
        assert_eq!(here.approvals.enable_all_project_mcp_servers, Some(true));
        assert!(here.ignored.is_empty(), "{:?}", here.ignored);
    }

    #[tokio::test]
    async fn a_changed_file_is_read_again_and_an_unchanged_one_is_not() {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cache =
            SettingsCache::with_claude(config.path().to_path_buf(), claude::Places::default());
        let first = cache.get(Some(project.path())).await.unwrap();
        assert_eq!(first.model, None);
        let again = cache.get(Some(project.path())).await.unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "unchanged files are not read again"
        );

        std::fs::create_dir(project.path().join(".stepper")).unwrap();
        std::fs::write(
            project.path().join(".stepper/setting.json"),
            r#"{"model": "openai/gpt-5"}"#,
        )
        .unwrap();
        let changed = cache.get(Some(project.path())).await.unwrap();
        assert_eq!(changed.model.as_deref(), Some("openai/gpt-5"));

        // Same length, new content: the modification time (or inode) tells.
        let path = config.path().join("setting.json");
        std::fs::write(&path, r#"{"model": "a/b"}"#).unwrap();
        assert_eq!(cache.get(None).await.unwrap().model.as_deref(), Some("a/b"));
        let tmp = config.path().join("new.json");
        std::fs::write(&tmp, r#"{"model": "c/d"}"#).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(cache.get(None).await.unwrap().model.as_deref(), Some("c/d"));

        std::fs::write(&path, "{ not json").unwrap();
        assert!(matches!(
            cache.get(None).await,
            Err(SettingsError::Config(ConfigError::Parse { .. }))
        ));
    }
}
