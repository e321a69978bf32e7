//! The console's HTTP routes: the page, its two JSON feeds, and the
//! controls. Each control is one request to the service through
//! [`crate::api::Service`]; a service that refuses or is down gives
//! `502 {"error": "service", "message"}`, bad input `400 {"error",
//! "message"}`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix_web::{delete, get, post, put, web, App, HttpResponse, HttpServer};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::pacer::{CountsView, LoadAdjust, LoadSettings, Pacer};
use super::recording::{faults_on, Recording};
use super::runner::RunView;
use super::state::Console;
use crate::api::{Faults, FaultsPatch, Section, StrategyEntry};
use crate::load::lock;
use crate::scenario::Scenario;
use seckill_wire::i18n;

const PAGE: &str = include_str!("page.html");

/// The most recent finished sections the timeline asks the arbiter for.
const TIMELINE_SECTIONS: u64 = 800;

pub(super) use super::error::{Answer, ConsoleError};

/// Serve the console on `bind` until Ctrl-C.
pub async fn serve(
    console: Console,
    bind: SocketAddr,
    login: Option<super::guard::Login>,
) -> std::io::Result<()> {
    let console = web::Data::new(console);
    let login = login.map(web::Data::new);
    let server = HttpServer::new({
        let console = console.clone();
        move || {
            let mut app = App::new()
                .wrap(actix_web::middleware::from_fn(super::guard::require_login))
                .wrap(actix_web::middleware::from_fn(
                    super::guard::refuse_cross_site,
                ));
            if let Some(login) = &login {
                app = app.app_data(login.clone());
            }
            app.app_data(console.clone())
                .app_data(web::JsonConfig::default().error_handler(|e, _| {
                    ConsoleError::BadRequest(format!("bad JSON body: {e}")).into()
                }))
                .service(page)
                .service(state)
                .service(sections)
                .service(switch)
                .service(load_start)
                .service(load_adjust)
                .service(load_stop)
                .service(faults_set)
                .service(faults_clear)
                .service(reset_all)
                .service(scenario_start)
                .service(scenario_stop)
                .service(scenario_curves)
                .service(super::atlas::cells)
                .service(super::atlas::run)
                .service(super::replay::list)
                .service(super::replay::run)
                .service(super::replay::result)
                .service(run_series)
                .service(run_csv)
                .service(run_json)
                .service(run_download)
                .service(vendor_asset)
                .route("/login", web::post().to(super::guard::log_in))
        }
    })
    .workers(2)
    .disable_signals()
    .bind(bind)?;
    let addrs = server.addrs();
    let server = server.run();
    let handle = server.handle();
    for addr in addrs {
        println!(
            "console: http://{addr}/ (against {})",
            console.service.urls.join(", ")
        );
    }
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        handle.stop(true).await;
    });
    let result = server.await;
    console.stop_all().await;
    result
}

/// The page, in the language `Accept-Language` prefers until the room
/// picks one with the page's toggle (kept in the browser).
#[get("/")]
async fn page(request: actix_web::HttpRequest) -> HttpResponse {
    let accept = request
        .headers()
        .get(actix_web::http::header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("Vary", "Accept-Language"))
        .body(i18n::page(PAGE, i18n::Lang::from_accept_language(accept)))
}

/// One replica as the console sees it.
#[derive(Debug, Serialize)]
struct ReplicaView {
    url: String,
    /// Its history instance id (the timeline's row name), when it answered.
    instance: Option<String>,
    strategy: Option<String>,
    faults: Option<Faults>,
    grabs_per_sec: Option<f64>,
    /// Why it could not be read.
    error: Option<String>,
}

/// The live figures of the product (from the first replica that answers,
/// grabs/s summed over every replica).
#[derive(Debug, Default, Serialize)]
struct Live {
    stock: Option<i64>,
    initial_stock: Option<i64>,
    orders: Option<i64>,
    oversold: Option<i64>,
    lost_updates: Option<i64>,
    undersold: Option<i64>,
    duplicates: Option<i64>,
    grabs_per_sec: f64,
    /// Whether the history records a run (the timeline and overlaps need it).
    history: bool,
    overlaps: Option<u64>,
    max_holders: Option<u64>,
    /// Failed arbiter calls of the run, every replica: any makes the
    /// overlap count incomplete.
    history_errors: Option<u64>,
}

