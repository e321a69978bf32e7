//! One strategy's run of `run`/`compare`: reset, switch, scrape, the goose
//! attack with a progress line (and product 1's stock sampled for the
//! chart), then the audit, the history and the lock figures, judged.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use indicatif::ProgressBar;

use super::read_back::{read_back, settle, ReadBack};
use super::settings::{Conditions, Settings};
use crate::api::{
    AuditRow, Faults, FaultsPatch, Scrape, Service, ServiceError, StrategyEntry, StrategyName,
};
use crate::expect::{self, breaks_under};
use crate::judge::{Evidence, Guarantee, RunVerdict};
use crate::load::{self, Live, Outcome, Shard, Workload};
use crate::report::{BatchFigures, LockFigures, Run};

/// One strategy's run under `conditions`; also whether it was
/// interrupted (Ctrl-C) rather than finished: prepared, attacked, read
/// back, judged, each a function below.
pub(super) async fn strategy(
    service: &Service,
    entry: &StrategyEntry,
    workload: &Workload,
    settings: &Settings,
    bar: &ProgressBar,
    conditions: &Conditions,
) -> anyhow::Result<(Run, bool)> {
    let before = prepare(service, entry, workload, settings.history).await?;
    let (attacked, interrupted) =
        attack(service, entry, workload, Shard::WHOLE, &settings.out, bar).await?;
    let run = conclude(service, entry, settings, conditions, &before, attacked).await?;
    Ok((run, interrupted))
}

/// A strategy's run made ready: every product reset to the workload's
/// stock, the strategy in force on every replica, the history started;
/// the metrics the run's figures are measured from.
pub(super) async fn prepare(
    service: &Service,
    entry: &StrategyEntry,
    workload: &Workload,
    history: bool,
) -> Result<Scrape, ServiceError> {
    for product in 1..=workload.products {
        service.reset(product, workload.stock).await?;
    }
    service.switch(entry.name, 1).await?;
    if history {
        service.history_start().await?;
    }
    service.scrape().await
}

/// What a load left in this process: its tally, product 1's stock over its
/// time, and where goose wrote its own report (relative to the report
/// folder).
pub(super) struct Attacked {
    pub live: Arc<Live>,
    pub stock_samples: Vec<(f64, i64)>,
    pub goose_file: String,
}

/// `shard`'s part of the goose attack on a prepared run, product 1's stock
/// sampled meanwhile; also whether Ctrl-C interrupted it.
pub(super) async fn attack(
    service: &Service,
    entry: &StrategyEntry,
    workload: &Workload,
    shard: Shard,
    out: &std::path::Path,
    bar: &ProgressBar,
) -> anyhow::Result<(Attacked, bool)> {
    let name = entry.name.as_str();
    let live = Arc::new(Live::default());
    let ticker = StockTicker::start(service, &live, bar, workload.stock);
    let goose_file = if shard == Shard::WHOLE {
        format!("goose/{name}.html")
    } else {
        format!("goose/{name}-{}.html", shard.file_stem())
    };
    let result = load::run(
        workload,
        shard,
        &service.urls,
        live.clone(),
        &out.join(&goose_file),
    )
    .await;
    let stock_samples = ticker.stop();
    let (_, interrupted) = result.with_context(|| format!("goose run of {name}"))?;
    let attacked = Attacked {
        live,
        stock_samples,
        goose_file,
    };
    Ok((attacked, interrupted))
}

/// A run after its load (one process's, or every shard's merged): read
/// back, judged against what it promises under `conditions`, measured from
/// `before`, assembled into the report's row.
pub(super) async fn conclude(
    service: &Service,
    entry: &StrategyEntry,
    settings: &Settings,
    conditions: &Conditions,
    before: &Scrape,
    attacked: Attacked,
) -> anyhow::Result<Run> {
    let Attacked {
        live,
        stock_samples,
        goose_file,
    } = attacked;
    let workload = &settings.workload;
    let mut after = settle(
        read_back(service, settings, &live, workload).await,
        &live.ledger,
        workload.products,
    );
    let delta = service.scrape().await?.since(before);
    let mine = after.history.as_ref().map(|h| h.of(entry.name.as_str()));
    let evidence = Evidence::new(&after.rows, mine.as_ref(), after.accounting);
    let breaches = evidence.breaches(Guarantee::of(entry.kind));
    let (expected_to_break, safe) = class_under(
        entry,
        conditions,
        &settings.treat_as_safe,
        &settings.expect_unsafe,
        &mut after.gaps,
    );
    let verdict = RunVerdict::of(safe, &breaches, after.gaps.is_empty());
    let judged = Judged {
        verdict,
        breaches: breaches.iter().map(ToString::to_string).collect(),
        evidence,
        expected_to_break,
    };
    Ok(assemble(
        entry,
        &live,
        &delta,
        after,
        judged,
        stock_samples,
        goose_file,
    ))
}

