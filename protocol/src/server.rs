//! The daemon's side of the transport: bind the local socket safely, accept only the same
//! user, and serve one jsonrpsee connection per accepted stream.
//!
//! *Socket activation on Linux only*: systemd hands the daemon its listening socket (`LISTEN_FDS`);
//! launchd's socket hand-over needs its own API, so the macOS agent simply runs at load and is kept
//! alive. Clients connect the same way either way.
//!
//! *WebSocket only, one request per message*: the daemon refuses plain HTTP (403) and batches
//! (-32005), since a connection's state (initialize, subscriptions) lives as long as the socket;
//! `session/unsubscribe` takes its params by name like every other method (a small RPC middleware
//! rewrites them for jsonrpsee, which reads only `[id]`).

use std::io;
use std::path::{Path, PathBuf};

use std::borrow::Cow;

use interprocess::local_socket::ListenerOptions;
use interprocess::local_socket::tokio::{Listener, Stream, prelude::*};
use jsonrpsee::core::middleware::{Batch, Notification, RpcServiceBuilder, RpcServiceT};
use jsonrpsee::server::middleware::rpc::RpcService;
use jsonrpsee::server::{
    BatchRequestConfig, MethodResponse, Methods, Server, ServerConfig, TowerServiceBuilder,
    serve_with_graceful_shutdown,
};
use jsonrpsee::types::{ErrorObjectOwned, Request};
use serde_json::value::RawValue;
use tower::layer::util::{Identity, Stack};

use crate::inbound::{INVALID_REQUEST_METHOD, Inbound, TOO_LARGE_METHOD};
use crate::transport::{MAX_MESSAGE_BYTES, socket_name};

pub use jsonrpsee::server::{ServerHandle, StopHandle, stop_channel};

/// Any stream a connection can be served on.
pub trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Io for T {}

/// The daemon's listening socket: bound by the daemon (and removed when dropped), or handed
/// over by systemd's socket activation (which owns the file).
pub struct LocalListener {
    inner: Inner,
    path: PathBuf,
}

enum Inner {
    Bound(Listener),
    #[cfg(unix)]
    Inherited(tokio::net::UnixListener),
}

/// A connection whose peer passed the uid check.
pub struct Accepted {
    pub stream: Box<dyn Io>,
    pub peer_pid: Option<u32>,
    /// The peer's process, pinned when it connected (`SO_PEERPIDFD`, Linux 6.5+): whoever
    /// holds `peer_pid` later, this names the process that connected.
    #[cfg(target_os = "linux")]
    pub peer_pidfd: Option<std::os::fd::OwnedFd>,
}

/// Why an accepted connection was turned away.
#[derive(Debug, thiserror::Error)]
pub enum RefusedPeer {
    #[error("peer credentials unavailable: {0}")]
    NoCredentials(io::Error),
    #[error("peer runs as uid {peer}, the daemon as uid {ours}: refused")]
    OtherUser { peer: u32, ours: u32 },
}

impl LocalListener {
    /// Bind `path`, creating its folder (0700) and the socket (0600). A socket file already
    /// there is removed: call this only while holding the daemon lock, which proves that no
    /// live daemon owns it.
    pub fn bind(path: &Path) -> io::Result<LocalListener> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        remove_stale_socket(path)?;
        let name = socket_name(path)?;
        let options = ListenerOptions::new().name(name).reclaim_name(true);
        #[cfg(unix)]
        let options = {
            use interprocess::os::unix::local_socket::ListenerOptionsExt;
            options.mode(0o600)
        };
        let listener = options.create_tokio()?;
        Ok(LocalListener {
            inner: Inner::Bound(listener),
            path: path.to_path_buf(),
        })
    }

    /// The listening socket systemd passed (`LISTEN_FDS`/`LISTEN_PID`), if any. `path` is
    /// where clients are told to connect; the socket unit decides the real one.
    #[cfg(unix)]
    pub fn from_socket_activation(path: &Path) -> io::Result<Option<LocalListener>> {
        let mut fds = listenfd::ListenFd::from_env();
        let Some(listener) = fds.take_unix_listener(0)? else {
            return Ok(None);
        };
        listener.set_nonblocking(true)?;
        let listener = tokio::net::UnixListener::from_std(listener)?;
        let path = listener
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf());
        Ok(Some(LocalListener {
            inner: Inner::Inherited(listener),
            path,
        }))
    }

    #[cfg(not(unix))]
    pub fn from_socket_activation(_path: &Path) -> io::Result<Option<LocalListener>> {
        Ok(None)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the socket came from the service manager.
    pub fn is_inherited(&self) -> bool {
        !matches!(self.inner, Inner::Bound(_))
    }

    /// Accept the next connection. `Ok(Err(_))` is a peer that was refused (and already
    /// dropped); `Err(_)` is a failure of the listener itself.
    pub async fn accept(&self) -> io::Result<Result<Accepted, RefusedPeer>> {
        match &self.inner {
            Inner::Bound(listener) => {
                let stream = listener.accept().await?;
                Ok(check_peer(stream))
            }
            #[cfg(unix)]
            Inner::Inherited(listener) => {
                let (stream, _) = listener.accept().await?;
                let creds = match stream.peer_cred() {
                    Ok(c) => c,
                    Err(e) => return Ok(Err(RefusedPeer::NoCredentials(e))),
                };
                let ours = nix::unistd::geteuid().as_raw();
                if creds.uid() != ours {
                    return Ok(Err(RefusedPeer::OtherUser {
                        peer: creds.uid(),
                        ours,
                    }));
                }
                let peer_pid = creds.pid().and_then(|p| u32::try_from(p).ok());
                Ok(Ok(Accepted {
                    #[cfg(target_os = "linux")]
                    peer_pidfd: peer_pidfd(&stream),
                    stream: Box::new(stream),
                    peer_pid,
                }))
            }
        }
    }
}

