//! `redis-lua-stock` — stock pre-loaded in Redis, decremented by Lua; the
//! order persisted afterwards; the reservation given back on failure.
//!
//! **Seed step:** 001 "TCC": *Try* reserves the resource
//! (`stock_try.lua`: check the buyer, check the stock, decrement — one
//! atomic script), *Confirm* persists the order (in a batch: one
//! PostgreSQL statement inserts the orders of many grabs, see
//! [`crate::order_batch`]; `SECKILL_ORDER_BATCH_MAX=1` inserts each on its
//! own), *Cancel* gives the reservation back when Confirm fails and the
//! order surely does not exist (`stock_cancel.lua`) — for a failed batch,
//! exactly its grabs' reservations. The batch queue is bounded
//! (`SECKILL_ORDER_BATCH_QUEUE`): a grab takes its place in it before the
//! try, and a full queue answers `429 busy` with nothing reserved.
//!
//! **Guarantee:** safe, and the throughput ceiling: the only serialised
//! step is one script inside Redis, and the database sees one commit per
//! batch, not per order. Redis never hands out more than it was loaded
//! with, so the database cannot oversell. A grab is answered `201` only
//! after its batch committed.
//!
//! **Write-behind of the stock column.** Under this strategy Redis is the
//! stock's system of record and `products.stock` is a copy written behind:
//! each replica copies `stock:product:{id}` into the column at most
//! [`WRITE_BEHIND`] after an order it confirmed, and `GET /admin/audit`
//! copies it first ([`sync_stock_column`]). So no grab touches the hot
//! `products` row — a grab is one Lua call and its share of one batched
//! `INSERT`, and batches commit side by side instead of queueing on one row
//! lock. During a run the column (and the audit gauges) lag by
//! up to [`WRITE_BEHIND`]; when the run is over they agree with the orders.
//!
//! **Reservations.** Each try is recorded with its time (Redis's `TIME`,
//! inside the try script) in `reservations:product:{id}`, a sorted set of
//! `{user}:{quantity}` scored in ms; the confirm forgets it after the order
//! committed (`stock_confirm.lua`, one call per product for a whole
//! batch), the cancel gives it back. A process
//! that dies between try and confirm leaves its reservation behind: the
//! sweep ([`RedisLuaStock::sweep`], run in the background by grabs on
//! the product at most every [`SWEEP_EVERY`]) takes reservations older than
//! [`RESERVATION_TIMEOUT`], checks in PostgreSQL that no order exists for
//! the buyer (holding the product row `FOR UPDATE`, so an `INSERT` that
//! already passed its foreign-key check commits first and is seen), and
//! cancels them: the unit goes back to `stock:product:{id}` and the buyer
//! leaves `buyers:product:{id}`, so the crash neither loses the unit for
//! good nor locks the buyer out with `already_purchased` and no order. A
//! confirm slower than the timeout that finds its reservation swept takes
//! the unit again (its order exists) — if it is still there.
//!
//! **A confirm after the sweep, its unit sold again.** If the sweep gave a
//! slow confirm's unit back and another buyer took it before that confirm's
//! order committed, the stock left is below the order's quantity.
//! `stock_confirm.lua` then takes nothing — Redis stock never goes below 0
//! — and answers a *conflict*, counted in
//! `seckill_stock_confirm_conflicts_total`. The order committed but was
//! never acknowledged, and the unit belongs to the other buyer (who may
//! have been answered `201` already), so the late order is the one that
//! must go: it is deleted again (the tally triggers count the deletion)
//! and its grab answered `409 sold_out` — what a new try would answer. If
//! that delete fails, the grab answers `503` and the delete is retried in
//! the background for up to [`RESERVATION_TIMEOUT`]; only if every retry
//! fails does the audit show the unit oversold (logged as an error).
//!
//! **A confirm whose outcome is unknown is never cancelled.** When the
//! confirm answers an error, the order is looked for in PostgreSQL first:
//! found (the `INSERT` committed and its reply was lost), it is confirmed
//! and answered `201` with the order as read back; surely absent, the
//! reservation is cancelled; and when the database cannot even be asked,
//! nothing is given back — the reservation (unit and buyer) waits for the
//! sweep, which decides once the database answers — and the grab answers
//! `503`. (A pool timeout needs no check: no connection, no statement.)
//!
//! **The `skip_cancel` fault** switches the cancel off: a failed confirm
//! gives nothing back and its reservation is forgotten, as the demos that
//! `DECR` the stock in Redis and then insert the order do. The unit stays
//! taken with no order — an undersell (the `miaosha-decr` replay).
//!
//! **How it fails:** the two stores can drift. If Confirm fails *and* Cancel
//! cannot reach Redis, or whether the order exists cannot be told, the
//! reservation waits for the sweep; a crashed holder's unit (or one whose
//! confirm's outcome was unknown) is unavailable for up to
//! [`RESERVATION_TIMEOUT`] (plus the next grab's sweep), and its buyer
//! meanwhile answered `already_purchased`. If Redis loses its keys, the reload
//! from the database counts only committed orders and drops the
//! reservations on record; confirms in flight then take their unit again,
//! but one that committed just before the reload read the orders is
//! counted twice (an undersell, never an oversell) — Redis must be as
//! durable as the sale needs. Switching to this strategy, resetting a
//! product, or a missing key loads Redis from the database (the lower of
//! the column and `initial_stock − ordered units`, so a column that lags
//! never hands out stock twice); grabs in flight across a switch can be
//! counted twice — switch between runs, not during one.
//!
//! Keys: `stock:product:{id}` (units left), `buyers:product:{id}` (a set
//! of user ids, the one-order-per-user rule kept inside the script) and
//! `reservations:product:{id}` (tries not yet confirmed, by time). Only
//! products that exist get them (and an entry in this replica's sweep
//! times): the grab route answers an unknown product `404` first.