/// What every run of one invocation runs under, set and read once before
/// the first: `--work-delay-ms` in force (and the patch that puts it back),
/// the faults in force — or why they could not be read, which makes every
/// run inconclusive, never fault-free.
pub(super) struct Ready {
    pub restore: Option<FaultsPatch>,
    pub faults: Result<Faults, String>,
}

/// Every product of the workload known to the service, the work delay set,
/// the faults in force read (a workshop may have set some).
pub(super) async fn ready(service: &Service, settings: &Settings) -> Result<Ready, ServiceError> {
    for product in 1..=settings.workload.products {
        service.product(&service.urls[0], product).await?;
    }
    let restore = match settings.work_delay_ms {
        Some(ms) => Some(set_work_delay(service, ms).await?),
        None => None,
    };
    let faults = service.faults().await.map_err(|e| format!("{e:#}"));
    if let Err(e) = &faults {
        eprintln!("seckill-loadgen: the faults in force could not be read ({e}): every run is inconclusive");
    }
    Ok(Ready { restore, faults })
}

/// Put `work_delay_ms` back as [`ready`] found it (a failure is said, not fatal).
pub(super) async fn restore(service: &Service, patch: Option<FaultsPatch>) {
    if let Some(patch) = patch {
        if let Err(e) = service.set_faults(patch).await {
            eprintln!("seckill-loadgen: could not restore work_delay_ms: {e}");
        }
    }
}

/// Set the work inside the critical section for this run; the patch that
/// puts it back as it was afterwards.
async fn set_work_delay(service: &Service, ms: u64) -> Result<FaultsPatch, ServiceError> {
    let before = service.faults().await?;
    service
        .set_faults(FaultsPatch {
            work_delay_ms: Some(ms),
            ..FaultsPatch::default()
        })
        .await?;
    Ok(FaultsPatch {
        work_delay_ms: Some(before.work_delay_ms),
        ..FaultsPatch::default()
    })
}

/// Product 1's stock every 250 ms while the attack runs: the progress
/// line, and the report's stock-over-time chart.
struct StockTicker {
    task: tokio::task::JoinHandle<()>,
    samples: Arc<std::sync::Mutex<Vec<(f64, i64)>>>,
}

