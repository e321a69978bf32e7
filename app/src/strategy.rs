//! What a strategy is, and the words it speaks: a [`GrabRequest`] in, an
//! [`Order`] (or a [`GrabError`]) out, run with a [`GrabContext`] — the
//! process-wide [`Deps`] and this grab's [`Faults`].
//!
//! This is the vocabulary shared by the critical section
//! ([`crate::section`]), the lock machinery ([`crate::locking`]), every
//! strategy file ([`crate::lock`]) and the registry that lists them
//! ([`crate::registry`]). It sits below all of them: it names the
//! dependencies a grab runs with ([`crate::metrics`], [`crate::history`])
//! and nothing above.

use std::fmt;

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;
use serde::Serialize;
use tokio::time::Duration;

/// What a strategy promises ([`Safety`]) and how it is built ([`Kind`]),
/// as `GET /admin/strategies` shows them: wire types, shared with the load
/// generator.
pub use seckill_wire::strategies::{Kind, Safety};

/// An order as written; the grab `201` body (a wire type: the load
/// generator decodes the same struct).
pub use seckill_wire::grab::Order;

use crate::error::GrabError;
use crate::faults::Faults;
use crate::history::History;
use crate::metrics::Metrics;

/// Redis key of the active strategy's name, shared by every replica:
/// written by [`crate::control`], read by `redis-lua-stock` to learn
/// whether it is still the one in force.
pub const STRATEGY_KEY: &str = "seckill:strategy";

/// The description of a strategy shown by `GET /admin/strategies`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StrategyInfo {
    /// Stable name.
    pub name: StrategyName,
    /// Which seed step it teaches.
    pub seed: &'static str,
    /// What it guarantees, in one line.
    pub guarantee: &'static str,
    /// Its class for verdicts.
    pub safety: Safety,
    /// How it is built (what each fault does to it).
    pub kind: Kind,
}

/// A grab as the strategies see it: validated, in database types.
#[derive(Debug, Clone, Copy)]
pub struct GrabRequest {
    /// Product to buy.
    pub product_id: i64,
    /// Buyer.
    pub user_id: i64,
    /// Units.
    pub quantity: i32,
}

/// The process-wide dependencies every strategy uses.
#[derive(Debug, Clone)]
pub struct Deps {
    /// PostgreSQL pool.
    pub pool: sqlx::PgPool,
    /// Redis connection (multiplexed, reconnecting).
    pub redis: redis::aio::ConnectionManager,
    /// Metrics.
    pub metrics: Metrics,
    /// TTL of expiring locks.
    pub lock_ttl: Duration,
    /// Acquire wait budget.
    pub lock_wait: Duration,
    /// Base polling interval between attempts.
    pub lock_retry: Duration,
    /// Retries of `pg-optimistic`.
    pub optimistic_max_retries: u32,
    /// The mutual-exclusion history (records only while a run is on).
    pub history: History,
    /// Replicas a Redis lock write must reach (`WAIT`) before it counts; 0 = none.
    pub redis_wait_replicas: u32,
    /// Bound of that `WAIT`.
    pub redis_wait_timeout: Duration,
    /// The scenario hook that stops the process inside a section.
    pub freeze: crate::freeze::FreezeHook,
}

/// Everything one grab runs with: the dependencies and this grab's faults.
#[derive(Debug, Clone, Copy)]
pub struct GrabContext<'a> {
    /// Shared dependencies.
    pub deps: &'a Deps,
    /// Faults in force for this grab (a snapshot).
    pub faults: Faults,
    /// Whether this grab takes the configured pause (`pause_every`).
    pub pause: bool,
}

/// A strategy: how one grab turns into an order or a refusal.
#[async_trait]
pub trait Strategy: Send + Sync + fmt::Debug {
    /// Name, seed step, guarantee.
    fn info(&self) -> &'static StrategyInfo;

    /// Run one grab.
    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError>;

    /// Whether this deployment can run it (e.g. `redlock` needs nodes).
    fn available(&self) -> bool {
        self.unavailable_reason().is_none()
    }

    /// Why this deployment cannot run it (the setting to set), or `None`.
    fn unavailable_reason(&self) -> Option<&'static str> {
        None
    }

    /// Called on the replica that switches to this strategy, before the
    /// switch is published (e.g. `redis-lua-stock` loads stock into Redis).
    async fn activate(&self, _deps: &Deps) -> Result<(), GrabError> {
        Ok(())
    }
}
