//! Reaching the daemon: connect, or start it when its socket is absent or stale.
//!
//! Starting is serialized by a lock file, so two clients starting at once start one daemon.
//! The daemon is spawned in its own process group (Ctrl-C in this terminal never reaches it)
//! and is ready when its socket accepts.
//!
//! *Upgrades are noticed by build, not only by version*: `initialize` reports the daemon's
//! executable and the size+mtime it had at start; a client that would start a different build
//! restarts the daemon when it is idle (never a newer one), so a package upgrade or a `cargo build`
//! never leaves clients talking to a stale daemon.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use stepper_protocol::client::{ClientError, DaemonClient, connect_stream};
use stepper_protocol::methods::{ClientInfo, ClientKind};
use stepper_protocol::methods::{DaemonShutdown, Empty};
use stepper_protocol::places::{Places, build_id};

/// How long a starting daemon may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How much longer a start may take while the daemon rebuilds a damaged store.
const REBUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The name `stepper attach` gives itself (with its pid): the daemon tells clients apart by
/// name, and lists this one as a TUI.
pub const ATTACH_CLIENT: &str = "stepper attach";

/// The name `stepper acp` gives itself (with its pid): an editor's client.
pub const ACP_CLIENT: &str = "stepper acp";

pub fn client_info(name: &str) -> ClientInfo {
    ClientInfo {
        name: name.into(),
        kind: if name.starts_with(ATTACH_CLIENT) {
            ClientKind::Tui
        } else if name.starts_with(ACP_CLIENT) {
            ClientKind::Other
        } else {
            ClientKind::Cli
        },
        version: env!("CARGO_PKG_VERSION").into(),
        pid: Some(std::process::id()),
    }
}

/// Where the daemon is: this machine's places, or with `--host` the forwarded socket of
/// the remote one.
pub fn places() -> anyhow::Result<Places> {
    let mut places = Places::from_env()?;
    if let Some(remote) = crate::remote::get() {
        places.socket = remote.local_socket.clone();
    }
    Ok(places)
}

/// The folder new sessions work in: this one, or with `--host` the remote folder.
pub fn working_dir() -> anyhow::Result<PathBuf> {
    match crate::remote::get() {
        Some(remote) => Ok(PathBuf::from(&remote.dir)),
        None => std::env::current_dir().context("reading the current directory"),
    }
}

/// Connect to the running daemon, starting one first if nobody listens on the socket. A
/// daemon left running by an older (or rebuilt) install is restarted when it is idle, so the
/// client always talks to the stepperd installed beside it; a busy one is left alone, with
/// a word on what to run.
pub async fn connect_or_start(places: &Places, name: &str) -> anyhow::Result<DaemonClient> {
    if let Some(remote) = crate::remote::get() {
        // Started (if it was not running) when the socket was forwarded; never restarted
        // from here.
        let client = DaemonClient::connect(&places.socket, client_info(name))
            .await
            .with_context(|| format!("reaching the stepperd on {} through ssh", remote.host))?;
        if let Some(skew) = remote.skew() {
            eprintln!("stepper: {skew}");
        }
        tell_notices(&client);
        return Ok(client);
    }
    let client = connect_or_start_once(places, name).await?;
    tell_notices(&client);
    let Some(why) = outdated(&client) else {
        return Ok(client);
    };
    let why = match why {
        Staleness::DaemonOlder(why) => why,
        Staleness::DaemonNewer(why) => {
            // Restarting would downgrade it: the client is the one to update.
            eprintln!("stepper: {why} — update this client (or use the stepper installed with it)");
            return Ok(client);
        }
    };
    let running = client.daemon().running_turns;
    if running > 0 {
        eprintln!(
            "stepper: {why}; it has {running} running turn(s), so it keeps running — run \
             'stepper daemon restart --force' to restart it anyway (the turns end as interrupted)"
        );
        return Ok(client);
    }
    eprintln!("stepper: {why}; restarting it (it was idle)");
    shut_down(places, client).await?;
    start_daemon(places).await?;
    Ok(DaemonClient::connect(&places.socket, client_info(name)).await?)
}

/// What the daemon says every user should hear (a store rebuilt at its start), on stderr:
/// stdout stays the command's.
fn tell_notices(client: &DaemonClient) {
    for notice in &client.daemon().notices {
        eprintln!("stepper: {notice}");
    }
}

pub enum Staleness {
    /// An older install or a rebuild: restart it onto ours.
    DaemonOlder(String),
    /// A newer install than this client: leave it.
    DaemonNewer(String),
}

/// `1.2.10` as [1, 2, 10]: enough to order release versions.
fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '-'])
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// Why the running daemon is not the one this client would start, if it is not.
pub fn outdated(client: &DaemonClient) -> Option<Staleness> {
    let daemon = client.daemon();
    let ours = env!("CARGO_PKG_VERSION");
    let theirs = &daemon.daemon_version;
    if theirs != ours {
        return Some(if version_key(theirs) > version_key(ours) {
            Staleness::DaemonNewer(format!(
                "the running stepperd {theirs} is newer than this stepper {ours}"
            ))
        } else {
            Staleness::DaemonOlder(format!(
                "the running stepperd {theirs} is older than this stepper {ours}"
            ))
        });
    }
    let (running, build) = (daemon.executable.as_deref()?, daemon.build.as_deref()?);
    let candidate = stepperd_path().ok()?.canonicalize().ok()?;
    // Another install's daemon (a different path) is not ours to restart.
    if Path::new(running).canonicalize().ok()? != candidate {
        return None;
    }
    let on_disk = build_id(&candidate).ok()?;
    (on_disk != build).then(|| {
        Staleness::DaemonOlder(format!(
            "{running} was rebuilt or upgraded since the daemon started"
        ))
    })
}

