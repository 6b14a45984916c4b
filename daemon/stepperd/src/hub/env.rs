//! A session's environment: the client's, over the login shell's, and what of it may be
//! written to disk.
//!
//! *The login shell's environment is a base layer*: resolved once, lazily; a session's own (its
//! client's) environment wins variable by variable; the daemon's process environment is the last
//! fallback for provider keys.
//!
//! *The login shell's environment is read from daemon start, in the background.* A session whose
//! client sent its environment never waits for it (it fills gaps once read, and is waited for only
//! if the provider finds no credentials without it); a session whose environment came from the
//! store (which keeps no secrets) waits, with the timeout.

use stepper_engine::config::Settings;
use stepper_protocol::methods::{LoginEnvInfo, LoginEnvState};
use stepper_protocol::session::Env;
use stepper_providers::Providers;

use super::HubDeps;

/// The login shell's environment, resolved once per daemon (`STEPPER_LOGIN_ENV=off` skips it).
/// The daemon starts reading it when it starts; this waits for that read.
pub(crate) async fn login_env(deps: &HubDeps) -> &Env {
    deps.login_env
        .get_or_init(|| async {
            let report = |state, shell: Option<&str>, variables: usize, error: Option<String>| {
                let _ = deps.login_env_info.set(LoginEnvInfo {
                    state,
                    shell: shell.map(str::to_string),
                    variables: u32::try_from(variables).unwrap_or(u32::MAX),
                    error,
                });
            };
            if std::env::var("STEPPER_LOGIN_ENV").is_ok_and(|v| v == "off") {
                report(LoginEnvState::Off, None, 0, None);
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
                    report(LoginEnvState::Read, Some(&shell), env.len(), None);
                    tracing::info!(
                        shell,
                        vars = env.len(),
                        "resolved the login shell's environment"
                    );
                    env
                }
                Err(e) => {
                    report(LoginEnvState::Failed, Some(&shell), 0, Some(e.to_string()));
                    tracing::warn!(error = %e, "no login environment; sessions use their own only");
                    Env::new()
                }
            }
        })
        .await
}

/// The `PATH` tools get when none is given: absolute folders only. bash's own default ends
/// in `.`, which would run a project's `rg` for a missing one.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// The environment a session's tools run with: the session's, without the provider keys
/// the settings do not pass on (`passKeysToTools`), with the settings' `env` over it, and
/// a `PATH` ([`DEFAULT_PATH`] when none is given).
pub fn tool_env(session: &Env, settings: &Settings) -> Env {
    let keys = Providers::key_variables(settings);
    let mut env: Env = session
        .iter()
        .filter(|(name, _)| !keys.contains(*name) || settings.pass_keys_to_tools.contains(name))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.extend(settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if env.get("PATH").is_none_or(|p| p.trim().is_empty()) {
        env.insert("PATH".into(), DEFAULT_PATH.into());
    }
    env
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
    fn tools_get_no_provider_key_unless_passed_and_always_a_path() {
        let session: Env = [
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_API_KEY", "sk-oai"),
            ("MY_GATEWAY_KEY", "gw"),
            ("HOME", "/home/me"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut settings: Settings = serde_json::from_value(serde_json::json!({
            "providers": {"gw": {"kind": "openai-chat", "baseUrl": "http://x", "apiKeyEnv": "MY_GATEWAY_KEY"}},
            "passKeysToTools": ["OPENAI_API_KEY"],
            "env": {"FROM_SETTINGS": "1"}
        }))
        .unwrap_or_default();
        let env = tool_env(&session, &settings);
        let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["FROM_SETTINGS", "HOME", "OPENAI_API_KEY", "PATH"]);
        assert_eq!(env["PATH"], DEFAULT_PATH);
        assert!(!DEFAULT_PATH.split(':').any(|d| !d.starts_with('/')));

        settings.pass_keys_to_tools.clear();
        let given: Env = [("PATH".to_string(), "/opt/bin".to_string())].into();
        assert_eq!(tool_env(&given, &settings)["PATH"], "/opt/bin");
        assert!(!tool_env(&session, &settings).contains_key("OPENAI_API_KEY"));
    }

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
