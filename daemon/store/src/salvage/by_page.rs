//! Rows read from the file's pages, for what SQL cannot reach: each record matched to the
//! one table whose columns it fits, inserted unless there already, parents checked at the
//! end (and a session's lost row rebuilt from its events).

use std::collections::HashMap;
use std::path::Path;

use sqlx::sqlite::SqliteConnection;

use super::TableCopy;
use super::{JSON_COLUMNS, ident, list, marks};
use crate::Result;
use crate::pages::{Field, Header, PageFile, Record, Tree};

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
pub(super) async fn rescue_from_pages(
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
