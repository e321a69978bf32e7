//! [`Application::build`] turns [`Settings`] into a bound, ready-to-run
//! server: database pool and migrations, seed products, Redis, strategies,
//! the shared control state and its refresher, and the actix-web app with
//! JSON error handlers — each a step of its own, in the order `build`
//! calls them. Tests bind port 0 and read [`Application::port`].
//! The top of the crate: it builds the [`AppState`] of [`crate::state`]
//! that every route reads, and mounts [`crate::routes`].

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{web, App, HttpServer};
use anyhow::Context;
use backon::{ExponentialBuilder, Retryable as _};

use crate::configuration::Settings;
use crate::control::Control;
use crate::faults::Faults;
use crate::lock::{redis_lua_stock, redlock};
use crate::metrics::Metrics;
use crate::registry::Strategies;
use crate::state::AppState;
use crate::strategy::Deps;
use crate::{db, routes};

pub use crate::routes::rejections::MAX_BODY_BYTES;

/// A built, bound server.
pub struct Application {
    port: u16,
    server: Server,
    stop_background: tokio::sync::watch::Sender<bool>,
    state: web::Data<AppState>,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Connect, migrate, seed, bind — one step per function below, in the
    /// order they run. Fails with a message naming what is missing (the
    /// database, a migration, the listen address).
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = migrated_pool(&settings).await?;
        let known_products = seeded_products(&settings, &pool).await?;
        let deps = dependencies(&settings, pool).await?;
        let control = control(&settings, &deps).await?;
        start_two_phase_commit(&settings, &control, &deps).await;
        let stop_background = background_tasks(&settings, &control, &deps);
        let listener = TcpListener::bind(settings.listen_addr()?)
            .with_context(|| format!("cannot listen on {} (SECKILL_LISTEN)", settings.listen))?;
        let port = listener.local_addr()?.port();
        let read_pool = db::read_pool(&settings).context("invalid SECKILL_DATABASE_URL")?;
        let admin_token = settings.effective_admin_token();
        let state = web::Data::new(AppState {
            deps,
            read_pool,
            witness: db::ServerWitness::default(),
            known_products,
            control,
            settings,
            admin_token,
        });
        let server = serve(listener, state.clone())?;
        Ok(Self {
            port,
            server,
            stop_background,
            state,
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A handle that stops the server gracefully.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// The shared state (tests inspect metrics through it).
    pub fn state(&self) -> web::Data<AppState> {
        self.state.clone()
    }

    /// Serve until SIGINT/SIGTERM or [`Application::handle`] stops it, then
    /// stop the background tasks.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        let _ = self.stop_background.send(true);
        self.state.deps.pool.close().await;
        self.state.read_pool.close().await;
        result
    }
}

/// Step 1: the pool, and the migrations applied through it.
async fn migrated_pool(settings: &Settings) -> anyhow::Result<sqlx::PgPool> {
    let pool = db::pool(settings).context("invalid SECKILL_DATABASE_URL")?;
    db::migrate(&pool).await.with_context(|| {
        format!(
            "cannot migrate the database at {} (is PostgreSQL running and the database created?)",
            redact(&settings.database_url)
        )
    })?;
    Ok(pool)
}

/// Step 2: the seed products (`SECKILL_SEED_PRODUCTS`), and the ids the
/// grab route accepts.
async fn seeded_products(
    settings: &Settings,
    pool: &sqlx::PgPool,
) -> anyhow::Result<db::KnownProducts> {
    let seeds = settings.seed_products()?;
    db::seed(pool, &seeds)
        .await
        .context("cannot seed products")?;
    let known_products = db::KnownProducts::default();
    known_products
        .fill(pool)
        .await
        .context("cannot read the products")?;
    Ok(known_products)
}

/// Step 3: what every strategy shares — Redis, the metrics, the history
/// arbiter, the lock settings, the scenario hook.
async fn dependencies(settings: &Settings, pool: sqlx::PgPool) -> anyhow::Result<Deps> {
    let redis = crate::redis_client::connection(&settings.redis_url)?;
    let metrics = Metrics::new();
    let history = crate::history::History::new(
        settings
            .history_url
            .as_deref()
            .unwrap_or(&settings.redis_url),
        settings.instance(),
        metrics.clone(),
    )?;
    history.set_stale_after(settings.history_stale_ms.ms());
    if let Err(e) = history.refresh().await {
        tracing::warn!(error = %e, "history arbiter not reachable at start");
    }
    Ok(Deps {
        pool,
        redis,
        metrics,
        history,
        redis_wait_replicas: settings.redis_wait_replicas,
        redis_wait_timeout: settings.redis_wait_timeout_ms.ms(),
        lock_ttl: settings.lock_ttl(),
        lock_wait: settings.lock_wait(),
        lock_retry: settings.lock_retry_ms.ms(),
        optimistic_max_retries: settings.optimistic_max_retries,
        freeze: crate::freeze::FreezeHook::default(),
    })
}

/// Step 4: every strategy built, the configured one in force (or the one
/// Redis says the replicas share), and each metric series present at 0.
async fn control(settings: &Settings, deps: &Deps) -> anyhow::Result<Arc<Control>> {
    let control = Arc::new(Control::new(
        Strategies::new(settings)?,
        settings.strategy,
        Faults::with_work_delay(settings.work_delay_ms),
    )?);
    let names: Vec<&str> = control
        .strategies()
        .iter()
        .map(|s| s.info().name.as_str())
        .collect();
    let nodes: Vec<String> = settings
        .redlock_urls
        .iter()
        .map(|url| redlock::node_name(url))
        .collect();
    deps.metrics
        .init_series(&names, &nodes, &[redis_lua_stock::INFO.name.as_str()]);
    if let Err(e) = control.refresh(deps).await {
        tracing::warn!(error = %e, "redis not reachable at start; using the configured strategy");
    }
    Ok(control)
}

/// How often pg-2pc's start (the stock schema, whether the servers allow
/// prepared transactions, the recovery of this coordinator's in-doubt
/// transactions) is tried again while the databases do not answer: from
/// 500 ms, doubling up to 30 s, 30 tries (about 12 minutes) — then a
/// logged error, and pg-2pc stays unavailable until the replica restarts.
fn two_phase_commit_retries() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(30))
        .with_factor(2.0)
        .with_jitter()
        .with_max_times(30)
}

