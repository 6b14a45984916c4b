//! The first run, for `stepper` and `stepper attach`: when the daemon says a new session's
//! model has no provider set up, the TUI's setup screen offers the ways to set one up, and
//! each request it makes becomes a daemon call here. Then the session is created again, on
//! the model the user chose.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use stepper_protocol::client::{ClientError, ConnectOptions, DaemonClient};
use stepper_protocol::error::PROVIDER_UNAVAILABLE;
use stepper_protocol::methods::*;
use stepper_tui::{SetupCalls, SetupOffer, SetupOutcome, SetupReply, SetupRequest};

use crate::connect::{client_info, places};
use crate::session::client_env;

/// The provider name the first run stores a local server under.
const LOCAL: &str = "local";
/// Where a local server is looked for first.
const OLLAMA_URL: &str = "http://localhost:11434/v1";

/// Whether an error is the daemon saying that the model's provider is not set up.
pub fn is_unavailable(e: &anyhow::Error) -> Option<String> {
    e.chain()
        .find_map(|c| match c.downcast_ref::<ClientError>() {
            Some(ClientError::Rpc { code, message, .. }) if *code == PROVIDER_UNAVAILABLE => {
                Some(message.clone())
            }
            _ => None,
        })
}

/// Show the setup screen for `reason`; the model to start on, or `None` when the user left.
pub async fn choose(
    client: &DaemonClient,
    cwd: &Path,
    reason: String,
) -> anyhow::Result<Option<String>> {
    let status = client
        .call::<ProvidersStatus>(ProvidersStatusParams {
            cwd: Some(cwd.display().to_string()),
            env: client_env(),
            probe: true,
        })
        .await?;
    let usable = status
        .providers
        .iter()
        .filter(|p| p.usable)
        .filter_map(|p| Some((p.detail.clone(), p.default_model.clone()?)))
        .collect();
    let defaults: BTreeMap<String, String> = status
        .providers
        .iter()
        .filter_map(|p| Some((p.name.clone(), p.default_model.clone()?)))
        .collect();
    let offer = SetupOffer {
        reason,
        usable,
        defaults,
        local_url: OLLAMA_URL.into(),
    };
    let calls = Calls {
        client: client.clone(),
    };
    match stepper_tui::setup(offer, &calls)
        .await
        .context("showing the first-run choice")?
    {
        SetupOutcome::Model(model) => Ok(Some(model)),
        SetupOutcome::Cancelled => Ok(None),
    }
}

struct Calls {
    client: DaemonClient,
}

impl Calls {
    async fn login(&self, params: AuthLoginParams) -> Result<AuthLoginResponse, ClientError> {
        self.client.call::<AuthLogin>(params).await
    }

    async fn answer(&self, request: SetupRequest) -> Result<SetupReply, anyhow::Error> {
        Ok(match request {
            SetupRequest::StoreKey { provider, key } => {
                self.login(AuthLoginParams {
                    provider,
                    api_key: Some(key),
                    base_url: None,
                    model: None,
                })
                .await?;
                SetupReply::Done
            }
            SetupRequest::BeginSignIn => {
                let (login_id, url) = crate::auth::begin_sign_in(&self.client).await?;
                crate::auth::open_browser(&url);
                SetupReply::SignInBegun { login_id, url }
            }
            SetupRequest::WaitSignIn { login_id } => {
                // The user is in the browser: a connection that waits as long as the daemon does.
                let options = ConnectOptions {
                    request_timeout: Duration::from_secs(11 * 60),
                    ..Default::default()
                };
                let waiting = DaemonClient::connect_with(
                    &places()?.socket,
                    client_info("stepper attach (sign-in)"),
                    options,
                )
                .await?;
                waiting
                    .call::<AuthWaitLogin>(AuthWaitLoginParams { login_id })
                    .await?;
                SetupReply::Done
            }
            SetupRequest::Probe { url } => {
                let found = self
                    .client
                    .call::<ProvidersProbe>(ProvidersProbeParams { base_url: url })
                    .await?;
                SetupReply::Models {
                    url: found.base_url,
                    models: found.models,
                }
            }
            SetupRequest::UseLocal { url, model } => {
                self.login(AuthLoginParams {
                    provider: LOCAL.into(),
                    api_key: None,
                    base_url: Some(url),
                    model: Some(model),
                })
                .await?;
                SetupReply::Done
            }
        })
    }
}

impl SetupCalls for Calls {
    async fn call(&self, request: SetupRequest) -> SetupReply {
        match self.answer(request).await {
            Ok(reply) => reply,
            Err(e) => SetupReply::Failed(format!("{e:#}")),
        }
    }
}
