//! HTTP routes, one module per area. Every error answer is the JSON of
//! [`crate::error::ErrorBody`]; extractor failures (bad JSON, bad path,
//! oversized body) are turned into the same shape by [`rejections`].
//! The route table is [`crate::startup`]'s (a child module uses this one's
//! helpers, so this one names none of them).

pub mod admin;
pub mod grab;
pub mod health;
pub mod metrics;
pub mod products;
pub mod rejections;
pub mod status;

use crate::db::{self, AuditRow};
use crate::error::{ApiError, ErrorBody, GrabError};
use crate::lock::redis_lua_stock;
use crate::state::AppState;

/// The audit as every reader shows it (`/admin/audit`, `/metrics`, the
/// status page). Under `redis-lua-stock` the stock column is written
/// behind, so the orders are judged against the Redis stock read *after*
/// the database snapshot: every committed order's decrement happened before
/// its insert, so a grab in flight can show as a unit taken but not yet
/// ordered (undersold for a moment), never as a lost update.
pub async fn audit_now(state: &AppState, count: db::Count) -> Result<Vec<AuditRow>, GrabError> {
    let rows = db::audit(&state.read_pool, count).await?;
    if state.control.active().info().name != redis_lua_stock::INFO.name || rows.is_empty() {
        return Ok(rows);
    }
    let keys: Vec<String> = rows
        .iter()
        .map(|r| redis_lua_stock::stock_key(r.product_id))
        .collect();
    let mut conn = state.deps.redis.clone();
    let stocks: Vec<Option<i64>> = match redis::cmd("MGET").arg(&keys).query_async(&mut conn).await
    {
        Ok(stocks) => stocks,
        Err(e) => {
            // No Redis, no grab of this strategy goes through: the column
            // (and the orders) are the truth of what was sold.
            tracing::warn!(error = %e, "audit: Redis stock unreadable; judging by the stock column");
            return Ok(rows);
        }
    };
    Ok(rows
        .into_iter()
        .zip(stocks)
        .map(|(row, stock)| match stock {
            Some(stock) => db::with_stock(&row, stock),
            None => row,
        })
        .collect())
}

/// A product id from the path: positive, or 400.
pub fn product_id(raw: i64) -> Result<i64, ApiError> {
    if raw <= 0 {
        return Err(ApiError::bad_request(
            "invalid_product_id",
            "product id must be a positive integer",
        ));
    }
    Ok(raw)
}

/// What every admin route answers before its handler runs (OpenAPI).
#[derive(Debug, utoipa::IntoResponses)]
pub enum AdminDenied {
    /// Missing or wrong admin token (`unauthorized`).
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// No admin token configured (`admin_disabled`).
    #[response(status = 403)]
    Disabled(ErrorBody),
}

/// What every route taking a JSON body answers before its handler runs
/// (OpenAPI): the body extractor's refusals.
#[derive(Debug, utoipa::IntoResponses)]
pub enum BodyRefused {
    /// Body over the limit (`payload_too_large`).
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// Body not sent as application/json (`unsupported_media_type`).
    #[response(status = 415)]
    NotJson(ErrorBody),
}
