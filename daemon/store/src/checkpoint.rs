//! File checkpoints: content-addressed, compressed blobs, and per turn the files it changed
//! with their previous content — outside the project, in the store.

use std::io::{Read, Write};

use sqlx::Row;

use crate::write::WriteTx;
use crate::{Result, Store, StoreError};

/// One file a turn changed: where, and what it held before (`None`: it did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub turn: u32,
    pub path: String,
    pub before: Option<String>,
}

impl Store {
    /// Store blobs under their hashes (sha256 hex), those not there already, in one
    /// transaction: one fsync for the batch rather than one each.
    pub async fn put_blobs(&self, blobs: &[(&str, &[u8])]) -> Result<()> {
        if blobs.is_empty() {
            return Ok(());
        }
        let mut compressed = Vec::with_capacity(blobs.len());
        for (hash, data) in blobs {
            let mut encoder =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder
                .write_all(data)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let c = encoder
                .finish()
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            compressed.push((*hash, data.len() as i64, c));
        }
        let mut tx = WriteTx::begin(&self.pool).await?;
        for (hash, size, data) in compressed {
            sqlx::query("INSERT OR IGNORE INTO blobs (hash, size, data) VALUES (?, ?, ?)")
                .bind(hash)
                .bind(size)
                .bind(data)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT data FROM blobs WHERE hash = ?")
            .bind(hash)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let compressed: Vec<u8> = row.try_get("data")?;
        let mut data = Vec::new();
        flate2::read::DeflateDecoder::new(&compressed[..])
            .read_to_end(&mut data)
            .map_err(|e| StoreError::Corrupt(format!("blob {hash}: {e}")))?;
        Ok(Some(data))
    }

    /// Record what a turn changed.
    pub async fn record_changes(&self, session_id: &str, changes: &[FileChange]) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut tx = WriteTx::begin(&self.pool).await?;
        for c in changes {
            sqlx::query(
                "INSERT OR IGNORE INTO file_changes (session_id, turn, path, before_hash) VALUES (?, ?, ?, ?)",
            )
            .bind(session_id)
            .bind(i64::from(c.turn))
            .bind(&c.path)
            .bind(&c.before)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The changes of turns `from_turn` and later, latest turn first: undoing them in this
    /// order restores the files as they were before `from_turn`.
    pub async fn changes_since(&self, session_id: &str, from_turn: u32) -> Result<Vec<FileChange>> {
        let rows = sqlx::query(
            "SELECT turn, path, before_hash FROM file_changes WHERE session_id = ? AND turn >= ? \
             ORDER BY turn DESC, path",
        )
        .bind(session_id)
        .bind(i64::from(from_turn))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FileChange {
                    turn: u32::try_from(r.try_get::<i64, _>("turn")?).unwrap_or(0),
                    path: r.try_get("path")?,
                    before: r.try_get("before_hash")?,
                })
            })
            .collect()
    }

    /// Forget the context of turns `from_turn` and later (a conversation rewind).
    pub async fn truncate_context(&self, session_id: &str, from_turn: u32) -> Result<()> {
        sqlx::query("DELETE FROM context WHERE session_id = ? AND turn >= ?")
            .bind(session_id)
            .bind(i64::from(from_turn))
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
