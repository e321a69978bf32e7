//! `pg-lock-table` — a lock is a row in `distributed_locks`; the unique
//! index on its name lets one `INSERT` win.
//!
//! **Seed step:** 003 "基于数据库实现分布式锁 · 1. 唯一索引": insert a row
//! named after the resource (`product:{id}`), delete it to unlock, and
//! "每隔一定时间把数据库中的超时数据清理一遍" — sweep rows older than the
//! timeout.
//!
//! **Guarantee:** mutual exclusion while holders live and finish within
//! the TTL; the database is the only dependency.
//!
//! **How it fails:** a holder that dies leaves its row: every grab answers
//! `busy` until the row is older than `SECKILL_LOCK_TTL_MS` and a waiter
//! sweeps it (here waiters sweep on each failed attempt, so recovery comes
//! one TTL after the crash). A holder slower than the TTL is swept while it
//! works — two holders. Every attempt is a round trip to the database that
//! also serves the orders: polling load lands on the busiest component.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::db::lock_row_name;
use crate::error::GrabError;
use crate::locking::{new_token, DistributedLock, LockGuard, Released};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `pg-lock-table`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::PgLockTable,
    seed: "003 scheme 1: unique-index lock table, stale rows swept by age",
    guarantee: "safe while holders live; a dead holder blocks until the sweep",
    safety: Safety::SafeWhileHoldersLive,
    kind: Kind::LockTable,
};

/// INSERT to lock, DELETE to unlock.
#[derive(Debug, Clone, Copy, Default)]
pub struct PgLockTable;

#[async_trait]
impl DistributedLock for PgLockTable {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        let name = lock_row_name(product_id);
        let owner = new_token();
        let pool = &cx.deps.pool;
        let inserted = sqlx::query(
            "INSERT INTO distributed_locks (name, owner) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&name)
        .bind(&owner)
        .execute(pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(Some(LockGuard::remote(name, owner)));
        }
        // Sweep a holder that has outlived the TTL (presumed dead).
        sqlx::query(
            "DELETE FROM distributed_locks
             WHERE name = $1 AND acquired_at < now() - make_interval(secs => $2)",
        )
        .bind(&name)
        .bind(cx.deps.lock_ttl.as_secs_f64())
        .execute(pool)
        .await?;
        Ok(None)
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        let deleted = sqlx::query("DELETE FROM distributed_locks WHERE name = $1 AND owner = $2")
            .bind(&guard.key)
            .bind(&guard.token)
            .execute(&cx.deps.pool)
            .await?
            .rows_affected();
        Ok(if deleted == 1 {
            Released::Released
        } else {
            Released::NotOwner
        })
    }
}
