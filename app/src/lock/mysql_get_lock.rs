//! `mysql-get-lock` — MariaDB's named user lock: `GET_LOCK(name, timeout)`
//! held by one database *session*, given back by `RELEASE_LOCK(name)`.
//!
//! **Seed step:** 003 "基于数据库实现分布式锁" (and 000's "关系型数据库比如
//! MySQL"): the database as the lock service. Instead of the seed's lock
//! table (that is `pg-lock-table`) or `FOR UPDATE` (`pg-for-update`), MySQL
//! and MariaDB offer a lock made for this: a named lock owned by the
//! connection that took it, freed when that connection ends.
//!
//! - Acquire: take a dedicated connection from a small pool of its own and
//!   run `SELECT GET_LOCK('lock:product:{id}', <wait budget in seconds>)`:
//!   the server parks the waiter and wakes it the moment the holder
//!   releases (no polling). `1` = ours, `0` = the budget ran out (`busy`).
//! - Hold: the connection lives in the guard — the lock *is* that session.
//! - Release: `SELECT RELEASE_LOCK(name)` on the same connection (`1` =
//!   released, `0`/`NULL` = not ours any more), then the connection goes
//!   back to the pool. A guard dropped without its release closes its
//!   connection instead of pooling it (sqlx does that in the background),
//!   which frees the lock on the server; no I/O of ours happens in `Drop`.
//!
//! Names are server-wide, not per database: every service pointed at the
//! same MariaDB shares `lock:product:{id}`.
//!
//! **Guarantee:** mutual exclusion while the holding session lives; a holder
//! that crashes (its connection drops) frees the lock at once — no TTL to
//! wait out, no TTL to outlive by slow work.
//!
//! **How it fails:** a paused holder keeps its lock (its socket stays
//! open) and every other grab waits — `busy`, not oversold. It breaks when
//! the server ends a session it believes dead while its holder still works:
//! a network cut that outlasts TCP keepalive, a proxy or `wait_timeout`
//! closing an idle-looking connection, an admin's `KILL`. The lock is freed
//! and another grab enters, while the first holder keeps working, unaware:
//! it finds out only when it next talks to that connection — after its own
//! write went to PostgreSQL. The session is a lease whose length nobody
//! chose. Only fencing (`fenced`) stops the stale write.

use seckill_wire::strategies::StrategyName;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use tokio::time::{timeout, Instant};

use crate::error::{unavailable, Dependency, GrabError};
use crate::locking::{
    lock_key, new_token, DistributedLock, Held, HeldSession, LockGuard, Released,
};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `mysql-get-lock`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::MysqlGetLock,
    seed: "003 database locks: MariaDB GET_LOCK / RELEASE_LOCK on one session",
    guarantee: "safe while the holding session lives; connection loss frees the lock",
    safety: Safety::SafeWhileHoldersLive,
    kind: Kind::Session,
};

/// Extra time the client gives a `GET_LOCK` beyond its server-side timeout
/// before it gives up on the connection.
const CLIENT_SLACK: Duration = Duration::from_secs(1);

/// The `GET_LOCK` lock. `pool` is `None` when `SECKILL_MYSQL_URL` is unset.
#[derive(Debug)]
pub struct MysqlGetLock {
    pool: Option<MySqlPool>,
}

impl MysqlGetLock {
    /// A lock on the server at `url` (lazy: nothing connects until the
    /// first grab), with at most `max_connections` sessions — holders and
    /// waiters each occupy one.
    pub fn new(url: Option<&str>, max_connections: u32) -> anyhow::Result<Self> {
        let pool = url
            .map(|url| {
                MySqlPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(Duration::from_secs(3))
                    .connect_lazy(url)
            })
            .transpose()
            .map_err(|e| anyhow::anyhow!("invalid SECKILL_MYSQL_URL: {e}"))?;
        Ok(Self { pool })
    }

    fn pool(&self) -> Result<&MySqlPool, GrabError> {
        self.pool.as_ref().ok_or_else(|| GrabError::Unavailable {
            dependency: Dependency::Mysql,
            detail: "mysql-get-lock is not configured (SECKILL_MYSQL_URL is unset)".into(),
        })
    }

    /// One `GET_LOCK` with a server-side wait of `wait` (0: one attempt).
    async fn get_lock(
        &self,
        product_id: i64,
        wait: Duration,
    ) -> Result<Option<LockGuard>, GrabError> {
        let pool = self.pool()?;
        let started = Instant::now();
        let mut conn = match timeout(wait + CLIENT_SLACK, pool.acquire()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(sqlx::Error::PoolTimedOut)) | Err(_) => return Ok(None),
            Ok(Err(e)) => return Err(unavailable(Dependency::Mysql, &e)),
        };
        let key = lock_key(product_id);
        let left = wait.saturating_sub(started.elapsed());
        let query = sqlx::query_scalar::<_, Option<i64>>("SELECT GET_LOCK(?, ?)")
            .bind(&key)
            .bind(left.as_secs_f64())
            .fetch_one(&mut *conn);
        match timeout(left + CLIENT_SLACK, query).await {
            Ok(Ok(Some(1))) => {
                let mut guard = LockGuard::remote(key, new_token());
                guard.held = Held::Session(HeldSession::new(conn));
                Ok(Some(guard))
            }
            Ok(Ok(_)) => Ok(None),
            Ok(Err(e)) => {
                conn.close_on_drop();
                Err(unavailable(Dependency::Mysql, &e))
            }
            Err(_) => {
                // The server may still grant the lock to this session after
                // we stopped listening: never hand it back to the pool.
                conn.close_on_drop();
                Ok(None)
            }
        }
    }
}

#[async_trait]
impl DistributedLock for MysqlGetLock {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        self.pool
            .is_none()
            .then_some("no MariaDB/MySQL configured: set SECKILL_MYSQL_URL")
    }

    async fn try_acquire(
        &self,
        _cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        self.get_lock(product_id, Duration::ZERO).await
    }

    /// One `GET_LOCK` that waits on the server for the whole budget.
    async fn acquire(&self, cx: GrabContext<'_>, product_id: i64) -> Result<LockGuard, GrabError> {
        let deps = cx.deps;
        deps.metrics
            .lock_attempts
            .with_label_values(&[INFO.name.as_str()])
            .inc();
        self.get_lock(product_id, deps.lock_wait)
            .await?
            .ok_or(GrabError::Busy(deps.lock_wait))
    }

    async fn release(&self, _cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        let Some(mut conn) = guard.session().and_then(HeldSession::take) else {
            return Err(GrabError::Internal(
                "mysql-get-lock guard without its session".into(),
            ));
        };
        let released = sqlx::query_scalar::<_, Option<i64>>("SELECT RELEASE_LOCK(?)")
            .bind(&guard.key)
            .fetch_one(&mut *conn)
            .await;
        match released {
            Ok(Some(1)) => Ok(Released::Released),
            Ok(_) => {
                // Not ours (or gone): this session must not be reused.
                conn.close_on_drop();
                Ok(Released::NotOwner)
            }
            Err(e) => {
                conn.close_on_drop();
                Err(unavailable(Dependency::Mysql, &e))
            }
        }
    }
}
