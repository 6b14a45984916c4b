//! What every streaming provider shares: the request with retries before the first token,
//! the timeouts, and an SSE decoder generic over the wire format.
//!
//! A wire format only says how one SSE event becomes `ChatEvent`s ([`WireFormat`]); this
//! module owns the rest — connecting, retrying 429/5xx/overloaded with backoff and jitter
//! (honouring `retry-after`, capped, each retry a `Notice`), the idle-stream timeout, a body
//! cut short, cancellation — identically for every provider.
//!
//! **A retry never duplicates output**: only failures before the first content token are retried;
//! after that the turn fails and keeps what streamed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use reqwest::header::HeaderMap;
use stepper_engine::{ChatEvent, ChatRequest, ChatStream, ProviderError};
use tokio_util::sync::CancellationToken;

use crate::sse::{SseEvent, SseParser};

/// A failure inside a stream, and whether asking again could help.
#[derive(Debug)]
pub struct WireError {
    pub error: ProviderError,
    /// Overloaded or rate limited: retried when nothing was streamed yet.
    pub retryable: bool,
}

impl WireError {
    pub fn fatal(error: ProviderError) -> WireError {
        WireError {
            error,
            retryable: false,
        }
    }

    /// The body ended before the message was complete.
    pub fn cut_short() -> WireError {
        WireError::fatal(ProviderError::Transport(
            "the stream ended before the message was complete".into(),
        ))
    }
}

/// How one provider's SSE events become normalised events.
pub trait WireFormat: Send + 'static {
    /// Handle one event. `Ok(true)` when the message is complete.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ChatEvent>,
    ) -> Result<bool, WireError>;

    /// The body ended before `on_event` said the message was complete.
    fn on_end(&mut self, _out: &mut VecDeque<ChatEvent>) -> Result<(), WireError> {
        Err(WireError::cut_short())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecodeState {
    Running,
    Done,
    Failed,
}

/// SSE bytes in, `ChatEvent`s out, for any wire format. Usable without HTTP (benchmarks,
/// tests, replay).
pub struct SseDecoder<W> {
    sse: SseParser,
    pending: Vec<SseEvent>,
    /// What the wire format made of one SSE event; kept so no chunk allocates it anew.
    events: VecDeque<ChatEvent>,
    wire: W,
    state: DecodeState,
    /// The failure that ended the stream, when it may be retried.
    retryable: bool,
}

impl<W: WireFormat> SseDecoder<W> {
    pub fn new(wire: W) -> SseDecoder<W> {
        SseDecoder {
            sse: SseParser::new(),
            pending: Vec::new(),
            events: VecDeque::new(),
            wire,
            state: DecodeState::Running,
            retryable: false,
        }
    }

    /// The failure that ended the stream may be retried (it came before any content).
    pub(crate) fn is_retryable(&self) -> bool {
        self.retryable
    }

    pub fn is_done(&self) -> bool {
        self.state == DecodeState::Done
    }

    pub fn is_failed(&self) -> bool {
        self.state == DecodeState::Failed
    }

    pub fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<ChatEvent, ProviderError>>) {
        if self.state != DecodeState::Running {
            return;
        }
        if let Err(e) = self.sse.feed(bytes, &mut self.pending) {
            return self.fail(
                out,
                WireError::fatal(ProviderError::Protocol(e.to_string())),
            );
        }
        self.drain(out);
    }

    pub fn finish(&mut self, out: &mut VecDeque<Result<ChatEvent, ProviderError>>) {
        if self.state != DecodeState::Running {
            return;
        }
        if let Err(e) = self.sse.finish(&mut self.pending) {
            return self.fail(
                out,
                WireError::fatal(ProviderError::Protocol(e.to_string())),
            );
        }
        self.drain(out);
        if self.state == DecodeState::Running {
            let result = self.wire.on_end(&mut self.events);
            out.extend(self.events.drain(..).map(Ok));
            match result {
                Ok(()) => self.state = DecodeState::Done,
                Err(e) => self.fail(out, e),
            }
        }
    }

    fn fail(&mut self, out: &mut VecDeque<Result<ChatEvent, ProviderError>>, e: WireError) {
        self.state = DecodeState::Failed;
        self.retryable = e.retryable;
        out.push_back(Err(e.error));
    }

    fn drain(&mut self, out: &mut VecDeque<Result<ChatEvent, ProviderError>>) {
        // Taken and put back, so its allocation serves every chunk.
        let mut pending = std::mem::take(&mut self.pending);
        for sse in pending.drain(..) {
            let result = self.wire.on_event(&sse, &mut self.events);
            out.extend(self.events.drain(..).map(Ok));
            match result {
                Ok(false) => {}
                Ok(true) => {
                    self.state = DecodeState::Done;
                    break;
                }
                Err(e) => {
                    self.fail(out, e);
                    break;
                }
            }
        }
        self.pending = pending;
    }
}

