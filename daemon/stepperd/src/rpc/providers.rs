//! `providers/status`, `providers/probe`, `backends/list`: which providers are set up, what
//! a local server serves, and which agent CLIs could run turns.

use std::path::Path;

use jsonrpsee::RpcModule;
use stepper_protocol::methods::*;
use stepper_providers::status::Environments;

use super::{Conn, RpcError, register};
use crate::hub::HubError;

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<BackendsList, _, _>(m, |conn, p| async move {
        let deps = conn.daemon.hub.deps();
        let cwd = match p.cwd.as_deref().map(Path::new) {
            Some(cwd) if !cwd.is_absolute() => {
                return Err(RpcError::InvalidParams(format!(
                    "cwd {:?} must be an absolute path",
                    cwd.display()
                )));
            }
            cwd => cwd,
        };
        let settings = deps.settings.get(cwd).await?;
        // What a session started here would have: the login shell's environment under the
        // client's.
        let mut env = crate::hub::env::login_env(deps).await.clone();
        env.extend(p.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let here = cwd.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let of = |kind| settings.providers.values().find(|c| c.kind == kind);
        use stepper_engine::config::ProviderKind;
        use stepper_providers::backend::{Cli, status::status};
        let (claude, codex) = tokio::join!(
            status(Cli::ClaudeCode, of(ProviderKind::ClaudeCode), &env, &here),
            status(Cli::CodexCli, of(ProviderKind::CodexCli), &env, &here),
        );
        Ok(BackendsListResponse {
            backends: vec![claude, codex],
        })
    });
    register::<ProvidersStatus, _, _>(m, |conn, p| async move {
        let deps = conn.daemon.hub.deps();
        let cwd = match p.cwd.as_deref().map(Path::new) {
            Some(cwd) if !cwd.is_absolute() => {
                return Err(RpcError::InvalidParams(format!(
                    "cwd {:?} must be an absolute path",
                    cwd.display()
                )));
            }
            cwd => cwd,
        };
        let settings = deps.settings.get(cwd).await?;
        let login = match deps.login_env.get() {
            Some(login) => Some(login),
            None if p.env.is_empty() => Some(crate::hub::env::login_env(deps).await),
            None => None,
        };
        let envs = Environments {
            client: &p.env,
            login,
        };
        let providers = deps.providers.status(&settings, &envs, p.probe).await;
        let default_model = deps.providers.default_model(&settings, &envs);
        let here = cwd
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        let default_usable = conn
            .daemon
            .hub
            .check_model(Some(&default_model), &settings, &here, &p.env)
            .await
            .is_ok();
        Ok(ProvidersStatusResponse {
            providers,
            default_model,
            default_usable,
        })
    });

    register::<ProvidersProbe, _, _>(m, |conn, p| async move {
        let (base_url, models) = probe(&conn, &p.base_url).await?;
        Ok(ProvidersProbeResponse { base_url, models })
    });
}

/// The models an OpenAI-compatible server at `base_url` lists, with the address as it is
/// stored (no trailing `/`); a server that does not answer is `PROVIDER_UNAVAILABLE`.
pub(super) async fn probe(conn: &Conn, base_url: &str) -> Result<(String, Vec<String>), RpcError> {
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    let models = conn
        .daemon
        .hub
        .deps()
        .providers
        .probe(&base_url, None)
        .await
        .map_err(|e| HubError::ProviderUnavailable(e.to_string()))?;
    Ok((base_url, models))
}
