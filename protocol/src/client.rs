//! The client's side of the transport: connect, `initialize`, typed calls, and an event
//! stream that never misses an event.
//!
//! jsonrpsee's client closes a subscription whose buffer fills (a slow reader). [`EventStream`]
//! notices, resubscribes from the last seq it delivered and skips what it has seen, so a slow
//! reader gets every event once and slows nobody else.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::tokio::{Stream, prelude::*};
use jsonrpsee::client_transport::ws::{Url, WsTransportClientBuilder};
use jsonrpsee::core::client::{
    Client, ClientBuilder, ClientT, Error as RpcClientError, SubscriptionClientT,
};
use jsonrpsee::core::traits::ToRpcParams;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::event::{EventEnvelope, RawEnvelope};
use crate::methods::{
    ClientInfo, Initialize, InitializeParams, InitializeResponse, Method, SessionSubscribe,
    SessionSubscribeParams, Subscription,
};
use crate::session::SessionId;
use crate::transport::{MAX_MESSAGE_BYTES, WS_URI, socket_name};
use crate::version::PROTOCOL_VERSION;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("daemon not running at {socket} — start it with 'stepper daemon start'")]
    NotRunning { socket: PathBuf },
    #[error("cannot connect to the daemon at {socket}: {source}")]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("the daemon at {socket} did not complete the handshake: {message}")]
    Handshake { socket: PathBuf, message: String },
    #[error("{message}")]
    Rpc {
        code: i32,
        message: String,
        /// `data.kind` of a stepper error (absent for the library's own errors).
        kind: Option<crate::error::ErrorKind>,
        /// `data.hint`: what to do about it, beyond the message.
        hint: Option<String>,
    },
    #[error(
        "the request is {size} bytes; a message to the daemon is at most {limit} bytes — put \
         long material in a file and refer to it"
    )]
    TooLarge { size: usize, limit: usize },
    #[error("lost the connection to the daemon — it may have stopped; run the command again")]
    Disconnected,
    #[error("the daemon sent something this client cannot read ({0}) — are both up to date?")]
    Decode(String),
    #[error("the daemon did not answer in time ({0:?})")]
    Timeout(Duration),
}

impl ClientError {
    /// The JSON-RPC error code, when the daemon answered with an error.
    pub fn code(&self) -> Option<i32> {
        match self {
            ClientError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// What the daemon said to do about it, beyond the message.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ClientError::Rpc { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// `data.kind` of the daemon's error.
    pub fn kind(&self) -> Option<crate::error::ErrorKind> {
        match self {
            ClientError::Rpc { kind, .. } => *kind,
            _ => None,
        }
    }

    /// Whether nobody is listening on the socket (absent, or left behind by a dead daemon).
    pub fn is_not_running(&self) -> bool {
        matches!(self, ClientError::NotRunning { .. })
    }
}

fn from_rpc(e: RpcClientError) -> ClientError {
    match e {
        RpcClientError::Call(obj) => {
            let data = obj
                .data()
                .and_then(|d| serde_json::from_str::<crate::error::ErrorData>(d.get()).ok());
            ClientError::Rpc {
                code: obj.code(),
                message: obj.message().to_string(),
                kind: data.as_ref().map(|d| d.kind),
                hint: data.and_then(|d| d.hint),
            }
        }
        RpcClientError::RestartNeeded(_) | RpcClientError::Transport(_) => {
            ClientError::Disconnected
        }
        RpcClientError::ParseError(e) => ClientError::Decode(e.to_string()),
        RpcClientError::RequestTimeout => ClientError::Timeout(Duration::ZERO),
        other => ClientError::Decode(other.to_string()),
    }
}

/// Serialize typed params as a JSON-RPC params object.
struct Params(Box<RawValue>);

impl ToRpcParams for Params {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(Some(self.0))
    }
}

fn params<T: Serialize>(value: &T) -> Result<Params, ClientError> {
    let raw =
        serde_json::value::to_raw_value(value).map_err(|e| ClientError::Decode(e.to_string()))?;
    // Room for the envelope around the params; a message over the limit would never reach
    // the daemon (the connection would just drop), so it is refused here with the numbers.
    let limit = MAX_MESSAGE_BYTES as usize - 1024;
    if raw.get().len() > limit {
        return Err(ClientError::TooLarge {
            size: raw.get().len(),
            limit,
        });
    }
    Ok(Params(raw))
}

/// How a client connects; the defaults suit every real client.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Notifications buffered per subscription before jsonrpsee closes it as lagged.
    pub subscription_buffer: usize,
    pub request_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            subscription_buffer: 4096,
            request_timeout: Duration::from_secs(120),
        }
    }
}