/// An event's JSON as the wire type `T`, or a clear error quoting the start of it.
pub fn parse_event<T: serde::de::DeserializeOwned>(sse: &SseEvent) -> Result<T, WireError> {
    serde_json::from_str(&sse.data).map_err(|e| {
        let shown: String = sse.data.chars().take(200).collect();
        WireError::fatal(ProviderError::Protocol(format!(
            "malformed {:?} event ({e}): {shown}",
            sse.event
        )))
    })
}

/// Helpers the wire formats' tests share: fixtures, and bytes through a decoder.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// `tests/fixtures/<dir>/<name>` of the workspace.
    pub fn fixture(dir: &str, name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(dir)
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Feed `input` in odd-sized chunks, then end the stream.
    pub fn decode<W: WireFormat>(wire: W, input: &str) -> Vec<Result<ChatEvent, ProviderError>> {
        let mut d = SseDecoder::new(wire);
        let mut out = VecDeque::new();
        for chunk in input.as_bytes().chunks(37) {
            d.feed(chunk, &mut out);
        }
        d.finish(&mut out);
        out.into()
    }

    /// An attachment with its bytes, as a session hands it to a provider.
    pub fn media(name: &str, media_type: &str, bytes: &[u8]) -> stepper_engine::Media {
        let kind = if media_type == "application/pdf" {
            stepper_protocol::AttachmentKind::Document
        } else {
            stepper_protocol::AttachmentKind::Image
        };
        let about = stepper_protocol::Attachment {
            kind,
            media_type: media_type.into(),
            name: name.into(),
            size: bytes.len() as u64,
            sha256: "00".into(),
            width: None,
            height: None,
            pages: None,
        };
        stepper_engine::Media::new(about, bytes.into())
    }

    /// A user's input as the session builds it: a picture (`PNG!`, `UE5HIQ==` in base64)
    /// and a PDF (`%PDF`, `JVBERg==`) before the text.
    pub fn attached_input() -> stepper_engine::ChatMessage {
        use stepper_engine::ContentPart;
        stepper_engine::ChatMessage {
            role: stepper_engine::Role::User,
            content: vec![
                ContentPart::Attachment {
                    media: media("shot.png", "image/png", b"PNG!"),
                },
                ContentPart::Attachment {
                    media: media("spec.pdf", "application/pdf", b"%PDF"),
                },
                ContentPart::Text {
                    text: "What is wrong here?".into(),
                },
            ],
        }
    }

    /// A tool call (`read` of a picture) and its result carrying the picture.
    pub fn tool_shown_image() -> Vec<stepper_engine::ChatMessage> {
        use stepper_engine::ContentPart;
        vec![
            stepper_engine::ChatMessage {
                role: stepper_engine::Role::Assistant,
                content: vec![ContentPart::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "shot.png"}),
                }],
            },
            stepper_engine::ChatMessage {
                role: stepper_engine::Role::User,
                content: vec![ContentPart::ToolResult {
                    call_id: "call_1".into(),
                    content: "shot.png: 2 x 2 PNG".into(),
                    is_error: false,
                    media: vec![media("shot.png", "image/png", b"PNG!")],
                }],
            },
        ]
    }

    /// The message the shared accumulator makes of `input`.
    pub fn accumulate<W: WireFormat>(wire: W, input: &str) -> stepper_engine::Accumulated {
        let mut acc = stepper_engine::MessageAccumulator::new();
        for e in decode(wire, input) {
            acc.push(&e.unwrap()).unwrap();
        }
        acc.finish().unwrap()
    }
}

