//! Which session `stepper attach` opens: the one named, the latest in this folder, a new
//! one (through the first-run choice when no provider is set up), or the user's pick.

use std::path::Path;

use anyhow::{Context, bail};
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_tui::Pick;

use super::{AttachArgs, get};
use crate::first_run;
use crate::session::{self, NewSession};

/// Which session: the one named, the latest here, a new one, or the user's pick.
pub(super) async fn choose(
    client: &DaemonClient,
    args: &AttachArgs,
    new: bool,
    cwd: &Path,
) -> anyhow::Result<Option<SessionResponse>> {
    if let Some(id) = &args.id {
        let id = crate::session::resolve(client, id).await?;
        return Ok(Some(get(client, &id).await?));
    }
    let here = client
        .call::<SessionList>(SessionListParams {
            cwd: Some(cwd.display().to_string()),
            limit: Some(20),
            cursor: None,
        })
        .await?
        .sessions;
    if args.last {
        return match here.first() {
            Some(s) => Ok(Some(get(client, &s.id).await?)),
            None => bail!(
                "no session was started in {} — run 'stepper' to start one",
                cwd.display()
            ),
        };
    }
    if new || here.is_empty() {
        return create(client, args, cwd).await;
    }
    match stepper_tui::pick(here.clone())
        .await
        .context("showing the session picker")?
    {
        Pick::New => create(client, args, cwd).await,
        Pick::Session(id) => Ok(Some(get(client, &id).await?)),
        Pick::Cancelled => Ok(None),
    }
}

/// A new session here. When its model's provider is not set up, the first-run choice
/// comes up, and the session starts on what the user set up (the model asked for, when the
/// user set up its provider).
async fn create(
    client: &DaemonClient,
    args: &AttachArgs,
    cwd: &Path,
) -> anyhow::Result<Option<SessionResponse>> {
    let mut model = args.model.clone();
    loop {
        let new = NewSession {
            model: model.clone(),
            mode: args.mode,
            sandbox: args.sandbox,
            record: None,
            input: None,
            ..Default::default()
        };
        let e = match session::create(client, cwd, new).await {
            Ok(session) => return Ok(Some(session)),
            Err(e) => e,
        };
        let Some(reason) = first_run::is_unavailable(&e) else {
            return Err(e);
        };
        let Some(chosen) = first_run::choose(client, cwd, reason).await? else {
            println!("no session started — 'stepper doctor' shows what is set up");
            return Ok(None);
        };
        let provider = |m: &str| m.split('/').next().unwrap_or_default().to_string();
        model = match &args.model {
            Some(asked) if provider(asked) == provider(&chosen) => Some(asked.clone()),
            _ => Some(chosen),
        };
    }
}
