//! The turn loop both CLI back-ends run: read the CLI's lines, ask the gate what the CLI
//! asks and send each decision back the moment it is made, and on the turn's interruption
//! ask the CLI to stop, then stop its process group when it has not ended the turn within
//! the grace period. What differs, the wire format, is a back-end's [`Wire`].

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use stepper_engine::tool::{CommandEnv, Decision, Gate, GateRequest};
use stepper_engine::{EventSink, Media};
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnStatus};
use tokio_util::sync::CancellationToken;

use super::host::{Exit, Host};
use super::{BackendSpec, Cli};
use crate::ndjson::Line;

/// One turn's request.
#[derive(Clone)]
pub struct TurnSpec<'a> {
    pub prompt: &'a str,
    /// The images and PDFs attached to the prompt, with their bytes: they go with the
    /// prompt, before its text (never with text steered in later).
    pub attachments: &'a [Media],
    pub spec: &'a BackendSpec,
    /// The session's environment, before [`BackendSpec::environment`].
    pub env: &'a Env,
    pub cwd: &'a Path,
    /// Claude Code's plan mode (stepper's `plan`); every other mode runs the CLI in its
    /// `default` mode, so every action it would take without asking comes to the gate.
    pub plan: bool,
    pub gate: &'a dyn Gate,
    /// What a shell command's check runs against (the session's tool environment).
    pub command_env: CommandEnv,
    pub cancel: &'a CancellationToken,
    /// The daemon's executable, for the parent-death guard.
    pub guard: Option<&'a Path>,
    pub secrets: &'a [String],
    /// How long the CLI gets to end an interrupted turn before its group is stopped.
    pub grace: Duration,
    /// Takes the text steered into the running turn (`session/steer`) since last asked.
    pub steering: Option<&'a (dyn Fn() -> Vec<String> + Send + Sync)>,
}

/// How the turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: TurnStatus,
    pub error: Option<String>,
    /// The answer's text, for the session's context.
    pub text: String,
}

impl Outcome {
    pub(super) fn failed(error: impl Into<String>) -> Outcome {
        Outcome {
            status: TurnStatus::Failed,
            error: Some(error.into()),
            text: String::new(),
        }
    }
}

/// A turn whose attachments' bytes were not loaded is refused before the CLI hears of it:
/// sent, the CLI would be shown nothing.
pub(super) fn unloaded(t: &TurnSpec<'_>) -> Option<Outcome> {
    t.attachments.iter().find(|m| m.needs_bytes()).map(|m| {
        Outcome::failed(format!(
            "an attachment's bytes were not loaded ({}): this is a bug in stepper, please \
             report it; nothing was sent",
            m.about.label()
        ))
    })
}

/// Why a turn failed when the CLI's process ended during it.
pub(super) fn died(cli: Cli, exit: Option<Exit>, tail: &[String]) -> String {
    let code = match exit {
        Some(Exit::Code(Some(c))) => format!("exit code {c}"),
        Some(Exit::Code(None)) => "killed by a signal".into(),
        _ => "its output closed".into(),
    };
    let said = if tail.is_empty() {
        String::new()
    } else {
        format!("; it said: {}", tail.join(" | "))
    };
    format!(
        "{} ended during the turn ({code}){said}. The next message starts it again, resuming \
         the conversation",
        cli.title()
    )
}

/// A CLI's wire format, as the turn loop needs it.
pub(super) trait Wire {
    /// The CLI's name in notices and the log.
    const NAME: &'static str;
    /// What ties a gate's decision back to the request the CLI made.
    type Asked: Send + 'static;

    /// The request that asks the CLI to end the turn, once it can be said (`None`: not yet;
    /// asked again each time round until it is).
    fn interrupt(&mut self) -> Option<Value>;

    /// What the CLI is answered for a request once the gate decided.
    fn answer(&mut self, asked: Self::Asked, decision: &Decision) -> Value;

    /// One JSON line of the CLI's; `interrupted`: the turn's interruption was asked for.
    /// An error is the sink's.
    async fn line<S: EventSink>(
        &mut self,
        value: Value,
        interrupted: bool,
        sink: &S,
    ) -> Result<Step<Self::Asked>, String>;
}

