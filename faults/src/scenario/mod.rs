//! `seckill-loadgen scenario` — every failure of the seeds, reproduced on
//! one machine, with the overlaps counted directly.
//!
//! A scenario owns the processes it breaks. For each strategy (and each
//! variant of the fault) it starts what it needs on free loopback ports —
//! `seckill-app` replicas from the built binary, `redis-server` nodes, TCP
//! proxies (slow and cut links), a dedicated Redis as the history arbiter —
//! against a fresh database on `--database-url`; resets the product,
//! switches the strategy, starts a new mutual-exclusion history run, drives
//! closed-loop buyers, applies its fault (a real `SIGSTOP`, a clock jump,
//! a node restart, a rolling restart under an extended lock, a promoted replica, a slow link, a `kill -9`, a stopped
//! Redis or a cut PostgreSQL, a paused Redlock acquisition, a slewed
//! clock, a two-phase-commit coordinator killed between its phases),
//! undoes it, and stops everything it started
//! — also on failure and on Ctrl-C.
//!
//! Each case is judged against what its design promises under *that*
//! fault (`expected`: `holds` or `breaks`), from what was observed:
//! overlapping critical sections counted by the history arbiter, and the
//! database's audit (oversold units, lost updates, duplicates). A run that
//! showed no contention, sold nothing, or never landed its fault is
//! `inconclusive`, never `as-expected`: each scenario proves its fault
//! landed (a stopped process, a clock read ahead, a delay timed, a node's
//! new `run_id`, …) and prints the proof among its steps. With `--trials
//! N` each case runs N times and is `as-expected` only if all N were.
//! The README's scenarios section and `docs/workshop.md` say what each
//! one teaches.

//! Layout: `list.rs` names the scenarios (a clap `ValueEnum`) and each has
//! its file — what each strategy should do under it, and its fault script
//! (`gc_pause.rs` … `dependency_loss.rs`, `acquire_pause.rs`,
//! `clock_slew.rs`, `coordinator_crash.rs`); `lab.rs` is what a run owns,
//! `world.rs` what a case starts and the moves every scenario makes,
//! `buyers.rs` the load, `plan.rs` the cases planned, `runner.rs` the loop,
//! `observe.rs` what a case left behind, `case.rs` a case's record and
//! its judgement (through [`seckill_load::judge`]), `report.rs` the files.

mod acquire_pause;
mod bisect;
mod buyers;
mod case;
mod checks;
mod clock_jump;
mod clock_skew;
mod clock_slew;
mod connection_cut;
mod coordinator_crash;
mod crash_holder;
mod curve;
mod dependency_loss;
mod dials;
mod failover;
mod gc_pause;
pub(crate) mod in_force;
mod inject;
mod lab;
mod list;
pub mod locate;
mod name;
mod observe;
mod order_insert_fails;
mod params;
mod partition_precommit;
mod plan;
mod rate;
mod record;
mod redlock_restart;
mod report;
mod rolling_restart;
mod runner;
mod slow_network;
mod unlock_before_commit;
mod world;

use seckill_load::api::StrategyName;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::ValueEnum as _;

use seckill_load::judge;

pub use case::{CaseResult, Sweep};

/// What each measured scenario predicts at its dials: the one model, read
/// by the scenario's verdict and by the debate's rows alike.
pub mod predictions {
    pub use super::acquire_pause::{drift_ms, short_validity, unchecked_outlived};
    pub use super::clock_jump::predicts as clock_jump;
    pub use super::clock_slew::predicts as clock_slew;
    pub use super::failover::promoted_lacks_key;
    pub use super::gc_pause::outlived;
    pub use super::redlock_restart::predicts as redlock_restart;
    pub use super::redlock_restart::predicts_refused as redlock_refused;
    pub use super::slow_network::postgres_damage;
    pub use super::slow_network::{late_grant_breaks, votes_arrive};
}