use seckill_wire::strategies::StrategyName;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use crate::error::{Dependency, GrabError};
use crate::order_batch::OrderBatcher;
use crate::section::{insert_order, simulated_work};
use crate::strategy::{
    Deps, GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo, STRATEGY_KEY,
};

/// Name, seed and guarantee of `redis-lua-stock`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::RedisLuaStock,
    seed: "001 TCC: try in Redis (Lua), confirm in the database, cancel on failure",
    guarantee: "safe; the throughput ceiling",
    safety: Safety::Safe,
    kind: Kind::NotALock,
};

/// Redis key of a product's stock.
pub fn stock_key(product_id: i64) -> String {
    format!("stock:product:{product_id}")
}

/// Redis key of a product's buyers.
pub fn buyers_key(product_id: i64) -> String {
    format!("buyers:product:{product_id}")
}

/// Redis key of a product's reservations (tries not yet confirmed).
pub fn reservations_key(product_id: i64) -> String {
    format!("reservations:product:{product_id}")
}

/// The reservation member of one try: `{user}:{quantity}` (a buyer holds
/// at most one reservation per product, the buyers set sees to it).
fn reservation_member(user_id: i64, quantity: i32) -> String {
    format!("{user_id}:{quantity}")
}

/// How long after an order the stock column is brought up to date.
pub const WRITE_BEHIND: Duration = Duration::from_millis(100);

/// A reservation older than this with no order behind it is given back by
/// the sweep. Far above any confirm's time (one `INSERT` bounded by the
/// pool's acquire timeout).
pub const RESERVATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Grabs on a product start a background sweep at most this often (per
/// replica).
pub const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// `stock_try.lua`, the *try*: check the buyer and the stock, reserve,
/// record the reservation.
static TRY_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("stock_try.lua")));

/// `stock_cancel.lua`, the *cancel*: give a reservation back.
static CANCEL_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("stock_cancel.lua")));

