//! `/admin/*` — strategy switch, product reset, a product's orders, audit,
//! faults, history. Every route takes the [`AdminAuth`] extractor:
//! `Authorization: Bearer <token>`.

use std::future::{ready, Ready};

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{delete, get, post, put, web, FromRequest, HttpRequest, HttpResponse};
use seckill_wire::audit::AuditBody;
use seckill_wire::history::{ForgetBody, Forgotten, HistorySwitch, HistorySwitched};
use seckill_wire::orders::OrdersPage;
use seckill_wire::products::{ProductBody, ResetBody};
use seckill_wire::strategies::{StrategiesBody, StrategyEntry, StrategyName, SwitchBody};
use serde::Deserialize;

use crate::db;
use crate::error::{ApiError, ErrorBody, GrabError};
use crate::faults::{Faults, FaultsPatch};
use crate::freeze::{FreezeArmed, FreezeBody};
use crate::history::{HistoryReport, SectionsBody};
use crate::lock::pg_2pc::uses_stock_database;
use crate::lock::{fenced, redis_lua_stock};
use crate::locking::lock_key;
use crate::orders;
use crate::state::AppState;

/// Proof that the request carried the admin token.
#[derive(Debug)]
pub struct AdminAuth;

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl FromRequest for AdminAuth {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let Some(state) = req.app_data::<web::Data<AppState>>() else {
            return ready(Err(ApiError::AdminDisabled));
        };
        let Some(expected) = state.admin_token.as_deref() else {
            return ready(Err(ApiError::AdminDisabled));
        };
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        ready(match given {
            Some(token) if constant_time_eq(token.as_bytes(), expected.as_bytes()) => Ok(AdminAuth),
            _ => Err(ApiError::Unauthorized),
        })
    }
}

fn strategies_body(state: &AppState) -> StrategiesBody {
    let entries: Vec<StrategyEntry> = state
        .control
        .strategies()
        .iter()
        .map(|s| {
            let info = s.info();
            StrategyEntry {
                name: info.name,
                guarantee: info.guarantee.to_owned(),
                available: s.available(),
                unavailable_reason: s.unavailable_reason().map(str::to_owned),
                seed: info.seed.to_owned(),
                safety: info.safety,
                kind: info.kind,
            }
        })
        .collect();
    StrategiesBody {
        active: state.control.active().info().name,
        strategies: entries,
        lock_ttl_ms: state.settings.lock_ttl_ms.get(),
        lock_wait_ms: state.settings.lock_wait_ms.get(),
        redis_wait_replicas: state.settings.redis_wait_replicas,
        instance: state.deps.history.instance().to_owned(),
    }
}

/// The strategies and the active one.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Every strategy, whether it can run here, and the active one", body = StrategiesBody),
        super::AdminDenied,
    )
)]
#[get("/admin/strategies")]
pub async fn strategies(_: AdminAuth, state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(strategies_body(&state))
}

/// Switch every replica's strategy.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    request_body = SwitchBody,
    responses(
        (status = 200, description = "Switched; the strategies as after the switch", body = StrategiesBody),
        (status = 400, description = "`unknown_strategy`, `strategy_unavailable` (its server is not configured), or a bad body", body = ErrorBody),
        super::AdminDenied,
        super::BodyRefused,
        (status = 503, description = "Redis or PostgreSQL is down (`unavailable`); nothing changed", body = ErrorBody),
    )
)]
#[put("/admin/strategy")]
pub async fn switch_strategy(
    _: AdminAuth,
    state: web::Data<AppState>,
    body: web::Json<SwitchBody>,
) -> Result<HttpResponse, ApiError> {
    let index = body
        .strategy
        .parse::<StrategyName>()
        .ok()
        .and_then(|name| state.control.strategies().index_of(name));
    let Some(index) = index else {
        return Err(ApiError::bad_request(
            "unknown_strategy",
            format!(
                "unknown strategy `{}`; valid: {}",
                body.strategy,
                StrategyName::NAMES.join(", ")
            ),
        ));
    };
    let strategy = state.control.strategies().get(index);
    if !strategy.available() {
        return Err(ApiError::bad_request(
            "strategy_unavailable",
            format!(
                "`{}` cannot run in this deployment: {}",
                body.strategy,
                strategy.unavailable_reason().unwrap_or("not configured")
            ),
        ));
    }
    // Leaving the write-behind strategy: bring its stock column up to date
    // while it is still the active one (later copies will skip).
    settle_write_behind(&state, "switch").await;
    state.control.switch(&state.deps, index).await?;
    tracing::info!(strategy = %body.strategy, "strategy switched");
    Ok(HttpResponse::Ok().json(strategies_body(&state)))
}

