//! `redis-lua-stock` — stock pre-loaded in Redis, decremented by Lua; the
//! order persisted afterwards; the reservation given back on failure.
//!
//! **Seed step:** 001 "TCC": *Try* reserves the resource
//! ([`stock_try.lua`]: check the buyer, check the stock, decrement — one
//! atomic script), *Confirm* persists the order (one PostgreSQL
//! statement that inserts it), *Cancel* gives the reservation back when
//! Confirm fails ([`stock_cancel.lua`]).
//!
//! **Guarantee:** safe, and the throughput ceiling: the only serialised
//! step is one script inside Redis. Redis never hands out more than it was
//! loaded with, so the database cannot oversell.
//!
//! **Write-behind of the stock column.** Under this strategy Redis is the
//! stock's system of record and `products.stock` is a copy written behind:
//! each replica copies `stock:product:{id}` into the column at most
//! [`WRITE_BEHIND`] after an order it confirmed, and `GET /admin/audit`
//! copies it first ([`sync_stock_column`]). So no grab touches the hot
//! `products` row — a grab is one Lua call and one `INSERT`, and inserts of
//! different buyers commit side by side (group commit) instead of queueing
//! on one row lock. During a run the column (and the audit gauges) lag by
//! up to [`WRITE_BEHIND`]; when the run is over they agree with the orders.
//!
//! **How it fails:** the two stores can drift. If Confirm fails *and* Cancel
//! cannot reach Redis, the reservation is lost (undersold), and is logged;
//! an `INSERT` that committed but answered an error is checked for before
//! cancelling. If Redis loses the key *while* confirms are in flight, the
//! reload counts only committed orders, so the units of those in-flight
//! confirms can be handed out once more (an oversell bounded by the grabs
//! in flight) — Redis must be as durable as the sale needs. Switching to this strategy, resetting a product, or a
//! missing key loads Redis from the database (the lower of the column and
//! `initial_stock − ordered units`, so a column that lags never hands out
//! stock twice); grabs in flight across a switch can be counted twice —
//! switch between runs, not during one.
//!
//! Keys: `stock:product:{id}` (units left) and `buyers:product:{id}` (a set
//! of user ids, the one-order-per-user rule kept inside the script).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

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

/// How long after an order the stock column is brought up to date.
pub const WRITE_BEHIND: Duration = Duration::from_millis(100);

/// Try/cancel scripts, compiled once; products whose column awaits a copy.
#[derive(Debug)]
pub struct RedisLuaStock {
    try_script: Script,
    cancel_script: Script,
    pending: Arc<Mutex<HashSet<i64>>>,
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
            pending: Arc::default(),
        }
    }

    /// Schedule one copy of the product's Redis stock into its column,
    /// [`WRITE_BEHIND`] from now, unless one is already scheduled. The flag
    /// is cleared *before* Redis is read, so a decrement after the read
    /// schedules the next copy: the column always converges.
    fn write_behind(&self, deps: &Deps, product_id: i64) {
        {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !pending.insert(product_id) {
                return;
            }
        }
        let pending = self.pending.clone();
        let deps = deps.clone();
        tokio::spawn(async move {
            tokio::time::sleep(WRITE_BEHIND).await;
            pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&product_id);
            if let Err(e) = sync_stock_column(&deps, Some(product_id)).await {
                tracing::warn!(product_id, error = %e, "redis-lua-stock write-behind failed; the next order or audit retries");
            }
        });
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

/// Whether the order of this buyer is in the database after all: an
/// `INSERT` can commit and still answer an I/O error. When even this check
/// fails, nobody can know; the reservation is given back (and logged), as
/// an unconfirmed order is the likelier case.
async fn order_exists(deps: &Deps, req: GrabRequest) -> bool {
    sqlx::query_scalar::<_, bool>(
        "SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = $1 AND user_id = $2)",
    )
    .bind(req.product_id)
    .bind(req.user_id)
    .fetch_one(&deps.pool)
    .await
    .unwrap_or(false)
}

/// Load one product's stock and buyers from the database into Redis,
/// replacing what was there. `only_if_missing` keeps an existing stock key.
pub async fn load_product(
    deps: &Deps,
    product_id: i64,
    only_if_missing: bool,
) -> Result<(), GrabError> {
    // The column may lag (write-behind); the orders never do.
    let stock: Option<i64> = sqlx::query_scalar(
        "SELECT LEAST(p.stock, p.initial_stock - COALESCE(
                    (SELECT SUM(quantity) FROM orders o WHERE o.product_id = p.id), 0))::BIGINT
         FROM products p WHERE p.id = $1",
    )
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

/// Copy the Redis stock of `product_id` (or of every product) into the
/// `products.stock` column — only while `redis-lua-stock` is the active
/// strategy and the key exists.
///
/// Each copy locks the product row *before* it reads Redis, inside one
/// transaction, so copies (from any replica, or the audit) and resets are
/// serialised on the row: the copy that commits last also read Redis last,
/// and a copy can never write a value read before a reset over the reset.
/// A copy left over after a switch to another strategy finds the strategy
/// changed and writes nothing.
pub async fn sync_stock_column(deps: &Deps, product_id: Option<i64>) -> Result<(), GrabError> {
    let ids: Vec<i64> = match product_id {
        Some(id) => vec![id],
        None => {
            sqlx::query_scalar("SELECT id FROM products ORDER BY id")
                .fetch_all(&deps.pool)
                .await?
        }
    };
    let mut conn = deps.redis.clone();
    for id in ids {
        let mut tx = deps.pool.begin().await?;
        sqlx::query("SELECT 1 FROM products WHERE id = $1 FOR UPDATE")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let (active, stock): (Option<String>, Option<i64>) = redis::cmd("MGET")
            .arg(crate::control::STRATEGY_KEY)
            .arg(stock_key(id))
            .query_async(&mut conn)
            .await?;
        // No key: nobody ever switched, every replica runs its configured
        // strategy — and an order of this strategy scheduled this copy.
        let still_active = active.as_deref().is_none_or(|name| name == INFO.name);
        if let (true, Some(stock)) = (still_active, stock) {
            sqlx::query(
                "UPDATE products SET stock = $2, updated_at = now() WHERE id = $1 AND stock <> $2",
            )
            .bind(id)
            .bind(stock)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
    }
    Ok(())
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
        // Confirm (one autocommit INSERT), or Cancel.
        let confirmed = match deps.pool.acquire().await {
            Ok(mut conn) => insert_order(&mut conn, req, INFO.name, None).await,
            Err(e) => Err(e.into()),
        };
        if confirmed.is_err() && !order_exists(deps, req).await {
            self.cancel(deps, req).await;
        }
        self.write_behind(deps, req.product_id);
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
