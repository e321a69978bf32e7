//! `POST /api/v1/products/{id}/grab` — the flash-sale moment.
//!
//! The grab runs in a task of its own: when a client gives up and closes
//! the connection, the grab still finishes (commits or rolls back) and
//! releases its lock, instead of being dropped half-way with a Redis lock
//! held until its TTL.
//!
//! A grab of a product that does not exist is answered `404` before its
//! strategy runs: it takes no lock, writes no lock key and adds nothing to
//! a strategy's per-product state (mutexes, gates, sweep times). Known ids
//! are answered from [`crate::db::KnownProducts`] without a database round
//! trip; an id not known yet costs one primary-key lookup.

use std::cell::Cell;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{post, web, HttpResponse, ResponseError};
use tokio::time::Instant;

use crate::db;
use crate::error::{ApiError, Dependency, ErrorBody, GrabError, NOT_FOUND, ORDERED};
use crate::locking::LOCK_WAIT;
use crate::order_batch::BATCH_WAIT;
use crate::state::AppState;
use crate::strategy::{GrabContext, GrabRequest, Order};

/// The request body: a wire type, shared with the load generator.
pub use seckill_wire::grab::GrabBody;

/// The grab of `body` on `product_id`, or a 400 saying what to fix.
fn validate(body: &GrabBody, product_id: i64, max_quantity: u32) -> Result<GrabRequest, ApiError> {
    if body.user_id <= 0 {
        return Err(ApiError::bad_request(
            "invalid_user_id",
            "user_id must be a positive integer",
        ));
    }
    if body.quantity < 1 || body.quantity > i64::from(max_quantity) {
        return Err(ApiError::bad_request(
            "invalid_quantity",
            format!("quantity must be between 1 and {max_quantity}"),
        ));
    }
    Ok(GrabRequest {
        product_id,
        user_id: body.user_id,
        quantity: i32::try_from(body.quantity).unwrap_or(i32::MAX),
    })
}

/// Place one order, or say why not: the checks, the grab in a task of its
/// own (`place`), the answer with its `Server-Timing` header.
#[utoipa::path(
    tag = "grab",
    params(("id" = i64, Path, minimum = 1, description = "Product id")),
    request_body = GrabBody,
    responses(
        (status = 201, description = "Ordered: the order as written (`Server-Timing: lock;dur=…, batch;dur=…` says what it waited for)", body = Order),
        (status = 400, description = "Bad body or product id (`invalid_user_id`, `invalid_quantity`, `invalid_field`, `malformed_json`, `invalid_product_id`)", body = ErrorBody),
        (status = 404, description = "No such product (`not_found`)", body = ErrorBody),
        (status = 409, description = "No order: `sold_out`, `already_purchased`, or `rejected` (a stale lock holder; nothing written)", body = ErrorBody),
        super::BodyRefused,
        (status = 429, description = "The lock was not acquired within the wait budget, or every database connection was taken by grabs waiting for it while the database answered, or `redis-lua-stock`'s order batch queue was full (`busy`); `Retry-After: 1`", body = ErrorBody),
        (status = 503, description = "A dependency is down (`unavailable`); nothing half-written; `Retry-After: 2`", body = ErrorBody),
    )
)]
#[post("/api/v1/products/{id}/grab")]
pub async fn grab(
    state: web::Data<AppState>,
    id: web::Path<i64>,
    body: web::Json<GrabBody>,
) -> Result<HttpResponse, ApiError> {
    let product_id = super::product_id(id.into_inner())?;
    let req = validate(&body, product_id, state.settings.max_quantity.get())?;
    let (result, waited) = tokio::spawn(place(state.into_inner(), req))
        .await
        .map_err(|e| GrabError::Internal(format!("grab task failed: {e}")))?;
    let mut response = match result {
        Ok(order) => HttpResponse::Created().json(order),
        Err(e) => ApiError::from(e).error_response(),
    };
    server_timing(&mut response, &waited);
    Ok(response)
}