/// Each scenario's dials, typed (`scenario/dials.rs`): what the debate's rows read.
pub mod typed {
    pub use super::acquire_pause::AcquirePauseDials;
    pub use super::clock_jump::ClockJumpDials;
    pub use super::clock_skew::ClockSkewDials;
    pub use super::clock_slew::ClockSlewDials;
    pub use super::coordinator_crash::CoordinatorCrashDials;
    pub use super::crash_holder::CrashHolderDials;
    pub use super::dependency_loss::DependencyLossDials;
    pub use super::dials::OnOff;
    pub use super::failover::{FailoverDials, Promote};
    pub use super::gc_pause::{Extend, FreezeWhere, GcPauseDials};
    pub use super::order_insert_fails::OrderInsertFailsDials;
    pub use super::redlock_restart::{Crash, Persistence, RedlockRestartDials};
    pub use super::rolling_restart::{Extension, RollingRestartDials};
    pub use super::slow_network::{DelayFrom, Link, SlowNetworkDials};
    pub use super::unlock_before_commit::UnlockBeforeCommitDials;
}
pub use curve::{curve_svg as draw_curve, svg as curve_svg, Curve};
pub use lab::Options;
pub use list::{selection, variant_parser, Scenario, Selection};
pub use params::{owned as owned_sets, parse_set, parse_sweep, Params};
pub use params::{parse_locate, Locate};
pub use params::{Spec as ParamSpec, Unit as ParamUnit};
pub use plan::case_params;
pub use rate::{ceil_pct, Rate, Standing, DECISION_RATE};
pub use record::{Injection, Outcome, Outcomes};
pub use report::{merged as merged_reports, ScenarioReport};
pub use runner::PLANNED;

/// Run several batches of scenarios as one plan on one set of lanes
/// (`make debate`'s rows; each batch's dials checked first) and write
/// each batch's report into its `out`.
pub async fn run_batches_and_write(
    batches: &[(Vec<Scenario>, Options)],
) -> anyhow::Result<Vec<ScenarioReport>> {
    for (chosen, options) in batches {
        check_dials(chosen, options).map_err(|e| anyhow::anyhow!(e))?;
    }
    let reports = runner::run_batches(batches).await?;
    for (report, (_, options)) in reports.iter().zip(batches) {
        report.write(&options.out)?;
    }
    Ok(reports)
}

