//! The daemon: its parts started from one place, sharing one handle and one shutdown signal.
//!
//! Start: lock the data dir, open the store (rebuilding it when damaged), end turns a crash
//! left running, bind the socket.
//! Stop (SIGTERM, SIGINT or `daemon/shutdown`): stop accepting, give running turns a grace
//! period, interrupt the rest, commit every log, close connections, remove the socket.
//!
//! *A daemon started by a client says when it is ready*: one line `ready SOCKET` on stdout, which
//! the client reads instead of polling every 10 ms (polling stays as the fallback).
//!
//! Before any child exists the daemon makes itself a child subreaper and installs the reaper
//! commands run under (`stepper_process::lineage`, `reaper`), so whatever it starts stays beneath
//! it. The accept loop checks each peer's uid and lineage (`admit`): a peer that descends from the
//! daemon (a tool's command, a hook, an MCP server, a back-end) is served only refusals
//! (`rpc::refused`). A task kills what is re-parented to the daemon at each SIGCHLD
//! (`lineage::reap_adopted`), and the stop ends by killing whatever is still beneath the daemon
//! (`lineage::kill_all`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::Context;
use stepper_protocol::PROTOCOL_VERSION;
use stepper_protocol::methods::{DaemonInfoResponse, LoginEnvInfo, LoginEnvState};
use stepper_protocol::places::Places;
use stepper_protocol::server::{
    Accepted, ConnectionServer, LocalListener, StopHandle, stop_channel,
};
use stepper_providers::Providers;
use stepper_store::now_ms;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::Logins;
use crate::hub::{Hub, HubDeps};
use crate::lock::DataDirLock;
use crate::rpc;

/// The shared handle every connection holds.
pub struct Daemon {
    /// This process's executable and its build, recorded at start.
    pub executable: Option<(String, String)>,
    pub hub: Hub,
    pub logins: Logins,
    pub places: Places,
    pub started_at: i64,
    pub shutdown: CancellationToken,
    /// The session store as it was found at start, and what every client is told of it.
    pub store: crate::store_health::StoreReport,
    clients: AtomicU32,
}

impl Daemon {
    pub fn info(&self) -> DaemonInfoResponse {
        DaemonInfoResponse {
            version: env!("CARGO_PKG_VERSION").into(),
            protocol_version: PROTOCOL_VERSION,
            pid: std::process::id(),
            started_at: self.started_at,
            data_dir: self.places.data_dir.display().to_string(),
            socket: self.places.socket.display().to_string(),
            live_sessions: u32::try_from(self.hub.live_count()).unwrap_or(u32::MAX),
            running_turns: u32::try_from(*self.hub.deps().running.borrow()).unwrap_or(u32::MAX),
            clients: self.clients.load(Ordering::Relaxed),
            login_env: Some(self.hub.deps().login_env_info.get().cloned().unwrap_or(
                LoginEnvInfo {
                    state: LoginEnvState::Pending,
                    shell: None,
                    variables: 0,
                    error: None,
                },
            )),
            store: Some(self.store.info.clone()),
        }
    }
}

