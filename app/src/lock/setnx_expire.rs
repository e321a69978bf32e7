//! `setnx-expire` — `SETNX`, then `PEXPIRE` as a second command.
//!
//! **Seed step:** 004 v2 and 000 方案一 (SETNX + EXPIRE): give the lock an
//! expiry so a crashed holder cannot block forever.
//!
//! **Guarantee:** mutual exclusion while the work is shorter than the
//! TTL — *if* the second command ran; a crashed holder's lock expires after
//! the TTL.
//!
//! **How it fails:** twice. 004 坑点2 — the two commands are not atomic. A
//! holder that dies between `SETNX` and `PEXPIRE` leaves a key with no
//! expiry: locked forever, exactly like v1. The window is tiny on an idle
//! server and wide on a busy one (a slow `KEYS *` queued in between); the
//! `setnx_expire_gap_ms` fault widens it so a workshop can hit it on
//! purpose. And like every TTL lock, work that outlives the TTL lets a
//! second holder in — whose lock the first then frees, as the release is a
//! blind `DEL` that never looks whose key it deletes. So it is classed
//! within-TTL, not "safe while holders live".

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::{
    lock_key, new_token, release_by_del, setnx, DistributedLock, LockGuard, Released,
};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `setnx-expire`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::SetnxExpire,
    seed: "004 v2 / 000 scheme 1: SETNX then EXPIRE, two commands",
    guarantee: "safe while the work is shorter than the TTL; blind DEL; a crash between the two commands locks for good",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Ttl,
};

/// SETNX, (gap), PEXPIRE, DEL.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetnxExpire;

#[async_trait]
impl DistributedLock for SetnxExpire {
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
        if !setnx(cx, &key, &token).await? {
            return Ok(None);
        }
        let mut conn = cx.deps.redis.clone();
        // The window of 坑点2: a crash here leaves a key that never expires.
        if cx.faults.setnx_expire_gap_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(
                cx.faults.setnx_expire_gap_ms,
            ))
            .await;
        }
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(&key)
            .arg(cx.deps.lock_ttl.as_millis() as u64)
            .query_async(&mut conn)
            .await?;
        Ok(Some(LockGuard::remote(key, token)))
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        release_by_del(cx, &guard).await
    }
}
