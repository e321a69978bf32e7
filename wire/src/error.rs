//! The body of every error answer: `{"error": code, "message": text}`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The JSON body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `sold_out`, `busy`, `unavailable`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "sold_out"))]
    pub error: Cow<'static, str>,
    /// Human-readable explanation.
    pub message: String,
}
