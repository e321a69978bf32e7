//! Errors: [`GrabError`] is what a grab can end in (the domain), [`ApiError`]
//! is what a client sees. Internal text (SQL, Redis) is logged here with its
//! context and answered with a generic message — it never reaches a client.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use seckill_wire::outcome::Outcome;

/// A backing service a request depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// The PostgreSQL database.
    Postgres,
    /// The Redis server (locks, shared control state, Redis stock).
    Redis,
    /// The MariaDB/MySQL server of `mysql-get-lock`.
    Mysql,
    /// The etcd cluster of `etcd-lease`.
    Etcd,
    /// The ZooKeeper ensemble of `zk-ephemeral-seq`.
    Zookeeper,
}

impl Dependency {
    /// Lower-case name for logs and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Dependency::Postgres => "postgres",
            Dependency::Redis => "redis",
            Dependency::Mysql => "mysql",
            Dependency::Etcd => "etcd",
            Dependency::Zookeeper => "zookeeper",
        }
    }
}

/// Why a holder must not trust its lock any more: what
/// [`LockGuard::check_still_held`](crate::locking::LockGuard::check_still_held)
/// finds before the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LockLost {
    /// A renewal found the lock gone or someone else's (the watchdog's
    /// renewal, etcd's keep-alive, ZooKeeper's session check).
    #[error("{}", self.as_str())]
    LeaseLost,
    /// The lease's deadline passed with no renewal in time: the key may
    /// have expired although nobody said so (a frozen process, a stuck
    /// renewal).
    #[error("{}", self.as_str())]
    LeaseExpired,
    /// Redlock's validity time (TTL − elapsed − drift) ran out.
    #[error("{}", self.as_str())]
    ValidityExpired,
}

impl LockLost {
    /// The reason as the error message of a `409 rejected` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            LockLost::LeaseLost => "the lock's lease was lost before commit",
            LockLost::LeaseExpired => "the lock's lease ran out before commit (no renewal in time)",
            LockLost::ValidityExpired => "the lock's validity time ran out before commit",
        }
    }
}

/// Why a grab was refused after it held its lock: nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The database refused a stale holder: a newer fencing token (or lock
    /// revision) reached it first.
    #[error("{}", self.as_str())]
    StaleToken,
    /// The lock could no longer be trusted before the commit.
    #[error(transparent)]
    LockLost(#[from] LockLost),
}

impl Rejection {
    /// The reason as the error message of a `409 rejected` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::StaleToken => "a newer fencing token reached the database first",
            Rejection::LockLost(lost) => lost.as_str(),
        }
    }
}

/// How a grab can end without an order.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GrabError {
    /// Not enough stock left for the requested quantity.
    #[error("sold out")]
    SoldOut,
    /// The user already holds an order for this product.
    #[error("already purchased")]
    AlreadyPurchased,
    /// The lock was not acquired within the wait budget.
    #[error("lock not acquired within {0:?}")]
    Busy(Duration),
    /// The database refused a stale lock holder (fencing) or the lock was
    /// lost before commit; nothing was written.
    #[error("rejected: {0}")]
    Rejected(Rejection),
    /// No such product.
    #[error("product not found")]
    NotFound,
    /// A dependency could not be reached; the detail is for the log only.
    #[error("{} unavailable: {detail}", dependency.as_str())]
    Unavailable {
        /// Which dependency.
        dependency: Dependency,
        /// The underlying error text (logged, never returned).
        detail: String,
    },
    /// No pooled PostgreSQL connection came free within
    /// `SECKILL_DATABASE_ACQUIRE_TIMEOUT_MS`. Two causes look alike here:
    /// contention (every connection is held by grabs waiting for a lock,
    /// the server answering all along) and a server that does not answer
    /// (sqlx retries a refused connect until the same timeout). Only a
    /// caller that can ask the server tells them apart — the grab route,
    /// through [`crate::db::pool_exhausted`] and
    /// [`crate::db::ServerWitness`] — turning it into
    /// [`GrabError::PoolStarved`] or [`GrabError::Unavailable`]. Left
    /// unjudged it answers as a database that is unavailable (503).
    #[error("no pooled postgres connection within the acquire timeout")]
    PoolTimedOut,
    /// A pool timeout judged to be contention: every pooled connection was
    /// open and taken while the server answered — a pool starved by the
    /// lock's own waiters. Answered `busy` (429, `Retry-After`) like a lock
    /// wait that ran out, and counted apart in
    /// `seckill_db_pool_starved_total{strategy}`.
    #[error("every pooled postgres connection is taken; the server answers")]
    PoolStarved,
    /// `redis-lua-stock`'s order batch queue was full
    /// (`SECKILL_ORDER_BATCH_QUEUE` orders waiting for their batch): the
    /// grab was refused before it reserved anything. Answered `busy` (429,
    /// `Retry-After`) like a lock wait that ran out.
    #[error("the order batch queue is full")]
    QueueFull,
    /// A bug or an unexpected answer; the detail is for the log only.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The `outcome` label of a grab that placed its order.
