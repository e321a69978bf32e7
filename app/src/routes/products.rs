//! `GET /api/v1/products/{id}` — stock, initial stock, active strategy.

use actix_web::{get, web, HttpResponse};

use crate::db;
use crate::error::{ApiError, ErrorBody, GrabError};
use crate::state::AppState;

/// The product body: a wire type, shared with the load generator.
pub use seckill_wire::products::ProductBody;

/// Read one product.
pub async fn load(state: &AppState, id: i64) -> Result<ProductBody, ApiError> {
    let row = db::product(&state.deps.pool, id)
        .await
        .map_err(GrabError::from)?
        .ok_or(GrabError::NotFound)?;
    Ok(ProductBody {
        id: row.id,
        name: row.name,
        stock: row.stock,
        initial_stock: row.initial_stock,
        strategy: state.control.active().info().name,
    })
}

/// One product.
#[utoipa::path(
    tag = "products",
    params(("id" = i64, Path, minimum = 1, description = "Product id")),
    responses(
        (status = 200, description = "The product", body = ProductBody),
        (status = 400, description = "Not a positive integer id (`invalid_product_id`)", body = ErrorBody),
        (status = 404, description = "No such product (`not_found`)", body = ErrorBody),
        (status = 503, description = "PostgreSQL is down (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/api/v1/products/{id}")]
pub async fn product(
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let id = super::product_id(id.into_inner())?;
    Ok(HttpResponse::Ok().json(load(&state, id).await?))
}
