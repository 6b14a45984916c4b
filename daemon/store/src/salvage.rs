//! What can still be read of a damaged store, copied into a new one.
//!
//! First through SQL: the damaged copy is attached to the new store (made by the migrations)
//! and each table is copied in key order — forwards until a read fails, then backwards from
//! the end to the same point, then row by row through the table's indexes (trees of their
//! own) — so one damaged page costs the rows on it, not the rest of the table. Tables keyed by
//! session are copied session by session, which confines a damaged page to the sessions whose
//! rows it held. Only rows a table's root still leads to can be read that way, so when a read
//! failed, every page of the file is then read directly (`pages`) and each record matched to
//! the table it fits: that finds the rows below a lost interior page or past a truncation.

use std::collections::HashMap;
use std::path::Path;

use sqlx::sqlite::{Sqlite, SqliteArguments, SqliteConnection, SqliteRow};
use sqlx::{Row, TypeInfo, ValueRef};

use crate::pages::{Field, Header, PageFile, Record, Tree};
use crate::recovery::TableCopy;
use crate::{Result, StoreError};

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
    let copied = match copy_tables(conn).await {
        Ok(mut copies) => {
            if copies.iter().any(|c| c.read_errors > 0) {
                rescue_from_pages(conn, scratch, header, &mut copies).await;
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

async fn copy_tables(conn: &mut SqliteConnection) -> std::result::Result<Vec<TableCopy>, String> {
    // The damaged file's schema is what every read goes through.
    let theirs: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM damaged.sqlite_master WHERE type = 'table' ORDER BY name",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| format!("its schema: {}", sqlite_says(&e)))?;
    let tables = tables_in_copy_order(conn)
        .await
        .map_err(|e| short(&e.to_string()))?;
    for name in &theirs {
        if !tables.contains(name) && !name.starts_with("sqlite_") && name != "_sqlx_migrations" {
            tracing::warn!(table = %name, "the damaged store has a table this version does not know: not copied");
        }
    }
    // Each statement commits on its own: a transaction that read a damaged page of the
    // attached file cannot commit at all (SQLite answers the COMMIT with SQLITE_CORRUPT).
    let mut copies = Vec::new();
    for name in tables.iter().filter(|t| theirs.contains(t)) {
        let table = match Table::describe(conn, name).await {
            Ok(table) => table,
            Err(e) => {
                copies.push(TableCopy {
                    table: name.clone(),
                    read_errors: 1,
                    ..TableCopy::default()
                });
                tracing::warn!(table = %name, error = %e, "cannot read the damaged table's columns");
                continue;
            }
        };
        copies.push(table.copy(conn).await);
    }
    Ok(copies)
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

/// Keys read per step.
const BATCH: usize = 256;

/// A table as the copy sees it.
struct Table {
    name: String,
    /// The columns both stores have, in the new store's order.
    columns: Vec<String>,
    /// What rows are ordered and found by: the primary key, or `rowid`.
    key: Vec<String>,
    /// The key starts with `session_id`: copied session by session.
    by_session: bool,
    /// Secondary indexes of the damaged table, which reach rows past a damaged page.
    indexes: Vec<String>,
    json: Option<&'static str>,
}

/// A value of a key column, as read.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

type Key = Vec<Value>;

enum Step<'a> {
    /// Keys after this one (all, for `None`), ascending.
    After(Option<&'a Key>),
    /// Keys before `before` (the end, for `None`) and after `floor`, descending.
    Before {
        before: Option<&'a Key>,
        floor: Option<&'a Key>,
    },
}

impl Table {
    async fn describe(conn: &mut SqliteConnection, name: &str) -> Result<Table> {
        let ours: Vec<(String, i64)> =
            sqlx::query_as("SELECT name, pk FROM pragma_table_info(?, 'main') ORDER BY cid")
                .bind(name)
                .fetch_all(&mut *conn)
                .await?;
        let theirs: Vec<String> =
            sqlx::query_scalar("SELECT name FROM pragma_table_info(?, 'damaged')")
                .bind(name)
                .fetch_all(&mut *conn)
                .await?;
        let without_rowid: bool = sqlx::query_scalar(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?",
        )
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?
        .unwrap_or(false);
        let mut key: Vec<(i64, String)> = ours
            .iter()
            .filter(|(_, pk)| *pk > 0)
            .map(|(column, pk)| (*pk, column.clone()))
            .collect();
        key.sort();
        let key: Vec<String> = if without_rowid && !key.is_empty() {
            key.into_iter().map(|(_, column)| column).collect()
        } else {
            vec!["rowid".into()]
        };
        if key.iter().any(|k| k != "rowid" && !theirs.contains(k)) {
            return Err(StoreError::Corrupt(format!(
                "the damaged {name} has no column {}",
                key.join(", ")
            )));
        }
        // For a table without rowid its primary key is the table itself, not an index.
        let indexes: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM pragma_index_list(?, 'damaged') WHERE NOT (? AND origin = 'pk')",
        )
        .bind(name)
        .bind(without_rowid)
        .fetch_all(&mut *conn)
        .await?;
        Ok(Table {
            name: name.to_string(),
            columns: ours
                .into_iter()
                .map(|(column, _)| column)
                .filter(|c| theirs.contains(c))
                .collect(),
            by_session: name != "sessions" && key.len() > 1 && key[0] == "session_id",
            key,
            indexes,
            json: JSON_COLUMNS
                .iter()
                .find(|(table, _)| *table == name)
                .map(|(_, column)| *column),
        })
    }

    async fn copy(&self, conn: &mut SqliteConnection) -> TableCopy {
        let mut copy = TableCopy {
            table: self.name.clone(),
            ..TableCopy::default()
        };
        if self.by_session {
            let sessions: Vec<String> =
                sqlx::query_scalar("SELECT id FROM main.sessions ORDER BY id")
                    .fetch_all(&mut *conn)
                    .await
                    .unwrap_or_default();
            for id in sessions {
                self.copy_span(conn, Some(&Value::Text(id)), &mut copy)
                    .await;
            }
        } else {
            self.copy_span(conn, None, &mut copy).await;
        }
        if copy.read_errors > 0 {
            self.copy_through_indexes(conn, &mut copy).await;
        }
        copy
    }

    /// The key columns a span is ordered by: the key without its session.
    fn span_key(&self) -> &[String] {
        if self.by_session {
            &self.key[1..]
        } else {
            &self.key
        }
    }

    /// Copy every row of the table (or of one session's part of it): forwards until a read
    /// fails, then backwards from the end to where the forward pass stopped.
    async fn copy_span(
        &self,
        conn: &mut SqliteConnection,
        session: Option<&Value>,
        copy: &mut TableCopy,
    ) {
        let mut last: Option<Key> = None;
        loop {
            match self.keys(conn, session, Step::After(last.as_ref())).await {
                Ok(keys) if keys.is_empty() => return,
                Ok(keys) => {
                    self.copy_keys(conn, session, &keys, copy).await;
                    last = keys.last().cloned();
                }
                Err(e) => {
                    tracing::debug!(table = %self.name, error = %e, "forward read stopped");
                    copy.read_errors += 1;
                    break;
                }
            }
        }
        let mut before: Option<Key> = None;
        loop {
            let step = Step::Before {
                before: before.as_ref(),
                floor: last.as_ref(),
            };
            match self.keys(conn, session, step).await {
                Ok(keys) if keys.is_empty() => return,
                Ok(keys) => {
                    self.copy_keys(conn, session, &keys, copy).await;
                    before = keys.last().cloned();
                }
                Err(e) => {
                    tracing::debug!(table = %self.name, error = %e, "backward read stopped");
                    copy.read_errors += 1;
                    return;
                }
            }
        }
    }

    /// The next keys of a step, up to [`BATCH`].
    async fn keys(
        &self,
        conn: &mut SqliteConnection,
        session: Option<&Value>,
        step: Step<'_>,
    ) -> std::result::Result<Vec<Key>, sqlx::Error> {
        let key = self.span_key();
        let columns = list(key);
        let mut conditions = Vec::new();
        let mut args: Vec<&Value> = Vec::new();
        if let Some(session) = session {
            conditions.push("session_id = ?".to_string());
            args.push(session);
        }
        let order = match step {
            Step::After(after) => {
                if let Some(after) = after {
                    conditions.push(format!("({columns}) > ({})", marks(key.len())));
                    args.extend(after);
                }
                "ASC"
            }
            Step::Before { before, floor } => {
                if let Some(before) = before {
                    conditions.push(format!("({columns}) < ({})", marks(key.len())));
                    args.extend(before);
                }
                if let Some(floor) = floor {
                    conditions.push(format!("({columns}) > ({})", marks(key.len())));
                    args.extend(floor);
                }
                "DESC"
            }
        };
        let order_by = key
            .iter()
            .map(|k| format!("{} {order}", ident(k)))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {columns} FROM damaged.{} WHERE {} ORDER BY {order_by} LIMIT {BATCH}",
            ident(&self.name),
            and(&conditions),
        );
        let rows = bind_all(sqlx::query(&sql), &args)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|row| (0..key.len()).map(|i| value(row, i)).collect())
            .collect()
    }

    /// Copy the rows of `keys` (one step's, in either order): all at once, else one by one.
    async fn copy_keys(
        &self,
        conn: &mut SqliteConnection,
        session: Option<&Value>,
        keys: &[Key],
        copy: &mut TableCopy,
    ) {
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return;
        };
        let (low, high) = if first_is_lower(first, last) {
            (first, last)
        } else {
            (last, first)
        };
        let columns = list(self.span_key());
        let marks = marks(self.span_key().len());
        let range = format!("({columns}) >= ({marks}) AND ({columns}) <= ({marks})");
        let mut args: Vec<&Value> = session.into_iter().collect();
        args.extend(low);
        args.extend(high);
        match self.insert(conn, session.is_some(), &range, &args).await {
            Ok(inserted) => {
                copy.kept += inserted;
                copy.lost += (keys.len() as u64).saturating_sub(inserted);
                return;
            }
            Err(e) => tracing::debug!(table = %self.name, error = %e, "copying row by row"),
        }
        let one = format!("({columns}) = ({marks})");
        for key in keys {
            let mut args: Vec<&Value> = session.into_iter().collect();
            args.extend(key);
            match self.insert(conn, session.is_some(), &one, &args).await {
                Ok(inserted) => {
                    copy.kept += inserted;
                    copy.lost += 1 - inserted.min(1);
                }
                Err(_) => copy.lost += 1,
            }
        }
    }

    /// Copy the rows matching `condition` (after the session's, when `by_session`); how many
    /// went in. A row that breaks a constraint of the new store, or whose JSON is not JSON,
    /// is left out.
    async fn insert(
        &self,
        conn: &mut SqliteConnection,
        by_session: bool,
        condition: &str,
        args: &[&Value],
    ) -> std::result::Result<u64, sqlx::Error> {
        let columns = list(&self.columns);
        let mut conditions = Vec::new();
        if by_session {
            conditions.push("session_id = ?".to_string());
        }
        conditions.push(condition.to_string());
        if let Some(json) = self.json {
            conditions.push(format!("json_valid({})", ident(json)));
        }
        let sql = format!(
            "INSERT OR IGNORE INTO main.{table} ({columns}) SELECT {columns} FROM damaged.{table} \
             WHERE {}",
            and(&conditions),
            table = ident(&self.name),
        );
        let done = bind_all(sqlx::query(&sql), args)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected())
    }

    /// After a failed read: every key the damaged table's indexes still hold, each row
    /// copied on its own (those already copied are ignored). An index is a tree of its own,
    /// so it often leads past a page of the table that cannot be read.
    async fn copy_through_indexes(&self, conn: &mut SqliteConnection, copy: &mut TableCopy) {
        use futures::TryStreamExt;
        let sessions: Vec<String> = if self.by_session {
            sqlx::query_scalar("SELECT id FROM main.sessions")
                .fetch_all(&mut *conn)
                .await
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for index in &self.indexes {
            let sql = format!(
                "SELECT {} FROM damaged.{} INDEXED BY {}",
                list(&self.key),
                ident(&self.name),
                ident(index)
            );
            let mut keys: Vec<Key> = Vec::new();
            {
                let mut rows = sqlx::query(&sql).fetch(&mut *conn);
                loop {
                    match rows.try_next().await {
                        Ok(Some(row)) => {
                            match (0..self.key.len()).map(|i| value(&row, i)).collect() {
                                Ok(key) => keys.push(key),
                                Err(_) => continue,
                            }
                        }
                        Ok(None) => break,
                        Err(_) => {
                            copy.read_errors += 1;
                            break;
                        }
                    }
                }
            }
            let one = format!("({}) = ({})", list(&self.key), marks(self.key.len()));
            for key in &keys {
                if self.by_session && !matches!(&key[0], Value::Text(id) if sessions.contains(id)) {
                    continue;
                }
                let args: Vec<&Value> = key.iter().collect();
                if let Ok(inserted) = self.insert(conn, false, &one, &args).await {
                    copy.kept += inserted;
                }
            }
        }
    }
}

