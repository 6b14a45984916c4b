//! A turn as a value. The [`actor`] takes a session's inputs one at a time, in the order they
//! were queued, and runs each as a [`Turn`]. [`prepare`] builds what it runs with and says
//! which kind of turn it is: a built-in the daemon answers, `/compact` ([`compact`]), a turn
//! of another agent CLI ([`backend`]), a turn of stepper's own agents ([`agents`], with
//! [`host`] as the engine's port), or a failure before any model is asked. Every kind ends
//! through [`Turn::finish`]: its context and its `TurnFinished` are committed together.
//!
//! A `LiveSession` keeps the queue, the clients and the state between turns; a `Turn`
//! holds what one running turn needs.
//!
//! *Fewer commits on a turn's path.* Each commit is an fsync (`synchronous=FULL`), so the path of a
//! short turn is counted in commits: a session and its first input commit together (`session/create
//! {input}`), and a turn's stored context commits with its `TurnFinished` (one transaction: a
//! client that sees `TurnFinished` finds the context there).

pub(super) mod actor;
mod agents;
mod backend;
mod builtin;
pub(super) mod compact;
mod host;
pub(super) mod overhead;
pub(super) mod plan;
mod prepare;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use stepper_engine::agent::SinkError;
use stepper_engine::gate::Policy;
use stepper_engine::interrupt::Interrupt;
use stepper_engine::orchestrator::LayerContext;
use stepper_engine::{ChatMessage, EventSink};
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnErrorKind, TurnStatus};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::HubDeps;
use super::approvals::SessionGate;
use super::context::{MAIN_LAYER, context_rows};
use super::hooks::HookRunner;
use super::log::{EventLog, LogError};
use super::session::{LiveSession, QueuedInput};

/// The longest answer asked of a model, whatever larger limit it has: long enough for any
/// edit, short enough not to eat rate limits that count the limit up front.
pub(super) const MAX_TOKENS: u32 = 32_000;

/// One running turn of a session.
pub(super) struct Turn {
    pub(super) session: Arc<LiveSession>,
    pub(super) deps: HubDeps,
    /// The turn's number in the session.
    pub(super) n: u32,
    pub(super) input: QueuedInput,
    /// The session's model as the turn started (a command may name another).
    pub(super) model: String,
    /// The session's environment as the turn started.
    pub(super) env: Env,
    pub(super) cancel: CancellationToken,
    pub(super) interrupt: Interrupt,
    /// Whether a tool asked the gate: every tool that acts asks first, so a turn whose
    /// tools never did changed nothing (its files are not walked again).
    pub(super) consulted: Arc<AtomicBool>,
}

/// How a turn ended.
pub(super) struct Outcome {
    pub(super) status: TurnStatus,
    pub(super) error: Option<String>,
    pub(super) error_kind: Option<TurnErrorKind>,
    /// What each layer's context gains (or is replaced with).
    pub(super) contexts: Vec<LayerContext>,
}

impl Turn {
    /// Append `event` to the session's log as this turn's.
    pub(super) async fn append(&self, event: AppEvent) -> Result<(), LogError> {
        self.session.log.append(Some(self.n), event).await
    }

    /// Say `message` in the session unless it was said already.
    pub(super) async fn notice_once(&self, message: String) {
        if self.session.state().memory_noticed.insert(message.clone()) {
            let _ = self.append(AppEvent::Notice { message }).await;
        }
    }

