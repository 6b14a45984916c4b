//! A damaged store found at start: checked, moved aside, and what can still be read of it
//! copied into a new store, so the daemon starts instead of failing on every command.
//!
//! The order keeps a cut-short recovery harmless: the new store is built beside the old one
//! (from a scratch copy, never the original), and only then are the files swapped, so until
//! the swap nothing at the store's path has changed and the next start simply tries again.
//! What is copied, and how, is `salvage`'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sqlx::sqlite::SqliteConnection;

use crate::pages;
use crate::salvage::{self, TableCopy, short, sqlite_says};
use crate::wal::{self, WalDamage};
use crate::{MIGRATOR, Result, Store, StoreError, connect_options, is_damage};

/// How [`Store::open_checked`] treats the file it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recover {
    /// Recover only when SQLite finds the file damaged.
    IfDamaged,
    /// Recover whatever the check says (`stepper doctor --recover-store`).
    Always,
}

/// What opening the store found, and what was done about it.
#[derive(Debug, Clone, Default)]
pub struct StoreHealth {
    /// How long `PRAGMA quick_check` took.
    pub check: Duration,
    pub recovery: Option<Recovery>,
    pub wal: Option<WalLoss>,
}

/// A recovery: where the old file went and what the new store kept of it.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// Why: what SQLite said, or that it was asked for.
    pub reason: String,
    /// Whether the file was found damaged (rather than recovered on request).
    pub damaged: bool,
    /// The old file (with its `-wal` beside it, if it had one).
    pub damaged_copy: PathBuf,
    pub sessions: u64,
    pub events: u64,
    /// Events the kept sessions had (by their last seq) that could not be read, and of how
    /// many sessions.
    pub events_missing: u64,
    pub sessions_incomplete: u64,
    pub tables: Vec<TableCopy>,
    /// Why nothing at all could be read, when nothing could.
    pub unreadable: Option<String>,
    pub took: Duration,
}

/// A WAL whose tail SQLite dropped when the store opened.
#[derive(Debug, Clone)]
pub struct WalLoss {
    pub damage: WalDamage,
    /// A copy of the WAL as it was before SQLite opened it.
    pub copy: PathBuf,
}

impl Recovery {
    /// Sessions whose row was lost and rebuilt from their events.
    pub fn sessions_rebuilt(&self) -> u64 {
        self.tables
            .iter()
            .filter(|t| t.table == "sessions")
            .map(|t| t.from_events)
            .sum()
    }

    /// The line the log, `stepper doctor` and clients show.
    pub fn summary(&self) -> String {
        let kept = match &self.unreadable {
            Some(why) => format!("nothing of it could be read ({why}), so it starts empty"),
            None => format!(
                "recovered {} sessions{}, {} events{}",
                self.sessions,
                match self.sessions_rebuilt() {
                    0 => String::new(),
                    n => format!(" ({n} rebuilt from their events)"),
                },
                self.events,
                match self.events_missing {
                    0 => String::new(),
                    missing => format!(
                        " ({missing} events of {} could not be read)",
                        match self.sessions_incomplete {
                            1 => "1 session".to_string(),
                            n => format!("{n} sessions"),
                        }
                    ),
                }
            ),
        };
        if self.damaged {
            format!(
                "the session store was damaged ({}); {kept}; the damaged copy is at {}",
                self.reason,
                self.damaged_copy.display()
            )
        } else {
            format!(
                "the session store was rebuilt as asked: {kept}; the previous file is at {}",
                self.damaged_copy.display()
            )
        }
    }
}

impl WalLoss {
    pub fn summary(&self) -> String {
        format!(
            "the session store's write-ahead log was damaged and its tail dropped: {}; a copy \
             of the log is at {}",
            self.damage.describe(),
            self.copy.display()
        )
    }
}

