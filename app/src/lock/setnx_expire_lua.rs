//! `setnx-expire-lua` — `SETNX` + `PEXPIRE` inside one Lua script.
//!
//! **Seed step:** 000 方案三 (使用Lua脚本, 包含SETNX + EXPIRE两条指令):
//! Redis runs a script atomically, so the crash window of `setnx-expire`
//! is gone (`setnx_expire.lua`).
//!
//! **Guarantee:** every lock expires after the TTL; mutual exclusion while
//! the work is shorter than the TTL.
//!
//! **How it fails:** the release is still a blind `DEL` (000 scheme 3 fixes
//! only the set-up). When the work outlives the TTL, the key expires, a
//! second holder takes it, and the first holder's `DEL` then deletes the
//! *second* holder's lock — letting a third in. Same as `set-nx-px`.

use seckill_wire::strategies::StrategyName;
use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use crate::error::GrabError;
use crate::locking::{lock_key, new_token, release_by_del, DistributedLock, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `setnx-expire-lua`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::SetnxExpireLua,
    seed: "000 scheme 3: SETNX + EXPIRE in one Lua script",
    guarantee: "atomic set-up; still deletes another holder's lock after a timeout",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Ttl,
};

/// `setnx_expire.lua`, the acquire: compiled once per process.
static ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("setnx_expire.lua")));

/// SETNX + PEXPIRE in one script, released by DEL.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetnxExpireLua;

impl SetnxExpireLua {
    /// Build the strategy.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait]
impl DistributedLock for SetnxExpireLua {
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
        let won: i64 = ACQUIRE_SCRIPT
            .key(&key)
            .arg(&token)
            .arg(cx.deps.lock_ttl.as_millis() as u64)
            .invoke_async(&mut conn)
            .await?;
        Ok((won == 1).then(|| LockGuard::remote(key, token)))
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        release_by_del(cx, &guard).await
    }
}
