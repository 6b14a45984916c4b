//! The daemon's servers: one per folder and configuration, shared by that folder's
//! sessions, started in the background so a turn that does not use them never waits, started
//! again with backoff when one fails or dies, and stopped when idle: after the idle timeout,
//! and at once when more servers are idle than the cap allows, the least recently used first
//! (a daemon that served many folders would otherwise hold a server for each).
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
/// Letting go of them is their last use, and may stop servers past the idle cap.
pub struct Servers {
    pub slots: Vec<Slot>,
    leases: Vec<Arc<()>>,
    pool: Pool,
}

impl Drop for Servers {
    fn drop(&mut self) {
        // In use until now: a turn that ran an hour without a call did use its servers.
        for slot in &self.slots {
            if let State::Ready(server) = &*slot.state.borrow() {
                server.touch();
            }
        }
        self.leases.clear();
        self.pool.stop_over_cap();
    }
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

/// How many servers may keep running while no turn uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleCap {
    /// The user's, across every folder of the daemon.
    pub daemon: usize,
    /// The folder's: a project may lower the user's for its own servers.
    pub folder: usize,
}

impl Default for IdleCap {
    fn default() -> IdleCap {
        let n = usize::try_from(stepper_engine::config::DEFAULT_MCP_MAX_IDLE_SERVERS)
            .unwrap_or(usize::MAX);
        IdleCap {
            daemon: n,
            folder: n,
        }
    }
}

/// A server running now, as `mcp/running` shows it.
pub struct Running {
    pub cwd: PathBuf,
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// A turn or a listing holds it.
    pub in_use: bool,
    /// Since its last use (zero while in use).
    pub idle_for: Duration,
    pub server: Arc<McpServer>,
}

/// A server stopped while idle, until it is used again: for `mcp/list`.
pub struct Stopped {
    /// The tools it listed last (as kept on disk).
    pub tools: Vec<Tool>,
    /// Why it was stopped.
    pub why: String,
}

#[derive(Default)]
struct Entries {
    live: HashMap<String, Entry>,
    /// Why each server stopped while idle is not running, by key, until a turn uses it (its
    /// tools are on disk: a daemon that served many folders keeps a line for each, no more).
    stopped: HashMap<String, String>,
    /// The user's cap, as the last turn's settings had it.
    max_idle: IdleCap,
}

struct Entry {
    name: String,
    cwd: PathBuf,
    transport: &'static str,
    /// The folder's idle cap, as its last turn's settings had it.
    folder_cap: usize,
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

impl Entry {
    /// A turn or a listing holds it.
    fn in_use(&self) -> bool {
        Arc::strong_count(&self.leases) > 1
    }

    /// Its server, when it runs and no turn holds it.
    fn idle_server(&self) -> Option<Arc<McpServer>> {
        if self.in_use() {
            return None;
        }
        match &*self.state.borrow() {
            State::Ready(server) if server.is_alive() => Some(Arc::clone(server)),
            _ => None,
        }
    }
}

#[derive(Clone, Default)]
pub struct Pool {
    entries: Arc<Mutex<Entries>>,
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
        entries
            .live
            .retain(|key, e| !(key.starts_with(&prefix) && e.name == name));
        entries
            .stopped
            .retain(|key, _| !(key.starts_with(&prefix) && server_name(key) == Some(name)));
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
    /// are started (in the background; a failed one once its backoff has passed). `cap` is
    /// the idle cap the turn's settings give, the user's for every folder from now on.
    pub fn session(&self, cwd: &Path, specs: &[ServerSpec], env: &Env, cap: IdleCap) -> Servers {
        let servers = self.take(cwd, specs, env, cap);
        // A lower cap applies at once.
        self.stop_over_cap();
        servers
    }

