//! `pg-atomic` — `UPDATE products SET stock = stock - q WHERE stock >= q`.
//!
//! **Seed step:** the answer every seed's comments give first: do not read
//! and write, let the database decrement (003's database section, 001's
//! "扣减库存"). It is not a lock; it is the floor every lock is measured
//! against.
//!
//! **Guarantee:** safe. The check and the decrement are one statement; the
//! row lock it takes lasts only from the `UPDATE` to the commit. The
//! one-order-per-user check runs after the `UPDATE`, under that row lock,
//! so two grabs of the same user cannot both pass it.
//!
//! **How it fails:** it does not — but it only fits logic that one SQL
//! statement can express. The simulated work runs *before* the statement,
//! outside any lock, which is the point: the critical section shrinks to
//! what the database needs.

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;
use sqlx::PgConnection;

use crate::error::GrabError;
use crate::section::{insert_order, refuse_repeat_buyer, simulated_work};
use crate::strategy::{GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo};

/// Name, seed and guarantee of `pg-atomic`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::PgAtomic,
    seed: "the database floor: one conditional UPDATE, no lock",
    guarantee: "safe; the row is locked only from UPDATE to COMMIT",
    safety: Safety::Safe,
    kind: Kind::NotALock,
};

/// The conditional decrement.
#[derive(Debug, Clone, Copy, Default)]
pub struct PgAtomic;

async fn decrement_and_order(
    conn: &mut PgConnection,
    req: GrabRequest,
) -> Result<Order, GrabError> {
    let left: Option<i64> = sqlx::query_scalar(
        "UPDATE products SET stock = stock - $2, updated_at = now()
         WHERE id = $1 AND stock >= $2 RETURNING stock",
    )
    .bind(req.product_id)
    .bind(i64::from(req.quantity))
    .fetch_optional(&mut *conn)
    .await?;
    if left.is_none() {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)")
                .bind(req.product_id)
                .fetch_one(&mut *conn)
                .await?;
        return Err(if exists {
            GrabError::SoldOut
        } else {
            GrabError::NotFound
        });
    }
    refuse_repeat_buyer(conn, req).await?;
    insert_order(conn, req, INFO.name.as_str(), None).await
}

#[async_trait]
impl Strategy for PgAtomic {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        simulated_work(cx).await;
        let mut tx = cx.deps.pool.begin().await?;
        match decrement_and_order(&mut tx, req).await {
            Ok(order) => {
                tx.commit().await?;
                Ok(order)
            }
            Err(e) => {
                if let Err(rollback) = tx.rollback().await {
                    tracing::debug!(error = %rollback, "rollback after a refused grab failed");
                }
                Err(e)
            }
        }
    }
}
