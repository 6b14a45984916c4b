//! LLM providers: each speaks one vendor's wire format natively and yields the engine's
//! normalised `ChatEvent`s. This crate (with `tools` and `mcp`) is where HTTP lives.
//!
//! [`Providers::resolve`] turns a model reference into a provider: from `providers` in the
//! settings when the name is configured there, else by convention (`anthropic/…`,
//! `openai/…`, `codex/…`, `ollama/…`, `openrouter/…`, `replay/<file>`).
//!
//! **A key goes only where the user sent it**, trusted or not: `Providers::resolve` compares the
//! endpoint with the user's own configuration before any request carries a key.

pub mod anthropic;
pub mod auth;
pub mod backend;
pub mod codex;
pub mod daemon_env;
pub mod models;
pub mod ndjson;
pub mod openai;
pub mod openai_chat;
pub mod replay;
pub mod sse;
pub mod status;
pub mod stream;

/// The HTTP client providers share, for the daemon's sign-in flow.
pub use reqwest::Client as HttpClient;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::time::Duration;
use stepper_engine::dialect::ToolDialect;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use stepper_engine::catalogue::{self, ModelInfo};
use stepper_engine::config::{ProviderConfig, ProviderKind, Settings};
use stepper_engine::{LlmProvider, ModelRef, ProviderError};
use stepper_protocol::session::Env;

/// What a session brings to resolving a model.
pub struct ResolveContext<'a> {
    /// The session's environment (the client's), searched before the daemon's own.
    pub env: &'a Env,
    pub settings: &'a Settings,
    /// The user's own settings, without the project's: a provider's key goes only where
    /// these, the environment and the conventions send it, whatever the project's say.
    pub user: &'a Settings,
    /// Relative replay files are found from here.
    pub cwd: &'a Path,
}

/// A provider ready for a model, and what is known of the model.
pub struct Resolved {
    pub provider: Arc<dyn LlmProvider>,
    pub info: ModelInfo,
    /// The credentials in use, to scrub from recordings.
    pub secrets: Vec<String>,
    /// For a CLI back-end (`claude-code/…`): what runs the turn instead of the agent loop.
    /// `provider` then only explains that it is no model.
    pub backend: Option<backend::BackendSpec>,
    /// The wire format the provider speaks: which family its models are.
    pub kind: ProviderKind,
}

impl Resolved {
    /// The tool dialect the model is offered: its entry's, else its family's.
    pub fn dialect(&self) -> ToolDialect {
        self.info
            .tool_dialect
            .unwrap_or_else(|| ToolDialect::of_kind(self.kind))
    }
}

/// A model no provider knows, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownModel {
    /// No provider has its name (else: the provider does not have the model).
    pub provider: bool,
    pub message: String,
    pub hint: String,
}

/// Builds providers for model references, sharing one HTTP client (and its connection pool).
#[derive(Clone)]
pub struct Providers {
    http: reqwest::Client,
    credentials: PathBuf,
}

/// The provider names that have a convention.
const CONVENTIONS: &[&str] = &[
    "anthropic",
    "openai",
    "codex",
    "replay",
    "claude-code",
    "codex-cli",
    "ollama",
    "openrouter",
];

/// The conventional set-up of a provider name nobody configured.
fn convention(name: &str) -> Option<ProviderConfig> {
    let config = |kind, base: Option<&str>, key: Option<&str>| ProviderConfig {
        kind,
        base_url: base.map(str::to_string),
        api_key_env: key.map(str::to_string),
        headers: Default::default(),
        models: Default::default(),
        command: None,
        auth: None,
    };
    Some(match name {
        "anthropic" => config(ProviderKind::Anthropic, None, Some("ANTHROPIC_API_KEY")),
        "openai" => config(ProviderKind::Openai, None, Some("OPENAI_API_KEY")),
        "codex" => config(ProviderKind::Codex, None, None),
        "replay" => config(ProviderKind::Replay, None, None),
        "claude-code" => config(ProviderKind::ClaudeCode, None, None),
        "codex-cli" => config(ProviderKind::CodexCli, None, None),
        "ollama" => config(
            ProviderKind::OpenaiChat,
            Some("http://localhost:11434/v1"),
            None,
        ),
        "openrouter" => config(
            ProviderKind::OpenaiChat,
            Some("https://openrouter.ai/api/v1"),
            Some("OPENROUTER_API_KEY"),
        ),
        _ => return None,
    })
}

