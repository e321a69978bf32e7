//! HTTP routes, one module per area. Every error answer is the JSON of
//! [`crate::error::ErrorBody`]; extractor failures (bad JSON, bad path,
//! oversized body) are turned into the same shape by the handlers in
//! [`crate::startup`].

pub mod admin;
pub mod grab;
pub mod health;
pub mod metrics;
pub mod products;
pub mod status;

use crate::error::ApiError;

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
