//! A session's environment: the client's, over the login shell's, and what of it may be
//! written to disk.

use stepper_protocol::session::Env;

use super::HubDeps;

/// The login shell's environment, resolved once per daemon (`STEPPER_LOGIN_ENV=off` skips it).
/// The daemon starts reading it when it starts; this waits for that read.
pub(crate) async fn login_env(deps: &HubDeps) -> &Env {
    deps.login_env
        .get_or_init(|| async {
            if std::env::var("STEPPER_LOGIN_ENV").is_ok_and(|v| v == "off") {
                return Env::new();
            }
            let shell = stepper_process::login_env::login_shell();
            let timeout = std::env::var("STEPPER_LOGIN_ENV_TIMEOUT_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(std::time::Duration::from_millis)
                .unwrap_or(std::time::Duration::from_secs(5));
            match stepper_process::login_env::resolve(&shell, timeout).await {
                Ok(env) => {
                    tracing::info!(
                        shell,
                        vars = env.len(),
                        "resolved the login shell's environment"
                    );
                    env
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no login environment; sessions use their own only");
                    Env::new()
                }
            }
        })
        .await
}

/// The part of an environment that may be written to disk: no variable whose name looks
/// like it holds a secret.
pub fn persistable_env(env: &Env) -> Env {
    const SECRET_MARKERS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
    env.iter()
        .filter(|(name, _)| {
            let upper = name.to_ascii_uppercase();
            !SECRET_MARKERS.iter().any(|m| upper.contains(m))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_reach_disk() {
        let env: Env = [
            ("PATH", "/bin"),
            ("ANTHROPIC_API_KEY", "sk"),
            ("GITHUB_TOKEN", "t"),
            ("aws_secret_access_key", "s"),
            ("DB_PASSWORD", "p"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "c"),
            ("HOME", "/h"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let kept: Vec<_> = persistable_env(&env).into_keys().collect();
        assert_eq!(kept, ["HOME", "PATH"]);
    }
}
