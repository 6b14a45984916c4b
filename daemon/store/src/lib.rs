//! The SQLite store: sessions and their append-only event log.
//!
//! The event log is the source of truth of every session; everything a client sees was
//! committed here first. Only this crate speaks SQL (sqlx, runtime queries, WAL). Writes to a
//! session's log come from its one writer in the daemon, so seqs never collide.
//!
//! *A commit is one script*: its statements (the events, the session row, pending inputs, context)
//! go to sqlx as one multi-statement query between `BEGIN` and `COMMIT`, and the pool does not ping
//! a connection before handing it out. Every sqlx call is a round trip to the connection's worker
//! thread; a short `ask` made ~26 of them and now ~12, which took its daemon-side context switches
//! from ~125 to ~90.
//!
//! *Migrations commit without fsync*: they run on one connection with `synchronous=NORMAL`, reset
//! to `FULL` before the pool serves anything. Each migration commits with its record, so a crash
//! can only take back whole migrations, which run again; a fresh install's first start lost a dozen
//! fsyncs (spawn to first connection 14.5 → ~7 ms).
//!
//! The tables: `sessions` (with a summary — `last_seq`, `status`, `turns`, `title` — that changes
//! in the same transaction as the batch of events it summarises), the append-only `events` (each
//! row with its turn and, for an agent inside a turn, its agent id), `pending_inputs` (added with
//! an `InputQueued`, removed with its `TurnStarted`), `context` (each turn's model messages, per
//! layer), and the checkpoints' `blobs` and `file_changes`. Migrations live in `/migrations`,
//! embedded with `migrate!`.

mod attachment;
mod checkpoint;
mod fork;
mod pages;
mod recovery;
mod salvage;
mod script;
mod session;
pub mod wal;
mod write;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub use checkpoint::FileChange;
pub use recovery::{Recover, Recovery, StoreHealth, WalLoss, rebuild_path};
pub use salvage::TableCopy;
pub use session::{ContextRows, Encoded, NewSession, PendingInput, SessionPage};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the session store failed: {0}")]
    Sqlx(sqlx::Error),
    /// SQLite found the file damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`).
    #[error(
        "the session store is damaged ({0}) — 'stepper doctor --recover-store' moves it aside \
         and keeps what can still be read"
    )]
    Damaged(sqlx::Error),
    #[error("the session store's files: {0}")]
    Io(std::io::Error),
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

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        if is_damage(&e) {
            StoreError::Damaged(e)
        } else {
            StoreError::Sqlx(e)
        }
    }
}

impl StoreError {
    /// Whether SQLite found the file damaged, wherever the error came from.
    pub fn is_damage(&self) -> bool {
        match self {
            StoreError::Damaged(_) => true,
            StoreError::Migrate(
                sqlx::migrate::MigrateError::Execute(e)
                | sqlx::migrate::MigrateError::ExecuteMigration(e, _),
            ) => is_damage(e),
            _ => false,
        }
    }
}

/// `SQLITE_CORRUPT` (11, with its extended codes) or `SQLITE_NOTADB` (26).
fn is_damage(e: &sqlx::Error) -> bool {
    let Some(code) = e.as_database_error().and_then(|d| d.code()) else {
        return false;
    };
    code.parse::<i32>()
        .is_ok_and(|code| matches!(code & 0xff, 11 | 26))
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
        let options = connect_options(path)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            // A connection to a local file does not drop; the ping before each use would
            // cost a round trip to the connection's worker thread for nothing.
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        match Store::migrate(&pool).await {
            Ok(()) => Ok(Store {
                pool,
                path: path.into(),
            }),
            Err(e) => {
                // Closed before the caller acts on the error: a damaged file is moved aside
                // next, and no connection may still be at it then.
                pool.close().await;
                Err(e)
            }
        }
    }

    async fn migrate(pool: &SqlitePool) -> Result<()> {
        // Migrations commit without waiting for the disk (`synchronous=NORMAL`, for them
        // alone): each migration and its record commit together, so a crash can only take
        // back whole migrations, which then run again. On a fresh install that is a dozen
        // fsyncs off the daemon's first start; the first real commit syncs them all.
        let mut conn = pool.acquire().await?;
        sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(&mut *conn)
            .await?;
        MIGRATOR.run(&mut *conn).await?;
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(&mut *conn)
            .await?;
        drop(conn);
        Ok(())
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

    /// Close every connection, the WAL checkpointed into the file (and emptied) first: the
    /// pool's `close` can return with a connection still open (one being handed back
    /// meanwhile), and then the last close, which would have checkpointed, never comes.
    pub async fn close(&self) {
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await
        {
            tracing::warn!(error = %e, "the store's WAL was not checkpointed at close");
        }
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

/// The migrations, embedded at build time.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// How every connection to a store file is made.
fn connect_options(path: &Path) -> Result<SqliteConnectOptions> {
    Ok(SqliteConnectOptions::from_str("sqlite://")?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(busy_timeout()))
}

/// Milliseconds since the Unix epoch, UTC.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
