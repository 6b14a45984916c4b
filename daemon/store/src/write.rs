//! Write transactions that never leave a connection in doubt.
//!
//! When COMMIT fails because the disk is full (or for an I/O error), SQLite rolls the whole
//! transaction back by itself. sqlx's own transactions do not see that: the connection
//! still counts itself inside one, its later "transactions" become savepoints of a
//! transaction nobody commits, and events are published that were never stored — until the
//! daemon stops and they are gone. So a write here takes a connection of its own, opens the
//! transaction with plain SQL (sqlx keeps no count), and hands the connection back to the
//! pool only after a COMMIT that succeeded. On any other path — an error, a dropped future
//! — the connection is closed, and closing rolls back whatever it held: the next write
//! starts on a connection in a state SQLite and sqlx agree on.
//!
//! *Write transactions start with a write*: a transaction that reads first must upgrade its lock,
//! which SQLite refuses at once (SQLITE_BUSY, no busy wait) while the event writer commits; every
//! write path's first statement writes.

use std::ops::{Deref, DerefMut};

use sqlx::pool::PoolConnection;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqlitePool};

use crate::Result;

pub(crate) struct WriteTx {
    conn: PoolConnection<Sqlite>,
    committed: bool,
}

impl WriteTx {
    /// Take a connection and start a write transaction on it. `BEGIN IMMEDIATE` takes the
    /// write lock at once (waiting up to the busy timeout), so no statement of the
    /// transaction meets a lock it would have to upgrade.
    pub(crate) async fn begin(pool: &SqlitePool) -> Result<WriteTx> {
        let mut conn = pool.acquire().await?;
        if let Err(e) = sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await {
            conn.close_on_drop();
            return Err(e.into());
        }
        Ok(WriteTx {
            conn,
            committed: false,
        })
    }

    /// Commit; the connection goes back to the pool only if the commit succeeded.
    pub(crate) async fn commit(mut self) -> Result<()> {
        sqlx::query("COMMIT").execute(&mut *self.conn).await?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        // Not committed: closing the connection rolls back whatever it holds.
        if !self.committed {
            self.conn.close_on_drop();
        }
    }
}

impl Deref for WriteTx {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        &self.conn
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }
}
