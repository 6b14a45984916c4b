//! The images and documents of a session's inputs: their bytes stored once per session, by
//! sha256, and named everywhere else (events, contexts, queued inputs) by an `Attachment`.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::Row;
use stepper_protocol::Attachment;

use crate::write::WriteTx;
use crate::{Result, Store, StoreError};

impl Store {
    /// Store a session's attachments (those it has already are kept), in one transaction:
    /// committed before the `InputQueued` that names them.
    pub async fn put_attachments(
        &self,
        session_id: &str,
        attachments: &[(&Attachment, &[u8])],
    ) -> Result<()> {
        if attachments.is_empty() {
            return Ok(());
        }
        let mut tx = WriteTx::begin(&self.pool).await?;
        insert_attachments(&mut tx, session_id, attachments).await?;
        tx.commit().await?;
        Ok(())
    }

    /// One attachment and its bytes; `None` when the session has none by that hash.
    pub async fn attachment(
        &self,
        session_id: &str,
        sha256: &str,
    ) -> Result<Option<(Attachment, Vec<u8>)>> {
        let row =
            sqlx::query("SELECT about, data FROM attachments WHERE session_id = ? AND sha256 = ?")
                .bind(session_id)
                .bind(sha256)
                .fetch_optional(&self.pool)
                .await?;
        let Some(row) = row else { return Ok(None) };
        let about: String = row.try_get("about")?;
        let about = serde_json::from_str(&about)
            .map_err(|e| StoreError::Corrupt(format!("attachment {sha256}: {e}")))?;
        Ok(Some((about, row.try_get("data")?)))
    }

    /// The bytes of each of `hashes` the session has, by hash (one query per hash: a turn
    /// names a few).
    pub async fn attachment_bytes(
        &self,
        session_id: &str,
        hashes: &[&str],
    ) -> Result<HashMap<String, Arc<[u8]>>> {
        let mut found = HashMap::new();
        for hash in hashes {
            if found.contains_key(*hash) {
                continue;
            }
            if let Some((_, data)) = self.attachment(session_id, hash).await? {
                found.insert((*hash).to_string(), Arc::from(data));
            }
        }
        Ok(found)
    }
}

/// The inserts of [`Store::put_attachments`], in a transaction already begun.
pub(crate) async fn insert_attachments(
    tx: &mut WriteTx,
    session_id: &str,
    attachments: &[(&Attachment, &[u8])],
) -> Result<()> {
    for (about, data) in attachments {
        let json = serde_json::to_string(about).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT OR IGNORE INTO attachments (session_id, sha256, about, data) \
             VALUES (?, ?, ?, ?)",
        )
        .bind(session_id)
        .bind(&about.sha256)
        .bind(json)
        .bind(*data)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
