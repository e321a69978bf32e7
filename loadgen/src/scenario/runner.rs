//! The run of `scenario`: every chosen scenario × strategy × variant, each
//! case in a world of its own, observed (audit, history, lock metrics) and
//! judged; the lab stopped and its database dropped at the end.

use anyhow::Context as _;
use tokio::time::Instant;

use super::buyers::Tally;
use super::case::{judge, CaseResult, Checks, Observed};
use super::lab::{Lab, Options};
use super::list::{shared_lock, Scenario};
use super::report::{ScenarioReport, Skipped};
use super::world::{Case, CaseRun, World};
use crate::api::{HistoryReport, StrategyEntry};
use crate::judge::{Expected, Guarantee};

/// Run every chosen scenario and collect the report.
pub async fn run_all(chosen: &[Scenario], options: &Options) -> anyhow::Result<ScenarioReport> {
    let started = Instant::now();
    let mut lab = Lab::new(options).await?;
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    let outcome = async {
        lab.read_strategies().await?;
        let all: Vec<String> = chosen
            .iter()
            .flat_map(|scenario| strategies_of(&lab, *scenario, options))
            .collect();
        lab.start_coordination(&all).await?;
        for &scenario in chosen {
            let strategies = strategies_of(&lab, scenario, options);
            for strategy in &strategies {
                let entry = lab.strategy(strategy)?.clone();
                for variant in scenario.variants() {
                    let (expected, why) = match scenario.expect(&entry, variant) {
                        Ok(e) => e,
                        Err(reason) => {
                            if variant == &scenario.variants()[0] {
                                skipped.push(Skipped {
                                    name: scenario.name().to_owned(),
                                    strategy: strategy.clone(),
                                    reason,
                                });
                            }
                            continue;
                        }
                    };
                    if !options.quiet {
                        println!(
                            "== {} · {}{} (expected: {})",
                            scenario.name(),
                            strategy,
                            if variant.is_empty() {
                                String::new()
                            } else {
                                format!(" · {variant}")
                            },
                            expected.as_str()
                        );
                    }
                    let result = run_case(&mut lab, scenario, &entry, variant, expected, why)
                        .await
                        .with_context(|| format!("{} / {strategy} {variant}", scenario.name()))?;
                    println!(
                        "{:>20} {:<16} {:<20} {:<12} {}",
                        result.name,
                        result.strategy,
                        result.variant.as_deref().unwrap_or("-"),
                        result.verdict.as_str(),
                        result.verdict_reason
                    );
                    results.push(result);
                }
            }
        }
        anyhow::Ok(())
    }
    .await;
    lab.drop_database().await;
    if outcome.is_ok() {
        let _ = std::fs::remove_dir_all(&lab.dir);
    } else {
        eprintln!(
            "seckill-loadgen: replica logs kept in {}",
            lab.dir.display()
        );
    }
    outcome?;
    Ok(ScenarioReport {
        tool: "seckill-loadgen",
        version: env!("CARGO_PKG_VERSION"),
        quick: options.quick,
        scenarios: results,
        skipped,
        duration_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

/// The strategies a scenario runs: `--strategies`, else its defaults —
/// its list, or every strategy of the service whose kind it aims at.
fn strategies_of(lab: &Lab, scenario: Scenario, options: &Options) -> Vec<String> {
    if !options.strategies.is_empty() {
        return options.strategies.clone();
    }
    if scenario.every_shared_lock() {
        return lab
            .listed
            .iter()
            .flat_map(|listed| &listed.strategies)
            .filter(|s| shared_lock(s.kind))
            .map(|s| s.name.clone())
            .collect();
    }
    scenario
        .strategies()
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

async fn run_case(
    lab: &mut Lab,
    scenario: Scenario,
    entry: &StrategyEntry,
    variant: &str,
    expected: Expected,
    why: String,
) -> anyhow::Result<CaseResult> {
    let strategy = entry.name.as_str();
    let mut case = Case::new(lab.options.quiet);
    let mut world = World::default();
    let faults = scenario
        .run(CaseRun {
            lab,
            world: &mut world,
            case: &mut case,
            strategy,
            variant,
        })
        .await?;
    let (observed, history) = observe(&world, &case, strategy).await?;
    let guarantee = Guarantee::of(entry.kind);
    let checks = Checks {
        fault_landed: case.fault_landed,
        crash: scenario == Scenario::CrashHolder,
        outage: scenario == Scenario::DependencyLoss,
    };
    let (verdict, verdict_reason) = judge(checks, guarantee, expected, &observed);
    Ok(CaseResult {
        name: scenario.name().to_owned(),
        strategy: strategy.to_owned(),
        variant: (!variant.is_empty()).then(|| variant.to_owned()),
        faults,
        expected,
        why,
        guarantee,
        observed,
        verdict,
        verdict_reason,
        steps: case.steps,
        first_overlaps: history.first_overlaps,
        duration_s: (case.started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
    })
}

/// Read the audit, the history and the lock metrics after the load; the
/// history as read is returned too (its first overlaps go in the report).
async fn observe(
    world: &World,
    case: &Case,
    strategy: &str,
) -> anyhow::Result<(Observed, HistoryReport)> {
    let service = world.service();
    let audit = service.audit().await?;
    let row = audit
        .products
        .iter()
        .find(|r| r.product_id == 1)
        .cloned()
        .context("the audit lists no product 1")?;
    let history = service.history().await?;
    let mine = history.of(strategy);
    let scrape = service.scrape().await?;
    let s = [("strategy", strategy)];
    let waits = scrape.sum("seckill_lock_acquire_duration_seconds_sum", &s);
    let waited = scrape.sum("seckill_lock_acquire_duration_seconds_count", &s);
    let mean_wait_ms = if waited > 0.0 {
        waits / waited * 1000.0
    } else {
        0.0
    };
    let lock_retries = scrape.sum("seckill_lock_retries_total", &s).round() as u64;
    let mut history_errors = 0;
    for base in &service.urls {
        history_errors += service.history_of(base).await?.errors;
    }
    let t = &case.tally;
    let o = Observed {
        overlaps: mine.overlaps,
        max_holders: mine.max_holders,
        oversold: row.oversold,
        lost_updates: row.lost_updates,
        duplicates: row.duplicates,
        undersold: row.undersold,
        negative_stock: row.negative_stock,
        rejected: Tally::get(&t.rejected),
        busy: Tally::get(&t.busy),
        orders: row.orders,
        unavailable: Tally::get(&t.unavailable),
        errors: Tally::get(&t.error),
        entries: mine.entries,
        history_errors,
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