/// When and how often to ask again.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; doubled per attempt, with full jitter.
    pub base: Duration,
    /// The longest backoff, and the longest `retry-after` honoured.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        let base = std::env::var("STEPPER_RETRY_BASE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_millis(500));
        RetryPolicy {
            max_retries: 4,
            base,
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `attempt` (1-based): the server's `retry-after` when it gave one
    /// (capped), else exponential backoff with full jitter.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_delay);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let ceiling = exp.min(self.max_delay);
        ceiling.mul_f64(jitter())
    }
}

/// A random factor in [0.5, 1.0): full jitter, but never a busy retry.
fn jitter() -> f64 {
    let mut bytes = [0u8; 8];
    let r = getrandom::fill(&mut bytes)
        .map(|()| u64::from_le_bytes(bytes))
        .unwrap_or(0x9e37_79b9);
    0.5 + (r >> 11) as f64 / (1u64 << 53) as f64 / 2.0
}

/// The server's wish, from `retry-after-ms` (OpenAI) or `retry-after` (seconds).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
}

/// Where a provider's requests go.
pub struct Endpoint {
    /// For messages: `anthropic`, `openai`, ...
    pub provider: String,
    pub http: reqwest::Client,
    pub url: reqwest::Url,
    /// Authentication and format headers.
    pub headers: HeaderMap,
    pub retry: RetryPolicy,
    /// The longest wait for response headers or for the next bytes of the body.
    pub idle_timeout: Duration,
}

/// The idle timeout from `STEPPER_STREAM_IDLE_TIMEOUT_MS`, default 5 minutes (reasoning
/// models can think quietly for a long while).
pub fn idle_timeout_from_env() -> Duration {
    std::env::var("STEPPER_STREAM_IDLE_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(300))
}

/// A duration as a person reads it, never rounded down to nothing: `0.3s`, `5s`, `300s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.1}s")
    }
}

/// POST `body` and stream the answer through `make_wire`'s format.
/// Refuses a request holding an attachment whose bytes were never loaded: sent, it would
/// go with empty base64 and the model would answer about nothing.
pub fn check_media(request: &ChatRequest) -> Result<(), ProviderError> {
    match request
        .messages
        .iter()
        .flat_map(|m| m.media())
        .find(|m| m.needs_bytes())
    {
        Some(m) => Err(ProviderError::Config(format!(
            "an attachment's bytes were not loaded ({}): this is a bug in stepper, please \
             report it; nothing was sent",
            m.about.label()
        ))),
        None => Ok(()),
    }
}

/// A stream of one error: a request refused before anything was sent.
pub fn refusal(error: ProviderError) -> ChatStream {
    futures::stream::iter([Err(error)]).boxed()
}

pub fn post_stream<W, F>(
    endpoint: Arc<Endpoint>,
    body: serde_json::Value,
    make_wire: F,
    cancel: CancellationToken,
) -> ChatStream
where
    W: WireFormat,
    F: Fn() -> W + Send + 'static,
{
    let machine = Machine {
        endpoint,
        body: Bytes::from(serde_json::to_vec(&body).unwrap_or_default()),
        make_wire: Box::new(move || SseDecoder::new(make_wire())),
        decoder: None,
        body_stream: None,
        queue: VecDeque::new(),
        attempt: 0,
        streamed_content: false,
        finished: false,
        cancel,
    };
    futures::stream::unfold(machine, |mut m| async move {
        let item = m.next().await?;
        Some((item, m))
    })
    .boxed()
}

