//! The context of a turn that died with the daemon, rebuilt from its events, so that
//! `/continue` (or the next input) lets the model pick up what it was doing instead of
//! forgetting the interrupted turn. A finished turn stores its exact context; a crashed one
//! left only its events, which hold what the model said, which tools it called with what,
//! and what they returned. Thinking signatures are not in events and are left out.
//!
//! *A turn that died with the daemon keeps what it did*: its context is rebuilt from its events
//! (the input, the text streamed, the tool calls with their results, calls that never finished
//! marked as such, steered text) and stored as that turn's, so the next input — or `/continue` —
//! lets the model pick up the work. A finished turn's context is stored exactly and never rebuilt.
//!
//! It also lists what the turn left open (`left_open`: tool calls, approvals, elicitations,
//! subagents, layers), which the daemon ends before the turn.

use stepper_protocol::{
    AppEvent, ApprovalDecision, ElicitAction, EventEnvelope, ToolCallStatus, TurnStatus,
};

use crate::provider::{ChatMessage, ContentPart, Role};

/// What a tool call that never finished tells the model, and its `ToolCallFinished` the
/// user.
pub const UNFINISHED: &str =
    "the daemon stopped before this tool call finished; it may have partly run";
/// Why an agent, a layer, an approval or an elicitation that the daemon's death cut short
/// ended.
const AGENT_STOPPED: &str = "the daemon stopped while this ran";
/// The last word of a rebuilt turn, so roles alternate when the next input follows.
const STOPPED: &str = "(stepper stopped here: the daemon was stopped while this turn ran.)";

/// Of a turn's events (with the agent each came from), those that rebuild the answering
/// agent's context: its own, and the final texts of the layers that finished before it. A
/// worker's or a subagent's text is in its layer's end or in its tool call's result.
pub fn answering_events(
    events: impl IntoIterator<Item = (Option<String>, AppEvent)>,
) -> Vec<AppEvent> {
    let mut answered = String::new();
    events
        .into_iter()
        .filter(|(agent, _)| agent.is_none())
        .filter_map(|(_, event)| match event {
            AppEvent::LayerFinished {
                name,
                text,
                status: stepper_protocol::TurnStatus::Completed,
                ..
            } if !text.is_empty() && text != answered => Some(AppEvent::MessageCompleted {
                text: format!("(layer {name} finished:)\n\n{text}"),
                stop_reason: None,
            }),
            AppEvent::LayerFinished { .. } | AppEvent::SubagentFinished { .. } => None,
            AppEvent::MessageCompleted { text, stop_reason } => {
                answered.clone_from(&text);
                Some(AppEvent::MessageCompleted { text, stop_reason })
            }
            event => Some(event),
        })
        .collect()
}

/// The events that end what a turn that died with the daemon left open — approvals and
/// elicitations still asked, tool calls, subagents and layers still running — each with the
/// agent its opening event came from, latest opened first, so that each ends before what
/// started it (a subagent's tool call before the subagent, the subagent before the
/// `dispatch` call that started it). Tool calls end `cancelled`, saying the daemon stopped;
/// agents and layers end `interrupted`; approvals are denied and elicitations cancelled, as
/// an interrupt would have. `events` are the turn's, in order.
pub fn left_open(events: &[EventEnvelope]) -> Vec<(Option<String>, AppEvent)> {
    // What is open, in the order it opened.
    let mut open: Vec<&EventEnvelope> = Vec::new();
    for e in events {
        if opens(e).is_some() {
            open.push(e);
        } else if let Some(closed) = closes(e)
            && let Some(at) = open
                .iter()
                .rposition(|o| opens(o).as_ref() == Some(&closed))
        {
            open.remove(at);
        }
    }
    // The last moment the turn is known to have lived: its calls ran at least until then.
    let last = events.last().map_or(0, |e| e.at);
    open.into_iter()
        .rev()
        .filter_map(|opened| {
            let event = match &opened.event {
                AppEvent::ToolCallStarted { call_id, .. } => AppEvent::ToolCallFinished {
                    call_id: call_id.clone(),
                    status: ToolCallStatus::Cancelled,
                    output: UNFINISHED.into(),
                    exit_code: None,
                    duration_ms: u64::try_from(last.saturating_sub(opened.at)).unwrap_or(0),
                    diff: None,
                },
                AppEvent::ApprovalRequested { request_id, .. } => AppEvent::ApprovalResolved {
                    request_id: request_id.clone(),
                    decision: ApprovalDecision::Deny,
                    by: Some(AGENT_STOPPED.into()),
                },
                AppEvent::ElicitationRequested { request_id, .. } => {
                    AppEvent::ElicitationResolved {
                        request_id: request_id.clone(),
                        action: ElicitAction::Cancel,
                        by: Some(AGENT_STOPPED.into()),
                    }
                }
                AppEvent::SubagentStarted { agent_id, name, .. } => AppEvent::SubagentFinished {
                    agent_id: agent_id.clone(),
                    name: name.clone(),
                    status: TurnStatus::Interrupted,
                    text: String::new(),
                    error: Some(AGENT_STOPPED.into()),
                    usage: Default::default(),
                },
                AppEvent::LayerStarted { index, name, .. } => AppEvent::LayerFinished {
                    index: *index,
                    name: name.clone(),
                    status: TurnStatus::Interrupted,
                    text: String::new(),
                    error: Some(AGENT_STOPPED.into()),
                    workers: 0,
                },
                _ => return None,
            };
            Some((opened.agent.clone(), event))
        })
        .collect()
}

