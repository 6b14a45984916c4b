//! OpenAI's Responses API, streamed — also the format of the ChatGPT Codex back end.
//!
//! [`ResponsesWire`] turns `response.*` events into `ChatEvent`s: output text, reasoning
//! summaries and the reasoning item with its encrypted content (passed back on the next
//! request, since nothing is stored server-side: `store: false`), function calls with
//! streamed arguments, and usage.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use stepper_engine::{
    ChatEvent, ChatRequest, ChatStream, ContentPart, HostedTool, LlmProvider, Media, ProviderError,
    Role, StopReason,
};
use stepper_protocol::Usage;
use tokio_util::sync::CancellationToken;

use crate::sse::SseEvent;
use crate::stream::{
    Endpoint, RetryPolicy, WireError, WireFormat, check_media, idle_timeout_from_env, parse_event,
    post_stream, refusal,
};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A Responses-API endpoint: OpenAI's own, or another that speaks the format.
pub struct OpenAi {
    endpoint: Arc<Endpoint>,
}

impl OpenAi {
    /// `base_url` ends before `/responses` (e.g. `https://api.openai.com/v1`).
    pub fn new(
        name: &str,
        http: reqwest::Client,
        base_url: &str,
        key: Option<&str>,
        extra_headers: &HeaderMap,
    ) -> Result<OpenAi, ProviderError> {
        let endpoint = endpoint(name, http, base_url, "responses", key, extra_headers)?;
        Ok(OpenAi {
            endpoint: Arc::new(endpoint),
        })
    }
}

/// An endpoint at `base_url/path` with a bearer key and the caller's headers.
pub(crate) fn endpoint(
    name: &str,
    http: reqwest::Client,
    base_url: &str,
    path: &str,
    key: Option<&str>,
    extra_headers: &HeaderMap,
) -> Result<Endpoint, ProviderError> {
    let url = reqwest::Url::parse(&format!("{}/{path}", base_url.trim_end_matches('/'))).map_err(
        |e| {
            ProviderError::Config(format!(
                "the {name} base URL {base_url:?} is not a URL ({e})"
            ))
        },
    )?;
    let mut headers = extra_headers.clone();
    if let Some(key) = key {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            ProviderError::Config(format!(
                "the {name} API key holds characters a header cannot"
            ))
        })?;
        value.set_sensitive(true);
        headers.insert("authorization", value);
    }
    headers.insert("accept", HeaderValue::from_static("text/event-stream"));
    Ok(Endpoint {
        provider: name.into(),
        http,
        url,
        headers,
        retry: RetryPolicy::default(),
        idle_timeout: idle_timeout_from_env(),
    })
}

impl LlmProvider for OpenAi {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }

    fn chat_stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        if let Err(e) = check_media(&request) {
            return refusal(e);
        }
        post_stream(
            Arc::clone(&self.endpoint),
            request_body(&request),
            ResponsesWire::default,
            cancel,
        )
    }
}

/// An image or PDF as the Responses API takes it: a data URL.
pub(crate) fn input_media(media: &Media) -> Value {
    let url = format!("data:{};base64,{}", media.about.media_type, media.base64());
    if media.is_image() {
        json!({ "type": "input_image", "image_url": url, "detail": "auto" })
    } else {
        json!({ "type": "input_file", "filename": media.about.name, "file_data": url })
    }
}

