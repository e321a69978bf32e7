//! The critical section — deliberately lost-update prone.
//!
//! Inside one transaction:
//! 1. `SELECT stock FROM products WHERE id = $1` (plus `FOR UPDATE` or an
//!    advisory lock first, for the database strategies);
//! 2. the one-order-per-user check, then `stock < quantity` → `sold_out`;
//! 3. the simulated work (`work_delay_ms`) that widens the race;
//! 4. `UPDATE products SET stock = <value read in 1> - quantity` — a *blind
//!    write* of the value read, never `stock = stock - 1`, so two holders
//!    that overlap lose an update instead of hiding it;
//! 5. `INSERT INTO orders ...`.
//!
//! With a fencing token (`fenced`), step 1 is the token's registration,
//! run on its own before the transaction:
//! `UPDATE products SET fence_token = $t WHERE id = $1 AND fence_token < $t
//! RETURNING stock`, and step 4 only writes `WHERE fence_token = $t`. A
//! holder that is late at either step — a newer token registered before
//! its read, or before its write — is refused by the database.
//!
//! With the `check_token` switch (antirez's check-and-set with the lock's
//! random value), step 1 is the value's claim, on its own before the
//! transaction: `UPDATE products SET lock_value = $v WHERE id = $1
//! RETURNING stock` — unconditional, a random value has no order — and
//! step 4 only writes `WHERE lock_value = $v`. A holder whose claim was
//! overwritten by a later one before its write is refused.
//!
//! [`prepare`] stops before the commit and hands back a [`Prepared`]
//! transaction, so the caller decides whether the lock is released before
//! or after [`Prepared::commit`] — the `unlock_before_commit` fault lives in
//! exactly that choice. On every error path the transaction is rolled back
//! explicitly before returning, so a row lock never outlives the request.

use sqlx::{PgConnection, Postgres, Transaction};
use tokio::time::{sleep, Duration, Instant};

use crate::error::{GrabError, LockLost};
use crate::faults::PauseAt;
use crate::freeze::{FreezeAt, SectionWatch};
use crate::history::{Entered, History};
use crate::strategy::{GrabContext, GrabRequest, Order};

/// How step 1 reads and step 4 writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowLock {
    /// Plain `SELECT`: the caller holds an external lock (or none at all).
    None,
    /// `SELECT ... FOR UPDATE`: the row lock is held until commit.
    ForUpdate,
    /// `pg_advisory_xact_lock(product_id)` first, released at commit.
    Advisory,
    /// Read `version`; the write only succeeds while it is unchanged.
    Optimistic,
}

/// What a holder registers on the product row before it reads, and its
/// write must still find there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// A fencing token (`fenced`, a checked revision): registered only
    /// over an older one, written into the order.
    Fence(i64),
    /// The lock's random value, 64 bits of it (the `check_token` switch):
    /// registered whatever is there.
    Value(i64),
}

impl Claim {
    /// The row's column that holds it.
    fn column(self) -> &'static str {
        match self {
            Claim::Fence(_) => "fence_token",
            Claim::Value(_) => "lock_value",
        }
    }

    fn value(self) -> i64 {
        match self {
            Claim::Fence(v) | Claim::Value(v) => v,
        }
    }
}

/// Parameters of one run of the section.
#[derive(Debug, Clone, Copy)]
pub struct SectionSpec {
    /// Strategy name written into the order.
    pub strategy: &'static str,
    /// The read/write mode.
    pub row_lock: RowLock,
    /// What the write must find on the row, if anything.
    pub claim: Option<Claim>,
}

impl SectionSpec {
    /// A plain read and blind write.
    pub fn plain(strategy: &'static str) -> Self {
        Self {
            strategy,
            row_lock: RowLock::None,
            claim: None,
        }
    }

    /// The fencing token, if the write carries one.
    pub fn fence(&self) -> Option<i64> {
        match self.claim {
            Some(Claim::Fence(token)) => Some(token),
            _ => None,
        }
    }

    /// With a different read/write mode.
    pub fn with_row_lock(mut self, row_lock: RowLock) -> Self {
        self.row_lock = row_lock;
        self
    }

    /// With a fencing token, when there is one.
    pub fn with_fence(mut self, fence: Option<i64>) -> Self {
        if let Some(token) = fence {
            self.claim = Some(Claim::Fence(token));
        }
        self
    }

    /// With a random value to check and set, when there is one (a lock
    /// offers none where it has a fence: see `LockGuard::check_value`).
    pub fn with_check_value(mut self, value: Option<i64>) -> Self {
        if let Some(value) = value {
            self.claim = Some(Claim::Value(value));
        }
        self
    }
}