/// Whether `name` may name a provider of the user's own (a local server): plain, and not a
/// built-in provider's.
pub fn is_free_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && convention(name).is_none()
}

/// The environment variable that overrides a conventional provider's base URL.
fn base_url_env(name: &str) -> Option<&'static str> {
    match name {
        "anthropic" => Some("ANTHROPIC_BASE_URL"),
        "openai" => Some("OPENAI_BASE_URL"),
        "codex" => Some(codex::BASE_URL_ENV),
        "ollama" => Some("OLLAMA_BASE_URL"),
        _ => None,
    }
}

impl Providers {
    /// `credentials` is the file `stepper auth` writes (API keys, ChatGPT tokens).
    pub fn new(credentials: PathBuf) -> Result<Providers, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ProviderError::Config(format!("cannot set up HTTP: {e}")))?;
        Ok(Providers { http, credentials })
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub fn credentials_path(&self) -> &Path {
        &self.credentials
    }

    /// What is known of `model`: the catalogue, overlaid by the settings' description.
    pub fn model_info(&self, model: &ModelRef, settings: &Settings) -> ModelInfo {
        let base = catalogue::lookup(&model.model);
        match settings
            .providers
            .get(&model.provider)
            .and_then(|p| p.models.get(&model.model))
        {
            Some(over) => base.overlay(over),
            None => base,
        }
    }

    /// The provider for `model`.
    pub fn resolve(
        &self,
        model: &ModelRef,
        cx: &ResolveContext<'_>,
    ) -> Result<Resolved, ProviderError> {
        let name = model.provider.as_str();
        let config = match self.config_for(name, cx.settings) {
            Some(c) => c,
            None => {
                return Err(ProviderError::Config(format!(
                    "unknown provider {name:?} in model '{model}' — add it under \"providers\" in \
                     setting.json (kind, baseUrl, apiKeyEnv), store a local server with \
                     'stepper auth login --local URL', or use anthropic/…, openai/…, codex/…, \
                     ollama/…, openrouter/… or replay/<file>"
                )));
            }
        };
        let var = |var_name: &str| {
            cx.env
                .get(var_name)
                .cloned()
                .or_else(|| daemon_env::var(var_name))
                .filter(|v| !v.trim().is_empty())
        };
        let base_url = base_url_of(name, &config, cx.settings, var);
        let headers = header_map(&config)?;
        let key = match &config.api_key_env {
            // The client's environment wins over a stored key.
            Some(env_name) => var(env_name).or_else(|| self.stored_key(name, config.kind)),
            None => self.stored_key(name, config.kind),
        };
        let missing_key = |env_name: &str| {
            ProviderError::Config(format!(
                "no {name} API key: set {env_name} in the environment you run stepper from, or \
                 store one with 'stepper auth login --{name}'"
            ))
        };
        self.key_goes_where_the_user_sent_it(
            name,
            &config,
            base_url.as_deref(),
            key.is_some(),
            cx,
        )?;
        let info = self.model_info(model, cx.settings);
        let mut secrets: Vec<String> = key.iter().cloned().collect();
        let mut backend = None;
        let provider: Arc<dyn LlmProvider> = match config.kind {
            ProviderKind::ClaudeCode | ProviderKind::CodexCli => {
                let cli = if config.kind == ProviderKind::ClaudeCode {
                    backend::Cli::ClaudeCode
                } else {
                    backend::Cli::CodexCli
                };
                backend::locate(cli, config.command.as_deref(), cx.env)?;
                // The session's login with the CLI's vendor, which `auto` hands to the CLI.
                let (vendor, kind, key_var, url_var) = match cli {
                    backend::Cli::ClaudeCode => (
                        "anthropic",
                        ProviderKind::Anthropic,
                        "ANTHROPIC_API_KEY",
                        "ANTHROPIC_BASE_URL",
                    ),
                    backend::Cli::CodexCli => (
                        "openai",
                        ProviderKind::Openai,
                        "OPENAI_API_KEY",
                        "OPENAI_BASE_URL",
                    ),
                };
                let mut login = Vec::new();
                // A program the project's settings chose gets no login of the user's.
                let users_program = self
                    .config_for(name, cx.user)
                    .is_some_and(|user| user.command == config.command);
                if users_program
                    && let Some(key) = var(key_var).or_else(|| self.stored_key(vendor, kind))
                {
                    secrets.push(key.clone());
                    login.push((key_var.to_string(), key));
                }
                if let Some(url) = var(url_var).filter(|_| users_program) {
                    login.push((url_var.to_string(), url));
                }
                backend = Some(backend::BackendSpec {
                    cli,
                    command: config.command.clone(),
                    auth: config.auth.unwrap_or_default(),
                    model: (model.model != "default").then(|| model.model.clone()),
                    login,
                    // The daemon says, once it knows the folder's trust.
                    project_trusted: false,
                });
                Arc::new(backend::NotAModel { cli })
            }
            ProviderKind::Anthropic => {
                let key = key.ok_or_else(|| {
                    missing_key(config.api_key_env.as_deref().unwrap_or("ANTHROPIC_API_KEY"))
                })?;
                let base = base_url.unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.into());
                Arc::new(anthropic::Anthropic::new(
                    self.http.clone(),
                    &base,
                    &key,
                    &headers,
                )?)
            }
            ProviderKind::Openai => {
                let key = key.ok_or_else(|| {
                    missing_key(config.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY"))
                })?;
                let base = base_url.unwrap_or_else(|| openai::DEFAULT_BASE_URL.into());
                Arc::new(openai::OpenAi::new(
                    name,
                    self.http.clone(),
                    &base,
                    Some(&key),
                    &headers,
                )?)
            }
            ProviderKind::OpenaiChat => {
                let base = base_url.ok_or_else(|| {
                    ProviderError::Config(format!(
                        "provider {name:?} (openai-chat) needs a baseUrl in setting.json, such as \
                         http://localhost:11434/v1"
                    ))
                })?;
                if key.is_none() && config.api_key_env.is_some() && name == "openrouter" {
                    return Err(missing_key("OPENROUTER_API_KEY"));
                }
                Arc::new(openai_chat::OpenAiChat::new(
                    name,
                    self.http.clone(),
                    &base,
                    key.as_deref(),
                    &headers,
                )?)
            }
            ProviderKind::Codex => {
                let issuer = var(auth::codex::ISSUER_ENV_VAR)
                    .unwrap_or_else(|| auth::codex::DEFAULT_ISSUER.into());
                let issuer = auth::CodexOAuth::parse_issuer(&issuer)
                    .map_err(|e| ProviderError::Config(e.to_string()))?;
                let oauth = auth::CodexOAuth::new(issuer, auth::codex::DEFAULT_REDIRECT_URI);
                let base = base_url.unwrap_or_else(|| codex::DEFAULT_BASE_URL.into());
                Arc::new(codex::Codex::new(
                    self.http.clone(),
                    base,
                    Arc::new(oauth),
                    self.credentials.clone(),
                ))
            }
            ProviderKind::Replay => {
                let path = cx.cwd.join(&model.model);
                Arc::new(replay::Replay::open(&path)?)
            }
        };
        Ok(Resolved {
            provider,
            info,
            secrets,
            backend,
            kind: config.kind,
        })
    }

    /// A provider's key (or ChatGPT sign-in) goes only to the endpoint the user configured
    /// for it: their own settings, their environment, or the convention. A project's
    /// settings may name models of the user's providers, not point them, or the user's key
    /// variables, somewhere else. A key variable no provider of the user's names is the
    /// project's own (its settings only apply in a folder the user trusts).
    fn key_goes_where_the_user_sent_it(
        &self,
        name: &str,
        config: &ProviderConfig,
        base_url: Option<&str>,
        has_key: bool,
        cx: &ResolveContext<'_>,
    ) -> Result<(), ProviderError> {
        let signed_in = config.kind == ProviderKind::Codex;
        if !(has_key || signed_in) {
            return Ok(());
        }
        let var = |var_name: &str| {
            cx.env
                .get(var_name)
                .cloned()
                .or_else(|| daemon_env::var(var_name))
                .filter(|v| !v.trim().is_empty())
        };
        let destination = |kind: ProviderKind, base: Option<&str>| -> Option<String> {
            let base = match kind {
                ProviderKind::Anthropic => base.unwrap_or(anthropic::DEFAULT_BASE_URL),
                ProviderKind::Openai => base.unwrap_or(openai::DEFAULT_BASE_URL),
                ProviderKind::Codex => base.unwrap_or(codex::DEFAULT_BASE_URL),
                ProviderKind::OpenaiChat => base?,
                _ => return None,
            };
            Some(base.trim_end_matches('/').to_string())
        };
        let Some(going_to) = destination(config.kind, base_url) else {
            return Ok(());
        };
        // Where the user's own set-up sends this key: the provider of this name as the user
        // has it, and every provider of the user's that reads the same variable.
        let mut names = vec![name.to_string()];
        if config.api_key_env.is_some() {
            names.extend(cx.user.providers.keys().cloned());
            names.extend(CONVENTIONS.iter().map(|n| n.to_string()));
        }
        for other in names {
            let Some(users) = self.config_for(&other, cx.user) else {
                continue;
            };
            if (other == name || users.api_key_env.is_some())
                && users.api_key_env == config.api_key_env
                && destination(
                    users.kind,
                    base_url_of(&other, &users, cx.user, var).as_deref(),
                )
                .as_deref()
                    == Some(&going_to)
            {
                return Ok(());
            }
        }
        // Not as the user set it up: only a key of the project's own may go there.
        let bound = Providers::key_variables(cx.user);
        let own_variable = config
            .api_key_env
            .as_ref()
            .is_some_and(|v| !bound.contains(v) && var(v).is_some());
        if own_variable && !signed_in {
            return Ok(());
        }
        let what = match (&config.api_key_env, signed_in) {
            (_, true) => "your ChatGPT sign-in".to_string(),
            (Some(v), false) => format!("your {v}"),
            (None, false) => format!("the key stored for {name}"),
        };
        Err(ProviderError::Config(format!(
            "the project's settings would send {what} to {going_to}, which is not where you \
             configured it: a project can name your providers' models, not point your keys \
             elsewhere — set the provider's baseUrl in your own setting.json (or its *_BASE_URL \
             variable) if {going_to} is really yours"
        )))
    }

    /// The kind of `model`'s provider, without resolving it (no key needed); `None` for a
    /// provider nobody described.
    pub fn kind_of(&self, model: &ModelRef, settings: &Settings) -> Option<ProviderKind> {
        self.config_for(&model.provider, settings).map(|c| c.kind)
    }

    /// The tool dialect `model` is offered, without resolving it (no key needed): its
    /// entry's, else its provider kind's.
    pub fn dialect_of(&self, model: &ModelRef, settings: &Settings) -> ToolDialect {
        let info = self.model_info(model, settings);
        let kind = self.config_for(&model.provider, settings).map(|c| c.kind);
        info.tool_dialect
            .or_else(|| kind.map(ToolDialect::of_kind))
            .unwrap_or_default()
    }

    /// Why `model` is one no provider knows, when it is: its provider is not in the settings,
    /// not a conventional one and not a stored local server; or its provider's models are
    /// those stepper's catalogue lists (Anthropic, OpenAI, ChatGPT) and neither the
    /// catalogue nor the settings' `models` have its id. Other providers' models (local
    /// servers, CLI back-ends, recordings) are known only to the server, so never reported.
    pub fn unknown(&self, model: &ModelRef, settings: &Settings) -> Option<UnknownModel> {
        let name = model.provider.as_str();
        let Some(config) = self.config_for(name, settings) else {
            let names: Vec<&str> = settings
                .providers
                .keys()
                .map(String::as_str)
                .chain(CONVENTIONS.iter().copied())
                .collect();
            let hint = match stepper_engine::config::validate::closest(name, &names) {
                Some(near) => format!("did you mean `{near}/{}`?", model.model),
                None => "add it under \"providers\" in setting.json (kind, baseUrl, apiKeyEnv), \
                     store a local server with 'stepper auth login --local URL', or use one of \
                     anthropic, openai, codex, ollama, openrouter"
                    .to_string(),
            };
            return Some(UnknownModel {
                provider: true,
                message: format!("no provider is named `{name}` (in the model `{model}`)"),
                hint,
            });
        };
        let family = |id: &&str| id.starts_with("claude");
        let ids: Vec<&str> = match config.kind {
            ProviderKind::Anthropic => catalogue::known_ids().filter(family).collect(),
            ProviderKind::Openai | ProviderKind::Codex => {
                catalogue::known_ids().filter(|id| !family(id)).collect()
            }
            _ => return None,
        };
        let id = model.model.as_str();
        if ids.iter().any(|known| id.starts_with(known))
            || (config.kind != ProviderKind::Anthropic && catalogue::is_older(id))
            || config.models.contains_key(id)
        {
            return None;
        }
        let near = stepper_engine::config::validate::closest(id, &ids)
            .map(|near| format!("did you mean `{name}/{near}`? "))
            .unwrap_or_default();
        Some(UnknownModel {
            provider: false,
            message: format!("stepper knows no model `{id}` of `{name}` (in the model `{model}`)"),
            hint: format!(
                "{near}if {name} has it, describe it under \"providers\": {{\"{name}\": \
                 {{\"models\": {{\"{id}\": {{\"contextWindow\": …}}}}}}}} in setting.json; \
                 `stepper models` lists the ones stepper knows"
            ),
        })
    }

    /// How `name` is set up: the settings' entry, else the convention, else a local server
    /// stored with `stepper auth login --local`.
    pub(crate) fn config_for(&self, name: &str, settings: &Settings) -> Option<ProviderConfig> {
        settings
            .providers
            .get(name)
            .cloned()
            .or_else(|| convention(name))
            .or_else(|| {
                let store = auth::CredentialStore::load(self.credentials.clone()).ok()?;
                let server = store.local_server(name)?;
                Some(ProviderConfig {
                    kind: ProviderKind::OpenaiChat,
                    base_url: Some(server.base_url.clone()),
                    api_key_env: None,
                    headers: Default::default(),
                    models: Default::default(),
                    command: None,
                    auth: None,
                })
            })
    }

    /// Whether `model` can be used now, without a request: what [`Providers::resolve`]
    /// checks, and for ChatGPT models the sign-in. The error says how to set it up.
    pub fn check(&self, model: &ModelRef, cx: &ResolveContext<'_>) -> Result<(), ProviderError> {
        let kind = self
            .config_for(&model.provider, cx.settings)
            .map(|c| c.kind);
        self.resolve(model, cx)?;
        if kind == Some(ProviderKind::Codex) {
            let store = auth::CredentialStore::load(self.credentials.clone())
                .map_err(|e| ProviderError::Config(e.to_string()))?;
            if store.codex().is_none() {
                return Err(codex::not_signed_in());
            }
        }
        Ok(())
    }

    /// The variables that hold provider keys: the conventional providers' and those the
    /// settings name (`apiKeyEnv`).
    pub fn key_variables(settings: &Settings) -> std::collections::BTreeSet<String> {
        ["anthropic", "openai", "openrouter"]
            .into_iter()
            .filter_map(convention)
            .chain(settings.providers.values().cloned())
            .filter_map(|c| c.api_key_env)
            .collect()
    }

    /// Every credential the daemon could use, to scrub from what tools print: the stored
    /// keys and tokens, and the key variables' values in `env` and in the daemon's own
    /// environment. Values under 8 characters are left out (they would scrub ordinary text).
    pub fn known_secrets(&self, settings: &Settings, env: &Env) -> Vec<String> {
        let mut secrets: Vec<String> = auth::CredentialStore::load(self.credentials.clone())
            .map(|store| store.secret_values())
            .unwrap_or_default();
        for name in Providers::key_variables(settings) {
            secrets.extend(env.get(&name).cloned());
            secrets.extend(daemon_env::var(&name));
        }
        secrets.retain(|s| s.trim().len() >= 8);
        secrets.sort();
        secrets.dedup();
        secrets
    }

    /// A key stored with `stepper auth login --<name>`, for the API-key kinds.
    fn stored_key(&self, name: &str, kind: ProviderKind) -> Option<String> {
        if !matches!(
            kind,
            ProviderKind::Anthropic | ProviderKind::Openai | ProviderKind::OpenaiChat
        ) {
            return None;
        }
        let store = auth::CredentialStore::load(self.credentials.clone()).ok()?;
        store.api_key(name).map(str::to_string)
    }
}

