//! The TUI's connection to the daemon, which outlives a daemon restart: [`Link`] is what
//! every call goes through, and [`reconnect`] finds the daemon again (starting one, as at
//! launch) and follows the session on from the last event shown.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use stepper_protocol::client::DaemonClient;

use crate::connect::{connect_or_start, places};

/// The connection to the daemon: replaced when the daemon restarts under an attached TUI
/// (see [`super::follow::Follow::show`]), so every later call goes to the new one.
#[derive(Clone)]
pub(super) struct Link(Arc<RwLock<DaemonClient>>);

impl Link {
    pub(super) fn new(client: DaemonClient) -> Link {
        Link(Arc::new(RwLock::new(client)))
    }

    pub(super) fn get(&self) -> DaemonClient {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn set(&self, client: DaemonClient) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = client;
    }
}

/// How long a TUI whose daemon went away tries to reach one again (starting it, as at
/// launch) before it gives up and says so.
const RECONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Connect again (starting the daemon if it is not running) and follow `id` from after
/// `seq`: what was committed meanwhile is replayed, nothing twice.
pub(super) async fn reconnect(
    name: &str,
    id: &str,
    seq: u64,
) -> anyhow::Result<(DaemonClient, stepper_protocol::client::EventStream)> {
    let places = places()?;
    let deadline = std::time::Instant::now() + RECONNECT_TIMEOUT;
    loop {
        let tried = async {
            let client = connect_or_start(&places, name).await?;
            let stream = client.subscribe_history(&id.to_string(), seq).await?;
            anyhow::Ok((client, stream))
        }
        .await;
        match tried {
            Ok(done) => return Ok(done),
            Err(e) if std::time::Instant::now() >= deadline => return Err(e),
            // A daemon that is stopping still holds its socket for a moment.
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