/// `stock_confirm.lua`: forget the reservations of committed orders.
static CONFIRM_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("stock_confirm.lua")));

/// `stock_load.lua`: load a product's stock and buyers from the database.
static LOAD_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("stock_load.lua")));

/// Products whose column awaits a copy; when each product was last swept;
/// the order batcher. (The TCC scripts are compiled once per process.)
#[derive(Debug)]
pub struct RedisLuaStock {
    pending: Arc<Mutex<HashSet<i64>>>,
    last_sweep: Mutex<HashMap<i64, tokio::time::Instant>>,
    batcher: OrderBatcher,
}

impl Default for RedisLuaStock {
    /// Batches as the default settings say.
    fn default() -> Self {
        let settings = crate::configuration::Settings::default();
        Self::new(
            settings.order_batch_max,
            settings.order_batch_commits,
            settings.order_batch_queue,
        )
    }
}

const NOT_LOADED: i64 = -1;
const ALREADY_PURCHASED: i64 = -2;
const SOLD_OUT: i64 = -3;

/// `stock_confirm.lua`'s answer for one order: its reservation forgotten.
const FORGOTTEN: i64 = 0;
/// The reservation was gone and the unit taken again.
const TAKEN_AGAIN: i64 = 1;
/// The reservation was gone and the stock below the order's quantity:
/// nothing taken, the order must be undone.
const CONFLICT: i64 = 2;
/// No stock key: the reload from the database counts the order.
const NO_STOCK_KEY: i64 = 3;

