//! `seckill-loadgen atlas --recheck`: every chosen cell's bracket run
//! again at both its ends (what the cell's `check` command runs), each
//! end's side now beside the side `docs/atlas.json` recorded. A bracket
//! holds up when both ends keep their side; an end that changed side is
//! printed with both rates, and the run exits 1.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde::Serialize;

use super::cell::{AtlasJson, Cell, CellJson};
use super::docs;
use super::faults::fault;
use super::settings::{cell_options, Settings};
use crate::scenario::locate::Probe;
use crate::scenario::{self, Outcome, Rate};

/// One end of one outcome's bracket, recorded and run again.
#[derive(Debug, Clone, Serialize)]
pub struct EndRechecked {
    pub strategy: seckill_load::api::StrategyName,
    pub fault: String,
    pub outcome: Outcome,
    /// The size, as run.
    pub value: String,
    /// Whether the atlas recorded the outcome seen there.
    pub recorded_seen: bool,
    /// k of n now (`None`: nothing landed).
    pub now: Option<Rate>,
    /// Whether this run saw the same side.
    pub same_side: Option<bool>,
}

/// `recheck.json` under `--out`.
#[derive(Debug, Clone, Serialize)]
struct RecheckJson {
    injections_per_probe: u32,
    ends: Vec<EndRechecked>,
}

