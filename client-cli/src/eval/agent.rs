//! The agent's side of a task: a session in the task's copy, its prompt submitted, its
//! events followed to the end of the turn (or the time limit, then an interrupt), and what
//! the turn did counted from those events — the same protocol `stepper ask` speaks, so a
//! native provider and a CLI back-end (`claude-code/…`, `codex-cli/…`) are measured alike.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{
    SessionApprove, SessionApproveParams, SessionElicit, SessionElicitParams, SessionInterrupt,
    SessionParams,
};
use stepper_protocol::{
    AppEvent, ApprovalDecision, ElicitAction, EventEnvelope, PermissionMode, TurnStatus, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::session::{self, NewSession};

/// How long an interrupted turn may take to end before the task is given up on.
const INTERRUPT_GRACE: Duration = Duration::from_secs(60);

/// What the agent did in a task's turn.
#[derive(Debug, Clone)]
pub struct AgentRun {
    pub session_id: String,
    /// The model the session ran on.
    pub model: String,
    pub status: TurnStatus,
    pub error: Option<String>,
    /// The turn reached the time limit and was interrupted.
    pub timed_out: bool,
    pub tally: Tally,
    pub elapsed: Duration,
}

/// Why the agent's side of a task could not run: the session was never made, or the
/// daemon was lost. The session's id, when there was one, so it can be looked at.
#[derive(Debug)]
pub struct AgentFailure {
    pub session_id: Option<String>,
    pub error: anyhow::Error,
}

/// Run `prompt` in a new session in `cwd` (mode `auto`: nothing waits for a person) and
/// follow it to the end of its turn, interrupting it after `limit`.
pub async fn run(
    client: &DaemonClient,
    cwd: &Path,
    model: Option<String>,
    prompt: &str,
    limit: Duration,
    stop: &CancellationToken,
) -> Result<AgentRun, AgentFailure> {
    let started = Instant::now();
    let new = NewSession {
        model,
        mode: Some(PermissionMode::Auto),
        input: Some(prompt.to_string()),
        ..NewSession::default()
    };
    let created = session::create(client, cwd, new)
        .await
        .context("creating the task's session")
        .map_err(|error| AgentFailure {
            session_id: None,
            error,
        })?;
    let session_id = created.session.id.clone();
    let failed = |error: anyhow::Error| AgentFailure {
        session_id: Some(created.session.id.clone()),
        error,
    };
    let Some(submitted) = created.queued else {
        return Err(failed(anyhow::anyhow!(
            "the daemon did not queue the prompt — is it older than this client?"
        )));
    };
    let mut events = client
        .subscribe_events(&session_id, 0)
        .await
        .context("following the task's session")
        .map_err(failed)?;

    let deadline = tokio::time::Instant::now() + limit;
    let mut tally = Tally::default();
    let mut our_turn = None;
    let mut timed_out = false;
    let mut given_up_at = None;
    let (status, error) = loop {
        let next = tokio::select! {
            next = events.next() => next,
            () = stop.cancelled() => {
                // Ctrl-C: the turn is stopped in the daemon too, not left running.
                let _ = client
                    .call::<SessionInterrupt>(SessionParams { session_id: session_id.clone() })
                    .await;
                return Err(failed(anyhow::anyhow!("stopped by Ctrl-C")));
            }
            () = tokio::time::sleep_until(given_up_at.unwrap_or(deadline)) => {
                if timed_out {
                    return Err(failed(anyhow::anyhow!(
                        "the turn did not end within {}s of being interrupted",
                        INTERRUPT_GRACE.as_secs()
                    )));
                }
                timed_out = true;
                given_up_at = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
                client
                    .call::<SessionInterrupt>(SessionParams { session_id: session_id.clone() })
                    .await
                    .context("interrupting the turn at its time limit")
                    .map_err(failed)?;
                continue;
            }
        };
        let envelope = match next {
            Some(Ok(envelope)) => envelope,
            Some(Err(e)) => return Err(failed(anyhow::Error::from(e).context("lost the daemon"))),
            None => return Err(failed(anyhow::anyhow!("the daemon ended the event stream"))),
        };
        if let AppEvent::TurnStarted { input_id, .. } = &envelope.event
            && *input_id == submitted.input_id
        {
            our_turn = envelope.turn;
        }
        if our_turn.is_none() || envelope.turn != our_turn {
            continue;
        }
        tally.push(&envelope);
        match envelope.event {
            // Mode `auto` asks nothing unless the user's rules say "ask": nobody is there to
            // answer, so the harness says no and the agent carries on without it.
            AppEvent::ApprovalRequested { request_id, .. } => {
                let answer = SessionApproveParams {
                    session_id: session_id.clone(),
                    request_id,
                    decision: ApprovalDecision::Deny,
                };
                // Another client may have answered first.
                let _ = client.call::<SessionApprove>(answer).await;
            }
            AppEvent::ElicitationRequested { request_id, .. } => {
                let answer = SessionElicitParams {
                    session_id: session_id.clone(),
                    request_id,
                    action: ElicitAction::Cancel,
                    content: None,
                };
                let _ = client.call::<SessionElicit>(answer).await;
            }
            AppEvent::TurnFinished { status, error, .. } => break (status, error),
            _ => {}
        }
    };
    let error = match (timed_out, error) {
        (true, None) => Some(format!("stopped at the time limit of {}s", limit.as_secs())),
        (_, error) => error,
    };
    Ok(AgentRun {
        session_id,
        model: created.session.model,
        status,
        error,
        timed_out,
        tally,
        elapsed: started.elapsed(),
    })
}

/// The counts of a turn, folded from its events.
///
/// No event says "a model call began", so calls are counted as the stretches the turn
/// spends in the model: text, reasoning, usage and message events, up to the tool calls
/// that follow them. A call answered with tool calls alone and no usage report shows no
/// event of its own: it is counted only when it starts the turn. Every native provider
/// reports usage for each call, so their counts are exact; a CLI back-end's are what it
/// streams of its own loop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub model_calls: u32,
    pub tool_calls: u32,
    /// The turn's usage as last reported (it is cumulative); none when nothing was.
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    in_model: bool,
}

