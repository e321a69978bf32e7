//! `GET /health/live` (the process answers) and `GET /health/ready`
//! (every dependency it uses answers within a second).

use std::time::Duration;

use actix_web::{get, web, HttpResponse};
use serde_json::json;
use tokio::time::timeout;

use crate::state::AppState;

const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// Liveness.
#[get("/health/live")]
pub async fn live() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "live" }))
}

/// Readiness: PostgreSQL and Redis.
#[get("/health/ready")]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let postgres = timeout(
        CHECK_TIMEOUT,
        sqlx::query("SELECT 1").execute(&state.read_pool),
    )
    .await;
    let postgres = match postgres {
        Ok(Ok(_)) => "ok".to_owned(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: postgres check failed");
            "unavailable".to_owned()
        }
        Err(_) => "timeout".to_owned(),
    };
    let mut conn = state.deps.redis.clone();
    let redis = timeout(
        CHECK_TIMEOUT,
        redis::cmd("PING").query_async::<String>(&mut conn),
    )
    .await;
    let redis = match redis {
        Ok(Ok(_)) => "ok".to_owned(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: redis check failed");
            "unavailable".to_owned()
        }
        Err(_) => "timeout".to_owned(),
    };
    let all_ok = postgres == "ok" && redis == "ok";
    let body = json!({
        "status": if all_ok { "ready" } else { "unavailable" },
        "checks": { "postgres": postgres, "redis": redis },
    });
    if all_ok {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
