//! The context of a turn that died with the daemon, rebuilt from its events, so that
//! `/continue` (or the next input) lets the model pick up what it was doing instead of
//! forgetting the interrupted turn. A finished turn stores its exact context; a crashed one
//! left only its events, which hold what the model said, which tools it called with what,
//! and what they returned. Thinking signatures are not in events and are left out.

use stepper_protocol::{AppEvent, ToolCallStatus};

use crate::provider::{ChatMessage, ContentPart, Role};

/// What a tool call that never finished tells the model.
const UNFINISHED: &str =
    "the daemon stopped before this tool call finished; it may have partly run";
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

/// The messages of an interrupted turn: the user's input, then what its events show, in
/// the shape the agent loop stores for a finished turn.
pub fn interrupted_turn(input: &str, events: &[AppEvent]) -> Vec<ChatMessage> {
    let mut turn = Rebuild {
        messages: vec![ChatMessage::user(input)],
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
        let messages = interrupted_turn("go", &answering_events(events));
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
            },
        ];
        let messages = interrupted_turn("fix it", &events);
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
            roles(&interrupted_turn("go", &events)),
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
        }];
        assert_eq!(
            roles(&interrupted_turn("go", &events)),
            ["User:text+text", "Assistant:text"]
        );
    }

    #[test]
    fn a_turn_killed_mid_stream_keeps_the_partial_text() {
        let events = [AppEvent::TextDelta {
            text: "half an ans".into(),
        }];
        let messages = interrupted_turn("q", &events);
        assert_eq!(roles(&messages), ["User:text", "Assistant:text"]);
        assert_eq!(messages[1].text(), "half an ans");
        assert_eq!(
            roles(&interrupted_turn("q", &[])),
            ["User:text", "Assistant:text"]
        );
    }
}
