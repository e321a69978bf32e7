//! `seckill-loadgen debate` — the Redlock debate, claim by claim, judged
//! against its sources on measured curves.
//!
//! Each row ([`ROWS`]) is one claim: its source (author, title,
//! year, link, a quote of at most 25 words; a claim this project derived
//! says so), the claim as the source states it (a "never" or a "can
//! happen", and where along the sweep it applies), our model's
//! prediction, and the sweep that tests both: a scenario, a strategy, a
//! variant, fixed dials and one dial swept across the boundary with
//! `--injections` (20 by default) at every point. Where two neighbouring
//! points differ — the row's outcome seen (k ≥ 1) at one, not at the
//! other — the runner bisects between them with the same injections per
//! probe until the bracket is at most 5 % of the TTL (a duration) or 1 %
//! (a slew) wide.
//!
//! Each row is judged twice (`judge.rs`): the source's claim against the
//! data (`supported`, `refuted`, `undecided`: a "never" claim stands only
//! on 0 of n and falls to one violation, whose trace is kept; a "can
//! happen" claim stands on one), and our model (its predicted boundary
//! inside the measured bracket, its side of the 25 % line at every point).
//!
//! The files (`page.rs`) go under `--out` (`redlock-debate.{md,json}`, a
//! Chinese page, one curve per row, the counterexamples); `--write-docs`
//! writes the same into `docs/` (every row only).

mod commands;
mod doc;
mod judge;
mod measured;
mod page;
mod reuse;
mod row_json;
pub mod rows;
mod rows_nodes;
mod rows_pauses;
mod rules;
mod runs;
mod settings;
mod source;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

pub use doc::{DebateJson, Measurements, RowJson, SweepJson};
pub use judge::{Judged, SourceStanding};
pub use rows::{Row, Run, Source};
pub use settings::Settings;
pub use table::ROWS;

use crate::scenario::locate::{self, Probe};
use crate::scenario::{self, owned_sets, Scenario, DECISION_RATE};
use reuse::read_back_all;
use row_json::{judged_json, params_at, row_json};

/// The options of one batch of `run` at `values`.
fn batch(
    settings: &Settings,
    run: &Run,
    values: Vec<String>,
    out: PathBuf,
) -> (Vec<Scenario>, scenario::Options) {
    let mut options = settings.scenario.clone();
    options.strategies = vec![run.strategy];
    options.variants = run.variant.map(|v| vec![v]).unwrap_or_default();
    options.sets = owned_sets(run.sets);
    options
        .sets
        .push(("injections".into(), settings.injections.to_string()));
    options.sweep = Some((run.sweep.0.to_owned(), values));
    options.trials = 1;
    options.out = out;
    (vec![run.scenario], options)
}

/// `seckill-loadgen debate`: every chosen row's sweep, then the
/// bisection of every flip, each row judged twice, the files written.
/// Exit 3 when a run failed, 2 when the files could not be written, else
/// 0: a refuted source or a contradicted model is a finding, printed and
/// written, not a failure of the tool.
pub fn main(settings: Settings) -> seckill_load::Boxed<'static, ExitCode> {
    Box::pin(main_here(settings))
}

