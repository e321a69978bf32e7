//! `pg-optimistic` — version compare-and-set with bounded retries.
//!
//! **Seed step:** 003 "基于乐观锁": read the row with its `version`, write
//! back only `WHERE version = <read>`, and try again when another writer
//! got there first.
//!
//! **Guarantee:** safe — a write based on a stale read matches no row and
//! is retried from a fresh read. No lock is held while working.
//!
//! **How it fails:** under heavy contention on one row almost every attempt
//! loses the race: work is done and thrown away, retries pile up
//! (`seckill_lock_retries_total`), and after `SECKILL_OPTIMISTIC_MAX_RETRIES`
//! or the wait budget the grab answers `busy`. It shines when conflicts are
//! rare, and suffers in exactly the flash-sale moment.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;
use tokio::time::{sleep, Instant};

use crate::error::GrabError;
use crate::locking::jittered;
use crate::section::{self, RowLock, SectionSpec};
use crate::strategy::{GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo};

/// Name, seed and guarantee of `pg-optimistic`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::PgOptimistic,
    seed: "003: optimistic lock, version compare-and-set",
    guarantee: "safe; retries (and gives up as busy) under contention",
    safety: Safety::Safe,
    kind: Kind::NotALock,
};

/// Versioned read, conditional write, retry.
#[derive(Debug, Clone, Copy, Default)]
pub struct PgOptimistic;

#[async_trait]
impl Strategy for PgOptimistic {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        let deps = cx.deps;
        let deadline = Instant::now() + deps.lock_wait;
        let (attempts, retries) = deps.metrics.attempt_counters(INFO.name.as_str());
        let spec = SectionSpec::plain(INFO.name.as_str()).with_row_lock(RowLock::Optimistic);
        for attempt in 0..=deps.optimistic_max_retries {
            attempts.inc();
            if let Some(prepared) = section::prepare(cx, req, spec).await? {
                return prepared.commit().await;
            }
            // Someone else's write moved the version on: start over.
            if attempt == deps.optimistic_max_retries || Instant::now() >= deadline {
                break;
            }
            retries.inc();
            sleep(jittered(deps.lock_retry)).await;
        }
        Err(GrabError::Busy(deps.lock_wait))
    }
}
