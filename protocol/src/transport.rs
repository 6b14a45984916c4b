//! What both ends of the local-socket transport agree on: how a socket path becomes an
//! `interprocess` name, and the limits of a connection.

use std::io;
use std::path::Path;

use interprocess::local_socket::Name;

/// The largest request or response, in bytes. Events are small; a session's export is not
/// sent in one response.
pub const MAX_MESSAGE_BYTES: u32 = 32 * 1024 * 1024;

/// The URI used in the WebSocket handshake; the local socket is the real address.
pub const WS_URI: &str = "ws://stepperd.local/";

/// The local socket name for a path: a filesystem socket on Unix, a named pipe on Windows.
pub fn socket_name(path: &Path) -> io::Result<Name<'_>> {
    #[cfg(unix)]
    {
        use interprocess::local_socket::{GenericFilePath, ToFsName};
        path.to_fs_name::<GenericFilePath>()
    }
    #[cfg(windows)]
    {
        use interprocess::local_socket::{GenericNamespaced, ToNsName};
        let name = path.file_name().unwrap_or(path.as_os_str());
        name.to_os_string().to_ns_name::<GenericNamespaced>()
    }
}