/// The build measuring: `release` or `debug` (a debug build's figures
/// are not the ones to publish).
pub fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The command line that runs `scenario` on `strategy` (its `variant`,
/// with `--quick` when `quick`) at `sets`: how the debate's rows, the
/// atlas's cells and the replays print what reruns them. The caller adds
/// what follows (injections, a sweep, `--out`).
pub fn command_line<K: std::fmt::Display, V: std::fmt::Display>(
    scenario: Scenario,
    strategy: StrategyName,
    variant: Option<seckill_load::api::Variant>,
    quick: bool,
    sets: impl IntoIterator<Item = (K, V)>,
) -> String {
    let mut command = format!(
        "seckill-loadgen scenario {} --strategies {strategy}",
        scenario.name()
    );
    if let Some(variant) = variant {
        command.push_str(&format!(" --variants {variant}"));
    }
    if quick {
        command.push_str(" --quick");
    }
    for (key, value) in sets {
        command.push_str(&format!(" --set {key}={value}"));
    }
    command
}

/// Run `work` until it ends, or until Ctrl-C: then `work` is dropped —
/// and with it every lab, replica, node and coordination server it
/// started — its databases are dropped, and `None` comes back (the
/// command exits 130). `scenario`, `debate` and `atlas` all run this way.
pub async fn until_interrupted<T>(
    work: impl std::future::Future<Output = T>,
    database_url: &str,
) -> Option<T> {
    tokio::select! {
        out = work => Some(out),
        _ = tokio::signal::ctrl_c() => {
            // Dropping the run stopped every process it started; the
            // database needs a word with PostgreSQL.
            lab::drop_run_database(database_url).await;
            eprintln!("seckill-loadgen: interrupted; every process the run started is stopped");
            None
        }
    }
}

/// Every strategy as a replica of this build lists it (its kind, whether
/// it can run here): one replica started and stopped, the lab's database
/// dropped. What the atlas reads before it plans.
pub async fn listed_strategies(
    options: &Options,
) -> anyhow::Result<seckill_load::api::StrategiesBody> {
    let mut lab = lab::Lab::new(options, 0).await?;
    let read = lab.read_strategies().await;
    lab.drop_database().await;
    let _ = std::fs::remove_dir_all(&lab.dir);
    read?;
    lab.listed.take().context("no strategies listed")
}

/// `seckill-loadgen scenario-table DIR`: every report under `DIR` in one
/// table, the newest run of each case, printed and written to
/// `DIR/table.md`, with how many cases are not as-expected (the table
/// reports them; the runs that made them already failed). Exit 3 when the
/// reports cannot be read.
pub fn table(root: &std::path::Path) -> ExitCode {
    let result = report::merged(root).and_then(|(merged, read)| {
        let table = merged.markdown();
        let path = root.join("table.md");
        std::fs::write(&path, &table).with_context(|| format!("write {}", path.display()))?;
        Ok((merged, read, table, path))
    });
    let (merged, read, table, path) = match result {
        Ok(found) => found,
        Err(e) => {
            eprintln!("seckill-loadgen: {e:#}");
            return ExitCode::from(3);
        }
    };
    print!("{table}");
    let off = merged
        .scenarios
        .iter()
        .filter(|c| c.verdict != judge::CaseVerdict::AsExpected)
        .count();
    println!(
        "\n{} cases from {} reports ({}); {off} not as-expected; written to {}",
        merged.scenarios.len(),
        read.len(),
        read.join(", "),
        path.display()
    );
    ExitCode::SUCCESS
}

/// `seckill-loadgen scenario NAME --params`: each named scenario's dials.
pub fn describe_params(names: &[Selection]) -> ExitCode {
    let chosen: Vec<Scenario> = if names.is_empty() || names.contains(&Selection::All) {
        Scenario::value_variants().to_vec()
    } else {
        names
            .iter()
            .filter_map(|n| match n {
                Selection::One(s) => Some(*s),
                Selection::All => None,
            })
            .collect()
    };
    for s in chosen {
        if s.params().is_empty() {
            println!(
                "{}: no dials yet (its fault's size is fixed; see docs/scenarios.md)\n",
                s.name()
            );
        } else {
            println!("{}", params::describe(s.name(), s.params()));
            if !s.quick_sets().is_empty() {
                let quick: Vec<String> = s
                    .quick_sets()
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                println!("  with --quick: {} (before any --set)\n", quick.join(" "));
            }
            for &variant in s.variants() {
                let preset = s.variant_sets(Some(variant));
                if !preset.is_empty() {
                    let preset: Vec<String> =
                        preset.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    println!(
                        "  variant {variant}: {} (before any --set)",
                        preset.join(" ")
                    );
                }
            }
        }
    }
    ExitCode::SUCCESS
}

/// Refuse, before anything starts, a `--set`/`--sweep` dial that a
/// chosen scenario does not have, or a value it cannot read.
fn check_dials(chosen: &[Scenario], options: &Options) -> Result<(), String> {
    for s in chosen {
        check_dials_of(*s, &options.sets, options.sweep.as_ref())?;
    }
    Ok(())
}

/// Refuse a `--locate` that cannot run: more than one scenario, a dial
/// the scenario lacks, a word dial, or ends its unit refuses.
fn check_locate(chosen: &[Scenario], options: &Options, locate: &Locate) -> Result<(), String> {
    let [scenario] = chosen else {
        return Err("--locate bisects one dial of one scenario: name exactly one".into());
    };
    let ends = (
        locate.key.clone(),
        vec![locate.lo.clone(), locate.hi.clone()],
    );
    check_dials_of(*scenario, &options.sets, Some(&ends))?;
    let unit = locate::unit_of(*scenario, &locate.key)
        .ok_or_else(|| format!("{} has no dial {:?}", scenario.name(), locate.key))?;
    locate::check_locatable(&locate.key, unit)
}

/// Refuse `sets`, alone and with each value of `sweep`, that `scenario`
/// cannot read (a dial it does not have, a value its unit refuses): the
/// command line's check and the console's.
pub fn check_dials_of(
    scenario: Scenario,
    sets: &[(String, String)],
    sweep: Option<&(String, Vec<String>)>,
) -> Result<(), String> {
    let mut all = sets.to_vec();
    if let Some((key, values)) = sweep {
        for v in values {
            all.push((key.clone(), v.clone()));
            params::Params::new(scenario.name(), scenario.params(), &all)?;
            all.pop();
        }
    }
    params::Params::new(scenario.name(), scenario.params(), &all).map(|_| ())
}

/// `seckill-loadgen scenario …`: run, print, write `scenarios.json`, exit.
pub fn main(
    names: &[Selection],
    list: bool,
    options: Options,
) -> seckill_load::Boxed<'_, ExitCode> {
    Box::pin(main_here(names, list, options))
}

async fn main_here(names: &[Selection], list: bool, options: Options) -> ExitCode {
    if list || names.is_empty() {
        return list_scenarios(list);
    }
    let chosen = chosen_scenarios(names);
    if let Err(e) = check_dials(&chosen, &options) {
        eprintln!("seckill-loadgen: {e}");
        return ExitCode::from(2);
    }
    if let Some(locate) = &options.locate {
        if let Err(e) = check_locate(&chosen, &options, locate) {
            eprintln!("seckill-loadgen: {e}");
            return ExitCode::from(2);
        }
    }
    let out = options.out.clone();
    let bar = seckill_load::progress::begin(options.quiet);
    let run = async {
        let report = match (&options.locate, chosen.as_slice()) {
            (Some(locate), [scenario]) => bisect::run(*scenario, &options, locate).await?,
            _ => runner::run_all(&chosen, &options).await?,
        };
        report.write(&out)?;
        anyhow::Ok(report)
    };
    let Some(report) = until_interrupted(run, &options.database_url).await else {
        drop(bar);
        return ExitCode::from(130);
    };
    drop(bar);
    match report {
        Ok(report) if report.scenarios.is_empty() => nothing_ran(&report),
        Ok(report) if !report.located.is_empty() => located_exit(&report, &out),
        Ok(report) => cases_exit(&report, &out),
        Err(e) => {
            eprintln!("seckill-loadgen: scenario failed: {e:#}");
            ExitCode::from(3)
        }
    }
}

