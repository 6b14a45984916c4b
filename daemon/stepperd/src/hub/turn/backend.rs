//! A turn run by another agent CLI (`claude-code/<model>`, `codex-cli/<model>`): the
//! session's CLI gets the prompt once the checkpoint baseline is taken; its events go to the
//! session's log, its permission requests to the session's gate, and its conversation's id
//! (Claude Code's session, Codex's thread) is stored with the turn's end, so the
//! conversation resumes after a daemon restart. The files it changed are
//! checkpointed like stepper's own tools' changes (it may change files without asking, so
//! the turn's files are always walked).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use stepper_engine::ChatMessage;
use stepper_engine::orchestrator::LayerContext;
use stepper_engine::tool::CommandEnv;
use stepper_protocol::{AppEvent, PermissionMode, TurnStatus};
use stepper_providers::backend::claude::TurnSpec;
use stepper_providers::backend::{Cli, Driver, Finished};

use super::prepare::{Setup, policy};
use super::{Outcome, Turn};
use crate::hub::context::{MAIN_LAYER, history};
use crate::hub::log::LogError;

/// Where a session's conversation id with `cli` is kept: a context of its own, replaced at
/// each turn's end.
fn context_key(cli: Cli) -> String {
    format!("backend:{}", cli.provider())
}

/// How long an interrupted CLI gets to end its turn before its group is stopped
/// (`STEPPER_BACKEND_GRACE_MS`).
fn grace() -> Duration {
    std::env::var("STEPPER_BACKEND_GRACE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(5), Duration::from_millis)
}

/// Run the turn in the session's CLI.
pub(super) async fn run(turn: &Turn, setup: Setup) -> Result<Outcome, LogError> {
    let session = &turn.session;
    let deps = &turn.deps;
    let Setup {
        resolved,
        settings,
        env,
        effective,
        secrets,
        cwd,
        ..
    } = setup;
    let Some(mut spec) = resolved.backend else {
        return Ok(Outcome::failed(
            "this model is not a CLI back-end".into(),
            None,
        ));
    };
    spec.project_trusted = deps
        .settings
        .folder(Some(&cwd))
        .await
        .is_ok_and(|f| f.trust.trusted);
    let home = env.get("HOME").map(PathBuf::from);
    let policy = policy(turn, &settings, &cwd, home.as_deref()).await;
    let plan = policy.mode == PermissionMode::Plan;
    let policy = Arc::new(std::sync::Mutex::new(policy));
    session.state().active_policy = Some(Arc::clone(&policy));
    let (baseline_taken, baseline) = tokio::sync::watch::channel(false);
    let gate = turn.gate(policy, None, baseline);
    // The CLI may change files without asking (its own allow rules): the baseline is taken
    // before it gets the prompt, and the files are walked after the turn.
    turn.consulted.store(true, Ordering::SeqCst);
    if let Err(e) = session.checkpoints.sync(&deps.store).await {
        let message = format!("file checkpoints are off for this turn: {e}");
        turn.append(AppEvent::Notice { message }).await?;
    }
    let _ = baseline_taken.send(true);

    let mut backend = session.backend.lock().await;
    // Another CLI than the last turn's: that one's process goes.
    if let Some(other) = backend.as_mut().filter(|b| b.cli() != spec.cli) {
        other.shut().await;
        *backend = None;
    }
    if backend.is_none() {
        // The conversation of an earlier daemon, if the session had one.
        let stored = history(&deps.store, &session.id, &context_key(spec.cli))
            .await
            .ok()
            .and_then(|m| m.last().map(ChatMessage::text))
            .filter(|id| !id.is_empty());
        *backend = Some(Driver::new(spec.cli, stored));
    }
    let Some(driver) = backend.as_mut() else {
        return Ok(Outcome {
            status: TurnStatus::Failed,
            error: None,
            error_kind: None,
            contexts: Vec::new(),
        });
    };
    let guard = std::env::current_exe().ok();
    let take = session.steering_taker();
    let Finished { outcome, exchanges } = driver
        .turn(
            TurnSpec {
                prompt: &turn.input.text,
                attachments: &setup.attached,
                spec: &spec,
                env: &effective,
                cwd: &cwd,
                plan,
                gate: &gate,
                command_env: CommandEnv(Arc::new(env)),
                cancel: &turn.cancel,
                guard: guard.as_deref(),
                secrets: &secrets,
                grace: grace(),
                steering: Some(&*take),
            },
            &turn.sink(None),
        )
        .await;
    let mut messages = Vec::new();
    for (said, answer) in exchanges {
        messages.push(ChatMessage::user(said));
        if !answer.is_empty() {
            messages.push(ChatMessage::assistant(answer));
        }
    }
    let mut contexts = vec![LayerContext {
        key: MAIN_LAYER.to_string(),
        messages,
        replace: false,
    }];
    if let Some(id) = driver.conversation() {
        contexts.push(LayerContext {
            key: context_key(spec.cli),
            messages: vec![ChatMessage::assistant(id.to_string())],
            replace: true,
        });
    }
    Ok(Outcome {
        status: outcome.status,
        error: outcome.error,
        error_kind: None,
        contexts,
    })
}
