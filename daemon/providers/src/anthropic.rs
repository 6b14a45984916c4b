//! Anthropic's Messages API, streamed (`stream: true`).
//!
//! [`AnthropicWire`] turns the wire events (`message_start`, `content_block_*`,
//! `message_delta`, `error`, ...) into `ChatEvent`s: text, thinking with its signature,
//! redacted thinking, tool use with streamed `input_json_delta`, usage with cache tokens.
//! [`request_body`] sends back what the accumulator kept — signed thinking, tool calls and
//! results — and marks prompt-cache breakpoints.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use stepper_engine::{
    ChatEvent, ChatMessage, ChatRequest, ChatStream, ContentPart, HostedTool, LlmProvider, Media,
    ProviderError, Role, StopReason,
};
use stepper_protocol::Usage;
use tokio_util::sync::CancellationToken;

use crate::sse::SseEvent;
use crate::stream::{
    Endpoint, RetryPolicy, WireError, WireFormat, check_media, idle_timeout_from_env, parse_event,
    post_stream, refusal,
};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
const NAME: &str = "anthropic";

pub struct Anthropic {
    endpoint: Arc<Endpoint>,
}

impl Anthropic {
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        key: &str,
        extra_headers: &HeaderMap,
    ) -> Result<Anthropic, ProviderError> {
        let url = reqwest::Url::parse(&format!("{}/v1/messages", base_url.trim_end_matches('/')))
            .map_err(|e| {
            ProviderError::Config(format!(
                "the Anthropic base URL {base_url:?} is not a URL ({e}) — set it to something \
                     like https://api.anthropic.com"
            ))
        })?;
        let mut headers = extra_headers.clone();
        let mut key = HeaderValue::from_str(key).map_err(|_| {
            ProviderError::Config("the Anthropic API key holds characters a header cannot".into())
        })?;
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        let endpoint = Endpoint {
            provider: NAME.into(),
            http,
            url,
            headers,
            retry: RetryPolicy::default(),
            idle_timeout: idle_timeout_from_env(),
        };
        Ok(Anthropic {
            endpoint: Arc::new(endpoint),
        })
    }
}

impl LlmProvider for Anthropic {
    fn name(&self) -> &str {
        NAME
    }

    fn chat_stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        if let Err(e) = check_media(&request) {
            return refusal(e);
        }
        post_stream(
            Arc::clone(&self.endpoint),
            request_body(&request),
            AnthropicWire::default,
            cancel,
        )
    }
}

