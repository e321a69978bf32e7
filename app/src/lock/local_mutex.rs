//! `local-mutex` — a per-product mutex inside one process.
//!
//! **Seed step:** 001 "背景" and 003's opening: `synchronized` /
//! `ReentrantLock` protect a single JVM — the reason distributed locks exist.
//!
//! **Guarantee:** mutual exclusion among the grabs of *one replica*. With one
//! replica it is safe and the fastest real lock (no network hop).
//!
//! **How it fails:** a second replica has its own mutex, so two replicas
//! run the section at the same time on the same row: lost updates and
//! oversells as soon as the sale is spread behind a load balancer.
//!
//! The mutex is tokio's fair FIFO mutex, so waiting is a queue rather than
//! polling; the wait is bounded by `SECKILL_LOCK_WAIT_MS` like every lock.
//! One mutex per product that a grab reached, kept for the life of the
//! process: the grab route answers an unknown product `404` before any
//! strategy runs, so the map never holds more than the products that exist
//! (`seckill_strategy_products{strategy="local-mutex"}`).

use seckill_wire::strategies::StrategyName;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::time::{timeout, Instant};

use crate::error::GrabError;
use crate::locking::{new_token, DistributedLock, Held, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `local-mutex`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::LocalMutex,
    seed: "001/003: in-process locks (synchronized, ReentrantLock)",
    guarantee: "safe with one replica, oversells with two or more",
    safety: Safety::SingleReplica,
    kind: Kind::ProcessLocal,
};

/// One tokio mutex per product id, created on first use.
#[derive(Debug, Default)]
pub struct LocalMutex {
    per_product: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
}

impl LocalMutex {
    fn mutex_for(&self, cx: GrabContext<'_>, product_id: i64) -> Arc<tokio::sync::Mutex<()>> {
        // A poisoned map only means another task panicked while inserting;
        // the map itself is still consistent.
        let mut map = self
            .per_product
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(mutex) = map.get(&product_id) {
            return mutex.clone();
        }
        let mutex = map.entry(product_id).or_default().clone();
        cx.deps
            .metrics
            .strategy_products
            .with_label_values(&[INFO.name.as_str()])
            .set(map.len() as f64);
        mutex
    }
}

#[async_trait]
impl DistributedLock for LocalMutex {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        Ok(self
            .mutex_for(cx, product_id)
            .try_lock_owned()
            .ok()
            .map(|held| local_guard(product_id, held)))
    }

    /// Queue on the mutex instead of polling.
    async fn acquire(&self, cx: GrabContext<'_>, product_id: i64) -> Result<LockGuard, GrabError> {
        cx.deps
            .metrics
            .lock_attempts
            .with_label_values(&[INFO.name.as_str()])
            .inc();
        let mutex = self.mutex_for(cx, product_id);
        match timeout(cx.deps.lock_wait, mutex.lock_owned()).await {
            Ok(held) => Ok(local_guard(product_id, held)),
            Err(_) => Err(GrabError::Busy(cx.deps.lock_wait)),
        }
    }

    async fn release(&self, _cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        // Dropping the owned guard unlocks; no I/O involved.
        drop(guard);
        Ok(Released::Released)
    }
}

fn local_guard(product_id: i64, held: tokio::sync::OwnedMutexGuard<()>) -> LockGuard {
    LockGuard {
        key: format!("local:product:{product_id}"),
        token: new_token(),
        acquired_at: Instant::now(),
        held: Held::Local(held),
    }
}