/// Step 5 (pg-2pc, when a stock database is configured): its start, tried
/// once here and then in the background by [`two_phase_commit_retries`].
async fn start_two_phase_commit(settings: &Settings, control: &Control, deps: &Deps) {
    if settings.stock_database_url().is_none() {
        return;
    }
    let two_pc = control.strategies().two_pc().clone();
    let main = deps.pool.clone();
    let Err(e) = two_pc.start(&main).await else {
        return;
    };
    tracing::warn!(error = %e, "pg-2pc: start/recovery failed; retrying in the background");
    tokio::spawn(async move {
        let started = (|| two_pc.start(&main))
            .retry(two_phase_commit_retries())
            .notify(|e: &anyhow::Error, after: Duration| {
                tracing::warn!(error = %e, retry_in_ms = after.as_millis(), "pg-2pc: start/recovery failed");
            })
            .await;
        match started {
            Ok(_) => tracing::info!("pg-2pc: started after retries"),
            Err(e) => tracing::error!(
                error = %e,
                "pg-2pc: start/recovery gave up after 30 tries; pg-2pc stays unavailable and in-doubt transactions stay prepared until this replica restarts"
            ),
        }
    });
}

/// Step 6: the loops that follow the shared state — the strategy and
/// faults in force, the history arbiter — until the server stops.
fn background_tasks(
    settings: &Settings,
    control: &Arc<Control>,
    deps: &Deps,
) -> tokio::sync::watch::Sender<bool> {
    let (stop_background, stop_rx) = tokio::sync::watch::channel(false);
    let every = settings.control_refresh_ms.ms();
    tokio::spawn(control.clone().refresh_loop(deps.clone(), every, stop_rx));
    tokio::spawn(
        deps.history
            .clone()
            .refresh_loop(every, stop_background.subscribe()),
    );
    stop_background
}

/// Step 7: the actix-web server on `listener`: the routes of
/// [`route_table`], the extractors' JSON errors of
/// [`routes::rejections`], a JSON 404 for anything else.
fn serve(listener: TcpListener, state: web::Data<AppState>) -> std::io::Result<Server> {
    let grab_rate = web::Data::new(routes::status::GrabRate::default());
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(grab_rate.clone())
            .configure(routes::rejections::configure)
            .configure(route_table)
            .default_service(web::to(routes::rejections::not_found))
    })
    .workers(workers)
    .shutdown_timeout(5)
    .listen(listener)?
    .run())
}

/// The route table: every endpoint of the service (the OpenAPI document's
/// paths are the same handlers, in [`crate::openapi`]).
fn route_table(cfg: &mut web::ServiceConfig) {
    cfg.service(routes::grab::grab)
        .service(routes::products::product)
        .service(routes::health::live)
        .service(routes::health::ready)
        .service(routes::metrics::metrics)
        .service(routes::admin::strategies)
        .service(routes::admin::switch_strategy)
        .service(routes::admin::reset_product)
        .service(routes::admin::product_orders)
        .service(routes::admin::audit)
        .service(routes::admin::get_faults)
        .service(routes::admin::put_faults)
        .service(routes::admin::clear_faults)
        .service(routes::admin::arm_freeze)
        .service(routes::admin::disarm_freeze)
        .service(routes::admin::get_history)
        .service(routes::admin::history_sections)
        .service(routes::admin::put_history)
        .service(routes::admin::forget_history)
        .service(routes::status::page)
        .service(routes::status::status)
        .service(routes::status::status_stream)
        .service(crate::openapi::openapi_json);
}

/// The database URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
