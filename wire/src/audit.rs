//! `GET /admin/audit`: the ground truth of every product, as the database
//! shows it.

use serde::{Deserialize, Serialize};

use crate::damage::Damage;

/// The ground truth of one product.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditRow {
    /// Product id.
    pub product_id: i64,
    /// Stock at the last reset.
    pub initial_stock: i64,
    /// Stock column now.
    pub stock: i64,
    /// Number of order rows.
    pub orders: i64,
    /// Sum of their quantities.
    pub ordered_units: i64,
    /// Oversold units, lost updates, undersold units, duplicates (flattened:
    /// the four keys of the row).
    #[serde(flatten)]
    pub damage: Damage,
    /// `stock < 0`.
    pub negative_stock: bool,
}

/// `GET /admin/audit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditBody {
    /// The active strategy.
    pub strategy: crate::strategies::StrategyName,
    /// The orders' `synchronous_commit`.
    pub synchronous_commit: String,
    /// `tally` (the totals the database keeps) or `recount` (every order counted).
    #[cfg_attr(feature = "openapi", schema(example = "tally"))]
    pub counted_by: String,
    /// One row per product.
    pub products: Vec<AuditRow>,
}

impl AuditBody {
    /// The row of `product_id`, if the audit has it.
    pub fn product(&self, product_id: i64) -> Option<&AuditRow> {
        self.products.iter().find(|p| p.product_id == product_id)
    }
}
