//! The built-in commands the daemon answers as turns without a model call (see
//! `hub::builtin`): the answer is the turn's message, which the model never sees.

use std::collections::BTreeSet;
use std::path::PathBuf;

use stepper_engine::orchestrator::LayerContext;
use stepper_protocol::methods::SessionContextResponse;
use stepper_protocol::{AppEvent, TurnErrorKind, TurnStatus};

use super::overhead::context_window;
use super::{Outcome, Turn};
use crate::hub::builtin::{BUILTINS, Builtin};
use crate::hub::context::{MAIN_LAYER, history};
use crate::hub::log::LogError;
use crate::hub::session::LiveSession;
use crate::hub::{HubDeps, HubError, model};

/// Answer a built-in other than `/compact` as `turn` (started already): its answer as the
/// turn's message, or the turn failed with why.
pub(super) async fn run(turn: &Turn, builtin: Builtin<'_>) -> Result<(), LogError> {
    let deps = &turn.deps;
    let session = &*turn.session;
    let by = turn.input.by.clone();
    let mut contexts = Vec::new();
    let answer = match builtin {
        Builtin::Model("") => model::listing(deps, session).await,
        Builtin::Model(requested) => {
            model::change(deps, session, requested, by, Some(turn.n)).await
        }
        Builtin::Context => context_window(deps, session, &session.id)
            .await
            .map(|c| context_text(&c)),
        Builtin::Help => Ok(help(session, deps).await),
        Builtin::Clear => clear(session, turn.n, deps).await.map(|(answer, cleared)| {
            contexts = cleared;
            answer
        }),
        Builtin::Compact(_) => Err(HubError::Invalid(
            "/compact runs as a turn of compaction".into(),
        )),
    };
    let (status, error, kind) = match answer {
        Ok(text) => {
            let said = AppEvent::MessageCompleted {
                text,
                stop_reason: None,
            };
            turn.append(said).await?;
            (TurnStatus::Completed, None, None)
        }
        Err(e) => {
            let kind =
                matches!(e, HubError::ProviderUnavailable(_)).then_some(TurnErrorKind::Provider);
            (TurnStatus::Failed, Some(e.to_string()), kind)
        }
    };
    // What a built-in said is not the conversation: the model never sees it.
    turn.finish(Outcome {
        status,
        error,
        error_kind: kind,
        contexts,
    })
    .await
}

/// `/help`: the built-ins, then the folder's and the user's commands and skills.
async fn help(session: &LiveSession, deps: &HubDeps) -> String {
    let home = session.env_and_mode().0.get("HOME").map(PathBuf::from);
    let ext = deps.extensions.get(&session.cwd(), home.as_deref()).await;
    let line = |name: &str, args: &str, what: &str| {
        let args = if args.is_empty() {
            String::new()
        } else {
            format!(" {args}")
        };
        format!("- /{name}{args} — {what}")
    };
    let mut out = String::from("Built-in commands:\n\n");
    for (name, args, what) in BUILTINS {
        out.push_str(&line(name, args, what));
        out.push('\n');
    }
    if !ext.commands.is_empty() {
        out.push_str("\nCommands:\n\n");
        for c in &ext.commands {
            let what = format!("{} ({})", c.description, c.scope);
            out.push_str(&line(
                &c.name,
                c.argument_hint.as_deref().unwrap_or(""),
                &what,
            ));
            out.push('\n');
        }
    }
    let skills: Vec<_> = ext.skills.iter().filter(|s| s.user_invocable).collect();
    if !skills.is_empty() {
        out.push_str("\nSkills:\n\n");
        for s in skills {
            let what = format!("{} ({})", s.description, s.scope);
            out.push_str(&line(
                &s.name,
                s.argument_hint.as_deref().unwrap_or(""),
                &what,
            ));
            out.push('\n');
        }
    }
    out.push_str(
        "\nAn MCP server's prompts are commands too: /mcp__<server>__<prompt>. A client may \
         have its own (the TUI's /help lists its keys and commands).",
    );
    out
}

/// `/clear`: from the next turn on the model starts afresh. The stored context of the
/// session's conversation, of each layer and of its agent CLI is replaced by an empty
/// one (in this turn's end, so a rewind to before it brings them back); the transcript
/// stays; the next turn runs the `SessionStart` hooks again, with source `clear`.
async fn clear(
    session: &LiveSession,
    turn: u32,
    deps: &HubDeps,
) -> Result<(String, Vec<LayerContext>), HubError> {
    let mut layers: BTreeSet<String> = deps
        .store
        .context_layers(&session.id)
        .await?
        .into_iter()
        .collect();
    layers.insert(MAIN_LAYER.to_string());
    let had = history(&deps.store, &session.id, MAIN_LAYER)
        .await
        .map_or(0, |m| m.len());
    // The session's agent CLI forgets its conversation too: its process goes, and the
    // next turn starts a new conversation with it.
    {
        let mut backend = session.backend.lock().await;
        if let Some(cli) = backend.as_mut() {
            cli.shut().await;
        }
        *backend = None;
    }
    {
        let mut state = session.state();
        state.hooks_started = false;
        state.cleared = true;
    }
    let contexts = layers
        .into_iter()
        .map(|key| LayerContext {
            key,
            messages: Vec::new(),
            replace: true,
        })
        .collect();
    let s = if had == 1 { "" } else { "s" };
    Ok((
        format!(
            "Cleared: the model starts afresh from the next turn ({had} message{s} of \
                 the conversation set aside). The transcript stays; rewinding the \
                 conversation to before turn {turn} brings it back."
        ),
        contexts,
    ))
}

/// What `/context` answers: the window split by what fills it.
fn context_text(c: &SessionContextResponse) -> String {
    let share = |n: u64| {
        if c.window == 0 {
            String::new()
        } else {
            format!(" ({:.0}%)", n as f64 * 100.0 / c.window as f64)
        }
    };
    let used = c.window.saturating_sub(c.free);
    let mut out = format!(
        "context of {}: {used} of {} tokens used{}, compacted at {}\n",
        c.model,
        c.window,
        share(used),
        c.compact_at
    );
    for (name, n) in [
        ("system", c.system),
        ("tools", c.tools),
        ("memory", c.memory),
        ("messages", c.messages),
        ("free", c.free),
    ] {
        out.push_str(&format!("\n- {name}: {n}{}", share(n)));
    }
    out.push_str("\n\nEstimated at 4 bytes a token; /compact makes room, /clear empties it.");
    out
}
