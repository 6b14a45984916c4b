//! The SQLite store: sessions and their append-only event log.
//!
//! The event log is the source of truth of every session; everything a client sees was
//! committed here first. Only this crate speaks SQL (sqlx, runtime queries, WAL). Writes to a
//! session's log come from its one writer in the daemon, so seqs never collide.

mod checkpoint;
mod fork;
mod script;
mod session;
mod write;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub use checkpoint::FileChange;
pub use session::{ContextRows, Encoded, NewSession, PendingInput, SessionPage};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the session store failed: {0}")]
    Sqlx(#[from] sqlx::Error),
    #[error("cannot bring the session store up to date: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("the session store holds a record this version cannot read ({0})")]
    Corrupt(String),
    #[error(
        "cursor {0:?} is not one a list handed out — pass nextCursor exactly as returned, or \
         none for the first page"
    )]
    InvalidCursor(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

impl StoreError {
    /// A write the store could not take now — a full disk, an I/O error, a lock held past
    /// the busy timeout — that the same call may get through later.
    pub fn is_unwritable(&self) -> bool {
        matches!(sqlite_code(self).map(|c| c & 0xff), Some(5 | 6 | 10 | 13))
    }
}

/// A handle on the store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    /// The database file, for what people are told when it cannot be written.
    path: std::sync::Arc<Path>,
}

impl Store {
    /// Open (creating if needed) the store at `path` and run pending migrations.
    ///
    /// WAL with `synchronous=FULL`: a commit survives a crash of the process *and* of the
    /// machine, which is what "a client never sees an event a crash could take back" needs.
    /// The cost is one fsync per commit, which group commit spreads over many events.
    pub async fn open(path: &Path) -> Result<Store> {
        let options = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(busy_timeout());
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            // A connection to a local file does not drop; the ping before each use would
            // cost a round trip to the connection's worker thread for nothing.
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        // Migrations commit without waiting for the disk (`synchronous=NORMAL`, for them
        // alone): each migration and its record commit together, so a crash can only take
        // back whole migrations, which then run again. On a fresh install that is a dozen
        // fsyncs off the daemon's first start; the first real commit syncs them all.
        let mut conn = pool.acquire().await?;
        sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(&mut *conn)
            .await?;
        sqlx::migrate!("../../migrations").run(&mut *conn).await?;
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(&mut *conn)
            .await?;
        drop(conn);
        Ok(Store {
            pool,
            path: path.into(),
        })
    }

    /// Why a write failed, for people: what happened to the store and what to do. Every
    /// such failure leaves nothing half-written (see `write.rs`), so trying again is safe.
    pub fn why_not_written(&self, error: &StoreError) -> String {
        let folder = self.path.parent().unwrap_or(&self.path);
        match sqlite_code(error).map(|code| code & 0xff) {
            // SQLITE_FULL, and SQLITE_IOERR: a write the file system refused.
            Some(13 | 10) => format!(
                "the disk holding stepper's data ({}) is full or refuses writes ({error}) — \
                 free some space there; what stepper accepted is stored by itself once it can \
                 be, and anything refused meanwhile can be sent again",
                folder.display()
            ),
            // SQLITE_BUSY, SQLITE_LOCKED: another program holds the lock past the timeout.
            Some(5 | 6) => format!(
                "another program holds the lock on the session store ({}) — close it (a \
                 `sqlite3` shell in a transaction, a backup tool); what stepper accepted is \
                 stored by itself once the lock is free, and anything refused meanwhile can be \
                 sent again",
                self.path.display()
            ),
            _ => format!(
                "the session store ({}) cannot be written: {error} — stepper tries again by \
                 itself; `stepper doctor` checks the store",
                self.path.display()
            ),
        }
    }

    /// Close every connection, checkpointing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// How long a write waits for a lock another program holds before the store is in trouble
/// (see the event log's backlog): 10 s, or `STEPPER_STORE_BUSY_MS`.
fn busy_timeout() -> Duration {
    let ms = std::env::var("STEPPER_STORE_BUSY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    Duration::from_millis(ms)
}

/// SQLite's (extended) result code of a failed query, when it is SQLite's error.
fn sqlite_code(error: &StoreError) -> Option<i32> {
    match error {
        StoreError::Sqlx(sqlx::Error::Database(e)) => e.code()?.parse().ok(),
        _ => None,
    }
}

/// Milliseconds since the Unix epoch, UTC.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