/// How long shutdown waits for running turns before interrupting them.
fn grace_period() -> Duration {
    std::env::var("STEPPER_SHUTDOWN_GRACE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(5))
}

/// Run the daemon until it is told to stop. `lock` proves this process owns the data dir.
pub async fn run(places: Places, lock: DataDirLock) -> anyhow::Result<()> {
    // Before any child exists: what a command starts stays beneath the daemon (so a client
    // descending from a tool call is known as such, and what a killed reaper leaves comes
    // back here to be killed), and every command runs under a reaper.
    stepper_process::lineage::become_subreaper()
        .context("becoming a child subreaper (PR_SET_CHILD_SUBREAPER)")?;
    let (reaper, prefix) = reaper_helper();
    stepper_process::reaper::install(&reaper, prefix);
    let adoptions = tokio::spawn(watch_adoptions());
    // A damaged store is rebuilt here and told about, rather than stopping the daemon.
    let (store, store_report) = crate::store_health::open(&places).await?;
    let providers = Providers::new(places.data_dir.join("credentials.json"))?;
    let tasks = TaskTracker::new();
    let (running, _) = watch::channel(0usize);
    let shutdown = CancellationToken::new();
    let logins = Logins::new(
        providers.http().clone(),
        providers.credentials_path().to_path_buf(),
        shutdown.clone(),
    );
    // MCP servers no turn used for a while are stopped; their state changes go to the
    // sessions of their folder (below, once the hub exists).
    let (mcp_states, mut mcp_changes) = tokio::sync::mpsc::unbounded_channel();
    let mcp = std::sync::Arc::new(crate::hub::mcp::McpPool::new(
        places.config_dir.clone(),
        stepper_mcp::Pool::default()
            .with_cache(places.data_dir.join("mcp-tools"))
            .with_tokens(stepper_mcp::oauth::token_file(&places.data_dir))
            .with_hook(crate::hub::mcp::status_hook(mcp_states)),
    ));
    let mcp_reaper = mcp.reap_idle();
    let hub = Hub::new(HubDeps {
        store: store.clone(),
        providers,
        running,
        tasks: tasks.clone(),
        settings: std::sync::Arc::new(crate::hub::SettingsCache::new(places.config_dir.clone())),
        login_env: Default::default(),
        login_env_info: Default::default(),
        tools: stepper_tools::all(),
        shutdown: shutdown.clone(),
        sandboxes: std::sync::Arc::new(crate::hub::sandbox::Sandboxes::new(&places)),
        extensions: std::sync::Arc::new(crate::hub::extensions::ExtensionsCache::new(
            places.config_dir.clone(),
        )),
        mcp: std::sync::Arc::clone(&mcp),
        transcripts: crate::hub::transcript::Transcripts::new(places.data_dir.join("transcripts")),
    });
    // Children a crashed daemon left running go first: a recovered turn must not meet them.
    let registry = places.data_dir.join("children");
    let orphans = stepper_process::registry::reap_orphans(&registry);
    let killed = orphans.iter().filter(|o| o.killed).count();
    if killed > 0 {
        tracing::warn!(killed, "killed children left running by a previous daemon");
    }
    stepper_process::registry::install(&registry)
        .with_context(|| format!("creating the child registry {}", registry.display()))?;
    // The login shell's environment is read from now on, off every turn's path: a session
    // whose client sent its environment never waits for it.
    let deps = hub.deps().clone();
    tasks.spawn(async move {
        // A stop meanwhile drops the read, and with it the shell's process group.
        tokio::select! {
            _ = crate::hub::env::login_env(&deps) => {}
            () = deps.shutdown.cancelled() => {}
        }
    });
    let recovered = hub
        .recover_interrupted()
        .await
        .context("recovering interrupted turns")?;
    if recovered > 0 {
        tracing::warn!(
            recovered,
            "turns left running by an unclean stop were marked interrupted"
        );
    }
    let resumed = hub
        .resume_pending()
        .await
        .context("queueing the inputs a previous daemon had not started")?;
    if resumed > 0 {
        tracing::info!(resumed, "queued inputs of a previous daemon will run");
    }

    // Socket activation (systemd) hands the socket over; otherwise bind it.
    let listener = match LocalListener::from_socket_activation(&places.socket)
        .context("taking the socket passed by the service manager")?
    {
        Some(inherited) => inherited,
        None => LocalListener::bind(&places.socket)
            .with_context(|| format!("binding the socket {}", places.socket.display()))?,
    };
    let executable = std::env::current_exe().ok().and_then(|exe| {
        let build = stepper_protocol::places::build_id(&exe).ok()?;
        Some((exe.display().to_string(), build))
    });
    let daemon = Arc::new(Daemon {
        executable,
        hub,
        logins,
        places,
        started_at: now_ms(),
        shutdown,
        store: store_report,
        clients: AtomicU32::new(0),
    });
    let mcp_status = {
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            while let Some((cwd, event)) = mcp_changes.recv().await {
                daemon.hub.mcp_status(&cwd, event).await;
            }
        })
    };
    let sweeper = Arc::clone(&daemon);
    let stopping = daemon.shutdown.clone();
    tasks.spawn(async move {
        let mut sweep = tokio::time::interval(crate::hub::EVICT_SWEEP);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = sweep.tick() => {}
                () = stopping.cancelled() => break,
            }
            let evicted = sweeper.hub.evict_quiescent();
            if evicted > 0 {
                tracing::debug!(evicted, "quiescent sessions left memory");
            }
        }
    });
    let (listener_path, inherited) = (listener.path().to_path_buf(), listener.is_inherited());
    tracing::info!(
        pid = std::process::id(),
        socket = %listener_path.display(),
        activated = inherited,
        lock = %lock.path().display(),
        "stepperd ready"
    );
    // A client that started this daemon reads this line instead of polling the socket.
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "ready {}", listener_path.display());
        let _ = stdout.flush();
    }

    let signals = tokio::spawn(watch_signals(daemon.shutdown.clone()));
    let (stop, server_handle) = stop_channel();
    let connections = TaskTracker::new();
    // Accepting goes on through the grace period, so a client that arrives then is told the
    // daemon is stopping instead of hanging on a socket nobody serves.
    let stop_accepting = CancellationToken::new();
    let acceptor = tokio::spawn(accept_loop(
        listener,
        Arc::clone(&daemon),
        stop,
        connections.clone(),
        stop_accepting.clone(),
    ));

    daemon.shutdown.cancelled().await;
    tracing::info!("shutting down");
    let mut running = daemon.hub.deps().running.subscribe();
    let idle = |n: &usize| *n == 0;
    if tokio::time::timeout(grace_period(), running.wait_for(idle))
        .await
        .is_err()
    {
        let n = daemon
            .hub
            .interrupt_all(stepper_engine::interrupt::Interruption::Shutdown);
        tracing::info!(
            interrupted = n,
            "grace period over; interrupting running turns"
        );
        let _ = tokio::time::timeout(Duration::from_secs(5), running.wait_for(idle)).await;
    }
    let committed = daemon.hub.flush_all().await;
    // Let every client receive the end of its turn before the connections close.
    daemon
        .hub
        .deliveries
        .wait_delivered(&committed, Duration::from_secs(2))
        .await;
    stop_accepting.cancel();
    let listener = acceptor.await;
    let _ = server_handle.stop();
    connections.close();
    if tokio::time::timeout(Duration::from_secs(2), connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close in time");
    }
    daemon.hub.clear();
    tasks.close();
    if tokio::time::timeout(Duration::from_secs(5), tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("some session tasks did not end in time");
    }
    store.close().await;
    signals.abort();
    // The MCP servers stop with the pool.
    mcp_reaper.abort();
    mcp_status.abort();
    drop(mcp);
    // Last, what is still beneath the daemon: children a part failed to stop, and what a
    // killed reaper left (re-parented here). Nothing of a tool call outlives the daemon.
    adoptions.abort();
    let killed =
        tokio::task::spawn_blocking(|| stepper_process::lineage::kill_all(Duration::from_secs(2)))
            .await
            .unwrap_or(0);
    if killed > 0 {
        tracing::info!(killed, "killed processes still beneath the daemon");
    }
    // Dropping the listener removes the socket file.
    drop(listener);
    tracing::info!("stopped");
    drop(lock);
    Ok(())
}

