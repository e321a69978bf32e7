//! The console's HTTP routes: the page, its two JSON feeds, and the
//! controls. Each control is one request to the service through
//! [`seckill_load::api::Service`]; a service that refuses or is down gives
//! `502 {"error": "service", "message"}`, bad input `400 {"error",
//! "message"}`. The scenario routes are in `scenario.rs`, the last load's
//! series and downloads in `downloads.rs`; all are served from here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix_web::{delete, get, post, put, web, App, HttpResponse, HttpServer};
use serde::{Deserialize, Serialize};

use super::pacer::{CountsView, LoadAdjust, LoadSettings, Pacer};
use super::recording::{faults_on, Recording};
use super::runner::RunView;
use super::scenario::{scenario_items, ScenarioItem};
use super::state::Console;
use seckill_load::api::{Damage, Faults, FaultsPatch, Section, StatusBody, StrategyEntry};
use seckill_load::load::lock;
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
                .service(super::scenario::scenario_start)
                .service(super::scenario::scenario_stop)
                .service(super::scenario::scenario_curves)
                .service(super::rounds::scenario_rounds)
                .service(super::atlas::cells)
                .service(super::atlas::run)
                .service(super::replay::list)
                .service(super::replay::run)
                .service(super::replay::result)
                .service(super::downloads::run_series)
                .service(super::downloads::run_csv)
                .service(super::downloads::run_json)
                .service(super::downloads::run_download)
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
    strategy: Option<seckill_load::api::StrategyName>,
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
    /// The four counts of damage.
    #[serde(flatten)]
    damage: Damage<Option<i64>>,
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

/// `GET /api/state`.
#[derive(Debug, Serialize)]
struct StateView<'a> {
    product: u64,
    strategy: Option<seckill_load::api::StrategyName>,
    default_strategy: seckill_load::api::StrategyName,
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

/// `GET /api/state`: the page's one state document, every field filled in
/// the order the page draws it.
#[get("/api/state")]
async fn state(console: web::Data<Console>) -> HttpResponse {
    let (replicas, mut live, first_status) = read_replicas(&console).await;
    if let Some(status) = &first_status {
        copy_product_figures(&mut live, status);
    }
    let faults = replicas.iter().find_map(|r| r.faults);
    let faults_agree = replicas
        .iter()
        .filter_map(|r| r.faults)
        .all(|f| Some(f) == faults);
    let load = load_view(&console);
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(StateView {
            product: console.product,
            faults_in_force: first_status
                .as_ref()
                .map(|s| faults_on(&s.faults))
                .unwrap_or_default(),
            strategy: first_status.map(|s| s.strategy),
            default_strategy: console.default_strategy,
            strategies: &console.strategies.strategies,
            replicas,
            faults,
            faults_agree,
            pause_at_options: ["before-read", "before-write", "before-commit"],
            live,
            load,
            scenario: console.runner.view(),
            scenarios: scenario_items(),
        })
}

/// Every replica read in turn: their views, the live figures summed over
/// them, and the first status that answered.
async fn read_replicas(console: &Console) -> (Vec<ReplicaView>, Live, Option<StatusBody>) {
    let service = &console.service;
    let mut replicas = Vec::with_capacity(service.urls.len());
    let mut live = Live::default();
    let mut first_status = None;
    for base in &service.urls {
        replicas.push(read_replica(console, base, &mut live, &mut first_status).await);
    }
    (replicas, live, first_status)
}

/// One replica's status, faults and history read into its view; its grabs/s
/// and history added to `live`, its status kept in `first_status` if first.
async fn read_replica(
    console: &Console,
    base: &str,
    live: &mut Live,
    first_status: &mut Option<StatusBody>,
) -> ReplicaView {
    let service = &console.service;
    let mut view = ReplicaView {
        url: base.to_owned(),
        instance: None,
        strategy: None,
        faults: None,
        grabs_per_sec: None,
        error: None,
    };
    match service.status_of(base, console.product).await {
        Ok(status) => {
            view.strategy = Some(status.strategy);
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
    view
}

/// The product's figures of the first replica that answered, into `live`.
fn copy_product_figures(live: &mut Live, status: &StatusBody) {
    live.stock = Some(status.stock);
    live.initial_stock = Some(status.initial_stock);
    live.orders = Some(status.orders);
    live.damage = status.damage.map(Some);
}

/// The load as the page shows it: the running one's figures, or the
/// settings the next one starts from.
fn load_view(console: &Console) -> LoadView {
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
    let strategy = seckill_load::api::entry(&console.strategies, &body.strategy)
        .map_err(|e| ConsoleError::BadRequest(e.to_string()))?
        .name;
    service.switch(strategy, console.product).await?;
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
        .switch(console.default_strategy, console.product)
        .await?;
    let stock = *lock(&console.stock);
    service.reset(console.product, stock).await?;
    service.history_stop().await?;
    Ok(HttpResponse::NoContent().finish())
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