/// Largest stock a reset accepts.
pub const MAX_STOCK: i64 = 100_000_000;

/// Reset a product: stock, orders, fence, Redis stock and lock keys.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "Product id")),
    request_body = ResetBody,
    responses(
        (status = 200, description = "Reset: the product as it is now", body = ProductBody),
        (status = 400, description = "`invalid_stock`, `invalid_product_id`, or a bad body", body = ErrorBody),
        super::AdminDenied,
        (status = 404, description = "No such product (`not_found`)", body = ErrorBody),
        super::BodyRefused,
        (status = 503, description = "Redis or PostgreSQL is down (`unavailable`); nothing changed", body = ErrorBody),
    )
)]
#[post("/admin/products/{id}/reset")]
pub async fn reset_product(
    _: AdminAuth,
    state: web::Data<AppState>,
    id: web::Path<i64>,
    body: web::Json<ResetBody>,
) -> Result<HttpResponse, ApiError> {
    let id = super::product_id(id.into_inner())?;
    if !(0..=MAX_STOCK).contains(&body.stock) {
        return Err(ApiError::bad_request(
            "invalid_stock",
            format!("stock must be between 0 and {MAX_STOCK}"),
        ));
    }
    // Redis first: if it is down, nothing has changed yet.
    let mut conn = state.deps.redis.clone();
    redis::cmd("DEL")
        .arg(lock_key(id))
        .arg(fenced::fence_key(id))
        .arg(redis_lua_stock::stock_key(id))
        .arg(redis_lua_stock::buyers_key(id))
        .query_async::<()>(&mut conn)
        .await
        .map_err(GrabError::from)?;
    // pg-2pc's stock side before the row: a copy written behind in
    // between then carries the new stock, not the old one back.
    if uses_stock_database(state.control.active().info().name) {
        state
            .control
            .strategies()
            .two_pc()
            .reset_stock(id, body.stock)
            .await?;
    }
    db::reset_product(&state.deps.pool, id, body.stock)
        .await
        .map_err(GrabError::from)?;
    redis_lua_stock::load_product(&state.deps, id, false).await?;
    tracing::info!(product_id = id, stock = body.stock, "product reset");
    Ok(HttpResponse::Ok().json(super::products::load(&state, id).await?))
}

/// Under `redis-lua-stock` the stock column is written behind: copy the
/// Redis stock into it now, before `what` reads or leaves it. Without Redis
/// the database's own numbers are still the truth of what was ordered, so
/// a failed copy is logged and `what` goes on.
async fn settle_write_behind(state: &AppState, what: &str) {
    if uses_stock_database(state.control.active().info().name) {
        let two_pc = state.control.strategies().two_pc();
        if let Err(e) = two_pc.sync_stock_column(&state.deps.pool).await {
            tracing::warn!(error = %e, "{what}: could not copy pg-2pc's stock side into the column first");
        }
        return;
    }
    if state.control.active().info().name != redis_lua_stock::INFO.name {
        return;
    }
    if let Err(e) = redis_lua_stock::sync_stock_column(&state.deps, None).await {
        tracing::warn!(error = %e, "{what}: could not copy the Redis stock into the column first");
    }
}