/// The grab itself, in its own task: the product known, the strategy's
/// grab with its waits measured, a starved pool judged, the metrics.
async fn place(
    state: std::sync::Arc<AppState>,
    req: GrabRequest,
) -> (Result<Order, GrabError>, Waited) {
    let strategy = state.control.active().clone();
    let faults = state.control.faults();
    let pause = state.control.next_grab_pauses(&faults);
    let cx = GrabContext {
        deps: &state.deps,
        faults,
        pause,
    };
    let started = Instant::now();
    let refused = match state
        .known_products
        .exists(&state.deps.pool, req.product_id)
        .await
    {
        Ok(true) => None,
        Ok(false) => Some(GrabError::NotFound),
        Err(e) => Some(GrabError::from(e)),
    };
    let (result, waited) = match refused {
        // Unknown (or not known and unreadable): no lock, no state.
        Some(refused) => (
            Err(refused),
            Waited {
                lock: None,
                batch: None,
            },
        ),
        None => {
            LOCK_WAIT
                .scope(
                    Cell::new(None),
                    BATCH_WAIT.scope(Cell::new(None), async {
                        let result = strategy.grab(cx, req).await;
                        let waited = Waited {
                            lock: LOCK_WAIT.with(Cell::get),
                            batch: BATCH_WAIT.with(Cell::get),
                        };
                        (result, waited)
                    }),
                )
                .await
        }
    };
    let name = strategy.info().name.as_str();
    let result = match result {
        Err(GrabError::PoolTimedOut) => Err(judge_pool_timeout(&state, name).await),
        other => other,
    };
    count(&state, name, started, &result);
    (result, waited)
}

/// A grab's metrics: its duration, the order, its outcome (a grab of no
/// product is not counted as a request of the strategy).
fn count(state: &AppState, name: &str, started: Instant, result: &Result<Order, GrabError>) {
    let metrics = &state.deps.metrics;
    metrics
        .grab_duration
        .with_label_values(&[name])
        .observe(started.elapsed().as_secs_f64());
    let outcome = match result {
        Ok(_) => {
            metrics.orders.with_label_values(&[name]).inc();
            ORDERED
        }
        Err(e) => e.outcome(),
    };
    if outcome != NOT_FOUND {
        metrics
            .grab_requests
            .with_label_values(&[name, outcome])
            .inc();
    }
}

/// The lock wait of this grab and the time its order waited for its
/// batch, exact (a client's quantiles need no histogram buckets):
/// `Server-Timing: lock;dur=<ms>, batch;dur=<ms>`.
fn server_timing(response: &mut HttpResponse, waited: &Waited) {
    let timing: Vec<String> = [("lock", waited.lock), ("batch", waited.batch)]
        .into_iter()
        .filter_map(|(name, d)| Some(format!("{name};dur={:.3}", d?.as_secs_f64() * 1000.0)))
        .collect();
    if !timing.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&timing.join(", ")) {
            response
                .headers_mut()
                .insert(HeaderName::from_static("server-timing"), value);
        }
    }
}

/// A grab found no pooled connection within the acquire timeout: was the
/// pool starved by the grabs holding it (every connection open and taken,
/// the server answering through the readers' pool) — then `busy`, counted
/// in `seckill_db_pool_starved_total` — or does the server not answer —
/// then `unavailable`, as before.
async fn judge_pool_timeout(state: &AppState, strategy: &'static str) -> GrabError {
    let exhausted = db::pool_exhausted(&state.deps.pool);
    if exhausted && state.witness.server_answers(&state.read_pool).await {
        state
            .deps
            .metrics
            .db_pool_starved
            .with_label_values(&[strategy])
            .inc();
        return GrabError::PoolStarved;
    }
    let detail = if exhausted {
        "every pooled connection taken, and the server did not answer"
    } else {
        "no pooled connection could be opened within the acquire timeout"
    };
    GrabError::Unavailable {
        dependency: Dependency::Postgres,
        detail: detail.into(),
    }
}

/// What a grab waited for, as far as it waited.
#[derive(Debug, Clone, Copy)]
struct Waited {
    /// Acquiring its lock.
    lock: Option<std::time::Duration>,
    /// Its order's batch to start.
    batch: Option<std::time::Duration>,
}
