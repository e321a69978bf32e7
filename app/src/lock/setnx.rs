//! `setnx` — `SETNX key token`, released by `DEL`, no expiry.
//!
//! **Seed step:** 004 v1 (`redis.setnx(lockkey, value)` … `redis.delete`),
//! 000's starting point: Redis runs one command at a time, so of thirty
//! concurrent `SETNX` exactly one wins.
//!
//! **Guarantee:** mutual exclusion while every holder lives to release.
//!
//! **How it fails:** 004 坑点1 — a holder that crashes (or whose request is
//! killed) before its `DEL` leaves the key forever: every later grab
//! answers `busy` until an operator deletes `lock:product:{id}` by hand
//! (or `POST /admin/products/{id}/reset`). The `DEL` is also blind: it
//! removes whatever key is there.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::{
    lock_key, new_token, release_by_del, setnx, DistributedLock, LockGuard, Released,
};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `setnx`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::Setnx,
    seed: "004 v1: SETNX + DEL, no expiry",
    guarantee: "safe until a holder dies; then locked forever (deadlock)",
    safety: Safety::SafeWhileHoldersLive,
    kind: Kind::NoExpiry,
};

/// SETNX + DEL.
#[derive(Debug, Clone, Copy, Default)]
pub struct Setnx;

#[async_trait]
impl DistributedLock for Setnx {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        let key = lock_key(product_id);
        let token = new_token();
        Ok(setnx(cx, &key, &token)
            .await?
            .then(|| LockGuard::remote(key, token)))
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        release_by_del(cx, &guard).await
    }
}
