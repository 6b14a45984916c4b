//! What can still be read of a damaged store, copied into a new one.
//!
//! First through SQL (`by_key`): the damaged copy is attached to the new store (made by the
//! migrations) and each table is copied in key order — forwards until a read fails, then backwards from
//! the end to the same point, then row by row through the table's indexes (trees of their
//! own) — so one damaged page costs the rows on it, not the rest of the table. Tables keyed by
//! session are copied session by session, which confines a damaged page to the sessions whose
//! rows it held. Only rows a table's root still leads to can be read that way, so when a read
//! failed, every page of the file is then read directly (`by_page`, on `crate::pages`) and
//! each record matched to the table it fits: that finds the rows below a lost interior page
//! or past a truncation.
//!
//! *A damaged store is rebuilt through SQL first, then from its pages.* SQLite cannot repair a
//! file, and the shell's `.recover` (which reads pages) is an extension (`ext/recover`) that the
//! amalgamation libsqlite3-sys bundles — for sqlx and rusqlite alike — does not hold; a second
//! SQLite linked for it is not worth it. So the daemon reads what SQL still reaches — around a
//! damaged page, in both directions, and through the indexes, each a tree of its own — and, when a
//! read failed, parses the file's b-tree pages itself (~300 lines of the documented format),
//! matching each record to the one table whose column types it fits (`file_changes` and
//! `pending_inputs` share a shape; a record fitting both is left out). Pages on the free list are
//! skipped, so deleted rows stay deleted; when the list cannot be read (a rebuilt header, a
//! truncated trunk), `context` and `pending_inputs` — whose rows are deleted while a session lives
//! — are not taken from pages. A session's `last_seq` is raised to its last kept event, so its
//! writer never reuses a seq. A session whose row was lost is rebuilt from its events when its
//! `SessionCreated` was found (folder, model, title, status of its last turn); its mode, sandbox
//! and saved environment are lost. The check at start is `quick_check`, not `integrity_check`: it
//! reads every page but does not compare indexes with their tables: 60 ms for 2,000 sessions of 100
//! events (34 MB), 0.2 s at 164 MB; a rebuild takes 3.4 s and 10 s (`cargo bench -p stepper-store
//! --bench check`). A client starting the daemon waits past its usual 15 s while
//! `stepper.db.recovering` (the store being built) exists.

mod by_key;
mod by_page;

use std::path::Path;

use sqlx::sqlite::SqliteConnection;

use crate::Result;
use crate::pages::Header;

/// One table's copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableCopy {
    pub table: String,
    /// Rows now in the new store.
    pub kept: u64,
    /// Rows whose key could be read but not the row (or whose row is not valid).
    pub lost: u64,
    /// Reads that failed: each leaves a range of the table unread.
    pub read_errors: u64,
    /// Rows of `kept` that only reading the file's pages one by one found.
    pub from_pages: u64,
    /// Rows of `kept` rebuilt from other tables: a session's row from its events.
    pub from_events: u64,
}

/// Copy what can be read of the store at `scratch` into the (new, empty) store `conn` is
/// on. `Err` says why nothing at all could be read.
pub(crate) async fn salvage(
    conn: &mut SqliteConnection,
    scratch: &Path,
    header: Header,
) -> std::result::Result<Vec<TableCopy>, String> {
    // As the `sqlite3` shell's `.dump` does for a damaged file: a schema SQLite finds odd
    // does not stop every read.
    let _ = sqlx::query("PRAGMA writable_schema = ON")
        .execute(&mut *conn)
        .await;
    sqlx::query("ATTACH DATABASE ? AS damaged")
        .bind(scratch.display().to_string())
        .execute(&mut *conn)
        .await
        .map_err(|e| sqlite_says(&e))?;
    // A crash meanwhile leaves only the `.recovering` file, which the next start makes
    // afresh: nothing needs to reach the disk before the end, where the file is synced.
    let _ = sqlx::query("PRAGMA main.synchronous = OFF")
        .execute(&mut *conn)
        .await;
    let copied = match by_key::copy_tables(conn).await {
        Ok(mut copies) => {
            if copies.iter().any(|c| c.read_errors > 0) {
                by_page::rescue_from_pages(conn, scratch, header, &mut copies).await;
            }
            cover_kept_events(conn).await;
            Ok(copies)
        }
        Err(e) => Err(e),
    };
    let _ = sqlx::query("DETACH DATABASE damaged")
        .execute(&mut *conn)
        .await;
    let _ = sqlx::query("PRAGMA main.synchronous = FULL")
        .execute(&mut *conn)
        .await;
    let _ = sqlx::query("PRAGMA writable_schema = OFF")
        .execute(&mut *conn)
        .await;
    copied
}

/// A session's `last_seq` at least its last kept event's: the event writer numbers the next
/// event after it, and a row found stale (an older copy on a page) must not make it reuse a
/// seq.
async fn cover_kept_events(conn: &mut SqliteConnection) {
    let raised = sqlx::query(
        "UPDATE main.sessions SET last_seq = \
             (SELECT max(seq) FROM main.events e WHERE e.session_id = sessions.id) \
         WHERE last_seq < (SELECT max(seq) FROM main.events e WHERE e.session_id = sessions.id)",
    )
    .execute(&mut *conn)
    .await;
    if let Err(e) = raised {
        tracing::warn!(error = %e, "sessions' last seqs not checked against their events");
    }
}

/// The new store's tables (not SQLite's or the migrations' own), each after the tables its
/// foreign keys name: a row's parent is copied before it.
async fn tables_in_copy_order(conn: &mut SqliteConnection) -> Result<Vec<String>> {
    let mut left: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite%' AND name <> '_sqlx_migrations' ORDER BY name",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut parents = Vec::new();
    for name in &left {
        let of: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?, 'main')")
                .bind(name)
                .fetch_all(&mut *conn)
                .await?;
        parents.push((name.clone(), of));
    }
    let mut ordered: Vec<String> = Vec::new();
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|t| {
                parents
                    .iter()
                    .find(|(name, _)| name == *t)
                    .is_none_or(|(_, of)| of.iter().all(|p| p == *t || ordered.contains(p)))
            })
            .cloned()
            .collect();
        // A cycle of foreign keys: copy the rest in name order (inserts that fail are lost
        // rows, counted).
        let ready = if ready.is_empty() {
            left.clone()
        } else {
            ready
        };
        left.retain(|t| !ready.contains(t));
        ordered.extend(ready);
    }
    Ok(ordered)
}

/// Columns that hold JSON the daemon decodes: a row whose text there is not JSON (bytes
/// written over it) would fail every read of its session, so it is not copied.
const JSON_COLUMNS: &[(&str, &str)] = &[
    ("sessions", "env_json"),
    ("events", "payload"),
    ("context", "message"),
];

/// A name as SQL: quoted, so no name is read as a keyword.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| ident(n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn marks(n: usize) -> String {
    vec!["?"; n].join(", ")
}

fn and(conditions: &[String]) -> String {
    if conditions.is_empty() {
        "1".into()
    } else {
        conditions.join(" AND ")
    }
}

/// The first line of an error, short enough for a summary.
pub(crate) fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// What SQLite said, without sqlx's wrapping: `file is not a database (SQLite code 26)`.
pub(crate) fn sqlite_says(e: &sqlx::Error) -> String {
    match e.as_database_error() {
        Some(d) => short(&format!(
            "{} (SQLite code {})",
            d.message(),
            d.code().unwrap_or_default()
        )),
        None => short(&e.to_string()),
    }
}