/// A transaction that has written the stock and the order, not yet committed.
#[derive(Debug)]
pub struct Prepared {
    tx: Transaction<'static, Postgres>,
    order: Order,
    /// When step 1's lock (if any) was granted, for hold-time metrics.
    pub locked_at: Instant,
    /// How long step 1 waited for its lock.
    pub lock_wait: Duration,
    /// The section's record in the history, closed by commit or abort.
    entered: Option<Entered>,
    history: History,
    /// The lock is the transaction's own (row or advisory lock): the commit
    /// releases it, so the section ends just before the commit.
    commit_releases: bool,
    /// The `before-commit` pause of this grab, if it takes one.
    pause_before_commit: Option<Duration>,
    /// Open while the section runs (the hook's `anywhere` draw).
    _watch: SectionWatch,
}

impl Prepared {
    /// Commit; the order exists from here on. The section's exit is
    /// recorded after the commit — or just before it when the commit is
    /// what releases the lock.
    pub async fn commit(mut self) -> Result<Order, GrabError> {
        if let Some(pause) = self.pause_before_commit {
            sleep(pause).await;
        }
        let entered = self.entered.take();
        if self.commit_releases {
            self.history.exit(entered).await;
            self.tx.commit().await?;
        } else {
            let committed = self.tx.commit().await;
            self.history.exit(entered).await;
            committed?;
        }
        Ok(self.order)
    }

    /// Roll back (the lock could no longer be trusted): nothing is written.
    pub async fn abort(mut self) {
        let entered = self.entered.take();
        finish(&self.history, entered, self.commit_releases, self.tx).await;
    }
}

/// Roll back and record the section's exit: before the rollback when the
/// rollback releases the lock, after it otherwise. When a statement failed
/// (the `order-insert-fails` scenario's refused `INSERT`), PostgreSQL has
/// already aborted the transaction and released its row or advisory lock
/// at the error, before this runs: the next holder may enter before this
/// exit is recorded, and the history shows the overlap — the holder's code
/// ran on past its lock, though nothing it wrote in the aborted
/// transaction can commit.
async fn finish(
    history: &History,
    entered: Option<Entered>,
    rollback_releases: bool,
    tx: Transaction<'static, Postgres>,
) {
    if rollback_releases {
        history.exit(entered).await;
        rollback(tx).await;
    } else {
        rollback(tx).await;
        history.exit(entered).await;
    }
}

async fn rollback(tx: Transaction<'static, Postgres>) {
    if let Err(e) = tx.rollback().await {
        tracing::debug!(error = %e, "rollback after a refused grab failed");
    }
}

/// Sleep for the configured work delay.
pub async fn simulated_work(cx: GrabContext<'_>) {
    if cx.faults.work_delay_ms > 0 {
        sleep(Duration::from_millis(cx.faults.work_delay_ms)).await;
    }
}

/// The in-process pause, when this grab takes it at `at`.
async fn pause_if(cx: GrabContext<'_>, at: PauseAt) {
    if cx.pause && cx.faults.pause_at == at {
        sleep(Duration::from_millis(cx.faults.pause_ms)).await;
    }
}

/// Steps 1–5. `Ok(None)` means the conditional write of step 4 matched no
/// row (the version moved on, or a newer fencing token wrote first): nothing
/// was written and the transaction is rolled back.
pub async fn prepare(
    cx: GrabContext<'_>,
    req: GrabRequest,
    spec: SectionSpec,
) -> Result<Option<Prepared>, GrabError> {
    prepare_checked(cx, req, spec, None).await
}

/// The lock's last check, as the caller holding the lock runs it.
///
/// Async, because a lock may talk to its servers first: `redlock` with
/// the `redlock_extend` switch extends itself there, then checks.
pub type StillHeld<'g> =
    &'g (dyn Fn() -> futures::future::BoxFuture<'g, Result<(), LockLost>> + Sync);

