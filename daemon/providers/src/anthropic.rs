//! Anthropic's Messages API, streamed (`stream: true`).
//!
//! The wire events (`message_start`, `content_block_delta`, `message_delta`, ...) are parsed
//! into [`WireEvent`] and normalised into `ChatEvent`s. Text and thinking for now; tool use
//! and prompt caching slot into the same match.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use serde::Deserialize;
use serde_json::json;
use stepper_engine::{ChatEvent, ChatRequest, ChatStream, LlmProvider, ProviderError, Role};
use stepper_protocol::Usage;
use tokio_util::sync::CancellationToken;

use crate::sse::{SseEvent, SseParser};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
const NAME: &str = "anthropic";

pub struct Anthropic {
    http: reqwest::Client,
    url: reqwest::Url,
    key: String,
}

impl Anthropic {
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        key: String,
    ) -> Result<Anthropic, ProviderError> {
        let url = reqwest::Url::parse(&format!("{}/v1/messages", base_url.trim_end_matches('/')))
            .map_err(|e| {
            ProviderError::Config(format!(
                "ANTHROPIC_BASE_URL {base_url:?} is not a URL ({e}) — set it to something \
                     like https://api.anthropic.com"
            ))
        })?;
        Ok(Anthropic { http, url, key })
    }
}

/// The request body, in the Messages API's shape.
pub fn request_body(request: &ChatRequest) -> serde_json::Value {
    let messages: Vec<_> = request
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({ "role": role, "content": [{ "type": "text", "text": m.text }] })
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "messages": messages,
    });
    if let Some(system) = &request.system {
        let mut block = json!({ "type": "text", "text": system });
        if request.cache {
            block["cache_control"] = json!({ "type": "ephemeral" });
        }
        body["system"] = json!([block]);
    }
    body
}

impl LlmProvider for Anthropic {
    fn name(&self) -> &str {
        NAME
    }

    fn chat_stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let send = self
            .http
            .post(self.url.clone())
            .header("x-api-key", &self.key)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .json(&request_body(&request))
            .send();
        let machine = Machine {
            pending: Some(Box::pin(send)),
            body: None,
            decoder: Decoder::default(),
            queue: VecDeque::new(),
            finished: false,
            cancel,
        };
        futures::stream::unfold(machine, |mut m| async move {
            let item = m.next().await?;
            Some((item, m))
        })
        .boxed()
    }
}

type Pending =
    std::pin::Pin<Box<dyn std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send>>;

/// Drives one request: connect, then read chunks through the decoder.
struct Machine {
    pending: Option<Pending>,
    body: Option<BoxStream<'static, reqwest::Result<Bytes>>>,
    decoder: Decoder,
    queue: VecDeque<Result<ChatEvent, ProviderError>>,
    finished: bool,
    cancel: CancellationToken,
}

impl Machine {
    async fn next(&mut self) -> Option<Result<ChatEvent, ProviderError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.finished {
                return None;
            }
            if let Some(pending) = self.pending.take() {
                let response = tokio::select! {
                    () = self.cancel.cancelled() => return None,
                    r = pending => r,
                };
                match check_status(response).await {
                    Ok(r) => {
                        tracing::debug!(status = %r.status(), "anthropic response headers");
                        self.body = Some(r.bytes_stream().boxed());
                    }
                    Err(e) => {
                        self.finished = true;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            let body = self.body.as_mut()?;
            let chunk = tokio::select! {
                () = self.cancel.cancelled() => return None,
                c = body.next() => c,
            };
            match chunk {
                Some(Ok(bytes)) => self.decoder.feed(&bytes, &mut self.queue),
                Some(Err(e)) => {
                    self.finished = true;
                    return Some(Err(ProviderError::Transport(format!(
                        "the stream broke off: {}",
                        error_chain(&e)
                    ))));
                }
                None => {
                    self.decoder.finish(&mut self.queue);
                    self.finished = true;
                }
            }
            // After `message_stop` the body is read to its end (a few bytes), so the pooled
            // connection can carry the next request; a reused connection saves a TLS
            // handshake per turn. After an error it is dropped instead.
            if self.decoder.failed {
                self.finished = true;
            }
        }
    }
}

async fn check_status(
    response: reqwest::Result<reqwest::Response>,
) -> Result<reqwest::Response, ProviderError> {
    let response = response.map_err(|e| {
        let url = e.url().map(|u| u.to_string()).unwrap_or_default();
        let what = if e.is_timeout() {
            "timed out"
        } else {
            "failed"
        };
        ProviderError::Transport(format!(
            "connecting to {url} {what}: {} — check ANTHROPIC_BASE_URL and the network",
            root_cause(&e)
        ))
    })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let text = response.text().await.unwrap_or_default();
    let message = serde_json::from_str::<WireErrorBody>(&text)
        .map(|b| b.error.message)
        .unwrap_or_else(|_| text.chars().take(500).collect());
    let hint = match status.as_u16() {
        401 | 403 => " — check ANTHROPIC_API_KEY",
        404 => " — check the model name and ANTHROPIC_BASE_URL",
        _ => "",
    };
    Err(ProviderError::Http {
        provider: NAME.into(),
        status: status.as_u16(),
        message: format!("{message}{hint}"),
    })
}

/// The innermost error: for a failed request, the OS's own words ("Connection refused").
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Turns SSE bytes into normalised events. Separate from the HTTP machine so benchmarks and
/// tests can feed it bytes directly.
#[derive(Default)]
pub struct Decoder {
    sse: SseParser,
    events: Vec<SseEvent>,
    stop_reason: Option<String>,
    /// `message_stop` or an error was seen: the message is over.
    pub done: bool,
    /// The stream failed (an error event, malformed data, or cut short).
    pub failed: bool,
}

impl Decoder {
    pub fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<ChatEvent, ProviderError>>) {
        if self.done {
            return;
        }
        if let Err(e) = self.sse.feed(bytes, &mut self.events) {
            self.fail(out, ProviderError::Protocol(e.to_string()));
            return;
        }
        self.drain(out);
    }

