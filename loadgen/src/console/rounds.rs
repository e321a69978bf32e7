//! The rounds of the last scenario run, for the page's fault bands:
//! `GET /api/scenario/rounds`. A scenario, a replay or an atlas cell runs
//! in a child process with replicas of its own, so the room's live charts
//! never see its grabs; what it leaves is its report. Once the run ended,
//! every `scenarios.json` of its folder (a replay writes one per variant)
//! is read back through [`ScenarioReport`], and each injection becomes a
//! band from the fault's start to its end (Unix epoch ms, as the live
//! bands are), with what its round showed and, where it broke something,
//! the overlapping critical sections of its trace — who was inside while
//! the fault was in force.

use std::path::{Path, PathBuf};

use actix_web::{get, web, HttpResponse};
use serde::Serialize;

use super::error::{Answer, ConsoleError};
use super::state::Console;
use seckill_faults::scenario::ScenarioReport;
use seckill_load::api::Section;

/// One case of the run and its injections.
#[derive(Debug, Serialize)]
pub struct CaseRounds {
    /// `scenario · strategy · variant` (and the replay's variant folder).
    pub title: String,
    /// Its verdict line.
    pub verdict: String,
    /// Each injection, in the order it ran.
    pub rounds: Vec<Round>,
}

/// One injection: its fault band and what its round showed.
#[derive(Debug, Serialize)]
pub struct Round {
    /// The band's name: `scenario: target` (`gc-pause: replica a`).
    pub name: String,
    /// When the fault began and ended, Unix epoch ms.
    pub start_ms: u64,
    pub end_ms: u64,
    /// Whether it was proven to land (an unproven one is not counted).
    pub landed: bool,
    pub exclusion_broken: bool,
    pub data_damaged: bool,
    /// A crash scenario's: nobody bought again within the watch.
    pub stalled: bool,
    /// The breaches of the data, in words (empty: exact).
    pub damage: String,
    /// The overlapping sections of its trace (none where nothing broke).
    pub sections: Vec<Section>,
}

/// Every `scenarios.json` under `out`: the folder itself, and its
/// subfolders two deep (a replay's `ID/VARIANT/`), in name order.
fn reports_under(out: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![(out.to_path_buf(), 0)];
    while let Some((folder, depth)) = folders.pop() {
        let file = folder.join("scenarios.json");
        if file.is_file() {
            found.push(file);
        }
        if depth < 2 {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            folders.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .map(|p| (p, depth + 1)),
            );
        }
    }
    found.sort();
    found
}

/// The rounds of every case the reports under `out` hold. A report that
/// cannot be read is an error, never an empty run.
pub fn rounds_under(out: &Path) -> Result<Vec<CaseRounds>, String> {
    let mut cases = Vec::new();
    for file in reports_under(out) {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let report: ScenarioReport = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a scenarios.json: {e}", file.display()))?;
        let folder = file
            .parent()
            .and_then(|p| p.strip_prefix(out).ok())
            .map(|p| p.display().to_string())
            .filter(|p| !p.is_empty());
        for case in report.scenarios {
            let mut title = format!("{} · {}", case.name.name(), case.strategy);
            if let Some(v) = case.variant {
                title.push_str(&format!(" · {}", v.as_str()));
            }
            if let Some(folder) = &folder {
                title.push_str(&format!(" ({folder})"));
            }
            let rounds = case
                .injections
                .into_iter()
                .filter_map(|i| {
                    // Reports older than the epoch fields have no band to draw.
                    let (start_ms, end_ms) = (i.start_unix_ms?, i.end_unix_ms?);
                    Some(Round {
                        name: format!("{}: {}", case.name.name(), i.target),
                        start_ms,
                        end_ms: end_ms.max(start_ms),
                        landed: i.proof.is_some(),
                        exclusion_broken: i.exclusion_broken,
                        data_damaged: i.data_damaged,
                        stalled: i.stalled == Some(true),
                        damage: i.damage,
                        sections: i.trace.map(|t| t.sections).unwrap_or_default(),
                    })
                })
                .collect();
            cases.push(CaseRounds {
                title,
                verdict: case.verdict_reason,
                rounds,
            });
        }
    }
    Ok(cases)
}

/// `GET /api/scenario/rounds`: the last run's cases and their rounds once
/// it ended (`[]` while it runs, or before the first run); `500` when a
/// report it left cannot be read.
#[get("/api/scenario/rounds")]
pub(super) async fn scenario_rounds(console: web::Data<Console>) -> Answer {
    let view = console.runner.view();
    let cases = match (&view.out, view.running) {
        (Some(out), false) => rounds_under(Path::new(out)).map_err(ConsoleError::Report)?,
        _ => Vec::new(),
    };
    Ok(HttpResponse::Ok().json(cases))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_that_cannot_be_read_is_an_error_and_no_report_is_no_case() {
        let out = std::env::temp_dir().join(format!("seckill-rounds-{}", std::process::id()));
        let nested = out.join("redisson-2515").join("ours");
        std::fs::create_dir_all(&nested).expect("folders");
        assert!(rounds_under(&out).expect("no report").is_empty());
        std::fs::write(nested.join("scenarios.json"), "{\"tool\":").expect("write");
        let why = rounds_under(&out).expect_err("an unreadable report");
        assert!(why.contains("not a scenarios.json"), "{why}");
        std::fs::remove_dir_all(&out).expect("clean");
    }
}