impl RedisLuaStock {
    /// Build the strategy: orders committed in batches of up to
    /// `batch_max` (1: one `INSERT` each), `batch_commits` batches at once,
    /// at most `batch_queue` orders waiting for their batch.
    pub fn new(batch_max: usize, batch_commits: usize, batch_queue: usize) -> Self {
        Self {
            pending: Arc::default(),
            last_sweep: Mutex::default(),
            batcher: OrderBatcher::confirming(
                INFO.name.as_str(),
                batch_max,
                batch_commits,
                batch_queue,
                |deps, orders| Box::pin(confirm_committed(deps, orders)),
            ),
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

    /// The *try*: check the buyer and the stock, reserve, record the
    /// reservation. Returns the stock left, or a negative code (see
    /// `stock_try.lua`). Public so a test can play a process that crashes
    /// right after it.
    pub async fn try_reserve(&self, deps: &Deps, req: GrabRequest) -> Result<i64, GrabError> {
        let mut conn = deps.redis.clone();
        Ok(TRY_SCRIPT
            .key(stock_key(req.product_id))
            .key(buyers_key(req.product_id))
            .key(reservations_key(req.product_id))
            .arg(req.user_id)
            .arg(req.quantity)
            .arg(reservation_member(req.user_id, req.quantity))
            .invoke_async(&mut conn)
            .await?)
    }

    async fn cancel(&self, deps: &Deps, req: GrabRequest) {
        if let Err(e) = cancel_reservation(deps, req, i64::MAX).await {
            tracing::error!(
                product_id = req.product_id,
                user_id = req.user_id,
                error = %e,
                "redis-lua-stock cancel failed: the unit waits for the stale-reservation sweep"
            );
        }
    }

    /// Settle a confirm that answered `error` for the reservation of `req`
    /// (public so a test can play an `INSERT` whose reply was lost):
    ///
    /// - the order is in the database after all (the `INSERT` committed
    ///   and its reply was lost): it is confirmed like any committed order
    ///   ([`confirm_committed`]) and answered — `201` with the order read
    ///   back;
    /// - it surely is not: the reservation is given back (the *cancel*)
    ///   and `error` answered. A pool timeout is such a case without asking:
    ///   no connection, so no statement was ever sent;
    /// - nobody can tell (the check itself fails): nothing is given back —
    ///   the reservation is left to the sweep, which decides once the
    ///   database answers — and the grab answers `503 unavailable`.
    pub async fn after_failed_confirm(
        &self,
        deps: &Deps,
        req: GrabRequest,
        error: GrabError,
    ) -> Result<Order, GrabError> {
        if matches!(error, GrabError::PoolTimedOut) {
            self.cancel(deps, req).await;
            return Err(error);
        }
        match find_order(deps, req).await {
            Ok(Some(order)) => {
                tracing::warn!(
                    product_id = req.product_id,
                    user_id = req.user_id,
                    order_id = order.order_id,
                    error = %error,
                    "redis-lua-stock: a confirm that answered an error had committed; confirmed"
                );
                confirm_committed(deps.clone(), vec![order])
                    .await
                    .pop()
                    .unwrap_or_else(|| Err(GrabError::Internal("confirm answered nothing".into())))
            }
            Ok(None) => {
                self.cancel(deps, req).await;
                Err(error)
            }
            Err(check) => {
                tracing::warn!(
                    product_id = req.product_id,
                    user_id = req.user_id,
                    error = %error,
                    check = %check,
                    "redis-lua-stock: a confirm failed and whether its order exists is unknown; \
                     the reservation is left to the sweep"
                );
                Err(GrabError::Unavailable {
                    dependency: Dependency::Postgres,
                    detail: format!("confirm failed ({error}); its order is unknown ({check})"),
                })
            }
        }
    }

    /// Give back the product's reservations older than `older_than` whose
    /// order does not exist (see `sweep_stale_reservations`); the grabs
    /// run this in the background with [`RESERVATION_TIMEOUT`]. Returns how
    /// many were given back.
    pub async fn sweep(
        &self,
        deps: &Deps,
        product_id: i64,
        older_than: Duration,
    ) -> Result<u64, GrabError> {
        sweep_stale_reservations(deps, product_id, older_than).await
    }

    /// Start a background sweep of the product's stale reservations, unless
    /// this replica started one less than [`SWEEP_EVERY`] ago.
    fn maybe_sweep(&self, deps: &Deps, product_id: i64) {
        let now = tokio::time::Instant::now();
        {
            let mut last = self
                .last_sweep
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match last.get(&product_id) {
                Some(at) if now.duration_since(*at) < SWEEP_EVERY => return,
                _ => {
                    last.insert(product_id, now);
                }
            }
            deps.metrics
                .strategy_products
                .with_label_values(&[INFO.name.as_str()])
                .set(last.len() as f64);
        }
        let deps = deps.clone();
        tokio::spawn(async move {
            match sweep_stale_reservations(&deps, product_id, RESERVATION_TIMEOUT).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(
                    product_id,
                    cancelled = n,
                    "redis-lua-stock: gave back stale reservations (a confirm never came)"
                ),
                Err(e) => {
                    tracing::warn!(product_id, error = %e, "redis-lua-stock: sweep failed; the next one retries")
                }
            }
        });
    }
}

/// After the orders committed: forget their reservations, one script call
/// per product (`stock_confirm.lua`), or take a unit again where the sweep
/// gave it back meanwhile. Answers each order in its place: the order, or —
/// for a *conflict*, a swept reservation whose unit another buyer took
/// (the script took nothing: Redis stock never goes below 0) — the order
/// deleted again and `sold_out` (counted in
/// `seckill_stock_confirm_conflicts_total`; see the module doc). A script
/// call that fails leaves its reservations to the sweep, which finds the
/// orders and only forgets them. Public so a test can play a confirm that
/// comes after the sweep.
pub async fn confirm_committed(deps: Deps, orders: Vec<Order>) -> Vec<Result<Order, GrabError>> {
    let conflicts = forget_reservations(&deps, &orders).await;
    let mut answers: Vec<Result<Order, GrabError>> = orders.into_iter().map(Ok).collect();
    if conflicts.is_empty() {
        return answers;
    }
    deps.metrics
        .stock_confirm_conflicts
        .inc_by(conflicts.len() as u64);
    let ids: Vec<i64> = conflicts
        .iter()
        .filter_map(|&i| answers[i].as_ref().ok().map(|order| order.order_id))
        .collect();
    let refusal = match undo_orders(&deps, &ids).await {
        Ok(()) => GrabError::SoldOut,
        Err(e) => {
            tracing::error!(orders = ?ids, error = %e,
                "redis-lua-stock: could not undo conflicting orders; retrying in the background");
            tokio::spawn(undo_later(deps.clone(), ids));
            GrabError::Unavailable {
                dependency: Dependency::Postgres,
                detail: format!("undoing an order sold twice failed: {e}"),
            }
        }
    };
    for i in conflicts {
        answers[i] = Err(refusal.clone());
    }
    answers
}

/// Run the confirm script once per product of `orders`; the places (indexes
/// into `orders`) of the conflicts found.
async fn forget_reservations(deps: &Deps, orders: &[Order]) -> Vec<usize> {
    let mut by_product: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, order) in orders.iter().enumerate() {
        by_product.entry(order.product_id).or_default().push(i);
    }
    let mut conflicts: Vec<usize> = Vec::new();
    let mut conn = deps.redis.clone();
    for (product_id, places) in by_product {
        confirm_product(&mut conn, product_id, &places, orders, &mut conflicts).await;
    }
    conflicts
}