/// What a line comes to.
pub(super) enum Step<A> {
    /// Read on.
    Read,
    /// Ask the gate each of these in turn (the first that is not allowed decides); the
    /// decision goes back for `A`.
    Ask(A, Vec<GateRequest>),
    /// Write this to the CLI now (a refusal of what stepper does not serve).
    Send(Value),
    /// The turn's end, as the CLI told it.
    End(Outcome),
}

/// How the loop ended.
pub(super) enum Ended {
    Done(Outcome),
    /// stdout closed before the turn's end; how the process ended, if it did in time.
    Died(Option<Exit>),
    /// An interrupt the CLI did not honour in time: its group was stopped.
    Killed,
    Sink(String),
}

type Pending<'a, A> = FuturesUnordered<BoxFuture<'a, (A, Decision)>>;

/// Run the turn's loop until the CLI ends the turn, dies, or is stopped.
pub(super) async fn run<W: Wire, S: EventSink>(
    wire: &mut W,
    host: &mut Host,
    t: &TurnSpec<'_>,
    sink: &S,
) -> Ended {
    let gate = t.gate;
    let mut pending: Pending<'_, W::Asked> = FuturesUnordered::new();
    let mut interrupted: Option<tokio::time::Instant> = None;
    let mut interrupt_sent = false;
    loop {
        let deadline = interrupted
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600));
        if interrupted.is_some()
            && !interrupt_sent
            && let Some(request) = wire.interrupt()
        {
            host.send(&request);
            interrupt_sent = true;
        }
        tokio::select! {
            biased;
            // A decision goes back at once, before anything else is read.
            Some((asked, decision)) = pending.next(), if !pending.is_empty() => {
                host.send(&wire.answer(asked, &decision));
            }
            () = t.cancel.cancelled(), if interrupted.is_none() => {
                interrupted = Some(tokio::time::Instant::now() + t.grace);
            }
            () = tokio::time::sleep_until(deadline), if interrupted.is_some() => {
                tracing::warn!(
                    "{} did not stop within the grace period; stopping its process group",
                    W::NAME
                );
                host.stop(Duration::ZERO).await;
                return Ended::Killed;
            }
            line = host.next_line() => {
                let Some(line) = line else {
                    let exit = host.exit(Duration::from_secs(2)).await;
                    return Ended::Died(exit);
                };
                let value = match line {
                    Line::Json(v) => v,
                    Line::Other(text) => {
                        let message = format!("{}: {text}", W::NAME);
                        if let Err(e) = sink.emit(AppEvent::Notice { message }).await {
                            return Ended::Sink(e.to_string());
                        }
                        continue;
                    }
                };
                match wire.line(value, interrupted.is_some(), sink).await {
                    Ok(Step::Read) => {}
                    Ok(Step::Ask(asked, requests)) => pending.push(Box::pin(async move {
                        for request in &requests {
                            match gate.check(request).await {
                                Decision::Allow => {}
                                other => return (asked, other),
                            }
                        }
                        (asked, Decision::Allow)
                    })),
                    Ok(Step::Send(value)) => {
                        host.send(&value);
                    }
                    Ok(Step::End(outcome)) => return Ended::Done(outcome),
                    Err(e) => return Ended::Sink(e),
                }
            }
        }
    }
}

impl Outcome {
    /// The turn was interrupted; `text` is what it answered until then.
    pub(super) fn interrupted(text: String) -> Outcome {
        Outcome {
            status: TurnStatus::Interrupted,
            error: None,
            text,
        }
    }

    /// The CLI's process ended during the turn (`tail`: the last it said): an interrupted
    /// turn if it was asked to stop, else a failure that says how it ended.
    pub(super) fn lost(
        cli: Cli,
        exit: Option<Exit>,
        tail: &[String],
        t: &TurnSpec<'_>,
        text: String,
    ) -> Outcome {
        if t.cancel.is_cancelled() {
            return Outcome::interrupted(text);
        }
        Outcome {
            status: TurnStatus::Failed,
            error: Some(died(cli, exit, tail)),
            text,
        }
    }
}
