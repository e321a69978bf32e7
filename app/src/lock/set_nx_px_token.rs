//! `set-nx-px-token` — `SET key token NX PX ttl`, released by a Lua
//! compare-and-delete.
//!
//! **Seed step:** 004 v5, 000 scheme 5 (方案五: SET EX PX NX + 校验唯一随机值,
//! 再删除), 002's "原子解锁": a unique value per acquisition, and the release
//! checks and deletes in one atomic script (`compare_and_delete.lua`).
//!
//! **Guarantee:** mutual exclusion while the work inside the lock is shorter
//! than the TTL; a holder never deletes a lock it no longer owns; a crashed
//! holder's lock expires after the TTL.
//!
//! **How it fails:** when the work outlives the TTL (a slow query, a GC or
//! VM pause), the key expires, a second grab acquires it, and both run the
//! section at once. The compare-and-delete then refuses the first holder's
//! release (`not_owner`), but the overlap has already happened. Fencing
//! (`fenced`) or renewal (`watchdog`) are the next steps.
//!
//! The wire protocol is the standard one: any client that runs
//! `SET lock:product:{id} <token> NX PX <ttl>` and deletes with a
//! compare-and-delete excludes this service and is excluded by it.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::{try_set_nx_px, DistributedLock, LockGuard, Released, COMPARE_AND_DELETE};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `set-nx-px-token`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::SetNxPxToken,
    seed: "004 v5 / 000 scheme 5: unique token + Lua compare-and-delete",
    guarantee: "safe while the work is shorter than the TTL; never deletes another's lock",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Ttl,
};

/// The token lock. Its release is [`COMPARE_AND_DELETE`], compiled once
/// per process; redis-rs sends `EVALSHA` and loads the script only when the
/// server answers `NOSCRIPT`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetNxPxToken;

impl SetNxPxToken {
    /// Build the strategy.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait]
impl DistributedLock for SetNxPxToken {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        try_set_nx_px(cx, product_id).await
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        self.compare_and_delete(cx, &guard).await
    }
}

impl SetNxPxToken {
    /// Run the compare-and-delete script for `guard`.
    pub async fn compare_and_delete(
        &self,
        cx: GrabContext<'_>,
        guard: &LockGuard,
    ) -> Result<Released, GrabError> {
        let mut conn = cx.deps.redis.clone();
        let deleted: i64 = COMPARE_AND_DELETE
            .key(&guard.key)
            .arg(&guard.token)
            .invoke_async(&mut conn)
            .await?;
        Ok(if deleted == 1 {
            Released::Released
        } else {
            Released::NotOwner
        })
    }
}
