//! The store under faults: a full disk and a lock another program holds past the busy
//! timeout. The running turn ends `failed` saying why and what to do, calls are refused
//! with a retryable error, the daemon recovers by itself when the fault goes, and nothing
//! a client was told is stored is ever lost — checked after a SIGKILL and a restart.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use stepper_e2e::fake_llm::{Reply, tool_use_stream};
use stepper_e2e::{TestEnv, read_until, submit, until_turn_finished};
use stepper_protocol::client::DaemonClient;
use stepper_protocol::error::ErrorKind;
use stepper_protocol::event::TurnStatus;
use stepper_protocol::methods::{SessionSubmit, SessionSubmitParams};
use stepper_protocol::{AppEvent, EventEnvelope};

/// A small tmpfs mounted over a folder for the test's life (root only).
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(at: &Path, size: &str) -> Option<Mounted> {
        let root = nix::unistd::geteuid().is_root();
        if !stepper_e2e::needs::that(root, "the disk-full test mounts a small tmpfs: run as root") {
            return None;
        }
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .status()
            .expect("running mount");
        assert!(status.success(), "mounting a tmpfs at {}", at.display());
        Some(Mounted(at.to_path_buf()))
    }

    /// Fill the file system: write zeros to `filler` until the disk refuses.
    fn fill(&self) -> PathBuf {
        let filler = self.0.join("filler");
        let mut file = std::fs::File::create(&filler).expect("the filler file");
        let block = vec![0u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        // The last partial block, to the last byte.
        while file.write_all(&[0u8; 512]).is_ok() {}
        while file.write_all(&[0u8]).is_ok() {}
        filler
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // The daemon's lock file, which says its pid, is on this file system: the daemon is
        // stopped here, while the TestEnv dropped after this could no longer find it.
        let pid = std::fs::read_to_string(self.0.join("stepperd.lock"))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok());
        if let Some(pid) = pid {
            let pid = nix::unistd::Pid::from_raw(pid);
            if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).is_ok() {
                stepper_e2e::wait_until("the daemon to exit", Duration::from_secs(20), || {
                    std::fs::read_to_string(format!("/proc/{pid}/stat"))
                        .map_or(true, |s| s.contains(") Z "))
                });
            }
        }
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A turn whose command prints a line every 50 ms for a minute: its output is written to
/// the store all along, so a fault meets it mid-call, and it ends only when its turn does.
fn ticking_command() -> Reply {
    Reply::Sse(tool_use_stream(&[(
        "toolu_tick",
        "bash",
        serde_json::json!({
            "command": "for i in $(seq 1200); do echo tick $i; sleep 0.05; done",
        }),
    )]))
}

async fn try_submit(client: &DaemonClient, id: &str, text: &str) -> Result<u64, ErrorKind> {
    let params = SessionSubmitParams {
        parts: Vec::new(),
        session_id: id.into(),
        text: text.into(),
        env: None,
    };
    match client.call::<SessionSubmit>(params).await {
        Ok(r) => Ok(r.seq),
        Err(stepper_protocol::client::ClientError::Rpc {
            kind: Some(kind), ..
        }) => Err(kind),
        Err(e) => panic!("session/submit: {e}"),
    }
}

/// Everything the store holds of `id` after `after_seq`, read over a fresh subscription.
async fn stored(client: &DaemonClient, id: &str) -> Vec<EventEnvelope> {
    let mut events = client
        .subscribe_events(&id.to_string(), 0)
        .await
        .expect("subscribe");
    let mut out = Vec::new();
    while let Ok(Some(Ok(e))) =
        tokio::time::timeout(Duration::from_millis(500), events.next()).await
    {
        out.push(e);
    }
    out
}

