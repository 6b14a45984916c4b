pub mod config;
pub mod conn;
pub mod error;
pub mod limits;
pub mod pool;
pub mod server;

pub use config::Config;
pub use error::Error;
pub use server::Server;

/// Seconds since the server started. Passed in by the caller so tests control time.
pub type Secs = u64;
