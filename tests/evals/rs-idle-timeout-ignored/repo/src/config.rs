use crate::error::Error;
use crate::limits::{
    DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_LISTEN, DEFAULT_MAX_CLIENTS, MAX_CLIENTS_CEILING,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub listen: String,
    pub max_clients: usize,
    pub idle_timeout_secs: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.to_string(),
            max_clients: DEFAULT_MAX_CLIENTS,
            idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
        }
    }
}

impl Config {
    /// Parses relay.conf: `key = value` lines, `#` comments.
    pub fn parse(text: &str) -> Result<Config, Error> {
        let mut config = Config::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |message: String| Error::Config {
                line: i + 1,
                message,
            };
            let (key, value) = line
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| err("expected key = value".into()))?;
            match key {
                "listen" => config.listen = value.to_string(),
                "max_clients" => {
                    let n: usize = value
                        .parse()
                        .map_err(|_| err(format!("bad number {value:?}")))?;
                    if n == 0 || n > MAX_CLIENTS_CEILING {
                        return Err(err(format!(
                            "max_clients must be 1..={MAX_CLIENTS_CEILING}"
                        )));
                    }
                    config.max_clients = n;
                }
                "idle_timeout_secs" => {
                    config.idle_timeout_secs = value
                        .parse()
                        .map_err(|_| err(format!("bad number {value:?}")))?;
                }
                other => return Err(err(format!("unknown key {other:?}"))),
            }
        }
        Ok(config)
    }
}
