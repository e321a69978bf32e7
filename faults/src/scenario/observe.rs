//! What a case left behind, read after its load: the audit, the history,
//! the lock metrics and the buyers' tally, as one [`Observed`].

use seckill_load::api::StrategyName;
use std::collections::BTreeMap;

use anyhow::Context as _;

use super::record::Observed;
use super::world::{Case, World};
use seckill_load::api::HistoryReport;
use seckill_load::load::Outcome;

/// Read the audit, the history, the orders and the lock metrics after the
/// load; the history as read is returned too (its first overlaps and its
/// sections go in the report).
pub async fn observe(
    world: &World,
    case: &Case,
    strategy: StrategyName,
) -> anyhow::Result<(Observed, HistoryReport)> {
    observe_with(world, case, strategy, true).await
}

/// [`observe`] without the lock metrics (a round of a case: the case
/// scrapes them once, at its end — they count from the replica's start).
pub async fn observe_round(
    world: &World,
    case: &Case,
    strategy: StrategyName,
) -> anyhow::Result<(Observed, HistoryReport)> {
    observe_with(world, case, strategy, false).await
}

async fn observe_with(
    world: &World,
    case: &Case,
    strategy: StrategyName,
    scrape_metrics: bool,
) -> anyhow::Result<(Observed, HistoryReport)> {
    let service = world.service();
    let audit = service.audit().await?;
    let row = audit
        .products
        .iter()
        .find(|r| r.product_id == 1)
        .cloned()
        .context("the audit lists no product 1")?;
    // The arbiter is the lab's own Redis, never one a scenario breaks: a
    // history that cannot be read is the lab's failure, not the case's.
    let history = service.history_all().await?;
    let mine = history.of(strategy.as_str());
    // Product 1 only: the scenarios' buyers buy nothing else.
    // Unreadable orders leave `accounting` empty: the case is inconclusive.
    let accounting = service.orders(1).await.ok().map(|orders| {
        case.tally
            .ledger
            .account(&BTreeMap::from([(1, orders)]), std::slice::from_ref(&row))
    });
    let (mean_wait_ms, lock_retries) = if scrape_metrics {
        let scrape = service.scrape().await?;
        let s = [("strategy", strategy.as_str())];
        let waits = scrape.sum("seckill_lock_acquire_duration_seconds_sum", &s);
        let waited = scrape.sum("seckill_lock_acquire_duration_seconds_count", &s);
        let mean = if waited > 0.0 {
            waits / waited * 1000.0
        } else {
            0.0
        };
        (
            mean,
            scrape.sum("seckill_lock_retries_total", &s).round() as u64,
        )
    } else {
        (0.0, 0)
    };
    let t = &case.tally;
    let o = Observed {
        overlaps: mine.overlaps,
        max_holders: mine.max_holders,
        damage: row.damage,
        negative_stock: row.negative_stock,
        rejected: t.outcome(Outcome::Rejected),
        busy: t.outcome(Outcome::Busy),
        orders: row.orders,
        unavailable: t.unavailable(),
        errors: t.outcome(Outcome::Error) - t.unavailable(),
        entries: mine.entries,
        history_errors: history.errors,
        stale: history.stale,
        accounting,
        lock_retries,
        mean_wait_ms: (mean_wait_ms * 100.0).round() / 100.0,
        contended: false,
        recovered_after_ms: case
            .crashed_at
            .and_then(|at| t.first_order_after(at).map(|o| (o - at).as_millis() as u64)),
    };
    let observed = Observed {
        contended: o.lock_retries > 0
            || o.busy > 0
            || o.overlaps > 0
            || o.max_holders > 1
            || o.mean_wait_ms >= 1.0,
        ..o
    };
    Ok((observed, history))
}
