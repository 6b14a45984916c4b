//! The daemon's servers: one per folder and configuration, shared by that folder's
//! sessions, started in the background so a turn that does not use them never waits, started
//! again with backoff when one fails or dies, and stopped when idle.
//!
//! A turn takes a [`Servers`]: slots whose tools are re-read before every model call. A
//! server that is starting lends the tools it listed when it last ran — kept on disk, so
//! also across daemon restarts — and a call to one of them waits for it. Only a server never
//! seen before is waited for (the model should see its tools from the first call on).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::Tool;
use stepper_protocol::session::Env;
use tokio::sync::watch;

use crate::config::ServerSpec;
use crate::server::McpServer;

/// Where a server is.
#[derive(Clone)]
pub enum State {
    Starting,
    Ready(Arc<McpServer>),
    /// Why it is not running.
    Failed(String),
}

/// What the pool says when a server's state changes: its folder, name and new state.
pub type StatusHook = Arc<dyn Fn(&Path, &str, &State) + Send + Sync>;

/// A turn's handle on one server.
#[derive(Clone)]
pub struct Slot {
    pub name: String,
    state: watch::Receiver<State>,
    /// The tools it listed when it last ran, lent while it starts again.
    known: Option<Vec<Tool>>,
    /// This is the server's first start: a turn waits for it.
    first: bool,
}

impl Slot {
    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// The server, once it runs (waiting at most `timeout` while it starts).
    pub async fn server(&self, timeout: Duration) -> Result<Arc<McpServer>, String> {
        let mut state = self.state.clone();
        let settled =
            tokio::time::timeout(timeout, state.wait_for(|s| !matches!(s, State::Starting))).await;
        match settled {
            Ok(Ok(s)) => match &*s {
                State::Ready(server) => Ok(Arc::clone(server)),
                State::Failed(why) => Err(format!("MCP server {:?}: {why}", self.name)),
                State::Starting => Err(format!("MCP server {:?} is starting", self.name)),
            },
            Ok(Err(_)) => Err(format!("MCP server {:?} was stopped", self.name)),
            Err(_) => Err(format!(
                "MCP server {:?} did not start within {} ms",
                self.name,
                timeout.as_millis()
            )),
        }
    }

    /// The tools the model may call now: the running server's, or those it listed last
    /// while it starts again.
    pub fn tools(&self) -> Vec<Tool> {
        match &*self.state.borrow() {
            State::Ready(server) => server.tools(),
            State::Starting => self.known.clone().unwrap_or_default(),
            State::Failed(_) => Vec::new(),
        }
    }
}

/// The servers a turn (or a listing) uses, held while it runs: a held server is not idle.
pub struct Servers {
    pub slots: Vec<Slot>,
    _leases: Vec<Arc<()>>,
}

impl Servers {
    /// Wait (at most `timeout`) for the servers on their first start.
    pub async fn settle(&self, timeout: Duration) {
        let waits = self
            .slots
            .iter()
            .filter(|s| s.first)
            .map(|s| s.server(timeout));
        futures::future::join_all(waits).await;
    }

    /// Why some of the servers' tools are missing, for notices.
    pub fn notices(&self) -> Vec<String> {
        let mut notices = Vec::new();
        for slot in &self.slots {
            match slot.state() {
                State::Failed(why) => notices.push(format!(
                    "MCP server {:?}: {why} — its tools are left out",
                    slot.name
                )),
                State::Starting if slot.known.is_none() => notices.push(format!(
                    "MCP server {:?} is still starting: its tools join once it answers",
                    slot.name
                )),
                _ => {}
            }
        }
        notices
    }
}

struct Entry {
    name: String,
    state: watch::Sender<State>,
    known: Option<Vec<Tool>>,
    /// Failures in a row (a start that failed, or a server that died within a minute).
    failures: u32,
    /// No new start before this.
    retry_at: Instant,
    /// When it last started or failed.
    since: Instant,
    /// Which start the state belongs to: a start that finishes after another began is
    /// dropped.
    generation: u64,
    leases: Arc<()>,
}

