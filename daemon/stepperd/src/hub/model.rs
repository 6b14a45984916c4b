//! A session's model as a client changes it (`session/setModel`, `/model`): a bare word
//! resolved to the one catalogue model it names, the id checked against what its provider
//! takes (a local server is asked), the provider checked set up; and the layers of the
//! folder's `stepper.md` that keep their own model said, since the change does not reach them.
//! Also what `/model` alone answers: the models to switch to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stepper_engine::ModelRef;
use stepper_engine::config::Settings;
use stepper_engine::config::layers;
use stepper_protocol::AppEvent;
use stepper_protocol::session::Env;
use stepper_providers::ResolveContext;
use stepper_providers::models::{ChoiceError, Offer};

use super::session::LiveSession;
use super::{HubDeps, HubError};

/// What a model is chosen with: the session's folder, settings and environment.
struct Choosing {
    cwd: PathBuf,
    settings: std::sync::Arc<Settings>,
    user: std::sync::Arc<Settings>,
    /// The client's environment, when a client gave it.
    client: Env,
    /// What providers are resolved with.
    effective: Env,
}

impl Choosing {
    async fn of(deps: &HubDeps, session: &LiveSession) -> Result<Choosing, HubError> {
        let cwd = session.cwd();
        let settings = deps.settings.get(Some(&cwd)).await?;
        let user = deps.settings.get(None).await?;
        // An environment from the store keeps no keys: the login shell's is waited for then.
        let client = if session.env_from_client() {
            session.env_and_mode().0
        } else {
            Env::new()
        };
        let (_, effective) = super::provider_env(deps, &client).await;
        Ok(Choosing {
            cwd,
            settings,
            user,
            client,
            effective,
        })
    }

    fn cx(&self) -> ResolveContext<'_> {
        ResolveContext {
            env: &self.effective,
            settings: &self.settings,
            user: &self.user,
            cwd: &self.cwd,
        }
    }
}

/// The model `requested` names, checked: `provider/model-id`, or a bare id or alias of
/// the catalogue. An id its provider does not take is `Invalid` (with the nearest it
/// does); a provider not set up, or a server that cannot be asked, `ProviderUnavailable`.
async fn choose(
    deps: &HubDeps,
    choosing: &Choosing,
    requested: &str,
) -> Result<ModelRef, HubError> {
    let requested = requested.trim();
    if requested.is_empty() {
        return Err(HubError::Invalid(
            "name a model: provider/model-id, or a bare id or alias ('stepper models' lists \
             them)"
                .into(),
        ));
    }
    let model = if requested.contains('/') {
        ModelRef::parse(requested).map_err(|e| HubError::Invalid(e.to_string()))?
    } else {
        deps.providers
            .resolve_bare(requested, &choosing.settings)
            .map_err(|e| HubError::Invalid(e.to_string()))?
    };
    let model = super::check_model(
        deps,
        Some(&model.to_string()),
        &choosing.settings,
        &choosing.cwd,
        &choosing.client,
    )
    .await?;
    deps.providers
        .check_choice(&model, &choosing.cx())
        .await
        .map_err(|e| match e {
            ChoiceError::Unreachable { .. } => HubError::ProviderUnavailable(e.to_string()),
            e => HubError::Invalid(e.to_string()),
        })?;
    Ok(model)
}

/// Change `session`'s model for its next turns to what `requested` names (see [`choose`]),
/// by client `by`. Returns what to tell the user; when layers keep their own model, that is
/// said in a `Notice` too (in `turn`, when a turn asked).
pub(crate) async fn change(
    deps: &HubDeps,
    session: &LiveSession,
    requested: &str,
    by: Option<String>,
    turn: Option<u32>,
) -> Result<String, HubError> {
    let choosing = Choosing::of(deps, session).await?;
    let model = choose(deps, &choosing, requested).await?;
    session.set_model(&model, by, &deps.store).await?;
    let mut answer = format!("The next turns use {model}.");
    if let Some(message) = pinned(deps, &choosing.cwd).await {
        session
            .log
            .append(
                turn,
                AppEvent::Notice {
                    message: message.clone(),
                },
            )
            .await?;
        answer.push_str("\n\n");
        answer.push_str(&message);
    }
    Ok(answer)
}