/// Every bracket among the `chosen` cells of `docs/atlas.json` run again
/// at both ends, with the injections and dials it was measured with. Exit 1
/// when an end changed side, 3 when a run failed, 2 when nothing to run.
pub(super) async fn main(
    settings: &Settings,
    chosen: &[(seckill_load::api::StrategyName, &str)],
) -> ExitCode {
    let doc: AtlasJson = match docs::read_docs_json() {
        Ok(Some(doc)) => doc,
        Ok(None) => {
            eprintln!("seckill-loadgen: docs/atlas.json: no atlas to recheck yet");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("seckill-loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    // As the atlas measured them.
    let settings = &Settings {
        injections: doc.injections_per_probe,
        quick: doc.quick,
        ..settings.clone()
    };
    let cells: Vec<&CellJson> = doc
        .cells
        .iter()
        .filter(|c| chosen.contains(&(c.strategy, c.fault.as_str())))
        .filter(|c| bracket_ends(c).next().is_some())
        .collect();
    if cells.is_empty() {
        eprintln!("seckill-loadgen: no chosen cell of docs/atlas.json has a bracket");
        return ExitCode::from(2);
    }
    let bar = seckill_load::progress::begin(settings.scenario.quiet);
    let reports = match scenario::until_interrupted(
        scenario::run_batches_and_write(&batches(settings, &cells)),
        &settings.scenario.database_url,
    )
    .await
    {
        Some(Ok(reports)) => reports,
        Some(Err(e)) => {
            eprintln!("seckill-loadgen: the recheck's runs failed: {e:#}");
            return ExitCode::from(3);
        }
        None => return ExitCode::from(130),
    };
    drop(bar);
    let ends = compared(&cells, &reports);
    if let Err(e) = write(settings, &ends) {
        eprintln!("seckill-loadgen: {}: {e}", settings.out.display());
        return ExitCode::from(2);
    }
    if ends.iter().any(|e| e.same_side == Some(false)) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// One scenario sweep per cell, over its brackets' ends, into
/// `recheck/<cell>/` under `--out`.
fn batches(
    settings: &Settings,
    cells: &[&CellJson],
) -> Vec<(Vec<scenario::Scenario>, scenario::Options)> {
    cells
        .iter()
        .filter_map(|c| {
            let f = fault(&c.fault)?;
            let mut options = cell_options(settings, c.strategy, f);
            options.out =
                settings
                    .out
                    .join("recheck")
                    .join(format!("{}-{}", c.strategy.as_str(), f.id));
            let mut values: Vec<String> = Vec::new();
            for (_, value, _) in bracket_ends(c) {
                if !values.contains(&value) {
                    values.push(value);
                }
            }
            seckill_load::progress::line(format!(
                "== recheck {} · {}: {}={}",
                c.strategy.as_str(),
                f.id,
                f.dial,
                values.join(",")
            ));
            options.sweep = Some((f.dial.to_owned(), values));
            Some((vec![f.scenario], options))
        })
        .collect()
}

/// Each end of each cell's brackets, its side now beside the recorded one.
fn compared(cells: &[&CellJson], reports: &[scenario::ScenarioReport]) -> Vec<EndRechecked> {
    let mut ends = Vec::new();
    for (c, report) in cells.iter().zip(reports) {
        let probes: Vec<Probe> = report
            .scenarios
            .iter()
            .filter_map(|case| {
                let value = case.swept_value(&c.dial).ok()?;
                Some(Probe::of(case, &c.dial, &value))
            })
            .collect();
        for (outcome, value, recorded_seen) in bracket_ends(c) {
            let probe = probes.iter().find(|p| p.value == value);
            let now = probe.and_then(|p| p.rate(outcome)).filter(|r| r.n > 0);
            ends.push(EndRechecked {
                strategy: c.strategy,
                fault: c.fault.clone(),
                outcome,
                value,
                recorded_seen,
                now,
                same_side: now.map(|r| (r.k > 0) == recorded_seen),
            });
        }
    }
    ends
}

/// The table on stdout, and `recheck.{md,json}` under `--out`.
fn write(settings: &Settings, ends: &[EndRechecked]) -> std::io::Result<()> {
    let text = table(ends);
    print!("{text}");
    let json = RecheckJson {
        injections_per_probe: settings.injections,
        ends: ends.to_vec(),
    };
    std::fs::create_dir_all(&settings.out)?;
    std::fs::write(
        settings.out.join("recheck.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(settings.out.join("recheck.md"), &text)
}

/// Each outcome's bracket ends of `c` (a stall's too, where the cell
/// watches for one): the outcome, the size, and whether the atlas
/// recorded it seen there.
fn bracket_ends(c: &CellJson) -> impl Iterator<Item = (Outcome, String, bool)> + '_ {
    [
        (Outcome::ExclusionBroken, Some(&c.exclusion)),
        (Outcome::DataDamaged, Some(&c.data)),
        (Outcome::Stalled, c.stalled.as_ref()),
    ]
    .into_iter()
    .filter_map(|(outcome, cell)| match cell? {
        Cell::Bracket { bracket: b, .. } => Some([
            (outcome, b.below.clone(), b.seen_below),
            (outcome, b.above.clone(), !b.seen_below),
        ]),
        _ => None,
    })
    .flatten()
}

/// The ends as a Markdown table, with the count of those that kept their
/// side.
fn table(ends: &[EndRechecked]) -> String {
    let mut out = String::from(
        "| cell | outcome | size | recorded | now | same side |\n|---|---|---|---|---|---|\n",
    );
    for e in ends {
        let _ = writeln!(
            out,
            "| `{}:{}` | {} | {} | {} | {} | {} |",
            e.strategy.as_str(),
            e.fault,
            e.outcome.as_str(),
            e.value,
            if e.recorded_seen { "seen" } else { "not seen" },
            e.now
                .map_or("nothing landed".into(), |r| format!("{} of {}", r.k, r.n)),
            match e.same_side {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "undecided",
            }
        );
    }
    let kept = ends.iter().filter(|e| e.same_side == Some(true)).count();
    let _ = writeln!(out, "\n{kept} of {} ends kept their side.", ends.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Rate;

    #[test]
    fn the_table_marks_an_end_that_changed_side() {
        let end = |value: &str, recorded_seen, k| EndRechecked {
            strategy: seckill_load::api::StrategyName::SetNxPx,
            fault: "pause".into(),
            outcome: Outcome::ExclusionBroken,
            value: value.into(),
            recorded_seen,
            now: Some(Rate::of(k, 10)),
            same_side: Some((k > 0) == recorded_seen),
        };
        let text = table(&[end("335", false, 0), end("370", true, 0)]);
        assert!(
            text.contains(
                "| `set-nx-px:pause` | exclusion broken | 370 | seen | 0 of 10 | **no** |"
            ),
            "{text}"
        );
        assert!(text.ends_with("1 of 2 ends kept their side.\n"), "{text}");
    }
}
