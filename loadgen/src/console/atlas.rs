//! The atlas on the console: `GET /api/atlas` lists every measured cell of
//! `--atlas` (docs/atlas.json), `POST /api/atlas/run {"cell": "s:f"}`
//! reruns one — both ends of its bracket (or of its range, where nothing
//! flipped) as one sweep, with the dials and the injections it was
//! measured with — on the page's scenario runner. The page names the cell
//! while it runs, and its curve shades the atlas's bracket and draws the
//! model's flips.

use actix_web::{get, post, web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::error::{Answer, ConsoleError};
use super::runner::{AtlasRun, Dials, Target};
use super::state::Console;
use seckill_faults::atlas::{AtlasJson, Cell, CellJson};
use seckill_faults::scenario::Scenario;

/// One cell the page offers.
#[derive(Debug, Serialize)]
struct Item {
    /// `strategy:fault`, what `POST /api/atlas/run` takes.
    id: String,
    strategy: seckill_load::api::StrategyName,
    fault: String,
    scenario: Scenario,
    dial: String,
    /// The two sizes a run sweeps.
    sizes: [String; 2],
    /// What the atlas measured, in words.
    measured: String,
}

/// The atlas file, read now (a `make atlas` while the console runs is
/// seen at once).
fn read(console: &Console) -> Result<AtlasJson, ConsoleError> {
    let path = &console.runner_options.atlas;
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConsoleError::NotFound(format!(
            "no atlas at {} ({e}): make atlas writes it, --atlas names another",
            path.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| ConsoleError::NotFound(format!("{} cannot be read: {e}", path.display())))
}

/// Two sizes as typed, and the bracket they bound (in the dial's unit)
/// when they are one.
type Sizes = ([String; 2], Option<(f64, f64)>);

/// The sizes a rerun sweeps: the exclusion's bracket, else the data's,
/// else the smallest and largest sizes measured; none where nothing was.
fn sizes(c: &CellJson) -> Option<Sizes> {
    for cell in [&c.exclusion, &c.data] {
        if let Cell::Bracket { bracket, .. } = cell {
            return Some((
                [bracket.below.clone(), bracket.above.clone()],
                Some((bracket.below_resolved, bracket.above_resolved)),
            ));
        }
    }
    let probes = c.exclusion.probes();
    let (first, last) = (probes.first()?, probes.last()?);
    (first.value != last.value).then(|| ([first.value.clone(), last.value.clone()], None))
}

fn measured(c: &CellJson) -> String {
    let unit = if c.dial.ends_with("_pct") {
        " %"
    } else {
        " ms"
    };
    format!(
        "exclusion {}; data {}",
        c.exclusion.text(unit),
        c.data.text(unit)
    )
}

/// `GET /api/atlas`: every cell that can be rerun.
#[get("/api/atlas")]
pub(super) async fn cells(console: web::Data<Console>) -> Answer {
    let doc = read(&console)?;
    let items: Vec<Item> = doc
        .cells
        .iter()
        .filter_map(|c| {
            let (sizes, _) = sizes(c)?;
            Some(Item {
                id: format!("{}:{}", c.strategy, c.fault),
                strategy: c.strategy,
                fault: c.fault.clone(),
                scenario: c.scenario,
                dial: c.dial.clone(),
                sizes,
                measured: measured(c),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "atlas": console.runner_options.atlas.display().to_string(),
        "injections_per_probe": doc.injections_per_probe,
        "cells": items,
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    /// `strategy:fault`.
    cell: String,
}

/// `POST /api/atlas/run`: rerun one cell on the scenario runner.
#[post("/api/atlas/run")]
pub(super) async fn run(console: web::Data<Console>, body: web::Json<RunRequest>) -> Answer {
    let doc = read(&console)?;
    let cell = doc
        .cells
        .iter()
        .find(|c| format!("{}:{}", c.strategy, c.fault) == body.cell)
        .ok_or_else(|| ConsoleError::BadRequest(format!("no atlas cell {:?}", body.cell)))?;
    let (sizes, bracket) = sizes(cell).ok_or_else(|| {
        ConsoleError::BadRequest(format!(
            "{} has nothing to rerun: {}",
            body.cell,
            measured(cell)
        ))
    })?;
    let mut sets = cell.fixed.clone();
    sets.push(("injections".into(), doc.injections_per_probe.to_string()));
    let dials = Dials {
        sets,
        sweep: Some((cell.dial.clone(), sizes.to_vec())),
        strategy: None,
        cell: Some(AtlasRun {
            label: format!("{} × {}", cell.strategy, cell.fault),
            measured: measured(cell),
            strategy: cell.strategy,
            variant: cell.variant.map(|v| v.as_str().to_owned()),
            bracket,
            model_flips: cell
                .model
                .as_ref()
                .map(|m| m.flips.clone())
                .unwrap_or_default(),
            quick: doc.quick,
        }),
        full: false,
    };
    let out = console
        .runner
        .start(
            Target::Scenario(cell.scenario),
            &dials,
            &console.runner_options,
        )
        .map_err(ConsoleError::Conflict)?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "out": out, "cell": body.cell })))
}