impl StockTicker {
    fn start(service: &Service, live: &Arc<Live>, bar: &ProgressBar, stock: u64) -> Self {
        let samples = Arc::new(std::sync::Mutex::new(vec![(0.0, stock as i64)]));
        let (live, bar, service, into) =
            (live.clone(), bar.clone(), service.clone(), samples.clone());
        let task = tokio::spawn(async move {
            loop {
                let stock = service
                    .product(&service.urls[0], 1)
                    .await
                    .ok()
                    .map(|p| p.stock);
                let secs = live.elapsed().as_secs_f64();
                if let (Some(stock), true) = (stock, secs > 0.0) {
                    into.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((secs, stock));
                }
                let rate = if secs > 0.0 {
                    live.grabs() as f64 / secs
                } else {
                    0.0
                };
                bar.set_message(format!(
                    "{secs:5.1}s  {rate:7.0} grabs/s  orders {}  stock left {}",
                    live.outcome(Outcome::Ordered),
                    stock.map_or("?".into(), |s| s.to_string())
                ));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        Self { task, samples }
    }

    /// Stopped; the samples taken.
    fn stop(self) -> Vec<(f64, i64)> {
        self.task.abort();
        std::mem::take(
            &mut *self
                .samples
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// The run judged: its verdict, the breaches found, the evidence behind
/// them, and what the faults in force were expected to break.
struct Judged {
    verdict: RunVerdict,
    breaches: Vec<String>,
    evidence: Evidence,
    expected_to_break: Option<String>,
}

/// The lock's figures of the run, from the service's metrics (`delta`)
/// and the grabs' own `Server-Timing`.
fn lock_figures(entry: &StrategyEntry, delta: &Scrape, live: &Live) -> LockFigures {
    let s = [("strategy", entry.name.as_str())];
    let count = |metric: &str, extra: &[(&str, &str)]| -> u64 {
        let mut filter = s.to_vec();
        filter.extend_from_slice(extra);
        delta.sum(metric, &filter).round().max(0.0) as u64
    };
    LockFigures {
        attempts: count("seckill_lock_attempts_total", &[]),
        retries: count("seckill_lock_retries_total", &[]),
        // Exact, from each grab's `Server-Timing` (a histogram bucket of
        // the service would only bound it): never above the grabs' p99.
        acquire_wait_p99_ms: live.lock_wait_ms(0.99),
        hold_p99_ms: delta
            .quantile("seckill_lock_hold_duration_seconds", &s, 0.99)
            .map(|v| v * 1000.0),
        renewals: count("seckill_lock_renewals_total", &[]),
        lost: count("seckill_lock_lost_total", &[]),
        releases_not_owner: count("seckill_lock_releases_total", &[("result", "not_owner")]),
        fence_rejections: count("seckill_fence_rejections_total", &[]),
        redlock_quorum_failures: if entry.is(StrategyName::Redlock) {
            delta
                .sum("seckill_redlock_quorum_failures_total", &[])
                .round()
                .max(0.0) as u64
        } else {
            0
        },
    }
}

/// The batched ceiling's figures, when the run batched its orders.
fn batch_figures(entry: &StrategyEntry, delta: &Scrape, live: &Live) -> Option<BatchFigures> {
    let s = [("strategy", entry.name.as_str())];
    let batches = delta
        .sum("seckill_order_batch_size_count", &s)
        .round()
        .max(0.0) as u64;
    (batches > 0).then(|| BatchFigures {
        batches,
        mean_size: delta.sum("seckill_order_batch_size_sum", &s) / batches as f64,
        p50_size: delta.quantile("seckill_order_batch_size", &s, 0.50),
        p99_size: delta.quantile("seckill_order_batch_size", &s, 0.99),
        wait_p50_ms: live.batch_wait_ms(0.50),
        wait_p99_ms: live.batch_wait_ms(0.99),
        commit_p99_ms: delta
            .quantile("seckill_order_batch_commit_seconds", &s, 0.99)
            .map(|v| v * 1000.0),
    })
}

/// The report's row of the run: every figure, read back and judged.
fn assemble(
    entry: &StrategyEntry,
    live: &Live,
    delta: &Scrape,
    after: ReadBack,
    judged: Judged,
    mut stock_over_time: Vec<(f64, i64)>,
    goose_report: String,
) -> Run {
    let ReadBack {
        rows,
        accounting,
        history,
        sections,
        gaps,
    } = after;
    let Judged {
        verdict,
        breaches,
        evidence,
        expected_to_break,
    } = judged;
    let sum = |f: fn(&AuditRow) -> i64| rows.iter().map(f).sum::<i64>();
    let secs = live.elapsed().as_secs_f64().max(1e-3);
    let orders = sum(|r| r.orders);
    if let Some(first) = rows.iter().find(|r| r.product_id == 1) {
        // The audit's stock closes the line (settled, after the last grab).
        stock_over_time.push((secs, first.stock));
    }
    Run {
        strategy: entry.name,
        safety: entry.safety,
        kind: entry.kind,
        guarantee: entry.guarantee.clone(),
        verdict,
        violations: !breaches.is_empty(),
        breaches,
        duration_s: (secs * 1000.0).round() / 1000.0,
        grabs: live.grabs(),
        grabs_per_sec: live.grabs() as f64 / secs,
        orders,
        orders_per_sec: orders as f64 / secs,
        ordered_units: sum(|r| r.ordered_units),
        p50_ms: live.latency_ms(0.50),
        p95_ms: live.latency_ms(0.95),
        p99_ms: live.latency_ms(0.99),
        max_ms: live.latency_max_ms(),
        outcomes: Outcome::ALL
            .iter()
            .map(|o| (o.as_str().to_owned(), live.outcome(*o)))
            .collect(),
        initial_stock: sum(|r| r.initial_stock),
        stock_left: sum(|r| r.stock),
        damage: evidence.damage,
        negative_stock: evidence.negative_stock,
        buyer_p50_ms: live.buyer_latency_ms(0.50),
        buyer_p99_ms: live.buyer_latency_ms(0.99),
        lock: lock_figures(entry, delta, live),
        batch: batch_figures(entry, delta, live),
        overlaps: evidence.overlaps,
        max_holders: evidence.max_holders,
        history_errors: history.as_ref().map(|h| h.errors),
        stale: history.as_ref().map(|h| h.stale),
        first_overlaps: history.map(|h| h.first_overlaps).unwrap_or_default(),
        accounting,
        inconclusive_because: gaps,
        sections,
        expected_to_break,
        stock_over_time,
        audit: rows,
        goose_report,
    }
}

/// The strategy's class under `conditions`: what the faults in force are
/// expected to break (if anything), and whether it is classed safe —
/// unless the service says it is unsafe (or single-replica while several
/// replicas run), or the faults in force aim at its weak point (see
/// [`crate::expect::breaks_under`]); `--treat-as-safe` /
/// `--expect-unsafe` override. Faults that could not
/// be read leave the class unknown: not safe — no audit breach becomes a
/// VIOLATION on a guess — and a gap, so the run is inconclusive unless it
/// lied to a buyer.
fn class_under(
    entry: &StrategyEntry,
    conditions: &Conditions,
    treat_as_safe: &[StrategyName],
    expect_unsafe: &[StrategyName],
    gaps: &mut Vec<String>,
) -> (Option<String>, bool) {
    let faults = match &conditions.faults {
        Ok(faults) => faults,
        Err(e) => {
            gaps.push(format!("the faults in force could not be read ({e})"));
            return (None, false);
        }
    };
    let expected_to_break = breaks_under(entry.kind, faults, conditions.ttl_ms);
    let safe = if treat_as_safe.contains(&entry.name) {
        true
    } else if expect_unsafe.contains(&entry.name) {
        false
    } else {
        expect::classed_safe(entry, conditions.replicas, expected_to_break.is_some())
    };
    (expected_to_break, safe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Faults;
    use crate::judge::Breach;

    fn entry() -> StrategyEntry {
        crate::report::fixtures::entry(crate::api::StrategyName::SetNxPxToken)
    }

    fn conditions(faults: Result<Faults, String>) -> Conditions {
        Conditions {
            faults,
            ttl_ms: 3000,
            replicas: 2,
        }
    }

    #[test]
    fn faults_that_cannot_be_read_make_the_run_inconclusive_not_fault_free() {
        let mut gaps = Vec::new();
        let unread = conditions(Err("503 Service Unavailable".into()));
        let (breaks, safe) = class_under(&entry(), &unread, &[], &[], &mut gaps);
        assert_eq!((breaks, safe), (None, false));
        assert_eq!(
            gaps,
            ["the faults in force could not be read (503 Service Unavailable)"]
        );
        // An audit breach under unknown faults is not a VIOLATION.
        let verdict = RunVerdict::of(safe, &[Breach::LostUpdates(2)], gaps.is_empty());
        assert_eq!(verdict, RunVerdict::Inconclusive);
    }

    #[test]
    fn faults_read_as_none_class_the_token_lock_safe() {
        let mut gaps = Vec::new();
        let read = conditions(Ok(Faults::with_work_delay(0)));
        let (breaks, safe) = class_under(&entry(), &read, &[], &[], &mut gaps);
        assert_eq!((breaks, safe), (None, true));
        assert!(gaps.is_empty());
        let verdict = RunVerdict::of(safe, &[Breach::LostUpdates(2)], gaps.is_empty());
        assert_eq!(verdict, RunVerdict::Violation);
    }
}
