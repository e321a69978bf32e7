//! The service's Redis connections (lock store, Redlock nodes, history
//! arbiter): one constructor, below everything that uses it — the layer
//! beside [`crate::db`]; and [`refresh_every`], the loop that re-reads the
//! state every replica shares through Redis ([`crate::control`]'s strategy
//! and faults, [`crate::history`]'s run id).

use std::time::Duration;

use anyhow::Context;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::error::GrabError;

/// A Redis connection that reconnects by itself and fails fast while the
/// server is down (one reconnect attempt per command, short timeouts), so
/// a dead Redis becomes a quick 503 rather than a hung request.
pub fn connection(url: &str) -> anyhow::Result<ConnectionManager> {
    let client = redis::Client::open(url).with_context(|| format!("invalid redis url {url}"))?;
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(1)
        // A node back from a restart is used again within ~10 ms, not the
        // crate's default 100 ms: the redlock-restart scenario measures
        // what a returning node's empty vote does, not our reconnect lag.
        .set_min_delay(Duration::from_millis(10))
        .set_max_delay(Duration::from_millis(100))
        .set_connection_timeout(Some(Duration::from_millis(500)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    ConnectionManager::new_lazy_with_config(client, config)
        .with_context(|| format!("cannot set up redis connection to {url}"))
}

/// Call `refresh` every `interval` until `stop` fires. A failure is logged
/// once when it starts and once when it ends (the local copy stays in use
/// meanwhile), not at every tick.
pub async fn refresh_every<F, Fut>(
    what: &'static str,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut refresh: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), GrabError>>,
{
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => return,
        }
        match refresh().await {
            Ok(()) if failing => {
                tracing::info!("{what} readable again");
                failing = false;
            }
            Ok(()) => {}
            Err(e) if !failing => {
                tracing::warn!(error = %e, "cannot read {what}; keeping the local copy");
                failing = true;
            }
            Err(_) => {}
        }
    }
}
