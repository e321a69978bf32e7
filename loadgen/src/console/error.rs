//! The console's error answers: a status and `{"error", "message"}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use seckill_load::api::ServiceError;

/// An error answer of the console.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConsoleError {
    /// Bad input from the page.
    #[error("{0}")]
    BadRequest(String),
    /// A refused control (a scenario already running, none to stop).
    #[error("{0}")]
    Conflict(String),
    /// Nothing there (no load recorded yet, no such asset).
    #[error("{0}")]
    NotFound(String),
    /// The service refused or could not be reached.
    #[error("{0}")]
    Service(#[from] ServiceError),
    /// A report the last run left cannot be read.
    #[error("{0}")]
    Report(String),
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    error: &'a str,
    message: String,
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Conflict(_) => StatusCode::CONFLICT,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::Service(_) => StatusCode::BAD_GATEWAY,
            ConsoleError::Report(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let error = match self {
            ConsoleError::BadRequest(_) => "bad_request",
            ConsoleError::Conflict(_) => "conflict",
            ConsoleError::NotFound(_) => "not_found",
            ConsoleError::Service(_) => "service",
            ConsoleError::Report(_) => "report",
        };
        HttpResponse::build(self.status_code()).json(ErrorJson {
            error,
            message: self.to_string(),
        })
    }
}

pub(super) type Answer = Result<HttpResponse, ConsoleError>;