/// Something a turn opens with one event and ends with another: a tool call (its id is
/// unique to its agent), an approval, an elicitation, a subagent, a layer.
#[derive(Debug, PartialEq, Eq)]
enum Open<'a> {
    Call(&'a Option<String>, &'a str),
    Approval(&'a str),
    Elicitation(&'a str),
    Subagent(&'a str),
    Layer(u32),
}

/// What `e` opens, if anything.
fn opens(e: &EventEnvelope) -> Option<Open<'_>> {
    Some(match &e.event {
        AppEvent::ToolCallStarted { call_id, .. } => Open::Call(&e.agent, call_id),
        AppEvent::ApprovalRequested { request_id, .. } => Open::Approval(request_id),
        AppEvent::ElicitationRequested { request_id, .. } => Open::Elicitation(request_id),
        AppEvent::SubagentStarted { agent_id, .. } => Open::Subagent(agent_id),
        AppEvent::LayerStarted { index, .. } => Open::Layer(*index),
        _ => return None,
    })
}

/// What `e` ends, if anything.
fn closes(e: &EventEnvelope) -> Option<Open<'_>> {
    Some(match &e.event {
        AppEvent::ToolCallFinished { call_id, .. } => Open::Call(&e.agent, call_id),
        AppEvent::ApprovalResolved { request_id, .. } => Open::Approval(request_id),
        AppEvent::ElicitationResolved { request_id, .. } => Open::Elicitation(request_id),
        AppEvent::SubagentFinished { agent_id, .. } => Open::Subagent(agent_id),
        AppEvent::LayerFinished { index, .. } => Open::Layer(*index),
        _ => return None,
    })
}

/// The messages of an interrupted turn: the user's input, then what its events show, in
/// the shape the agent loop stores for a finished turn.
pub fn interrupted_turn(
    input: &str,
    attachments: &[stepper_protocol::Attachment],
    events: &[AppEvent],
) -> Vec<ChatMessage> {
    // The attachments are named; their bytes come from the store when the context is read.
    let mut said: Vec<ContentPart> = attachments
        .iter()
        .map(|a| ContentPart::Attachment {
            media: a.clone().into(),
        })
        .collect();
    said.push(ContentPart::Text {
        text: input.to_string(),
    });
    let mut turn = Rebuild {
        messages: vec![ChatMessage {
            role: Role::User,
            content: said,
        }],
        ..Rebuild::default()
    };
    for event in events {
        match event {
            AppEvent::TextDelta { text } => {
                turn.close_results();
                turn.text.push_str(text);
            }
            AppEvent::MessageCompleted { text, .. } => {
                turn.close_results();
                turn.text = text.clone();
                turn.flush_text();
            }
            AppEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            } => {
                turn.flush_text();
                turn.open.push(call_id.clone());
                turn.assistant.push(ContentPart::ToolCall {
                    id: call_id.clone(),
                    name: tool.clone(),
                    arguments: input.clone(),
                });
            }
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                ..
            } => {
                turn.open.retain(|c| c != call_id);
                turn.results.push(ContentPart::ToolResult {
                    call_id: call_id.clone(),
                    content: output.clone(),
                    is_error: *status != ToolCallStatus::Ok,
                    media: Vec::new(),
                });
            }
            // Each model call reports usage and may reason before its text: after tool
            // results, either means the next call began.
            AppEvent::UsageUpdated { .. } | AppEvent::ReasoningDelta { .. } => {
                turn.close_results();
            }
            AppEvent::Steered { text, .. } => turn.steer(text),
            _ => {}
        }
    }
    turn.finish()
}