async fn main_here(settings: Settings) -> ExitCode {
    if settings.rejudge {
        return rejudge(&settings);
    }
    let started = std::time::Instant::now();
    // With --rows, the page in docs/ keeps every other row as measured
    // before: read it first, so a page that cannot be read stops the run
    // before anything is measured.
    let earlier = match (settings.write_docs && !settings.only.is_empty())
        .then(|| doc::read(&docs_json()))
        .transpose()
    {
        Ok(earlier) => earlier,
        Err(e) => {
            eprintln!(
                "seckill-loadgen: --write-docs --rows keeps the other rows of {}: {e:#}",
                docs_json().display()
            );
            return ExitCode::from(2);
        }
    };
    let Some(chosen) = chosen_rows(&settings.only) else {
        return ExitCode::from(2);
    };
    let mut measurements: Measurements = Vec::new();
    let bar = seckill_load::progress::begin(settings.scenario.quiet);
    let Some(measured) = scenario::until_interrupted(
        measure(&settings, &chosen, &mut measurements),
        &settings.scenario.database_url,
    )
    .await
    else {
        return ExitCode::from(130);
    };
    drop(bar);
    let reused = match measured {
        Ok(reused) => reused,
        Err(e) => {
            eprintln!("seckill-loadgen: the debate's runs failed: {e:#}");
            return ExitCode::from(3);
        }
    };
    let rows: Vec<RowJson> = chosen
        .iter()
        .filter_map(|row| row_json(&settings, row, &measurements))
        .collect();
    let doc = DebateJson {
        tool: "seckill-loadgen".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        profile: scenario::profile().into(),
        injections_per_point: settings.injections,
        decision_rate: DECISION_RATE,
        reused: reused.into_iter().map(Into::into).collect(),
        kept: Vec::new(),
        rejudged: false,
        duration_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        rows,
    };
    let written = page::write_all(&doc, &measurements, &settings.out).and_then(|()| {
        match (settings.write_docs, earlier) {
            (false, _) => Ok(()),
            (true, None) => page::write_all(&doc, &measurements, docs_dir()),
            (true, Some(earlier)) => {
                let merged = doc::merge(&earlier, &doc, ROWS.iter().map(|r| r.id))?;
                page::write_all(&merged, &measurements, docs_dir())
            }
        }
    });
    if let Err(e) = written {
        eprintln!("seckill-loadgen: {e:#}");
        return ExitCode::from(2);
    }
    println!("{}", summary(&doc, &settings));
    ExitCode::SUCCESS
}

/// The rows `only` names (every row when empty); `None`, said, when one
/// names no row.
fn chosen_rows(only: &[String]) -> Option<Vec<&'static Row>> {
    let unknown: Vec<&String> = only
        .iter()
        .filter(|id| !ROWS.iter().any(|r| r.id == id.as_str()))
        .collect();
    if !unknown.is_empty() {
        let ids: Vec<&str> = ROWS.iter().map(|r| r.id).collect();
        eprintln!(
            "seckill-loadgen: no row {unknown:?}; the rows: {}",
            ids.join(", ")
        );
        return None;
    }
    let wanted = |id: &str| only.is_empty() || only.iter().any(|o| o == id);
    Some(ROWS.iter().filter(|r| wanted(r.id)).collect())
}

/// `docs/`, where `--write-docs` writes.
fn docs_dir() -> &'static std::path::Path {
    std::path::Path::new("docs")
}

/// The debate's JSON in `docs/`.
fn docs_json() -> PathBuf {
    docs_dir().join("redlock-debate.json")
}

/// The closing line: each verdict counted, where the files went.
fn summary(doc: &DebateJson, settings: &Settings) -> String {
    let t = doc.tally();
    format!(
        "{} rows in {:.0} s. Sources: {} supported, {} refuted, {} undecided. Our model: {} agree, {} contradict, {} undecided. Written under {}{}",
        doc.rows.len(),
        doc.duration_s,
        t.supported,
        t.refuted,
        t.undecided,
        t.agrees,
        t.contradicts,
        t.model_undecided,
        settings.out.display(),
        if settings.write_docs { " and docs/" } else { "" }
    )
}

/// Each run's sweep, all on one plan of lanes; its reports written.
async fn sweep(settings: &Settings, to_run: &[Run]) -> anyhow::Result<Measurements> {
    let batches: Vec<_> = to_run
        .iter()
        .map(|run| {
            seckill_load::progress::line(format!(
                "== debate run {}: {} · {} · sweep {}",
                run.id,
                run.scenario.name(),
                run.strategy,
                run.sweep.0
            ));
            batch(
                settings,
                run,
                run.sweep.1.iter().map(|v| (*v).to_owned()).collect(),
                settings.out.join(run.id),
            )
        })
        .collect();
    let reports = if batches.is_empty() {
        Vec::new()
    } else {
        scenario::run_batches_and_write(&batches).await?
    };
    let mut swept: Measurements = Vec::new();
    for (run, report) in to_run.iter().zip(reports) {
        let cases = report
            .scenarios
            .into_iter()
            .map(|c| Ok((c.swept_value(run.sweep.0)?, c, true)))
            .collect::<anyhow::Result<_>>()?;
        swept.push((*run, cases));
    }
    Ok(swept)
}