pub const ORDERED: &str = Outcome::Ordered.as_str();

/// The `outcome` label of a grab for a product that does not exist: not
/// counted in `seckill_grab_requests_total` (a typo'd id is not a sale).
pub const NOT_FOUND: &str = "not_found";

/// Every `outcome` of `seckill_grab_requests_total`: [`ORDERED`] and each
/// [`GrabError::outcome`] but [`NOT_FOUND`] (the metrics create each
/// series at 0; a test holds the two lists together).
pub const COUNTED_OUTCOMES: [&str; 6] = Outcome::NAMES;

impl GrabError {
    /// The `outcome` label of `seckill_grab_requests_total`.
    pub fn outcome(&self) -> &'static str {
        match self {
            GrabError::SoldOut => Outcome::SoldOut.as_str(),
            GrabError::AlreadyPurchased => Outcome::AlreadyPurchased.as_str(),
            GrabError::Busy(_) | GrabError::PoolStarved | GrabError::QueueFull => {
                Outcome::Busy.as_str()
            }
            GrabError::Rejected(_) => Outcome::Rejected.as_str(),
            GrabError::NotFound => NOT_FOUND,
            GrabError::Unavailable { .. } | GrabError::PoolTimedOut | GrabError::Internal(_) => {
                Outcome::Error.as_str()
            }
        }
    }
}

/// Classify a database error: lock timeouts are `busy`, lost connections
/// are `unavailable`, a pool timeout is left for the caller to judge
/// ([`GrabError::PoolTimedOut`]), anything else is a bug.
impl From<sqlx::Error> for GrabError {
    fn from(e: sqlx::Error) -> Self {
        use sqlx::Error as E;
        match &e {
            E::Database(db) if db.code().as_deref() == Some("55P03") => {
                // lock_not_available: PostgreSQL's lock_timeout fired.
                GrabError::Busy(Duration::ZERO)
            }
            E::Database(db)
                if db
                    .code()
                    .is_some_and(|c| c.starts_with("08") || c.starts_with("57P")) =>
            {
                // connection exception / operator intervention (shutdown).
                unavailable(Dependency::Postgres, &e)
            }
            E::PoolTimedOut => GrabError::PoolTimedOut,
            E::Io(_) | E::Tls(_) | E::PoolClosed | E::WorkerCrashed => {
                unavailable(Dependency::Postgres, &e)
            }
            E::Protocol(_) => unavailable(Dependency::Postgres, &e),
            _ => GrabError::Internal(format!("postgres: {e}")),
        }
    }
}

/// Redis server replies (WRONGTYPE, NOSCRIPT after retry, ...) are bugs;
/// everything else — refused, dropped, timed out — means Redis is unavailable.
impl From<redis::RedisError> for GrabError {
    fn from(e: redis::RedisError) -> Self {
        match e.kind() {
            redis::ErrorKind::Server(_) | redis::ErrorKind::Parse => {
                GrabError::Internal(format!("redis: {e}"))
            }
            _ => unavailable(Dependency::Redis, &e),
        }
    }
}

/// A dependency that could not be reached (or answered nonsense); the text
/// is for the log only.
pub fn unavailable(dependency: Dependency, e: &dyn std::fmt::Display) -> GrabError {
    GrabError::Unavailable {
        dependency,
        detail: e.to_string(),
    }
}

/// The JSON body of every error answer, `{"error": code, "message": text}`:
/// a wire type, shared with the load generator.
pub use seckill_wire::error::ErrorBody;

/// What a client sees when a request fails.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 with a stable code and a message the client can act on.
    #[error("{code}: {message}")]
    BadRequest {
        /// Stable code.
        code: &'static str,
        /// What to fix.
        message: String,
    },
    /// 401: missing or wrong admin token.
    #[error("unauthorized")]
    Unauthorized,
    /// 403: admin endpoints are disabled (no token configured on a public listener).
    #[error("admin disabled")]
    AdminDisabled,
    /// 403: the scenario hooks are off (`SECKILL_SCENARIO_HOOKS`).
    #[error("scenario hooks disabled")]
    HooksDisabled,
    /// 404 for an unknown route or product.
    #[error("not found: {0}")]
    NotFound(String),
    /// 413: body over the limit.
    #[error("payload too large")]
    PayloadTooLarge(usize),
    /// 415: not JSON.
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// A grab that ended without an order.
    #[error(transparent)]
    Grab(#[from] GrabError),
}

