//! [`Application::build`] turns [`Settings`] into a bound, ready-to-run
//! server: database pool and migrations, seed products, Redis, strategies,
//! the shared control state and its refresher, and the actix-web app with
//! JSON error handlers. Tests bind port 0 and read [`Application::port`].
//! The top of the crate: it builds the [`AppState`] of [`crate::state`]
//! that every route reads, and mounts [`crate::routes`].

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use anyhow::Context;

use crate::configuration::Settings;
use crate::control::Control;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::lock::{redis_lua_stock, redlock};
use crate::metrics::Metrics;
use crate::registry::Strategies;
use crate::state::AppState;
use crate::strategy::Deps;
use crate::{db, routes};

/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

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
    /// Connect, migrate, seed, bind. Fails with a message naming what is
    /// missing (the database, a migration, the listen address).
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = db::pool(&settings).context("invalid SECKILL_DATABASE_URL")?;
        db::migrate(&pool).await.with_context(|| {
            format!(
                "cannot migrate the database at {} (is PostgreSQL running and the database created?)",
                redact(&settings.database_url)
            )
        })?;
        let seeds = settings.seed_products()?;
        db::seed(&pool, &seeds)
            .await
            .context("cannot seed products")?;
        let known_products = db::KnownProducts::default();
        known_products
            .fill(&pool)
            .await
            .context("cannot read the products")?;
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
        history.set_stale_after(Duration::from_millis(settings.history_stale_ms));
        if let Err(e) = history.refresh().await {
            tracing::warn!(error = %e, "history arbiter not reachable at start");
        }
        let deps = Deps {
            pool,
            redis,
            metrics,
            history: history.clone(),
            redis_wait_replicas: settings.redis_wait_replicas,
            redis_wait_timeout: Duration::from_millis(settings.redis_wait_timeout_ms),
            lock_ttl: settings.lock_ttl(),
            lock_wait: settings.lock_wait(),
            lock_retry: Duration::from_millis(settings.lock_retry_ms),
            optimistic_max_retries: settings.optimistic_max_retries,
            freeze: crate::freeze::FreezeHook::default(),
        };
        let control = Arc::new(Control::new(
            Strategies::new(&settings)?,
            &settings.strategy,
            Faults::with_work_delay(settings.work_delay_ms),
        )?);
        let names: Vec<&str> = control.strategies().iter().map(|s| s.info().name).collect();
        let nodes: Vec<String> = settings
            .redlock_urls
            .iter()
            .map(|url| redlock::node_name(url))
            .collect();
        deps.metrics
            .init_series(&names, &nodes, &[redis_lua_stock::INFO.name]);
        if let Err(e) = control.refresh(&deps).await {
            tracing::warn!(error = %e, "redis not reachable at start; using the configured strategy");
        }

        // pg-2pc: the stock schema, whether the servers allow prepared
        // transactions, and the recovery of this coordinator's in-doubt
        // transactions — retried until the databases answer.
        if settings.stock_database_url().is_some() {
            let two_pc = control.strategies().two_pc().clone();
            let main = deps.pool.clone();
            let first = two_pc.start(&main).await;
            if let Err(e) = first {
                tracing::warn!(error = %e, "pg-2pc: start/recovery failed; retrying in the background");
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(2)).await;
                        match two_pc.start(&main).await {
                            Ok(_) => break,
                            Err(e) => {
                                tracing::debug!(error = %e, "pg-2pc: start/recovery retry failed")
                            }
                        }
                    }
                });
            }
        }

        let (stop_background, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(control.clone().refresh_loop(
            deps.clone(),
            Duration::from_millis(settings.control_refresh_ms),
            stop_rx,
        ));

        tokio::spawn(history.refresh_loop(
            Duration::from_millis(settings.control_refresh_ms),
            stop_background.subscribe(),
        ));

        let admin_token = settings.effective_admin_token();
        let listener = TcpListener::bind(settings.listen_addr()?)
            .with_context(|| format!("cannot listen on {} (SECKILL_LISTEN)", settings.listen))?;
        let port = listener.local_addr()?.port();
        let read_pool = db::read_pool(&settings).context("invalid SECKILL_DATABASE_URL")?;
        let state = web::Data::new(AppState {
            deps,
            read_pool,
            witness: db::ServerWitness::default(),
            known_products,
            control,
            settings,
            admin_token,
        });
        let server_state = state.clone();
        let grab_rate = web::Data::new(routes::status::GrabRate::default());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(server_state.clone())
                .app_data(grab_rate.clone())
                .app_data(
                    web::JsonConfig::default()
                        .limit(MAX_BODY_BYTES)
                        .error_handler(json_error),
                )
                .app_data(web::PathConfig::default().error_handler(path_error))
                .app_data(web::QueryConfig::default().error_handler(query_error))
                .service(routes::grab::grab)
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
                .service(crate::openapi::openapi_json)
                .default_service(web::to(not_found))
        })
        .workers(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .min(4),
        )
        .shutdown_timeout(5)
        .listen(listener)?
        .run();
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

#[allow(clippy::needless_pass_by_value)] // the signature actix-web asks for
fn json_error(err: JsonPayloadError, _req: &HttpRequest) -> actix_web::Error {
    let api = match &err {
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => ApiError::PayloadTooLarge(*limit),
        JsonPayloadError::ContentType => ApiError::UnsupportedMediaType,
        JsonPayloadError::Deserialize(e) => {
            let code = if e.is_data() {
                "invalid_field"
            } else {
                "malformed_json"
            };
            ApiError::bad_request(code, format!("request body: {e}"))
        }
        _ => ApiError::bad_request("malformed_json", "request body could not be read"),
    };
    api.into()
}

fn path_error(_err: PathError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::bad_request(
        "invalid_product_id",
        "product id must be a positive integer",
    )
    .into()
}

#[allow(
    clippy::needless_pass_by_value,
    reason = "the signature QueryConfig::error_handler takes"
)]
fn query_error(err: QueryPayloadError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::bad_request("invalid_query", format!("bad query string: {err}")).into()
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "route {} {}",
        req.method(),
        req.path()
    )))
}