/// Accept connections until told to stop; hands the listener back so the caller decides
/// when the socket goes away.
async fn accept_loop(
    listener: LocalListener,
    daemon: Arc<Daemon>,
    stop: StopHandle,
    connections: TaskTracker,
    stop_accepting: CancellationToken,
) -> LocalListener {
    let server = ConnectionServer::default();
    loop {
        let accepted = tokio::select! {
            () = stop_accepting.cancelled() => return listener,
            a = listener.accept() => a,
        };
        match accepted {
            Ok(Ok(conn)) => {
                let (server, stop, daemon) = (server.clone(), stop.clone(), Arc::clone(&daemon));
                connections.spawn(async move {
                    // A process that descends from the daemon (a tool's command, whatever it
                    // started) is never a client: every call it makes is refused.
                    if let Err(why) = admit(&conn) {
                        tracing::warn!(peer = conn.peer_pid, reason = %why, "connection refused: its process descends from a tool call, or cannot be told not to");
                        server.serve(conn.stream, rpc::refused(why), stop).await;
                        return;
                    }
                    let module = rpc::module(Arc::clone(&daemon), conn.peer_pid);
                    daemon.clients.fetch_add(1, Ordering::Relaxed);
                    server.serve(conn.stream, module, stop).await;
                    daemon.clients.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Ok(Err(refused)) => tracing::warn!(reason = %refused, "connection refused"),
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::error!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The reaper commands run under: `stepperd-reap` beside this executable (it starts in a
/// fraction of the daemon's time, on every command), else this very executable as
/// `stepperd reap` (`/proc/self/exe`: what is on disk may have been replaced since).
fn reaper_helper() -> (std::path::PathBuf, &'static [&'static str]) {
    let beside = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("stepperd-reap"))
        .filter(|p| p.is_file());
    match beside {
        Some(small) => (small, &[]),
        None => (
            std::path::PathBuf::from("/proc/self/exe"),
            &[stepper_process::reaper::HELPER_SUBCOMMAND],
        ),
    }
}

/// Whether the peer of `conn` may be a client: not when its process descends from the daemon
/// (it was started by a tool call), nor when that cannot be told.
fn admit(conn: &Accepted) -> Result<(), crate::rpc::Refusal> {
    use crate::rpc::Refusal;
    use stepper_process::lineage::Peer;
    #[cfg(target_os = "linux")]
    let peer = {
        use std::os::fd::AsFd;
        stepper_process::lineage::peer(conn.peer_pid, conn.peer_pidfd.as_ref().map(|fd| fd.as_fd()))
    };
    #[cfg(not(target_os = "linux"))]
    let peer = stepper_process::lineage::peer(conn.peer_pid);
    match peer {
        Peer::Outside | Peer::Unchecked => Ok(()),
        Peer::Descendant(chain) => Err(Refusal::Descendant(chain)),
        Peer::Unknown(why) => Err(Refusal::Unknown(why)),
    }
}

/// Kill what is re-parented to the daemon without being its own (the orphans of a reaper
/// that was killed), as each child's end is signalled.
async fn watch_adoptions() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut children) = signal(SignalKind::child()) else {
            tracing::error!("cannot listen for SIGCHLD; orphans are killed at turn ends only");
            return;
        };
        while children.recv().await.is_some() {
            let swept = tokio::task::spawn_blocking(stepper_process::lineage::reap_adopted)
                .await
                .unwrap_or_default();
            if swept.killed > 0 {
                tracing::info!(
                    killed = swept.killed,
                    "killed processes a command left beneath the daemon"
                );
            }
        }
    }
}

async fn watch_signals(shutdown: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::error!(
                "cannot listen for signals; stop the daemon with 'stepper daemon stop'"
            );
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM"),
            _ = int.recv() => tracing::info!("SIGINT"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    shutdown.cancel();
}
