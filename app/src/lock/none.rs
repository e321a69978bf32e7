//! `none` — no lock at all: the naive read-modify-write.
//!
//! **Seed step:** the starting point of every seed (001 "背景", 004 before
//! v1): a single-process program that reads the stock, decides, and writes it
//! back, run on many requests at once.
//!
//! **Guarantee:** none. It exists so the others have something to be
//! compared with.
//!
//! **How it fails:** two grabs read the same stock, both write `read − 1`:
//! one decrement is lost (`lost_updates` in the audit). With the one-order-
//! per-user check also racing, the same user can buy twice (`duplicates`),
//! and once the stock column lags behind the orders, more units are sold
//! than existed (`oversold`).

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;

use crate::error::GrabError;
use crate::section::{self, SectionSpec};
use crate::strategy::{GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo};

/// Name, seed and guarantee of `none`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::None,
    seed: "the naive read-modify-write every seed starts from",
    guarantee: "none: oversells and loses updates under contention",
    safety: Safety::Unsafe,
    kind: Kind::NoLock,
};

/// The critical section without any lock.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLock;

#[async_trait]
impl Strategy for NoLock {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        match section::prepare(cx, req, SectionSpec::plain(INFO.name.as_str())).await? {
            Some(prepared) => prepared.commit().await,
            None => Err(GrabError::Internal(
                "unconditional write matched no row".into(),
            )),
        }
    }
}
