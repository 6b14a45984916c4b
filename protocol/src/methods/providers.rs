//! Models and the providers that serve them: `models/list`, `auth/*` (keys and the ChatGPT
//! sign-in) and `providers/*`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::Env;

open_enum! {
    /// A provider's wire format (`providers/status`'s `kind`).
    pub enum ProviderKind {
        Anthropic = "anthropic",
        Openai = "openai",
        OpenaiChat = "openai-chat",
        Codex = "codex",
        Replay = "replay",
        ClaudeCode = "claude-code",
        CodexCli = "codex-cli",
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListParams {
    /// Include the providers and models configured for this folder's settings.
    #[serde(default)]
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelEntry {
    /// `provider/model-id`.
    pub id: String,
    pub provider: String,
    pub context_window: u64,
    pub max_output: u32,
    /// US dollars per million tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_price: Option<f64>,
    /// Described in the settings (rather than only in the built-in catalogue).
    pub configured: bool,
    /// Whether it takes pictures, and PDFs; absent when not known (the provider decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListResponse {
    /// The model new sessions in that folder get.
    pub default: String,
    pub models: Vec<ModelEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodexAccount {
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub plan: Option<String>,
    /// When the access token expires (it is refreshed before then), ms since epoch.
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthStatusResponse {
    /// The ChatGPT sign-in, when there is one.
    #[serde(default)]
    pub codex: Option<CodexAccount>,
    /// Providers with a stored API key (the keys themselves never leave the daemon).
    pub stored_keys: Vec<String>,
    /// Local OpenAI-compatible servers stored with `auth/login {baseUrl}`.
    #[serde(default)]
    pub local_servers: Vec<LocalServer>,
}

/// A local OpenAI-compatible server, stored by name: models `NAME/<model>` go to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalServer {
    pub name: String,
    pub base_url: String,
    /// The model a new session starts on when this server is the provider in use.
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLoginParams {
    /// `codex` to sign in with ChatGPT, or a provider name (`anthropic`, `openai`, ...) to
    /// store `apiKey` for it, or a name for the local server at `baseUrl` (`local`).
    pub provider: String,
    #[serde(default)]
    pub api_key: Option<String>,
    /// A local OpenAI-compatible server (`http://localhost:11434/v1`): probed, then stored
    /// under `provider`, so that `provider/<model>` goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// With `baseUrl`: the model new sessions start on (the server's first when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLoginResponse {
    /// For ChatGPT: the page to open in a browser.
    #[serde(default)]
    pub url: Option<String>,
    /// For ChatGPT: pass to `auth/waitLogin`.
    #[serde(default)]
    pub login_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersStatusParams {
    /// The folder whose settings apply (an absolute path); the user's settings alone when
    /// absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The client's environment, searched for keys before the login shell's and the
    /// daemon's, as `session/create` would.
    #[serde(default)]
    pub env: Env,
    /// Also ask local servers whether they answer (`GET /models`, a second or two at most
    /// each, all at once). Without it a local server counts as usable when it is configured.
    #[serde(default)]
    pub probe: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersStatusResponse {
    pub providers: Vec<ProviderStatus>,
    /// The model a new session here starts on when none is asked for (the settings', else
    /// the first usable provider's), and whether it can.
    pub default_model: String,
    pub default_usable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    /// The name models go by (`anthropic` in `anthropic/claude-sonnet-4-5`).
    pub name: String,
    /// Its wire format.
    pub kind: ProviderKind,
    pub usable: bool,
    /// Where its credentials (or its address) were found, when usable.
    #[serde(default)]
    pub source: Option<ProviderSource>,
    /// What was found, or what is missing, in words (never a key).
    pub detail: String,
    /// What to do to make it usable, when it is not.
    #[serde(default)]
    pub fix: Option<String>,
    /// The model a session on this provider starts on.
    #[serde(default)]
    pub default_model: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProviderSource {
    /// A variable in the client's environment.
    Environment,
    /// A variable the login shell sets.
    LoginShell,
    /// A variable in the daemon's own environment.
    Daemon,
    /// A key stored with `stepper auth login`.
    StoredKey,
    /// The ChatGPT sign-in.
    SignIn,
    /// A server stored with `stepper auth login --local`.
    LocalServer,
    /// `providers` in setting.json (a server that needs no key).
    Settings,
    /// A conventional address (Ollama's) that answered.
    Default,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersProbeParams {
    /// The server's OpenAI-compatible base URL, such as `http://localhost:11434/v1`.
    pub base_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvidersProbeResponse {
    /// The base URL as it will be used (trailing slash dropped).
    pub base_url: String,
    /// The model ids it serves, as it lists them.
    pub models: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthWaitLoginParams {
    pub login_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLogoutParams {
    pub provider: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthLogoutResponse {
    /// Whether there was something to forget.
    pub removed: bool,
}
