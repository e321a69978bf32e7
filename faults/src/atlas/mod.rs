//! `seckill-loadgen atlas` — every lock under every fault, measured to its
//! boundary.
//!
//! The map's rows are the 23 strategies, its columns the faults the lab
//! injects ([`faults::FAULTS`]: each a scenario, a variant, and the one
//! dial that sizes the fault, with the range it is measured over). For
//! each pair the atlas first asks whether the fault can reach the
//! strategy at all — the scenario's own model says so, with the reason
//! (no TTL, no Redis to fail over, not a two-phase commit) — and then
//! measures the pair the way `--locate` does: both ends of the range (and
//! either side of every flip the model predicts) with a fixed number of
//! injections, then sizes inside every bracket still wider than the
//! tolerance (5 % of the TTL for a duration) — its midpoint, or two or
//! three evenly spaced when a round has fewer brackets than lanes — round
//! after round, every cell's probes of a round side by side on the lanes. Both
//! outcomes are located on the same probes, exclusion broken and data
//! damaged, each its own verdict ([`cell::Cell`]): a bracket, "holds up to
//! the largest size (rate < u at 95 %)", "breaks from the smallest", or
//! why the pair cannot apply — never a blank.
//!
//! `--quick` measures a fixed sample, one cell per family of locks, with
//! the scenarios' `--quick` dials; `--cells STRATEGY:FAULT` (either may be
//! `*`) chooses cells. The files (`page.rs`) go under `--out`; a run of
//! every cell, or `--write-docs`, writes them into `docs/` too (a run of
//! some cells replaces theirs and keeps the others). `--recheck` runs
//! both ends of every chosen bracket again (`recheck.rs`).

mod cell;
mod docs;
mod faults;
mod measure;
mod page;
mod recheck;
mod settings;

use std::process::ExitCode;

pub use cell::{AtlasJson, Cell, CellJson, Model, Point};
pub use faults::{family, fault, Fault, FAULTS};
pub use settings::Settings;

use crate::scenario::locate;
use crate::scenario::{self, CaseResult, Outcome};
use measure::{measure, probes_of, ttl_of, Line};
use seckill_load::api::{Kind, StrategiesBody, StrategyEntry, StrategyName};
use settings::cell_options;

/// `--quick`: one cell per family of locks.
pub const QUICK: &[(StrategyName, &str)] = &[
    (StrategyName::SetNxPxToken, "pause"),
    (StrategyName::Watchdog, "pause"),
    (StrategyName::Fenced, "pause"),
    (StrategyName::MysqlGetLock, "pause"),
    (StrategyName::Redlock, "acquire-pause"),
    (StrategyName::PgLockTable, "killed-holder"),
    (StrategyName::Setnx, "killed-holder"),
    (StrategyName::PgForUpdate, "unlock-before-commit"),
    (StrategyName::PgAtomic, "unlock-before-commit"),
    (StrategyName::Pg2pc, "coordinator-crash"),
    (StrategyName::Pg3pc, "partition-precommit"),
];

/// Why a strategy with no lock shared by the replicas has no cell of its
/// own under any fault.
const NO_SHARED_LOCK: &str =
    "no lock shared by the replicas: it breaks with no fault at all (docs/strategies.md)";

/// One cell planned: measured (a line), or not applicable (the reason).
enum Plan {
    Measure(Box<Line>),
    NotApplicable(StrategyName, &'static Fault, Option<Kind>, String),
}

/// `seckill-loadgen atlas`. Exit 3 when a run failed, 2 when the cells
/// named none or the files could not be written, else 0.
pub fn main(settings: Settings) -> seckill_load::Boxed<'static, ExitCode> {
    Box::pin(main_here(settings))
}

