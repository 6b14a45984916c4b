//! The daemon's side of the transport: bind the local socket safely, accept only the same
//! user, and serve one jsonrpsee connection per accepted stream.

use std::io;
use std::path::{Path, PathBuf};

use interprocess::local_socket::ListenerOptions;
use interprocess::local_socket::tokio::{Listener, Stream, prelude::*};
use jsonrpsee::server::{
    Methods, Server, ServerConfig, TowerServiceBuilder, serve_with_graceful_shutdown,
};

use tower::layer::util::Identity;

use crate::transport::{MAX_MESSAGE_BYTES, socket_name};

pub use jsonrpsee::server::{ServerHandle, StopHandle, stop_channel};

/// A bound local socket. The socket file is removed when this is dropped.
pub struct LocalListener {
    listener: Listener,
    path: PathBuf,
}

/// A connection whose peer passed the uid check.
pub struct Accepted {
    pub stream: Stream,
    pub peer_pid: Option<u32>,
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
            listener,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Accept the next connection. `Ok(Err(_))` is a peer that was refused (and already
    /// dropped); `Err(_)` is a failure of the listener itself.
    pub async fn accept(&self) -> io::Result<Result<Accepted, RefusedPeer>> {
        let stream = self.listener.accept().await?;
        Ok(check_peer(stream))
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
    Ok(Accepted { stream, peer_pid })
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

/// Builds one jsonrpsee service per connection from shared limits.
#[derive(Clone)]
pub struct ConnectionServer {
    builder: TowerServiceBuilder<Identity, Identity>,
}

impl Default for ConnectionServer {
    fn default() -> Self {
        let config = ServerConfig::builder()
            .max_request_body_size(MAX_MESSAGE_BYTES)
            .max_response_body_size(MAX_MESSAGE_BYTES)
            .max_connections(4096)
            .max_subscriptions_per_connection(1024)
            .build();
        ConnectionServer {
            builder: Server::builder().set_config(config).to_service_builder(),
        }
    }
}

impl ConnectionServer {
    /// Serve `methods` on one accepted stream until the peer leaves or `stop` fires.
    pub async fn serve(&self, stream: Stream, methods: impl Into<Methods>, stop: StopHandle) {
        let service = self.builder.clone().build(methods, stop.clone());
        if let Err(e) = serve_with_graceful_shutdown(stream, service, stop.shutdown()).await {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    }
}
