//! A cell being measured ([`Line`]): both ends of its range (and either
//! side of every predicted flip), then round after round the sizes inside
//! every bracket still wider than the tolerance, every cell's probes of a
//! round on one plan of lanes; `--reuse` reads back what an earlier run left.

use super::faults::Fault;
use crate::scenario::locate::{self, Probe};
use crate::scenario::{self, CaseResult, Outcome};
use seckill_load::api::{StrategyEntry, StrategyName};

/// One cell being measured: the pair, its options, the sizes it starts
/// with, its probes so far.
pub(super) struct Line {
    pub(super) strategy: StrategyName,
    pub(super) fault: &'static Fault,
    pub(super) options: scenario::Options,
    /// Both ends of the range, and either side of every flip the model
    /// predicts (half the tolerance away): a window narrower than the
    /// range, which both ends alone would miss, is probed from the start.
    pub(super) start: Vec<String>,
    /// The strategy as the service lists it (what the model reads).
    pub(super) entry: StrategyEntry,
    pub(super) cases: Vec<(String, CaseResult)>,
    /// Report folders written so far (its start's, then `round-N`).
    pub(super) folders: usize,
}

/// Both ends of every cell, then round after round the midpoints of every
/// bracket (of either outcome) still wider than the tolerance, each
/// round's probes of every cell on one plan of lanes.
pub(super) async fn measure(
    lines: &mut [&mut Line],
    reuse: bool,
    locate: bool,
) -> anyhow::Result<()> {
    let mut wanted: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, line) in lines.iter_mut().enumerate() {
        if reuse {
            read_back(line)?;
        }
        if line.cases.is_empty() {
            wanted.push((i, line.start.clone()));
        }
    }
    let lanes = lines.first().map_or(1, |l| l.options.jobs);
    if locate && wanted.is_empty() {
        wanted = next_round(lines, lanes);
    }
    while !wanted.is_empty() {
        let batches: Vec<_> = wanted
            .iter()
            .map(|(i, values)| {
                let line = &lines[*i];
                let mut options = line.options.clone();
                if line.folders > 0 {
                    options.out = options.out.join(format!("round-{}", line.folders));
                }
                seckill_load::progress::line(format!(
                    "== atlas {} · {}: {}={}",
                    line.strategy.as_str(),
                    line.fault.id,
                    line.fault.dial,
                    values.join(",")
                ));
                options.sweep = Some((line.fault.dial.to_owned(), values.clone()));
                (vec![line.fault.scenario], options)
            })
            .collect();
        let reports = scenario::run_batches_and_write(&batches).await?;
        for ((i, _), report) in wanted.iter().zip(reports) {
            let line = &mut lines[*i];
            line.folders += 1;
            for case in report.scenarios {
                let value = case.swept_value(line.fault.dial)?;
                line.cases.push((value, case));
            }
        }
        wanted = if locate {
            next_round(lines, lanes)
        } else {
            Vec::new()
        };
    }
    Ok(())
}

/// `--reuse`: the cases an earlier run of this cell left in its folder
/// (its start's `scenarios.json`, then each `round-N/`), read back through
/// the type that wrote them; the bisection goes on from there.
fn read_back(line: &mut Line) -> anyhow::Result<()> {
    let Some(start) = scenario::ScenarioReport::read_cases(&line.options.out) else {
        return Ok(());
    };
    // Every `round-N` there, in order (a run of several cells numbers its
    // rounds for all of them, so a cell's may skip some).
    let mut rounds: Vec<usize> = std::fs::read_dir(&line.options.out)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("round-")?.parse().ok())
        .collect();
    rounds.sort_unstable();
    let mut all = start;
    for n in &rounds {
        all.extend(
            scenario::ScenarioReport::read_cases(&line.options.out.join(format!("round-{n}")))
                .unwrap_or_default(),
        );
    }
    for mut case in all {
        // Not written to the report: what the model reads.
        case.entry = Some(line.entry.clone());
        let value = case.swept_value(line.fault.dial)?;
        line.cases.push((value, case));
    }
    line.folders = rounds.last().map_or(1, |n| n + 1);
    if line.folders > 0 {
        seckill_load::progress::line(format!(
            "== atlas {} · {}: {} probes read back from {}",
            line.strategy.as_str(),
            line.fault.id,
            line.cases.len(),
            line.options.out.display()
        ));
    }
    Ok(())
}

