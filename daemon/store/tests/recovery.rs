//! A damaged store file: found at open, moved aside, and what SQLite can read of it copied into
//! a new store. The damage is done to real files, as a disk or a stray write would.

use std::path::{Path, PathBuf};

use stepper_protocol::event::{AppEvent, EventEnvelope};
use stepper_protocol::session::Env;
use stepper_store::wal::WalDamage;
use stepper_store::{FileChange, NewSession, Recover, Store, now_ms};

const SESSIONS: usize = 120;
const EVENTS: u64 = 40;

fn id(n: usize) -> String {
    format!("0190000{n:05}")
}

/// A store of `sessions` sessions of [`EVENTS`] events each (a few KB of text per session),
/// with context rows and a checkpoint, left open.
async fn filled(path: &Path, sessions: usize) -> Store {
    let store = Store::open(path).await.unwrap();
    for n in 0..sessions {
        let id = id(n);
        store
            .create_session(&NewSession {
                id: id.clone(),
                // Long enough that the sessions' rows fill several pages.
                title: Some(format!("session {n} {}", "t".repeat(200))),
                cwd: "/p".into(),
                model: "anthropic/test".into(),
                env: Env::from([("PATH".to_string(), "/bin".to_string())]),
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
                turn: Some(1),
                agent: None,
                event: AppEvent::TextDelta {
                    text: format!("session {n} event {seq} ").repeat(8),
                },
            })
            .collect();
        store.append_events(&id, &events).await.unwrap();
        store
            .append_context(
                &id,
                "main",
                1,
                &[format!("{{\"role\":\"user\",\"n\":{n}}}")],
            )
            .await
            .unwrap();
    }
    store.put_blobs(&[("h1", b"before")]).await.unwrap();
    store
        .record_changes(
            &id(0),
            &[FileChange {
                turn: 1,
                path: "a.txt".into(),
                before: Some("h1".into()),
            }],
        )
        .await
        .unwrap();
    store
}

/// [`filled`], as one file no connection has open: built elsewhere, closed (which
/// checkpoints the WAL into it), then copied.
async fn filled_file(dir: &Path) -> PathBuf {
    let built = dir.join("built.db");
    filled(&built, SESSIONS).await.close().await;
    assert_eq!(
        std::fs::metadata(dir.join("built.db-wal")).map_or(0, |m| m.len()),
        0
    );
    let path = dir.join("stepper.db");
    std::fs::copy(&built, &path).unwrap();
    path
}

fn overwrite(path: &Path, at: u64, bytes: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(bytes).unwrap();
}

fn files_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    found.sort();
    found
}

/// Every session the store lists can be read whole: what recovery kept decodes.
async fn readable_sessions(store: &Store) -> (usize, u64) {
    let page = store.list_sessions(None, 10_000, None).await.unwrap();
    let mut events = 0;
    for s in &page.sessions {
        events += store.events_after(&s.id, 0, 100_000).await.unwrap().len() as u64;
    }
    (page.sessions.len(), events)
}

#[tokio::test]
async fn a_sound_store_opens_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    assert!(health.recovery.is_none() && health.wal.is_none());
    assert_eq!(
        readable_sessions(&store).await,
        (SESSIONS, SESSIONS as u64 * EVENTS)
    );
    assert!(files_named(dir.path(), "stepper.db.").is_empty());
}

#[tokio::test]
async fn a_bad_header_is_mended_and_everything_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let original = std::fs::read(&path).unwrap();
    overwrite(&path, 0, &[0x5a; 100]);
    assert!(Store::open(&path).await.err().unwrap().is_damage());

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    assert!(recovery.damaged, "{recovery:?}");
    assert_eq!(
        (recovery.sessions, recovery.events),
        (SESSIONS as u64, SESSIONS as u64 * EVENTS)
    );
    assert_eq!(
        readable_sessions(&store).await,
        (SESSIONS, SESSIONS as u64 * EVENTS)
    );
    // The context and the checkpoint came along.
    assert_eq!(store.context(&id(7), "main").await.unwrap().len(), 1);
    assert_eq!(
        store.blob("h1").await.unwrap().as_deref(),
        Some(&b"before"[..])
    );
    assert_eq!(store.changes_since(&id(0), 1).await.unwrap().len(), 1);
    // The damaged file is kept aside as it was.
    assert_eq!(
        files_named(dir.path(), "stepper.db.damaged-"),
        std::slice::from_ref(&recovery.damaged_copy)
    );
    let kept = std::fs::read(&recovery.damaged_copy).unwrap();
    assert_eq!(&kept[..100], &[0x5a; 100]);
    assert_eq!(kept[100..], original[100..]);
    assert!(files_named(dir.path(), "stepper.db.salvage").is_empty());
    assert!(files_named(dir.path(), "stepper.db.recovering").is_empty());
    let summary = recovery.summary();
    assert!(
        summary.starts_with("the session store was damaged (")
            && summary.contains(&format!(
                "; recovered {SESSIONS} sessions, {} events; the damaged copy is at {}",
                SESSIONS as u64 * EVENTS,
                recovery.damaged_copy.display()
            )),
        "{summary}"
    );
    // The new store is sound, and stays so.
    assert_eq!(store.quick_check().await.unwrap(), None);
    store.close().await;
    let (_, again) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    assert!(again.recovery.is_none());
}

