//! The service's Redis connections (lock store, Redlock nodes, history
//! arbiter): one constructor, below everything that uses it — the layer
//! beside [`crate::db`].

use std::time::Duration;

use anyhow::Context;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// A Redis connection that reconnects by itself and fails fast while the
/// server is down (one reconnect attempt per command, short timeouts), so
/// a dead Redis becomes a quick 503 rather than a hung request.
pub fn connection(url: &str) -> anyhow::Result<ConnectionManager> {
    let client = redis::Client::open(url).with_context(|| format!("invalid redis url {url}"))?;
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(100))
        .set_connection_timeout(Some(Duration::from_millis(500)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    ConnectionManager::new_lazy_with_config(client, config)
        .with_context(|| format!("cannot set up redis connection to {url}"))
}