/// The layers of the folder's `stepper.md` that name their own model, in words: they keep
/// it whatever the session's model is.
async fn pinned(deps: &HubDeps, cwd: &Path) -> Option<String> {
    let names = super::tool_names(&deps.tools);
    let (cwd, config_dir) = (cwd.to_path_buf(), deps.settings.config_dir().to_path_buf());
    let loaded = tokio::task::spawn_blocking(move || {
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        layers::load(&cwd, &config_dir, &known).0
    })
    .await
    .ok()?;
    if !loaded.is_layered() {
        return None;
    }
    let own: Vec<String> = loaded
        .layers
        .iter()
        .filter_map(|l| l.model.as_ref().map(|m| format!("{} ({m})", l.name)))
        .collect();
    if own.is_empty() {
        return None;
    }
    let file = loaded
        .path
        .as_ref()
        .map_or_else(|| "stepper.md".to_string(), |p| p.display().to_string());
    let every = own.len() == loaded.layers.len();
    Some(if every {
        format!(
            "every layer of {file} names its own model — {} — so no layer uses the session's \
             model: change `model:` in that file to change theirs",
            own.join(", ")
        )
    } else {
        format!(
            "these layers of {file} name their own model and keep it: {} — the others use the \
             session's",
            own.join(", ")
        )
    })
}

/// What `/model` alone answers: the session's model, then the models it can switch to
/// (the catalogue of the providers set up, and what the session's own server lists), the
/// current one marked.
pub(crate) async fn listing(deps: &HubDeps, session: &LiveSession) -> Result<String, HubError> {
    let choosing = Choosing::of(deps, session).await?;
    let current = session.model();
    let cx = choosing.cx();
    let mut by_provider: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (model, _) in deps.providers.catalogue(&choosing.settings) {
        by_provider
            .entry(model.provider)
            .or_default()
            .push(model.model);
    }
    let mut served_note = None;
    if let Ok(model) = ModelRef::parse(&current) {
        match deps.providers.offer(&model.provider, &cx).await {
            Ok(Offer::Served(ids)) => by_provider
                .entry(model.provider.clone())
                .or_default()
                .extend(ids),
            Ok(_) => {}
            Err(e) => served_note = Some(format!("{}: {e}", model.provider)),
        }
        // The current model is listed even when no catalogue names it.
        by_provider
            .entry(model.provider)
            .or_default()
            .push(model.model);
    }
    let mut lines = Vec::new();
    let mut not_set_up = Vec::new();
    for (provider, mut ids) in by_provider {
        ids.sort();
        ids.dedup();
        let usable = ids.first().is_some_and(|id| {
            let model = ModelRef {
                provider: provider.clone(),
                model: id.clone(),
            };
            deps.providers.check(&model, &cx).is_ok()
        });
        if !usable {
            not_set_up.push(provider);
            continue;
        }
        for id in ids {
            let id = format!("{provider}/{id}");
            let mark = if id == current { " (current)" } else { "" };
            lines.push(format!("- {id}{mark}"));
        }
    }
    let mut out = format!(
        "The session's model is {current}. Switch with /model provider/model-id, a bare id, \
         or an alias ({}):\n\n{}",
        stepper_engine::catalogue::ALIASES
            .iter()
            .map(|(a, _)| *a)
            .collect::<Vec<_>>()
            .join(", "),
        lines.join("\n")
    );
    if let Some(note) = served_note {
        out.push_str(&format!("\n\nIts server's own list is unknown — {note}"));
    }
    if !not_set_up.is_empty() {
        out.push_str(&format!(
            "\n\nNot set up, so not listed: {} — 'stepper doctor' says how to set them up.",
            not_set_up.join(", ")
        ));
    }
    Ok(out)
}
