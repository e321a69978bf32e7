//! `pg-for-update` — the pessimistic row lock `SELECT ... FOR UPDATE`.
//!
//! **Seed step:** 003 "基于排他锁": add `for update` to the query and the
//! database holds an exclusive lock on the row until the transaction ends.
//!
//! **Guarantee:** safe. The row lock serialises every grab of the product
//! inside PostgreSQL; a crashed holder's connection dies and the lock goes
//! with it. The wait is bounded by `lock_timeout` (= `SECKILL_LOCK_WAIT_MS`),
//! after which the grab answers `busy`.
//!
//! **How it fails:** it does not oversell; it costs. Each waiter holds a
//! pooled connection while it waits (003: "就会占用数据库连接 ... 把数据库连接池撑爆"),
//! so a hot product can exhaust the pool for every other product. Seed 003's
//! MySQL caveat (a table lock when the index is not used) does not apply to
//! a primary-key lookup in PostgreSQL. The `unlock_before_commit` fault has
//! no effect: the lock *is* the transaction. And the transaction can end
//! before its `ROLLBACK`: a statement that fails (a refused `INSERT`,
//! `order-insert-fails`) aborts it there and frees the row at once, while
//! the grab's code still runs — the next holder may enter first (the
//! history's overlap); nothing more commits from the aborted transaction.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::grab_in_transaction;
use crate::section::{RowLock, SectionSpec};
use crate::strategy::{GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo};

/// Name, seed and guarantee of `pg-for-update`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::PgForUpdate,
    seed: "003: exclusive row lock, SELECT ... FOR UPDATE",
    guarantee: "safe; waiters hold pooled connections while they wait",
    safety: Safety::Safe,
    kind: Kind::InTransaction,
};

/// `SELECT ... FOR UPDATE` inside the section's transaction.
#[derive(Debug, Clone, Copy, Default)]
pub struct PgForUpdate;

#[async_trait]
impl Strategy for PgForUpdate {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        let spec = SectionSpec::plain(INFO.name.as_str()).with_row_lock(RowLock::ForUpdate);
        grab_in_transaction(cx, req, spec).await
    }
}
