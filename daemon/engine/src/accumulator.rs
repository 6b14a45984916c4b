//! The shared accumulator: folds any provider's `ChatEvent`s into the finished assistant
//! message — text, reasoning with its signature or encrypted content, tool calls with their
//! arguments parsed — so no wire format leaks above the providers.

use std::collections::BTreeMap;

use stepper_protocol::Usage;

use crate::provider::{ChatEvent, ChatMessage, ContentPart, ProviderError, Role, StopReason};

#[derive(Debug, Default)]
pub struct MessageAccumulator {
    parts: Vec<ContentPart>,
    /// Tool calls being streamed, by the provider's index: (position in `parts`, arguments).
    open_calls: BTreeMap<usize, (usize, String)>,
    usage: Usage,
    stop: Option<StopReason>,
}

/// The finished message.
#[derive(Debug, Clone, PartialEq)]
pub struct Accumulated {
    pub message: ChatMessage,
    pub usage: Usage,
    /// `None` when the stream ended without saying why (cut short or cancelled).
    pub stop: Option<StopReason>,
}

impl MessageAccumulator {
    pub fn new() -> MessageAccumulator {
        MessageAccumulator::default()
    }

    /// Fold one event in. An error means the provider sent something inconsistent (arguments
    /// that are not JSON, a delta for a call never started).
    pub fn push(&mut self, event: &ChatEvent) -> Result<(), ProviderError> {
        match event {
            ChatEvent::TextDelta(t) => match self.parts.last_mut() {
                Some(ContentPart::Text { text }) => text.push_str(t),
                _ => self.parts.push(ContentPart::Text { text: t.clone() }),
            },
            ChatEvent::ReasoningDelta(t) => match self.parts.last_mut() {
                Some(ContentPart::Thinking {
                    text,
                    signature: None,
                }) => text.push_str(t),
                _ => self.parts.push(ContentPart::Thinking {
                    text: t.clone(),
                    signature: None,
                }),
            },
            ChatEvent::ThinkingSignature(sig) => match self.parts.last_mut() {
                Some(ContentPart::Thinking { signature, .. }) if signature.is_none() => {
                    *signature = Some(sig.clone());
                }
                _ => self.parts.push(ContentPart::Thinking {
                    text: String::new(),
                    signature: Some(sig.clone()),
                }),
            },
            ChatEvent::ReasoningPart(part) => {
                // A reasoning item arrives whole after its summary streamed as deltas: it
                // replaces the unsigned thinking text those deltas built.
                if matches!(part, ContentPart::Reasoning { .. })
                    && matches!(
                        self.parts.last(),
                        Some(ContentPart::Thinking {
                            signature: None,
                            ..
                        })
                    )
                {
                    self.parts.pop();
                }
                self.parts.push(part.clone());
            }
            ChatEvent::ToolCallStart { index, id, name } => {
                self.parts.push(ContentPart::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: serde_json::Value::Null,
                });
                self.open_calls
                    .insert(*index, (self.parts.len() - 1, String::new()));
            }
            ChatEvent::ToolCallDelta { index, arguments } => {
                let (_, args) = self.open_calls.get_mut(index).ok_or_else(|| {
                    ProviderError::Protocol(format!(
                        "arguments for tool call {index}, which never started"
                    ))
                })?;
                args.push_str(arguments);
            }
            ChatEvent::ToolCallEnd { index } => self.close_call(*index)?,
            ChatEvent::Usage(u) => merge_usage(&mut self.usage, u),
            ChatEvent::Notice(_) => {}
            ChatEvent::Stop { reason } => self.stop = Some(reason.clone()),
        }
        Ok(())
    }

    fn close_call(&mut self, index: usize) -> Result<(), ProviderError> {
        let Some((position, args)) = self.open_calls.remove(&index) else {
            return Err(ProviderError::Protocol(format!(
                "tool call {index} ended but never started"
            )));
        };
        let parsed = if args.trim().is_empty() {
            serde_json::Value::Object(Default::default())
        } else {
            serde_json::from_str(&args).map_err(|e| {
                ProviderError::Protocol(format!(
                    "the arguments of tool call {index} are not JSON ({e})"
                ))
            })?
        };
        if let Some(ContentPart::ToolCall { arguments, .. }) = self.parts.get_mut(position) {
            *arguments = parsed;
        }
        Ok(())
    }

    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The visible text so far.
    pub fn text(&self) -> String {
        ChatMessage {
            role: Role::Assistant,
            content: self.parts.clone(),
        }
        .text()
    }

    /// Finish: calls still open are closed (their arguments parsed as far as they came).
    pub fn finish(mut self) -> Result<Accumulated, ProviderError> {
        let open: Vec<usize> = self.open_calls.keys().copied().collect();
        for index in open {
            self.close_call(index)?;
        }
        Ok(Accumulated {
            message: ChatMessage {
                role: Role::Assistant,
                content: self.parts,
            },
            usage: self.usage,
            stop: self.stop,
        })
    }
}