/// The request body, in the Messages API's shape.
pub fn request_body(request: &ChatRequest) -> Value {
    let ephemeral = || json!({ "type": "ephemeral" });
    let mut messages: Vec<Value> = request
        .messages
        .iter()
        .filter_map(|m| {
            let blocks: Vec<Value> = m.content.iter().filter_map(block).collect();
            (!blocks.is_empty()).then(|| json!({ "role": role(m), "content": blocks }))
        })
        .collect();
    if request.cache {
        // The rolling breakpoint: the end of the conversation so far, so the next request
        // reads everything before its new input from the cache.
        if let Some(last) = messages
            .last_mut()
            .and_then(|m| m["content"].as_array_mut())
            .and_then(|c| c.last_mut())
        {
            last["cache_control"] = ephemeral();
        }
    }
    let mut max_tokens = request.max_tokens;
    let mut body = json!({ "model": request.model, "stream": true, "messages": messages });
    if let Some(system) = &request.system {
        let mut block = json!({ "type": "text", "text": system });
        if request.cache {
            block["cache_control"] = ephemeral();
        }
        body["system"] = json!([block]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
            .collect();
        if request.cache
            && let Some(last) = tools.last_mut()
        {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = json!(tools);
    }
    for hosted in &request.hosted {
        let tool = match hosted {
            HostedTool::WebSearch => {
                json!({ "type": "web_search_20250305", "name": "web_search", "max_uses": 5 })
            }
        };
        match body["tools"].as_array_mut() {
            Some(tools) => tools.push(tool),
            None => body["tools"] = json!([tool]),
        }
    }
    if let Some(effort) = request.reasoning {
        let budget = effort.budget_tokens();
        // The budget counts within max_tokens, which must leave room for the answer.
        max_tokens = max_tokens.max(budget + 4096);
        body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
    }
    body["max_tokens"] = json!(max_tokens);
    body
}

fn role(m: &ChatMessage) -> &'static str {
    match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn block(part: &ContentPart) -> Option<Value> {
    Some(match part {
        ContentPart::Text { text } if text.is_empty() => return None,
        ContentPart::Text { text } => json!({ "type": "text", "text": text }),
        // Unsigned thinking cannot be sent back (the API would reject it): dropped.
        ContentPart::Thinking {
            signature: None, ..
        } => return None,
        ContentPart::Thinking {
            text,
            signature: Some(sig),
        } => {
            json!({ "type": "thinking", "thinking": text, "signature": sig })
        }
        ContentPart::RedactedThinking { data } => {
            json!({ "type": "redacted_thinking", "data": data })
        }
        // Another vendor's reasoning means nothing here.
        ContentPart::Reasoning { .. } => return None,
        ContentPart::ToolCall {
            id,
            name,
            arguments,
        } => {
            let input = if arguments.is_object() {
                arguments.clone()
            } else {
                json!({})
            };
            json!({ "type": "tool_use", "id": id, "name": name, "input": input })
        }
        ContentPart::ToolResult {
            call_id,
            content,
            is_error,
            media,
        } if media.is_empty() => json!({
            "type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error
        }),
        // What a tool showed the model (`read` of a picture): its text, then the blocks.
        ContentPart::ToolResult {
            call_id,
            content,
            is_error,
            media,
        } => {
            let mut blocks = vec![json!({ "type": "text", "text": content })];
            blocks.extend(media.iter().map(media_block));
            json!({
                "type": "tool_result", "tool_use_id": call_id, "content": blocks, "is_error": is_error
            })
        }
        ContentPart::Attachment { media } => media_block(media),
    })
}

/// An image or PDF as Anthropic takes it: base64 in the request.
pub(crate) fn media_block(media: &Media) -> Value {
    let source = json!({
        "type": "base64", "media_type": media.about.media_type, "data": media.base64()
    });
    if media.is_image() {
        json!({ "type": "image", "source": source })
    } else {
        json!({ "type": "document", "source": source, "title": media.about.name })
    }
}

/// Anthropic's stream, event by event.
#[derive(Default)]
pub struct AnthropicWire {
    /// Content blocks that are tool calls, by index: their stop ends the call.
    tool_blocks: BTreeSet<usize>,
    /// Content blocks of tools the server runs (its web search), by index: their input,
    /// said when the block stops.
    server_blocks: std::collections::BTreeMap<usize, String>,
    stop_reason: Option<StopReason>,
}

impl WireFormat for AnthropicWire {
    fn on_event(
        &mut self,
        sse: &SseEvent,
        out: &mut VecDeque<ChatEvent>,
    ) -> Result<bool, WireError> {
        let wire: WireEvent = parse_event(sse)?;
        match wire {
            WireEvent::MessageStart { message } => {
                if let Some(u) = message.usage {
                    out.push_back(ChatEvent::Usage(u.into()));
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                ContentBlock::Text { text } if !text.is_empty() => {
                    out.push_back(ChatEvent::TextDelta(text))
                }
                ContentBlock::Thinking { thinking } if !thinking.is_empty() => {
                    out.push_back(ChatEvent::ReasoningDelta(thinking));
                }
                ContentBlock::RedactedThinking { data } => {
                    out.push_back(ChatEvent::ReasoningPart(ContentPart::RedactedThinking {
                        data,
                    }));
                }
                ContentBlock::ToolUse { id, name } => {
                    self.tool_blocks.insert(index);
                    out.push_back(ChatEvent::ToolCallStart { index, id, name });
                }
                ContentBlock::ServerToolUse => {
                    self.server_blocks.insert(index, String::new());
                }
                _ => {}
            },
            WireEvent::ContentBlockDelta { index, delta } => match delta {
                Delta::TextDelta { text } => out.push_back(ChatEvent::TextDelta(text)),
                Delta::ThinkingDelta { thinking } => {
                    out.push_back(ChatEvent::ReasoningDelta(thinking))
                }
                Delta::SignatureDelta { signature } => {
                    out.push_back(ChatEvent::ThinkingSignature(signature))
                }
                Delta::InputJsonDelta { partial_json } => {
                    if let Some(input) = self.server_blocks.get_mut(&index) {
                        input.push_str(&partial_json);
                    } else {
                        out.push_back(ChatEvent::ToolCallDelta {
                            index,
                            arguments: partial_json,
                        });
                    }
                }
                Delta::Other => {}
            },
            WireEvent::ContentBlockStop { index } => {
                if self.tool_blocks.remove(&index) {
                    out.push_back(ChatEvent::ToolCallEnd { index });
                }
                // The server searched: said, since no tool of ours ran for it.
                if let Some(input) = self.server_blocks.remove(&index) {
                    let query = serde_json::from_str::<Value>(&input)
                        .ok()
                        .and_then(|v| v["query"].as_str().map(str::to_string))
                        .unwrap_or_default();
                    out.push_back(ChatEvent::Notice(format!("searched the web: {query}")));
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(StopReason::parse(&reason));
                }
                if let Some(u) = usage {
                    out.push_back(ChatEvent::Usage(u.into()));
                }
            }
            WireEvent::MessageStop => {
                let reason = self.stop_reason.take().unwrap_or(StopReason::EndTurn);
                out.push_back(ChatEvent::Stop { reason });
                return Ok(true);
            }
            WireEvent::Error { error } => {
                let retryable = matches!(
                    error.kind.as_str(),
                    "overloaded_error" | "rate_limit_error" | "api_error"
                );
                let e = ProviderError::Stream {
                    provider: NAME.into(),
                    message: format!("{} ({})", error.message, error.kind),
                };
                return Err(WireError {
                    error: e,
                    retryable,
                });
            }
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Ok(false)
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireErrorBody,
    },
    /// Event types added after this was written are skipped, as the API asks.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireMessage {
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// A tool the server runs (`web_search`); its result follows in a block of its own,
    /// which is not kept (the answer's text cites what it used).
    ServerToolUse,
    #[serde(other)]
    Other,
}

// Named after the wire's own `text_delta`, `thinking_delta`, ...
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)]
enum Delta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            input_tokens: u.input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
            cache_read_tokens: u.cache_read_input_tokens.unwrap_or(0),
            cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct WireErrorBody {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{SseDecoder, testing};
    use stepper_engine::{ReasoningEffort, ToolSpec};

    fn fixture(name: &str) -> String {
        testing::fixture("anthropic", name)
    }

    fn decode(input: &str) -> Vec<Result<ChatEvent, ProviderError>> {
        testing::decode(AnthropicWire::default(), input)
    }

    fn accumulate(input: &str) -> stepper_engine::Accumulated {
        testing::accumulate(AnthropicWire::default(), input)
    }

    #[test]
    fn the_hosted_web_search_is_offered_and_said_not_run() {
        let mut req = ChatRequest::new("m", vec![ChatMessage::user("news?")]);
        req.hosted = vec![HostedTool::WebSearch];
        let body = request_body(&req);
        assert_eq!(body["tools"][0]["type"], "web_search_20250305");
        assert_eq!(body["tools"][0]["name"], "web_search");
        // As the API streams a search: the server's call, its results, then the answer.
        let stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n\
            event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n\
            event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\": \\\"rust 2024\\\"}\"}}\n\n\
            event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
            event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_1\",\"content\":[{\"type\":\"web_search_result\",\"url\":\"https://e.x\",\"title\":\"t\"}]}}\n\n\
            event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
            event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
            event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Found it.\"}}\n\n\
            event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n\
            event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n\
            event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let events: Vec<ChatEvent> = decode(stream).into_iter().map(Result::unwrap).collect();
        assert!(
            events.contains(&ChatEvent::Notice("searched the web: rust 2024".into())),
            "{events:?}"
        );
        assert!(
            !events.iter().any(|e| matches!(
                e,
                ChatEvent::ToolCallStart { .. } | ChatEvent::ToolCallDelta { .. }
            )),
            "nothing of ours runs for it: {events:?}"
        );
        let done = accumulate(stream);
        assert_eq!(done.message.text(), "Found it.");
    }

    #[test]
    fn tool_use_streams_its_arguments() {
        let done = accumulate(&fixture("tool_use.sse"));
        let calls: Vec<_> = done.message.tool_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
        assert_eq!(calls[0].1, "get_weather");
        assert_eq!(
            calls[0].2,
            &json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
        );
        assert_eq!(done.stop, Some(StopReason::ToolUse));
        assert_eq!(
            done.message.text(),
            "Okay, let's check the weather for San Francisco, CA:"
        );
    }

    #[test]
    fn thinking_keeps_its_signature_and_goes_back_signed() {
        let done = accumulate(&fixture("thinking.sse"));
        assert_eq!(
            done.message.content[0],
            ContentPart::Thinking {
                text: "Let me think about 27 * 453.".into(),
                signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into()),
            }
        );
        assert_eq!(done.usage.cache_read_tokens, 2048);
        assert_eq!(done.usage.cache_write_tokens, 12);
        let mut req = ChatRequest::new(
            "m",
            vec![
                ChatMessage::user("q"),
                done.message,
                ChatMessage::user("and?"),
            ],
        );
        req.reasoning = Some(ReasoningEffort::Medium);
        let body = request_body(&req);
        assert_eq!(body["messages"][1]["content"][0]["type"], "thinking");
        assert_eq!(
            body["messages"][1]["content"][0]["signature"],
            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
        );
        assert_eq!(body["thinking"]["budget_tokens"], 8192);
        assert!(body["max_tokens"].as_u64().unwrap() > 8192);
    }

    #[test]
    fn cache_breakpoints_on_system_tools_and_the_last_message() {
        let mut req = ChatRequest::new(
            "m",
            vec![
                ChatMessage::user("a"),
                ChatMessage::assistant("b"),
                ChatMessage::user("c"),
            ],
        );
        req.system = Some("sys".into());
        req.tools = vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        }];
        let body = request_body(&req);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        assert!(
            body["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
        req.cache = false;
        assert!(!request_body(&req).to_string().contains("cache_control"));
    }

    #[test]
    fn tool_results_go_back_as_tool_result_blocks() {
        let msg = ChatMessage {
            role: Role::User,
            content: vec![ContentPart::ToolResult {
                media: Vec::new(),
                call_id: "toolu_1".into(),
                content: "72F".into(),
                is_error: false,
            }],
        };
        let body = request_body(&ChatRequest::new("m", vec![msg]));
        assert_eq!(
            body["messages"][0]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "72F", "is_error": false, "cache_control": {"type": "ephemeral"}})
        );
    }

    #[test]
    fn attachments_go_as_image_and_document_blocks_before_the_text() {
        let mut req = ChatRequest::new("claude-sonnet-4-5", vec![testing::attached_input()]);
        req.cache = false;
        let body = request_body(&req);
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "UE5HIQ=="}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="}, "title": "spec.pdf"},
                {"type": "text", "text": "What is wrong here?"}
            ]}])
        );
    }

    #[test]
    fn a_tool_result_shows_its_image_inside_the_tool_result_block() {
        let mut messages = vec![ChatMessage::user("look")];
        messages.extend(testing::tool_shown_image());
        let mut req = ChatRequest::new("claude-sonnet-4-5", messages);
        req.cache = false;
        let body = request_body(&req);
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": "call_1", "is_error": false,
                "content": [
                    {"type": "text", "text": "shot.png: 2 x 2 PNG"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "UE5HIQ=="}}
                ]
            }]})
        );
    }

    #[test]
    fn unknown_event_types_are_skipped() {
        let out = decode(
            "event: brand_new\ndata: {\"type\":\"brand_new\",\"x\":1}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(
            out,
            vec![Ok(ChatEvent::Stop {
                reason: StopReason::EndTurn
            })]
        );
    }

    #[test]
    fn malformed_json_is_a_clear_error() {
        let out =
            decode("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n");
        match &out[..] {
            [Err(ProviderError::Protocol(m))] => assert!(m.contains("malformed"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_stream_without_message_stop_is_cut() {
        let out = decode(
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        );
        assert_eq!(out[0], Ok(ChatEvent::TextDelta("Hi".into())));
        assert!(matches!(&out[1], Err(ProviderError::Transport(m)) if m.contains("ended before")));
    }

    #[test]
    fn overloaded_in_the_stream_is_retryable() {
        let mut d = SseDecoder::new(AnthropicWire::default());
        let mut out = VecDeque::new();
        d.feed(fixture("overloaded.sse").as_bytes(), &mut out);
        assert!(d.is_failed());
        assert!(d.is_retryable());
        assert!(
            matches!(out.back(), Some(Err(ProviderError::Stream { message, .. })) if message.contains("Overloaded"))
        );
    }
}
