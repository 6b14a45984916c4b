//! Settings, loaded once per folder and kept until one of their files changes.
//!
//! Every handler and every turn asks here instead of reading `setting.json` files itself. A
//! lookup stats the files that apply (three at most) and reloads only when one of them
//! appeared, went, or changed size, modification time or inode since the last load.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use stepper_engine::config::{ConfigError, Settings};

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

struct Entry {
    stamps: Vec<(PathBuf, Stamp)>,
    settings: Arc<Settings>,
}

/// The merged settings of each folder seen, and the user's alone.
pub struct SettingsCache {
    config_dir: PathBuf,
    /// By folder; `None` is the user's settings alone.
    entries: Mutex<HashMap<Option<PathBuf>, Arc<Entry>>>,
}

impl SettingsCache {
    pub fn new(config_dir: PathBuf) -> SettingsCache {
        SettingsCache {
            config_dir,
            entries: Mutex::default(),
        }
    }

    /// The user's config folder (`setting.json`, `AGENTS.md`).
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// The merged settings for a folder, or the user's alone (`None`). The files are stat'ed
    /// in place (three stats); only reading them again goes off the runtime.
    pub async fn get(&self, cwd: Option<&Path>) -> Result<Arc<Settings>, SettingsError> {
        let key = cwd.map(Path::to_path_buf);
        let files = match cwd {
            Some(cwd) => Settings::files(&self.config_dir, cwd),
            None => vec![self.config_dir.join("setting.json")],
        };
        let stamps: Vec<(PathBuf, Stamp)> = files
            .into_iter()
            .map(|f| {
                let stamp = stamp(&f);
                (f, stamp)
            })
            .collect();
        if let Some(entry) = self.entries().get(&key).filter(|e| e.stamps == stamps) {
            return Ok(Arc::clone(&entry.settings));
        }
        let entry = tokio::task::spawn_blocking(move || -> Result<Arc<Entry>, ConfigError> {
            let files = stamps.iter().map(|(f, _)| f.clone()).collect();
            let settings = Arc::new(Settings::load_files(files)?);
            Ok(Arc::new(Entry { stamps, settings }))
        })
        .await
        .map_err(|e| SettingsError::Task(e.to_string()))??;
        let settings = Arc::clone(&entry.settings);
        self.entries().insert(key, entry);
        Ok(settings)
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<Option<PathBuf>, Arc<Entry>>> {
        // Holds only Arcs: a panic elsewhere cannot leave the map inconsistent.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
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
    async fn a_changed_file_is_read_again_and_an_unchanged_one_is_not() {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let cache = SettingsCache::new(config.path().to_path_buf());
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
