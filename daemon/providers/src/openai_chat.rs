//! Chat Completions, streamed: the format OpenAI-compatible servers speak (Ollama, vLLM,
//! llama.cpp's server, OpenRouter, LM Studio).
//!
//! [`ChatCompletionsWire`] turns `chat.completion.chunk`s into `ChatEvent`s: content,
//! reasoning (`reasoning_content` or `reasoning`, as local servers name it), `tool_calls`
//! deltas keyed by index, and usage from the final chunk (`stream_options.include_usage`).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use stepper_engine::{
    ChatEvent, ChatRequest, ChatStream, ContentPart, LlmProvider, Media, ProviderError, Role,
    StopReason,
};
use stepper_protocol::Usage;
use tokio_util::sync::CancellationToken;

use crate::sse::SseEvent;
use crate::stream::{Endpoint, WireError, WireFormat, parse_event, post_stream};

pub struct OpenAiChat {
    endpoint: Arc<Endpoint>,
}

impl OpenAiChat {
    /// `base_url` ends before `/chat/completions` (e.g. `http://localhost:11434/v1`). Local
    /// servers often need no key.
    pub fn new(
        name: &str,
        http: reqwest::Client,
        base_url: &str,
        key: Option<&str>,
        extra_headers: &HeaderMap,
    ) -> Result<OpenAiChat, ProviderError> {
        let endpoint =
            crate::openai::endpoint(name, http, base_url, "chat/completions", key, extra_headers)?;
        Ok(OpenAiChat {
            endpoint: Arc::new(endpoint),
        })
    }
}

impl LlmProvider for OpenAiChat {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }

    fn chat_stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        if let Err(e) = crate::stream::check_media(&request) {
            return crate::stream::refusal(e);
        }
        post_stream(
            Arc::clone(&self.endpoint),
            request_body(&request),
            ChatCompletionsWire::default,
            cancel,
        )
    }
}

/// An image or PDF as Chat Completions takes it: a data URL.
fn chat_media(media: &Media) -> Value {
    let url = format!("data:{};base64,{}", media.about.media_type, media.base64());
    if media.is_image() {
        json!({ "type": "image_url", "image_url": { "url": url } })
    } else {
        json!({ "type": "file", "file": { "filename": media.about.name, "file_data": url } })
    }
}

/// The request body in the Chat Completions format.
pub fn request_body(request: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({ "role": "system", "content": system }));
    }
    for m in &request.messages {
        match m.role {
            Role::User => {
                let mut text = String::new();
                let mut attached = Vec::new();
                // A tool message holds text only: what tools showed follows them in a
                // user message of its own.
                let mut shown = Vec::new();
                for part in &m.content {
                    match part {
                        ContentPart::Text { text: t } if t.is_empty() => {}
                        ContentPart::Text { text: t } => {
                            // Parts are separate paragraphs (the user's words, then the
                            // environment's news), never glued together.
                            if !text.is_empty() {
                                text.push_str("\n\n");
                            }
                            text.push_str(t);
                        }
                        ContentPart::ToolResult {
                            call_id,
                            content,
                            media,
                            ..
                        } => {
                            messages.push(json!({
                                "role": "tool", "tool_call_id": call_id, "content": content
                            }));
                            if !media.is_empty() {
                                shown.push(json!({ "type": "text", "text": format!("What the tool call {call_id} showed:") }));
                                shown.extend(media.iter().map(chat_media));
                            }
                        }
                        ContentPart::Attachment { media } => attached.push(chat_media(media)),
                        _ => {}
                    }
                }
                if !shown.is_empty() {
                    messages.push(json!({ "role": "user", "content": shown }));
                }
                if !attached.is_empty() {
                    if !text.is_empty() {
                        attached.push(json!({ "type": "text", "text": text }));
                    }
                    messages.push(json!({ "role": "user", "content": attached }));
                } else if !text.is_empty() {
                    messages.push(json!({ "role": "user", "content": text }));
                }
            }
            Role::Assistant => {
                let text = m.text();
                let calls: Vec<Value> = m
                    .tool_calls()
                    .map(|(id, name, args)| {
                        json!({
                            "id": id, "type": "function",
                            "function": { "name": name, "arguments": args.to_string() }
                        })
                    })
                    .collect();
                let mut msg = json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) } });
                if !calls.is_empty() {
                    msg["tool_calls"] = json!(calls);
                }
                messages.push(msg);
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_tokens": request.max_tokens,
    });
    if !request.tools.is_empty() {
        body["tools"] = json!(request
            .tools
            .iter()
            .map(|t| json!({
                "type": "function",
                "function": { "name": t.name, "description": t.description, "parameters": t.input_schema }
            }))
            .collect::<Vec<_>>());
    }
    if let Some(effort) = request.reasoning {
        body["reasoning_effort"] = json!(effort.as_str());
    }
    body
}

