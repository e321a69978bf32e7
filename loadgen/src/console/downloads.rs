//! The last load's recording over HTTP: its charts' series (`GET /api/run`)
//! and its download as a file (`/api/run.csv`, `/api/run.json`, `/api/run/download`).

use actix_web::{get, web, HttpResponse};
use serde::Deserialize;

use super::error::{Answer, ConsoleError};
use super::state::Console;
use seckill_load::load::lock;

/// `GET /api/run`: the charts' series of the last load's recording
/// (`404 {"error": "not_found"}` before the first load).
#[get("/api/run")]
pub(super) async fn run_series(console: web::Data<Console>) -> Answer {
    let recording = lock(&console.recording).clone().ok_or_else(no_run)?;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(recording.series()))
}

#[derive(Debug, Deserialize)]
struct DownloadQuery {
    /// `csv` (default) or `json`.
    #[serde(default)]
    format: Option<String>,
}

/// The file formats of a run's download.
#[derive(Debug, Clone, Copy)]
enum Format {
    Csv,
    Json,
}

/// `GET /api/run.csv`: every grab of the last load (time, replica,
/// outcome, latency, the faults in force), one row each, as a file.
#[get("/api/run.csv")]
pub(super) async fn run_csv(console: web::Data<Console>) -> Answer {
    download(&console, Format::Csv)
}

/// `GET /api/run.json`: the same run as JSON (rows, readings, bands).
#[get("/api/run.json")]
pub(super) async fn run_json(console: web::Data<Console>) -> Answer {
    download(&console, Format::Json)
}

/// `GET /api/run/download?format=csv|json`: the two above under one
/// route (kept for the links earlier versions printed).
#[get("/api/run/download")]
pub(super) async fn run_download(
    console: web::Data<Console>,
    query: web::Query<DownloadQuery>,
) -> Answer {
    let format = match query.format.as_deref().unwrap_or("csv") {
        "csv" => Format::Csv,
        "json" => Format::Json,
        other => {
            return Err(ConsoleError::BadRequest(format!(
                "format {other:?}: use csv or json"
            )))
        }
    };
    download(&console, format)
}

/// The last load's recording as a file of `format`.
fn download(console: &Console, format: Format) -> Answer {
    let recording = lock(&console.recording).clone().ok_or_else(no_run)?;
    let name = format!("seckill-run-{}", recording.began_unix_ms);
    let (body, kind, extension) = match format {
        Format::Csv => (recording.csv(), "text/csv; charset=utf-8", "csv"),
        Format::Json => (
            serde_json::to_string_pretty(&recording.json()).unwrap_or_default(),
            "application/json",
            "json",
        ),
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{name}.{extension}\""),
        ))
        .body(body))
}

fn no_run() -> ConsoleError {
    ConsoleError::NotFound(
        "no load has run yet: start one, then its charts and download are here".into(),
    )
}
