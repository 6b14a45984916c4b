/// Defaults used when relay.conf leaves a setting out.
pub const DEFAULT_MAX_CLIENTS: usize = 64;
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7000";

/// The largest client limit a config may ask for.
pub const MAX_CLIENTS_CEILING: usize = 10_000;