/// `GET /admin/products/{id}/orders?after=&limit=`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct OrdersQuery {
    /// Only orders with an id above this one (default 0: from the first).
    #[param(minimum = 0)]
    pub after: Option<i64>,
    /// At most this many orders (default 1000, at most 10000).
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<i64>,
}

/// The product's orders since its last reset, ascending by id, one page
/// at a time: follow `next_after` until it is `null`.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "Product id"), OrdersQuery),
    responses(
        (status = 200, description = "One page of orders (`next_after` null on the last page)", body = OrdersPage),
        (status = 400, description = "`invalid_limit`, `invalid_after`, `invalid_product_id`, or a bad query string (`invalid_query`)", body = ErrorBody),
        super::AdminDenied,
        (status = 404, description = "No such product (`not_found`)", body = ErrorBody),
        (status = 503, description = "PostgreSQL is down (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/admin/products/{id}/orders")]
pub async fn product_orders(
    _: AdminAuth,
    state: web::Data<AppState>,
    id: web::Path<i64>,
    query: web::Query<OrdersQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = super::product_id(id.into_inner())?;
    let after = query.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::bad_request(
            "invalid_after",
            "after must be an order id, 0 or more",
        ));
    }
    let limit = query.limit.unwrap_or(orders::DEFAULT_LIMIT);
    if !(1..=orders::MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_limit",
            format!("limit must be between 1 and {}", orders::MAX_LIMIT),
        ));
    }
    let page = orders::page(&state.read_pool, id, after, limit)
        .await
        .map_err(GrabError::from)?
        .ok_or(GrabError::NotFound)?;
    Ok(HttpResponse::Ok().json(page))
}

/// `GET /admin/audit?recount=true`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Count every order row instead of reading the trigger-kept totals.
    #[serde(default)]
    pub recount: bool,
}

/// The ground truth of every product: from the totals the database keeps
/// beside the orders, or with `?recount=true` by counting every order.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "The audit of every product", body = AuditBody),
        (status = 400, description = "Bad query string (`invalid_query`)", body = ErrorBody),
        super::AdminDenied,
        (status = 503, description = "PostgreSQL is down (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/admin/audit")]
pub async fn audit(
    _: AdminAuth,
    state: web::Data<AppState>,
    query: web::Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    settle_write_behind(&state, "audit").await;
    let count = if query.recount {
        db::Count::Recount
    } else {
        db::Count::Tally
    };
    let rows = super::audit_now(&state, count).await?;
    Ok(HttpResponse::Ok().json(AuditBody {
        strategy: state.control.active().info().name,
        synchronous_commit: state.settings.synchronous_commit.as_str().to_owned(),
        counted_by: count.as_str().to_owned(),
        products: rows,
    }))
}

/// The faults in force.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The faults every replica applies", body = Faults),
        super::AdminDenied,
    )
)]
#[get("/admin/faults")]
pub async fn get_faults(_: AdminAuth, state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(state.control.faults())
}

/// Change any subset of the faults, for every replica.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    request_body = FaultsPatch,
    responses(
        (status = 200, description = "The faults now in force", body = Faults),
        (status = 400, description = "`invalid_faults` (a delay over `SECKILL_FAULT_DELAY_MAX_MS`, ten minutes by default; `pause_every` 0) or a bad body", body = ErrorBody),
        super::AdminDenied,
        super::BodyRefused,
        (status = 503, description = "Redis or PostgreSQL is down (`unavailable`); nothing changed", body = ErrorBody),
    )
)]
#[put("/admin/faults")]
pub async fn put_faults(
    _: AdminAuth,
    state: web::Data<AppState>,
    body: web::Json<FaultsPatch>,
) -> Result<HttpResponse, ApiError> {
    let patch = body.into_inner();
    if patch.pause_every == Some(0) {
        return Err(ApiError::bad_request(
            "invalid_faults",
            "pause_every must be at least 1",
        ));
    }
    for (name, value) in [
        ("work_delay_ms", patch.work_delay_ms),
        ("pause_ms", patch.pause_ms),
        ("setnx_expire_gap_ms", patch.setnx_expire_gap_ms),
        ("release_gap_ms", patch.release_gap_ms),
        ("acquire_pause_ms", patch.acquire_pause_ms),
        ("commit_delay_ms", patch.commit_delay_ms),
    ] {
        let max = state.settings.fault_delay_max_ms.get();
        if value.is_some_and(|v| v > max) {
            return Err(ApiError::bad_request(
                "invalid_faults",
                format!("{name} must be at most {max} (SECKILL_FAULT_DELAY_MAX_MS)"),
            ));
        }
    }
    let faults = patch.apply(state.control.faults());
    state.control.set_faults(&state.deps, faults).await?;
    tracing::info!(?faults, "faults changed");
    Ok(HttpResponse::Ok().json(faults))
}

