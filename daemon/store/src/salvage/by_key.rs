//! Rows read through SQL, in key order: forwards until a read fails, then backwards from
//! the end to the same point, then one by one through the table's indexes; tables keyed by
//! session one session at a time.

use sqlx::sqlite::{Sqlite, SqliteArguments, SqliteConnection, SqliteRow};
use sqlx::{Row, TypeInfo, ValueRef};

use super::TableCopy;
use super::{JSON_COLUMNS, and, ident, list, marks, short, sqlite_says, tables_in_copy_order};
use crate::{Result, StoreError};

pub(super) async fn copy_tables(
    conn: &mut SqliteConnection,
) -> std::result::Result<Vec<TableCopy>, String> {
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
