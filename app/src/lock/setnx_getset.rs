//! `setnx-getset` — the value is the lock's expiry instant; an expired lock
//! is taken over with `GETSET`.
//!
//! **Seed step:** 000 方案二 (SETNX + value值是(系统时间+过期时间)): `SETNX key
//! <now + ttl>`; when that fails, `GET` the expiry, and if it has passed,
//! `GETSET key <now + ttl>` — whoever gets back the value it read wins.
//!
//! **This is the one strategy that reads the wall clock** (`SystemTime`),
//! because the scheme is *about* wall clocks: each replica compares its own
//! clock with an instant written by another. `SECKILL_CLOCK_SKEW_MS` shifts
//! this replica's clock so a workshop can show what skew does.
//!
//! **Guarantee:** mutual exclusion while clocks agree and the work is
//! shorter than the TTL; a crashed holder's lock is taken over after the TTL
//! (the key itself never expires in Redis).
//!
//! **How it fails:** the three weaknesses the seed lists —
//! 1. clocks: a replica whose clock runs ahead sees a live lock as expired
//!    and takes it over while its holder is still inside: two holders;
//! 2. concurrent takeovers: every loser's `GETSET` still overwrites the
//!    winner's expiry with its own;
//! 3. no owner in the value: the release is a blind `DEL`, which can free a
//!    lock that another replica has taken over.

use seckill_wire::strategies::StrategyName;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::error::GrabError;
use crate::locking::{lock_key, release_by_del, setnx, DistributedLock, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `setnx-getset`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::SetnxGetset,
    seed: "000 scheme 2: value = expiry time, GETSET takeover",
    guarantee: "safe while clocks agree and work < TTL; skew gives two holders",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Ttl,
};

/// The clock-based lock, with this replica's skew.
#[derive(Debug, Clone, Copy)]
pub struct SetnxGetset {
    clock_skew_ms: i64,
}

impl SetnxGetset {
    /// A lock whose wall clock is shifted by `clock_skew_ms`.
    pub fn new(clock_skew_ms: i64) -> Self {
        Self { clock_skew_ms }
    }

    /// This replica's idea of "now", in ms since the Unix epoch.
    fn now_ms(&self) -> i64 {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        wall + self.clock_skew_ms
    }
}

#[async_trait]
impl DistributedLock for SetnxGetset {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        let key = lock_key(product_id);
        let expires = (self.now_ms() + cx.deps.lock_ttl.as_millis() as i64).to_string();
        if setnx(cx, &key, &expires).await? {
            return Ok(Some(LockGuard::remote(key, expires)));
        }
        let mut conn = cx.deps.redis.clone();
        let current: Option<String> = redis::cmd("GET").arg(&key).query_async(&mut conn).await?;
        let Some(current) = current else {
            return Ok(None); // released in between: try again next round
        };
        let expired = current.parse::<i64>().is_ok_and(|at| at < self.now_ms());
        if !expired {
            return Ok(None);
        }
        let previous: Option<String> = redis::cmd("GETSET")
            .arg(&key)
            .arg(&expires)
            .query_async(&mut conn)
            .await?;
        // Only the caller that swapped out the value it read has the lock.
        Ok(
            (previous.as_deref() == Some(current.as_str()))
                .then(|| LockGuard::remote(key, expires)),
        )
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        release_by_del(cx, &guard).await
    }
}
