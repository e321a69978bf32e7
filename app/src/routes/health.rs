//! `GET /health/live` (the process answers) and `GET /health/ready`
//! (every dependency it uses answers within a second).

use std::time::Duration;

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use tokio::time::timeout;

use crate::state::AppState;

const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// `GET /health/live`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LiveBody {
    /// Always `live`.
    #[schema(example = "live")]
    pub status: &'static str,
}

/// `GET /health/ready`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReadyBody {
    /// `ready`, or `unavailable` (then the answer is a 503).
    #[schema(example = "ready")]
    pub status: &'static str,
    /// Each dependency: `ok`, `unavailable` or `timeout` (1 s).
    pub checks: ReadyChecks,
}

/// The dependencies a replica needs to take traffic.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReadyChecks {
    /// PostgreSQL.
    pub postgres: &'static str,
    /// Redis.
    pub redis: &'static str,
}

/// Liveness.
#[utoipa::path(tag = "health", responses((status = 200, description = "The process answers", body = LiveBody)))]
#[get("/health/live")]
pub async fn live() -> HttpResponse {
    HttpResponse::Ok().json(LiveBody { status: "live" })
}

/// Readiness: PostgreSQL and Redis.
#[utoipa::path(
    tag = "health",
    responses(
        (status = 200, description = "PostgreSQL and Redis answer", body = ReadyBody),
        (status = 503, description = "One of them does not", body = ReadyBody),
    )
)]
#[get("/health/ready")]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let postgres = timeout(
        CHECK_TIMEOUT,
        sqlx::query("SELECT 1").execute(&state.read_pool),
    )
    .await;
    let postgres = match postgres {
        Ok(Ok(_)) => "ok",
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: postgres check failed");
            "unavailable"
        }
        Err(_) => "timeout",
    };
    let mut conn = state.deps.redis.clone();
    let redis = timeout(
        CHECK_TIMEOUT,
        redis::cmd("PING").query_async::<String>(&mut conn),
    )
    .await;
    let redis = match redis {
        Ok(Ok(_)) => "ok",
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: redis check failed");
            "unavailable"
        }
        Err(_) => "timeout",
    };
    let all_ok = postgres == "ok" && redis == "ok";
    let body = ReadyBody {
        status: if all_ok { "ready" } else { "unavailable" },
        checks: ReadyChecks { postgres, redis },
    };
    if all_ok {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
