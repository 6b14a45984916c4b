//! A damaged session store: the daemon starts anyway, with what SQLite could read of it, the
//! damaged file kept aside, and the user told — in the daemon's log, by `stepper doctor` and
//! on every command's stderr. The damage is done to the real file, as a disk or a stray write
//! would, before the real daemon starts on it.

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use stepper_e2e::TestEnv;
use stepper_protocol::SessionInfo;
use stepper_protocol::event::{AppEvent, EventEnvelope};
use stepper_protocol::methods::{SessionExport, SessionExportParams};
use stepper_protocol::session::Env;
use stepper_store::{NewSession, Store, now_ms};

const SESSIONS: usize = 60;
const EVENTS: u64 = 30;

fn session_id(n: usize) -> String {
    format!("01900000-0000-7000-8000-{n:012}")
}

/// [`SESSIONS`] sessions of [`EVENTS`] events each in this test's store, written by the store
/// crate as the daemon writes them. Built beside it and copied in, closed: no connection of
/// this process has the store's file open.
async fn stored_sessions(env: &TestEnv) -> PathBuf {
    let places = env.places();
    std::fs::create_dir_all(&places.data_dir).unwrap();
    let built = places.data_dir.join("built.db");
    let store = Store::open(&built).await.unwrap();
    for n in 0..SESSIONS {
        let id = session_id(n);
        store
            .create_session(&NewSession {
                id: id.clone(),
                title: Some(format!("session {n}")),
                cwd: env.project.path().display().to_string(),
                model: "anthropic/claude-sonnet-4-5".into(),
                env: Env::new(),
                created_at: now_ms(),
                mode: None,
                sandbox: None,
                instructions: None,
            })
            .await
            .unwrap();
        let events: Vec<EventEnvelope> = (2..=EVENTS)
            .map(|seq| EventEnvelope {
                session_id: id.clone(),
                seq,
                at: now_ms(),
                turn: None,
                agent: None,
                event: AppEvent::Notice {
                    message: format!("session {n}, note {seq}: {}", "x".repeat(100)),
                },
            })
            .collect();
        store.append_events(&id, &events).await.unwrap();
    }
    store.close().await;
    std::fs::copy(&built, places.store_path()).unwrap();
    places.store_path()
}

fn overwrite(path: &Path, at: u64, bytes: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(bytes).unwrap();
}

/// The copies kept aside whose names start with `prefix`, without their `-wal` and `-shm`:
/// a store the daemon closed may leave an emptied WAL beside it (its pool can return from
/// `close` with a connection still being handed back), and that goes aside with the copy.
fn kept(env: &TestEnv, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(env.places().data_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(prefix) && !n.ends_with("-wal") && !n.ends_with("-shm")
            })
        })
        .collect();
    found.sort();
    found
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `stepper sessions --json` (which starts the daemon): the sessions listed, and what the
/// command said on stderr.
fn list(env: &TestEnv) -> (Vec<SessionInfo>, String) {
    let out = env.run(&["sessions", "--json", "--limit", "1000"]);
    assert!(
        out.status.success(),
        "stepper sessions failed: {}\n{}",
        text(&out.stderr),
        env.daemon_log()
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        text(&out.stderr),
    )
}

/// Every event of every listed session can be read back.
async fn events_of(env: &TestEnv, sessions: &[SessionInfo]) -> u64 {
    let client = env.client().await;
    let mut events = 0;
    for s in sessions {
        let page = client
            .call::<SessionExport>(SessionExportParams {
                session_id: s.id.clone(),
                after_seq: 0,
                limit: Some(1000),
            })
            .await
            .unwrap();
        events += page.events.len() as u64;
    }
    events
}

/// The daemon started on a damaged store: it lists what it kept, the damaged file is aside
/// as it was, and the user is told where, by every channel. Returns what was listed, the
/// summary line and `stepper doctor`'s report.
async fn rebuilt(env: &TestEnv, damaged: &[u8]) -> (Vec<SessionInfo>, String, String) {
    let (listed, stderr) = list(env);
    let ours: Vec<String> = (0..SESSIONS).map(session_id).collect();
    assert!(listed.iter().all(|s| ours.contains(&s.id)), "{listed:?}");
    let copies = kept(env, "stepper.db.damaged-");
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(std::fs::read(&copies[0]).unwrap(), damaged);

    // What the command that started the daemon printed.
    let summary = stderr
        .lines()
        .find_map(|l| l.strip_prefix("stepper: "))
        .unwrap_or_else(|| panic!("no notice on stderr: {stderr}"))
        .to_string();
    assert!(
        summary.starts_with("the session store was damaged (")
            && summary.contains(&format!("; recovered {} sessions, ", listed.len()))
            && summary.ends_with(&format!("; the damaged copy is at {}", copies[0].display())),
        "{summary}"
    );
    // The log says the same.
    assert!(env.daemon_log().contains(&summary), "{}", env.daemon_log());
    // So does `stepper doctor`, as a problem.
    let doctor = env.run(&["doctor"]);
    let report = text(&doctor.stdout);
    assert!(!doctor.status.success(), "{report}");
    assert!(
        report.contains(&format!(
            "session store\n  ✗ {summary}\n      fix: nothing to do to go on"
        )),
        "{report}"
    );
    // The events the summary counts are there to read.
    let events = events_of(env, &listed).await;
    assert!(
        summary.contains(&format!(" sessions, {events} events")),
        "{summary}: {events} events readable"
    );
    (listed, summary, report)
}

