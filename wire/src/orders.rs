//! `GET /admin/products/{id}/orders?after=<order_id>&limit=<n>`: the
//! product's orders since its last reset, ascending by id, one page at a
//! time ([`OrdersPage`]). The load generator reads every page after a run
//! and checks each acknowledged order against them.

use serde::{Deserialize, Serialize};

/// One order row as the database holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrderRow {
    /// `orders.id`.
    pub order_id: i64,
    /// Buyer.
    pub user_id: i64,
    /// Units.
    pub quantity: i32,
    /// When the row was written (RFC 3339, the database's clock).
    pub created_at: String,
}

/// One page of orders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrdersPage {
    /// Orders with an id above `after`, ascending, at most `limit`.
    pub orders: Vec<OrderRow>,
    /// The `after` of the next page; `null` on the last page (always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub next_after: Option<i64>,
}
