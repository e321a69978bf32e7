//! `GET /api/v1/products/{id}` ([`ProductBody`], also the answer of a
//! reset) and `POST /admin/products/{id}/reset` ([`ResetBody`]).

use serde::{Deserialize, Serialize};

/// A product: stock, initial stock, active strategy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProductBody {
    /// Product id.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// Stock column.
    pub stock: i64,
    /// Stock at the last reset.
    pub initial_stock: i64,
    /// Active strategy of this replica.
    pub strategy: crate::strategies::StrategyName,
}

/// `POST /admin/products/{id}/reset` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// New stock (and initial stock), 0..=100,000,000.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 0, maximum = 100_000_000, example = 100)
    )]
    pub stock: i64,
}