/// The section of `stepper doctor`'s report about the store, with this test's places and the
/// time in the copy's name made stable.
fn store_section(env: &TestEnv, report: &str) -> String {
    let start = report.find("session store\n").expect("a store section");
    let end = report[start..]
        .find("\n\n")
        .map_or(report.len(), |end| start + end);
    env.normalizer().text(&report[start..end])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_store_is_rebuilt_and_the_daemon_starts() {
    let env = TestEnv::new();
    let path = stored_sessions(&env).await;
    let len = std::fs::metadata(&path).unwrap().len();
    // The last quarter gone: the pages written last (rows of the newest sessions, and pages
    // the trees' roots were split into).
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len * 3 / 4).unwrap();
    drop(file);
    let damaged = std::fs::read(&path).unwrap();

    let (listed, summary, _) = rebuilt(&env, &damaged).await;
    assert!(!listed.is_empty(), "{summary}");
    assert!(summary.contains(" events of "), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_with_bytes_written_over_is_rebuilt() {
    let env = TestEnv::new();
    let path = stored_sessions(&env).await;
    let pages = std::fs::metadata(&path).unwrap().len() / 4096;
    // A page in the middle of the file written over from its start.
    overwrite(&path, pages / 2 * 4096, &[0xee; 4096]);
    let damaged = std::fs::read(&path).unwrap();

    // What that page held is lost (the store crate's tests count it exactly), at most a
    // session's row among them.
    let (listed, summary, _) = rebuilt(&env, &damaged).await;
    assert!(listed.len() >= SESSIONS - 1, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_with_a_bad_header_is_rebuilt_whole() {
    let env = TestEnv::new();
    let path = stored_sessions(&env).await;
    overwrite(
        &path,
        0,
        b"this is not the header SQLite wrote, and not even close to it!!",
    );
    let damaged = std::fs::read(&path).unwrap();

    let (listed, _, report) = rebuilt(&env, &damaged).await;
    assert_eq!(listed.len(), SESSIONS);
    insta::assert_snapshot!(store_section(&env, &report));
}

/// A daemon killed with its WAL full of commits, a frame of it then written over: the
/// commits after that frame are dropped by SQLite, and that is told, not silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_wal_tail_is_reported_and_kept() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    for _ in 0..40 {
        env.create_session(&client, None).await;
    }
    drop(client);
    env.signal_daemon(Signal::SIGKILL);
    let wal = PathBuf::from(format!("{}-wal", env.places().store_path().display()));
    let bytes = std::fs::read(&wal).unwrap();
    let read = stepper_store::wal::read(&bytes);
    assert!(read.replayed > 20 && read.damage.is_none(), "{read:?}");
    let page_size = u64::from(u32::from_be_bytes([
        bytes[8], bytes[9], bytes[10], bytes[11],
    ]));
    let frame = read.replayed / 2;
    overwrite(&wal, 32 + frame * (24 + page_size) + 24 + 100, &[0xee; 16]);
    let damaged = std::fs::read(&wal).unwrap();

    let (listed, stderr) = list(&env);
    assert!(!listed.is_empty() && listed.len() < 40, "{}", listed.len());
    let copies = kept(&env, "stepper.db.wal-damaged-");
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(std::fs::read(&copies[0]).unwrap(), damaged);
    let told = format!(
        "stepper: the session store's write-ahead log was damaged and its tail dropped: frame \
         {} is damaged, so the ",
        frame + 1
    );
    assert!(stderr.contains(&told), "{stderr}");
    assert!(
        stderr.contains(&format!("a copy of the log is at {}", copies[0].display())),
        "{stderr}"
    );
    // The daemon's log is written behind its work: the line may come a moment after the
    // answer.
    stepper_e2e::wait_until(
        "the damage in the daemon's log",
        std::time::Duration::from_secs(10),
        || {
            env.daemon_log()
                .contains("the session store's write-ahead log was damaged")
        },
    );
    let doctor = env.run(&["doctor"]);
    assert!(!doctor.status.success());
    assert!(
        text(&doctor.stdout).contains("  ✗ the session store's write-ahead log was damaged"),
        "{}",
        text(&doctor.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_recover_store_rebuilds_it_on_request() {
    let env = TestEnv::new();
    stored_sessions(&env).await;
    env.start_daemon();
    let before = env.daemon_pid().unwrap();

    let out = env.run(&["doctor", "--recover-store"]);
    let report = text(&out.stdout);
    assert!(
        report.contains(&format!(
            "  · the session store was rebuilt as asked: recovered {SESSIONS} sessions, {} \
             events; the previous file is at {}/stepper.db.damaged-",
            SESSIONS as u64 * EVENTS,
            env.places().data_dir.display()
        )),
        "{report}\n{}",
        text(&out.stderr)
    );
    assert_ne!(env.daemon_pid(), Some(before), "the daemon was restarted");
    assert!(!env.places().store_recovery_request_path().exists());
    assert_eq!(kept(&env, "stepper.db.damaged-").len(), 1);
    let (listed, stderr) = list(&env);
    assert_eq!(listed.len(), SESSIONS);
    // Asked for, so nobody else needs telling.
    assert!(!stderr.contains("stepper: the session store"), "{stderr}");
    assert_eq!(events_of(&env, &listed).await, SESSIONS as u64 * EVENTS);
}