    fn take(&self, cwd: &Path, specs: &[ServerSpec], env: &Env, cap: IdleCap) -> Servers {
        let mut guard = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Entries {
            live: entries,
            stopped,
            max_idle,
        } = &mut *guard;
        *max_idle = cap;
        let now = Instant::now();
        let mut slots = Vec::new();
        let mut leases = Vec::new();
        for spec in specs {
            let key = entry_key(cwd, spec);
            stopped.remove(&key);
            let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
                name: spec.name.clone(),
                cwd: cwd.to_path_buf(),
                transport: spec.transport.word(),
                folder_cap: cap.folder,
                state: watch::channel(State::Starting).0,
                known: self.cached_tools(&key),
                failures: 0,
                retry_at: now,
                since: now,
                generation: 0,
                leases: Arc::new(()),
            });
            entry.folder_cap = cap.folder;
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
            leases,
            pool: self.clone(),
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
            pool.settle_start(&key, generation, &spec, &cwd, result);
            // A server whose turn ended while it started is idle from the start.
            pool.stop_over_cap();
        });
    }

    /// The outcome of a start, in its entry if no newer start began.
    fn settle_start(
        &self,
        key: &str,
        generation: u64,
        spec: &ServerSpec,
        cwd: &Path,
        result: Result<Arc<McpServer>, crate::McpError>,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = entries
            .live
            .get_mut(key)
            .filter(|e| e.generation == generation)
        else {
            return;
        };
        let now = Instant::now();
        entry.since = now;
        match result {
            Ok(server) => {
                tracing::info!(server = %spec.name, tools = server.tools().len(), version = %server.protocol_version, "MCP server started");
                let tools = server.tools();
                self.keep_tools(key, &tools);
                entry.known = Some(tools);
                self.set(cwd, entry, State::Ready(server));
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
                self.set(cwd, entry, State::Failed(why));
            }
        }
    }

    /// Stop the servers no turn has used for `idle` (a failed one is forgotten, so the next
    /// turn tries it afresh). Returns how many were stopped.
    pub fn reap(&self, idle: Duration) -> usize {
        let why = format!(
            "no turn used it for {} (STEPPER_MCP_IDLE_MS) — it starts again at the next turn \
             here",
            spoken(idle)
        );
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let timed_out: Vec<(String, String)> = entries
            .live
            .iter()
            .filter(|(_, entry)| !entry.in_use())
            .filter(|(_, entry)| match &*entry.state.borrow() {
                State::Ready(server) => server.idle_for() >= idle,
                State::Failed(_) => entry.since.elapsed() >= idle,
                State::Starting => false,
            })
            .map(|(key, _)| (key.clone(), why.clone()))
            .collect();
        let stopped = stop(&mut entries, timed_out);
        drop(entries);
        let count = stopped.len();
        if count > 0 {
            tracing::info!(stopped = count, "idle MCP servers stopped");
        }
        // Their processes are killed as they drop, outside the lock.
        drop(stopped);
        count
    }

    /// Stop the idle servers past the cap, the least recently used first: each stays only
    /// while fewer servers than its cap (the user's, or its folder's when lower) were used
    /// after it and stay. A server a turn holds is never stopped. Returns how many were.
    pub fn stop_over_cap(&self) -> usize {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let daemon = entries.max_idle.daemon;
        let idle: Vec<(&String, Instant, usize)> = entries
            .live
            .iter()
            .filter_map(|(key, entry)| {
                let server = entry.idle_server()?;
                Some((key, server.last_used(), entry.folder_cap.min(daemon)))
            })
            .collect();
        let uses: Vec<(Instant, usize)> = idle.iter().map(|(_, at, cap)| (*at, *cap)).collect();
        let over: Vec<(String, String)> = over_cap(&uses)
            .into_iter()
            .map(|i| {
                let (key, _, cap) = idle[i];
                let why = format!(
                    "more MCP servers were idle than mcpMaxIdleServers allows ({cap}), and those \
                     used after it stay — it starts again at the next turn here"
                );
                (key.clone(), why)
            })
            .collect();
        if over.is_empty() {
            return 0;
        }
        let stopped = stop(&mut entries, over);
        drop(entries);
        let count = stopped.len();
        tracing::info!(
            stopped = count,
            cap = daemon,
            "MCP servers stopped: more were idle than the cap"
        );
        drop(stopped);
        count
    }

    /// The servers running for `cwd` now, by name.
    pub fn running_in(&self, cwd: &Path) -> Vec<(String, Arc<McpServer>)> {
        let mut running: Vec<(String, Arc<McpServer>)> = self
            .running()
            .into_iter()
            .filter(|r| r.cwd == cwd)
            .map(|r| (r.name, r.server))
            .collect();
        running.sort_by(|a, b| a.0.cmp(&b.0));
        running
    }

    /// Every server running now, of every folder: those in use first, then the most recently
    /// used.
    pub fn running(&self) -> Vec<Running> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut running: Vec<Running> = entries
            .live
            .values()
            .filter_map(|e| match &*e.state.borrow() {
                State::Ready(server) if server.is_alive() => {
                    let in_use = e.in_use();
                    Some(Running {
                        cwd: e.cwd.clone(),
                        name: e.name.clone(),
                        transport: e.transport,
                        in_use,
                        idle_for: if in_use {
                            Duration::ZERO
                        } else {
                            server.idle_for()
                        },
                        server: Arc::clone(server),
                    })
                }
                _ => None,
            })
            .collect();
        running.sort_by_key(|r| (!r.in_use, r.idle_for));
        running
    }

    /// Whether the server of `spec` for `cwd` was stopped while idle and is not running
    /// (until a turn uses it): what it listed last, and why it stopped.
    pub fn stopped(&self, cwd: &Path, spec: &ServerSpec) -> Option<Stopped> {
        let key = entry_key(cwd, spec);
        let why = {
            let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            entries.stopped.get(&key).cloned()?
        };
        Some(Stopped {
            tools: self.cached_tools(&key).unwrap_or_default(),
            why,
        })
    }
}