impl Tally {
    /// Count one event of the turn.
    pub fn push(&mut self, envelope: &EventEnvelope) {
        // A subagent's events (a layer's worker, a dispatched agent) are its own; its usage
        // reaches the turn's `UsageUpdated`.
        if envelope.agent.is_some() {
            return;
        }
        match &envelope.event {
            AppEvent::TextDelta { .. }
            | AppEvent::ReasoningDelta { .. }
            | AppEvent::MessageCompleted { .. } => self.model_event(),
            AppEvent::UsageUpdated { usage, cost_usd } => {
                self.model_event();
                self.usage = Some(*usage);
                if cost_usd.is_some() {
                    self.cost_usd = *cost_usd;
                }
            }
            AppEvent::ToolCallStarted { .. } => {
                if self.model_calls == 0 {
                    self.model_calls = 1;
                }
                self.in_model = false;
                self.tool_calls += 1;
            }
            _ => {}
        }
    }

    fn model_event(&mut self) {
        if !self.in_model {
            self.in_model = true;
            self.model_calls += 1;
        }
    }
}

/// Whether a run measured nothing: the turn failed before the model answered at all (no
/// key, an unknown model, a provider down). The harness reports it as not run.
pub fn never_answered(run: &AgentRun) -> Option<String> {
    (run.status == TurnStatus::Failed && run.tally.model_calls == 0).then(|| {
        format!(
            "the agent never answered: {}",
            run.error.as_deref().unwrap_or("the turn failed")
        )
    })
}

/// The model a suite ran on, as one name: the one asked for, else the sessions' when
/// they agree.
pub fn model_of(asked: Option<&str>, runs: &[&str]) -> Option<String> {
    if let Some(asked) = asked {
        return Some(asked.to_string());
    }
    let first = runs.first().copied();
    first
        .filter(|m| runs.iter().all(|r| r == m))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(event: AppEvent, agent: Option<&str>) -> EventEnvelope {
        EventEnvelope {
            session_id: "s".into(),
            seq: 1,
            at: 0,
            turn: Some(1),
            agent: agent.map(str::to_string),
            event,
        }
    }

    fn usage(input: u64) -> AppEvent {
        AppEvent::UsageUpdated {
            usage: Usage {
                input_tokens: input,
                output_tokens: 2,
                cache_read_tokens: 1,
                cache_write_tokens: 0,
            },
            cost_usd: Some(input as f64 / 1000.0),
        }
    }

    fn tool() -> AppEvent {
        AppEvent::ToolCallStarted {
            call_id: "c".into(),
            tool: "write".into(),
            input: serde_json::json!({}),
        }
    }

    fn tool_done() -> AppEvent {
        AppEvent::ToolCallFinished {
            call_id: "c".into(),
            status: stepper_protocol::ToolCallStatus::Ok,
            output: String::new(),
            exit_code: None,
            duration_ms: 1,
            diff: None,
        }
    }

    fn text() -> AppEvent {
        AppEvent::TextDelta { text: "x".into() }
    }

    fn done() -> AppEvent {
        AppEvent::MessageCompleted {
            text: "x".into(),
            stop_reason: Some("end_turn".into()),
        }
    }

    fn tally(events: Vec<EventEnvelope>) -> Tally {
        let mut t = Tally::default();
        for e in &events {
            t.push(e);
        }
        t
    }

    #[test]
    fn model_calls_are_the_stretches_in_the_model_between_tool_calls() {
        // Thinks, calls two tools; calls one more; answers.
        let t = tally(vec![
            at(text(), None),
            at(usage(10), None),
            at(usage(20), None),
            at(tool(), None),
            at(tool_done(), None),
            at(tool(), None),
            at(tool_done(), None),
            at(usage(30), None),
            at(tool(), None),
            at(tool_done(), None),
            at(text(), None),
            at(usage(40), None),
            at(done(), None),
        ]);
        assert_eq!((t.model_calls, t.tool_calls), (3, 3));
        assert_eq!(t.usage.unwrap().input_tokens, 40, "usage is cumulative");
        assert_eq!(t.cost_usd, Some(0.04));
    }

    #[test]
    fn a_turn_of_tool_calls_without_usage_counts_one_call_and_a_subagents_are_its_own() {
        let t = tally(vec![
            at(tool(), None),
            at(tool_done(), None),
            at(text(), Some("worker-1")),
            at(usage(99), Some("worker-1")),
            at(tool(), Some("worker-1")),
        ]);
        assert_eq!((t.model_calls, t.tool_calls), (1, 1));
        assert_eq!(t.usage, None, "no usage reported: none, not zero");
        assert_eq!(t.cost_usd, None);
        let answered = tally(vec![at(text(), None), at(done(), None)]);
        assert_eq!((answered.model_calls, answered.tool_calls), (1, 0));
    }

    #[test]
    fn the_suites_model_is_the_one_asked_for_or_the_sessions_common_one() {
        assert_eq!(model_of(Some("a/b"), &["c/d"]).as_deref(), Some("a/b"));
        assert_eq!(model_of(None, &["c/d", "c/d"]).as_deref(), Some("c/d"));
        assert_eq!(model_of(None, &["c/d", "e/f"]), None);
        assert_eq!(model_of(None, &[]), None);
    }
}