/// Run every chosen row's sweep, then bisect every flip of every chosen
/// row's outcome, round after round, all of a round's probes on one plan
/// of lanes; the ids of the runs read back (`--reuse`).
async fn measure(
    settings: &Settings,
    chosen: &[&Row],
    measurements: &mut Measurements,
) -> anyhow::Result<Vec<&'static str>> {
    let mut runs: Vec<Run> = Vec::new();
    for row in chosen {
        if !runs.contains(&row.run) {
            runs.push(row.run);
        }
    }
    let (reused, to_run) = read_back_all(settings, runs);
    measurements.extend(sweep(settings, &to_run).await?);
    let ids = reused.iter().map(|(run, _)| run.id).collect();
    measurements.extend(reused);
    if settings.no_locate {
        return Ok(ids);
    }
    loop {
        let wanted = next_probes(chosen, measurements);
        if wanted.is_empty() {
            return Ok(ids);
        }
        let batches: Vec<_> = wanted
            .iter()
            .map(|(i, value)| {
                let run = &measurements[*i].0;
                seckill_load::progress::line(format!(
                    "== debate run {}: probe {}={value}",
                    run.id, run.sweep.0
                ));
                batch(
                    settings,
                    run,
                    vec![value.clone()],
                    settings
                        .out
                        .join(run.id)
                        .join(format!("probe-{}-{value}", run.sweep.0)),
                )
            })
            .collect();
        let reports = scenario::run_batches_and_write(&batches).await?;
        for ((i, value), report) in wanted.into_iter().zip(reports) {
            for case in report.scenarios {
                measurements[i].1.push((value.clone(), case, false));
            }
        }
    }
}

/// The next round of bisection: for every chosen row whose dial has a
/// midpoint, the midpoint of every bracket of its outcome still wider
/// than the tolerance (each run × value once, whichever rows want it).
fn next_probes(chosen: &[&Row], measurements: &Measurements) -> Vec<(usize, String)> {
    let mut wanted: Vec<(usize, String)> = Vec::new();
    for row in chosen {
        let Some(i) = measurements.iter().position(|(run, _)| *run == row.run) else {
            continue;
        };
        let Some(unit) = locate::unit_of(row.run.scenario, row.run.sweep.0) else {
            continue;
        };
        if locate::check_locatable(row.run.sweep.0, unit).is_err() {
            continue;
        }
        let probes: Vec<Probe> = measurements[i]
            .1
            .iter()
            .map(|(value, case, _)| Probe::of(case, row.run.sweep.0, value))
            .collect();
        let ttl = params_at(&row.run, row.run.sweep.1[0])
            .and_then(|p| p.ttl_ms())
            .unwrap_or(1000);
        let tolerance = locate::tolerance(row.run.sweep.0, unit, ttl);
        for value in locate::next_values(&probes, row.outcome, unit, tolerance) {
            if !wanted.contains(&(i, value.clone())) {
                wanted.push((i, value));
            }
        }
    }
    wanted
}