/// Whether key `a` sorts before `b` as SQLite orders them (the values of one column have one
/// type in this store; across types SQLite's order is NULL, numbers, text, blobs).
fn first_is_lower(a: &Key, b: &Key) -> bool {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Integer(_) | Value::Real(_) => 1,
            Value::Text(_) => 2,
            Value::Blob(_) => 3,
        }
    }
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (Value::Integer(x), Value::Integer(y)) => x.cmp(y),
            (Value::Real(x), Value::Real(y)) => x.total_cmp(y),
            (Value::Integer(x), Value::Real(y)) => (*x as f64).total_cmp(y),
            (Value::Real(x), Value::Integer(y)) => x.total_cmp(&(*y as f64)),
            // Keys of this store are compared with SQLite's default BINARY collation.
            (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Value::Blob(x), Value::Blob(y)) => x.cmp(y),
            _ => rank(x).cmp(&rank(y)),
        };
        if order.is_ne() {
            return order.is_lt();
        }
    }
    true
}

fn value(row: &SqliteRow, i: usize) -> std::result::Result<Value, sqlx::Error> {
    let raw = row.try_get_raw(i)?;
    if raw.is_null() {
        return Ok(Value::Null);
    }
    let kind = raw.type_info().name().to_string();
    Ok(match kind.as_str() {
        "INTEGER" => Value::Integer(row.try_get(i)?),
        "REAL" => Value::Real(row.try_get(i)?),
        "TEXT" => Value::Text(row.try_get(i)?),
        _ => Value::Blob(row.try_get(i)?),
    })
}

fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>,
    args: &[&'q Value],
) -> sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>> {
    for arg in args {
        query = match arg {
            Value::Null => query.bind(None::<i64>),
            Value::Integer(v) => query.bind(*v),
            Value::Real(v) => query.bind(*v),
            Value::Text(v) => query.bind(v.as_str()),
            Value::Blob(v) => query.bind(v.as_slice()),
        };
    }
    query
}

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

/// Tables whose rows are deleted while their session lives: a rewind cuts `context`, a
/// turn's start takes its input out of `pending_inputs`. Their rows come from pages only when
/// the free list says which pages hold deleted rows: an input run again, or a context a
/// rewind took back, would do harm. (A session the user deleted coming back does less harm
/// than live sessions lost, so the other tables are read from pages either way.)
const DELETED_WHILE_LIVE: &[&str] = &["context", "pending_inputs"];

/// Pages' records queued from the reading thread; when full, the reader waits.
const PAGES_QUEUED: usize = 64;

/// Rows per INSERT of rows found on pages.
const ROWS_PER_INSERT: usize = 64;

/// A table as records on pages show it.
struct Shape {
    table: String,
    tree: Tree,
    /// The columns in the order a record holds them: for a table without rowid its primary
    /// key first, then the rest as declared.
    columns: Vec<ColumnShape>,
    /// The column that is the rowid (`INTEGER PRIMARY KEY`), stored as NULL in the record.
    rowid_alias: Option<usize>,
}

