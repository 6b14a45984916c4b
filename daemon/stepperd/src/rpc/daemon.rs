//! `initialize`, `daemon/info`, `daemon/shutdown`.

use std::sync::atomic::Ordering;

use jsonrpsee::RpcModule;
use stepper_protocol::PROTOCOL_VERSION;
use stepper_protocol::methods::*;

use super::{Conn, RpcError, register};

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<Initialize, _, _>(m, |conn, p| async move {
        if !PROTOCOL_VERSION.is_compatible_with(p.protocol_version) {
            return Err(RpcError::VersionMismatch {
                client: p.protocol_version,
                daemon_version: env!("CARGO_PKG_VERSION"),
            });
        }
        tracing::debug!(client = %p.client.name, kind = ?p.client.kind, "client initialized");
        *conn.client.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.client);
        conn.initialized.store(true, Ordering::Release);
        let daemon = &conn.daemon;
        Ok(InitializeResponse {
            protocol_version: PROTOCOL_VERSION,
            daemon_version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id(),
            executable: daemon.executable.as_ref().map(|e| e.0.clone()),
            build: daemon.executable.as_ref().map(|e| e.1.clone()),
            running_turns: u32::try_from(*daemon.hub.deps().running.borrow()).unwrap_or(u32::MAX),
            notices: daemon.store.notices.clone(),
        })
    });

    register::<DaemonInfo, _, _>(m, |conn, _| async move {
        let mut info = conn.daemon.info();
        if let Some(store) = &mut info.store {
            // Read now: the user may have deleted a copy since.
            store.kept_aside =
                crate::store_health::kept_aside(&conn.daemon.places.store_path()).await;
        }
        Ok(info)
    });

    register::<DaemonShutdown, _, _>(m, |conn, _| async move {
        tracing::info!(client = ?conn.client_label(), "shutdown requested");
        conn.daemon.shutdown.cancel();
        Ok(Empty {})
    });
}
