//! The scenario routes: the scenarios the page lists (with their dials),
//! a run started (`POST /api/scenario`), its curves, and its stop.

use actix_web::{get, post, web, HttpResponse};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::error::{Answer, ConsoleError};
use super::state::Console;
use seckill_faults::scenario::Scenario;

/// One scenario in the page's list.
#[derive(Debug, Serialize)]
pub(super) struct ScenarioItem {
    name: &'static str,
    summary: &'static str,
    /// Its dials, one input each on the page.
    params: Vec<ParamItem>,
}

/// One dial of a scenario, as the page draws its input.
#[derive(Debug, Serialize)]
struct ParamItem {
    name: &'static str,
    unit: String,
    default: &'static str,
    meaning: &'static str,
    /// The words a choice dial takes (empty: free text).
    choices: &'static [&'static str],
}

fn param_items(scenario: Scenario) -> Vec<ParamItem> {
    use seckill_faults::scenario::ParamUnit;
    scenario
        .params()
        .iter()
        .map(|p| ParamItem {
            name: p.name,
            unit: match p.unit {
                ParamUnit::Choice(_) => "choice".into(),
                unit => unit.describe(),
            },
            default: p.default,
            meaning: p.meaning,
            choices: match p.unit {
                ParamUnit::Choice(words) => words,
                _ => &[],
            },
        })
        .collect()
}

/// Every scenario with its summary and dials, in the page's order.
pub(super) fn scenario_items() -> Vec<ScenarioItem> {
    Scenario::value_variants()
        .iter()
        .map(|s| ScenarioItem {
            name: s.name(),
            summary: s.summary(),
            params: param_items(*s),
        })
        .collect()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioRequest {
    name: String,
    /// Dials to set (`--set NAME=VALUE` each); empty values are left out.
    #[serde(default)]
    sets: std::collections::BTreeMap<String, String>,
    /// One dial swept: `NAME=v1,v2,…` (`--sweep`).
    #[serde(default)]
    sweep: Option<String>,
    /// One strategy only (`--strategies`); absent: every one it applies to.
    #[serde(default)]
    strategy: Option<seckill_load::api::StrategyName>,
}

#[post("/api/scenario")]
pub(super) async fn scenario_start(
    console: web::Data<Console>,
    body: web::Json<ScenarioRequest>,
) -> Answer {
    let scenario = Scenario::value_variants()
        .iter()
        .find(|s| s.name() == body.name)
        .ok_or_else(|| ConsoleError::BadRequest(format!("unknown scenario {:?}", body.name)))?;
    let request = body.into_inner();
    let sets: Vec<(String, String)> = request
        .sets
        .into_iter()
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let sweep = match request.sweep.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => {
            Some(seckill_faults::scenario::parse_sweep(text).map_err(ConsoleError::BadRequest)?)
        }
    };
    // Refused here, by name, as the command line refuses it.
    seckill_faults::scenario::check_dials_of(*scenario, &sets, sweep.as_ref())
        .map_err(ConsoleError::BadRequest)?;
    let dials = super::runner::Dials {
        sets,
        sweep,
        strategy: request.strategy,
        cell: None,
        full: false,
    };
    let out = console
        .runner
        .start(
            super::runner::Target::Scenario(*scenario),
            &dials,
            &console.runner_options,
        )
        .map_err(ConsoleError::Conflict)?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "out": out })))
}

/// `GET /api/scenario/curves`: the curves of the last run's sweeps (SVG
/// drawn by the report's own code), once it ended; `[]` before.
#[get("/api/scenario/curves")]
pub(super) async fn scenario_curves(console: web::Data<Console>) -> HttpResponse {
    HttpResponse::Ok().json(console.runner.curves())
}

#[post("/api/scenario/stop")]
pub(super) async fn scenario_stop(console: web::Data<Console>) -> Answer {
    console.runner.stop().map_err(ConsoleError::Conflict)?;
    Ok(HttpResponse::NoContent().finish())
}