impl Store {
    /// [`Store::open`], checking the file first and recovering it when it is damaged (or
    /// when `recover` says so): a damaged store must not keep the daemon from starting.
    ///
    /// The WAL is read before SQLite replays it, so a tail it drops is reported and kept
    /// aside. Then `PRAGMA quick_check` (every page's structure, not the indexes against
    /// their tables) decides; an open that fails with `SQLITE_CORRUPT` or `SQLITE_NOTADB`
    /// counts as damage too. Other failures (permissions, a full disk) are returned.
    pub async fn open_checked(path: &Path, recover: Recover) -> Result<(Store, StoreHealth)> {
        let mut health = StoreHealth {
            wal: keep_dropped_wal(path).await?,
            ..StoreHealth::default()
        };
        let damage = match recover {
            // Nothing to rebuild yet: a first start.
            Recover::Always if !tokio::fs::try_exists(path).await.unwrap_or(true) => {
                return Ok((Store::open(path).await?, health));
            }
            Recover::Always => None,
            Recover::IfDamaged => {
                let started = Instant::now();
                let found = check_file(path).await?;
                health.check = started.elapsed();
                match found {
                    None => return Ok((Store::open(path).await?, health)),
                    Some(found) => Some(found),
                }
            }
        };
        let (store, recovery) = recover_into_new(path, damage).await?;
        health.recovery = Some(recovery);
        Ok((store, health))
    }

    /// `PRAGMA quick_check`: `None` when it finds nothing, else its first findings.
    pub async fn quick_check(&self) -> Result<Option<String>> {
        let mut conn = self.pool.acquire().await?;
        quick_check(&mut conn).await
    }
}

async fn quick_check(conn: &mut SqliteConnection) -> Result<Option<String>> {
    let rows: Vec<String> = sqlx::query_scalar("PRAGMA quick_check(5)")
        .fetch_all(&mut *conn)
        .await?;
    Ok(match rows.as_slice() {
        [ok] if ok == "ok" => None,
        // Its findings, without the line naming the database they are in.
        _ => Some(
            rows.iter()
                .flat_map(|row| row.lines())
                .filter(|line| !line.starts_with("*** in database"))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    })
}

/// Why the file at `path` counts as damaged, if it does; other failures are errors.
///
/// On a connection of its own, closed before this returns: a pool's `close` can return
/// with a connection still open (one being handed back meanwhile), and a connection to a
/// file moved aside deletes the WAL by name when it closes — by then the new store's.
async fn check_file(path: &Path) -> Result<Option<String>> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = match connect_options(path)?.connect().await {
        Ok(conn) => conn,
        Err(e) if is_damage(&e) => return Ok(Some(sqlite_says(&e))),
        Err(e) => return Err(e.into()),
    };
    let found = quick_check(&mut conn).await;
    // Closing checkpoints what the WAL holds into the file, which is moved aside next if
    // damaged: its copy then holds everything in one file.
    let _ = conn.close().await;
    match found {
        Ok(None) => Ok(None),
        Ok(Some(found)) => Ok(Some(format!("quick_check: {}", short(&found)))),
        Err(StoreError::Damaged(e)) => Ok(Some(sqlite_says(&e))),
        Err(e) => Err(e),
    }
}

/// The WAL next to `path` read as SQLite will replay it; when it will drop something, a
/// copy of it is kept aside first.
async fn keep_dropped_wal(path: &Path) -> Result<Option<WalLoss>> {
    let path = path.to_path_buf();
    blocking(move || {
        let wal_path = suffixed(&path, "-wal");
        let Some(damage) = wal::inspect_file(&wal_path)? else {
            return Ok(None);
        };
        let copy = unused(&suffixed(&path, &format!(".wal-damaged-{}", stamp())));
        std::fs::copy(&wal_path, &copy)?;
        Ok(Some(WalLoss { damage, copy }))
    })
    .await
}

/// Where the new store is built while the one at `store` is rebuilt: present only then, so
/// a client starting the daemon knows to wait longer.
pub fn rebuild_path(store: &Path) -> PathBuf {
    suffixed(store, ".recovering")
}