struct ColumnShape {
    name: String,
    affinity: Affinity,
    not_null: bool,
    has_default: bool,
    json: bool,
}

/// SQLite's column affinity, from the declared type (https://sqlite.org/datatype3.html).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Affinity {
    Integer,
    Text,
    Blob,
    Real,
    Numeric,
}

impl Affinity {
    fn of(declared: &str) -> Affinity {
        let t = declared.to_ascii_uppercase();
        if t.contains("INT") {
            Affinity::Integer
        } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
            Affinity::Text
        } else if t.contains("BLOB") || t.is_empty() {
            Affinity::Blob
        } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }
}

impl Shape {
    async fn of(conn: &mut SqliteConnection, table: &str) -> Result<Shape> {
        let columns: Vec<(String, String, bool, bool, i64)> = sqlx::query_as(
            "SELECT name, type, \"notnull\", dflt_value IS NOT NULL, pk \
             FROM pragma_table_info(?, 'main') ORDER BY cid",
        )
        .bind(table)
        .fetch_all(&mut *conn)
        .await?;
        let without_rowid: bool = sqlx::query_scalar(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?",
        )
        .bind(table)
        .fetch_optional(&mut *conn)
        .await?
        .unwrap_or(false);
        let mut ordered: Vec<&(String, String, bool, bool, i64)> = columns.iter().collect();
        if without_rowid {
            // Stable: the key's columns by their place in the key, then the rest as declared.
            ordered.sort_by_key(|(_, _, _, _, pk)| if *pk > 0 { *pk } else { i64::MAX });
        }
        let keys = columns.iter().filter(|c| c.4 > 0).count();
        let rowid_alias = (!without_rowid && keys == 1)
            .then(|| {
                ordered
                    .iter()
                    .position(|c| c.4 > 0 && c.1.eq_ignore_ascii_case("INTEGER"))
            })
            .flatten();
        Ok(Shape {
            table: table.to_string(),
            tree: if without_rowid {
                Tree::Index
            } else {
                Tree::Table
            },
            columns: ordered
                .into_iter()
                .map(|(name, declared, not_null, has_default, _)| ColumnShape {
                    json: JSON_COLUMNS.contains(&(table, name.as_str())),
                    name: name.clone(),
                    affinity: Affinity::of(declared),
                    not_null: *not_null,
                    has_default: *has_default,
                })
                .collect(),
            rowid_alias,
        })
    }

