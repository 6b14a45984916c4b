//! Several statements sent to SQLite as one query.
//!
//! sqlx runs each query on its connection's worker thread, so every statement costs a round
//! trip between threads — two context switches — which on a short turn cost more than the
//! SQL. A commit's statements go as one script instead: sqlx-sqlite steps a query's
//! statements in order, binding its positional `?` parameters across them in order.

use sqlx::sqlite::{Sqlite, SqliteArguments};
use sqlx::{Arguments, Encode, Type};

use crate::{Result, StoreError};

/// Statements with positional (`?`) parameters only: a numbered one (`?1`) would name the
/// script's Nth argument, not its statement's.
#[derive(Default)]
pub(crate) struct Script<'q> {
    sql: String,
    args: SqliteArguments<'q>,
    error: Option<String>,
}

impl<'q> Script<'q> {
    /// Add a statement; its parameters are bound by the `bind` calls that follow.
    pub fn statement(&mut self, sql: &str) -> &mut Self {
        debug_assert!(
            !sql.contains("?1"),
            "numbered parameters do not work in a script"
        );
        self.sql.push_str(sql);
        self.sql.push_str(";\n");
        self
    }

    /// Append raw SQL to the statement being built (a VALUES row, say).
    pub fn push_sql(&mut self, sql: &str) -> &mut Self {
        // The statement's terminator moves to the end of what is appended.
        if self.sql.ends_with(";\n") {
            self.sql.truncate(self.sql.len() - 2);
        }
        self.sql.push_str(sql);
        self.sql.push_str(";\n");
        self
    }

    pub fn bind<T: Encode<'q, Sqlite> + Type<Sqlite> + 'q>(&mut self, value: T) -> &mut Self {
        if let Err(e) = self.args.add(value)
            && self.error.is_none()
        {
            self.error = Some(e.to_string());
        }
        self
    }

    /// Run every statement on `conn`; the first failure stops the script (and the caller's
    /// transaction, dropped uncommitted, rolls back what ran).
    pub async fn run(self, conn: &mut sqlx::SqliteConnection) -> Result<()> {
        if let Some(error) = self.error {
            return Err(StoreError::Corrupt(format!(
                "a value cannot be stored: {error}"
            )));
        }
        if self.sql.is_empty() {
            return Ok(());
        }
        let Script { sql, args, .. } = self;
        sqlx::query_with(&sql, args).execute(conn).await?;
        Ok(())
    }
}
