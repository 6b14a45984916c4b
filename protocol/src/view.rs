//! A session's events folded into what a client shows: the turn (what it was asked, its
//! layers, the calls denied, how it ended), the answer's text as it streams or whole when it
//! did not, the tool calls and approvals still open, the inputs waiting, the usage.
//!
//! Every client feeds a [`SessionView`] each envelope in seq order and draws the [`Change`]
//! it returns: the TUI, `stepper ask` and the editors' ACP bridge do, and an outside client
//! can. What an event means across events is decided here once; how to show it is the
//! client's. Pure: no IO, no clock, the envelopes are its only input. It keeps no message
//! text, so a long session's transcript stays the client's to drop; of turns it keeps the
//! last one's outline alone.

use crate::event::{AppEvent, ApprovalDecision, EventEnvelope, TurnErrorKind, TurnStatus, Usage};
use crate::methods::{LayerResult, PermissionDenial};

/// A session's events, folded.
#[derive(Debug, Clone, Default)]
pub struct SessionView {
    last_seq: u64,
    queued: Vec<QueuedInput>,
    turn: Option<TurnView>,
    calls: Vec<ToolCall>,
    approvals: Vec<Approval>,
    /// Whether the answer's current message streamed: its `MessageCompleted` then repeats
    /// text already shown.
    streamed: bool,
    /// The turn's input tokens as of its last message: usage is summed over the turn's model
    /// calls, so the context of the call running now is what came since.
    step_base: u64,
    context_tokens: Option<u64>,
    usage_done: Usage,
    cost_done: Option<f64>,
    usage_turn: Usage,
    cost_turn: Option<f64>,
}

/// An input accepted and waiting for its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedInput {
    pub input_id: String,
    pub text: String,
    /// The client that submitted it.
    pub client: Option<String>,
    /// Its images and documents.
    pub attachments: Vec<crate::Attachment>,
}

/// A turn: which input started it and, as it runs, its outline (usage, layers, denials, end).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnView {
    /// The envelopes' `turn`.
    pub number: Option<u32>,
    pub input_id: String,
    /// The client that submitted the input, when its `InputQueued` was seen.
    pub client: Option<String>,
    /// When it began, ms since the Unix epoch.
    pub started_at: i64,
    /// The answering agent's usage so far, and its cost when the model's prices are known.
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// The layers of a layered turn, as far as they got.
    pub layers: Vec<LayerResult>,
    /// The tool calls a person (or a client) refused.
    pub denials: Vec<PermissionDenial>,
    /// How it ended, once it has.
    pub end: Option<TurnEnd>,
}

/// How a turn ended (`TurnFinished`).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    pub status: TurnStatus,
    pub error: Option<String>,
    pub error_kind: Option<TurnErrorKind>,
}

/// A tool call started and not finished.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub call_id: String,
    pub tool: String,
    /// The agent inside the turn that made it; `None` for the answering agent.
    pub agent: Option<String>,
    /// Whether any of its output came (`ToolOutputDelta`).
    pub output_began: bool,
}

/// An approval asked and not answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub request_id: String,
    pub tool: String,
    pub summary: String,
    pub command: Option<String>,
}