    /// Whether `record` can be a row of this table: from the right kind of tree, no more
    /// fields than columns, each field of the column's type (stricter than SQLite, which
    /// would take any: this store writes each column with one type), and any column the
    /// record lacks (added after it was written) free to be left out.
    fn fits(&self, record: &Record) -> bool {
        let fields = &record.fields;
        if record.tree != self.tree || fields.is_empty() || fields.len() > self.columns.len() {
            return false;
        }
        let each = fields
            .iter()
            .zip(&self.columns)
            .enumerate()
            .all(|(i, (f, c))| match f {
                Field::Null => !c.not_null || self.rowid_alias == Some(i),
                Field::Integer(_) => matches!(
                    c.affinity,
                    Affinity::Integer | Affinity::Real | Affinity::Numeric
                ),
                Field::Real(_) => matches!(c.affinity, Affinity::Real | Affinity::Numeric),
                Field::Text(bytes) => {
                    c.affinity == Affinity::Text
                        && std::str::from_utf8(bytes).is_ok()
                        && (!c.json
                            || serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok())
                }
                Field::Blob(_) => c.affinity == Affinity::Blob,
            });
        each && self.columns[fields.len()..]
            .iter()
            .all(|c| !c.not_null || c.has_default)
    }

    /// The record's fields as the row's values, the rowid put in its alias column.
    fn row(&self, record: Record) -> Vec<Field> {
        let mut fields = record.fields;
        if let (Some(alias), Some(rowid)) = (self.rowid_alias, record.rowid)
            && fields.get(alias) == Some(&Field::Null)
        {
            fields[alias] = Field::Integer(rowid);
        }
        fields
    }
}