/// Ask the daemon to stop and wait until it is gone.
pub async fn shut_down(places: &Places, client: DaemonClient) -> anyhow::Result<u32> {
    let pid = client.daemon().pid;
    match client.call::<DaemonShutdown>(Empty {}).await {
        Ok(_) => {}
        // The daemon may close the connection on its way out before the answer is written
        // (the stop and the answer race on a busy machine): whether it stops is told by its
        // lock below, within the same deadline.
        Err(ClientError::Disconnected) => {}
        Err(e) => return Err(e.into()),
    }
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !daemon_gone(places) {
        if Instant::now() > deadline {
            bail!("stepperd (pid {pid}) is still running after 30s — see 'stepper daemon logs'");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(pid)
}

async fn connect_or_start_once(places: &Places, name: &str) -> anyhow::Result<DaemonClient> {
    // A daemon that is dying still owns its socket for a moment and resets connections:
    // look again briefly before deciding that nobody is there.
    let mut attempts = 0;
    loop {
        match DaemonClient::connect(&places.socket, client_info(name)).await {
            Ok(client) => return Ok(client),
            Err(e) if e.is_not_running() => break,
            Err(ClientError::Handshake { .. } | ClientError::Disconnected) if attempts < 20 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    start_daemon(places).await?;
    Ok(DaemonClient::connect(&places.socket, client_info(name)).await?)
}

/// Connect without starting anything.
pub async fn connect_existing(places: &Places, name: &str) -> Result<DaemonClient, ClientError> {
    DaemonClient::connect(&places.socket, client_info(name)).await
}

/// Start the daemon unless one is already listening; return once it accepts connections.
pub async fn start_daemon(places: &Places) -> anyhow::Result<bool> {
    std::fs::create_dir_all(&places.data_dir)
        .with_context(|| format!("creating the data dir {}", places.data_dir.display()))?;
    let lock_path = places.startup_lock_path();
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("opening {}", lock_path.display()))?;
    // Another client may be starting the daemon right now: wait for it, then look again.
    let lock = tokio::task::spawn_blocking(move || lock.lock().map(|()| lock))
        .await
        .context("waiting for the startup lock")?
        .with_context(|| format!("locking {}", lock_path.display()))?;
    if connect_stream(&places.socket).await.is_ok() {
        return Ok(false);
    }

    let exe = stepperd_path()?;
    std::fs::create_dir_all(&places.log_dir)
        .with_context(|| format!("creating {}", places.log_dir.display()))?;
    let stderr_path = places.log_dir.join("stepperd.stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .with_context(|| format!("creating {}", stderr_path.display()))?;
    // Not in a process group of its own: the daemon makes itself a session (`setsid`), which
    // a group's leader cannot, and so leaves this terminal behind.
    let mut command = Command::new(&exe);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting the daemon {}", exe.display()))?;

    // The daemon says `ready SOCKET` on its stdout once it listens; until then (or with a
    // daemon that does not say it) the socket is polled.
    let mut said_ready = match child.stdout.take() {
        Some(stdout) => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ =
                    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
                let _ = tx.send(());
            });
            Some(rx)
        }
        None => None,
    };
    let mut deadline = Instant::now() + READY_TIMEOUT;
    let mut rebuilding = false;
    loop {
        if connect_stream(&places.socket).await.is_ok() {
            drop(lock);
            return Ok(true);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let said = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            let said = said.trim().trim_start_matches("stepperd: ");
            bail!(
                "the daemon ({}) exited ({status}) before it was ready: {said}",
                exe.display()
            );
        }
        // A daemon rebuilding a damaged store takes as long as the store is big (~10 s for
        // 160 MB): worth waiting for, and saying so.
        if Instant::now() > deadline && !rebuilding && places.store_rebuild_path().exists() {
            rebuilding = true;
            eprintln!(
                "stepper: the session store was found damaged; stepperd is rebuilding it from \
                 what can be read (see {})",
                places.log_path().display()
            );
            deadline = Instant::now() + REBUILD_TIMEOUT;
        }
        if Instant::now() > deadline {
            bail!(
                "the daemon ({}) did not start listening on {} within {}s — see {}",
                exe.display(),
                places.socket.display(),
                if rebuilding {
                    REBUILD_TIMEOUT
                } else {
                    READY_TIMEOUT
                }
                .as_secs(),
                places.log_path().display()
            );
        }
        let poll = tokio::time::sleep(Duration::from_millis(10));
        match said_ready.as_mut() {
            Some(ready) => tokio::select! {
                _ = ready => said_ready = None,
                () = poll => {}
            },
            None => poll.await,
        }
    }
}

/// Whether no daemon holds the data dir's lock (none runs, or it finished exiting). Unlike a
/// connect, this cannot wake a socket-activated daemon.
pub fn daemon_gone(places: &Places) -> bool {
    match std::fs::OpenOptions::new()
        .write(true)
        .open(places.daemon_lock_path())
    {
        Ok(file) => file.try_lock().is_ok(),
        Err(_) => true,
    }
}

/// `STEPPERD`, else `stepperd` next to this executable.
pub fn stepperd_path() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("STEPPERD").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("finding the stepper executable")?;
    let candidate = exe.with_file_name(format!("stepperd{}", std::env::consts::EXE_SUFFIX));
    if candidate.exists() {
        return Ok(candidate);
    }
    bail!(
        "cannot find stepperd next to {} — install both binaries together, or set STEPPERD to \
         its path",
        exe.display()
    )
}