fn check_peer(stream: Stream) -> Result<Accepted, RefusedPeer> {
    let creds = stream.peer_creds().map_err(RefusedPeer::NoCredentials)?;
    let peer_pid = creds.pid().and_then(|p| u32::try_from(p).ok());
    #[cfg(unix)]
    {
        let ours = nix::unistd::geteuid().as_raw();
        match creds.euid() {
            Some(peer) if peer == ours => {}
            Some(peer) => return Err(RefusedPeer::OtherUser { peer, ours }),
            None => {
                return Err(RefusedPeer::NoCredentials(io::Error::other("no peer uid")));
            }
        }
    }
    #[cfg(target_os = "linux")]
    let peer_pidfd = match &stream {
        Stream::UdSocket(s) => peer_pidfd(s.inner()),
    };
    Ok(Accepted {
        stream: Box::new(stream),
        peer_pid,
        #[cfg(target_os = "linux")]
        peer_pidfd,
    })
}

/// The peer's pidfd, where the kernel gives one (6.5+).
#[cfg(target_os = "linux")]
fn peer_pidfd(stream: &impl std::os::fd::AsFd) -> Option<std::os::fd::OwnedFd> {
    nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerPidfd).ok()
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

fn remove_stale_socket(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_socket() {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "{} exists and is not a socket — move it away or set STEPPER_SOCKET",
                            path.display()
                        ),
                    ));
                }
            }
            let _ = meta;
            std::fs::remove_file(path)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The RPC middleware every connection runs behind.
type Middleware = Stack<tower::layer::LayerFn<fn(RpcService) -> Conventions<RpcService>>, Identity>;

/// Builds one jsonrpsee service per connection from shared limits.
#[derive(Clone)]
pub struct ConnectionServer {
    builder: TowerServiceBuilder<Middleware, Identity>,
}

impl Default for ConnectionServer {
    fn default() -> Self {
        let config = ServerConfig::builder()
            .max_request_body_size(MAX_MESSAGE_BYTES)
            .max_response_body_size(MAX_MESSAGE_BYTES)
            .max_connections(4096)
            .max_subscriptions_per_connection(1024)
            // No client needs them, and one code (-32005) then means one thing.
            .set_batch_request_config(BatchRequestConfig::Disabled)
            // Every connection starts with `initialize`, which a stateless HTTP POST cannot
            // keep: the socket speaks WebSocket only.
            .ws_only()
            .build();
        let layer: fn(RpcService) -> Conventions<RpcService> = |service| Conventions {
            service,
            accepting: AcceptGate::default(),
        };
        ConnectionServer {
            builder: Server::builder()
                .set_config(config)
                .set_rpc_middleware(RpcServiceBuilder::new().layer_fn(layer))
                .to_service_builder(),
        }
    }
}

impl ConnectionServer {
    /// Serve `methods` on one accepted stream until the peer leaves or `stop` fires.
    pub async fn serve(&self, stream: Box<dyn Io>, methods: impl Into<Methods>, stop: StopHandle) {
        let service = self.builder.clone().build(methods, stop.clone());
        let stream = Inbound::new(stream, u64::from(MAX_MESSAGE_BYTES));
        if let Err(e) = serve_with_graceful_shutdown(stream, service, stop.shutdown()).await {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    }
}

/// What every connection's calls go through before their method:
/// - Unsubscribe methods take their params by name like every other method:
///   `{"subscription": id}` (jsonrpsee itself reads only `[id]`, and answers `false` to
///   anything else while the events keep coming). `[id]` still works — it is what jsonrpsee's
///   own client sends when a subscription is dropped; any other shape is an invalid-params
///   error.
/// - An unsubscribe waits for the connection's subscriptions being accepted (see
///   [`AcceptGate`]).
/// - The stand-ins [`Inbound`] hands on for a request over the message limit and for one
///   whose `id` JSON-RPC does not take are answered with the errors they stand for.
#[derive(Clone)]
pub struct Conventions<S> {
    service: S,
    accepting: AcceptGate,
}

/// One connection's subscriptions being accepted. jsonrpsee sends a subscription's id to the
/// client before it records the subscription, so an unsubscribe that comes quickly (or a
/// server thread the system put aside between the two) would find nothing, answer `false`
/// and leave the events coming. A subscribe handler holds [`AcceptGate::accepting`] across
/// `accept`; an unsubscribe waits until no accept is under way. The gate reaches the
/// handler in the request's extensions.
#[derive(Clone, Default)]
pub struct AcceptGate(std::sync::Arc<tokio::sync::RwLock<()>>);

impl AcceptGate {
    /// Hold this across `PendingSubscriptionSink::accept`.
    pub async fn accepting(&self) -> tokio::sync::RwLockReadGuard<'_, ()> {
        self.0.read().await
    }