/// Clear every fault, for every replica: the faults of a fresh deployment
/// (`work_delay_ms` back to `SECKILL_WORK_DELAY_MS`: simulated work, not a
/// fault; everything else off).
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The faults now in force (all cleared)", body = Faults),
        super::AdminDenied,
        (status = 503, description = "Redis is down (`unavailable`); nothing changed", body = ErrorBody),
    )
)]
#[delete("/admin/faults")]
pub async fn clear_faults(
    _: AdminAuth,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let faults = Faults::with_work_delay(state.settings.work_delay_ms);
    state.control.set_faults(&state.deps, faults).await?;
    tracing::info!(?faults, "faults cleared");
    Ok(HttpResponse::Ok().json(faults))
}

/// Arm the scenario hook: the next critical section of *this* replica
/// that reaches `at` stops the whole process (`SIGSTOP` to itself) until
/// a `SIGCONT` — the gc-pause scenario's freeze, placed exactly. One arm,
/// one freeze. Needs `SECKILL_SCENARIO_HOOKS=true`.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    request_body = FreezeBody,
    responses(
        (status = 200, description = "Armed", body = FreezeArmed),
        (status = 400, description = "A bad body", body = ErrorBody),
        (status = 403, description = "`hooks_disabled` (SECKILL_SCENARIO_HOOKS is off), or admin disabled", body = ErrorBody),
        (status = 401, description = "Missing or wrong admin token (`unauthorized`)", body = ErrorBody),
        super::BodyRefused,
    )
)]
#[post("/admin/freeze")]
pub async fn arm_freeze(
    _: AdminAuth,
    state: web::Data<AppState>,
    body: web::Json<FreezeBody>,
) -> Result<HttpResponse, ApiError> {
    if !state.settings.scenario_hooks {
        return Err(ApiError::HooksDisabled);
    }
    let at = body.into_inner().at;
    state.deps.freeze.arm(at);
    tracing::info!(?at, "freeze armed");
    Ok(HttpResponse::Ok().json(FreezeArmed { armed: Some(at) }))
}

/// Disarm the scenario hook (a freeze that never fired).
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Disarmed: what is armed now (nothing)", body = FreezeArmed),
        (status = 403, description = "`hooks_disabled` (SECKILL_SCENARIO_HOOKS is off), or admin disabled", body = ErrorBody),
        (status = 401, description = "Missing or wrong admin token (`unauthorized`)", body = ErrorBody),
    )
)]
#[delete("/admin/freeze")]
pub async fn disarm_freeze(
    _: AdminAuth,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    if !state.settings.scenario_hooks {
        return Err(ApiError::HooksDisabled);
    }
    state.deps.freeze.disarm();
    Ok(HttpResponse::Ok().json(FreezeArmed { armed: None }))
}

/// The mutual-exclusion history of the current run, as the arbiter has it
/// (every replica's sections), plus this replica's own view (`run`,
/// `instance`, `errors`).
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The run's history as the arbiter has it", body = HistoryReport),
        super::AdminDenied,
        (status = 503, description = "Redis (the arbiter) is down (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/admin/history")]