/// The b-tree pages of `table` of the given type (`leaf`, `internal`), in key order, with
/// the cells on each.
async fn pages_of(path: &Path, table: &str, kind: &str) -> Vec<(u64, u64)> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap();
    let pages: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT pageno, ncell FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY path",
    )
    .bind(table)
    .bind(kind)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    pages
        .into_iter()
        .map(|(page, cells)| (page as u64, cells as u64))
        .collect()
}

fn overwrite_page(path: &Path, page: u64) {
    overwrite(path, (page - 1) * 4096, &[0xee; 4096]);
}

/// A leaf of the events' tree written over: the events on it are lost, no others.
#[tokio::test]
async fn a_leaf_written_over_costs_its_rows_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let leaves = pages_of(&path, "events", "leaf").await;
    let (page, cells) = leaves[leaves.len() / 2];
    overwrite_page(&path, page);

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    let all = SESSIONS as u64 * EVENTS;
    assert_eq!(
        (recovery.sessions, recovery.events),
        (SESSIONS as u64, all - cells),
        "{recovery:?}"
    );
    assert_eq!(readable_sessions(&store).await, (SESSIONS, all - cells));
    assert_eq!(recovery.events_missing, cells);
    assert!(
        recovery.summary().contains(&format!(
            "recovered {SESSIONS} sessions, {} events ({cells} events of {} could not be \
             read); the damaged copy is at",
            all - cells,
            match recovery.sessions_incomplete {
                1 => "1 session".to_string(),
                n => format!("{n} sessions"),
            }
        )),
        "{}",
        recovery.summary()
    );
    assert_eq!(store.quick_check().await.unwrap(), None);
}

/// An interior page of the events' tree written over: SQL reaches none of the leaves below
/// it, but read page by page they still give their events. Only the events on the page
/// itself (an index tree keeps rows in its interior pages too) are lost.
#[tokio::test]
async fn the_leaves_below_a_lost_interior_page_are_read_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let interior = pages_of(&path, "events", "internal").await;
    // The last in key order: not the root, which every read goes through.
    let (page, cells) = *interior.last().unwrap();
    assert!(interior.len() > 1, "{interior:?}");
    overwrite_page(&path, page);

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    let events = recovery
        .tables
        .iter()
        .find(|t| t.table == "events")
        .unwrap();
    assert!(
        events.read_errors > 0 && events.from_pages > 0,
        "{recovery:?}"
    );
    let all = SESSIONS as u64 * EVENTS;
    assert_eq!(
        readable_sessions(&store).await,
        (SESSIONS, all - cells),
        "{recovery:?}"
    );
}

/// Two pages of the sessions' table written over: the rows between them are reached through
/// the table's indexes, and the rows on them are rebuilt from their sessions' events.
#[tokio::test]
async fn lost_session_rows_are_reached_through_an_index_or_rebuilt_from_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let leaves = pages_of(&path, "sessions", "leaf").await;
    assert!(leaves.len() >= 5, "{leaves:?}");
    for (page, _) in [leaves[1], leaves[3]] {
        overwrite_page(&path, page);
    }

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    let lost = leaves[1].1 + leaves[3].1;
    let sessions = recovery
        .tables
        .iter()
        .find(|t| t.table == "sessions")
        .unwrap();
    // Those past the first damaged page came through an index, not from pages.
    assert_eq!(
        (sessions.kept, sessions.from_events, sessions.from_pages),
        (SESSIONS as u64, lost, 0),
        "{recovery:?}"
    );
    assert_eq!(recovery.events_missing, 0, "{recovery:?}");
    assert_eq!(
        readable_sessions(&store).await,
        (SESSIONS, SESSIONS as u64 * EVENTS)
    );
    assert!(
        recovery.summary().contains(&format!(
            "recovered {SESSIONS} sessions ({lost} rebuilt from their events), {} events;",
            SESSIONS as u64 * EVENTS
        )),
        "{}",
        recovery.summary()
    );
    // A rebuilt row: folder, model and title from the session's first event.
    let rebuilt = store
        .list_sessions(None, 10_000, None)
        .await
        .unwrap()
        .sessions;
    assert!(rebuilt.iter().all(|s| {
        s.cwd == "/p"
            && s.model == "anthropic/test"
            && s.title
                .as_deref()
                .is_some_and(|t| t.starts_with("session "))
            && s.last_seq == EVENTS
    }));
}

