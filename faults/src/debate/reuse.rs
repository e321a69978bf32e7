//! `--reuse`: the runs an earlier debate kept under `--out`, read back
//! (their sweep's and their probes' reports) instead of measured again.

use super::doc::{self, Measurements};
use super::rows::Run;
use super::settings::Settings;
use crate::scenario::{self, CaseResult};

/// `--reuse`: the runs whose reports are kept under `--out`, read back,
/// and the runs left to measure (every run without `--reuse`).
pub(super) fn read_back_all(settings: &Settings, runs: Vec<Run>) -> (Measurements, Vec<Run>) {
    let mut reused: Measurements = Vec::new();
    let mut to_run: Vec<Run> = Vec::new();
    for run in runs {
        match settings.reuse.then(|| read_back(&settings.out, &run)) {
            Some(Some(cases)) => {
                seckill_load::progress::line(format!(
                    "== debate run {}: read back from {} ({} cases)",
                    run.id,
                    settings.out.join(run.id).display(),
                    cases.len()
                ));
                reused.push((run, cases));
            }
            _ => to_run.push(run),
        }
    }
    (reused, to_run)
}

/// `--reuse`: the cases of `run` kept under `out` by an earlier debate —
/// its sweep's `scenarios.json` and every `probe-*/scenarios.json` beside
/// it — or `None` when its sweep's report is not there or cannot be read.
fn read_back(out: &std::path::Path, run: &Run) -> Option<Vec<doc::Measured>> {
    let folder = out.join(run.id);
    // A case without the swept dial's value cannot be placed: the row's
    // report is then unreadable (`None`), and the row is measured again.
    let value = |c: &CaseResult| c.sweep_value(run.sweep.0);
    let mut cases: Vec<doc::Measured> = scenario::ScenarioReport::read_cases(&folder)?
        .into_iter()
        .map(|c| Some((value(&c)?, c, true)))
        .collect::<Option<_>>()?;
    let mut probes: Vec<std::path::PathBuf> = std::fs::read_dir(&folder)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("probe-"))
        })
        .collect();
    probes.sort();
    for probe in probes {
        for c in scenario::ScenarioReport::read_cases(&probe).unwrap_or_default() {
            cases.push((value(&c)?, c, false));
        }
    }
    Some(cases)
}