/// Build a new store from what can be read of the one at `path`, then swap them: the old
/// file (and its WAL) moves aside, the new one takes its place. Until the swap nothing at
/// `path` changes, so a recovery cut short runs again at the next start.
async fn recover_into_new(path: &Path, damage: Option<String>) -> Result<(Store, Recovery)> {
    let started = Instant::now();
    let scratch = suffixed(path, ".salvage");
    let fresh = rebuild_path(path);
    let header = {
        let (path, scratch, fresh) = (path.to_path_buf(), scratch.clone(), fresh.clone());
        blocking(move || {
            remove_with_sidecars(&scratch)?;
            remove_with_sidecars(&fresh)?;
            copy_with_wal(&path, &scratch)?;
            pages::repair_header(&scratch, &suffixed(&scratch, "-wal"))
        })
        .await?
    };
    // One connection, closed for sure before the files move (see `check_file`).
    let mut conn = {
        use sqlx::ConnectOptions;
        connect_options(&fresh)?.connect().await?
    };
    MIGRATOR.run(&mut conn).await?;
    let salvaged = salvage::salvage(&mut conn, &scratch, header).await;
    let counts = match &salvaged {
        Ok(_) => Some(count(&mut conn).await?),
        Err(_) => None,
    };
    {
        use sqlx::Connection;
        conn.close().await?;
    }

    let aside = {
        let path = path.to_path_buf();
        blocking(move || {
            // Written without syncing (see `salvage`): on the disk before it is the store.
            std::fs::File::open(&fresh)?.sync_all()?;
            let aside = unused(&suffixed(&path, &format!(".damaged-{}", stamp())));
            for sidecar in ["-wal", "-shm"] {
                rename_if_present(&suffixed(&path, sidecar), &suffixed(&aside, sidecar))?;
            }
            std::fs::rename(&path, &aside)?;
            for sidecar in ["-wal", "-shm"] {
                rename_if_present(&suffixed(&fresh, sidecar), &suffixed(&path, sidecar))?;
            }
            std::fs::rename(&fresh, &path)?;
            sync_folder_of(&path);
            remove_with_sidecars(&scratch)?;
            Ok(aside)
        })
        .await?
    };
    let [sessions, events, events_missing, sessions_incomplete] = counts.unwrap_or_default();
    let recovery = Recovery {
        damaged: damage.is_some(),
        reason: damage.unwrap_or_else(|| "recovery was asked for".into()),
        damaged_copy: aside,
        sessions,
        events,
        events_missing,
        sessions_incomplete,
        unreadable: salvaged.as_ref().err().cloned(),
        tables: salvaged.unwrap_or_default(),
        took: started.elapsed(),
    };
    Ok((Store::open(path).await?, recovery))
}

/// What the new store kept: sessions, events, and the events its sessions lack (a
/// session's events run from seq 1 to its `last_seq`) in how many sessions.
async fn count(conn: &mut SqliteConnection) -> Result<[u64; 4]> {
    let (sessions, events, missing, incomplete): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), coalesce(sum(kept), 0), coalesce(sum(last_seq - kept), 0), \
                coalesce(sum(last_seq > kept), 0) \
         FROM (SELECT s.last_seq, \
                      (SELECT count(*) FROM main.events e WHERE e.session_id = s.id) AS kept \
               FROM main.sessions s)",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok([sessions, events, missing, incomplete].map(|n| u64::try_from(n).unwrap_or(0)))
}

/// Run blocking file work off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Io(std::io::Error::other(e.to_string())))?
        .map_err(StoreError::Io)
}

/// `path` with `suffix` appended to its file name.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// `path`, or `path-2`, `path-3`… if it is taken.
fn unused(path: &Path) -> PathBuf {
    let mut candidate = path.to_path_buf();
    let mut n = 2;
    while candidate.exists() {
        candidate = suffixed(path, &format!("-{n}"));
        n += 1;
    }
    candidate
}

/// Make the renames in `path`'s folder durable (where a folder can be opened: not on
/// Windows, whose renames need no such step).
fn sync_folder_of(path: &Path) {
    if let Some(folder) = path.parent()
        && let Ok(folder) = std::fs::File::open(folder)
    {
        let _ = folder.sync_all();
    }
}

fn rename_if_present(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

fn remove_with_sidecars(path: &Path) -> std::io::Result<()> {
    for sidecar in ["", "-wal", "-shm", "-journal"] {
        match std::fs::remove_file(suffixed(path, sidecar)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Copy the store at `from` with its WAL (what SQLite replays of it is part of the store).
fn copy_with_wal(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
    match std::fs::copy(suffixed(from, "-wal"), suffixed(to, "-wal")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// UTC now as `20261205T112233`, for the names of files moved aside.
fn stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, time) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}",
        time / 3600,
        time % 3600 / 60,
        time % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_792), (2026, 12, 5));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
