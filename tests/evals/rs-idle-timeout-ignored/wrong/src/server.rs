use crate::config::Config;
use crate::error::Error;
use crate::pool::Pool;
use crate::Secs;

pub struct Server {
    config: Config,
    pool: Pool,
}

impl Server {
    pub fn new(config: Config) -> Server {
        let pool = Pool::new(config.max_clients, config.idle_timeout_secs);
        Server { config, pool }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn accept(&mut self, peer: &str, now: Secs) -> Result<u64, Error> {
        self.pool.open(peer, now)
    }

    /// Records traffic on a connection, which keeps it alive.
    pub fn traffic(&mut self, id: u64, now: Secs) -> Result<(), Error> {
        self.pool.get_mut(id)?.touch(now);
        Ok(())
    }

    /// Drops idle connections; returns their ids.
    pub fn tick(&mut self, now: Secs) -> Vec<u64> {
        self.pool.reap(now).into_iter().map(|c| c.id).collect()
    }

    /// Applies a new configuration without dropping connections.
    pub fn reload(&mut self, config: Config) {
        self.pool.set_capacity(config.max_clients);
        self.config = config;
    }

    pub fn connections(&self) -> usize {
        self.pool.len()
    }
}
