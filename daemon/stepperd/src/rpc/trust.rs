//! `trust/get`, `trust/set`, `trust/list`: the user's trust in folders, kept in their config
//! folder. The daemon applies it (`hub::settings`, `hub::trust`); clients ask for it once per
//! folder and say what an untrusted folder's files ask for.

use std::path::PathBuf;

use jsonrpsee::RpcModule;
use stepper_protocol::methods::*;

use super::{Conn, RpcError, folder, register};
use crate::hub::trust::{Report, report};

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<TrustGet, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let deps = conn.daemon.hub.deps();
        let report = report(deps, &cwd, home().as_deref()).await?;
        Ok(response(report))
    });

    register::<TrustSet, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let deps = conn.daemon.hub.deps();
        let target = stepper_engine::config::trust::target(&cwd);
        let store = deps.settings.trust_store();
        let (trusted, all_below) = (p.trusted, p.all_below);
        tokio::task::spawn_blocking(move || store.decide(&target, trusted, all_below))
            .await
            .map_err(|e| RpcError::Internal(e.to_string()))??;
        tracing::info!(folder = %cwd.display(), trusted, "trust decided");
        Ok(response(report(deps, &cwd, home().as_deref()).await?))
    });

    register::<TrustList, _, _>(m, |conn, _| async move {
        let store = conn.daemon.hub.deps().settings.trust_store();
        let list = tokio::task::spawn_blocking(move || store.list())
            .await
            .map_err(|e| RpcError::Internal(e.to_string()))??;
        Ok(TrustListResponse {
            folders: list
                .into_iter()
                .map(|(folder, d)| TrustEntry {
                    folder: folder.display().to_string(),
                    trusted: d.trusted,
                    decided_at: d.at,
                })
                .collect(),
        })
    });
}

fn response(report: Report) -> TrustGetResponse {
    TrustGetResponse {
        folder: report.folder.display().to_string(),
        trusted: report.trust.trusted,
        decided_by: report.trust.decided_by.map(|d| d.display().to_string()),
        ignored: report.ignored,
        too_broad: report.too_broad,
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}