#[derive(Clone, Default)]
pub struct Pool {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    hook: Option<StatusHook>,
    /// Where each server's last tool list is kept (by a hash of its folder and
    /// configuration, which may hold secrets).
    cache: Option<PathBuf>,
    /// Remote servers' sign-ins.
    tokens: Option<crate::oauth::TokenFile>,
}

impl Pool {
    /// A pool that tells `hook` each state change.
    pub fn with_hook(mut self, hook: StatusHook) -> Pool {
        self.hook = Some(hook);
        self
    }

    /// A pool whose remote servers sign their requests with the tokens `tokens` holds.
    pub fn with_tokens(mut self, tokens: crate::oauth::TokenFile) -> Pool {
        self.tokens = Some(tokens);
        self
    }

    pub fn tokens(&self) -> Option<&crate::oauth::TokenFile> {
        self.tokens.as_ref()
    }

    /// Start `name` of `cwd` afresh at its next use (after a sign-in, say): its failures and
    /// backoff are forgotten.
    pub fn restart(&self, cwd: &Path, name: &str) {
        let prefix = format!("{}\u{0}", cwd.display());
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|key, e| !(key.starts_with(&prefix) && e.name == name));
    }

    /// A pool that keeps servers' tool lists in `dir`.
    pub fn with_cache(mut self, dir: PathBuf) -> Pool {
        self.cache = Some(dir);
        self
    }

    fn cache_file(&self, key: &str) -> Option<PathBuf> {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(key.as_bytes());
        let name: String = hash[..12].iter().map(|b| format!("{b:02x}")).collect();
        Some(self.cache.as_ref()?.join(format!("{name}.json")))
    }

    /// The tools a server listed when it last ran, if kept.
    fn cached_tools(&self, key: &str) -> Option<Vec<Tool>> {
        let text = std::fs::read_to_string(self.cache_file(key)?).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn keep_tools(&self, key: &str, tools: &[Tool]) {
        let Some(path) = self.cache_file(key) else {
            return;
        };
        let Ok(text) = serde_json::to_string(tools) else {
            return;
        };
        let tmp = path.with_extension("tmp");
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&tmp, text))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::debug!("could not keep an MCP server's tool list: {e}");
        }
    }

    /// The servers of `specs` for a turn in `cwd` with the session's `env`: those not running
    /// are started (in the background; a failed one once its backoff has passed).
    pub fn session(&self, cwd: &Path, specs: &[ServerSpec], env: &Env) -> Servers {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let mut slots = Vec::new();
        let mut leases = Vec::new();
        for spec in specs {
            let key = format!("{}\u{0}{}", cwd.display(), spec.key());
            let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
                name: spec.name.clone(),
                state: watch::channel(State::Starting).0,
                known: self.cached_tools(&key),
                failures: 0,
                retry_at: now,
                since: now,
                generation: 0,
                leases: Arc::new(()),
            });
            let current = entry.state.borrow().clone();
            let start = match current {
                State::Ready(server) if server.is_alive() => {
                    server.touch();
                    false
                }
                State::Ready(server) => {
                    // It died: a server that ran a minute counts as a fresh failure.
                    entry.known = Some(server.tools());
                    entry.failures = if entry.since.elapsed() < Duration::from_secs(60) {
                        entry.failures + 1
                    } else {
                        1
                    };
                    entry.retry_at = now + backoff(entry.failures);
                    entry.since = now;
                    let why = "it exited".to_string();
                    self.set(cwd, entry, State::Failed(why));
                    now >= entry.retry_at
                }
                State::Failed(_) => now >= entry.retry_at,
                // A new entry starts; one already starting is left to finish.
                State::Starting => entry.generation == 0,
            };
            let first = entry.known.is_none() && entry.failures == 0;
            if start {
                entry.generation += 1;
                self.set(cwd, entry, State::Starting);
                self.start(key, entry.generation, spec.clone(), env.clone(), cwd);
            }
            slots.push(Slot {
                name: spec.name.clone(),
                state: entry.state.subscribe(),
                known: entry.known.clone(),
                first,
            });
            leases.push(Arc::clone(&entry.leases));
        }
        Servers {
            slots,
            _leases: leases,
        }
    }

    fn set(&self, cwd: &Path, entry: &Entry, state: State) {
        if let Some(hook) = &self.hook {
            hook(cwd, &entry.name, &state);
        }
        entry.state.send_replace(state);
    }

    /// Connect in the background; the outcome lands in the entry if no newer start began.
    fn start(&self, key: String, generation: u64, spec: ServerSpec, env: Env, cwd: &Path) {
        let pool = self.clone();
        let cwd: PathBuf = cwd.to_path_buf();
        tokio::spawn(async move {
            let result = McpServer::connect_signed(
                &spec,
                &env,
                &cwd,
                crate::connect_timeout(),
                pool.tokens.as_ref(),
            )
            .await;
            let mut entries = pool.entries.lock().unwrap_or_else(|p| p.into_inner());
            let Some(entry) = entries.get_mut(&key).filter(|e| e.generation == generation) else {
                return;
            };
            let now = Instant::now();
            entry.since = now;
            match result {
                Ok(server) => {
                    tracing::info!(server = %spec.name, tools = server.tools().len(), version = %server.protocol_version, "MCP server started");
                    let tools = server.tools();
                    pool.keep_tools(&key, &tools);
                    entry.known = Some(tools);
                    pool.set(&cwd, entry, State::Ready(server));
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    entry.failures += 1;
                    entry.retry_at = now + backoff(entry.failures);
                    let mut why = e.message;
                    let wait = entry.retry_at.saturating_duration_since(now);
                    if !wait.is_zero() {
                        why.push_str(&format!(
                            " (tried {} times; next try in {} s)",
                            entry.failures,
                            wait.as_secs().max(1)
                        ));
                    }
                    pool.set(&cwd, entry, State::Failed(why));
                }
            }
        });
    }

    /// Stop the servers no turn has used for `idle` (a failed one is forgotten, so the next
    /// turn tries it afresh). Returns how many were stopped.
    pub fn reap(&self, idle: Duration) -> usize {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let before = entries.len();
        entries.retain(|_, entry| {
            if Arc::strong_count(&entry.leases) > 1 {
                return true;
            }
            match &*entry.state.borrow() {
                State::Ready(server) => server.idle_for() < idle,
                State::Failed(_) => entry.since.elapsed() < idle,
                State::Starting => true,
            }
        });
        let stopped = before - entries.len();
        if stopped > 0 {
            tracing::info!(stopped, "idle MCP servers stopped");
        }
        stopped
    }

    /// The servers running for `cwd` now, by name.
    pub fn running_in(&self, cwd: &Path) -> Vec<(String, Arc<McpServer>)> {
        let prefix = format!("{}\u{0}", cwd.display());
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut running: Vec<(String, Arc<McpServer>)> = entries
            .iter()
            .filter(|(key, _)| key.starts_with(&prefix))
            .filter_map(|(_, e)| match &*e.state.borrow() {
                State::Ready(server) if server.is_alive() => {
                    Some((e.name.clone(), Arc::clone(server)))
                }
                _ => None,
            })
            .collect();
        running.sort_by(|a, b| a.0.cmp(&b.0));
        running
    }
}

/// How long to wait before the next start after `failures` in a row: at once after the
/// first, then 1 s, doubling up to a minute.
fn backoff(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let secs = 1u64 << (failures - 2).min(6);
    Duration::from_secs(secs.min(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute() {
        let secs: Vec<u64> = (1..=10).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
