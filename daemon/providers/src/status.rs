//! Which providers are set up, how each was found, and the model a new session starts on:
//! for `providers/status`, `stepper doctor`, the first run, and the default model.
//!
//! Nothing here sends a request unless asked to probe: then each local server is asked
//! for its models (`GET {baseUrl}/models`), all at once, each with a short timeout.

use std::time::Duration;

use serde::Deserialize;
use stepper_engine::config::{ProviderConfig, ProviderKind, Settings};
use stepper_engine::model::DEFAULT_MODEL;
use stepper_protocol::methods::{ProviderSource, ProviderStatus};
use stepper_protocol::session::Env;

use crate::{Providers, auth, base_url_env, base_url_of, convention};

/// How long a local server has to answer a probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// The providers tried for a new session's model, in this order, when nothing chooses one.
const PREFERRED: [&str; 3] = ["anthropic", "openai", "codex"];
/// Conventional providers listed after the stored and configured ones.
const LATER: [&str; 2] = ["ollama", "openrouter"];

/// The environments a key may come from, searched in this order.
pub struct Environments<'a> {
    /// The client's own (a terminal's).
    pub client: &'a Env,
    /// The login shell's, when it has been read.
    pub login: Option<&'a Env>,
}

impl Environments<'_> {
    /// A variable's value and where it came from: the client, the login shell, the daemon.
    fn var(&self, name: &str) -> Option<(String, ProviderSource)> {
        let usable = |v: &String| !v.trim().is_empty();
        if let Some(v) = self.client.get(name).filter(|v| usable(v)) {
            return Some((v.clone(), ProviderSource::Environment));
        }
        if let Some(v) = self.login.and_then(|l| l.get(name)).filter(|v| usable(v)) {
            return Some((v.clone(), ProviderSource::LoginShell));
        }
        crate::daemon_env::var(name)
            .filter(usable)
            .map(|v| (v, ProviderSource::Daemon))
    }
}

/// The default model of a provider by convention.
fn conventional_model(name: &str) -> Option<&'static str> {
    match name {
        "anthropic" => Some(DEFAULT_MODEL),
        "openai" => Some("openai/gpt-5"),
        "codex" => Some("codex/gpt-5-codex"),
        "openrouter" => Some("openrouter/anthropic/claude-sonnet-4.5"),
        _ => None,
    }
}

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Openai => "openai",
        ProviderKind::OpenaiChat => "openai-chat",
        ProviderKind::Codex => "codex",
        ProviderKind::Replay => "replay",
        ProviderKind::ClaudeCode => "claude-code",
        ProviderKind::CodexCli => "codex-cli",
    }
}

/// Where a variable was found, in words.
fn found_in(var: &str, source: ProviderSource) -> String {
    match source {
        ProviderSource::Environment => format!("{var} in this terminal's environment"),
        ProviderSource::LoginShell => format!("{var} from the login shell"),
        _ => format!("{var} in the daemon's environment"),
    }
}

/// One provider to report on.
struct Candidate {
    name: String,
    config: ProviderConfig,
    /// A local server stored with `stepper auth login --local`, and its chosen model.
    stored: Option<auth::store::StoredServer>,
}

impl Providers {
    /// Every provider worth reporting, in the order a default model is chosen from.
    fn candidates(&self, settings: &Settings) -> Vec<Candidate> {
        let store = auth::CredentialStore::load(self.credentials.clone()).ok();
        let configured = |name: &str| {
            settings
                .providers
                .get(name)
                .cloned()
                .or_else(|| convention(name))
        };
        let mut out = Vec::new();
        let mut push = |name: &str, config: Option<ProviderConfig>, stored| {
            if let Some(config) = config
                && config.kind != ProviderKind::Replay
                && !out.iter().any(|c: &Candidate| c.name == name)
            {
                out.push(Candidate {
                    name: name.to_string(),
                    config,
                    stored,
                });
            }
        };
        for name in PREFERRED {
            push(name, configured(name), None);
        }
        for (name, server) in store.iter().flat_map(|s| s.local_servers()) {
            let config = settings
                .providers
                .get(name)
                .cloned()
                .unwrap_or_else(|| ProviderConfig {
                    kind: ProviderKind::OpenaiChat,
                    base_url: Some(server.base_url.clone()),
                    api_key_env: None,
                    headers: Default::default(),
                    models: Default::default(),
                    command: None,
                    auth: None,
                });
            push(name, Some(config), Some(server.clone()));
        }
        for (name, config) in &settings.providers {
            if !LATER.contains(&name.as_str()) {
                push(name, Some(config.clone()), None);
            }
        }
        for name in LATER {
            push(name, configured(name), None);
        }
        out
    }