/// One product's confirm script call for the orders at `places`, logging
/// units taken again, conflicts and a failed call; adds the conflicts'
/// places to `conflicts`.
async fn confirm_product(
    conn: &mut redis::aio::ConnectionManager,
    product_id: i64,
    places: &[usize],
    orders: &[Order],
    conflicts: &mut Vec<usize>,
) {
    let mut call = CONFIRM_SCRIPT.key(stock_key(product_id));
    call.key(buyers_key(product_id))
        .key(reservations_key(product_id));
    for &i in places {
        let order = &orders[i];
        call.arg(order.user_id)
            .arg(order.quantity)
            .arg(reservation_member(order.user_id, order.quantity));
    }
    match call.invoke_async::<Vec<i64>>(conn).await {
        Ok(codes) => {
            let count = |code: i64| codes.iter().filter(|&&c| c == code).count();
            let (taken, conflicted) = (count(TAKEN_AGAIN), count(CONFLICT));
            if taken > 0 {
                tracing::warn!(
                    product_id,
                    taken,
                    "redis-lua-stock: confirms outlived their reservations (swept); units taken again"
                );
            }
            if conflicted > 0 {
                tracing::warn!(
                    product_id,
                    conflicted,
                    "redis-lua-stock: confirms outlived their reservations and the units were sold again; undoing their orders"
                );
            }
            debug_assert!(codes
                .iter()
                .all(|c| [FORGOTTEN, TAKEN_AGAIN, CONFLICT, NO_STOCK_KEY].contains(c)));
            conflicts.extend(
                places
                    .iter()
                    .zip(&codes)
                    .filter(|(_, &code)| code == CONFLICT)
                    .map(|(&i, _)| i),
            );
        }
        Err(e) => tracing::warn!(
            product_id,
            orders = places.len(),
            error = %e,
            "redis-lua-stock: could not forget confirmed reservations; the sweep will"
        ),
    }
}

/// Delete orders that must not stand (a conflict: their unit was sold to
/// another buyer). The tally triggers count the deletion.
async fn undo_orders(deps: &Deps, ids: &[i64]) -> Result<(), GrabError> {
    sqlx::query("DELETE FROM orders WHERE id = ANY($1)")
        .bind(ids)
        .execute(&deps.pool)
        .await?;
    Ok(())
}