/// A connected, initialized client. Cheap to clone.
#[derive(Clone)]
pub struct DaemonClient {
    rpc: Arc<Client>,
    daemon: InitializeResponse,
}

impl DaemonClient {
    pub async fn connect(socket: &Path, client: ClientInfo) -> Result<DaemonClient, ClientError> {
        DaemonClient::connect_with(socket, client, ConnectOptions::default()).await
    }

    pub async fn connect_with(
        socket: &Path,
        client: ClientInfo,
        options: ConnectOptions,
    ) -> Result<DaemonClient, ClientError> {
        let rpc = connect_raw(socket, &options).await?;
        let init = InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            client,
        };
        let daemon = rpc
            .request::<InitializeResponse, _>(Initialize::NAME, params(&init)?)
            .await
            .map_err(from_rpc)?;
        Ok(DaemonClient {
            rpc: Arc::new(rpc),
            daemon,
        })
    }

    /// What the daemon said about itself in `initialize`.
    pub fn daemon(&self) -> &InitializeResponse {
        &self.daemon
    }

    pub fn is_connected(&self) -> bool {
        self.rpc.is_connected()
    }

    /// Call a method of the table.
    pub async fn call<M: Method>(&self, p: M::Params) -> Result<M::Response, ClientError> {
        self.rpc
            .request::<M::Response, _>(M::NAME, params(&p)?)
            .await
            .map_err(from_rpc)
    }

    /// Follow a session's events after `after_seq`: first those already stored, then live.
    pub async fn subscribe_events(
        &self,
        session_id: &SessionId,
        after_seq: u64,
    ) -> Result<EventStream, ClientError> {
        self.subscribe_with(session_id, after_seq, false).await
    }

    /// Like [`DaemonClient::subscribe_events`], leaving the streamed pieces of completed
    /// turns out of what is read back (`skipFinishedDeltas`): history fast, for a view.
    pub async fn subscribe_history(
        &self,
        session_id: &SessionId,
        after_seq: u64,
    ) -> Result<EventStream, ClientError> {
        self.subscribe_with(session_id, after_seq, true).await
    }

    async fn subscribe_with(
        &self,
        session_id: &SessionId,
        after_seq: u64,
        skip_finished_deltas: bool,
    ) -> Result<EventStream, ClientError> {
        let sub = subscribe(&self.rpc, session_id, after_seq, skip_finished_deltas).await?;
        Ok(EventStream {
            rpc: Arc::clone(&self.rpc),
            session_id: session_id.clone(),
            sub,
            pending: std::collections::VecDeque::new(),
            last_seq: after_seq,
            resubscribes: 0,
            skip_finished_deltas,
        })
    }
}

/// Open the socket and do the WebSocket handshake, without `initialize`. Tests use this to
/// speak to the daemon as a misbehaving client would.
pub async fn connect_raw(socket: &Path, options: &ConnectOptions) -> Result<Client, ClientError> {
    let stream = connect_stream(socket).await?;
    let url = Url::parse(WS_URI).map_err(|e| ClientError::Decode(e.to_string()))?;
    let (tx, rx) = WsTransportClientBuilder::default()
        .max_request_size(MAX_MESSAGE_BYTES)
        .max_response_size(MAX_MESSAGE_BYTES)
        .build_with_stream(url, stream)
        .await
        .map_err(|e| ClientError::Handshake {
            socket: socket.into(),
            message: e.to_string(),
        })?;
    Ok(ClientBuilder::default()
        .max_buffer_capacity_per_subscription(options.subscription_buffer.max(1))
        .request_timeout(options.request_timeout)
        .build_with_tokio(tx, rx))
}