/// Usage events may carry only some fields (Anthropic sends input tokens at the start and
/// output tokens at the end): keep the latest non-zero value of each.
pub fn merge_usage(total: &mut Usage, update: &Usage) {
    let keep = |old: &mut u64, new: u64| {
        if new != 0 {
            *old = new;
        }
    };
    keep(&mut total.input_tokens, update.input_tokens);
    keep(&mut total.output_tokens, update.output_tokens);
    keep(&mut total.cache_read_tokens, update.cache_read_tokens);
    keep(&mut total.cache_write_tokens, update.cache_write_tokens);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(events: &[ChatEvent]) -> Accumulated {
        let mut acc = MessageAccumulator::new();
        for e in events {
            acc.push(e).unwrap();
        }
        acc.finish().unwrap()
    }

    #[test]
    fn thinking_text_and_interleaved_tool_calls() {
        let out = fold(&[
            ChatEvent::ReasoningDelta("let me ".into()),
            ChatEvent::ReasoningDelta("think".into()),
            ChatEvent::ThinkingSignature("sig".into()),
            ChatEvent::TextDelta("I'll look.".into()),
            ChatEvent::ToolCallStart {
                index: 1,
                id: "a".into(),
                name: "read".into(),
            },
            ChatEvent::ToolCallStart {
                index: 2,
                id: "b".into(),
                name: "ls".into(),
            },
            ChatEvent::ToolCallDelta {
                index: 1,
                arguments: "{\"path\":".into(),
            },
            ChatEvent::ToolCallDelta {
                index: 2,
                arguments: "".into(),
            },
            ChatEvent::ToolCallDelta {
                index: 1,
                arguments: "\"x\"}".into(),
            },
            ChatEvent::ToolCallEnd { index: 1 },
            ChatEvent::ToolCallEnd { index: 2 },
            ChatEvent::Stop {
                reason: StopReason::ToolUse,
            },
        ]);
        assert_eq!(
            out.message.content,
            vec![
                ContentPart::Thinking {
                    text: "let me think".into(),
                    signature: Some("sig".into())
                },
                ContentPart::Text {
                    text: "I'll look.".into()
                },
                ContentPart::ToolCall {
                    id: "a".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "x"})
                },
                ContentPart::ToolCall {
                    id: "b".into(),
                    name: "ls".into(),
                    arguments: serde_json::json!({})
                },
            ]
        );
        assert_eq!(out.stop, Some(StopReason::ToolUse));
    }

    #[test]
    fn a_reasoning_item_replaces_its_streamed_summary() {
        let item = ContentPart::Reasoning {
            id: "rs_1".into(),
            encrypted_content: Some("enc".into()),
            summary: vec!["plan".into()],
        };
        let out = fold(&[
            ChatEvent::ReasoningDelta("plan".into()),
            ChatEvent::ReasoningPart(item.clone()),
        ]);
        assert_eq!(out.message.content, vec![item]);
    }

    #[test]
    fn bad_arguments_are_an_error() {
        let mut acc = MessageAccumulator::new();
        acc.push(&ChatEvent::ToolCallStart {
            index: 0,
            id: "a".into(),
            name: "x".into(),
        })
        .unwrap();
        acc.push(&ChatEvent::ToolCallDelta {
            index: 0,
            arguments: "{nope".into(),
        })
        .unwrap();
        assert!(matches!(
            acc.push(&ChatEvent::ToolCallEnd { index: 0 }),
            Err(ProviderError::Protocol(_))
        ));
        assert!(
            MessageAccumulator::new()
                .push(&ChatEvent::ToolCallDelta {
                    index: 9,
                    arguments: "x".into()
                })
                .is_err()
        );
    }

    #[test]
    fn context_parts_round_trip_as_json() {
        let msg = ChatMessage {
            role: Role::Assistant,
            content: vec![
                ContentPart::RedactedThinking { data: "d".into() },
                ContentPart::ToolResult {
                    media: Vec::new(),
                    call_id: "c".into(),
                    content: "ok".into(),
                    is_error: false,
                },
            ],
        };
        let json = serde_json::to_string(&msg).unwrap();
        assert_eq!(serde_json::from_str::<ChatMessage>(&json).unwrap(), msg);
    }
}