async fn main_here(settings: Settings) -> ExitCode {
    let started = std::time::Instant::now();
    let chosen = match chosen_cells(&settings) {
        Ok(chosen) => chosen,
        Err(e) => {
            eprintln!("seckill-loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    if settings.recheck {
        let chosen: Vec<(StrategyName, &str)> = chosen.iter().map(|(s, f)| (*s, f.id)).collect();
        return recheck::main(&settings, &chosen).await;
    }
    let listed = match scenario::listed_strategies(&settings.scenario).await {
        Ok(listed) => listed,
        Err(e) => {
            eprintln!("seckill-loadgen: the atlas could not read the strategies: {e:#}");
            return ExitCode::from(3);
        }
    };
    let mut plans: Vec<Plan> = chosen
        .into_iter()
        .map(|(strategy, fault)| plan(&settings, &listed, strategy, fault))
        .collect();
    for p in &plans {
        seckill_load::progress::line(plan_line(p));
    }
    if settings.plan {
        return ExitCode::SUCCESS;
    }
    let bar = seckill_load::progress::begin(settings.scenario.quiet);
    let mut lines: Vec<&mut Line> = plans
        .iter_mut()
        .filter_map(|p| match p {
            Plan::Measure(line) => Some(&mut **line),
            Plan::NotApplicable(..) => None,
        })
        .collect();
    let measured = match scenario::until_interrupted(
        measure(&mut lines, settings.reuse, !settings.no_locate),
        &settings.scenario.database_url,
    )
    .await
    {
        Some(measured) => measured,
        // What finished is kept under --out: --reuse goes on from there.
        None => return ExitCode::from(130),
    };
    drop(bar);
    if let Err(e) = measured {
        eprintln!("seckill-loadgen: the atlas's runs failed: {e:#}");
        return ExitCode::from(3);
    }
    let cells: Vec<CellJson> = plans.iter().map(|p| cell_json(&settings, p)).collect();
    let doc = AtlasJson {
        tool: "seckill-loadgen".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        profile: scenario::profile().into(),
        injections_per_probe: settings.injections,
        quick: settings.quick,
        duration_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        cells,
    };
    write(&doc, &settings)
}

/// The files under `--out`, and in `docs/` for every cell (or with
/// `--write-docs`, merged); the closing line. Exit 2 when a file cannot
/// be written.
fn write(doc: &AtlasJson, settings: &Settings) -> ExitCode {
    let every = settings.cells.is_empty() && !settings.quick;
    let written = page::write_all(doc, &settings.out).and_then(|()| {
        if every || settings.write_docs {
            let merged = docs::merged_with_docs(doc, every)?;
            page::write_all(&merged, docs::docs_dir())
        } else {
            Ok(())
        }
    });
    if let Err(e) = written {
        eprintln!("seckill-loadgen: {e:#}");
        return ExitCode::from(2);
    }
    println!(
        "{}",
        docs::summary(doc, &settings.out, every || settings.write_docs)
    );
    ExitCode::SUCCESS
}

/// The pairs chosen, strategies in teaching order and faults in the
/// columns' order: `--quick`'s sample, the `--cells` patterns, or all.
fn chosen_cells(settings: &Settings) -> Result<Vec<(StrategyName, &'static Fault)>, String> {
    let all = StrategyName::ALL
        .into_iter()
        .flat_map(|s| FAULTS.iter().map(move |f| (s, f)));
    if settings.quick && settings.cells.is_empty() {
        return Ok(all.filter(|(s, f)| QUICK.contains(&(*s, f.id))).collect());
    }
    if settings.cells.is_empty() {
        return Ok(all.collect());
    }
    let mut patterns = Vec::new();
    for text in &settings.cells {
        let (s, f) = text
            .split_once(':')
            .ok_or_else(|| format!("--cells {text}: want STRATEGY:FAULT (either may be *)"))?;
        if s != "*" && s.parse::<StrategyName>().is_err() {
            return Err(format!("--cells {text}: no strategy {s}"));
        }
        if f != "*" && fault(f).is_none() {
            let ids: Vec<&str> = FAULTS.iter().map(|f| f.id).collect();
            return Err(format!(
                "--cells {text}: no fault {f}; the faults: {}",
                ids.join(", ")
            ));
        }
        patterns.push((s.to_owned(), f.to_owned()));
    }
    Ok(all
        .filter(|(s, f)| {
            patterns
                .iter()
                .any(|(ps, pf)| (ps == "*" || ps == s.as_str()) && (pf == "*" || pf == f.id))
        })
        .collect())
}

/// Whether `fault` can reach `strategy`, and the cell's options if so.
fn plan(
    settings: &Settings,
    listed: &StrategiesBody,
    strategy: StrategyName,
    fault: &'static Fault,
) -> Plan {
    let entry: Option<&StrategyEntry> = listed.get(strategy.as_str());
    let kind = entry.map(|e| e.kind);
    let options = cell_options(settings, strategy, fault);
    let at = |value: String| {
        scenario::case_params(
            fault.scenario,
            strategy,
            fault.variant,
            &options,
            Some((fault.dial.to_owned(), value)),
        )
    };
    let reason = match entry {
        None => Some("this build's service does not list it".to_owned()),
        Some(e) if matches!(e.kind, Kind::NoLock | Kind::ProcessLocal) => {
            Some(NO_SHARED_LOCK.to_owned())
        }
        Some(e) => at(fault.lo.to_owned())
            .and_then(|params| fault.scenario.expect(e, fault.variant, &params))
            .err(),
    };
    match (reason, entry) {
        (None, Some(entry)) => Plan::Measure(Box::new(Line {
            strategy,
            fault,
            start: start_values(fault, entry, &at),
            entry: entry.clone(),
            options,
            cases: Vec::new(),
            folders: 0,
        })),
        (reason, _) => Plan::NotApplicable(
            strategy,
            fault,
            kind,
            reason.unwrap_or_else(|| "this build's service does not list it".into()),
        ),
    }
}

/// The sizes a cell starts with: both ends of the range, and half the
/// tolerance either side of every flip the scenario's model predicts
/// along it.
fn start_values(
    fault: &Fault,
    entry: &StrategyEntry,
    at: &dyn Fn(String) -> Result<scenario::Params, String>,
) -> Vec<String> {
    let mut values = vec![fault.lo.to_owned(), fault.hi.to_owned()];
    let (Some(unit), Ok(lo), Ok(hi)) = (
        locate::unit_of(fault.scenario, fault.dial),
        at(fault.lo.to_owned()),
        at(fault.hi.to_owned()),
    ) else {
        return values;
    };
    let size = |p: &scenario::Params| p.in_force().f64(fault.dial);
    let (Some(lo_x), Some(hi_x)) = (size(&lo), size(&hi)) else {
        return values;
    };
    let tolerance = locate::tolerance(fault.dial, unit, lo.ttl_ms().unwrap_or(1000));
    let flips = locate::model_flips(lo_x, hi_x, |x| {
        let params = at(locate::typed(unit, x)).ok()?;
        fault
            .scenario
            .expect(entry, fault.variant, &params)
            .ok()
            .map(|e| e.0)
    });
    for x in flips {
        for side in [x - tolerance / 2.0, x + tolerance / 2.0] {
            let v = locate::typed(unit, side.clamp(lo_x, hi_x));
            let inside = v.parse::<f64>().is_ok_and(|y| y > lo_x && y < hi_x);
            if inside && !values.contains(&v) {
                values.push(v);
            }
        }
    }
    values
}

fn plan_line(p: &Plan) -> String {
    match p {
        Plan::Measure(line) => format!(
            "atlas {:<22} {:<22} measure {}={}..{} starting at {}",
            line.strategy.as_str(),
            line.fault.id,
            line.fault.dial,
            line.fault.lo,
            line.fault.hi,
            line.start.join(",")
        ),
        Plan::NotApplicable(s, f, _, reason) => {
            format!("atlas {:<22} {:<22} n/a: {reason}", s.as_str(), f.id)
        }
    }
}

/// What a cell's commands repeat of these settings.
fn measured(settings: &Settings) -> docs::Measured {
    docs::Measured {
        injections: settings.injections,
        quick: settings.quick,
    }
}

/// A cell in its JSON shape.
fn cell_json(settings: &Settings, p: &Plan) -> CellJson {
    match p {
        Plan::NotApplicable(strategy, fault, kind, reason) => CellJson::unmeasured(
            *strategy,
            fault,
            *kind,
            Cell::NotApplicable {
                not_applicable: reason.clone(),
            },
            docs::rerun_command(measured(settings), *strategy, fault),
        ),
        Plan::Measure(line) => {
            let probes = probes_of(line);
            let margin = measure::margin_of(line);
            let why = |cell: Cell| why_undecided(cell, line);
            let exclusion = why(Cell::of(&probes, Outcome::ExclusionBroken, margin));
            let data = why(Cell::of(&probes, Outcome::DataDamaged, margin));
            let stalled = probes
                .iter()
                .any(|p| p.stalled.is_some())
                .then(|| why(Cell::of(&probes, Outcome::Stalled, margin)));
            let check = docs::check_command(
                measured(settings),
                line.strategy,
                line.fault,
                &exclusion,
                &data,
                stalled.as_ref(),
            );
            CellJson {
                strategy: line.strategy,
                fault: line.fault.id.into(),
                dial: line.fault.dial.into(),
                scenario: line.fault.scenario,
                variant: line.fault.variant,
                fixed: scenario::owned_sets(line.fault.sets),
                kind: Some(line.entry.kind),
                ttl_ms: ttl_of(line),
                exclusion,
                data,
                stalled,
                model: model_of(line),
                command: docs::rerun_command(measured(settings), line.strategy, line.fault),
                check: Some(check),
            }
        }
    }
}

/// An undecided cell with its cases' own reason (what kept every
/// injection from landing), not only that none did.
fn why_undecided(cell: Cell, line: &Line) -> Cell {
    match cell {
        Cell::Undecided { probes, .. } => {
            let reasons: Vec<&str> = line
                .cases
                .iter()
                .map(|(_, c)| c.verdict_reason.as_str())
                .collect();
            Cell::Undecided {
                undecided: format!(
                    "no probe has a side: {}",
                    reasons.first().copied().unwrap_or("no case ran")
                ),
                probes,
            }
        }
        other => other,
    }
}

/// The scenario's model along the cell's range, for the outcome its cases
/// are judged on.
fn model_of(line: &Line) -> Option<Model> {
    let dial = line.fault.dial;
    let unit = locate::unit_of(line.fault.scenario, dial)?;
    let mut cases: Vec<&CaseResult> = line.cases.iter().map(|(_, c)| c).collect();
    cases.sort_by(|a, b| {
        let at = |c: &CaseResult| c.params.f64(dial).unwrap_or(f64::NAN);
        at(a).total_cmp(&at(b))
    });
    let (first, last) = (cases.first()?, cases.last()?);
    let lo = first.params.f64(dial)?;
    let hi = last.params.f64(dial)?;
    let outcome = first
        .outcomes
        .map_or(Outcome::ExclusionBroken, |o| o.judged(first.guarantee).0);
    Some(Model {
        outcome,
        flips: locate::case_model_flips(first, dial, lo, hi, unit),
        at_lo: locate::case_model_at(first, dial, lo, unit).unwrap_or(first.expected),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn settings(cells: &[&str], quick: bool) -> Settings {
        Settings {
            injections: 10,
            quick,
            cells: cells.iter().map(|c| (*c).to_owned()).collect(),
            out: PathBuf::from("loadgen-report/atlas"),
            write_docs: false,
            plan: false,
            reuse: false,
            no_locate: false,
            recheck: false,
            scenario: scenario::Options::default(),
        }
    }

    #[test]
    fn cells_are_chosen_by_pattern_every_pair_by_default_and_a_bad_name_is_refused() {
        let all = chosen_cells(&settings(&[], false)).expect("all");
        assert_eq!(all.len(), StrategyName::ALL.len() * FAULTS.len());
        let column = chosen_cells(&settings(&["*:pause"], false)).expect("column");
        assert_eq!(column.len(), StrategyName::ALL.len());
        let one = chosen_cells(&settings(&["etcd-lease:clock-slew"], false)).expect("one");
        assert_eq!(one.len(), 1);
        assert_eq!(
            chosen_cells(&settings(&[], true)).expect("quick").len(),
            QUICK.len()
        );
        for bad in ["etcd-lease", "etcd:pause", "etcd-lease:gc"] {
            assert!(chosen_cells(&settings(&[bad], false)).is_err(), "{bad}");
        }
        // The sample names real columns.
        for (_, f) in QUICK {
            assert!(fault(f).is_some(), "{f}");
        }
    }
}