/// Pages read one by one hold rows deleted since (pages on the free list keep their bytes):
/// those stay deleted.
#[tokio::test]
async fn deleted_sessions_stay_deleted() {
    use sqlx::{ConnectOptions, Connection};
    let dir = tempfile::tempdir().unwrap();
    let built = dir.path().join("built.db");
    let store = filled(&built, SESSIONS).await;
    for n in (0..SESSIONS).filter(|n| n % 3 != 0) {
        assert!(store.delete_session(&id(n)).await.unwrap());
    }
    store.close().await;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&built)
        .connect()
        .await
        .unwrap();
    let free: i64 = sqlx::query_scalar("PRAGMA freelist_count")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert!(free > 20, "{free}");
    let path = dir.path().join("stepper.db");
    std::fs::copy(&built, &path).unwrap();
    let interior = pages_of(&path, "events", "internal").await;
    overwrite_page(&path, interior.last().unwrap().0);

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    let kept = store
        .list_sessions(None, 10_000, None)
        .await
        .unwrap()
        .sessions;
    assert_eq!(kept.len(), SESSIONS.div_ceil(3), "{recovery:?}");
    assert!(
        kept.iter()
            .all(|s| s.id[7..].parse::<usize>().unwrap() % 3 == 0)
    );
    let events: i64 = {
        let (_, events) = readable_sessions(&store).await;
        events as i64
    };
    assert!(
        events <= (SESSIONS.div_ceil(3) as u64 * EVENTS) as i64,
        "{recovery:?}"
    );
}

#[tokio::test]
async fn a_truncated_file_keeps_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len * 6 / 10).unwrap();
    drop(file);

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    let (sessions, events) = readable_sessions(&store).await;
    assert_eq!(
        (sessions as u64, events),
        (recovery.sessions, recovery.events)
    );
    assert!(sessions > 0 && events > 0, "{recovery:?}");
    assert!(events < SESSIONS as u64 * EVENTS, "{recovery:?}");
    assert_eq!(
        std::fs::metadata(&recovery.damaged_copy).unwrap().len(),
        len * 6 / 10
    );
}

#[tokio::test]
async fn recovery_asked_for_keeps_a_sound_store_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_file(dir.path()).await;
    let (store, health) = Store::open_checked(&path, Recover::Always).await.unwrap();
    let recovery = health.recovery.expect("a recovery");
    assert!(!recovery.damaged);
    assert_eq!(
        readable_sessions(&store).await,
        (SESSIONS, SESSIONS as u64 * EVENTS)
    );
    assert!(
        recovery
            .summary()
            .starts_with("the session store was rebuilt as asked: recovered 120 sessions"),
        "{}",
        recovery.summary()
    );
}

#[tokio::test]
async fn a_file_nothing_can_be_read_of_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stepper.db");
    std::fs::write(&path, vec![0x33; 64 * 1024]).unwrap();
    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let recovery = health.recovery.expect("a recovery");
    assert_eq!((recovery.sessions, recovery.events), (0, 0));
    assert!(recovery.unreadable.is_some(), "{recovery:?}");
    assert_eq!(readable_sessions(&store).await, (0, 0));
    assert!(
        recovery
            .summary()
            .contains("; nothing of it could be read ("),
        "{}",
        recovery.summary()
    );
}

/// The WAL of a store whose daemon died: frames SQLite replays, then a frame written over,
/// then commits it will drop.
#[tokio::test]
async fn a_damaged_wal_is_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.db");
    // Few enough pages that no checkpoint restarts the WAL: one chain of frames.
    let store = filled(&live, 30).await;
    // A crash's state: the files as they are while the store is open.
    let path = dir.path().join("stepper.db");
    std::fs::copy(&live, &path).unwrap();
    std::fs::copy(
        dir.path().join("live.db-wal"),
        dir.path().join("stepper.db-wal"),
    )
    .unwrap();
    store.close().await;
    let wal = dir.path().join("stepper.db-wal");
    let read = stepper_store::wal::read(&std::fs::read(&wal).unwrap());
    assert!(read.replayed > 20 && read.damage.is_none(), "{read:?}");
    let bad_frame = read.replayed / 2;
    overwrite(&wal, 32 + bad_frame * (24 + 4096) + 24 + 1000, &[0xee; 16]);
    let damaged = std::fs::read(&wal).unwrap();

    let (store, health) = Store::open_checked(&path, Recover::IfDamaged)
        .await
        .unwrap();
    let loss = health.wal.expect("the WAL's loss reported");
    assert!(
        matches!(loss.damage, WalDamage::Broken { at_frame, commits, .. }
            if at_frame == bad_frame + 1 && commits > 0),
        "{loss:?}"
    );
    assert_eq!(std::fs::read(&loss.copy).unwrap(), damaged);
    assert!(
        loss.summary().starts_with(&format!(
            "the session store's write-ahead log was damaged and its tail dropped: frame {} is \
             damaged",
            bad_frame + 1
        )),
        "{}",
        loss.summary()
    );
    // What it replayed is sound, and short of what was written.
    assert!(health.recovery.is_none());
    let (sessions, _) = readable_sessions(&store).await;
    assert!(sessions > 0 && sessions < 30, "{sessions}");
}
