//! The commands the daemon answers itself when an input starts with one, whichever client
//! submitted it (`ask`, the TUI, an editor): `/model [id]`, `/context`, `/help` and `/clear`
//! are turns without a model call — the answer is the turn's message — and `/compact [what
//! to keep]` is a turn of compaction (run in `turn`). They win over a custom command of the
//! same name. What only a client can do (the TUI's `/detach`, its pickers) stays there.

use std::collections::BTreeSet;
use std::path::PathBuf;

use stepper_engine::orchestrator::LayerContext;
use stepper_protocol::methods::SessionContextResponse;
use stepper_protocol::{AppEvent, TurnErrorKind, TurnStatus};

use super::context::{MAIN_LAYER, history};
use super::log::LogError;
use super::session::LiveSession;
use super::{HubDeps, HubError, model};

/// A built-in command, as an input names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin<'a> {
    /// `/model` alone lists the models to switch to; with an id, switches.
    Model(&'a str),
    Context,
    Help,
    Clear,
    /// With what the summary should keep.
    Compact(&'a str),
}

/// The built-ins as `/help` and `commands/list` name them: name, arguments, what it does.
pub(crate) const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "model",
        "[provider/model-id]",
        "switch the model of the next turns (a bare id or alias will do); alone, list the models to switch to",
    ),
    (
        "context",
        "",
        "how full the model's context window is, by part",
    ),
    ("compact", "[what to keep]", "compact the conversation now"),
    (
        "clear",
        "",
        "forget the conversation: the model starts afresh (the transcript stays, and a rewind brings it back)",
    ),
    (
        "help",
        "",
        "the built-in commands, and the commands and skills of this folder",
    ),
];

impl Builtin<'_> {
    /// The built-in `text` starts with, if it starts with one (its first word, alone).
    pub(crate) fn parse(text: &str) -> Option<Builtin<'_>> {
        let text = text.trim();
        let (name, args) = match text.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (text, ""),
        };
        Some(match name {
            "/model" => Builtin::Model(args),
            "/context" => Builtin::Context,
            "/help" => Builtin::Help,
            "/clear" => Builtin::Clear,
            "/compact" => Builtin::Compact(args),
            _ => return None,
        })
    }
}

impl LiveSession {
    /// Answer a built-in other than `/compact` as turn `turn` (started already): its answer
    /// as the turn's message, or the turn failed with why.
    pub(super) async fn builtin_turn(
        &self,
        turn: u32,
        builtin: Builtin<'_>,
        by: Option<String>,
        deps: &HubDeps,
    ) -> Result<(), LogError> {
        let mut contexts = Vec::new();
        let answer = match builtin {
            Builtin::Model("") => model::listing(deps, self).await,
            Builtin::Model(requested) => model::change(deps, self, requested, by, Some(turn)).await,
            Builtin::Context => super::context_window(deps, self, &self.id)
                .await
                .map(|c| context_text(&c)),
            Builtin::Help => Ok(self.help(deps).await),
            Builtin::Clear => self.clear(turn, deps).await.map(|(answer, cleared)| {
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
                self.log.append(Some(turn), said).await?;
                (TurnStatus::Completed, None, None)
            }
            Err(e) => {
                let kind = matches!(e, HubError::ProviderUnavailable(_))
                    .then_some(TurnErrorKind::Provider);
                (TurnStatus::Failed, Some(e.to_string()), kind)
            }
        };
        // What a built-in said is not the conversation: the model never sees it.
        self.finish_turn(turn, status, error, kind, contexts).await
    }

    /// `/help`: the built-ins, then the folder's and the user's commands and skills.
    async fn help(&self, deps: &HubDeps) -> String {
        let home = self.env_and_mode().0.get("HOME").map(PathBuf::from);
        let ext = deps.extensions.get(&self.cwd(), home.as_deref()).await;
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
        &self,
        turn: u32,
        deps: &HubDeps,
    ) -> Result<(String, Vec<LayerContext>), HubError> {
        let mut layers: BTreeSet<String> = deps
            .store
            .context_layers(&self.id)
            .await?
            .into_iter()
            .collect();
        layers.insert(MAIN_LAYER.to_string());
        let had = history(&deps.store, &self.id, MAIN_LAYER)
            .await
            .map_or(0, |m| m.len());
        // The session's agent CLI forgets its conversation too: its process goes, and the
        // next turn starts a new conversation with it.
        {
            let mut backend = self.backend.lock().await;
            if let Some(cli) = backend.as_mut() {
                cli.shut().await;
            }
            *backend = None;
        }
        {
            let mut state = self.state();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_is_the_first_word_alone() {
        assert_eq!(Builtin::parse("/model"), Some(Builtin::Model("")));
        assert_eq!(
            Builtin::parse("  /model  openai/gpt-5 "),
            Some(Builtin::Model("openai/gpt-5"))
        );
        assert_eq!(Builtin::parse("/context"), Some(Builtin::Context));
        assert_eq!(Builtin::parse("/clear\n"), Some(Builtin::Clear));
        assert_eq!(
            Builtin::parse("/compact keep the names"),
            Some(Builtin::Compact("keep the names"))
        );
        assert_eq!(Builtin::parse("/compact"), Some(Builtin::Compact("")));
        for not in [
            "/compacted",
            "/models",
            "/review x",
            "what does /help do",
            "/etc/hosts",
        ] {
            assert_eq!(Builtin::parse(not), None, "{not}");
        }
    }
}