/// What an event changed, for a client to draw. The events the view gives a meaning beyond
/// themselves come as their own variants; every other one comes as [`Change::Event`]. Text,
/// messages and usage are the answering agent's alone: those of an agent inside the turn (an
/// envelope with `agent`) come as `Event`.
#[derive(Debug, PartialEq)]
pub enum Change<'e> {
    /// A turn began: [`SessionView::turn`] is it. `client` submitted its input.
    TurnStarted {
        input_id: &'e str,
        text: &'e str,
        model: &'e str,
        client: Option<String>,
        /// The input's images and documents.
        attachments: &'e [crate::Attachment],
    },
    /// A piece of the answer, as it streams.
    TextDelta(&'e str),
    /// The answer's current message ended. `whole` is its text when none of it streamed (a
    /// replayed turn, a parallel layer's joined results); `cut`: the model stopped at its
    /// output limit.
    MessageCompleted { whole: Option<&'e str>, cut: bool },
    /// Output of a running tool; `first`: the call's first.
    ToolOutput {
        call_id: &'e str,
        text: &'e str,
        first: bool,
    },
    /// An approval was answered; `asked` is the question, when it was seen asked.
    ApprovalResolved {
        request_id: &'e str,
        decision: ApprovalDecision,
        by: Option<&'e str>,
        asked: Option<Approval>,
    },
    /// The answering agent's usage changed: see [`SessionView::usage`],
    /// [`SessionView::cost_usd`] and [`SessionView::context_tokens`].
    UsageUpdated,
    /// The turn ended. `cut`: its calls still open, which never finish now.
    TurnFinished {
        status: TurnStatus,
        error: Option<&'e str>,
        error_kind: Option<TurnErrorKind>,
        cut: Vec<ToolCall>,
    },
    /// Any other event.
    Event(&'e AppEvent),
}

impl SessionView {
    /// Folds in the next envelope. `None` when it was applied already (its seq is not past
    /// the last one's: a replay that overlaps what was seen live).
    pub fn apply<'e>(&mut self, envelope: &'e EventEnvelope) -> Option<Change<'e>> {
        if envelope.seq <= self.last_seq {
            return None;
        }
        self.last_seq = envelope.seq;
        let answer = envelope.agent.is_none();
        let event = &envelope.event;
        Some(match event {
            AppEvent::InputQueued {
                input_id,
                text,
                client,
                attachments,
            } => {
                self.queued.push(QueuedInput {
                    input_id: input_id.clone(),
                    text: text.clone(),
                    client: client.clone(),
                    attachments: attachments.clone(),
                });
                Change::Event(event)
            }
            AppEvent::TurnStarted {
                input_id,
                text,
                model,
                attachments,
            } => self.start_turn(envelope, input_id, text, model, attachments),
            AppEvent::TextDelta { text } if answer => {
                self.streamed = true;
                Change::TextDelta(text)
            }
            AppEvent::MessageCompleted { text, stop_reason } if answer => {
                let whole = (!self.streamed && !text.is_empty()).then_some(text.as_str());
                self.streamed = false;
                self.step_base = input_side(&self.usage_turn);
                let cut = matches!(stop_reason.as_deref(), Some("max_tokens" | "length"));
                Change::MessageCompleted { whole, cut }
            }
            AppEvent::UsageUpdated { usage, cost_usd } if answer => {
                self.usage_turn = *usage;
                self.cost_turn = *cost_usd;
                self.context_tokens = Some(input_side(usage).saturating_sub(self.step_base));
                if let Some(turn) = self.turn_of(envelope) {
                    turn.usage = *usage;
                    turn.cost_usd = *cost_usd;
                }
                Change::UsageUpdated
            }
            AppEvent::CompactionFinished { after_tokens, .. } if answer => {
                self.context_tokens = Some(*after_tokens);
                Change::Event(event)
            }
            AppEvent::ToolCallStarted { call_id, tool, .. } => {
                self.calls.push(ToolCall {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    agent: envelope.agent.clone(),
                    output_began: false,
                });
                Change::Event(event)
            }
            AppEvent::ToolOutputDelta { call_id, text } => {
                let first = self
                    .calls
                    .iter_mut()
                    .find(|c| c.call_id == *call_id && c.agent == envelope.agent)
                    .is_some_and(|c| !std::mem::replace(&mut c.output_began, true));
                Change::ToolOutput {
                    call_id,
                    text,
                    first,
                }
            }
            AppEvent::ToolCallFinished { call_id, .. } => {
                self.calls
                    .retain(|c| !(c.call_id == *call_id && c.agent == envelope.agent));
                Change::Event(event)
            }
            AppEvent::ApprovalRequested {
                request_id,
                tool,
                summary,
                command,
                ..
            } => {
                self.approvals.push(Approval {
                    request_id: request_id.clone(),
                    tool: tool.clone(),
                    summary: summary.clone(),
                    command: command.clone(),
                });
                Change::Event(event)
            }
            AppEvent::ApprovalResolved {
                request_id,
                decision,
                by,
            } => self.resolve(envelope, request_id, *decision, by.as_deref()),
            AppEvent::LayerStarted {
                index, name, model, ..
            } => {
                if let Some(turn) = self.turn_of(envelope) {
                    turn.layers.push(LayerResult {
                        index: *index,
                        name: name.clone(),
                        model: model.clone(),
                        status: TurnStatus::Interrupted,
                        text: String::new(),
                        error: None,
                        workers: 0,
                    });
                }
                Change::Event(event)
            }
            AppEvent::LayerFinished {
                index,
                status,
                text,
                error,
                workers,
                ..
            } => {
                if let Some(layer) = self
                    .turn_of(envelope)
                    .and_then(|t| t.layers.iter_mut().find(|l| l.index == *index))
                {
                    layer.status = *status;
                    layer.text.clone_from(text);
                    layer.error.clone_from(error);
                    layer.workers = *workers;
                }
                Change::Event(event)
            }
            AppEvent::TurnFinished {
                status,
                error,
                error_kind,
            } => self.finish_turn(envelope, *status, error.as_deref(), *error_kind),
            _ => Change::Event(event),
        })
    }

    fn start_turn<'e>(
        &mut self,
        envelope: &EventEnvelope,
        input_id: &'e str,
        text: &'e str,
        model: &'e str,
        attachments: &'e [crate::Attachment],
    ) -> Change<'e> {
        let client = self
            .queued
            .iter()
            .find(|q| q.input_id == input_id)
            .and_then(|q| q.client.clone());
        self.queued.retain(|q| q.input_id != input_id);
        self.streamed = false;
        self.step_base = 0;
        self.usage_turn = Usage::default();
        self.cost_turn = None;
        self.turn = Some(TurnView {
            number: envelope.turn,
            input_id: input_id.to_string(),
            client: client.clone(),
            started_at: envelope.at,
            usage: Usage::default(),
            cost_usd: None,
            layers: Vec::new(),
            denials: Vec::new(),
            end: None,
        });
        Change::TurnStarted {
            input_id,
            text,
            model,
            client,
            attachments,
        }
    }

    /// What the turn still asked can no longer be answered, its open calls never finish,
    /// and its usage joins the session's.
    fn finish_turn<'e>(
        &mut self,
        envelope: &EventEnvelope,
        status: TurnStatus,
        error: Option<&'e str>,
        error_kind: Option<TurnErrorKind>,
    ) -> Change<'e> {
        self.approvals.clear();
        self.usage_done.add(&self.usage_turn);
        self.usage_turn = Usage::default();
        if let Some(cost) = self.cost_turn.take() {
            self.cost_done = Some(self.cost_done.unwrap_or(0.0) + cost);
        }
        if let Some(turn) = self.turn_of(envelope) {
            turn.end = Some(TurnEnd {
                status,
                error: error.map(str::to_string),
                error_kind,
            });
        }
        Change::TurnFinished {
            status,
            error,
            error_kind,
            cut: std::mem::take(&mut self.calls),
        }
    }

    fn resolve<'e>(
        &mut self,
        envelope: &EventEnvelope,
        request_id: &'e str,
        decision: ApprovalDecision,
        by: Option<&'e str>,
    ) -> Change<'e> {
        let asked = self
            .approvals
            .iter()
            .position(|a| a.request_id == request_id)
            .map(|i| self.approvals.remove(i));
        if decision == ApprovalDecision::Deny
            && let Some(asked) = &asked
            && let Some(turn) = self.turn_of(envelope)
        {
            turn.denials.push(PermissionDenial {
                request_id: asked.request_id.clone(),
                tool: asked.tool.clone(),
                summary: asked.summary.clone(),
                command: asked.command.clone(),
                by: by.map(str::to_string),
            });
        }
        Change::ApprovalResolved {
            request_id,
            decision,
            by,
            asked,
        }
    }

    /// The turn `envelope` belongs to, when it is the one this view saw start.
    fn turn_of(&mut self, envelope: &EventEnvelope) -> Option<&mut TurnView> {
        self.turn
            .as_mut()
            .filter(|t| t.number.is_some() && t.number == envelope.turn)
    }

    /// The seq of the last envelope applied (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The turn running, or the last one that ran (its `end` says how it ended); `None`
    /// before a `TurnStarted` was seen.
    pub fn turn(&self) -> Option<&TurnView> {
        self.turn.as_ref()
    }

    /// When the running turn began (ms since the Unix epoch); `None` when no turn this view
    /// saw start is running.
    pub fn running_since(&self) -> Option<i64> {
        self.turn
            .as_ref()
            .filter(|t| t.end.is_none())
            .map(|t| t.started_at)
    }

    /// Inputs accepted and not started yet, in order.
    pub fn queued(&self) -> &[QueuedInput] {
        &self.queued
    }

    /// Tool calls started and not finished, every agent's, in the order they started.
    pub fn open_calls(&self) -> &[ToolCall] {
        &self.calls
    }

    /// Approvals asked and not answered, in order. A turn's end drops its own.
    pub fn approvals(&self) -> &[Approval] {
        &self.approvals
    }

    /// Tokens the session used, its running turn's included.
    pub fn usage(&self) -> Usage {
        let mut total = self.usage_done;
        total.add(&self.usage_turn);
        total
    }

    /// What the session cost, its running turn included; `None` while no price is known.
    pub fn cost_usd(&self) -> Option<f64> {
        match (self.cost_done, self.cost_turn) {
            (None, None) => None,
            (done, turn) => Some(done.unwrap_or(0.0) + turn.unwrap_or(0.0)),
        }
    }

    /// Whether the running turn's last usage had a price.
    pub fn turn_priced(&self) -> bool {
        self.cost_turn.is_some()
    }

    /// The context's size as of the last model call (or the last compaction), in tokens.
    pub fn context_tokens(&self) -> Option<u64> {
        self.context_tokens
    }
}

/// The tokens sent as input of a model call: the context size.
fn input_side(u: &Usage) -> u64 {
    u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
}

#[cfg(test)]
mod tests;
