//! The orders of one product since its last reset, one page at a time
//! (`GET /admin/products/{id}/orders`): what a load generator reads after a
//! run to check every acknowledged order against the rows the database
//! holds. A reset deletes a product's orders, so a page never mixes sales.

use seckill_wire::orders::{OrderRow, OrdersPage};
use sqlx::PgPool;

/// Orders per page when the request names no `limit`.
pub const DEFAULT_LIMIT: i64 = 1_000;
/// The largest `limit` a request may ask for.
pub const MAX_LIMIT: i64 = 10_000;

/// One row of [`page`]'s statement: an order, or all NULLs for a product
/// with no order on the page.
type MaybeOrder = (Option<i64>, Option<i64>, Option<i32>, Option<String>);

/// The orders of `product` with an id above `after`, ascending by id, at
/// most `limit` (≥ 1); `None` when there is no such product. One statement,
/// so the product's existence and its orders come from one snapshot.
/// `next_after` is the last id of a full page (there may be more), `None`
/// on a shorter one.
pub async fn page(
    pool: &PgPool,
    product: i64,
    after: i64,
    limit: i64,
) -> Result<Option<OrdersPage>, sqlx::Error> {
    // A product without orders (after `after`) is one row of NULLs; no
    // product, no row.
    let rows: Vec<MaybeOrder> = sqlx::query_as(
        r#"SELECT o.id, o.user_id, o.quantity,
                  to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
           FROM products p
           LEFT JOIN LATERAL (
               SELECT id, user_id, quantity, created_at FROM orders
               WHERE product_id = p.id AND id > $2
               ORDER BY id LIMIT $3
           ) o ON true
           WHERE p.id = $1
           ORDER BY o.id"#,
    )
    .bind(product)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    let orders: Vec<OrderRow> = rows
        .into_iter()
        .filter_map(|(id, user_id, quantity, created_at)| {
            Some(OrderRow {
                order_id: id?,
                user_id: user_id?,
                quantity: quantity?,
                created_at: created_at?,
            })
        })
        .collect();
    let full = i64::try_from(orders.len()).is_ok_and(|n| n == limit);
    let next_after = if full {
        orders.last().map(|o| o.order_id)
    } else {
        None
    };
    Ok(Some(OrdersPage { orders, next_after }))
}