/// Step 1: every scenario and its summary (`--list`; with no name, exit 2).
fn list_scenarios(list: bool) -> ExitCode {
    for s in Scenario::value_variants() {
        println!("{:<22} {}", s.name(), s.summary());
    }
    if !list {
        eprintln!("seckill-loadgen: name a scenario (or `all`)");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// Step 2: the scenarios named, each once, in order (`all`: every one).
fn chosen_scenarios(names: &[Selection]) -> Vec<Scenario> {
    if names.contains(&Selection::All) {
        Scenario::value_variants().to_vec()
    } else {
        let mut chosen = Vec::new();
        for name in names {
            if let Selection::One(s) = name {
                if !chosen.contains(s) {
                    chosen.push(*s);
                }
            }
        }
        chosen
    }
}

/// Step 3, no case ran: every strategy skipped, said why; exit 4.
fn nothing_ran(report: &ScenarioReport) -> ExitCode {
    eprintln!(
        "seckill-loadgen: no case ran (every strategy named was skipped: {}); nothing was tested",
        report
            .skipped
            .iter()
            .map(|s| format!("{} · {}: {}", s.name, s.strategy, s.reason))
            .collect::<Vec<_>>()
            .join("; ")
    );
    ExitCode::from(4)
}

/// Step 3, `--locate`: the report and each line located; exit 4 where a
/// probe could not tell.
fn located_exit(report: &ScenarioReport, out: &std::path::Path) -> ExitCode {
    println!("{}", report.terminal());
    for l in &report.located {
        println!(
            "located {} · {}{}: {}",
            l.scenario,
            l.strategy,
            l.variant.map(|v| format!(" · {v}")).unwrap_or_default(),
            l.summary
        );
    }
    println!(
        "{} probes in {:.0} s; reports: {}",
        report.scenarios.len(),
        report.duration_s,
        out.join("scenarios.json").display()
    );
    // A measurement, not a verdict: exit 0 once every line has its
    // bracket or one side throughout, 4 where a probe could not
    // tell (nothing landed) or a case did not finish.
    let stuck = report
        .scenarios
        .iter()
        .any(|c| c.outcomes.is_none_or(|o| o.exclusion_broken.n == 0));
    if stuck {
        eprintln!("seckill-loadgen: a probe could not tell (nothing landed, or the case did not finish): see its steps");
        return ExitCode::from(4);
    }
    ExitCode::SUCCESS
}

/// Step 3, the cases' verdicts: the report, every case not as expected
/// named, and the exit status (1 unexpected, 4 not run or inconclusive).
fn cases_exit(report: &ScenarioReport, out: &std::path::Path) -> ExitCode {
    println!("{}", report.terminal());
    println!(
        "{} cases in {:.0} s; reports: {}",
        report.scenarios.len(),
        report.duration_s,
        out.join("scenarios.json").display()
    );
    // Every case that did not end as predicted, named, before the
    // counts: a log cut short still says which.
    for c in report
        .scenarios
        .iter()
        .filter(|c| c.verdict != judge::CaseVerdict::AsExpected)
    {
        let variant = c.variant.map(|v| format!(" [{v}]")).unwrap_or_default();
        let (word, why) = match c.verdict {
            judge::CaseVerdict::NotRun => ("NOT RUN", c.reason.as_deref().unwrap_or("?")),
            v => (v.as_str(), c.verdict_reason.as_str()),
        };
        eprintln!(
            "seckill-loadgen: {word} {} · {}{variant}: {why}",
            c.name, c.strategy
        );
    }
    let unexpected = report.unexpected();
    if unexpected > 0 {
        eprintln!("seckill-loadgen: {unexpected} case(s) UNEXPECTED");
        return ExitCode::from(1);
    }
    let not_run = report.not_run();
    if not_run > 0 {
        eprintln!("seckill-loadgen: {not_run} case(s) could not run here: not run is not passed");
        return ExitCode::from(4);
    }
    let inconclusive = report.inconclusive();
    if inconclusive > 0 {
        eprintln!(
            "seckill-loadgen: {inconclusive} case(s) inconclusive: they could not tell (see their steps)"
        );
        return ExitCode::from(4);
    }
    ExitCode::SUCCESS
}