type MakeDecoder<W> = Box<dyn Fn() -> SseDecoder<W> + Send>;

struct Machine<W> {
    endpoint: Arc<Endpoint>,
    body: Bytes,
    make_wire: MakeDecoder<W>,
    decoder: Option<SseDecoder<W>>,
    body_stream: Option<BoxStream<'static, reqwest::Result<Bytes>>>,
    queue: VecDeque<Result<ChatEvent, ProviderError>>,
    /// Attempts made so far.
    attempt: u32,
    /// Whether content (not just usage) was handed out: past that, no retry.
    streamed_content: bool,
    finished: bool,
    cancel: CancellationToken,
}

enum Outcome {
    Ok(reqwest::Response),
    Retry {
        why: String,
        after: Option<Duration>,
    },
    Fail(ProviderError),
}

impl<W: WireFormat> Machine<W> {
    async fn next(&mut self) -> Option<Result<ChatEvent, ProviderError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if matches!(
                    item,
                    Ok(ChatEvent::TextDelta(_)
                        | ChatEvent::ReasoningDelta(_)
                        | ChatEvent::ToolCallStart { .. }
                        | ChatEvent::ReasoningPart(_))
                ) {
                    self.streamed_content = true;
                }
                return Some(item);
            }
            if self.finished || self.cancel.is_cancelled() {
                return None;
            }
            let Some(body) = self.body_stream.as_mut() else {
                self.connect().await;
                continue;
            };
            let decoder = self.decoder.as_mut()?;
            // Once the message is complete, the rest of the body (a few bytes) is read so the
            // connection returns to the pool; a server that holds it open is not waited for.
            let limit = if decoder.is_done() {
                Duration::from_secs(1)
            } else {
                self.endpoint.idle_timeout
            };
            let chunk = tokio::select! {
                () = self.cancel.cancelled() => return None,
                c = tokio::time::timeout(limit, body.next()) => c,
            };
            match chunk {
                Err(_) if decoder.is_done() => {
                    self.finished = true;
                    return None;
                }
                Err(_) => {
                    self.finished = true;
                    return Some(Err(ProviderError::Transport(format!(
                        "{} sent no data for {}: the stream was given up; if it is only slow, \
                         raise STEPPER_STREAM_IDLE_TIMEOUT_MS (now {})",
                        self.endpoint.provider,
                        seconds(self.endpoint.idle_timeout),
                        self.endpoint.idle_timeout.as_millis()
                    ))));
                }
                Ok(Some(Ok(bytes))) => decoder.feed(&bytes, &mut self.queue),
                Ok(Some(Err(e))) => {
                    self.finished = true;
                    return Some(Err(ProviderError::Transport(format!(
                        "the stream broke off: {}",
                        root_cause(&e)
                    ))));
                }
                Ok(None) => {
                    decoder.finish(&mut self.queue);
                    self.finished = true;
                }
            }
            if decoder.is_failed() {
                if decoder.is_retryable()
                    && !self.streamed_content
                    && self.attempt <= self.endpoint.retry.max_retries
                {
                    // Overloaded before the first token: drop the error and ask again.
                    let why = match self.queue.iter().rev().find_map(|i| i.as_ref().err()) {
                        Some(e) => e.to_string(),
                        None => "the provider is overloaded".into(),
                    };
                    self.queue.retain(|i| i.is_ok());
                    self.body_stream = None;
                    self.finished = false;
                    if let Some(wait) = self.backoff(&why, None) {
                        self.queue.push_back(Ok(ChatEvent::Notice(wait.0)));
                        if !self.sleep(wait.1).await {
                            return None;
                        }
                    }
                } else {
                    self.finished = true;
                }
            }
        }
    }

    /// Make the next attempt; on success the body stream is set, else an error or a
    /// notice-and-wait is queued.
    async fn connect(&mut self) {
        loop {
            self.attempt += 1;
            let request = self
                .endpoint
                .http
                .post(self.endpoint.url.clone())
                .headers(self.endpoint.headers.clone())
                .header("content-type", "application/json")
                .body(self.body.clone());
            let endpoint = Arc::clone(&self.endpoint);
            let outcome = tokio::select! {
                () = self.cancel.cancelled() => {
                    self.finished = true;
                    return;
                }
                r = tokio::time::timeout(self.endpoint.idle_timeout, request.send()) => match r {
                    // A server that takes the request and says nothing would say nothing
                    // again: one wait is given, not one per attempt.
                    Err(_) => Outcome::Fail(ProviderError::Transport(format!(
                        "{} took the request but sent no answer in {} — given up; if it is \
                         only slow, raise STEPPER_STREAM_IDLE_TIMEOUT_MS (now {})",
                        self.endpoint.provider,
                        seconds(self.endpoint.idle_timeout),
                        self.endpoint.idle_timeout.as_millis()
                    ))),
                    Ok(r) => classify(&endpoint, r).await,
                },
            };
            match outcome {
                Outcome::Ok(response) => {
                    tracing::debug!(provider = %self.endpoint.provider, status = %response.status(), attempt = self.attempt, "response headers");
                    self.body_stream = Some(response.bytes_stream().boxed());
                    self.decoder = Some((self.make_wire)());
                    return;
                }
                Outcome::Fail(e) => {
                    self.finished = true;
                    self.queue.push_back(Err(e));
                    return;
                }
                Outcome::Retry { why, after } => match self.backoff(&why, after) {
                    Some((notice, wait)) => {
                        // The notice goes out before the wait, so the user sees why it is quiet.
                        self.queue.push_back(Ok(ChatEvent::Notice(notice)));
                        if !self.sleep(wait).await {
                            return;
                        }
                        if !self.queue.is_empty() {
                            return;
                        }
                    }
                    None => {
                        self.finished = true;
                        self.queue.push_back(Err(ProviderError::Transport(format!(
                            "{why}; gave up after {} attempts",
                            self.attempt
                        ))));
                        return;
                    }
                },
            }
        }
    }

    /// The notice and the wait for the next attempt, or `None` when attempts are used up.
    fn backoff(&self, why: &str, after: Option<Duration>) -> Option<(String, Duration)> {
        if self.attempt > self.endpoint.retry.max_retries {
            return None;
        }
        let wait = self.endpoint.retry.delay(self.attempt, after);
        let notice = format!(
            "{why}; retrying in {:.1}s (attempt {} of {})",
            wait.as_secs_f64(),
            self.attempt + 1,
            self.endpoint.retry.max_retries + 1
        );
        tracing::info!(provider = %self.endpoint.provider, %notice, "retrying");
        Some((notice, wait))
    }

    /// Sleep unless cancelled; false when cancelled.
    async fn sleep(&mut self, wait: Duration) -> bool {
        tokio::select! {
            () = self.cancel.cancelled() => {
                self.finished = true;
                false
            }
            () = tokio::time::sleep(wait) => true,
        }
    }
}

