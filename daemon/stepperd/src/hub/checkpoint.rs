//! Checkpoints of a session's project files, so a rewind restores what any turn changed —
//! by tools or by the shell — whether or not the project is a git repository.
//!
//! A stat cache (size and modification time, with the content's hash) stands for the files as
//! they were; at the start of a turn it is brought up to date (changes made outside stepper are
//! taken as they are), and at its end every file whose stat moved is read, hashed and stored,
//! and the turn records what each changed file held before. Reading is proportional to the
//! files changed; the project is only walked for stats. The first turn of a session stores a
//! baseline; blobs are shared by hash, so unchanged content is never stored twice.
//!
//! *A turn whose tools never asked the gate is not walked at its end*: every tool that acts asks
//! first, so nothing of the project can be the turn's doing; what changed meanwhile outside stepper
//! is taken as it is at the next turn's start, as between turns.
//!
//! *Checkpoints by stat, not by tool*: a turn's file changes are found by comparing the project's
//! stats with a cache taken at the turn's start, so the shell's changes are covered as well as the
//! tools', in any project, git or not (gitignore respected, files over 4 MiB left out). Only
//! changed files are read; the project is walked for stats each turn — at its start concurrently
//! with the first model call (the gate holds every tool until the walk is done, so no change can
//! slip in before the baseline), and at its end to record. Rewind undoes turns latest first:
//! changed files get their previous content, created ones are removed, deleted ones come back; the
//! conversation is cut at the turn.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::Digest;
use stepper_store::{FileChange, Store};

/// Blobs stored per transaction.
const BLOB_BATCH: usize = 512;

/// Files larger than this are not checkpointed (and not restored).
const MAX_FILE: u64 = 4 * 1024 * 1024;

#[derive(Clone, PartialEq, Eq)]
struct Stat {
    len: u64,
    mtime: i128,
}

struct Entry {
    stat: Stat,
    hash: String,
}

/// Why a checkpoint could not be taken or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Store(#[from] stepper_store::StoreError),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the checkpoint of {0} is missing from the store")]
    Missing(String),
    #[error("the walk of the project failed: {0}")]
    Walk(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The checkpoints of one session's project.
pub struct Checkpointer {
    root: PathBuf,
    cache: tokio::sync::Mutex<Option<HashMap<PathBuf, Entry>>>,
}

/// A file read because its stat moved.
struct Read {
    path: PathBuf,
    stat: Stat,
    hash: String,
    data: Vec<u8>,
}

impl Checkpointer {
    pub fn new(root: &Path) -> Checkpointer {
        Checkpointer {
            root: root.to_path_buf(),
            cache: tokio::sync::Mutex::new(None),
        }
    }

    /// The start of a turn: the cache follows the files as they are now.
    pub async fn sync(&self, store: &Store) -> Result<(), CheckpointError> {
        let mut cache = self.cache.lock().await;
        let current = cache.take().unwrap_or_default();
        let (next, _) = self.update(current, store).await?;
        *cache = Some(next);
        Ok(())
    }

    /// The end of a turn: record what it changed, with the previous contents. Returns how
    /// many files changed.
    pub async fn record(
        &self,
        store: &Store,
        session_id: &str,
        turn: u32,
    ) -> Result<usize, CheckpointError> {
        let mut cache = self.cache.lock().await;
        let Some(current) = cache.take() else {
            return Ok(0);
        };
        let (next, changes) = self.update(current, store).await?;
        *cache = Some(next);
        let changes: Vec<FileChange> = changes
            .into_iter()
            .map(|(path, before)| FileChange { turn, path, before })
            .collect();
        store.record_changes(session_id, &changes).await?;
        Ok(changes.len())
    }

    /// Forget the cache (after a rewind rewrote files): the next turn starts afresh.
    pub async fn forget(&self) {
        *self.cache.lock().await = None;
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walk for stats, read what moved, store its blobs; the new cache and, per changed path
    /// (relative), the hash it had before.
    async fn update(
        &self,
        mut cache: HashMap<PathBuf, Entry>,
        store: &Store,
    ) -> Result<(HashMap<PathBuf, Entry>, Vec<(String, Option<String>)>), CheckpointError> {
        let root = self.root.clone();
        let known: HashMap<PathBuf, Stat> = cache
            .iter()
            .map(|(p, e)| (p.clone(), e.stat.clone()))
            .collect();
        let (reads, gone) = tokio::task::spawn_blocking(move || scan_changes(&root, &known))
            .await
            .map_err(|e| CheckpointError::Walk(e.to_string()))?;
        for chunk in reads.chunks(BLOB_BATCH) {
            let batch: Vec<(&str, &[u8])> = chunk
                .iter()
                .map(|r| (r.hash.as_str(), r.data.as_slice()))
                .collect();
            store.put_blobs(&batch).await?;
        }
        let mut changes = Vec::new();
        for read in reads {
            let before = cache.get(&read.path).map(|e| e.hash.clone());
            if before.as_deref() != Some(read.hash.as_str()) {
                changes.push((rel(&read.path), before));
            }
            cache.insert(
                read.path,
                Entry {
                    stat: read.stat,
                    hash: read.hash,
                },
            );
        }
        for path in gone {
            if let Some(entry) = cache.remove(&path) {
                changes.push((rel(&path), Some(entry.hash)));
            }
        }
        Ok((cache, changes))
    }
}

fn rel(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The files whose stat differs from `known` (read and hashed), and those that are gone.
fn scan_changes(root: &Path, known: &HashMap<PathBuf, Stat>) -> (Vec<Read>, Vec<PathBuf>) {
    let mut seen = std::collections::HashSet::new();
    let mut reads = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.len() > MAX_FILE {
            continue;
        }
        let Ok(path) = entry.path().strip_prefix(root).map(Path::to_path_buf) else {
            continue;
        };
        let mtime = meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        let stat = Stat {
            len: meta.len(),
            mtime,
        };
        seen.insert(path.clone());
        if known.get(&path) == Some(&stat) {
            continue;
        }
        let Ok(data) = std::fs::read(entry.path()) else {
            continue;
        };
        let hash = format!("{:x}", sha2::Sha256::digest(&data));
        reads.push(Read {
            path,
            stat,
            hash,
            data,
        });
    }
    let gone = known
        .keys()
        .filter(|p| !seen.contains(*p))
        .cloned()
        .collect();
    (reads, gone)
}

/// Put the files changed since `from_turn` back as they were before it. Returns how many
/// files were restored or removed.
pub async fn restore(
    root: &Path,
    store: &Store,
    session_id: &str,
    from_turn: u32,
) -> Result<usize, CheckpointError> {
    let changes = store.changes_since(session_id, from_turn).await?;
    let mut touched = std::collections::BTreeSet::new();
    for change in changes {
        let path = root.join(&change.path);
        match &change.before {
            Some(hash) => {
                let data = store
                    .blob(hash)
                    .await?
                    .ok_or_else(|| CheckpointError::Missing(change.path.clone()))?;
                if let Some(dir) = path.parent() {
                    tokio::fs::create_dir_all(dir).await.map_err(io(dir))?;
                }
                tokio::fs::write(&path, data).await.map_err(io(&path))?;
            }
            None => match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&path)(e)),
            },
        }
        touched.insert(change.path);
    }
    Ok(touched.len())
}