/// After a failed read: every page of the damaged copy read directly, and each record that
/// fits exactly one table (and is not there yet) added to it. Foreign keys are checked once
/// at the end, so a row may come before its parent; rows whose parent never came are removed.
async fn rescue_from_pages(
    conn: &mut SqliteConnection,
    scratch: &Path,
    header: Header,
    copies: &mut [TableCopy],
) {
    // The WAL's pages into the file, so the page read is each page's latest version.
    let _ = sqlx::query("PRAGMA damaged.wal_checkpoint(TRUNCATE)")
        .execute(&mut *conn)
        .await;
    let path = scratch.to_path_buf();
    let opened = tokio::task::spawn_blocking(move || {
        let mut file = PageFile::open(&path).ok()??;
        // A rebuilt header has lost where the free list starts.
        let free = match header {
            Header::Sound => file.free_pages(),
            Header::Rebuilt => None,
        };
        Some((file, free))
    })
    .await;
    let Ok(Some((mut file, free))) = opened else {
        tracing::warn!("the damaged copy's pages cannot be read one by one");
        return;
    };
    let mut shapes = Vec::new();
    for copy in copies.iter() {
        if free.is_none() && DELETED_WHILE_LIVE.contains(&copy.table.as_str()) {
            tracing::warn!(table = %copy.table, "the free list is unknown: its rows are not read from pages");
            continue;
        }
        match Shape::of(conn, &copy.table).await {
            Ok(shape) => shapes.push(shape),
            Err(e) => tracing::warn!(table = %copy.table, error = %e, "no shape"),
        }
    }
    let before = row_counts(conn, &shapes).await;
    if sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(&mut *conn)
        .await
        .is_err()
    {
        return;
    }

    let (pages_tx, mut pages_rx) = tokio::sync::mpsc::channel::<Vec<Record>>(PAGES_QUEUED);
    let reader = tokio::task::spawn_blocking(move || {
        let free = free.unwrap_or_default();
        for page in 1..=file.pages {
            if free.contains(&page) {
                continue;
            }
            let records = file.records_on(page);
            if !records.is_empty() && pages_tx.blocking_send(records).is_err() {
                return;
            }
        }
    });
    let mut pending: HashMap<(usize, usize), Vec<Vec<Field>>> = HashMap::new();
    let mut ambiguous = 0u64;
    while let Some(records) = pages_rx.recv().await {
        for record in records {
            let mut fitting = shapes.iter().enumerate().filter(|(_, s)| s.fits(&record));
            let (Some((i, shape)), None) = (fitting.next(), fitting.next()) else {
                // Fits none (an index's entry, SQLite's own tables) or several.
                ambiguous += u64::from(shapes.iter().filter(|s| s.fits(&record)).count() > 1);
                continue;
            };
            let row = shape.row(record);
            let rows = pending.entry((i, row.len())).or_default();
            rows.push(row);
            if rows.len() >= ROWS_PER_INSERT {
                let rows = std::mem::take(rows);
                insert_rows(conn, &shapes[i], &rows).await;
            }
        }
    }
    let _ = reader.await;
    for ((i, _), rows) in pending {
        insert_rows(conn, &shapes[i], &rows).await;
    }
    let rebuilt = rebuild_lost_sessions(conn).await;
    remove_orphans(conn, &shapes).await;
    let _ = sqlx::query("PRAGMA foreign_keys = ON")
        .execute(&mut *conn)
        .await;
    if ambiguous > 0 {
        tracing::warn!(
            ambiguous,
            "records on pages that fit several tables were left out"
        );
    }
    let after = row_counts(conn, &shapes).await;
    for ((shape, before), after) in shapes.iter().zip(before).zip(after) {
        if let Some(copy) = copies.iter_mut().find(|c| c.table == shape.table) {
            copy.kept = after;
            copy.from_events = if copy.table == "sessions" { rebuilt } else { 0 };
            copy.from_pages = after.saturating_sub(before + copy.from_events);
        }
    }
}

/// A session whose row was lost but whose events were found gets its row back, rebuilt from
/// them: its folder, model and title from its `SessionCreated`, its status from its last
/// turn (a turn left running is ended as interrupted when the daemon starts), its times and
/// last seq from its events. What only the row held — the environment its client sent (the
/// secret-free copy), its own mode and sandbox — is lost: the settings' apply. Without its
/// `SessionCreated` there is no folder to run in, and the events go with the session.
async fn rebuild_lost_sessions(conn: &mut SqliteConnection) -> u64 {
    let rebuilt = sqlx::query(
        "INSERT OR IGNORE INTO main.sessions \
             (id, title, cwd, model, env_json, status, created_at, updated_at, last_seq, turns) \
         SELECT c.session_id, \
                coalesce(json_extract(c.payload, '$.title'), \
                         (SELECT substr(trim(substr(json_extract(q.payload, '$.text'), 1, \
                                 instr(json_extract(q.payload, '$.text') || char(10), char(10)) - 1)), 1, 80) \
                          FROM main.events q \
                          WHERE q.session_id = c.session_id AND q.kind = 'InputQueued' \
                          ORDER BY q.seq LIMIT 1)), \
                json_extract(c.payload, '$.cwd'), json_extract(c.payload, '$.model'), '{}', \
                coalesce((SELECT CASE WHEN t.kind = 'TurnStarted' THEN 'running' \
                                      ELSE CASE json_extract(t.payload, '$.status') \
                                           WHEN 'interrupted' THEN 'interrupted' \
                                           WHEN 'failed' THEN 'failed' ELSE 'idle' END END \
                          FROM main.events t \
                          WHERE t.session_id = c.session_id \
                            AND t.kind IN ('TurnStarted', 'TurnFinished') \
                          ORDER BY t.seq DESC LIMIT 1), 'idle'), \
                (SELECT min(at) FROM main.events a WHERE a.session_id = c.session_id), \
                (SELECT max(at) FROM main.events a WHERE a.session_id = c.session_id), \
                (SELECT max(seq) FROM main.events a WHERE a.session_id = c.session_id), \
                (SELECT coalesce(max(turn), 0) FROM main.events a WHERE a.session_id = c.session_id) \
         FROM main.events c \
         WHERE c.kind = 'SessionCreated' \
           AND json_extract(c.payload, '$.cwd') IS NOT NULL \
           AND json_extract(c.payload, '$.model') IS NOT NULL \
           AND NOT EXISTS (SELECT 1 FROM main.sessions s WHERE s.id = c.session_id)",
    )
    .execute(&mut *conn)
    .await;
    match rebuilt {
        Ok(done) => done.rows_affected(),
        Err(e) => {
            tracing::warn!(error = %e, "sessions were not rebuilt from their events");
            0
        }
    }
}

