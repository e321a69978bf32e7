//! One row judged from its measurements and put in its JSON shape (the
//! params of its run at each swept value, its commands, its files).

use super::commands::{rerun_command, scenario_command};
use super::doc::{Measurements, RowJson, SweepJson};
use super::judge;
use super::rows::{Row, Run};
use super::settings::Settings;
use crate::scenario::locate::Probe;
use crate::scenario::{owned_sets, Params};

/// The params of `run` with its swept dial at `value`.
pub(super) fn params_at(run: &Run, value: &str) -> Option<Params> {
    let mut sets = owned_sets(run.sets);
    sets.push((run.sweep.0.to_owned(), value.to_owned()));
    Params::new(run.scenario.name(), run.scenario.params(), &sets).ok()
}

/// One chosen row, judged and put in its JSON shape.
pub(super) fn row_json(
    settings: &Settings,
    row: &Row,
    measurements: &Measurements,
) -> Option<RowJson> {
    let (_, cases) = measurements.iter().find(|(run, _)| *run == row.run)?;
    let measured: Vec<judge::Measured> = cases
        .iter()
        .filter_map(|(value, case, swept)| {
            Some(judge::Measured {
                params: params_at(&row.run, value)?,
                probe: Probe::of(case, row.run.sweep.0, value),
                swept: *swept,
                case_verdict: case.verdict_reason.clone(),
            })
        })
        .collect();
    Some(judged_json(settings, row, &measured))
}

/// A row judged from `measured` and put in its JSON shape.
pub(super) fn judged_json(settings: &Settings, row: &Row, measured: &[judge::Measured]) -> RowJson {
    let judged = judge::judge_row(row, measured, &|v| params_at(&row.run, v));
    let flips_at = (!judged.brackets.is_empty()).then(|| {
        judged
            .brackets
            .iter()
            .map(|b| format!("between {} and {}", b.below, b.above))
            .collect::<Vec<_>>()
            .join("; ")
    });
    let counterexample = judged
        .refuted_at
        .as_ref()
        .map(|_| format!("redlock-debate/counterexamples/{}.json", row.id));
    RowJson {
        id: row.id.into(),
        source: row.source.into(),
        quote: row.quote.into(),
        quote_zh: row.quote_zh.into(),
        claim: row.claim.into(),
        claim_zh: row.claim_zh.into(),
        claim_kind: row.states.kind,
        claim_applies: row.states.applies_text.into(),
        mechanism: row.mechanism.into(),
        mechanism_zh: row.mechanism_zh.into(),
        scenario: row.run.scenario,
        strategy: row.run.strategy,
        variant: row.run.variant,
        fixed: owned_sets(row.run.sets),
        outcome: row.outcome,
        predicts: row.predicts_text.into(),
        predicts_zh: row.predicts_text_zh.into(),
        sweep: SweepJson {
            key: row.run.sweep.0.into(),
            points: judged.points.clone(),
        },
        standing: judged.model_standing,
        flips_at,
        command: rerun_command(settings, row),
        scenario_command: scenario_command(settings, &row.run),
        counterexample,
        curve: format!("redlock-debate/{}.svg", row.id),
        report: settings
            .out
            .join(row.run.id)
            .join("scenarios.html")
            .display()
            .to_string(),
        judged,
    }
}
