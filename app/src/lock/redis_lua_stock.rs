//! `redis-lua-stock` — stock pre-loaded in Redis, decremented by Lua; the
//! order persisted afterwards; the reservation given back on failure.
//!
//! **Seed step:** 001 "TCC": *Try* reserves the resource
//! ([`stock_try.lua`]: check the buyer, check the stock, decrement — one
//! atomic script), *Confirm* persists the order (one PostgreSQL
//! transaction that inserts it and decrements the stock column), *Cancel*
//! gives the reservation back when Confirm fails ([`stock_cancel.lua`]).
//!
//! **Guarantee:** safe, and the throughput ceiling: the only serialised
//! step is one script inside Redis. Redis never hands out more than it was
//! loaded with, so the database cannot oversell.
//!
//! **How it fails:** the two stores can drift. If Confirm fails *and* Cancel
//! cannot reach Redis, the reservation is lost (undersold, never oversold),
//! and is logged. Switching to this strategy, resetting a product, or a
//! missing key loads Redis from the database; grabs in flight across a
//! switch can be counted twice — switch between runs, not during one.
//!
//! Keys: `stock:product:{id}` (units left) and `buyers:product:{id}` (a set
//! of user ids, the one-order-per-user rule kept inside the script).

use async_trait::async_trait;
use redis::Script;
use sqlx::PgConnection;

use super::{Deps, GrabContext, GrabRequest, Order, Safety, Strategy, StrategyInfo};
use crate::error::GrabError;
use crate::section::{insert_order, simulated_work};

/// Name, seed and guarantee of `redis-lua-stock`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: "redis-lua-stock",
    seed: "001 TCC: try in Redis (Lua), confirm in the database, cancel on failure",
    guarantee: "safe; the throughput ceiling",
    safety: Safety::Safe,
};

/// Redis key of a product's stock.
pub fn stock_key(product_id: i64) -> String {
    format!("stock:product:{product_id}")
}

/// Redis key of a product's buyers.
pub fn buyers_key(product_id: i64) -> String {
    format!("buyers:product:{product_id}")
}

/// Try/cancel scripts, compiled once.
#[derive(Debug)]
pub struct RedisLuaStock {
    try_script: Script,
    cancel_script: Script,
}

impl Default for RedisLuaStock {
    fn default() -> Self {
        Self::new()
    }
}

const NOT_LOADED: i64 = -1;
const ALREADY_PURCHASED: i64 = -2;
const SOLD_OUT: i64 = -3;

impl RedisLuaStock {
    /// Build the strategy.
    pub fn new() -> Self {
        Self {
            try_script: Script::new(include_str!("stock_try.lua")),
            cancel_script: Script::new(include_str!("stock_cancel.lua")),
        }
    }

    async fn try_reserve(&self, deps: &Deps, req: GrabRequest) -> Result<i64, GrabError> {
        let mut conn = deps.redis.clone();
        Ok(self
            .try_script
            .key(stock_key(req.product_id))
            .key(buyers_key(req.product_id))
            .arg(req.user_id)
            .arg(req.quantity)
            .invoke_async(&mut conn)
            .await?)
    }

    async fn cancel(&self, deps: &Deps, req: GrabRequest) {
        let mut conn = deps.redis.clone();
        let result: Result<i64, _> = self
            .cancel_script
            .key(stock_key(req.product_id))
            .key(buyers_key(req.product_id))
            .arg(req.user_id)
            .arg(req.quantity)
            .invoke_async(&mut conn)
            .await;
        if let Err(e) = result {
            tracing::error!(
                product_id = req.product_id,
                user_id = req.user_id,
                error = %e,
                "redis-lua-stock cancel failed: a reservation is lost (undersold)"
            );
        }
    }
}

/// Load one product's stock and buyers from the database into Redis,
/// replacing what was there. `only_if_missing` keeps an existing stock key.
pub async fn load_product(
    deps: &Deps,
    product_id: i64,
    only_if_missing: bool,
) -> Result<(), GrabError> {
    let stock: Option<i64> = sqlx::query_scalar("SELECT stock FROM products WHERE id = $1")
        .bind(product_id)
        .fetch_optional(&deps.pool)
        .await?;
    let stock = stock.ok_or(GrabError::NotFound)?;
    let buyers: Vec<i64> =
        sqlx::query_scalar("SELECT DISTINCT user_id FROM orders WHERE product_id = $1")
            .bind(product_id)
            .fetch_all(&deps.pool)
            .await?;
    let mut pipe = redis::pipe();
    pipe.atomic();
    if only_if_missing {
        pipe.cmd("SET")
            .arg(stock_key(product_id))
            .arg(stock)
            .arg("NX")
            .ignore();
    } else {
        pipe.cmd("SET")
            .arg(stock_key(product_id))
            .arg(stock)
            .ignore();
        pipe.cmd("DEL").arg(buyers_key(product_id)).ignore();
    }
    if !buyers.is_empty() {
        pipe.cmd("SADD")
            .arg(buyers_key(product_id))
            .arg(&buyers)
            .ignore();
    }
    let mut conn = deps.redis.clone();
    pipe.query_async::<()>(&mut conn).await?;
    Ok(())
}

async fn confirm(conn: &mut PgConnection, req: GrabRequest) -> Result<Order, GrabError> {
    sqlx::query("UPDATE products SET stock = stock - $2, updated_at = now() WHERE id = $1")
        .bind(req.product_id)
        .bind(i64::from(req.quantity))
        .execute(&mut *conn)
        .await?;
    insert_order(conn, req, INFO.name, None).await
}

#[async_trait]
impl Strategy for RedisLuaStock {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        let deps = cx.deps;
        simulated_work(cx).await;
        // Try.
        let mut left = self.try_reserve(deps, req).await?;
        if left == NOT_LOADED {
            load_product(deps, req.product_id, true).await?;
            left = self.try_reserve(deps, req).await?;
        }
        match left {
            ALREADY_PURCHASED => return Err(GrabError::AlreadyPurchased),
            SOLD_OUT => return Err(GrabError::SoldOut),
            n if n < 0 => return Err(GrabError::Internal(format!("stock script answered {n}"))),
            _ => {}
        }
        // Confirm, or Cancel.
        let confirmed = async {
            let mut tx = deps.pool.begin().await?;
            let order = confirm(&mut tx, req).await?;
            tx.commit().await?;
            Ok::<_, GrabError>(order)
        }
        .await;
        if confirmed.is_err() {
            self.cancel(deps, req).await;
        }
        confirmed
    }

    async fn activate(&self, deps: &Deps) -> Result<(), GrabError> {
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM products ORDER BY id")
            .fetch_all(&deps.pool)
            .await?;
        for id in ids {
            load_product(deps, id, false).await?;
        }
        Ok(())
    }
}