#[derive(Debug, Serialize)]
struct LoadView {
    running: bool,
    /// A stop was asked for; the grabs in flight are being answered.
    stopping: bool,
    settings: LoadSettings,
    seconds: Option<f64>,
    counts: Option<CountsView>,
}

#[derive(Debug, Serialize)]
struct ScenarioItem {
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
    use crate::scenario::ParamUnit;
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

/// `GET /api/state`.
#[derive(Debug, Serialize)]
struct StateView<'a> {
    product: u64,
    strategy: Option<String>,
    default_strategy: &'a str,
    strategies: &'a [StrategyEntry],
    replicas: Vec<ReplicaView>,
    /// The faults of the first replica that answered.
    faults: Option<Faults>,
    /// Each fault in force, as text (`[]` when none).
    faults_in_force: Vec<String>,
    /// Whether every replica that answered reports the same faults.
    faults_agree: bool,
    pause_at_options: [&'static str; 3],
    live: Live,
    load: LoadView,
    scenario: RunView,
    scenarios: Vec<ScenarioItem>,
}

/// Over 80 lines on purpose: the page's one state document, every field filled
/// in the order the page draws it.
#[get("/api/state")]
async fn state(console: web::Data<Console>) -> HttpResponse {
    let service = &console.service;
    let mut replicas = Vec::with_capacity(service.urls.len());
    let mut live = Live::default();
    let mut first_status = None;
    for base in &service.urls {
        let mut view = ReplicaView {
            url: base.clone(),
            instance: None,
            strategy: None,
            faults: None,
            grabs_per_sec: None,
            error: None,
        };
        match service.status_of(base, console.product).await {
            Ok(status) => {
                view.strategy = Some(status.strategy.clone());
                view.grabs_per_sec = Some(status.grabs_per_sec);
                live.grabs_per_sec += status.grabs_per_sec;
                first_status.get_or_insert(status);
            }
            Err(e) => view.error = Some(e.to_string()),
        }
        match service.faults_of(base).await {
            Ok(faults) => view.faults = Some(faults),
            Err(e) => view.error = view.error.or(Some(e.to_string())),
        }
        match service.history_of(base).await {
            Ok(history) => {
                view.instance = Some(history.instance.clone());
                if history.enabled {
                    live.history = true;
                    *live.history_errors.get_or_insert(0) += history.errors;
                    if live.overlaps.is_none() {
                        live.overlaps = Some(history.strategies.iter().map(|s| s.overlaps).sum());
                        live.max_holders = history.strategies.iter().map(|s| s.max_holders).max();
                    }
                }
            }
            Err(e) => view.error = view.error.or(Some(e.to_string())),
        }
        replicas.push(view);
    }
    if let Some(status) = &first_status {
        live.stock = Some(status.stock);
        live.initial_stock = Some(status.initial_stock);
        live.orders = Some(status.orders);
        live.oversold = Some(status.oversold);
        live.lost_updates = Some(status.lost_updates);
        live.undersold = Some(status.undersold);
        live.duplicates = Some(status.duplicates);
    }
    let faults = replicas.iter().find_map(|r| r.faults);
    let faults_agree = replicas
        .iter()
        .filter_map(|r| r.faults)
        .all(|f| Some(f) == faults);
    let load = {
        let guard = lock(&console.load);
        match guard.as_ref() {
            Some(pacer) => LoadView {
                running: true,
                stopping: pacer.stopping(),
                settings: pacer.settings(),
                seconds: Some(pacer.seconds()),
                counts: Some(pacer.counts()),
            },
            None => LoadView {
                running: false,
                stopping: false,
                settings: LoadSettings {
                    stock: *lock(&console.stock),
                    ..LoadSettings::default()
                },
                seconds: None,
                counts: None,
            },
        }
    };
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(StateView {
            product: console.product,
            faults_in_force: first_status
                .as_ref()
                .map(|s| faults_on(&s.faults))
                .unwrap_or_default(),
            strategy: first_status.map(|s| s.strategy),
            default_strategy: &console.default_strategy,
            strategies: &console.strategies.strategies,
            replicas,
            faults,
            faults_agree,
            pause_at_options: ["before-read", "before-write", "before-commit"],
            live,
            load,
            scenario: console.runner.view(),
            scenarios: Scenario::value_variants()
                .iter()
                .map(|s| ScenarioItem {
                    name: s.name(),
                    summary: s.summary(),
                    params: param_items(*s),
                })
                .collect(),
        })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SectionsQuery {
    /// The window drawn, in milliseconds (1000 to 120000; 10000 by default).
    window_ms: Option<u64>,
}

/// `GET /api/sections`.
#[derive(Debug, Serialize)]
struct SectionsView {
    /// The right edge of the timeline: microseconds since the epoch.
    now_us: i64,
    window_us: i64,
    run: Option<String>,
    /// One row per replica, in `--url` order (instance ids; a replica that
    /// did not answer is left out).
    rows: Vec<String>,
    /// The product's sections that touch the window, oldest entry first.
    sections: Vec<Section>,
}

#[get("/api/sections")]
async fn sections(console: web::Data<Console>, query: web::Query<SectionsQuery>) -> Answer {
    let window_ms = query.window_ms.unwrap_or(10_000);
    if !(1_000..=120_000).contains(&window_ms) {
        return Err(ConsoleError::BadRequest(
            "window_ms must be between 1000 and 120000".into(),
        ));
    }
    let body = console.service.recent_sections(TIMELINE_SECTIONS).await?;
    let mut rows = Vec::new();
    for base in &console.service.urls {
        if let Ok(history) = console.service.history_of(base).await {
            rows.push(history.instance);
        }
    }
    // The arbiter's clock is Redis's; the console's is this machine's.
    // The right edge is whichever is later, so a live bar is never cut off.
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let newest = body
        .sections
        .iter()
        .map(|s| s.exited_us.unwrap_or(s.entered_us))
        .max()
        .unwrap_or(0);
    let now_us = wall.max(newest);
    let window_us = i64::try_from(window_ms * 1000).unwrap_or(i64::MAX);
    let product = i64::try_from(console.product).unwrap_or(i64::MAX);
    let sections = body
        .sections
        .into_iter()
        .filter(|s| s.product == product && s.exited_us.unwrap_or(now_us) >= now_us - window_us)
        .collect();
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(SectionsView {
            now_us,
            window_us,
            run: body.run,
            rows,
            sections,
        }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchRequest {
    strategy: String,
}

/// Switch every replica; a history run being recorded starts anew, so the
/// timeline and the overlap count are the new strategy's alone.
#[put("/api/strategy")]
async fn switch(console: web::Data<Console>, body: web::Json<SwitchRequest>) -> Answer {
    let service = &console.service;
    crate::api::entry(&console.strategies, &body.strategy)
        .map_err(|e| ConsoleError::BadRequest(e.to_string()))?;
    service.switch(&body.strategy, console.product).await?;
    if service.history().await?.enabled {
        service.history_start().await?;
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Set the work delay (when given), reset the stock, start a history run,
/// then the paced load (a load already running is stopped first).
#[post("/api/load/start")]
async fn load_start(console: web::Data<Console>, body: web::Json<LoadSettings>) -> Answer {
    let settings = body.into_inner();
    settings.check().map_err(ConsoleError::BadRequest)?;
    console.stop_load().await;
    let service = &console.service;
    if let Some(ms) = settings.work_delay_ms {
        service
            .set_faults(FaultsPatch {
                work_delay_ms: Some(ms),
                ..FaultsPatch::default()
            })
            .await?;
    }
    service.reset(console.product, settings.stock).await?;
    *lock(&console.stock) = settings.stock;
    service.history_start().await?;
    let recording = Recording::begin(service.clone(), console.product);
    let pacer = Pacer::start(service, console.product, settings, recording.log.clone());
    if let Some(old) = lock(&console.recording).replace(recording) {
        old.finish();
    }
    *lock(&console.load) = Some(Arc::new(pacer));
    Ok(HttpResponse::NoContent().finish())
}

/// Change the rate and/or the buyers of the running load, without
/// restarting it (no reset, the same history run, its counts go on).
#[post("/api/load/adjust")]
async fn load_adjust(console: web::Data<Console>, body: web::Json<LoadAdjust>) -> Answer {
    let change = body.into_inner();
    change.check().map_err(ConsoleError::BadRequest)?;
    let pacer = lock(&console.load).clone();
    match pacer {
        Some(pacer) if !pacer.stopping() => {
            pacer.adjust(change);
            Ok(HttpResponse::NoContent().finish())
        }
        _ => Err(ConsoleError::Conflict("no load is running".into())),
    }
}

#[post("/api/load/stop")]
async fn load_stop(console: web::Data<Console>) -> HttpResponse {
    console.stop_load().await;
    HttpResponse::NoContent().finish()
}

/// A patch of the shared faults (any subset of `/admin/faults`' keys).
#[put("/api/faults")]
async fn faults_set(console: web::Data<Console>, body: web::Json<FaultsPatch>) -> Answer {
    let faults = console.service.set_faults(body.into_inner()).await?;
    Ok(HttpResponse::Ok().json(faults))
}

#[delete("/api/faults")]
async fn faults_clear(console: web::Data<Console>) -> Answer {
    let faults = console.service.clear_faults().await?;
    Ok(HttpResponse::Ok().json(faults))
}

/// Load stopped, faults cleared, stock reset, the default strategy back,
/// the history off (the timeline empties).
#[post("/api/reset")]
async fn reset_all(console: web::Data<Console>) -> Answer {
    console.stop_load().await;
    let service = &console.service;
    service.clear_faults().await?;
    service
        .switch(&console.default_strategy, console.product)
        .await?;
    let stock = *lock(&console.stock);
    service.reset(console.product, stock).await?;
    service.history_stop().await?;
    Ok(HttpResponse::NoContent().finish())
}

/// `GET /api/run`: the charts' series of the last load's recording
/// (`404 {"error": "not_found"}` before the first load).
#[get("/api/run")]
async fn run_series(console: web::Data<Console>) -> Answer {
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
async fn run_csv(console: web::Data<Console>) -> Answer {
    download(&console, Format::Csv)
}

/// `GET /api/run.json`: the same run as JSON (rows, readings, bands).
#[get("/api/run.json")]
async fn run_json(console: web::Data<Console>) -> Answer {
    download(&console, Format::Json)
}

/// `GET /api/run/download?format=csv|json`: the two above under one
/// route (kept for the links earlier versions printed).
#[get("/api/run/download")]
async fn run_download(console: web::Data<Console>, query: web::Query<DownloadQuery>) -> Answer {
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

/// The charting library, vendored (the room may be offline): uPlot.
#[get("/assets/{name}")]
async fn vendor_asset(name: web::Path<String>) -> Answer {
    let (body, kind) = match name.as_str() {
        "uPlot.iife.min.js" => (
            include_str!("vendor/uplot/uPlot.iife.min.js"),
            "text/javascript; charset=utf-8",
        ),
        "uPlot.min.css" => (
            include_str!("vendor/uplot/uPlot.min.css"),
            "text/css; charset=utf-8",
        ),
        other => return Err(ConsoleError::NotFound(format!("no asset {other:?}"))),
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header(("Cache-Control", "max-age=86400"))
        .body(body))
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
}

#[post("/api/scenario")]
async fn scenario_start(console: web::Data<Console>, body: web::Json<ScenarioRequest>) -> Answer {
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
        Some(text) => Some(crate::scenario::parse_sweep(text).map_err(ConsoleError::BadRequest)?),
    };
    // Refused here, by name, as the command line refuses it.
    crate::scenario::check_dials_of(*scenario, &sets, sweep.as_ref())
        .map_err(ConsoleError::BadRequest)?;
    let dials = super::runner::Dials {
        sets,
        sweep,
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
async fn scenario_curves(console: web::Data<Console>) -> HttpResponse {
    HttpResponse::Ok().json(console.runner.curves())
}

#[post("/api/scenario/stop")]
async fn scenario_stop(console: web::Data<Console>) -> Answer {
    console.runner.stop().map_err(ConsoleError::Conflict)?;
    Ok(HttpResponse::NoContent().finish())
}