async fn classify(endpoint: &Endpoint, response: reqwest::Result<reqwest::Response>) -> Outcome {
    let provider = &endpoint.provider;
    let response = match response {
        Ok(r) => r,
        Err(e) => {
            let url = e.url().map(|u| u.to_string()).unwrap_or_default();
            if refused(&e) {
                // Nobody listens there: asking again in a second will not change that.
                return Outcome::Fail(ProviderError::Transport(format!(
                    "connecting to {url} failed: connection refused — is the server running, and \
                     is the base URL right?"
                )));
            }
            let what = if e.is_timeout() {
                "timed out"
            } else {
                "failed"
            };
            return Outcome::Retry {
                why: format!("connecting to {url} {what}: {}", root_cause(&e)),
                after: None,
            };
        }
    };
    let status = response.status();
    if status.is_success() {
        return Outcome::Ok(response);
    }
    let after = retry_after(response.headers());
    let text = response.text().await.unwrap_or_default();
    let message = error_message(&text);
    let code = status.as_u16();
    let retryable =
        code == 429 || code == 408 || code == 409 || (500..600).contains(&code) && code != 501;
    if retryable {
        return Outcome::Retry {
            why: format!("{provider} answered {code} ({message})"),
            after,
        };
    }
    let hint = match code {
        401 | 403 => " — check the API key (or sign in again)",
        404 => " — check the model name and the base URL",
        _ => "",
    };
    Outcome::Fail(ProviderError::Http {
        provider: provider.clone(),
        status: code,
        message: format!("{message}{hint}"),
    })
}