/// The Chat Completions stream, chunk by chunk.
#[derive(Default)]
pub struct ChatCompletionsWire {
    started_calls: BTreeSet<usize>,
    open_calls: BTreeSet<usize>,
    finish: Option<StopReason>,
}

impl ChatCompletionsWire {
    fn close_calls(&mut self, out: &mut VecDeque<ChatEvent>) {
        for index in std::mem::take(&mut self.open_calls) {
            out.push_back(ChatEvent::ToolCallEnd { index });
        }
    }

    fn stop(&mut self, out: &mut VecDeque<ChatEvent>) {
        self.close_calls(out);
        let reason = self.finish.take().unwrap_or(StopReason::EndTurn);
        out.push_back(ChatEvent::Stop { reason });
    }
}

impl WireFormat for ChatCompletionsWire {
    fn on_event(
        &mut self,
        sse: &SseEvent,
        out: &mut VecDeque<ChatEvent>,
    ) -> Result<bool, WireError> {
        if sse.data.trim() == "[DONE]" {
            self.stop(out);
            return Ok(true);
        }
        let chunk: Chunk = parse_event(sse)?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(WireError::fatal(ProviderError::Stream {
                provider: "openai-chat".into(),
                message,
            }));
        }
        for choice in chunk.choices {
            let delta = choice.delta.unwrap_or_default();
            if let Some(r) = delta
                .reasoning_content
                .or(delta.reasoning)
                .filter(|r| !r.is_empty())
            {
                out.push_back(ChatEvent::ReasoningDelta(r));
            }
            if let Some(t) = delta.content.filter(|t| !t.is_empty()) {
                out.push_back(ChatEvent::TextDelta(t));
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let index = call.index.unwrap_or(0);
                let function = call.function.unwrap_or_default();
                if self.started_calls.insert(index) {
                    let name = function.name.clone().unwrap_or_default();
                    let id = call.id.clone().unwrap_or_else(|| format!("call_{index}"));
                    self.open_calls.insert(index);
                    out.push_back(ChatEvent::ToolCallStart { index, id, name });
                }
                if let Some(args) = function.arguments.filter(|a| !a.is_empty()) {
                    out.push_back(ChatEvent::ToolCallDelta {
                        index,
                        arguments: args,
                    });
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(match reason.as_str() {
                    "stop" => StopReason::EndTurn,
                    "tool_calls" | "function_call" => StopReason::ToolUse,
                    "length" => StopReason::MaxTokens,
                    "content_filter" => StopReason::Refusal,
                    other => StopReason::Other(other.into()),
                });
                self.close_calls(out);
            }
        }
        if let Some(u) = chunk.usage {
            out.push_back(ChatEvent::Usage(u.into()));
        }
        Ok(false)
    }