    /// The body ended. Without `message_stop` the answer was cut short.
    pub fn finish(&mut self, out: &mut VecDeque<Result<ChatEvent, ProviderError>>) {
        if self.done {
            return;
        }
        if let Err(e) = self.sse.finish(&mut self.events) {
            self.fail(out, ProviderError::Protocol(e.to_string()));
            return;
        }
        self.drain(out);
        if !self.done {
            self.fail(
                out,
                ProviderError::Transport("the stream ended before the message was complete".into()),
            );
        }
    }

    fn fail(&mut self, out: &mut VecDeque<Result<ChatEvent, ProviderError>>, e: ProviderError) {
        self.done = true;
        self.failed = true;
        out.push_back(Err(e));
    }

    fn drain(&mut self, out: &mut VecDeque<Result<ChatEvent, ProviderError>>) {
        for sse in std::mem::take(&mut self.events) {
            if self.done {
                break;
            }
            let wire: WireEvent = match serde_json::from_str(&sse.data) {
                Ok(w) => w,
                Err(e) => {
                    let shown: String = sse.data.chars().take(200).collect();
                    self.fail(
                        out,
                        ProviderError::Protocol(format!(
                            "malformed {:?} event ({e}): {shown}",
                            sse.event
                        )),
                    );
                    break;
                }
            };
            match wire {
                WireEvent::MessageStart { message } => {
                    if let Some(u) = message.usage {
                        out.push_back(Ok(ChatEvent::Usage(u.into())));
                    }
                }
                WireEvent::ContentBlockStart { content_block } => match content_block {
                    ContentBlock::Text { text } if !text.is_empty() => {
                        out.push_back(Ok(ChatEvent::TextDelta(text)));
                    }
                    ContentBlock::Thinking { thinking } if !thinking.is_empty() => {
                        out.push_back(Ok(ChatEvent::ReasoningDelta(thinking)));
                    }
                    _ => {}
                },
                WireEvent::ContentBlockDelta { delta } => match delta {
                    Delta::TextDelta { text } => out.push_back(Ok(ChatEvent::TextDelta(text))),
                    Delta::ThinkingDelta { thinking } => {
                        out.push_back(Ok(ChatEvent::ReasoningDelta(thinking)));
                    }
                    Delta::Other => {}
                },
                WireEvent::MessageDelta { delta, usage } => {
                    if let Some(reason) = delta.stop_reason {
                        self.stop_reason = Some(reason);
                    }
                    if let Some(u) = usage {
                        out.push_back(Ok(ChatEvent::Usage(u.into())));
                    }
                }
                WireEvent::MessageStop => {
                    out.push_back(Ok(ChatEvent::Stop {
                        reason: self.stop_reason.take(),
                    }));
                    self.done = true;
                }
                WireEvent::Error { error } => {
                    let e = ProviderError::Stream {
                        provider: NAME.into(),
                        message: format!("{} ({})", error.message, error.kind),
                    };
                    self.fail(out, e);
                }
                WireEvent::ContentBlockStop | WireEvent::Ping | WireEvent::Unknown => {}
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        delta: Delta,
    },
    ContentBlockStop,
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
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
    #[serde(other)]
    Other,
}

// Named after the wire's own `text_delta` / `thinking_delta`.
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
struct WireError {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

#[derive(Deserialize)]
struct WireErrorBody {
    error: WireError,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(input: &str) -> Vec<Result<ChatEvent, ProviderError>> {
        let mut d = Decoder::default();
        let mut out = VecDeque::new();
        d.feed(input.as_bytes(), &mut out);
        d.finish(&mut out);
        out.into()
    }

    #[test]
    fn unknown_event_types_are_skipped() {
        let out = decode(
            "event: brand_new\ndata: {\"type\":\"brand_new\",\"x\":1}\n\n\
             event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(out, vec![Ok(ChatEvent::Stop { reason: None })]);
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
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
             \"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        );
        assert_eq!(out[0], Ok(ChatEvent::TextDelta("Hi".into())));
        assert!(matches!(&out[1], Err(ProviderError::Transport(m)) if m.contains("ended before")));
    }

    #[test]
    fn system_prompt_gets_a_cache_breakpoint_when_asked() {
        let req = ChatRequest {
            model: "m".into(),
            system: Some("sys".into()),
            messages: vec![],
            max_tokens: 5,
            cache: true,
        };
        let body = request_body(&req);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["stream"], true);
    }
}
