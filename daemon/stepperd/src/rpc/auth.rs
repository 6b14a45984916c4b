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
