//! `GET /api/v1/status?product=N`, and the `data:` of each `message`
//! event of `GET /api/v1/status/stream`: what the status page shows.

use serde::{Deserialize, Serialize};

use crate::damage::Damage;

/// What the page shows, for one product, as one replica sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusBody {
    /// Active strategy of this replica.
    pub strategy: crate::strategies::StrategyName,
    /// The strategy's promise, in one line.
    pub guarantee: String,
    /// Product shown.
    pub product_id: i64,
    /// Stock column now (negative when a broken strategy oversold).
    pub stock: i64,
    /// Stock at the last reset.
    pub initial_stock: i64,
    /// Order rows.
    pub orders: i64,
    /// Units in those orders.
    pub ordered_units: i64,
    /// Oversold units, lost updates, undersold units, duplicates
    /// (flattened: the four keys of the body).
    #[serde(flatten)]
    pub damage: Damage,
    /// This replica's grab requests since it started, every outcome.
    pub grabs_total: u64,
    /// This replica's grab requests per second, over the last samples.
    pub grabs_per_sec: f64,
    /// Which replica answered (`host:port`).
    pub replica: String,
    /// The faults in force (`GET /admin/faults`) whose value differs from a
    /// fresh deployment's (what `DELETE /admin/faults` restores), by name;
    /// empty when no fault is on.
    pub faults: Vec<FaultInForce>,
    /// The history run being recorded (`null` when the history is off;
    /// always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub history_run: Option<String>,
    /// Overlaps the history arbiter counted in that run, every strategy
    /// and product (`null` when the history is off or the arbiter could not
    /// be read; always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub overlaps: Option<u64>,
}

/// One fault of `GET /admin/faults` set away from its fresh-deployment value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FaultInForce {
    /// The field of `GET /admin/faults`, e.g. `pause_ms`.
    pub name: String,
    /// Its value now, as text: `2000`, `true`, `before-write`.
    pub value: String,
}
