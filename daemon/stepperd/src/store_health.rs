//! The session store as the daemon opens it at start: checked, rebuilt when damaged (or
//! when the user asked for it), and what the user is told about it — the log, `daemon/info`
//! (`stepper doctor`) and a notice every client prints.
//!
//! A damaged store used to stop the daemon, and with it every command; now the damage is
//! told, not fatal. How the file is checked and rebuilt is the store crate's
//! (`Store::open_checked`).
//!
//! **A damaged store is told, never fatal and never silent.** The daemon starts on what can be read
//! of it; the damaged file (or log) is kept aside unchanged, and the log, `stepper doctor` and
//! every command say where. Nothing happens at the store's path until the new store is complete,
//! and no connection to the old file is open when the files move (a connection closing later would
//! delete the new store's WAL by name).

use std::path::Path;

use anyhow::Context;
use stepper_protocol::methods::{KeptCopy, StoreInfo, StoreRecovery, WalDropped};
use stepper_protocol::places::Places;
use stepper_store::{Recover, Store, StoreHealth};

/// What the daemon says about its store for as long as it runs.
pub struct StoreReport {
    pub info: StoreInfo,
    /// For every client, once per command.
    pub notices: Vec<String>,
}

/// Open the store at start, rebuilding it when damaged or when
/// [`Places::store_recovery_request_path`] asks for it.
pub async fn open(places: &Places) -> anyhow::Result<(Store, StoreReport)> {
    let path = places.store_path();
    let request = places.store_recovery_request_path();
    let asked = tokio::fs::try_exists(&request).await.unwrap_or(false);
    let recover = if asked {
        Recover::Always
    } else {
        Recover::IfDamaged
    };
    let (store, health) = Store::open_checked(&path, recover).await.with_context(|| {
        let mut what = format!("opening the session store {}", path.display());
        if asked {
            what.push_str(&format!(
                " to rebuild it as asked (remove {} to start without rebuilding it)",
                request.display()
            ));
        }
        what
    })?;
    if asked {
        // Done: the next start opens the store as usual.
        if let Err(e) = tokio::fs::remove_file(&request).await {
            tracing::warn!(error = %e, path = %request.display(), "the recovery request stays");
        }
    }
    Ok((store, report(&path, health)))
}

fn report(path: &Path, health: StoreHealth) -> StoreReport {
    let mut notices = Vec::new();
    let wal_dropped = health.wal.map(|loss| {
        let summary = loss.summary();
        tracing::error!(copy = %loss.copy.display(), "{summary}");
        notices.push(summary.clone());
        WalDropped {
            summary,
            copy: loss.copy.display().to_string(),
        }
    });
    let recovered = health.recovery.map(|r| {
        let summary = r.summary();
        if r.damaged {
            tracing::error!(
                damaged_copy = %r.damaged_copy.display(),
                took_ms = r.took.as_millis(),
                tables = ?r.tables,
                "{summary}"
            );
            notices.push(summary.clone());
        } else {
            tracing::warn!(took_ms = r.took.as_millis(), tables = ?r.tables, "{summary}");
        }
        StoreRecovery {
            summary,
            reason: r.reason,
            damaged: r.damaged,
            damaged_copy: r.damaged_copy.display().to_string(),
            sessions: r.sessions,
            events: r.events,
            events_missing: r.events_missing,
        }
    });
    let check_ms = u64::try_from(health.check.as_millis()).unwrap_or(u64::MAX);
    if recovered.is_none() {
        tracing::info!(check_ms, "session store checked (quick_check): no damage");
    }
    StoreReport {
        info: StoreInfo {
            path: path.display().to_string(),
            check_ms,
            recovered,
            wal_dropped,
            kept_aside: Vec::new(),
        },
        notices,
    }
}

/// The copies rebuilds have kept aside beside the store (`stepper.db.damaged-…`, with their
/// `-wal`, and `stepper.db.wal-damaged-…`), this start's and earlier ones'.
pub async fn kept_aside(store: &Path) -> Vec<KeptCopy> {
    let (Some(dir), Some(name)) = (store.parent(), store.file_name()) else {
        return Vec::new();
    };
    let prefixes = [".damaged-", ".wal-damaged-"].map(|p| format!("{}{p}", name.to_string_lossy()));
    let mut kept = Vec::new();
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return kept;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !prefixes.iter().any(|p| name.starts_with(p.as_str())) || name.ends_with("-shm") {
            continue;
        }
        let bytes = entry.metadata().await.map(|m| m.len()).unwrap_or(0);
        kept.push(KeptCopy {
            path: entry.path().display().to_string(),
            bytes,
        });
    }
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    kept
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The client waits longer while this file exists: it must be the one the store builds.
    #[test]
    fn the_client_looks_where_the_store_is_rebuilt() {
        let places = Places::resolve(|k| (k == "STEPPER_HOME").then(|| "/tmp/h".into())).unwrap();
        assert_eq!(
            places.store_rebuild_path(),
            stepper_store::rebuild_path(&places.store_path())
        );
    }
}