    /// Each provider's state; local servers are asked for their models when `probe`.
    pub async fn status(
        &self,
        settings: &Settings,
        envs: &Environments<'_>,
        probe: bool,
    ) -> Vec<ProviderStatus> {
        let store = auth::CredentialStore::load(self.credentials.clone()).ok();
        let candidates = self.candidates(settings);
        let checks = candidates
            .iter()
            .map(|c| self.status_of(c, settings, store.as_ref(), envs, probe));
        futures::future::join_all(checks).await
    }

    async fn status_of(
        &self,
        c: &Candidate,
        settings: &Settings,
        store: Option<&auth::CredentialStore>,
        envs: &Environments<'_>,
        probe: bool,
    ) -> ProviderStatus {
        let name = c.name.as_str();
        let mut status = ProviderStatus {
            name: name.to_string(),
            kind: stepper_protocol::methods::ProviderKind::parse(kind_name(c.config.kind)),
            usable: false,
            source: None,
            detail: String::new(),
            fix: None,
            default_model: conventional_model(name)
                .map(str::to_string)
                .or_else(|| c.config.models.keys().next().map(|m| format!("{name}/{m}"))),
        };
        let key = match &c.config.api_key_env {
            Some(var) => envs
                .var(var)
                .map(|(value, source)| (value, found_in(var, source), source)),
            None => None,
        }
        .or_else(|| {
            store
                .and_then(|s| s.api_key(name))
                .map(|value| {
                    (
                        value.to_string(),
                        format!("a key stored with 'stepper auth login --{name}'"),
                        ProviderSource::StoredKey,
                    )
                })
                .filter(|_| c.config.kind != ProviderKind::Codex)
        });
        let base_url = base_url_of(name, &c.config, settings, |v| {
            envs.var(v).map(|(url, _)| url)
        });
        match c.config.kind {
            ProviderKind::Anthropic | ProviderKind::Openai => {
                let var = c.config.api_key_env.clone().unwrap_or_else(|| {
                    if c.config.kind == ProviderKind::Anthropic {
                        "ANTHROPIC_API_KEY".into()
                    } else {
                        "OPENAI_API_KEY".into()
                    }
                });
                match key {
                    Some((_, detail, source)) => {
                        status.usable = true;
                        status.source = Some(source);
                        status.detail = match &base_url {
                            Some(url) => format!("{detail}, at {url}"),
                            None => detail,
                        };
                    }
                    None => {
                        status.detail = format!("no key: {var} is not set and none is stored");
                        status.fix = Some(format!(
                            "set {var} in the environment you run stepper from, or store a key \
                             with 'stepper auth login --{name}'"
                        ));
                    }
                }
            }
            ProviderKind::Codex => match store.and_then(|s| s.codex()) {
                Some(tokens) => {
                    status.usable = true;
                    status.source = Some(ProviderSource::SignIn);
                    let who = tokens.email.as_deref().unwrap_or("a ChatGPT account");
                    status.detail = match &tokens.plan {
                        Some(plan) => format!("signed in with ChatGPT as {who} ({plan} plan)"),
                        None => format!("signed in with ChatGPT as {who}"),
                    };
                }
                None => {
                    status.detail = "not signed in with ChatGPT".into();
                    status.fix = Some("run 'stepper auth login --codex'".into());
                }
            },
            ProviderKind::OpenaiChat => {
                self.local_status(&mut status, c, key, base_url, probe)
                    .await
            }
            // `stepper backends` says what a CLI back-end has.
            ProviderKind::Replay | ProviderKind::ClaudeCode | ProviderKind::CodexCli => {}
        }
        status
    }