/// `--rejudge`: every row of docs/redlock-debate.json judged again from
/// the probes it keeps, with this build's claims, rules and words;
/// nothing measured. Exit 2 when the page cannot be read, lacks a row, or
/// a row now refuted has no kept trace.
fn rejudge(settings: &Settings) -> ExitCode {
    let done = (|| -> anyhow::Result<DebateJson> {
        let earlier = doc::read(&docs_json())?;
        let settings = Settings {
            injections: earlier.injections_per_point,
            ..settings.clone()
        };
        let mut rows = Vec::new();
        for row in ROWS.iter() {
            let Some(kept) = earlier.rows.iter().find(|r| r.id == row.id) else {
                anyhow::bail!(
                    "row {} is not on the page: measure it (--rows {})",
                    row.id,
                    row.id
                );
            };
            let measured: Vec<judge::Measured> = kept
                .judged
                .probes
                .iter()
                .filter_map(|probe| {
                    let point = kept.sweep.points.iter().find(|p| p.value == probe.value);
                    Some(judge::Measured {
                        params: params_at(&row.run, &probe.value)?,
                        probe: probe.clone(),
                        swept: point.is_some(),
                        case_verdict: point.map(|p| p.case_verdict.clone()).unwrap_or_default(),
                    })
                })
                .collect();
            let mut now = judged_json(&settings, row, &measured);
            now.report.clone_from(&kept.report);
            if let Some(trace) = &now.counterexample {
                anyhow::ensure!(
                    docs_dir().join(trace).exists(),
                    "row {} is now refuted and no trace of its violation is kept: measure it (--rows {})",
                    row.id,
                    row.id
                );
            }
            rows.push(now);
        }
        Ok(DebateJson {
            tool: earlier.tool,
            version: env!("CARGO_PKG_VERSION").into(),
            profile: earlier.profile,
            injections_per_point: earlier.injections_per_point,
            decision_rate: DECISION_RATE,
            reused: earlier.reused,
            // The rows an earlier partial run kept stay so; every row's
            // probes are the page's own (the "judged again" line says so).
            kept: earlier.kept,
            rejudged: true,
            duration_s: earlier.duration_s,
            rows,
        })
    })();
    let written = done.and_then(|doc| {
        page::write_all(&doc, &Vec::new(), &settings.out)?;
        page::copy_traces(&doc, docs_dir(), &settings.out)?;
        if settings.write_docs {
            page::write_all(&doc, &Vec::new(), docs_dir())?;
        }
        Ok(doc)
    });
    match written {
        Ok(doc) => {
            println!(
                "rejudged from docs/redlock-debate.json, nothing measured. {}",
                summary(&doc, settings)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("seckill-loadgen: debate --rejudge: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seckill_load::judge::Expected;

    #[test]
    fn every_row_names_its_dials_crosses_a_boundary_or_holds_everywhere_and_quotes_briefly() {
        for row in ROWS.iter() {
            assert!(
                row.quote.split_whitespace().count() <= 25,
                "{}: quote too long",
                row.id
            );
            assert_eq!(
                row.quote.is_empty(),
                row.source.author == rows::DERIVED.author,
                "{}",
                row.id
            );
            assert_eq!(row.quote.is_empty(), row.quote_zh.is_empty(), "{}", row.id);
            assert!(
                row.run
                    .scenario
                    .params()
                    .iter()
                    .any(|s| s.name == row.run.sweep.0),
                "{}",
                row.id
            );
            let predictions: Vec<Expected> = row
                .run
                .sweep
                .1
                .iter()
                .map(|v| {
                    let params = params_at(&row.run, v).expect("params");
                    // Where the claim applies reads the same scenario's dials.
                    let _ = (row.states.applies)(&params);
                    (row.predicts)(&params)
                })
                .collect();
            let both =
                predictions.contains(&Expected::Holds) && predictions.contains(&Expected::Breaks);
            let everywhere = predictions.iter().all(|p| *p == predictions[0]);
            assert!(
                both || (everywhere && row.predicts_text.contains("at every")),
                "{}: {predictions:?}",
                row.id
            );
            // The source's claim applies somewhere on the sweep.
            assert!(
                row.run
                    .sweep
                    .1
                    .iter()
                    .any(|v| (row.states.applies)(&params_at(&row.run, v).expect("params"))),
                "{}: the claim applies at no point of its sweep",
                row.id
            );
        }
    }

    #[test]
    fn the_rows_are_in_the_order_of_the_published_page() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/redlock-debate.json");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("the page's JSON"))
                .expect("JSON");
        let published: Vec<&str> = doc["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .filter_map(|r| r["id"].as_str())
            .collect();
        let ours: Vec<&str> = ROWS.iter().map(|r| r.id).collect();
        assert_eq!(ours, published);
    }
}
