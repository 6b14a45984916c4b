//! The legacy HTTP+SSE transport (protocol 2024-11-05), which the SDK dropped and many
//! servers still speak: a GET opens an event stream whose first `endpoint` event names where
//! to POST messages; the server's messages arrive on the stream as `message` events.

use std::collections::BTreeMap;
use std::future::Future;

use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use stepper_providers::sse::SseParser;
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SseTransportError(String);

pub struct SseTransport {
    client: reqwest::Client,
    /// Where messages are posted, as the stream named it.
    endpoint: reqwest::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl SseTransport {
    /// Open the event stream at `url` and wait for the endpoint it names (the caller bounds
    /// the wait).
    pub async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<SseTransport, SseTransportError> {
        let fail = |message: String| SseTransportError(message);
        let base = reqwest::Url::parse(url).map_err(|e| fail(format!("`url` {url:?}: {e}")))?;
        let map: HeaderMap = crate::http::headers(headers)
            .map_err(fail)?
            .into_iter()
            .collect();
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| fail(format!("no HTTP client: {e}")))?;
        let response = client
            .get(base.clone())
            .headers(map.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| fail(format!("cannot open its event stream: {e}")))?;
        if !response.status().is_success() {
            return Err(fail(format!(
                "its event stream answered {} — check `url`",
                response.status()
            )));
        }
        let (messages, incoming) = mpsc::channel(64);
        let (named, endpoint) = oneshot::channel();
        let reader = tokio::spawn(read_stream(response, named, messages));
        let endpoint = endpoint.await.map_err(|_| {
            fail("the event stream ended before it named its message endpoint".into())
        })?;
        let endpoint = base
            .join(endpoint.trim())
            .map_err(|e| fail(format!("its message endpoint {endpoint:?}: {e}")))?;
        if endpoint.origin() != base.origin() {
            reader.abort();
            return Err(fail(format!(
                "its message endpoint {endpoint} is on another origin than {base}: refused"
            )));
        }
        Ok(SseTransport {
            client,
            endpoint,
            headers: map,
            incoming,
            reader,
        })
    }
}

/// Events of the stream: the first `endpoint` to `named`, messages to `messages`, until the
/// stream or the transport ends.
async fn read_stream(
    response: reqwest::Response,
    named: oneshot::Sender<String>,
    messages: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut named = Some(named);
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        if let Err(e) = parser.feed(&chunk, &mut events) {
            tracing::warn!("MCP event stream: {e}");
            return;
        }
        for event in events.drain(..) {
            match event.event.as_str() {
                "endpoint" => {
                    if let Some(named) = named.take() {
                        let _ = named.send(event.data);
                    }
                }
                "" | "message" => match serde_json::from_str(&event.data) {
                    Ok(message) => {
                        if messages.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!("MCP event stream: not a message ({e})"),
                },
                _ => {}
            }
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseTransportError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| SseTransportError(format!("cannot post a message: {e}")))?;
            if !response.status().is_success() {
                return Err(SseTransportError(format!(
                    "a posted message was answered {}",
                    response.status()
                )));
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