    /// Some servers end the body without `[DONE]`: fine once a finish reason came.
    fn on_end(&mut self, out: &mut VecDeque<ChatEvent>) -> Result<(), WireError> {
        if self.finish.is_some() {
            self.stop(out);
            return Ok(());
        }
        Err(WireError::cut_short())
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize, Default, Clone)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        let cached = u
            .prompt_tokens_details
            .map(|d| d.cached_tokens)
            .unwrap_or(0);
        Usage {
            input_tokens: u.prompt_tokens.saturating_sub(cached),
            output_tokens: u.completion_tokens,
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{SseDecoder, testing};
    use stepper_engine::ChatMessage;

    fn fixture(name: &str) -> String {
        testing::fixture("openai-chat", name)
    }

    fn accumulate(input: &str) -> stepper_engine::Accumulated {
        testing::accumulate(ChatCompletionsWire::default(), input)
    }

    #[test]
    fn text_with_usage_after_the_finish_reason() {
        let done = accumulate(&fixture("text.sse"));
        assert_eq!(done.message.text(), "Hello there!");
        assert_eq!(done.stop, Some(StopReason::EndTurn));
        assert_eq!(
            (
                done.usage.input_tokens,
                done.usage.cache_read_tokens,
                done.usage.output_tokens
            ),
            (9, 10, 4)
        );
    }

    #[test]
    fn parallel_tool_calls_by_index() {
        let done = accumulate(&fixture("tool_calls.sse"));
        let calls: Vec<_> = done.message.tool_calls().collect();
        assert_eq!(
            calls,
            vec![
                ("call_abc", "get_weather", &json!({"city": "Paris"})),
                ("call_def", "get_weather", &json!({"city": "Tokyo"})),
            ]
        );
        assert_eq!(done.stop, Some(StopReason::ToolUse));
    }

    #[test]
    fn reasoning_from_local_servers() {
        let done = accumulate(&fixture("reasoning.sse"));
        assert_eq!(
            done.message.content[0],
            ContentPart::Thinking {
                text: "Okay, 2+2.".into(),
                signature: None
            }
        );
        assert_eq!(done.message.text(), "4");
    }

    #[test]
    fn history_with_tools_in_chat_shape() {
        let msgs = vec![
            ChatMessage::user("weather?"),
            ChatMessage {
                role: Role::Assistant,
                content: vec![ContentPart::ToolCall {
                    id: "c1".into(),
                    name: "w".into(),
                    arguments: json!({}),
                }],
            },
            ChatMessage {
                role: Role::User,
                content: vec![ContentPart::ToolResult {
                    media: Vec::new(),
                    call_id: "c1".into(),
                    content: "sunny".into(),
                    is_error: false,
                }],
            },
        ];
        let mut req = ChatRequest::new("llama3", msgs);
        req.system = Some("sys".into());
        let body = request_body(&req);
        let m = &body["messages"];
        assert_eq!(m[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"})
        );
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn attachments_go_as_image_url_and_file_parts_before_the_text() {
        let body = request_body(&ChatRequest::new("gpt-4o", vec![testing::attached_input()]));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5HIQ=="}},
                {"type": "file", "file": {"filename": "spec.pdf", "file_data": "data:application/pdf;base64,JVBERg=="}},
                {"type": "text", "text": "What is wrong here?"}
            ]}])
        );
    }

    #[test]
    fn a_tool_result_image_follows_the_tool_message_in_a_user_message() {
        let body = request_body(&ChatRequest::new("gpt-4o", testing::tool_shown_image()));
        assert_eq!(
            body["messages"].as_array().unwrap()[1..],
            [
                json!({"role": "tool", "tool_call_id": "call_1", "content": "shot.png: 2 x 2 PNG"}),
                json!({"role": "user", "content": [
                    {"type": "text", "text": "What the tool call call_1 showed:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5HIQ=="}}
                ]})
            ]
        );
    }

    #[test]
    fn an_error_chunk_and_a_cut_stream() {
        let mut d = SseDecoder::new(ChatCompletionsWire::default());
        let mut out = VecDeque::new();
        d.feed(
            b"data: {\"error\":{\"message\":\"model not loaded\"}}\n\n",
            &mut out,
        );
        assert!(
            matches!(out.back(), Some(Err(ProviderError::Stream { message, .. })) if message == "model not loaded")
        );
        let mut d = SseDecoder::new(ChatCompletionsWire::default());
        let mut out = VecDeque::new();
        d.feed(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hal\"}}]}\n\n",
            &mut out,
        );
        d.finish(&mut out);
        assert!(matches!(out.back(), Some(Err(ProviderError::Transport(_)))));
    }
}