    /// Resolves once no accept that started before it is under way.
    async fn settled(&self) {
        drop(self.0.write().await);
    }
}

/// The subscribe methods of the table.
fn is_subscribe(method: &str) -> bool {
    static NAMES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        crate::methods::table()
            .iter()
            .filter(|m| m.unsubscribe.is_some())
            .map(|m| m.name)
            .collect()
    });
    NAMES.contains(&method)
}

/// The unsubscribe methods of the table.
fn is_unsubscribe(method: &str) -> bool {
    static NAMES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        crate::methods::table()
            .iter()
            .filter_map(|m| m.unsubscribe)
            .collect()
    });
    NAMES.contains(&method)
}

/// `[id]` for the params of an unsubscribe call, or why they cannot be one.
fn positional_id(params: Option<&RawValue>) -> Result<Box<RawValue>, String> {
    let usage = "unsubscribe takes {\"subscription\": <the id session/subscribe returned>}";
    let value: serde_json::Value = match params {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| format!("{usage}: {e}"))?,
        None => return Err(usage.into()),
    };
    let id = match value {
        serde_json::Value::Object(mut map) if map.len() == 1 => map.remove("subscription"),
        serde_json::Value::Array(mut items) if items.len() == 1 => items.pop(),
        _ => None,
    };
    match id {
        Some(id @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => {
            serde_json::value::to_raw_value(&[id]).map_err(|e| e.to_string())
        }
        _ => Err(usage.into()),
    }
}

impl<S> RpcServiceT for Conventions<S>
where
    S: RpcServiceT<MethodResponse = MethodResponse> + Send + Sync + Clone + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = S::NotificationResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(
        &self,
        mut request: Request<'a>,
    ) -> impl Future<Output = Self::MethodResponse> + Send + 'a {
        let service = self.service.clone();
        let accepting = self.accepting.clone();
        async move {
            match request.method_name() {
                TOO_LARGE_METHOD => {
                    let error = ErrorObjectOwned::owned::<()>(
                        crate::error::OVERSIZED_REQUEST,
                        format!(
                            "the request is over {MAX_MESSAGE_BYTES} bytes, the most a message \
                             may be: put large material in a file and refer to it"
                        ),
                        None,
                    );
                    return MethodResponse::error(request.id, error);
                }
                INVALID_REQUEST_METHOD => {
                    let error = ErrorObjectOwned::owned::<()>(
                        crate::error::INVALID_REQUEST,
                        "invalid request: its id must be a string, an integer from 0 to \
                         2^64-1, or null",
                        None,
                    );
                    return MethodResponse::error(request.id, error);
                }
                _ => {}
            }
            if is_unsubscribe(request.method_name()) {
                match positional_id(request.params.as_deref()) {
                    Ok(params) => request.params = Some(Cow::Owned(params)),
                    Err(message) => {
                        let data = crate::error::ErrorData {
                            kind: crate::error::ErrorKind::InvalidParams,
                            hint: None,
                            retry: false,
                        };
                        let error = ErrorObjectOwned::owned(
                            crate::error::INVALID_PARAMS,
                            message,
                            Some(data),
                        );
                        return MethodResponse::error(request.id, error);
                    }
                }
                accepting.settled().await;
            } else if is_subscribe(request.method_name()) {
                request.extensions_mut().insert(accepting);
            }
            service.call(request).await
        }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        // Batches are turned away before they get here.
        self.service.batch(batch)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = Self::NotificationResponse> + Send + 'a {
        self.service.notification(n)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::Poll;

    use super::AcceptGate;

    /// An unsubscribe waits while a subscription is being accepted, and goes on once it is.
    #[tokio::test]
    async fn an_unsubscribe_waits_for_the_accepts_under_way() {
        let gate = AcceptGate::default();
        let accepting = gate.accepting().await;
        let also = gate.accepting().await;
        let mut settled = std::pin::pin!(gate.settled());
        let polled = std::future::poll_fn(|cx| Poll::Ready(settled.as_mut().poll(cx))).await;
        assert!(
            polled.is_pending(),
            "settled while two accepts were under way"
        );
        drop(accepting);
        let polled = std::future::poll_fn(|cx| Poll::Ready(settled.as_mut().poll(cx))).await;
        assert!(
            polled.is_pending(),
            "settled while one accept was under way"
        );
        drop(also);
        tokio::time::timeout(std::time::Duration::from_secs(10), settled)
            .await
            .expect("settled once no accept was under way");
    }
}