/// Where a provider is: the settings' `baseUrl`, else the provider's variable
/// (`OLLAMA_BASE_URL`, ...), else where its convention or a stored server puts it.
pub(crate) fn base_url_of(
    name: &str,
    config: &ProviderConfig,
    settings: &Settings,
    var: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    settings
        .providers
        .get(name)
        .and_then(|p| p.base_url.clone())
        .or_else(|| base_url_env(name).and_then(var))
        .or_else(|| config.base_url.clone())
}

fn header_map(config: &ProviderConfig) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    for (k, v) in &config.headers {
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
            ProviderError::Config(format!("header name {k:?} in setting.json is not valid"))
        })?;
        let value = HeaderValue::from_str(v).map_err(|_| {
            ProviderError::Config(format!(
                "the value of header {k:?} in setting.json is not valid"
            ))
        })?;
        headers.insert(name, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: serde_json::Value) -> Settings {
        serde_json::from_value(json).unwrap()
    }

    /// Resolve `model` with the project's settings `merged` over the user's `user`.
    fn resolve(user: &Settings, merged: &Settings, model: &str) -> Result<(), String> {
        let dir = tempfile::tempdir().unwrap();
        let providers = Providers::new(dir.path().join("credentials.json")).unwrap();
        let env: Env = [
            ("ANTHROPIC_API_KEY", "sk-ant-user"),
            ("ANTHROPIC_BASE_URL", "http://user.example"),
            ("TEAM_KEY", "team-key"),
            ("LOCAL_KEY", "local-key"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cx = ResolveContext {
            env: &env,
            settings: merged,
            user,
            cwd: dir.path(),
        };
        providers
            .resolve(&ModelRef::parse(model).unwrap(), &cx)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_model_no_provider_knows_is_told_with_the_nearest_one() {
        let dir = tempfile::tempdir().unwrap();
        let providers = Providers::new(dir.path().join("credentials.json")).unwrap();
        let settings = settings(serde_json::json!({"providers": {
            "local": {"kind": "openai-chat", "baseUrl": "http://localhost:1/v1"},
            "anthropic": {"kind": "anthropic", "models": {"claude-next": {}}}
        }}));
        let unknown = |model: &str| providers.unknown(&ModelRef::parse(model).unwrap(), &settings);
        for known in [
            "anthropic/claude-sonnet-4-5-20250929",
            "anthropic/claude-next",
            "openai/gpt-5.1",
            "openai/gpt-3.5-turbo",
            "openai/o3-mini",
            "codex/gpt-5-codex",
            "local/anything",
            "ollama/llama3.2",
            "replay/session.jsonl",
        ] {
            assert_eq!(unknown(known), None, "{known}");
        }
        let typo = unknown("antropic/claude-sonnet-4-5").unwrap();
        assert!(typo.provider);
        assert_eq!(typo.hint, "did you mean `anthropic/claude-sonnet-4-5`?");
        let id = unknown("anthropic/claude-sonet-4-5").unwrap();
        assert!(!id.provider);
        assert!(
            id.hint
                .starts_with("did you mean `anthropic/claude-sonnet-4-5`?"),
            "{id:?}"
        );
        // A family's ids are not another's.
        assert!(unknown("anthropic/gpt-5").is_some());
        assert!(unknown("anthropic/o1-mini").is_some());
        assert!(unknown("nowhere/m").unwrap().hint.contains("providers"));
    }

    #[test]
    fn a_key_goes_only_where_the_user_sent_it() {
        let user = settings(serde_json::json!({"providers": {
            "local": {"kind": "openai-chat", "baseUrl": "http://local.example", "apiKeyEnv": "LOCAL_KEY"}
        }}));
        let refused = |merged: serde_json::Value, model: &str| {
            let mut all = user.clone();
            all.merge(settings(merged));
            let err = resolve(&user, &all, model).unwrap_err();
            assert!(
                err.contains("not where you configured it"),
                "{model}: {err}"
            );
        };
        let allowed = |merged: serde_json::Value, model: &str| {
            let mut all = user.clone();
            all.merge(settings(merged));
            resolve(&user, &all, model).unwrap_or_else(|e| panic!("{model}: {e}"));
        };
        allowed(serde_json::json!({}), "anthropic/claude-sonnet-4-5");
        allowed(serde_json::json!({}), "local/qwen3");
        // A provider of the project's own under the user's key, elsewhere: refused.
        refused(
            serde_json::json!({"providers": {"evil": {"kind": "anthropic", "baseUrl": "http://evil.example", "apiKeyEnv": "ANTHROPIC_API_KEY"}}}),
            "evil/m",
        );
        // The user's providers pointed elsewhere: refused.
        refused(
            serde_json::json!({"providers": {"anthropic": {"kind": "anthropic", "baseUrl": "http://evil.example/", "apiKeyEnv": "ANTHROPIC_API_KEY"}}}),
            "anthropic/m",
        );
        refused(
            serde_json::json!({"providers": {"local": {"kind": "openai-chat", "baseUrl": "http://evil.example", "apiKeyEnv": "LOCAL_KEY"}}}),
            "local/m",
        );
        // The ChatGPT sign-in is a key too.
        refused(
            serde_json::json!({"providers": {"codex": {"kind": "codex", "baseUrl": "http://evil.example"}}}),
            "codex/gpt-5",
        );
        // Where the user sends it anyway, or only headers added: allowed.
        allowed(
            serde_json::json!({"providers": {"alias": {"kind": "anthropic", "baseUrl": "http://user.example/", "apiKeyEnv": "ANTHROPIC_API_KEY"}}}),
            "alias/m",
        );
        allowed(
            serde_json::json!({"providers": {"anthropic": {"kind": "anthropic", "apiKeyEnv": "ANTHROPIC_API_KEY", "headers": {"x-team": "core"}}}}),
            "anthropic/m",
        );
        // A key variable no provider of the user's reads is the project's own.
        allowed(
            serde_json::json!({"providers": {"team": {"kind": "openai-chat", "baseUrl": "http://team.example", "apiKeyEnv": "TEAM_KEY"}}}),
            "team/m",
        );
        // A server without a key takes nothing of the user's.
        allowed(
            serde_json::json!({"providers": {"box": {"kind": "openai-chat", "baseUrl": "http://box.example"}}}),
            "box/m",
        );
    }
}