/// The message inside an error body, in the shapes providers use
/// (`{"error": {"message": ...}}`, `{"error": "..."}`, `{"message": ...}`), else the text.
pub fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = &v["error"];
            e["message"]
                .as_str()
                .or(e.as_str())
                .or(v["message"].as_str())
                .or(v["detail"].as_str())
                .map(str::to_string)
        });
    from_json.unwrap_or_else(|| {
        let t: String = body.trim().chars().take(300).collect();
        if t.is_empty() { "no details".into() } else { t }
    })
}

/// Whether the connection was refused outright (no server on that port).
fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The innermost error: for a failed request, the OS's own words ("Connection refused").
pub fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every provider that speaks HTTP, pointed at a listener that counts as a connection
    /// anything that reaches it.
    fn providers(url: &str) -> Vec<Box<dyn stepper_engine::LlmProvider>> {
        let http = reqwest::Client::new();
        let none = HeaderMap::new();
        let oauth = crate::auth::CodexOAuth::new(
            reqwest::Url::parse(url).unwrap(),
            "http://localhost:1455/auth/callback",
        );
        vec![
            Box::new(crate::anthropic::Anthropic::new(http.clone(), url, "k", &none).unwrap()),
            Box::new(
                crate::openai::OpenAi::new("openai", http.clone(), url, Some("k"), &none).unwrap(),
            ),
            Box::new(
                crate::openai_chat::OpenAiChat::new("local", http.clone(), url, None, &none)
                    .unwrap(),
            ),
            Box::new(crate::codex::Codex::new(
                http,
                url.into(),
                std::sync::Arc::new(oauth),
                std::path::PathBuf::from("/nonexistent/credentials.json"),
            )),
        ]
    }

    #[tokio::test]
    async fn an_attachment_without_its_bytes_is_refused_before_anything_is_sent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut input = testing::attached_input();
        // As a context read back from the store holds it: the attachment named, no bytes.
        for media in input.media_mut().skip(1) {
            media.data = None;
        }
        for provider in providers(&url) {
            let request = ChatRequest::new("m", vec![input.clone()]);
            let out: Vec<_> = provider
                .chat_stream(request, CancellationToken::new())
                .collect()
                .await;
            match &out[..] {
                [Err(ProviderError::Config(m))] => assert_eq!(
                    m,
                    "an attachment's bytes were not loaded ([document: spec.pdf 4 B]): this is \
                     a bug in stepper, please report it; nothing was sent",
                    "{}",
                    provider.name()
                ),
                other => panic!("{}: {other:?}", provider.name()),
            }
        }
        // The streams have ended: a connection made would be waiting here.
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
        assert!(check_media(&ChatRequest::new("m", vec![testing::attached_input()])).is_ok());
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let policy = RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(100),
            max_delay: Duration::from_secs(60),
        };
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(60)
        );
        for attempt in 1..6 {
            let d = policy.delay(attempt, None);
            let ceiling = Duration::from_millis(100) * (1 << (attempt - 1));
            assert!(d >= ceiling / 2 && d < ceiling, "attempt {attempt}: {d:?}");
        }
        let mut h = HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    }

    #[test]
    fn error_bodies_in_every_shape() {
        assert_eq!(
            error_message(r#"{"type":"error","error":{"type":"x","message":"Overloaded"}}"#),
            "Overloaded"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(""), "no details");
    }
}