/// [`undo_orders`] again every second for up to [`RESERVATION_TIMEOUT`],
/// when it failed on the grab's path (the grab answered `503`: its order
/// was never acknowledged).
async fn undo_later(deps: Deps, ids: Vec<i64>) {
    let deadline = tokio::time::Instant::now() + RESERVATION_TIMEOUT;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        match undo_orders(&deps, &ids).await {
            Ok(()) => {
                tracing::warn!(orders = ?ids, "redis-lua-stock: conflicting orders undone");
                return;
            }
            Err(e) => tracing::debug!(orders = ?ids, error = %e, "undo failed; retrying"),
        }
    }
    tracing::error!(orders = ?ids,
        "redis-lua-stock: conflicting orders could not be undone; the audit shows them oversold");
}

/// The `skip_cancel` fault, the miaosha-style bug: a failed confirm gives
/// nothing back, and its reservation is forgotten so the sweep cannot
/// either. The unit stays taken with no order; `error` is answered.
async fn forget_reservation(deps: &Deps, req: GrabRequest, error: GrabError) -> GrabError {
    let mut conn = deps.redis.clone();
    let forgotten: Result<i64, _> = redis::cmd("ZREM")
        .arg(reservations_key(req.product_id))
        .arg(reservation_member(req.user_id, req.quantity))
        .query_async(&mut conn)
        .await;
    tracing::warn!(
        product_id = req.product_id,
        user_id = req.user_id,
        error = %error,
        forgotten = ?forgotten,
        "redis-lua-stock: confirm failed and skip_cancel is on: the unit is not given back"
    );
    error
}

/// The *cancel*: give a reservation back (stock up, buyer out), only if it
/// is still on record and was made at or before `newest_ms` (Redis time).
/// Returns whether anything was given back.
async fn cancel_reservation(
    deps: &Deps,
    req: GrabRequest,
    newest_ms: i64,
) -> Result<bool, GrabError> {
    let mut conn = deps.redis.clone();
    let given_back: i64 = CANCEL_SCRIPT
        .key(stock_key(req.product_id))
        .key(buyers_key(req.product_id))
        .key(reservations_key(req.product_id))
        .arg(req.user_id)
        .arg(req.quantity)
        .arg(reservation_member(req.user_id, req.quantity))
        .arg(newest_ms)
        .invoke_async(&mut conn)
        .await?;
    Ok(given_back == 1)
}

/// Give back the product's reservations older than `older_than` whose
/// order does not exist: a process died between try and confirm. Returns
/// how many were given back. Reservations whose order exists (the confirm
/// committed, then the process died) are only forgotten.
///
/// The check runs while holding the product row `FOR UPDATE`: an order
/// `INSERT` takes a key-share lock on that row for its foreign key, so one
/// that is past that point commits before the check reads, and one that is
/// not yet there waits until the sweep is done (its confirm then finds the
/// reservation gone and takes the unit again).
async fn sweep_stale_reservations(
    deps: &Deps,
    product_id: i64,
    older_than: Duration,
) -> Result<u64, GrabError> {
    let mut conn = deps.redis.clone();
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
    let now_ms = seconds * 1000 + micros / 1000;
    let cutoff = now_ms.saturating_sub(i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX));
    let stale: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg(reservations_key(product_id))
        .arg("-inf")
        .arg(cutoff)
        .arg("LIMIT")
        .arg(0)
        .arg(100)
        .query_async(&mut conn)
        .await?;
    if stale.is_empty() {
        return Ok(0);
    }
    let mut tx = deps.pool.begin().await?;
    sqlx::query("SELECT 1 FROM products WHERE id = $1 FOR UPDATE")
        .bind(product_id)
        .execute(&mut *tx)
        .await?;
    let mut given_back = 0;
    for member in stale {
        let parsed = member
            .split_once(':')
            .and_then(|(user, quantity)| Some((user.parse().ok()?, quantity.parse().ok()?)));
        let Some((user_id, quantity)) = parsed else {
            tracing::warn!(product_id, %member, "redis-lua-stock: unreadable reservation dropped");
            let _: i64 = redis::cmd("ZREM")
                .arg(reservations_key(product_id))
                .arg(&member)
                .query_async(&mut conn)
                .await?;
            continue;
        };
        let ordered: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = $1 AND user_id = $2)",
        )
        .bind(product_id)
        .bind(user_id)
        .fetch_one(&mut *tx)
        .await?;
        if ordered {
            let _: i64 = redis::cmd("ZREM")
                .arg(reservations_key(product_id))
                .arg(&member)
                .query_async(&mut conn)
                .await?;
            continue;
        }
        let req = GrabRequest {
            product_id,
            user_id,
            quantity,
        };
        if cancel_reservation(deps, req, cutoff).await? {
            given_back += 1;
        }
    }
    tx.commit().await?;
    Ok(given_back)
}

