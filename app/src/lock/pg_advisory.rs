//! `pg-advisory` — `pg_advisory_xact_lock(product_id)`.
//!
//! **Seed step:** 003's database locks, in the form PostgreSQL offers for
//! exactly this job: a lock on an application-chosen number rather than on
//! a row, released automatically at commit or rollback (or when the
//! connection dies).
//!
//! **Guarantee:** safe. Every grab of the product takes the same advisory
//! lock before reading; the wait is bounded by `lock_timeout`
//! (= `SECKILL_LOCK_WAIT_MS`), then `busy`.
//!
//! **How it fails:** like `pg-for-update`, waiters each hold a pooled
//! connection. The key space is shared by everything in the database: two
//! features that both lock "number 1" exclude each other by accident.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::locking::grab_in_transaction;
use crate::section::{RowLock, SectionSpec};
use crate::strategy::{GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo};

/// Name, seed and guarantee of `pg-advisory`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::PgAdvisory,
    seed: "003 database locks: PostgreSQL transaction-scoped advisory lock",
    guarantee: "safe; released with the transaction, even when the holder dies",
    safety: Safety::Safe,
    kind: Kind::InTransaction,
};

/// `pg_advisory_xact_lock` before the section's read.
#[derive(Debug, Clone, Copy, Default)]
pub struct PgAdvisory;

#[async_trait]
impl Strategy for PgAdvisory {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        let spec = SectionSpec::plain(INFO.name.as_str()).with_row_lock(RowLock::Advisory);
        grab_in_transaction(cx, req, spec).await
    }
}