pub async fn get_history(
    _: AdminAuth,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(state.deps.history.report().await?))
}

/// `GET /admin/history/sections?last=`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SectionsQuery {
    /// Only the most recent this many finished sections (default: every
    /// one the arbiter keeps, at most 20000). The console's live timeline
    /// polls with a few hundred.
    #[param(minimum = 1, maximum = 20000)]
    pub last: Option<u64>,
}

/// The current run's critical sections as the arbiter has them: each
/// with its replica, entry and exit time (arbiter clock) and whether it
/// overlapped another; the finished ones first (the most recent 20000,
/// or `last`), then those inside now (`exited_us` null).
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    params(SectionsQuery),
    responses(
        (status = 200, description = "The run's sections (`run` null and none when the history is off)", body = SectionsBody),
        (status = 400, description = "`invalid_last`, or a bad query string (`invalid_query`)", body = ErrorBody),
        super::AdminDenied,
        (status = 503, description = "Redis (the arbiter) is down (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/admin/history/sections")]
pub async fn history_sections(
    _: AdminAuth,
    state: web::Data<AppState>,
    query: web::Query<SectionsQuery>,
) -> Result<HttpResponse, ApiError> {
    let last = query.last.unwrap_or(crate::history::SECTIONS_KEPT);
    if !(1..=crate::history::SECTIONS_KEPT).contains(&last) {
        return Err(ApiError::bad_request(
            "invalid_last",
            format!(
                "last must be between 1 and {}",
                crate::history::SECTIONS_KEPT
            ),
        ));
    }
    Ok(HttpResponse::Ok().json(state.deps.history.sections(last).await?))
}

/// Start a new history run, or stop recording (every replica follows
/// within `SECKILL_CONTROL_REFRESH_MS`; `GET /admin/history` on each says
/// which run it records).
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    request_body = HistorySwitch,
    responses(
        (status = 200, description = "The history run now recorded (`run` null when off)", body = HistorySwitched),
        (status = 400, description = "Bad body", body = ErrorBody),
        super::AdminDenied,
        super::BodyRefused,
        (status = 503, description = "Redis (the arbiter) is down (`unavailable`)", body = ErrorBody),
    )
)]
#[put("/admin/history")]
pub async fn put_history(
    _: AdminAuth,
    state: web::Data<AppState>,
    body: web::Json<HistorySwitch>,
) -> Result<HttpResponse, ApiError> {
    let run = state.deps.history.switch(body.enabled).await?;
    tracing::info!(?run, "history switched");
    Ok(HttpResponse::Ok().json(HistorySwitched {
        enabled: run.is_some(),
        run,
    }))
}

/// Drop the sections a killed replica left inside (it can never report
/// their exit), so later entries are not counted as overlaps with a ghost.
#[utoipa::path(
    tag = "admin",
    security(("admin_token" = [])),
    request_body = ForgetBody,
    responses(
        (status = 200, description = "How many sections of that replica were dropped", body = Forgotten),
        (status = 400, description = "`invalid_instance` (empty) or a bad body", body = ErrorBody),
        super::AdminDenied,
        super::BodyRefused,
        (status = 503, description = "Redis (the arbiter) is down (`unavailable`)", body = ErrorBody),
    )
)]
#[post("/admin/history/forget")]
pub async fn forget_history(
    _: AdminAuth,
    state: web::Data<AppState>,
    body: web::Json<ForgetBody>,
) -> Result<HttpResponse, ApiError> {
    if body.instance.trim().is_empty() {
        return Err(ApiError::bad_request(
            "invalid_instance",
            "instance must not be empty",
        ));
    }
    let removed = state.deps.history.forget(&body.instance).await?;
    Ok(HttpResponse::Ok().json(Forgotten {
        instance: body.into_inner().instance,
        removed,
    }))
}
