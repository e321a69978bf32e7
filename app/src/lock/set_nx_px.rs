//! `set-nx-px` — `SET key value NX PX ttl`, released by a plain `DEL`.
//!
//! **Seed step:** 004 v3 and 000 方案四 (SET的扩展命令 SET EX PX NX): one
//! atomic command sets the value and the expiry.
//!
//! **Guarantee:** every lock expires; mutual exclusion while the work is
//! shorter than the TTL. 004 says this "already satisfies most small and
//! medium companies".
//!
//! **How it fails:** 004 坑点3 — when the work takes longer than the TTL
//! (load rises, a query slows down), the key expires and grab B acquires.
//! Then A finishes and its `DEL` deletes *B's* lock, so C acquires while B
//! is still inside, and so on: "this lock may stay broken forever". The
//! value is a unique token, but the release never looks at it.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::{release_by_del, try_set_nx_px, DistributedLock, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `set-nx-px`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::SetNxPx,
    seed: "004 v3 / 000 scheme 4: SET NX PX, unlock by DEL",
    guarantee: "safe while work < TTL; past it, deletes another holder's lock",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Ttl,
};

/// SET NX PX + DEL.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetNxPx;

#[async_trait]
impl DistributedLock for SetNxPx {
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
        release_by_del(cx, &guard).await
    }
}
