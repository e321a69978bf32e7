//! What the extractors reject, in the JSON shape of every other error
//! ([`crate::error::ErrorBody`]): a body that is too large, not JSON or
//! of the wrong shape, a product id that is not a number, a bad query
//! string, and a route that does not exist.

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::error::ApiError;

/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The extractors' settings: the body limit, and each one's failure
/// answered by the handlers below.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(
        web::JsonConfig::default()
            .limit(MAX_BODY_BYTES)
            .error_handler(json_error),
    )
    .app_data(web::PathConfig::default().error_handler(path_error))
    .app_data(web::QueryConfig::default().error_handler(query_error));
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

/// Any route not in the route table (`startup`'s): a JSON 404 naming it.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "route {} {}",
        req.method(),
        req.path()
    )))
}
