//! `mcp/list`, `mcp/add`, `mcp/remove`: the MCP servers of a folder, as `stepper mcp` shows
//! and changes them; `mcp/running`: what runs daemon-wide.

use std::path::Path;
use std::sync::Arc;

use jsonrpsee::RpcModule;
use stepper_engine::config::Settings;
use stepper_protocol::methods::*;
use stepper_protocol::session::Env;

use super::{Conn, RpcError, folder, register};
use crate::hub::mcp::{self, McpSettings};
use crate::hub::settings::Folder;

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<McpList, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let (user, here, env) = settings_of(&conn, &cwd, p.env).await?;
        let deps = conn.daemon.hub.deps();
        let servers = deps
            .mcp
            .list(&cwd, McpSettings::of(&user, &here), &env)
            .await;
        Ok(McpListResponse { servers })
    });

    register::<McpRunning, _, _>(m, |conn, _| async move {
        let deps = conn.daemon.hub.deps();
        let user = deps.settings.get(None).await?;
        Ok(deps.mcp.running(&user).await)
    });

    register::<McpLogin, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let (user, here, env) = settings_of(&conn, &cwd, p.env).await?;
        let (login_id, url) = conn
            .daemon
            .hub
            .deps()
            .mcp
            .begin_login(&cwd, &p.name, McpSettings::of(&user, &here), &env)
            .await?;
        Ok(McpLoginResponse { login_id, url })
    });

    register::<McpWaitLogin, _, _>(m, |conn, p| async move {
        conn.daemon.hub.deps().mcp.wait_login(&p.login_id).await?;
        Ok(Empty {})
    });

    register::<McpLogout, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let (user, here, env) = settings_of(&conn, &cwd, p.env).await?;
        let removed = conn.daemon.hub.deps().mcp.logout(
            &cwd,
            &p.name,
            McpSettings::of(&user, &here),
            &env,
        )?;
        Ok(McpLogoutResponse { removed })
    });

    register::<McpPending, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let (user, here, _) = settings_of(&conn, &cwd, Env::new()).await?;
        let servers = conn
            .daemon
            .hub
            .deps()
            .mcp
            .pending(&cwd, McpSettings::of(&user, &here));
        Ok(McpListResponse { servers })
    });

    register::<McpApprove, _, _>(m, |_, p| async move {
        let cwd = folder(&p.cwd)?;
        if p.names.is_empty() && p.decision != McpApproval::AllowAll {
            return Err(RpcError::InvalidParams(
                "name the servers (`names`), or allow them all (`allowAll`)".into(),
            ));
        }
        let path =
            tokio::task::spawn_blocking(move || mcp::edit::approve(&cwd, &p.names, p.decision))
                .await
                .map_err(|e| RpcError::Internal(e.to_string()))??;
        Ok(McpAddResponse {
            path: path.display().to_string(),
        })
    });

    register::<McpAdd, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let config_dir = conn.daemon.hub.deps().mcp.config_dir().to_path_buf();
        let path = tokio::task::spawn_blocking(move || {
            mcp::edit::add(&config_dir, &cwd, &p.name, p.scope, &p.server)
        })
        .await
        .map_err(|e| RpcError::Internal(e.to_string()))??;
        Ok(McpAddResponse {
            path: path.display().to_string(),
        })
    });

    register::<McpRemove, _, _>(m, |conn, p| async move {
        let cwd = folder(&p.cwd)?;
        let config_dir = conn.daemon.hub.deps().mcp.config_dir().to_path_buf();
        let removed = tokio::task::spawn_blocking(move || {
            mcp::edit::remove(&config_dir, &cwd, &p.name, p.scope)
        })
        .await
        .map_err(|e| RpcError::Internal(e.to_string()))??;
        Ok(McpRemoveResponse {
            removed: removed.iter().map(|p| p.display().to_string()).collect(),
        })
    });
}

/// The user's settings and those of `cwd`, and the environment its servers' `${VAR}`s
/// expand from: as a session's tools would have it, the login shell's under the client's
/// `env`, less the provider keys the settings keep from tools.
async fn settings_of(
    conn: &Conn,
    cwd: &Path,
    client: Env,
) -> Result<(Arc<Settings>, Arc<Folder>, Env), RpcError> {
    let deps = conn.daemon.hub.deps();
    let here = deps.settings.folder(Some(cwd)).await?;
    let user = deps.settings.get(None).await?;
    let mut env: Env = crate::hub::env::login_env(deps).await.clone();
    env.extend(client);
    let env = crate::hub::env::tool_env(&env, &here.settings);
    Ok((user, here, env))
}