/// [`prepare`] under an external lock: just before the write (step 4) the
/// lock's last check runs (`check`, the guard's
/// [`check_still_held`](crate::locking::LockGuard::check_still_held): a lease lost
/// or past its deadline, Redlock's validity run out), and a lock that can
/// no longer be trusted ends the section with `409 rejected`, nothing
/// written. The check is the classic one — "still mine? then write" — and
/// a pause after it (the scenario hook's `after-check`) is the one it
/// cannot catch.
pub async fn prepare_checked(
    cx: GrabContext<'_>,
    req: GrabRequest,
    spec: SectionSpec,
    check: Option<StillHeld<'_>>,
) -> Result<Option<Prepared>, GrabError> {
    let started = Instant::now();
    let watch = cx
        .deps
        .freeze
        .section(Duration::from_millis(cx.faults.work_delay_ms));
    let history = &cx.deps.history;
    let commit_releases = matches!(spec.row_lock, RowLock::ForUpdate | RowLock::Advisory);
    // An external lock (or none) is held already: the section begins here.
    let mut entered = if spec.row_lock == RowLock::None {
        history.enter(spec.strategy, req.product_id).await
    } else {
        None
    };
    let registration = match spec.claim {
        Some(Claim::Fence(token)) => Some(register_fence(cx, req.product_id, token).await),
        Some(Claim::Value(value)) => Some(claim_value(cx, req.product_id, value).await),
        None => None,
    };
    let registered = match registration {
        Some(Ok(Some(stock))) => Some(stock),
        Some(other) => {
            history.exit(entered).await;
            return other.map(|_| None);
        }
        None => None,
    };
    let mut tx = match cx.deps.pool.begin().await {
        Ok(tx) => tx,
        Err(e) => {
            history.exit(entered).await;
            return Err(e.into());
        }
    };
    let steps = run_steps(
        &mut tx,
        cx,
        req,
        spec,
        Steps {
            started,
            registered_stock: registered,
            check,
        },
        &mut entered,
    )
    .await;
    match steps {
        Ok(Some((order, locked_at))) => Ok(Some(Prepared {
            tx,
            order,
            locked_at,
            lock_wait: locked_at - started,
            entered,
            history: history.clone(),
            commit_releases,
            pause_before_commit: (cx.pause && cx.faults.pause_at == PauseAt::BeforeCommit)
                .then(|| Duration::from_millis(cx.faults.pause_ms)),
            _watch: watch,
        })),
        other => {
            finish(history, entered, commit_releases, tx).await;
            other.map(|_| None)
        }
    }
}

/// The fenced read: register `token` on the row unless a newer one is
/// there, and read the stock in the same statement. `Ok(None)`: stale.
async fn register_fence(
    cx: GrabContext<'_>,
    product_id: i64,
    token: i64,
) -> Result<Option<i64>, GrabError> {
    let stock: Option<i64> = sqlx::query_scalar(
        "UPDATE products SET fence_token = $2 WHERE id = $1 AND fence_token < $2 RETURNING stock",
    )
    .bind(product_id)
    .bind(token)
    .fetch_optional(&cx.deps.pool)
    .await?;
    if stock.is_some() {
        return Ok(stock);
    }
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)")
        .bind(product_id)
        .fetch_one(&cx.deps.pool)
        .await?;
    if exists {
        Ok(None)
    } else {
        Err(GrabError::NotFound)
    }
}

/// The check-and-set claim: write `value` into the row, whatever is there
/// (a random value has no order), and read the stock in the same
/// statement.
async fn claim_value(
    cx: GrabContext<'_>,
    product_id: i64,
    value: i64,
) -> Result<Option<i64>, GrabError> {
    let stock: Option<i64> =
        sqlx::query_scalar("UPDATE products SET lock_value = $2 WHERE id = $1 RETURNING stock")
            .bind(product_id)
            .bind(value)
            .fetch_optional(&cx.deps.pool)
            .await?;
    stock.map(Some).ok_or(GrabError::NotFound)
}

/// What [`run_steps`] carries besides the grab: when it began, the stock
/// the fence registration read, the lock to check before the write.
struct Steps<'g> {
    started: Instant,
    registered_stock: Option<i64>,
    check: Option<StillHeld<'g>>,
}