    /// An OpenAI-compatible server: a remote one needs its key, a local one must answer.
    async fn local_status(
        &self,
        status: &mut ProviderStatus,
        c: &Candidate,
        key: Option<(String, String, ProviderSource)>,
        base_url: Option<String>,
        probe: bool,
    ) {
        let name = c.name.as_str();
        let Some(url) = base_url else {
            status.detail = "no baseUrl".into();
            status.fix = Some(format!(
                "give providers.{name}.baseUrl in setting.json, such as http://localhost:11434/v1"
            ));
            return;
        };
        if let Some(var) = c
            .config
            .api_key_env
            .as_deref()
            .filter(|_| name == "openrouter")
        {
            match key {
                Some((_, detail, source)) => {
                    status.usable = true;
                    status.source = Some(source);
                    status.detail = detail;
                }
                None => {
                    status.detail = format!("no key: {var} is not set and none is stored");
                    status.fix = Some(format!(
                        "set {var}, or store a key with 'stepper auth login --provider {name}'"
                    ));
                }
            }
            return;
        }
        let source = match (&c.stored, convention(name).is_some()) {
            (Some(_), _) => ProviderSource::LocalServer,
            (None, true) if !status_configured(name, c) => ProviderSource::Default,
            _ => ProviderSource::Settings,
        };
        let chosen = c.stored.as_ref().and_then(|s| s.model.clone());
        if let Some(model) = &chosen {
            status.default_model = Some(format!("{name}/{model}"));
        }
        if !probe {
            // Configured servers count as usable; a conventional address only once it answers.
            status.usable = source != ProviderSource::Default;
            status.source = status.usable.then_some(source);
            status.detail = format!("a server at {url} (not asked)");
            if !status.usable {
                status.fix = Some(format!("start the server at {url}"));
            }
            return;
        }
        let key = key.map(|(value, _, _)| value);
        match self.probe(&url, key.as_deref()).await {
            Ok(models) => {
                status.usable = true;
                status.source = Some(source);
                status.detail = format!(
                    "{} at {url}",
                    match models.len() {
                        1 => "1 model".to_string(),
                        n => format!("{n} models"),
                    }
                );
                if status.default_model.is_none() {
                    status.default_model = models.first().map(|m| format!("{name}/{m}"));
                }
            }
            Err(e) => {
                status.detail = e.to_string();
                status.fix = Some(match source {
                    ProviderSource::Default => format!(
                        "start Ollama, or set {} to where it listens",
                        base_url_env(name).unwrap_or("OLLAMA_BASE_URL")
                    ),
                    _ => format!("start the server at {url}, or correct its address"),
                });
            }
        }
    }

    /// Ask an OpenAI-compatible server which models it serves.
    pub async fn probe(
        &self,
        base_url: &str,
        key: Option<&str>,
    ) -> Result<Vec<String>, ProbeError> {
        let base = base_url.trim().trim_end_matches('/');
        let url = reqwest::Url::parse(&format!("{base}/models"))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| ProbeError::NotAUrl(base_url.to_string()))?;
        let mut request = self.http.get(url).timeout(PROBE_TIMEOUT);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                ProbeError::Timeout(base.to_string())
            } else {
                ProbeError::Unreachable(base.to_string())
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(ProbeError::Status(base.to_string(), status.as_u16()));
        }
        #[derive(Deserialize)]
        struct List {
            data: Vec<Entry>,
        }
        #[derive(Deserialize)]
        struct Entry {
            id: String,
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|_| ProbeError::Unreachable(base.to_string()))?;
        let list: List =
            serde_json::from_slice(&bytes).map_err(|_| ProbeError::NotAList(base.to_string()))?;
        Ok(list.data.into_iter().map(|e| e.id).collect())
    }

    /// The model a new session starts on when neither the client nor the settings name
    /// one: the first provider set up (without probing), else the default.
    pub fn default_model(&self, settings: &Settings, envs: &Environments<'_>) -> String {
        if let Some(model) = &settings.model {
            return model.clone();
        }
        let store = auth::CredentialStore::load(self.credentials.clone()).ok();
        for c in self.candidates(settings) {
            let name = c.name.as_str();
            let has_key = || {
                c.config
                    .api_key_env
                    .as_deref()
                    .is_some_and(|v| envs.var(v).is_some())
                    || store.as_ref().is_some_and(|s| s.api_key(name).is_some())
            };
            let model = match c.config.kind {
                ProviderKind::Anthropic | ProviderKind::Openai if has_key() => {
                    conventional_model(name).map(str::to_string)
                }
                ProviderKind::Codex if store.as_ref().is_some_and(|s| s.codex().is_some()) => {
                    conventional_model(name).map(str::to_string)
                }
                ProviderKind::OpenaiChat if c.stored.is_some() => c
                    .stored
                    .as_ref()
                    .and_then(|s| s.model.clone())
                    .map(|m| format!("{name}/{m}")),
                _ => None,
            };
            if let Some(model) = model {
                return model;
            }
        }
        DEFAULT_MODEL.to_string()
    }
}

/// Whether the settings configure a conventional name themselves.
fn status_configured(name: &str, c: &Candidate) -> bool {
    convention(name).is_some_and(|conv| conv != c.config)
}

