//! Run-time control shared by every replica: the active strategy and the
//! workshop faults.
//!
//! Both live in Redis (`seckill:strategy`, `seckill:faults` as JSON). An
//! admin call on any replica writes Redis and applies locally at once;
//! every replica re-reads both keys every `SECKILL_CONTROL_REFRESH_MS`, so
//! the whole deployment follows within that interval. Grabs read the local
//! copy — an atomic and a short read lock — so the hot path never waits for
//! Redis just to learn the strategy, and the database strategies keep
//! working while Redis is down (with the last known settings).
//!
//! The faults themselves are plain data in [`crate::faults`]; the
//! strategies come from [`crate::registry`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::error::GrabError;
use crate::faults::{read_stored, Faults, FAULTS_KEY};
use crate::redis_client::refresh_every;
use crate::registry::Strategies;
use crate::strategy::{Deps, Strategy, STRATEGY_KEY};
use seckill_wire::strategies::{StrategyName, UnknownStrategy};

/// This replica's copy of the shared control state.
#[derive(Debug)]
pub struct Control {
    strategies: Strategies,
    active: AtomicUsize,
    faults: RwLock<Faults>,
    grabs_seen: AtomicU64,
    /// Bumped by every admin write applied here. A refresh that read Redis
    /// before a write landed must not put the older values back: it applies
    /// only if no write came in between (checked and applied under this lock).
    writes: Mutex<u64>,
}

impl Control {
    /// Start with the configured strategy and faults.
    /// An unknown name is an error, never a fallback: index 0 is `none`,
    /// the strategy with no lock, the least safe of all.
    pub fn new(
        strategies: Strategies,
        initial_strategy: StrategyName,
        faults: Faults,
    ) -> anyhow::Result<Self> {
        let active = strategies
            .index_of(initial_strategy)
            .ok_or_else(|| UnknownStrategy(initial_strategy.to_string()))?;
        Ok(Self {
            strategies,
            active: AtomicUsize::new(active),
            faults: RwLock::new(faults),
            grabs_seen: AtomicU64::new(0),
            writes: Mutex::new(0),
        })
    }

    /// All strategies.
    pub fn strategies(&self) -> &Strategies {
        &self.strategies
    }

    /// The active strategy.
    pub fn active(&self) -> &Arc<dyn Strategy> {
        self.strategies.get(self.active.load(Ordering::Relaxed))
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        *self
            .faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the next grab takes the pause (`pause_every`).
    pub fn next_grab_pauses(&self, faults: &Faults) -> bool {
        if faults.pause_ms == 0 {
            return false;
        }
        let n = self.grabs_seen.fetch_add(1, Ordering::Relaxed);
        n.is_multiple_of(faults.pause_every.max(1))
    }

    fn writes(&self) -> std::sync::MutexGuard<'_, u64> {
        self.writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Apply an admin write here, and mark it so that a refresh already
    /// under way discards what it read.
    fn apply_write(&self, strategy: Option<usize>, faults: Option<Faults>) {
        let mut writes = self.writes();
        *writes += 1;
        self.set_local(strategy, faults);
    }

    fn set_local(&self, strategy: Option<usize>, faults: Option<Faults>) {
        if let Some(index) = strategy {
            self.active.store(index, Ordering::Relaxed);
        }
        if let Some(faults) = faults {
            *self
                .faults
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = faults;
        }
    }

    /// Switch every replica to `index`: activate it here, publish, apply.
    pub async fn switch(&self, deps: &Deps, index: usize) -> Result<(), GrabError> {
        let strategy = self.strategies.get(index);
        strategy.activate(deps).await?;
        let mut conn = deps.redis.clone();
        redis::cmd("SET")
            .arg(STRATEGY_KEY)
            .arg(strategy.info().name.as_str())
            .query_async::<()>(&mut conn)
            .await?;
        self.apply_write(Some(index), None);
        Ok(())
    }

    /// Publish new faults for every replica and apply them here.
    pub async fn set_faults(&self, deps: &Deps, faults: Faults) -> Result<(), GrabError> {
        let json = serde_json::to_string(&faults)
            .map_err(|e| GrabError::Internal(format!("faults json: {e}")))?;
        let mut conn = deps.redis.clone();
        redis::cmd("SET")
            .arg(FAULTS_KEY)
            .arg(json)
            .query_async::<()>(&mut conn)
            .await?;
        self.apply_write(None, Some(faults));
        Ok(())
    }

    /// Re-read both keys from Redis. Missing keys keep the local values;
    /// so do all values read while an admin write was applied here (that
    /// read may predate the write: the next refresh brings them).
    pub async fn refresh(&self, deps: &Deps) -> Result<(), GrabError> {
        let before = *self.writes();
        let mut conn = deps.redis.clone();
        let (strategy, faults): (Option<String>, Option<String>) = redis::cmd("MGET")
            .arg(STRATEGY_KEY)
            .arg(FAULTS_KEY)
            .query_async(&mut conn)
            .await?;
        let index = strategy.and_then(|name| {
            let found = name
                .parse::<StrategyName>()
                .ok()
                .and_then(|n| self.strategies.index_of(n));
            if found.is_none() {
                tracing::warn!(%name, "Redis names an unknown strategy; keeping the current one");
            }
            found
        });
        let faults = faults.and_then(|json| match read_stored(&json, self.faults()) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(error = %e, "unreadable faults in Redis; keeping the current ones");
                None
            }
        });
        let writes = self.writes();
        if *writes == before {
            self.set_local(index, faults);
        }
        Ok(())
    }

    /// Refresh every `interval` until `stop` fires.
    pub async fn refresh_loop(
        self: Arc<Self>,
        deps: Deps,
        interval: Duration,
        stop: tokio::sync::watch::Receiver<bool>,
    ) {
        refresh_every("the shared strategy/faults", interval, stop, move || {
            let (control, deps) = (self.clone(), deps.clone());
            async move { control.refresh(&deps).await }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::configuration::Settings;

    // A runtime: the watchdog's constructor spawns its pub/sub listener.
    #[tokio::test]
    async fn a_known_strategy_is_the_active_one() {
        let settings = Settings::default();
        let strategies = Strategies::new(&settings).expect("strategies");
        let control = Control::new(
            strategies,
            StrategyName::Redlock,
            Faults::with_work_delay(0),
        )
        .expect("known");
        assert_eq!(control.active().info().name, StrategyName::Redlock);
    }
}