/// Over 80 lines on purpose: the critical section's steps in the order they run
/// (read, check, work, write, order, commit), each fault hook where it strikes.
async fn run_steps(
    conn: &mut PgConnection,
    cx: GrabContext<'_>,
    req: GrabRequest,
    spec: SectionSpec,
    steps: Steps<'_>,
    entered: &mut Option<Entered>,
) -> Result<Option<(Order, Instant)>, GrabError> {
    let Steps {
        started,
        registered_stock,
        check,
    } = steps;
    let history = &cx.deps.history;
    pause_if(cx, PauseAt::BeforeRead).await;
    if spec.row_lock == RowLock::Advisory {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(req.product_id)
            .execute(&mut *conn)
            .await?;
        *entered = history.enter(spec.strategy, req.product_id).await;
    }
    // Step 1: read (already done by the fence registration or the
    // check-and-set claim, if any).
    let (stock, version): (i64, i64) = match registered_stock {
        Some(stock) => (stock, 0),
        None => {
            let read = match spec.row_lock {
                RowLock::ForUpdate => {
                    "SELECT stock, version FROM products WHERE id = $1 FOR UPDATE"
                }
                _ => "SELECT stock, version FROM products WHERE id = $1",
            };
            sqlx::query_as(read)
                .bind(req.product_id)
                .fetch_optional(&mut *conn)
                .await?
                .ok_or(GrabError::NotFound)?
        }
    };
    if spec.row_lock == RowLock::ForUpdate {
        *entered = history.enter(spec.strategy, req.product_id).await;
    }
    let locked_at = if spec.row_lock == RowLock::None {
        started
    } else {
        Instant::now()
    };

    // Step 2: one order per user, then stock.
    refuse_repeat_buyer(conn, req).await?;
    let quantity = i64::from(req.quantity);
    if stock < quantity {
        return Err(GrabError::SoldOut);
    }

    // Step 3: the work that widens the race.
    simulated_work(cx).await;
    pause_if(cx, PauseAt::BeforeWrite).await;
    // Holding a value read, before the lock's last check and the write.
    cx.deps.freeze.at(FreezeAt::BeforeCheck);
    if let Some(still_held) = check {
        if let Err(lost) = still_held().await {
            // The holder knows it no longer holds the lock and writes
            // nothing: its section ends here, before the rollback of a
            // transaction that only read. (Ended after that rollback, a
            // refusal at the validity's last millisecond would count as an
            // overlap with the next holder whenever the rollback is slower
            // than the drift allowance: the check would be charged for the
            // time it saved.)
            history.exit(entered.take()).await;
            return Err(GrabError::Rejected(lost.into()));
        }
    }
    // Past the last check, before the write: the pause no check catches.
    cx.deps.freeze.at(FreezeAt::AfterCheck);

    // Step 4: blind write of the value read in step 1.
    let new_stock = stock - quantity;
    let written = match (spec.row_lock, spec.claim) {
        // The write carries the fence, or the random value claimed.
        (_, Some(claim)) => {
            let column = claim.column();
            sqlx::query(&format!(
                "UPDATE products SET stock = $2, updated_at = now()
                 WHERE id = $1 AND {column} = $3"
            ))
            .bind(req.product_id)
            .bind(new_stock)
            .bind(claim.value())
            .execute(&mut *conn)
            .await?
            .rows_affected()
        }
        (RowLock::Optimistic, None) => sqlx::query(
            "UPDATE products SET stock = $2, version = version + 1, updated_at = now()
             WHERE id = $1 AND version = $3",
        )
        .bind(req.product_id)
        .bind(new_stock)
        .bind(version)
        .execute(&mut *conn)
        .await?
        .rows_affected(),
        _ => sqlx::query("UPDATE products SET stock = $2, updated_at = now() WHERE id = $1")
            .bind(req.product_id)
            .bind(new_stock)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
    };
    if written == 0 {
        return Ok(None);
    }

    // Step 5: the order.
    let order = insert_order(conn, req, spec.strategy, spec.fence()).await?;
    Ok(Some((order, locked_at)))
}

/// The one-order-per-user rule: `already_purchased` when the user holds an
/// order for the product. Race-free only under the caller's lock.
pub async fn refuse_repeat_buyer(
    conn: &mut PgConnection,
    req: GrabRequest,
) -> Result<(), GrabError> {
    let already: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = $1 AND user_id = $2)",
    )
    .bind(req.product_id)
    .bind(req.user_id)
    .fetch_one(&mut *conn)
    .await?;
    if already {
        return Err(GrabError::AlreadyPurchased);
    }
    Ok(())
}

/// `INSERT INTO orders ... RETURNING id`, shared by every strategy.
pub async fn insert_order(
    conn: &mut PgConnection,
    req: GrabRequest,
    strategy: &'static str,
    fence_token: Option<i64>,
) -> Result<Order, GrabError> {
    let order_id: i64 = sqlx::query_scalar(
        "INSERT INTO orders (product_id, user_id, quantity, strategy, fence_token)
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(req.product_id)
    .bind(req.user_id)
    .bind(req.quantity)
    .bind(strategy)
    .bind(fence_token)
    .fetch_one(&mut *conn)
    .await?;
    Ok(Order {
        order_id,
        product_id: req.product_id,
        user_id: req.user_id,
        quantity: req.quantity,
        strategy: strategy.into(),
        fence_token,
    })
}