/// The order of this buyer, if it is in the database after all: an
/// `INSERT` can commit and still answer an I/O error. `Err` when the
/// database cannot say (then nobody knows).
async fn find_order(deps: &Deps, req: GrabRequest) -> Result<Option<Order>, GrabError> {
    let row: Option<(i64, i32, String, Option<i64>)> = sqlx::query_as(
        "SELECT id, quantity, strategy, fence_token FROM orders
         WHERE product_id = $1 AND user_id = $2 ORDER BY id LIMIT 1",
    )
    .bind(req.product_id)
    .bind(req.user_id)
    .fetch_optional(&deps.pool)
    .await?;
    Ok(
        row.map(|(order_id, quantity, strategy, fence_token)| Order {
            order_id,
            product_id: req.product_id,
            user_id: req.user_id,
            quantity,
            strategy: strategy.into(),
            fence_token,
        }),
    )
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
    let mut conn = deps.redis.clone();
    let _: i64 = LOAD_SCRIPT
        .key(stock_key(product_id))
        .key(buyers_key(product_id))
        .key(reservations_key(product_id))
        .arg(stock)
        .arg(if only_if_missing { "1" } else { "0" })
        .arg(&buyers)
        .invoke_async(&mut conn)
        .await?;
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
            .arg(STRATEGY_KEY)
            .arg(stock_key(id))
            .query_async(&mut conn)
            .await?;
        // No key: nobody ever switched, every replica runs its configured
        // strategy — and an order of this strategy scheduled this copy.
        let still_active = active
            .as_deref()
            .is_none_or(|name| name == INFO.name.as_str());
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
        // A place in the batch queue before anything is reserved: a full
        // queue answers `busy` with nothing to give back.
        let slot = if self.batcher.batching() {
            Some(self.batcher.reserve(deps)?)
        } else {
            None
        };
        self.maybe_sweep(deps, req.product_id);
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
        // Confirm: the order in a batch (whose writer confirms the batch's
        // orders once it committed), or one autocommit INSERT.
        let confirmed = match slot {
            Some(slot) => slot.insert(req).await,
            None => {
                let inserted = match deps.pool.acquire().await {
                    Ok(mut conn) => insert_order(&mut conn, req, INFO.name.as_str(), None).await,
                    Err(e) => Err(e.into()),
                };
                match inserted {
                    Ok(order) => confirm_committed(deps.clone(), vec![order])
                        .await
                        .pop()
                        .unwrap_or_else(|| {
                            Err(GrabError::Internal("confirm answered nothing".into()))
                        }),
                    Err(e) => Err(e),
                }
            }
        };
        let answer = match confirmed {
            Ok(order) => Ok(order),
            // Committed, then undone by the confirm (a conflict): settled.
            Err(GrabError::SoldOut) => Err(GrabError::SoldOut),
            // The `skip_cancel` fault: give nothing back (the miaosha bug).
            Err(e) if cx.faults.skip_cancel => Err(forget_reservation(deps, req, e).await),
            // Cancel only when the order surely does not exist.
            Err(e) => self.after_failed_confirm(deps, req, e).await,
        };
        self.write_behind(deps, req.product_id);
        answer
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