impl ApiError {
    /// A 400 with the given code.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code,
            message: message.into(),
        }
    }

    fn body(&self) -> ErrorBody {
        let (error, message) = match self {
            ApiError::BadRequest { code, message } => (*code, message.clone()),
            ApiError::Unauthorized => (
                "unauthorized",
                "admin endpoints need `Authorization: Bearer <admin token>`".into(),
            ),
            ApiError::AdminDisabled => (
                "admin_disabled",
                "no admin token is configured for this listener; set SECKILL_ADMIN_TOKEN".into(),
            ),
            ApiError::HooksDisabled => (
                "hooks_disabled",
                "the scenario hooks are off on this replica; set SECKILL_SCENARIO_HOOKS=true (only where a scenario runner will continue a stopped process)".into(),
            ),
            ApiError::NotFound(what) => ("not_found", format!("{what} not found")),
            ApiError::PayloadTooLarge(limit) => (
                "payload_too_large",
                format!("request body is larger than {limit} bytes"),
            ),
            ApiError::UnsupportedMediaType => (
                "unsupported_media_type",
                "send the body as application/json".into(),
            ),
            ApiError::Grab(grab) => match grab {
                GrabError::SoldOut => ("sold_out", "not enough stock left".into()),
                GrabError::AlreadyPurchased => (
                    "already_purchased",
                    "this user already holds an order for this product".into(),
                ),
                GrabError::Busy(_) => (
                    "busy",
                    "the lock was not acquired within the wait budget; retry later".into(),
                ),
                GrabError::PoolStarved => (
                    "busy",
                    "every database connection is taken by grabs waiting for the lock; retry later"
                        .into(),
                ),
                GrabError::QueueFull => (
                    "busy",
                    "too many orders are waiting to be written; retry later".into(),
                ),
                GrabError::Rejected(why) => {
                    ("rejected", format!("nothing was written: {}", why.as_str()))
                }
                GrabError::NotFound => ("not_found", "product not found".into()),
                GrabError::Unavailable { dependency, .. } => (
                    "unavailable",
                    format!("{} is unavailable; retry later", dependency.as_str()),
                ),
                GrabError::PoolTimedOut => (
                    "unavailable",
                    format!(
                        "{} is unavailable; retry later",
                        Dependency::Postgres.as_str()
                    ),
                ),
                GrabError::Internal(_) => ("internal", "internal error".into()),
            },
        };
        ErrorBody {
            error: error.into(),
            message,
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::AdminDisabled | ApiError::HooksDisabled => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Grab(grab) => match grab {
                GrabError::SoldOut | GrabError::AlreadyPurchased | GrabError::Rejected(_) => {
                    StatusCode::CONFLICT
                }
                GrabError::Busy(_) | GrabError::PoolStarved | GrabError::QueueFull => {
                    StatusCode::TOO_MANY_REQUESTS
                }
                GrabError::NotFound => StatusCode::NOT_FOUND,
                GrabError::Unavailable { .. } | GrabError::PoolTimedOut => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                GrabError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            ApiError::Grab(GrabError::Unavailable { dependency, detail }) => {
                tracing::warn!(dependency = dependency.as_str(), %detail, "dependency unavailable");
            }
            ApiError::Grab(GrabError::PoolTimedOut) => {
                tracing::warn!(
                    dependency = Dependency::Postgres.as_str(),
                    "no pooled connection within the acquire timeout"
                );
            }
            ApiError::Grab(GrabError::Internal(detail)) => {
                tracing::error!(%detail, "internal error");
            }
            _ => {}
        }
        let mut response = HttpResponse::build(self.status_code());
        match self {
            ApiError::Grab(GrabError::Busy(_) | GrabError::PoolStarved | GrabError::QueueFull) => {
                response.insert_header((header::RETRY_AFTER, "1"));
            }
            ApiError::Grab(GrabError::Unavailable { .. } | GrabError::PoolTimedOut) => {
                response.insert_header((header::RETRY_AFTER, "2"));
            }
            _ => {}
        }
        response.json(self.body())
    }
}

#[cfg(test)]
mod outcome_tests {
    use super::*;

    #[test]
    fn every_counted_outcome_is_an_error_outcome_or_ordered_and_back() {
        let errors = [
            GrabError::SoldOut,
            GrabError::AlreadyPurchased,
            GrabError::Busy(Duration::ZERO),
            GrabError::Rejected(Rejection::StaleToken),
            GrabError::NotFound,
            GrabError::Unavailable {
                dependency: Dependency::Redis,
                detail: String::new(),
            },
            GrabError::PoolTimedOut,
            GrabError::PoolStarved,
            GrabError::QueueFull,
            GrabError::Internal(String::new()),
        ];
        let mut from_errors: Vec<&str> = errors
            .iter()
            .map(GrabError::outcome)
            .filter(|&o| o != NOT_FOUND)
            .chain([ORDERED])
            .collect();
        from_errors.sort_unstable();
        from_errors.dedup();
        let mut counted = COUNTED_OUTCOMES.to_vec();
        counted.sort_unstable();
        assert_eq!(from_errors, counted);
    }
}
