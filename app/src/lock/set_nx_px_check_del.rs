//! `set-nx-px-check-del` — a unique token, released by `GET`, compare,
//! then `DEL`: three steps, not one.
//!
//! **Seed step:** 004 v4 (`if redis.get("lockkey") == value` …
//! `redis.delete`) and 003's Java release in a `finally`: check that the
//! lock is ours before deleting it.
//!
//! **Guarantee:** a holder whose lock *already* expired and was taken no
//! longer deletes the new holder's lock (the `GET` sees a foreign token).
//!
//! **How it fails:** 004 "解鎖命令又失去了原子性": between the `GET` (still
//! our token) and the `DEL`, the key can expire and another grab can take
//! it — and our `DEL` frees *that* lock. The window is as wide as one round
//! trip plus any pause; the `release_gap_ms` fault stretches it so a
//! workshop can hit it every time. The fix is `set-nx-px-token`: the
//! compare and the delete in one Lua script.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::{try_set_nx_px, DistributedLock, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `set-nx-px-check-del`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::SetNxPxCheckDel,
    seed: "004 v4 / 003: unique token, unlock by GET, compare, DEL",
    guarantee: "safe while work < TTL; the check-then-delete race can free another's lock",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Ttl,
};

/// SET NX PX + GET/compare/DEL.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetNxPxCheckDel;

#[async_trait]
impl DistributedLock for SetNxPxCheckDel {
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
        let mut conn = cx.deps.redis.clone();
        let current: Option<String> = redis::cmd("GET")
            .arg(&guard.key)
            .query_async(&mut conn)
            .await?;
        if current.as_deref() != Some(guard.token.as_str()) {
            return Ok(Released::NotOwner);
        }
        // The race of v4: the key may expire and be taken right here.
        if cx.faults.release_gap_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(cx.faults.release_gap_ms)).await;
        }
        let _: i64 = redis::cmd("DEL")
            .arg(&guard.key)
            .query_async(&mut conn)
            .await?;
        Ok(Released::Released)
    }
}
