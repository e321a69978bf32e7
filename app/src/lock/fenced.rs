//! `fenced` — the token lock plus a monotonically increasing fencing token
//! that the database checks.
//!
//! **Seed step:** the answer to the failure every Redis seed ends on (004
//! after v5, 002 "锁过期", 000 scheme 6's motivation): a holder can lose its
//! lock without knowing — a pause, a slow query, an expired TTL. Fencing
//! makes the *resource* refuse stale holders instead of trusting the lock.
//!
//! One script (`fenced_lock.lua`) runs `SET lock:product:{id} token NX
//! PX ttl` and, only when it succeeds, `INCR fence:product:{id}`: the lock
//! and the fencing token are taken in one atomic step, so a holder delayed
//! between the two (a pause, a slow link) cannot come out with a larger
//! token than the holder after it. The section registers the token on the
//! row before reading (`... SET fence_token = $t WHERE fence_token < $t
//! RETURNING stock`) and writes only `WHERE fence_token = $t` (see
//! [`crate::section`]). A holder whose lock expired while a newer holder
//! registered a larger token is rejected at whichever step it is late.
//!
//! When Redis lost the counter (a restart without persistence, a flush) the
//! script says so (`fresh`); the holder then reads `products.fence_token`
//! and raises the counter above it atomically (`fence_seed.lua`) before
//! taking its token. Without this, every holder after the loss would carry
//! a token below the row's and be rejected until the counter caught up.
//!
//! **Guarantee:** the stock stays exact even when the lock is lost: a stale
//! holder's grab ends as `409 rejected` (`seckill_fence_rejections_total`)
//! and writes nothing.
//!
//! **How it fails:** only the resource that checks the token is protected:
//! anything else the holder does outside the database (an email, a call to
//! another service) is not fenced. When the counter is lost the first
//! holder needs the database to re-seed it (a lock whose token cannot be
//! seeded is released, and the grab fails).

use seckill_wire::strategies::StrategyName;
use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use super::set_nx_px_token::SetNxPxToken;
use crate::error::GrabError;
use crate::locking::{lock_key, new_token, DistributedLock, Held, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `fenced`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::Fenced,
    seed: "beyond v5: token lock + monotonic fencing token checked by the database",
    guarantee: "safe even when the lock is lost: stale holders are rejected",
    safety: Safety::Safe,
    kind: Kind::Fenced,
};

/// Redis key of a product's fencing counter.
pub fn fence_key(product_id: i64) -> String {
    format!("fence:product:{product_id}")
}

/// `fenced_lock.lua`: `SET NX PX` and, when it took the lock, `INCR` of
/// the fencing counter, in one step.
static LOCK_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("fenced_lock.lua")));

/// `fence_seed.lua`: raise a lost counter above the database's token.
static SEED_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("fence_seed.lua")));

/// The token lock whose acquire also hands out the fencing token; released
/// by the token lock's compare-and-delete.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fenced {
    lock: SetNxPxToken,
}

impl Fenced {
    /// Build the strategy.
    pub fn new() -> Self {
        Self {
            lock: SetNxPxToken::new(),
        }
    }

    /// The counter was lost: raise it above the highest token the database
    /// has registered, and take the next one.
    async fn seeded_token(&self, cx: GrabContext<'_>, product_id: i64) -> Result<i64, GrabError> {
        let floor: Option<i64> =
            sqlx::query_scalar("SELECT COALESCE(fence_token, 0) FROM products WHERE id = $1")
                .bind(product_id)
                .fetch_optional(&cx.deps.pool)
                .await?;
        let mut conn = cx.deps.redis.clone();
        let token: i64 = SEED_SCRIPT
            .key(fence_key(product_id))
            .arg(floor.unwrap_or(0))
            .invoke_async(&mut conn)
            .await?;
        tracing::info!(
            product_id,
            floor = floor.unwrap_or(0),
            token,
            "fenced: fencing counter was missing; seeded from the database"
        );
        Ok(token)
    }
}

#[async_trait]
impl DistributedLock for Fenced {
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
        let mut conn = cx.deps.redis.clone();
        let acquired: Option<(i64, i64)> = LOCK_SCRIPT
            .key(&key)
            .key(fence_key(product_id))
            .arg(&token)
            .arg(cx.deps.lock_ttl.as_millis() as u64)
            .invoke_async(&mut conn)
            .await?;
        let Some((fencing_token, fresh)) = acquired else {
            return Ok(None);
        };
        let mut guard = LockGuard::remote(key, token);
        if fresh == 0 {
            guard.held = Held::Fenced(fencing_token);
            return Ok(Some(guard));
        }
        match self.seeded_token(cx, product_id).await {
            Ok(seeded) => {
                guard.held = Held::Fenced(seeded);
                Ok(Some(guard))
            }
            Err(e) => {
                // Do not keep a lock we cannot fence.
                let _ = self.lock.compare_and_delete(cx, &guard).await;
                Err(e)
            }
        }
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        self.lock.compare_and_delete(cx, &guard).await
    }
}
