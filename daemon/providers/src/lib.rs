//! LLM providers: each speaks one vendor's wire format natively and yields the engine's
//! normalised `ChatEvent`s. This crate (with `tools` and `mcp`) is where HTTP lives.

pub mod anthropic;
pub mod sse;

use std::sync::Arc;
use std::time::Duration;

use stepper_engine::{LlmProvider, ModelRef, ProviderError};
use stepper_protocol::session::Env;

/// Builds providers for model references, sharing one HTTP client (and its connection pool).
#[derive(Clone)]
pub struct Providers {
    http: reqwest::Client,
}

impl Providers {
    pub fn new() -> Result<Providers, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ProviderError::Config(format!("cannot set up HTTP: {e}")))?;
        Ok(Providers { http })
    }

    /// The provider for `model`, configured from the session's environment first and the
    /// daemon's own second.
    pub fn resolve(
        &self,
        model: &ModelRef,
        env: &Env,
    ) -> Result<Arc<dyn LlmProvider>, ProviderError> {
        let var = |name: &str| {
            env.get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
                .filter(|v| !v.trim().is_empty())
        };
        match model.provider.as_str() {
            "anthropic" => {
                let key = var("ANTHROPIC_API_KEY").ok_or_else(|| {
                    ProviderError::Config(
                        "no Anthropic API key: set ANTHROPIC_API_KEY in the environment you run \
                         stepper from (a session uses its client's environment)"
                            .into(),
                    )
                })?;
                let base = var("ANTHROPIC_BASE_URL")
                    .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string());
                Ok(Arc::new(anthropic::Anthropic::new(
                    self.http.clone(),
                    &base,
                    key,
                )?))
            }
            other => Err(ProviderError::Config(format!(
                "unknown provider {other:?} in model '{model}' — this build speaks 'anthropic' \
                 (for example --model anthropic/claude-sonnet-4-5)"
            ))),
        }
    }
}
