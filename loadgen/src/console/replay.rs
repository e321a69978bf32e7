//! The replayed bug reports on the console: `GET /api/replays` lists
//! them (each with the report it reproduces), `POST /api/replay/run
//! {"replay": ID}` runs one — `scenario replay ID`, its reported-bug
//! variant and ours, at its own dials — on the page's scenario runner, and
//! `GET /api/replay/result` reads the run's `replays.json` once it ended:
//! k of n for each variant, and whether the replay held.

use actix_web::{get, post, web, HttpResponse};
use serde::Deserialize;

use super::error::{Answer, ConsoleError};
use super::runner::{Dials, Target};
use super::state::Console;
use seckill_faults::replay::REPLAYS;

/// `GET /api/replays`: every replay, in the order of `--list`.
#[get("/api/replays")]
pub(super) async fn list() -> HttpResponse {
    let items: Vec<serde_json::Value> = REPLAYS
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "reproduces": r.reproduces,
                "scenario": r.scenario.name(),
                "strategy": r.strategy.as_str(),
                "outcome": r.shows.as_str(),
            })
        })
        .collect();
    HttpResponse::Ok().json(serde_json::json!({ "replays": items }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    /// A replay's id (`scenario replay --list`).
    replay: String,
    /// Injections per variant (`--set injections=N`); absent: the replay's.
    #[serde(default)]
    injections: Option<u32>,
}

/// `POST /api/replay/run`: run one replay on the scenario runner.
#[post("/api/replay/run")]
pub(super) async fn run(console: web::Data<Console>, body: web::Json<RunRequest>) -> Answer {
    let replay = REPLAYS
        .iter()
        .find(|r| r.id == body.replay)
        .ok_or_else(|| ConsoleError::BadRequest(format!("no replay {:?}", body.replay)))?;
    let sets = match body.injections {
        None => Vec::new(),
        Some(n @ 1..=100) => vec![("injections".to_owned(), n.to_string())],
        Some(n) => {
            return Err(ConsoleError::BadRequest(format!(
                "injections must be between 1 and 100, not {n}"
            )))
        }
    };
    let out = console
        .runner
        .start(
            Target::Replay(replay.id),
            &Dials {
                sets,
                full: true,
                ..Dials::default()
            },
            &console.runner_options,
        )
        .map_err(ConsoleError::Conflict)?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({ "out": out, "replay": replay.id })))
}

/// `GET /api/replay/result`: the last replay run's `replays.json` once it
/// ended; `null` while it runs, or when the last run was not a replay.
#[get("/api/replay/result")]
pub(super) async fn result(console: web::Data<Console>) -> HttpResponse {
    let view = console.runner.view();
    let doc = match (&view.replay, &view.out, view.running) {
        (Some(_), Some(out), false) => {
            std::fs::read_to_string(std::path::Path::new(out).join("replays.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        }
        _ => None,
    };
    HttpResponse::Ok().json(doc)
}