/// The sizes a cell wants next: inside every bracket of either outcome
/// (and of a stall, where one is watched), from not seen to seen and from
/// seen in under half the injections to half or more, still wider than
/// the tolerance, `k` sizes evenly spaced (k = 1: the midpoint), none
/// twice; and, once a flip is narrowed, a clean end a margin from it.
fn next_values(line: &Line, k: usize) -> Vec<String> {
    let dial = line.fault.dial;
    let Some(unit) = locate::unit_of(line.fault.scenario, dial) else {
        return Vec::new();
    };
    let probes = probes_of(line);
    let tolerance = locate::tolerance(dial, unit, ttl_of(line).unwrap_or(1000));
    let mut values: Vec<String> = Vec::new();
    for outcome in [
        Outcome::ExclusionBroken,
        Outcome::DataDamaged,
        Outcome::Stalled,
    ] {
        // Where it is first seen, and (where it starts or stops inside
        // the range) where it is seen in half the injections or more: the
        // bracket's end a rerun keeps (see `Cell::of`).
        let seen = locate::brackets(&probes, outcome);
        let firm = if seen.is_empty() {
            Vec::new()
        } else {
            locate::brackets_by(&probes, |p| p.firm(outcome))
        };
        // And the clean end, a margin from the onset, once it is located.
        let clean_end = seen
            .first()
            .and_then(|b| margin_value(b, &probes, outcome, tolerance, margin_of(line)));
        if let Some(x) = clean_end {
            let value = locate::typed(unit, x);
            if !values.contains(&value) && !probes.iter().any(|p| p.value == value) {
                values.push(value);
            }
        }
        for b in seen.into_iter().chain(firm) {
            if b.width() <= tolerance || locate::undecided_between(&probes, outcome, &b) {
                continue;
            }
            for i in 1..=k {
                let x = b.below_resolved + b.width() * i as f64 / (k + 1) as f64;
                let value = locate::typed(unit, x);
                // Whole units: a size equal to an end cannot narrow it.
                let inside = value
                    .parse::<f64>()
                    .is_ok_and(|at| at > b.below_resolved && at < b.above_resolved);
                if inside && !values.contains(&value) {
                    values.push(value);
                }
            }
        }
    }
    values
}

/// Every cell's next sizes, as many per bracket as keeps the lanes busy
/// (1 to 3: a round of few brackets cuts each in four, not in two, and
/// the atlas takes fewer rounds).
fn next_round(lines: &[&mut Line], lanes: usize) -> Vec<(usize, Vec<String>)> {
    let wanted = |k: usize| -> Vec<(usize, Vec<String>)> {
        lines
            .iter()
            .enumerate()
            .filter_map(|(i, line)| {
                let values = next_values(line, k);
                (!values.is_empty()).then_some((i, values))
            })
            .collect()
    };
    let single = wanted(1);
    let brackets: usize = single.iter().map(|(_, v)| v.len()).sum();
    match (lanes / brackets.max(1)).clamp(1, 3) {
        1 => single,
        k => wanted(k),
    }
}

/// How far from the size first seen a bracket's clean end lies (two
/// tolerances: 10 % of the TTL for a duration; see `Cell::of`); 0 for a
/// dial with no unit.
pub(super) fn margin_of(line: &Line) -> f64 {
    locate::unit_of(line.fault.scenario, line.fault.dial).map_or(0.0, |unit| {
        2.0 * locate::tolerance(line.fault.dial, unit, ttl_of(line).unwrap_or(1000))
    })
}

/// Where the first flip `b`, narrowed to the tolerance, has no clean
/// probe `margin` or more from its onset (and within a tolerance past
/// that), the size there: the clean end a rerun keeps (see `Cell::of`).
fn margin_value(
    b: &locate::Bracket,
    probes: &[Probe],
    outcome: Outcome,
    tolerance: f64,
    margin: f64,
) -> Option<f64> {
    if b.width() > tolerance {
        return None;
    }
    let lo = probes
        .iter()
        .map(|p| p.resolved)
        .fold(f64::INFINITY, f64::min);
    let hi = probes
        .iter()
        .map(|p| p.resolved)
        .fold(f64::NEG_INFINITY, f64::max);
    let (onset, toward) = if b.seen_below {
        (b.below_resolved, 1.0)
    } else {
        (b.above_resolved, -1.0)
    };
    let at = onset + toward * margin;
    let (near, far) = (
        at.min(at + toward * tolerance),
        at.max(at + toward * tolerance),
    );
    let probed = probes
        .iter()
        .any(|p| p.resolved >= near && p.resolved <= far && p.seen(outcome) == Some(false));
    (!probed && at > lo && at < hi).then_some(at)
}

pub(super) fn probes_of(line: &Line) -> Vec<Probe> {
    line.cases
        .iter()
        .map(|(value, case)| Probe::of(case, line.fault.dial, value))
        .collect()
}

pub(super) fn ttl_of(line: &Line) -> Option<u64> {
    line.cases.first().and_then(|(_, c)| c.params.u64("ttl_ms"))
}