/// The request body in the Responses format.
pub fn request_body(request: &ChatRequest) -> Value {
    let mut input = Vec::new();
    for m in &request.messages {
        // A user's attachments go in one message with the text that follows them (the
        // words about them); each other text part is a message of its own, as Codex sends
        // its environment context.
        let mut said: Vec<Value> = Vec::new();
        for part in &m.content {
            if m.role == Role::User {
                match part {
                    ContentPart::Text { text } if !text.is_empty() => {
                        said.push(json!({ "type": "input_text", "text": text }));
                        flush_user(&mut input, &mut said);
                        continue;
                    }
                    ContentPart::Attachment { media } => {
                        said.push(input_media(media));
                        continue;
                    }
                    _ => flush_user(&mut input, &mut said),
                }
            }
            match (m.role, part) {
                (_, ContentPart::Text { text }) if text.is_empty() => {}
                (Role::User, ContentPart::Text { .. } | ContentPart::Attachment { .. }) => {}
                (Role::Assistant, ContentPart::Text { text }) => input.push(json!({
                    "type": "message", "role": "assistant",
                    "content": [{ "type": "output_text", "text": text }]
                })),
                (_, ContentPart::ToolCall { id, name, arguments }) => input.push(json!({
                    "type": "function_call", "call_id": id, "name": name,
                    "arguments": arguments.to_string()
                })),
                (_, ContentPart::ToolResult { call_id, content, media, .. }) if media.is_empty() => input.push(json!({
                    "type": "function_call_output", "call_id": call_id, "output": content
                })),
                // What a tool showed the model: its output as a list of text, images, files.
                (_, ContentPart::ToolResult { call_id, content, media, .. }) => {
                    let mut output = vec![json!({ "type": "input_text", "text": content })];
                    output.extend(media.iter().map(input_media));
                    input.push(json!({
                        "type": "function_call_output", "call_id": call_id, "output": output
                    }))
                }
                // An assistant never attaches anything.
                (Role::Assistant, ContentPart::Attachment { .. }) => {}
                // With `store: false` an item id refers to nothing: the reasoning goes back by
                // its encrypted content alone.
                (_, ContentPart::Reasoning { encrypted_content: Some(enc), summary, .. }) => input.push(json!({
                    "type": "reasoning",
                    "summary": summary.iter().map(|s| json!({ "type": "summary_text", "text": s })).collect::<Vec<_>>(),
                    "encrypted_content": enc
                })),
                // Unencrypted reasoning and another vendor's thinking cannot be replayed here.
                (_, ContentPart::Reasoning { .. } | ContentPart::Thinking { .. } | ContentPart::RedactedThinking { .. }) => {}
            }
        }
        flush_user(&mut input, &mut said);
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
        "max_output_tokens": request.max_tokens,
    });
    if let Some(system) = &request.system {
        body["instructions"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = json!(
            request
                .tools
                .iter()
                .map(|t| json!({
                    "type": "function", "name": t.name, "description": t.description,
                    "parameters": t.input_schema, "strict": false
                }))
                .collect::<Vec<_>>()
        );
    }
    for hosted in &request.hosted {
        let tool = match hosted {
            HostedTool::WebSearch => json!({ "type": "web_search" }),
        };
        match body["tools"].as_array_mut() {
            Some(tools) => tools.push(tool),
            None => body["tools"] = json!([tool]),
        }
    }
    if let Some(effort) = request.reasoning {
        body["reasoning"] = json!({ "effort": effort.as_str(), "summary": "auto" });
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    body
}

/// A user message of what was gathered, if anything was.
fn flush_user(input: &mut Vec<Value>, said: &mut Vec<Value>) {
    if !said.is_empty() {
        input.push(json!({ "role": "user", "content": std::mem::take(said) }));
    }
}

/// The Responses stream, event by event.
#[derive(Default)]
pub struct ResponsesWire {
    /// Output indexes of function calls still streaming their arguments.
    open_calls: BTreeSet<usize>,
    made_calls: bool,
}

impl WireFormat for ResponsesWire {
    fn on_event(
        &mut self,
        sse: &SseEvent,
        out: &mut VecDeque<ChatEvent>,
    ) -> Result<bool, WireError> {
        let event: Value = parse_event(sse)?;
        let kind = event["type"].as_str().unwrap_or(sse.event.as_str());
        let index = event["output_index"]
            .as_u64()
            .map(|i| i as usize)
            .unwrap_or(0);
        let malformed = |what: &str| {
            WireError::fatal(ProviderError::Protocol(format!(
                "malformed {kind} event: {what}"
            )))
        };
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = event["delta"]
                    .as_str()
                    .ok_or_else(|| malformed("no delta"))?;
                out.push_back(ChatEvent::TextDelta(delta.into()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = event["delta"]
                    .as_str()
                    .ok_or_else(|| malformed("no delta"))?;
                out.push_back(ChatEvent::ReasoningDelta(delta.into()));
            }
            "response.output_item.added" => {
                let item: Item = serde_json::from_value(event["item"].clone())
                    .map_err(|e| malformed(&e.to_string()))?;
                if let Item::FunctionCall { call_id, name, .. } = item {
                    self.open_calls.insert(index);
                    self.made_calls = true;
                    out.push_back(ChatEvent::ToolCallStart {
                        index,
                        id: call_id,
                        name,
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = event["delta"]
                    .as_str()
                    .ok_or_else(|| malformed("no delta"))?;
                out.push_back(ChatEvent::ToolCallDelta {
                    index,
                    arguments: delta.into(),
                });
            }
            "response.output_item.done" => {
                let item: Item = serde_json::from_value(event["item"].clone())
                    .map_err(|e| malformed(&e.to_string()))?;
                match item {
                    Item::FunctionCall { .. } if self.open_calls.remove(&index) => {
                        out.push_back(ChatEvent::ToolCallEnd { index });
                    }
                    // The server searched: said, since no tool of ours ran for it.
                    Item::WebSearchCall { action } => {
                        let query = action.and_then(|a| a.query).unwrap_or_default();
                        out.push_back(ChatEvent::Notice(format!("searched the web: {query}")));
                    }
                    Item::Reasoning {
                        id,
                        summary,
                        encrypted_content,
                    } => {
                        let summary = summary.into_iter().map(|s| s.text).collect();
                        out.push_back(ChatEvent::ReasoningPart(ContentPart::Reasoning {
                            id,
                            encrypted_content,
                            summary,
                        }));
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response: WireResponse = serde_json::from_value(event["response"].clone())
                    .map_err(|e| malformed(&e.to_string()))?;
                for index in std::mem::take(&mut self.open_calls) {
                    out.push_back(ChatEvent::ToolCallEnd { index });
                }
                if let Some(u) = response.usage {
                    out.push_back(ChatEvent::Usage(u.into()));
                }
                let reason = match (kind, response.incomplete_details.and_then(|d| d.reason)) {
                    ("response.incomplete", Some(r)) if r == "max_output_tokens" => {
                        StopReason::MaxTokens
                    }
                    ("response.incomplete", Some(r)) if r == "content_filter" => {
                        StopReason::Refusal
                    }
                    ("response.incomplete", Some(r)) => StopReason::Other(r),
                    _ if self.made_calls => StopReason::ToolUse,
                    _ => StopReason::EndTurn,
                };
                out.push_back(ChatEvent::Stop { reason });
                return Ok(true);
            }
            "response.failed" => {
                let error = &event["response"]["error"];
                return Err(stream_error(
                    error["code"].as_str(),
                    error["message"].as_str(),
                ));
            }
            "error" => {
                let error = if event["error"].is_object() {
                    &event["error"]
                } else {
                    &event
                };
                return Err(stream_error(
                    error["code"].as_str(),
                    error["message"].as_str(),
                ));
            }
            // response.created, .in_progress, .content_part.*, *.done without payload we need,
            // and event types added after this was written.
            _ => {}
        }
        Ok(false)
    }
}

fn stream_error(code: Option<&str>, message: Option<&str>) -> WireError {
    let code = code.unwrap_or("error");
    let retryable = matches!(
        code,
        "server_error" | "rate_limit_exceeded" | "server_is_overloaded" | "slow_down"
    );
    WireError {
        error: ProviderError::Stream {
            provider: "openai".into(),
            message: format!("{} ({code})", message.unwrap_or("no message")),
        },
        retryable,
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    FunctionCall {
        call_id: String,
        name: String,
    },
    Reasoning {
        id: String,
        #[serde(default)]
        summary: Vec<SummaryText>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// The hosted web search ran (not kept: the answer's text cites what it used).
    WebSearchCall {
        #[serde(default)]
        action: Option<SearchAction>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct SearchAction {
    #[serde(default)]
    query: Option<String>,
}

#[derive(Deserialize)]
struct SummaryText {
    text: String,
}

#[derive(Deserialize)]
struct WireResponse {
    usage: Option<WireUsage>,
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    /// OpenAI counts cached tokens inside `input_tokens`; stepper counts them apart, as
    /// Anthropic does, so cost and cache hit rate read the same for every provider.
    fn from(u: WireUsage) -> Usage {
        let cached = u.input_tokens_details.map(|d| d.cached_tokens).unwrap_or(0);
        Usage {
            input_tokens: u.input_tokens.saturating_sub(cached),
            output_tokens: u.output_tokens,
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::testing;
    use stepper_engine::{ChatMessage, ReasoningEffort, ToolSpec};

    fn fixture(name: &str) -> String {
        testing::fixture("openai", name)
    }

    fn decode(input: &str) -> Vec<Result<ChatEvent, ProviderError>> {
        testing::decode(ResponsesWire::default(), input)
    }

    fn accumulate(input: &str) -> stepper_engine::Accumulated {
        testing::accumulate(ResponsesWire::default(), input)
    }

    #[test]
    fn text_and_usage_with_cache() {
        let done = accumulate(&fixture("text.sse"));
        assert_eq!(done.message.text(), "Hello, world!");
        assert_eq!(done.stop, Some(StopReason::EndTurn));
        assert_eq!(
            (
                done.usage.input_tokens,
                done.usage.cache_read_tokens,
                done.usage.output_tokens
            ),
            (16, 1024, 5)
        );
    }

    #[test]
    fn the_hosted_web_search_is_offered_and_said_not_run() {
        let mut req = ChatRequest::new("gpt-5.1", vec![stepper_engine::ChatMessage::user("news?")]);
        req.hosted = vec![HostedTool::WebSearch];
        assert_eq!(request_body(&req)["tools"], json!([{"type": "web_search"}]));
        let stream = "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"rust 2024\"}}}\n\n\
            event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":1,\"delta\":\"Found it.\"}\n\n\
            event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n";
        let events: Vec<ChatEvent> = decode(stream).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            events[0],
            ChatEvent::Notice("searched the web: rust 2024".into())
        );
        assert_eq!(accumulate(stream).message.text(), "Found it.");
    }

    #[test]
    fn function_call_with_streamed_arguments() {
        let done = accumulate(&fixture("function_call.sse"));
        let calls: Vec<_> = done.message.tool_calls().collect();
        assert_eq!(
            calls,
            vec![(
                "call_AbC123",
                "get_weather",
                &json!({"location": "Paris, France"})
            )]
        );
        assert_eq!(done.stop, Some(StopReason::ToolUse));
    }

    #[test]
    fn reasoning_item_is_kept_and_sent_back_encrypted() {
        let done = accumulate(&fixture("reasoning.sse"));
        assert_eq!(
            done.message.content[0],
            ContentPart::Reasoning {
                id: "rs_6820f383d7c08191846711c5df8233bc".into(),
                encrypted_content: Some("gAAAAABoISQ24OyVRYbkYfukpG".into()),
                summary: vec![
                    "**Counting letters** The user asks how many r's are in strawberry.".into()
                ],
            }
        );
        assert_eq!(
            done.message.text(),
            "There are three r's in \"strawberry\"."
        );
        let mut req = ChatRequest::new(
            "o4-mini",
            vec![
                ChatMessage::user("q"),
                done.message,
                ChatMessage::user("why?"),
            ],
        );
        req.reasoning = Some(ReasoningEffort::High);
        req.system = Some("be brief".into());
        req.tools = vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        }];
        let body = request_body(&req);
        assert_eq!(body["input"][1]["type"], "reasoning");
        assert_eq!(
            body["input"][1]["encrypted_content"],
            "gAAAAABoISQ24OyVRYbkYfukpG"
        );
        assert!(
            body["input"][1].get("id").is_none(),
            "no item ids with store: false"
        );
        assert_eq!(body["input"][2]["content"][0]["type"], "output_text");
        assert_eq!(body["include"][0], "reasoning.encrypted_content");
        assert_eq!(body["reasoning"]["effort"], "high");
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(body["store"], false);
        assert_eq!(body["tools"][0]["type"], "function");
    }

    #[test]
    fn tool_results_go_back_as_function_call_output() {
        let msgs = vec![
            ChatMessage {
                role: Role::Assistant,
                content: vec![ContentPart::ToolCall {
                    id: "call_1".into(),
                    name: "ls".into(),
                    arguments: json!({"path": "."}),
                }],
            },
            ChatMessage {
                role: Role::User,
                content: vec![ContentPart::ToolResult {
                    media: Vec::new(),
                    call_id: "call_1".into(),
                    content: "a b".into(),
                    is_error: false,
                }],
            },
        ];
        let body = request_body(&ChatRequest::new("m", msgs));
        assert_eq!(
            body["input"][0],
            json!({"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{\"path\":\".\"}"})
        );
        assert_eq!(
            body["input"][1],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "a b"})
        );
    }

    #[test]
    fn attachments_go_as_input_image_and_input_file_with_the_text() {
        let body = request_body(&ChatRequest::new(
            "gpt-5.1",
            vec![testing::attached_input()],
        ));
        assert_eq!(
            body["input"],
            json!([{"role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,UE5HIQ==", "detail": "auto"},
                {"type": "input_file", "filename": "spec.pdf", "file_data": "data:application/pdf;base64,JVBERg=="},
                {"type": "input_text", "text": "What is wrong here?"}
            ]}])
        );
    }

    #[test]
    fn text_after_the_words_stays_a_message_of_its_own() {
        let mut input = testing::attached_input();
        input.content.push(ContentPart::Text {
            text: "<environment_context>".into(),
        });
        let body = request_body(&ChatRequest::new("gpt-5.1", vec![input]));
        assert_eq!(body["input"][0]["content"].as_array().unwrap().len(), 3);
        assert_eq!(
            body["input"][1],
            json!({"role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]})
        );
        assert_eq!(body["input"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_tool_result_shows_its_image_in_the_function_call_output() {
        let body = request_body(&ChatRequest::new("gpt-5.1", testing::tool_shown_image()));
        assert_eq!(
            body["input"][1],
            json!({"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "shot.png: 2 x 2 PNG"},
                {"type": "input_image", "image_url": "data:image/png;base64,UE5HIQ==", "detail": "auto"}
            ]})
        );
    }

    #[test]
    fn failures_in_the_stream() {
        let out = decode(
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n",
        );
        assert!(
            matches!(&out[..], [Err(ProviderError::Stream { message, .. })] if message.contains("boom"))
        );
        let out = decode(
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"par\"}\n\n",
        );
        assert!(matches!(
            &out[..],
            [
                Ok(ChatEvent::TextDelta(_)),
                Err(ProviderError::Transport(_))
            ]
        ));
        let out = decode("data: {nope\n\n");
        assert!(matches!(&out[..], [Err(ProviderError::Protocol(_))]));
    }
}