#[derive(Default)]
struct Rebuild {
    messages: Vec<ChatMessage>,
    /// The assistant message being rebuilt.
    assistant: Vec<ContentPart>,
    /// Its text streamed so far.
    text: String,
    /// Tool calls started and not finished.
    open: Vec<String>,
    /// Results of the assistant message's tool calls.
    results: Vec<ContentPart>,
    steered: Vec<String>,
}

impl Rebuild {
    /// Steered text joins the next user message — or the input itself when the model had
    /// not answered yet, so two user messages never follow each other.
    fn steer(&mut self, text: &str) {
        let untouched = self.messages.len() == 1
            && self.assistant.is_empty()
            && self.text.is_empty()
            && self.results.is_empty()
            && self.open.is_empty();
        match self.messages.first_mut() {
            Some(input) if untouched => input.content.push(ContentPart::Text {
                text: text.to_string(),
            }),
            _ => self.steered.push(text.to_string()),
        }
    }

    fn flush_text(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.assistant.push(ContentPart::Text { text });
        }
    }

    /// A new model call begins after tool results: the previous exchange is complete.
    fn close_results(&mut self) {
        if self.results.is_empty() && self.open.is_empty() {
            return;
        }
        self.push_exchange();
    }

    fn push_exchange(&mut self) {
        self.flush_text();
        if !self.assistant.is_empty() {
            self.messages.push(ChatMessage {
                role: Role::Assistant,
                content: std::mem::take(&mut self.assistant),
            });
        }
        for call_id in std::mem::take(&mut self.open) {
            self.results.push(ContentPart::ToolResult {
                call_id,
                content: UNFINISHED.into(),
                is_error: true,
                media: Vec::new(),
            });
        }
        let mut user = std::mem::take(&mut self.results);
        user.extend(
            std::mem::take(&mut self.steered)
                .into_iter()
                .map(|text| ContentPart::Text { text }),
        );
        if !user.is_empty() {
            self.messages.push(ChatMessage {
                role: Role::User,
                content: user,
            });
        }
    }

    fn finish(mut self) -> Vec<ChatMessage> {
        self.push_exchange();
        if self.messages.last().is_some_and(|m| m.role == Role::User) {
            self.messages.push(ChatMessage::assistant(STOPPED));
        }
        self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roles(messages: &[ChatMessage]) -> Vec<String> {
        messages
            .iter()
            .map(|m| {
                let parts: Vec<&str> = m
                    .content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { .. } => "text",
                        ContentPart::ToolCall { .. } => "call",
                        ContentPart::ToolResult { .. } => "result",
                        _ => "other",
                    })
                    .collect();
                format!("{:?}:{}", m.role, parts.join("+"))
            })
            .collect()
    }

    #[test]
    fn a_turn_killed_after_a_dispatch_keeps_calls_and_results_paired() {
        let sub = Some("agent-1".to_string());
        let events = vec![
            (
                None,
                AppEvent::ToolCallStarted {
                    call_id: "d1".into(),
                    tool: "dispatch".into(),
                    input: json!({"tasks": [{"task": "look"}]}),
                },
            ),
            (
                None,
                AppEvent::SubagentStarted {
                    agent_id: "agent-1".into(),
                    name: "general".into(),
                    model: "m".into(),
                    task: "look".into(),
                    layer: None,
                    worktree: None,
                },
            ),
            (
                sub.clone(),
                AppEvent::MessageCompleted {
                    text: "SUB-TEXT".into(),
                    stop_reason: Some("end_turn".into()),
                },
            ),
            (
                None,
                AppEvent::SubagentFinished {
                    agent_id: "agent-1".into(),
                    name: "general".into(),
                    status: stepper_protocol::TurnStatus::Completed,
                    text: "SUB-TEXT".into(),
                    error: None,
                    usage: Default::default(),
                },
            ),
            (
                None,
                AppEvent::ToolCallFinished {
                    call_id: "d1".into(),
                    status: ToolCallStatus::Ok,
                    output: "## Task 1: look\n\nSUB-TEXT".into(),
                    exit_code: None,
                    duration_ms: 5,
                    diff: None,
                },
            ),
            (None, AppEvent::TextDelta { text: "so".into() }),
        ];
        let messages = interrupted_turn("go", &[], &answering_events(events));
        assert_eq!(
            roles(&messages),
            [
                "User:text",
                "Assistant:call",
                "User:result",
                "Assistant:text"
            ]
        );
        let results = messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|p| matches!(p, ContentPart::ToolResult { .. }))
            .count();
        assert_eq!(results, 1, "one result, for the one call");
    }

    #[test]
    fn what_a_crash_left_open_ends_innermost_first_in_its_own_agent() {
        let layer = Some("layer-1".to_string());
        let sub = Some("agent-1".to_string());
        let at = |agent: &Option<String>, at: i64, event: AppEvent| EventEnvelope {
            session_id: "s".into(),
            seq: 0,
            at,
            turn: Some(1),
            agent: agent.clone(),
            event,
        };
        let started = |id: &str, tool: &str| AppEvent::ToolCallStarted {
            call_id: id.into(),
            tool: tool.into(),
            input: json!({}),
        };
        let finished = |id: &str| AppEvent::ToolCallFinished {
            call_id: id.into(),
            status: ToolCallStatus::Ok,
            output: "x".into(),
            exit_code: None,
            duration_ms: 1,
            diff: None,
        };
        let events = vec![
            at(
                &None,
                1000,
                AppEvent::LayerStarted {
                    index: 1,
                    count: 2,
                    name: "plan".into(),
                    model: "m".into(),
                    parallel: false,
                    agent_id: layer.clone(),
                },
            ),
            // The same call id in two agents: only the layer's ended.
            at(&layer, 1100, started("c1", "read")),
            at(&layer, 1200, finished("c1")),
            at(&layer, 1300, started("d1", "dispatch")),
            at(
                &layer,
                1400,
                AppEvent::SubagentStarted {
                    agent_id: "agent-1".into(),
                    name: "general".into(),
                    model: "m".into(),
                    task: "look".into(),
                    layer: None,
                    worktree: None,
                },
            ),
            at(&sub, 1500, started("c1", "bash")),
            at(
                &sub,
                1600,
                AppEvent::ApprovalRequested {
                    request_id: "r1".into(),
                    tool: "bash".into(),
                    summary: "run it".into(),
                    command: None,
                    diff: None,
                },
            ),
            at(&sub, 4500, AppEvent::TextDelta { text: "…".into() }),
        ];
        let closing = left_open(&events);
        let kinds: Vec<(Option<&str>, &str)> = closing
            .iter()
            .map(|(agent, e)| (agent.as_deref(), e.kind()))
            .collect();
        assert_eq!(
            kinds,
            [
                (Some("agent-1"), "ApprovalResolved"),
                (Some("agent-1"), "ToolCallFinished"),
                (Some("layer-1"), "SubagentFinished"),
                (Some("layer-1"), "ToolCallFinished"),
                (None, "LayerFinished"),
            ]
        );
        let AppEvent::ToolCallFinished {
            call_id,
            status,
            output,
            duration_ms,
            ..
        } = &closing[1].1
        else {
            panic!("{closing:?}")
        };
        assert_eq!(
            (call_id.as_str(), *status),
            ("c1", ToolCallStatus::Cancelled)
        );
        assert!(output.contains("the daemon stopped"), "{output}");
        assert_eq!(*duration_ms, 3000, "until the last event known");
        assert!(matches!(
            &closing[4].1,
            AppEvent::LayerFinished { index: 1, status: TurnStatus::Interrupted, name, .. } if name == "plan"
        ));
        assert!(left_open(&events[..3]).len() == 1, "only the layer");
        assert!(left_open(&[]).is_empty());
    }

    #[test]
    fn a_finished_layer_is_kept_once() {
        let layer = |text: &str| AppEvent::LayerFinished {
            index: 1,
            name: "plan".into(),
            status: stepper_protocol::TurnStatus::Completed,
            text: text.into(),
            error: None,
            workers: 0,
        };
        let events = vec![
            (
                Some("layer-1".to_string()),
                AppEvent::TextDelta {
                    text: "PLAN".into(),
                },
            ),
            (None, layer("PLAN")),
            (
                None,
                AppEvent::MessageCompleted {
                    text: "JOINED".into(),
                    stop_reason: None,
                },
            ),
            (None, layer("JOINED")),
        ];
        let texts: Vec<String> = answering_events(events)
            .into_iter()
            .filter_map(|e| match e {
                AppEvent::MessageCompleted { text, .. } => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["(layer plan finished:)\n\nPLAN", "JOINED"]);
    }

    #[test]
    fn a_turn_killed_while_a_tool_ran() {
        let events = [
            AppEvent::TextDelta {
                text: "Let me ".into(),
            },
            AppEvent::TextDelta {
                text: "look.".into(),
            },
            AppEvent::MessageCompleted {
                text: "Let me look.".into(),
                stop_reason: Some("tool_use".into()),
            },
            AppEvent::ToolCallStarted {
                call_id: "c1".into(),
                tool: "read".into(),
                input: json!({"path": "a"}),
            },
            AppEvent::ToolCallFinished {
                call_id: "c1".into(),
                status: ToolCallStatus::Ok,
                output: "contents".into(),
                exit_code: None,
                duration_ms: 1,
                diff: None,
            },
            AppEvent::TextDelta {
                text: "Now the tests".into(),
            },
            AppEvent::ToolCallStarted {
                call_id: "c2".into(),
                tool: "bash".into(),
                input: json!({"command": "cargo test"}),
            },
            AppEvent::Steered {
                text: "skip slow ones".into(),
                by: None,
                input_id: None,
            },
        ];
        let messages = interrupted_turn("fix it", &[], &events);
        assert_eq!(
            roles(&messages),
            [
                "User:text",
                "Assistant:text+call",
                "User:result",
                "Assistant:text+call",
                "User:result+text",
                "Assistant:text",
            ]
        );
        let ContentPart::ToolResult {
            content, is_error, ..
        } = &messages[4].content[0]
        else {
            panic!("{messages:?}")
        };
        assert!(*is_error && content.contains("daemon stopped"));
    }

    #[test]
    fn model_calls_that_only_called_tools_stay_apart() {
        let call = |id: &str| AppEvent::ToolCallStarted {
            call_id: id.into(),
            tool: "read".into(),
            input: json!({"path": id}),
        };
        let done = |id: &str| AppEvent::ToolCallFinished {
            call_id: id.into(),
            status: ToolCallStatus::Ok,
            output: "x".into(),
            exit_code: None,
            duration_ms: 1,
            diff: None,
        };
        let usage = || AppEvent::UsageUpdated {
            usage: Default::default(),
            cost_usd: None,
        };
        let events = [
            usage(),
            call("c1"),
            done("c1"),
            usage(),
            call("c2"),
            done("c2"),
        ];
        assert_eq!(
            roles(&interrupted_turn("go", &[], &events)),
            [
                "User:text",
                "Assistant:call",
                "User:result",
                "Assistant:call",
                "User:result",
                "Assistant:text",
            ]
        );
    }

    #[test]
    fn steering_before_any_answer_joins_the_input() {
        let events = [AppEvent::Steered {
            text: "and be quick".into(),
            by: None,
            input_id: None,
        }];
        assert_eq!(
            roles(&interrupted_turn("go", &[], &events)),
            ["User:text+text", "Assistant:text"]
        );
    }

    #[test]
    fn a_turn_killed_mid_stream_keeps_the_partial_text() {
        let events = [AppEvent::TextDelta {
            text: "half an ans".into(),
        }];
        let messages = interrupted_turn("q", &[], &events);
        assert_eq!(roles(&messages), ["User:text", "Assistant:text"]);
        assert_eq!(messages[1].text(), "half an ans");
        assert_eq!(
            roles(&interrupted_turn("q", &[], &[])),
            ["User:text", "Assistant:text"]
        );
    }
}
