//! `auth/status`, `auth/login`, `auth/waitLogin`, `auth/logout`.

use jsonrpsee::RpcModule;
use stepper_protocol::methods::*;

use super::{Conn, RpcError, register};

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<AuthStatus, _, _>(m, |conn, _| async move {
        Ok(conn.daemon.logins.status().await?)
    });

    register::<AuthLogin, _, _>(m, |conn, p| async move {
        let logins = &conn.daemon.logins;
        if let Some(base_url) = p.base_url {
            let name = p.provider;
            if !stepper_providers::is_free_name(&name) {
                return Err(RpcError::InvalidParams(format!(
                    "{name:?} cannot name a local server: give a name of letters, digits, '-' \
                     and '_' that no built-in provider has, such as \"local\""
                )));
            }
            let (base_url, models) = super::providers::probe(&conn, &base_url).await?;
            let model = match p.model {
                Some(model) if !models.contains(&model) => {
                    return Err(RpcError::InvalidParams(format!(
                        "{base_url} does not serve {model:?}; it serves {}",
                        models.join(", ")
                    )));
                }
                Some(model) => Some(model),
                None => models.first().cloned(),
            };
            logins
                .store_local(name.clone(), base_url.clone(), model)
                .await?;
            tracing::info!(provider = %name, %base_url, "stored a local server");
            return Ok(AuthLoginResponse {
                url: None,
                login_id: None,
            });
        }
        match (p.provider.as_str(), p.api_key) {
            ("codex", _) => {
                let (login_id, url) = logins.begin_codex().await?;
                Ok(AuthLoginResponse {
                    url: Some(url),
                    login_id: Some(login_id),
                })
            }
            (provider, Some(key)) => {
                logins.store_key(provider.to_string(), key).await?;
                tracing::info!(provider, "stored an API key");
                Ok(AuthLoginResponse {
                    url: None,
                    login_id: None,
                })
            }
            (provider, None) => Err(RpcError::InvalidParams(format!(
                "give the {provider} API key (apiKey), or use provider \"codex\" to sign in with ChatGPT"
            ))),
        }
    });

    register::<AuthWaitLogin, _, _>(m, |conn, p| async move {
        Ok(conn.daemon.logins.wait(&p.login_id).await?)
    });

    register::<AuthLogout, _, _>(m, |conn, p| async move {
        let removed = conn.daemon.logins.logout(p.provider).await?;
        Ok(AuthLogoutResponse { removed })
    });
}