    /// Where one agent's events go.
    pub(super) fn sink(&self, agent: Option<String>) -> AgentSink<'_> {
        AgentSink {
            log: &self.session.log,
            turn: self.n,
            agent,
        }
    }

    /// The gate of the turn's main agent: `policy` decides, the session's approvals ask,
    /// and no tool runs before `baseline` says the files were taken.
    pub(super) fn gate(
        &self,
        policy: Arc<std::sync::Mutex<Policy>>,
        hooks: Option<Arc<HookRunner>>,
        baseline: watch::Receiver<bool>,
    ) -> SessionGate {
        SessionGate {
            consulted: Arc::clone(&self.consulted),
            policy,
            approvals: Arc::clone(&self.session.approvals),
            log: self.session.log.clone(),
            turn: self.n,
            cancel: self.cancel.clone(),
            baseline,
            hooks,
            agent: None,
            always: Arc::clone(&self.session.always),
            folder: None,
            read_only: None,
        }
    }

    /// The context and the end of the turn in one commit: a client that sees
    /// TurnFinished can count on the next turn seeing this one whole.
    pub(super) async fn finish(&self, outcome: Outcome) -> Result<(), LogError> {
        let Outcome {
            status,
            error,
            error_kind,
            contexts,
        } = outcome;
        let session = &self.session;
        // A turn the store's trouble ended (see `LiveSession::start`) failed, and says why.
        let (status, error, error_kind) = match session.log.trouble() {
            Some(why) if status == TurnStatus::Interrupted => (
                TurnStatus::Failed,
                Some(why.to_string()),
                Some(TurnErrorKind::Store),
            ),
            _ => (status, error, error_kind),
        };
        let rows = contexts
            .iter()
            .map(|c| context_rows(self.n, &c.key, &c.messages, c.replace))
            .collect();
        // An interrupted turn says so only when it was not the user's doing.
        let error = match (status, error) {
            (TurnStatus::Interrupted, None) => self.interrupt.why().turn_error().map(String::from),
            (_, error) => error,
        };
        session
            .log
            .append_with_context(
                Some(self.n),
                AppEvent::TurnFinished {
                    status,
                    error,
                    error_kind,
                },
                rows,
            )
            .await?;
        // The turn is over once its end is queued: a client that sees `TurnFinished` may
        // rewind at once (a rewind flushes the log first, so it comes after this commit).
        {
            let mut state = session.state();
            state.running = None;
            state.active_policy = None;
        }
        match session.log.flush().await {
            // The end waits in the log's backlog, stored once the store writes again.
            Ok(_) | Err(LogError::Unavailable(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// End a turn that cannot reach the model: its notices, then `TurnFinished` failed with
    /// `error`; the user's words stay in the conversation.
    pub(super) async fn fail_before_model(
        &self,
        notices: Vec<String>,
        error: String,
        error_kind: Option<TurnErrorKind>,
    ) -> Result<(), LogError> {
        for message in notices {
            self.notice_once(message).await;
        }
        self.finish(Outcome {
            contexts: vec![self.said_only()],
            ..Outcome::failed(error, error_kind)
        })
        .await
    }

    /// The context a turn that never reached the model adds: the user's words.
    pub(super) fn said_only(&self) -> LayerContext {
        said_only(&self.input.text)
    }
}

impl Outcome {
    pub(super) fn failed(error: String, error_kind: Option<TurnErrorKind>) -> Outcome {
        Outcome {
            status: TurnStatus::Failed,
            error: Some(error),
            error_kind,
            contexts: Vec::new(),
        }
    }
}

/// Where one agent's events go: the session's log, tagged with the agent.
pub(super) struct AgentSink<'a> {
    pub(super) log: &'a EventLog,
    pub(super) turn: u32,
    pub(super) agent: Option<String>,
}

impl EventSink for AgentSink<'_> {
    async fn emit(&self, event: AppEvent) -> Result<(), SinkError> {
        self.log
            .append_in(Some(self.turn), self.agent.clone(), event)
            .await
            .map_err(|e| SinkError(e.to_string()))
    }
}

/// The context a turn that never reached the model adds: the user's words.
pub(super) fn said_only(text: &str) -> LayerContext {
    LayerContext {
        key: MAIN_LAYER.to_string(),
        messages: vec![ChatMessage::user(text.to_string())],
        replace: false,
    }
}