/// What every fault test checks at the end: the seqs clients were given (a submit's, the
/// end of a turn they saw) are all in the store after a SIGKILL and a restart, and every
/// session's seqs are still gap-free.
async fn nothing_acknowledged_is_lost(env: &TestEnv, seen: &[(String, Vec<u64>)]) {
    env.signal_daemon(nix::sys::signal::Signal::SIGKILL);
    env.start_daemon();
    let client = env.client().await;
    for (id, seqs) in seen {
        let events = stored(&client, id).await;
        let have: Vec<u64> = events.iter().map(|e| e.seq).collect();
        for seq in seqs {
            assert!(have.contains(seq), "session {id} lost seq {seq}: {have:?}");
        }
        assert!(
            have.iter().enumerate().all(|(i, s)| *s == i as u64 + 1),
            "{have:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_turn_refuses_calls_and_recovers_losing_nothing() {
    let env = TestEnv::new();
    let Some(disk) = Mounted::tmpfs(env.home.path(), "24m") else {
        return;
    };
    env.trust_project();
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();

    // A command runs; the disk fills under it.
    env.fake.push(ticking_command());
    submit(&client, &id, "first").await;
    let mut seen = read_until(&mut events, |e| {
        matches!(e.event, AppEvent::ToolOutputDelta { .. })
    })
    .await;
    let filler = disk.fill();

    // The turn ends, and the client is told why: its stream ends with the store's reason.
    let trouble = loop {
        match tokio::time::timeout(Duration::from_secs(30), events.next()).await {
            Ok(Some(Ok(e))) => seen.push(e),
            Ok(Some(Err(e))) => break e.to_string(),
            Ok(None) => panic!("the stream ended without a reason"),
            Err(_) => panic!("the turn never ended: {seen:#?}"),
        }
    };
    assert!(trouble.contains("full"), "{trouble}");
    assert!(
        trouble.contains(&env.home.path().display().to_string()),
        "names the folder: {trouble}"
    );
    assert!(trouble.contains("free some space"), "{trouble}");
    // Nothing was published that was not stored: the stream has no gaps.
    assert!(seen.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));

    // Meanwhile calls that would store are refused, saying they may be retried.
    assert_eq!(
        try_submit(&client, &id, "while full").await,
        Err(ErrorKind::StoreUnavailable)
    );
    let out = env
        .stepper()
        .args(["ask", "--session", &id, "from the terminal"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("free some space"), "{said}");
    // The daemon still serves what does not write.
    assert!(env.run(&["sessions"]).status.success());

    // Space comes back: the daemon recovers by itself, the failed turn's end is stored,
    // and new turns run — in this session and in new ones.
    std::fs::remove_file(&filler).unwrap();
    env.fake.push(Reply::text(&["second answer"]));
    let second = {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            match try_submit(&client, &id, "second").await {
                Ok(seq) => break seq,
                Err(ErrorKind::StoreUnavailable) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no recovery: {e:?}"),
            }
        }
    };
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let first = until_turn_finished(&mut events).await;
    let first_end = first.last().unwrap();
    let AppEvent::TurnFinished { status, error, .. } = &first_end.event else {
        unreachable!()
    };
    assert_eq!(*status, TurnStatus::Failed);
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("free some space")),
        "{error:?}"
    );
    let second_turn = until_turn_finished(&mut events).await;
    assert!(second_turn.iter().any(|e| matches!(
        &e.event,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));
    let mut acknowledged = vec![(id.clone(), vec![second, second_turn.last().unwrap().seq])];
    for n in 0..3 {
        env.fake.push(Reply::text(&["later"]));
        let other = env.create_session(&client, None).await;
        let mut events = client.subscribe_events(&other, 0).await.unwrap();
        submit(&client, &other, &format!("after {n}")).await;
        let end = until_turn_finished(&mut events).await;
        acknowledged.push((other, vec![end.last().unwrap().seq]));
    }
    nothing_acknowledged_is_lost(&env, &acknowledged).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_past_the_busy_timeout_fails_the_turn_and_recovers_when_released() {
    if !stepper_e2e::needs::program("python3", "the lock test", "install Python 3") {
        return;
    }
    let env = TestEnv::new();
    env.start_daemon_with(&[("STEPPER_STORE_BUSY_MS", "300")]);
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(ticking_command());
    submit(&client, &id, "first").await;
    read_until(&mut events, |e| {
        matches!(e.event, AppEvent::ToolOutputDelta { .. })
    })
    .await;

    // Another program takes the write lock and keeps it.
    let db = env.places().store_path();
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN IMMEDIATE')\n\
             print('held', flush=True)\n\
             sys.stdin.read()\n",
        ])
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    let trouble = loop {
        match tokio::time::timeout(Duration::from_secs(30), events.next()).await {
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(e))) => break e.to_string(),
            Ok(None) => panic!("the stream ended without a reason"),
            Err(_) => panic!("the turn never ended"),
        }
    };
    assert!(trouble.contains("holds the lock"), "{trouble}");
    assert!(trouble.contains(&db.display().to_string()), "{trouble}");
    assert_eq!(
        try_submit(&client, &id, "while locked").await,
        Err(ErrorKind::StoreUnavailable)
    );

    // The lock goes: the daemon stores what waited and runs the next turn.
    drop(holder.stdin.take());
    holder.wait().unwrap();
    env.fake.push(Reply::text(&["unlocked"]));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let second = loop {
        match try_submit(&client, &id, "second").await {
            Ok(seq) => break seq,
            Err(ErrorKind::StoreUnavailable) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("no recovery: {e:?}"),
        }
    };
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let first = until_turn_finished(&mut events).await;
    assert!(matches!(
        first.last().unwrap().event,
        AppEvent::TurnFinished {
            status: TurnStatus::Failed,
            ..
        }
    ));
    let second_turn = until_turn_finished(&mut events).await;
    nothing_acknowledged_is_lost(
        &env,
        &[(id.clone(), vec![second, second_turn.last().unwrap().seq])],
    )
    .await;
}