/// The pool's key of a server: its folder and configuration.
fn entry_key(cwd: &Path, spec: &ServerSpec) -> String {
    format!("{}\u{0}{}", cwd.display(), spec.key())
}

/// The server's name in a key (the configuration's key starts with it).
fn server_name(key: &str) -> Option<&str> {
    key.split('\u{0}').nth(1)
}

/// Take the entries of `keys` out of the pool, each running one remembered as stopped, with
/// why; dropping what is returned stops their servers.
fn stop(entries: &mut Entries, keys: Vec<(String, String)>) -> Vec<Entry> {
    let mut taken = Vec::new();
    for (key, why) in keys {
        let Some(entry) = entries.live.remove(&key) else {
            continue;
        };
        // One that died is not "stopped": the next listing starts it, and says how that went.
        if let State::Ready(server) = &*entry.state.borrow()
            && server.is_alive()
        {
            entries.stopped.insert(key, why);
        }
        taken.push(entry);
    }
    taken
}

/// Which idle servers to stop, given each as (last use, its cap): by index. Walking from the
/// most recently used, a server stays while fewer than its cap stay before it. With one cap
/// for all, the `cap` most recently used stay; a folder with a lower cap keeps fewer of its
/// own without taking room from the others.
fn over_cap(idle: &[(Instant, usize)]) -> Vec<usize> {
    let mut newest_first: Vec<usize> = (0..idle.len()).collect();
    newest_first.sort_by(|&a, &b| idle[b].0.cmp(&idle[a].0));
    let mut staying = 0;
    let mut stop = Vec::new();
    for i in newest_first {
        if staying < idle[i].1 {
            staying += 1;
        } else {
            stop.push(i);
        }
    }
    stop.sort_unstable();
    stop
}

/// A duration as people say it: `90 s`, `10 min`, `2 h`.
fn spoken(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 120 {
        format!("{} s", secs.max(1))
    } else if secs < 2 * 3600 {
        format!("{} min", secs / 60)
    } else {
        format!("{} h", secs / 3600)
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

    fn at(secs: u64) -> Instant {
        // A base far enough from boot that every test time is a real Instant.
        static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *BASE.get_or_init(Instant::now) + Duration::from_secs(secs)
    }

    #[test]
    fn the_least_recently_used_stop_first() {
        // Used at 4, 1, 3, 2: with room for two, those used at 1 and 2 stop.
        let idle = [(at(4), 2), (at(1), 2), (at(3), 2), (at(2), 2)];
        assert_eq!(over_cap(&idle), [1, 3]);
        // Under the cap, or at it, none stops; a cap of nothing stops every idle one.
        assert_eq!(over_cap(&idle[..2]), Vec::<usize>::new());
        assert_eq!(over_cap(&[]), Vec::<usize>::new());
        let none = [(at(2), 0), (at(1), 0)];
        assert_eq!(over_cap(&none), [0, 1]);
    }

    #[test]
    fn a_folder_with_a_lower_cap_keeps_fewer_of_its_own() {
        // The newest (cap 1) stays; the next of a folder with cap 1 has one before it: it
        // stops, and takes no room from the older servers of cap 3.
        let idle = [(at(10), 1), (at(9), 1), (at(8), 3), (at(7), 3), (at(6), 3)];
        assert_eq!(over_cap(&idle), [1, 4]);
    }

    #[test]
    fn durations_are_said_as_people_say_them() {
        assert_eq!(spoken(Duration::from_millis(1500)), "1 s");
        assert_eq!(spoken(Duration::from_secs(600)), "10 min");
        assert_eq!(spoken(Duration::from_secs(3 * 3600)), "3 h");
    }

    #[test]
    fn backoff_doubles_to_a_minute() {
        let secs: Vec<u64> = (1..=10).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
