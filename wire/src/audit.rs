//! `GET /admin/audit`: the ground truth of every product, as the database
//! shows it.

use serde::{Deserialize, Serialize};

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
    /// `max(0, ordered_units − initial_stock)`.
    pub oversold: i64,
    /// `max(0, ordered_units − (initial_stock − stock))`: ordered units the
    /// stock column never saw. Never negative: a product's lost updates
    /// cannot cancel against another's missing stock.
    pub lost_updates: i64,
    /// `max(0, (initial_stock − stock) − ordered_units)`: units gone from
    /// the stock column that no order took (a decrement whose order was
    /// rolled back without giving the stock back).
    pub undersold: i64,
    /// Users holding more than one order for the product.
    pub duplicates: i64,
    /// `stock < 0`.
    pub negative_stock: bool,
}

/// `GET /admin/audit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditBody {
    /// The active strategy.
    pub strategy: String,
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
