//! `GET /metrics` — Prometheus text format. The audit gauges are refreshed
//! from the database on every scrape (bounded by a one-second timeout; on
//! failure the rest of the metrics are still served and the gauges keep
//! their last values).

use std::time::Duration;

use actix_web::{get, web, HttpResponse};

use crate::state::AppState;
use seckill_wire::strategies::StrategyName;

/// The exposition.
#[utoipa::path(
    tag = "health",
    responses((status = 200, description = "Prometheus text exposition format 0.0.4", body = String, content_type = "text/plain"))
)]
#[get("/metrics")]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let metrics = &state.deps.metrics;
    match tokio::time::timeout(
        Duration::from_secs(1),
        super::audit_now(&state, crate::db::Count::Tally),
    )
    .await
    {
        Ok(Ok(rows)) => metrics.set_audit(&rows),
        Ok(Err(e)) => tracing::warn!(error = %e, "metrics: audit query failed"),
        Err(_) => tracing::warn!("metrics: audit query timed out"),
    }
    metrics.set_active_strategy(
        &StrategyName::NAMES,
        state.control.active().info().name.as_str(),
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics.render())
}
