//! The session hub: live sessions, their logs and their turns.

pub mod approvals;
pub mod checkpoint;
pub mod log;
pub mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use stepper_engine::config::PermissionMode;
use stepper_protocol::session::{Env, SessionId, SessionInfo};
use stepper_protocol::{AppEvent, TurnStatus};

pub use log::{EventLog, LogError, Published};
pub use session::{HubDeps, LiveSession, SubmitError, persistable_env};

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("no session {0} — 'stepper sessions' lists them")]
    NotFound(SessionId),
    #[error(transparent)]
    Store(#[from] stepper_store::StoreError),
}

/// Live sessions by id. A session is loaded from the store on first use and stays live
/// while the daemon runs.
pub struct Hub {
    deps: HubDeps,
    /// How far each open subscription has delivered.
    pub deliveries: Arc<Deliveries>,
    live: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
}

impl Hub {
    pub fn new(deps: HubDeps) -> Hub {
        Hub {
            deps,
            deliveries: Arc::default(),
            live: Mutex::new(HashMap::new()),
        }
    }

    pub fn deps(&self) -> &HubDeps {
        &self.deps
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<LiveSession>>> {
        // Holds only Arcs: a panic elsewhere cannot leave the map inconsistent.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a session just created with the full environment of its client.
    pub fn adopt(
        &self,
        info: &SessionInfo,
        env: Env,
        record: Option<PathBuf>,
        mode: Option<PermissionMode>,
    ) -> Arc<LiveSession> {
        let session = LiveSession::start(info, env, record, mode, &self.deps);
        self.live().insert(info.id.clone(), Arc::clone(&session));
        session
    }

    /// The live session, loading it from the store if needed.
    pub async fn get(&self, id: &str) -> Result<Arc<LiveSession>, HubError> {
        if let Some(s) = self.live().get(id) {
            return Ok(Arc::clone(s));
        }
        let info = self
            .deps
            .store
            .session(id)
            .await?
            .ok_or_else(|| HubError::NotFound(id.into()))?;
        let env = self.deps.store.session_env(id).await?;
        // Another caller may have loaded it meanwhile: the first one in wins, so a session
        // never has two writers.
        let mut live = self.live();
        if let Some(s) = live.get(id) {
            return Ok(Arc::clone(s));
        }
        let session = LiveSession::start(&info, env, None, None, &self.deps);
        live.insert(id.to_string(), Arc::clone(&session));
        Ok(session)
    }

    /// Forget a live session (after it was deleted).
    pub fn forget(&self, id: &str) {
        self.live().remove(id);
    }

    pub fn live_count(&self) -> usize {
        self.live().len()
    }

    /// Interrupt every running turn (shutdown, after the grace period).
    pub fn interrupt_all(&self) -> usize {
        self.live().values().filter(|s| s.interrupt()).count()
    }

    /// Commit everything queued in every live session.
    pub async fn flush_all(&self) -> HashMap<SessionId, u64> {
        let sessions: Vec<_> = self.live().values().cloned().collect();
        let mut last = HashMap::new();
        for s in sessions {
            match s.log.flush().await {
                Ok(seq) => {
                    last.insert(s.id.clone(), seq);
                }
                Err(e) => tracing::error!(session = %s.id, error = %e, "flush at shutdown failed"),
            }
        }
        last
    }

    /// Drop every live session so their writers and actors can finish.
    pub fn clear(&self) {
        self.live().clear();
    }

    /// After an unclean stop: turns the log says are running died with the old daemon.
    /// Each ends as interrupted, which the next client sees.
    pub async fn recover_interrupted(&self) -> Result<usize, HubError> {
        let running = self.deps.store.running_sessions().await?;
        for info in &running {
            let session = self.get(&info.id).await?;
            let finished = AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: Some(
                    "the daemon stopped while this turn was running — submit again to continue"
                        .into(),
                ),
            };
            let turn = Some(info.turns).filter(|t| *t > 0);
            if let Err(e) = session.log.append_committed(turn, finished).await {
                tracing::error!(session = %info.id, error = %e, "cannot mark turn interrupted");
            }
            tracing::info!(session = %info.id, turn = info.turns, "marked interrupted turn");
        }
        Ok(running.len())
    }
}

/// How far each open subscription has sent its session's events, so that a stopping daemon
/// lets every client receive the end of its turn before the connections close.
#[derive(Default)]
pub struct Deliveries {
    next: std::sync::atomic::AtomicU64,
    open: Mutex<HashMap<u64, (SessionId, u64)>>,
}

/// One subscription's entry; removed when dropped.
pub struct Delivery {
    id: u64,
    registry: Arc<Deliveries>,
}

impl Deliveries {
    fn open_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SessionId, u64)>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn open(self: &Arc<Self>, session_id: &str) -> Delivery {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.open_map().insert(id, (session_id.to_string(), 0));
        Delivery {
            id,
            registry: Arc::clone(self),
        }
    }

    /// Wait until every open subscription has sent its session up to `targets` (or
    /// `timeout`: a stalled client is not waited for).
    pub async fn wait_delivered(
        &self,
        targets: &HashMap<SessionId, u64>,
        timeout: std::time::Duration,
    ) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let behind = self
                .open_map()
                .values()
                .filter(|(session, seq)| targets.get(session).is_some_and(|t| seq < t))
                .count();
            if behind == 0 || tokio::time::Instant::now() >= deadline {
                if behind > 0 {
                    tracing::warn!(
                        behind,
                        "some subscribers had not received everything at shutdown"
                    );
                }
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

impl Delivery {
    pub fn delivered(&self, seq: u64) {
        if let Some(entry) = self.registry.open_map().get_mut(&self.id) {
            entry.1 = seq;
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.registry.open_map().remove(&self.id);
    }
}
