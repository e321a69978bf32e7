//! The run of `scenario`: every chosen scenario × strategy × variant, each
//! case in a world of its own, observed (audit, history, lock metrics) and
//! judged; the lab stopped and its database dropped at the end.

use anyhow::Context as _;
use tokio::time::Instant;

use super::case::{judge, CaseResult, Checks};
use super::observe::observe;
use super::lab::{Lab, Options};
use super::list::{shared_lock, Scenario};
use super::report::{ScenarioReport, Skipped};
use super::world::{Case, CaseRun, World};
use crate::api::StrategyEntry;
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
        trials: None,
    })
}
