//! The debate's rows in order: rows_pauses.rs's, then rows_nodes.rs's.

use super::rows::Row;

/// The swept claims, in the order of the debate (rows_pauses.rs, then
/// rows_nodes.rs).
pub static ROWS: std::sync::LazyLock<Vec<Row>> = std::sync::LazyLock::new(|| {
    [
        super::rows_pauses::PAUSES_AND_DELAYS,
        super::rows_nodes::CLOCKS_NODES_AND_FAILOVER,
    ]
    .concat()
});