/// Why a local server did not list its models.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    #[error(
        "{0:?} is not an http:// or https:// URL — give the server's base URL, such as http://localhost:11434/v1"
    )]
    NotAUrl(String),
    #[error("nothing answers at {0} — is the server running?")]
    Unreachable(String),
    #[error("{0} did not answer within 1.5 s")]
    Timeout(String),
    #[error(
        "{0}/models answered HTTP {1} — is this the OpenAI-compatible base URL (often ending in /v1)?"
    )]
    Status(String, u16),
    #[error(
        "{0}/models did not list models the OpenAI way ({{\"data\": [{{\"id\": …}}]}}) — is this the OpenAI-compatible base URL (often ending in /v1)?"
    )]
    NotAList(String),
}

/// The error of a session that starts on the default model with no provider set up.
pub fn nothing_set_up() -> String {
    "no model provider is set up: set ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment \
     you run stepper from, store a key with 'stepper auth login --anthropic' (or --openai), \
     sign in with ChatGPT with 'stepper auth login --codex', or run 'stepper' to choose one"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Settings whose anthropic and openai read variables no machine sets, so the test
    /// does not depend on the keys of the environment it runs in.
    fn settings(extra: serde_json::Value) -> Settings {
        let mut value = serde_json::json!({ "providers": {
            "anthropic": { "kind": "anthropic", "apiKeyEnv": "STEPPER_TEST_A_KEY" },
            "openai": { "kind": "openai", "apiKeyEnv": "STEPPER_TEST_O_KEY" },
        }});
        if let (Some(to), Some(from)) = (value.as_object_mut(), extra.as_object()) {
            to.extend(from.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_default_model_follows_what_is_set_up() {
        let dir = tempfile::tempdir().unwrap();
        let providers = Providers::new(dir.path().join("credentials.json")).unwrap();
        let none = Env::new();
        let nothing = Environments {
            client: &none,
            login: None,
        };
        assert_eq!(
            providers.default_model(&settings(serde_json::json!({})), &nothing),
            DEFAULT_MODEL
        );

        let openai = env(&[("STEPPER_TEST_O_KEY", "sk-o")]);
        let client = Environments {
            client: &openai,
            login: None,
        };
        assert_eq!(
            providers.default_model(&settings(serde_json::json!({})), &client),
            "openai/gpt-5"
        );

        let mut store = auth::CredentialStore::load(dir.path().join("credentials.json")).unwrap();
        store.set_local_server(
            "local",
            auth::store::StoredServer {
                base_url: "http://127.0.0.1:9/v1".into(),
                model: Some("qwen3:8b".into()),
            },
        );
        store.save().unwrap();
        assert_eq!(
            providers.default_model(&settings(serde_json::json!({})), &nothing),
            "local/qwen3:8b"
        );
        // A key anywhere comes before a local server; the login shell counts.
        let anthropic = env(&[("STEPPER_TEST_A_KEY", "sk-a")]);
        let login = Environments {
            client: &none,
            login: Some(&anthropic),
        };
        assert_eq!(
            providers.default_model(&settings(serde_json::json!({})), &login),
            DEFAULT_MODEL
        );
        assert_eq!(
            providers.default_model(&settings(serde_json::json!({})), &client),
            "openai/gpt-5"
        );
        // The settings' model wins over all of it.
        let chosen = settings(serde_json::json!({ "model": "local/llama3.2:3b" }));
        assert_eq!(
            providers.default_model(&chosen, &client),
            "local/llama3.2:3b"
        );
    }

    #[tokio::test]
    async fn status_says_where_a_key_was_found_and_never_shows_it() {
        let dir = tempfile::tempdir().unwrap();
        let providers = Providers::new(dir.path().join("credentials.json")).unwrap();
        let client = env(&[("STEPPER_TEST_O_KEY", "sk-client-secret")]);
        let login = env(&[("STEPPER_TEST_A_KEY", "sk-login-secret")]);
        let envs = Environments {
            client: &client,
            login: Some(&login),
        };
        let list = providers
            .status(&settings(serde_json::json!({})), &envs, false)
            .await;
        let find = |name: &str| list.iter().find(|s| s.name == name).unwrap();
        assert_eq!(find("anthropic").source, Some(ProviderSource::LoginShell));
        assert_eq!(find("openai").source, Some(ProviderSource::Environment));
        assert!(find("anthropic").usable && find("openai").usable);
        let codex = find("codex");
        assert!(!codex.usable);
        assert_eq!(
            codex.fix.as_deref(),
            Some("run 'stepper auth login --codex'")
        );
        let text = serde_json::to_string(&list).unwrap();
        assert!(!text.contains("secret"), "{text}");
    }
}
