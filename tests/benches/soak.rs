//! The soak: many sessions running turns with tool calls against one daemon for minutes,
//! while faults come and go — the provider failing, another program holding the store's
//! lock past the busy timeout, the disk filling up (as root: the data folder is a tmpfs),
//! and the daemon SIGKILLed and started again. What matters is printed at the end:
//!
//! - acknowledged events lost: every seq a client was given (a submit's `InputQueued`, each
//!   event it received) must still be in the store, with the same type, after a final
//!   SIGKILL and restart. It must be 0; the bench fails otherwise.
//! - a turn's latency (submit to `TurnFinished`), p50 and p99, outside faults and overall;
//! - the daemon's peak memory (VmHWM, over every daemon the run started) and its most open
//!   file descriptors, sampled every second, and both at the end.
//!
//! `cargo bench -p stepper-e2e --bench soak` — 200 sessions for 10 minutes; shorter with
//! `STEPPER_SOAK_SESSIONS=20 STEPPER_SOAK_SECS=60`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use stepper_e2e::TestEnv;
use stepper_e2e::fake_llm::{text_stream, tool_use_stream};
use stepper_protocol::client::{ClientError, ConnectOptions, DaemonClient};
use stepper_protocol::error::ErrorKind;
use stepper_protocol::event::TurnStatus;
use stepper_protocol::methods::{
    ClientInfo, ClientKind, SessionCreate, SessionCreateParams, SessionSubmit, SessionSubmitParams,
};
use stepper_protocol::{AppEvent, PermissionMode};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A provider that answers every request at once: a bash call when the conversation ends
/// with the user's words, the answer when it ends with the call's result; a 500 while
/// `failing`. It keeps nothing, so it does not grow over a long run.
async fn provider(failing: Arc<AtomicBool>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(move |body: String| {
            let failing = Arc::clone(&failing);
            async move { answer(&failing, &body) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn answer(failing: &AtomicBool, body: &str) -> Response {
    if failing.load(Ordering::Relaxed) {
        let error = serde_json::json!({"type": "error", "error": {"type": "api_error", "message": "the soak's provider fault"}});
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            error.to_string(),
        )
            .into_response();
    }
    let request: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let stream = if last["content"].to_string().contains("tool_result") {
        text_stream(&["done ", "with ", "the ", "task"])
    } else {
        tool_use_stream(&[(
            "toolu_soak",
            "bash",
            serde_json::json!({"command": "echo soak; ls"}),
        )])
    };
    ([("content-type", "text/event-stream")], stream).into_response()
}

/// What one worker saw: every seq it was given, with the event's type.
#[derive(Default)]
struct Seen {
    acknowledged: HashMap<String, Vec<(u64, String)>>,
    latencies: Vec<(Duration, bool)>,
    turns: HashMap<&'static str, u64>,
    refused: u64,
    reconnects: u64,
}

struct Run {
    env: TestEnv,
    deadline: Instant,
    /// A fault is on now (latencies measured meanwhile count only in "overall").
    fault: AtomicBool,
    /// The daemon is being killed and restarted.
    restarting: AtomicBool,
    provider_url: String,
    peak_rss_kb: AtomicU64,
    peak_fds: AtomicU64,
    hwm_kb: AtomicU64,
}

impl Run {
    /// Start the daemon: pointed at the soak's provider, with a short busy timeout so a
    /// held lock is trouble within the fault's time.
    fn start_daemon(&self) {
        self.env.start_daemon_with(&[
            ("ANTHROPIC_BASE_URL", &self.provider_url),
            ("STEPPER_STORE_BUSY_MS", "2000"),
            ("STEPPER_LOG", "info,sqlx=warn"),
        ]);
    }

    /// SIGKILL the daemon (noting its peak memory first) and start another.
    fn kill_and_restart(&self) {
        if let Some(pid) = self.env.daemon_pid()
            && let Some((_, hwm, _)) = daemon_status(pid)
        {
            self.hwm_kb.fetch_max(hwm, Ordering::Relaxed);
        }
        self.env.signal_daemon(nix::sys::signal::Signal::SIGKILL);
        self.start_daemon();
    }

    async fn connect(&self) -> DaemonClient {
        let info = ClientInfo {
            name: "soak".into(),
            kind: ClientKind::Other,
            version: "0".into(),
            pid: Some(std::process::id()),
        };
        loop {
            if !self.restarting.load(Ordering::SeqCst) {
                let socket = self.env.places().socket;
                if let Ok(c) =
                    DaemonClient::connect_with(&socket, info.clone(), ConnectOptions::default())
                        .await
                {
                    return c;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn session_params(&self) -> SessionCreateParams {
        let mut env: stepper_protocol::session::Env = self.env.envs().into_iter().collect();
        env.insert("ANTHROPIC_BASE_URL".into(), self.provider_url.clone());
        SessionCreateParams {
            input_parts: Vec::new(),
            cwd: self.env.project.path().display().to_string(),
            env,
            model: None,
            title: Some("soak".into()),
            record: None,
            mode: Some(PermissionMode::Auto),
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        }
    }
}

/// One session's life: turns one after another until the deadline, through every fault.
async fn worker(run: Arc<Run>, n: usize) -> Seen {
    let mut seen = Seen::default();
    let mut client = run.connect().await;
    let id = loop {
        match client.call::<SessionCreate>(run.session_params()).await {
            Ok(r) => break r.session.id,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                client = run.connect().await;
                seen.reconnects += 1;
            }
        }
    };
    let mut last_seq = 0u64;
    let mut turn = 0u64;
    'turns: while Instant::now() < run.deadline {
        turn += 1;
        let started = Instant::now();
        let faulty = run.fault.load(Ordering::SeqCst);
        let params = SessionSubmitParams {
            parts: Vec::new(),
            session_id: id.clone(),
            text: format!("task {n}.{turn}"),
            env: None,
        };
        let submitted = match client.call::<SessionSubmit>(params).await {
            Ok(r) => r,
            Err(ClientError::Rpc { kind, .. }) => {
                if kind == Some(ErrorKind::StoreUnavailable) {
                    seen.refused += 1;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(_) => {
                client = run.connect().await;
                seen.reconnects += 1;
                continue;
            }
        };
        seen.acknowledged
            .entry(id.clone())
            .or_default()
            .push((submitted.seq, "InputQueued".into()));
        // Follow the session until this input's turn ends, through restarts.
        let mut our_turn = None;
        loop {
            let mut events = match client.subscribe_events(&id, last_seq).await {
                Ok(e) => e,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    client = run.connect().await;
                    seen.reconnects += 1;
                    if Instant::now() > run.deadline + Duration::from_secs(120) {
                        break 'turns;
                    }
                    continue;
                }
            };
            // Until the stream ends (the store's trouble, the daemon gone): then again.
            while let Some(Ok(e)) = events.next().await {
                last_seq = e.seq;
                let kind = serde_json::to_value(&e.event).unwrap()["type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                seen.acknowledged
                    .entry(id.clone())
                    .or_default()
                    .push((e.seq, kind));
                match &e.event {
                    AppEvent::TurnStarted { input_id, .. } if *input_id == submitted.input_id => {
                        our_turn = e.turn;
                    }
                    AppEvent::TurnFinished { status, .. }
                        if our_turn.is_some() && e.turn == our_turn =>
                    {
                        let faulty = faulty || run.fault.load(Ordering::SeqCst);
                        seen.latencies.push((started.elapsed(), faulty));
                        let name = match status {
                            TurnStatus::Completed => "completed",
                            TurnStatus::Interrupted => "interrupted",
                            TurnStatus::Failed => "failed",
                        };
                        *seen.turns.entry(name).or_default() += 1;
                        continue 'turns;
                    }
                    _ => {}
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !client.is_connected() {
                client = run.connect().await;
                seen.reconnects += 1;
            }
        }
    }
    seen
}

fn daemon_status(pid: i32) -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((field("VmRSS:"), field("VmHWM:"), fds))
}

/// Sample the daemon's memory and descriptors every second.
async fn sampler(run: Arc<Run>) {
    while Instant::now() < run.deadline {
        if let Some(pid) = run.env.daemon_pid()
            && let Some((rss, hwm, fds)) = daemon_status(pid)
        {
            run.peak_rss_kb.fetch_max(rss, Ordering::Relaxed);
            run.hwm_kb.fetch_max(hwm, Ordering::Relaxed);
            run.peak_fds.fetch_max(fds, Ordering::Relaxed);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A program holding the store's write lock until dropped.
struct LockHolder(std::process::Child);

impl LockHolder {
    fn take(db: &Path) -> Option<LockHolder> {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import sqlite3, sys\n\
                 c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n\
                 c.execute('BEGIN IMMEDIATE')\n\
                 print('held', flush=True)\n\
                 sys.stdin.read()\n",
            ])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take()?)
            .read_line(&mut line)
            .ok()?;
        Some(LockHolder(child))
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// Fill the file system holding `dir`: a file as large as the space left.
fn fill(dir: &Path) -> PathBuf {
    let filler = dir.join("filler");
    let stat = nix::sys::statvfs::statvfs(dir).unwrap();
    // Less a little: the file's own blocks need room too.
    let free =
        (stat.blocks_available() as u64 * stat.fragment_size() as u64).saturating_sub(1 << 20);
    let _ = Command::new("fallocate")
        .arg("-l")
        .arg(free.to_string())
        .arg(&filler)
        .status();
    // What fallocate left (rounding), byte by byte.
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&filler) {
        while f.write_all(&[0u8; 4096]).is_ok() {}
        while f.write_all(&[0u8]).is_ok() {}
    }
    filler
}

async fn faults(
    run: Arc<Run>,
    failing: Arc<AtomicBool>,
    disk: Option<PathBuf>,
    log: Arc<Mutex<Vec<String>>>,
) {
    let every = Duration::from_secs(setting("STEPPER_SOAK_FAULT_EVERY_SECS", 45));
    let mut round = 0usize;
    loop {
        tokio::time::sleep(every).await;
        if Instant::now() + Duration::from_secs(20) > run.deadline {
            return;
        }
        round += 1;
        let kind = ["provider", "lock", "disk", "sigkill"][round % 4];
        let t = Instant::now();
        run.fault.store(true, Ordering::SeqCst);
        match kind {
            "provider" => {
                failing.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(5)).await;
                failing.store(false, Ordering::SeqCst);
            }
            "lock" => {
                let db = run.env.places().store_path();
                let holder = tokio::task::spawn_blocking(move || LockHolder::take(&db))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_secs(8)).await;
                drop(holder);
            }
            "disk" => {
                let Some(dir) = &disk else {
                    log.lock().unwrap().push("disk: skipped (not root)".into());
                    run.fault.store(false, Ordering::SeqCst);
                    continue;
                };
                let dir = dir.clone();
                let filler = tokio::task::spawn_blocking(move || fill(&dir))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_secs(8)).await;
                std::fs::remove_file(&filler).unwrap();
            }
            _ => {
                run.restarting.store(true, Ordering::SeqCst);
                let r = Arc::clone(&run);
                tokio::task::spawn_blocking(move || r.kill_and_restart())
                    .await
                    .unwrap();
                run.restarting.store(false, Ordering::SeqCst);
            }
        }
        // Give the daemon a moment to recover before latencies count as clean again.
        tokio::time::sleep(Duration::from_secs(3)).await;
        run.fault.store(false, Ordering::SeqCst);
        log.lock()
            .unwrap()
            .push(format!("{kind}: {:.1} s", t.elapsed().as_secs_f64()));
    }
}

fn percentile(v: &mut [Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

fn main() {
    let sessions = setting("STEPPER_SOAK_SESSIONS", 200) as usize;
    let secs = setting("STEPPER_SOAK_SECS", 600);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let env = TestEnv::new();
        let root = nix::unistd::geteuid().is_root();
        // The data folder on a tmpfs of its own, so the disk can be filled (root only).
        let disk = root.then(|| {
            let status = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=2g,mode=0700", "tmpfs"])
                .arg(env.home.path())
                .status()
                .unwrap();
            assert!(status.success(), "mounting the soak's tmpfs");
            env.home.path().to_path_buf()
        });
        env.trust_project();
        let failing = Arc::new(AtomicBool::new(false));
        let provider_url = provider(Arc::clone(&failing)).await;
        let run = Arc::new(Run {
            env,
            deadline: Instant::now() + Duration::from_secs(secs),
            fault: AtomicBool::new(false),
            restarting: AtomicBool::new(false),
            provider_url,
            peak_rss_kb: AtomicU64::new(0),
            peak_fds: AtomicU64::new(0),
            hwm_kb: AtomicU64::new(0),
        });
        run.start_daemon();
        eprintln!("soak: {sessions} sessions for {secs} s, faults every {} s", setting("STEPPER_SOAK_FAULT_EVERY_SECS", 45));
        let log = Arc::new(Mutex::new(Vec::new()));
        let fault_task = tokio::spawn(faults(Arc::clone(&run), failing, disk.clone(), Arc::clone(&log)));
        let sample_task = tokio::spawn(sampler(Arc::clone(&run)));
        let workers: Vec<_> = (0..sessions)
            .map(|n| tokio::spawn(worker(Arc::clone(&run), n)))
            .collect();
        let mut all = Seen::default();
        for w in workers {
            let seen = w.await.unwrap();
            for (id, seqs) in seen.acknowledged {
                all.acknowledged.entry(id).or_default().extend(seqs);
            }
            all.latencies.extend(seen.latencies);
            for (k, v) in seen.turns {
                *all.turns.entry(k).or_default() += v;
            }
            all.refused += seen.refused;
            all.reconnects += seen.reconnects;
        }
        fault_task.abort();
        sample_task.abort();
        let end = run.env.daemon_pid().and_then(daemon_status);

        // The proof: a last SIGKILL, a new daemon, and every acknowledged seq still there.
        let r = Arc::clone(&run);
        tokio::task::spawn_blocking(move || r.kill_and_restart())
            .await
            .unwrap();
        let client = run.connect().await;
        let mut lost = 0u64;
        let mut checked = 0u64;
        for (id, seqs) in &all.acknowledged {
            let mut stored: HashMap<u64, String> = HashMap::new();
            let mut events = client.subscribe_events(id, 0).await.unwrap();
            let max = seqs.iter().map(|(s, _)| *s).max().unwrap_or(0);
            while stored.len() < max as usize {
                match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
                    Ok(Some(Ok(e))) => {
                        let kind = serde_json::to_value(&e.event).unwrap()["type"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        stored.insert(e.seq, kind);
                    }
                    _ => break,
                }
            }
            for (seq, kind) in seqs {
                checked += 1;
                if stored.get(seq) != Some(kind) {
                    lost += 1;
                    eprintln!("LOST: session {id} seq {seq} ({kind}); stored: {:?}", stored.get(seq));
                }
            }
        }
        let _ = run.env.run(&["daemon", "stop"]);
        if let Some(dir) = &disk {
            let _ = Command::new("umount").arg("-l").arg(dir).status();
        }

        let mut clean: Vec<Duration> = all.latencies.iter().filter(|(_, f)| !f).map(|(d, _)| *d).collect();
        let mut overall: Vec<Duration> = all.latencies.iter().map(|(d, _)| *d).collect();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!("soak: {sessions} sessions, {secs} s");
        println!("faults: {}", log.lock().unwrap().join(", "));
        println!(
            "turns: {} ({:?}); submits refused while the store could not write: {}; streams followed again: {}",
            overall.len(),
            all.turns,
            all.refused,
            all.reconnects
        );
        println!(
            "turn latency outside faults: p50 {:.1} ms, p99 {:.1} ms ({} turns); overall: p50 {:.1} ms, p99 {:.1} ms",
            ms(percentile(&mut clean, 0.5)),
            ms(percentile(&mut clean, 0.99)),
            clean.len(),
            ms(percentile(&mut overall, 0.5)),
            ms(percentile(&mut overall, 0.99)),
        );
        println!(
            "daemon memory: peak RSS {:.1} MiB sampled, VmHWM {:.1} MiB; fds: peak {}; at the end: RSS {:.1} MiB, {} fds",
            run.peak_rss_kb.load(Ordering::Relaxed) as f64 / 1024.0,
            run.hwm_kb.load(Ordering::Relaxed) as f64 / 1024.0,
            run.peak_fds.load(Ordering::Relaxed),
            end.map(|e| e.0 as f64 / 1024.0).unwrap_or(0.0),
            end.map(|e| e.2).unwrap_or(0),
        );
        println!("acknowledged events lost: {lost} of {checked} checked");
        assert_eq!(lost, 0, "acknowledged events were lost");
    });
}