/// Open the local socket, telling "nobody there" apart from other failures.
pub async fn connect_stream(socket: &Path) -> Result<Stream, ClientError> {
    let name = socket_name(socket).map_err(|source| ClientError::Connect {
        socket: socket.into(),
        source,
    })?;
    Stream::connect(name)
        .await
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning {
                    socket: socket.into(),
                }
            }
            _ => ClientError::Connect {
                socket: socket.into(),
                source,
            },
        })
}

async fn subscribe(
    rpc: &Client,
    session_id: &SessionId,
    after_seq: u64,
    skip_finished_deltas: bool,
) -> Result<jsonrpsee::core::client::Subscription<Vec<Box<RawValue>>>, ClientError> {
    // Events in arrays: whatever is ready together comes in one message.
    let p = SessionSubscribeParams {
        session_id: session_id.clone(),
        after_seq,
        skip_finished_deltas,
        batch: true,
    };
    rpc.subscribe(
        SessionSubscribe::NAME,
        params(&p)?,
        SessionSubscribe::UNSUBSCRIBE,
    )
    .await
    .map_err(from_rpc)
}

/// A session's events in seq order, each exactly once, surviving lagged subscriptions.
pub struct EventStream {
    rpc: Arc<Client>,
    session_id: SessionId,
    sub: jsonrpsee::core::client::Subscription<Vec<Box<RawValue>>>,
    /// Events of the last array received, not handed out yet.
    pending: std::collections::VecDeque<Box<RawValue>>,
    last_seq: u64,
    resubscribes: u32,
    /// The daemon leaves events out on purpose: seqs may jump.
    skip_finished_deltas: bool,
}

impl EventStream {
    /// The next event; `None` only when the connection is gone for good (then the last item
    /// was an error saying so).
    pub async fn next(&mut self) -> Option<Result<EventEnvelope, ClientError>> {
        self.next_raw()
            .await
            .map(|r| r.map(|(envelope, _)| envelope))
    }

    /// The next event, decoded and as the text the daemon sent (byte for byte what was
    /// committed, for a client that passes events on).
    pub async fn next_raw(&mut self) -> Option<Result<(EventEnvelope, RawEnvelope), ClientError>> {
        loop {
            if let Some(raw) = self.pending.pop_front() {
                let envelope: EventEnvelope = match serde_json::from_str(raw.get()) {
                    Ok(e) => e,
                    Err(e) => return Some(Err(ClientError::Decode(e.to_string()))),
                };
                if envelope.seq <= self.last_seq {
                    continue;
                }
                if envelope.seq != self.last_seq + 1 && !self.skip_finished_deltas {
                    // A gap cannot come from the daemon, which sends in order; read the
                    // missing part again rather than hand the caller a hole.
                    self.pending.clear();
                    if let Err(e) = self.resubscribe().await {
                        return Some(Err(e));
                    }
                    continue;
                }
                self.last_seq = envelope.seq;
                return Some(Ok((envelope, RawEnvelope::from_raw(raw))));
            }
            match self.sub.next().await {
                Some(Ok(batch)) => self.pending.extend(batch),
                Some(Err(e)) => return Some(Err(ClientError::Decode(e.to_string()))),
                None => {
                    if !self.rpc.is_connected() {
                        return Some(Err(ClientError::Disconnected));
                    }
                    if let Err(e) = self.resubscribe().await {
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    async fn resubscribe(&mut self) -> Result<(), ClientError> {
        self.resubscribes += 1;
        self.sub = subscribe(
            &self.rpc,
            &self.session_id,
            self.last_seq,
            self.skip_finished_deltas,
        )
        .await?;
        Ok(())
    }

    /// The seq of the last event delivered.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// How many times the stream had to resubscribe (a lagged reader, or the daemon ending
    /// the subscription).
    pub fn resubscribes(&self) -> u32 {
        self.resubscribes
    }
}