async fn row_counts(conn: &mut SqliteConnection, shapes: &[Shape]) -> Vec<u64> {
    let mut counts = Vec::new();
    for shape in shapes {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM main.{}",
            ident(&shape.table)
        ))
        .fetch_one(&mut *conn)
        .await
        .unwrap_or(0);
        counts.push(u64::try_from(n).unwrap_or(0));
    }
    counts
}

/// Insert rows of the same length found on pages; those there already are ignored.
async fn insert_rows(conn: &mut SqliteConnection, shape: &Shape, rows: &[Vec<Field>]) {
    let Some(width) = rows.first().map(Vec::len) else {
        return;
    };
    let columns: Vec<String> = shape.columns[..width]
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let one = format!("({})", marks(width));
    let sql = format!(
        "INSERT OR IGNORE INTO main.{} ({}) VALUES {}",
        ident(&shape.table),
        list(&columns),
        vec![one; rows.len()].join(", ")
    );
    let mut query = sqlx::query(&sql);
    for field in rows.iter().flatten() {
        query = match field {
            Field::Null => query.bind(None::<i64>),
            Field::Integer(v) => query.bind(*v),
            Field::Real(v) => query.bind(*v),
            // Checked to be UTF-8 when the record was matched.
            Field::Text(v) => query.bind(String::from_utf8_lossy(v).into_owned()),
            Field::Blob(v) => query.bind(v.clone()),
        };
    }
    if let Err(e) = query.execute(&mut *conn).await {
        tracing::debug!(table = %shape.table, error = %e, "rows found on pages not inserted");
    }
}

/// Remove rows whose foreign key leads nowhere (their parent was not recovered).
async fn remove_orphans(conn: &mut SqliteConnection, shapes: &[Shape]) {
    for shape in shapes {
        let keys: Vec<(i64, String, String, Option<String>)> = sqlx::query_as(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?, 'main') \
             ORDER BY id, seq",
        )
        .bind(&shape.table)
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
        // One foreign key may span several columns: its rows share an id.
        let mut by_id: std::collections::BTreeMap<i64, (String, Vec<String>)> =
            std::collections::BTreeMap::new();
        for (id, parent, from, to) in keys {
            // `to` is absent when the key names the parent's primary key implicitly; this
            // store always names it.
            let Some(to) = to else { continue };
            by_id
                .entry(id)
                .or_insert_with(|| (parent, Vec::new()))
                .1
                .push(format!(
                    "p.{} = main.{}.{}",
                    ident(&to),
                    ident(&shape.table),
                    ident(&from)
                ));
        }
        for (parent, conditions) in by_id.into_values() {
            let sql = format!(
                "DELETE FROM main.{} WHERE NOT EXISTS (SELECT 1 FROM main.{} p WHERE {})",
                ident(&shape.table),
                ident(&parent),
                conditions.join(" AND ")
            );
            if let Err(e) = sqlx::query(&sql).execute(&mut *conn).await {
                tracing::warn!(table = %shape.table, error = %e, "orphans not removed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_sqlite_orders_them() {
        let k = |s: &str, n: i64| vec![Value::Text(s.into()), Value::Integer(n)];
        assert!(first_is_lower(&k("a", 9), &k("b", 1)));
        assert!(first_is_lower(&k("a", 1), &k("a", 2)));
        assert!(!first_is_lower(&k("a", 3), &k("a", 2)));
        assert!(first_is_lower(
            &vec![Value::Integer(5)],
            &vec![Value::Text("0".into())]
        ));
    }
}
