//! `/compact`: the session's conversation compacted on demand, as a turn of its own (so it
//! waits for the turn before it like any input); the stored context is the compacted one
//! from now on. And the summariser the settings name, which automatic compaction uses too.

use std::path::Path;
use std::sync::Arc;

use stepper_engine::config::Settings;
use stepper_engine::hooks::TurnHooks;
use stepper_engine::orchestrator::LayerContext;
use stepper_engine::{ChatRequest, LlmProvider, ModelRef};
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnStatus};
use stepper_providers::ResolveContext;

use super::{Outcome, Turn};
use crate::hub::context::MAIN_LAYER;
use crate::hub::hooks::{HookRunner, SessionHooks};
use crate::hub::log::LogError;

/// A compaction turn, prepared.
pub(super) struct Compaction<'a> {
    /// The conversation, to the summariser's model.
    pub(super) request: ChatRequest,
    /// The tokens a model call sends besides the conversation, counted in its figures.
    pub(super) fixed: u64,
    pub(super) provider: Arc<dyn LlmProvider>,
    /// What to keep, as the user said it after `/compact`.
    pub(super) instructions: &'a str,
    pub(super) hooks: Option<Arc<HookRunner>>,
}

/// The summariser settings name (`compaction.model`, or its older name `provider`).
pub(in crate::hub) fn summarizer(
    (settings, user): (&Settings, &Settings),
    providers: &stepper_providers::Providers,
    env: &Env,
    cwd: &Path,
) -> Option<(Arc<dyn LlmProvider>, String)> {
    let compaction = settings.compaction.as_ref()?;
    let model = compaction.model.as_ref().or(compaction.provider.as_ref())?;
    let model_ref = ModelRef::parse(model).ok()?;
    let cx = ResolveContext {
        env,
        settings,
        user,
        cwd,
    };
    let resolved = providers.resolve(&model_ref, &cx).ok()?;
    Some((resolved.provider, model_ref.model))
}

/// Compact the conversation and finish the turn.
pub(super) async fn run(turn: &Turn, compaction: Compaction<'_>) -> Result<(), LogError> {
    use stepper_engine::compaction::messages_tokens;
    use stepper_engine::media_tokens::Accounting;
    let Compaction {
        request,
        fixed,
        provider,
        instructions,
        hooks,
    } = compaction;
    let instructions = (!instructions.is_empty()).then_some(instructions);
    // Pictures and PDFs by the accounting of the model's family.
    let accounting = Accounting::of_model(&request.model);
    let before_tokens = fixed + messages_tokens(accounting, &request.messages);
    turn.append(AppEvent::CompactionStarted {
        before_tokens,
        manual: true,
    })
    .await?;
    let hooks = hooks.map(|runner| SessionHooks {
        runner,
        stop_event: None,
        subagent: None,
    });
    if let Some(h) = &hooks {
        h.compacting("manual", instructions, false).await;
    }
    let done = stepper_engine::compaction::compact(
        &request,
        provider.as_ref(),
        &request.model,
        0,
        true,
        instructions,
        &turn.cancel,
    )
    .await;
    let changed = done.changed();
    if done.usage != stepper_protocol::Usage::default() {
        // The summary's model call, as the turn's usage.
        turn.append(AppEvent::UsageUpdated {
            usage: done.usage,
            cost_usd: None,
        })
        .await?;
    }
    let status = if done.error.is_some() && !changed {
        TurnStatus::Failed
    } else {
        TurnStatus::Completed
    };
    let error = done.error.clone();
    turn.append(AppEvent::CompactionFinished {
        before_tokens,
        after_tokens: fixed + messages_tokens(accounting, &done.messages),
        pruned: done.pruned,
        summarized: done.summarized,
        error: done.error,
    })
    .await?;
    if let Some(h) = &hooks {
        h.compacting("manual", instructions, true).await;
    }
    let contexts = if changed {
        vec![LayerContext {
            key: MAIN_LAYER.to_string(),
            messages: done.messages,
            replace: true,
        }]
    } else {
        Vec::new()
    };
    let error = (status == TurnStatus::Failed).then_some(error).flatten();
    turn.finish(Outcome {
        status,
        error,
        error_kind: None,
        contexts,
    })
    .await
}
