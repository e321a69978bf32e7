//! `pg-2pc` — two-phase commit over two PostgreSQL databases, the service
//! as coordinator.
//!
//! **Seed step:** 001's distributed transactions: *2PC* — a coordinator
//! asks every participant to prepare (the vote), then tells all of them to
//! commit. Beside it, `redis-lua-stock` is 001's *TCC* (the same split at
//! the business layer); `pg-3pc` is 001's *3PC* over the same two databases.
//!
//! Stock and orders live in two databases. The **stock side** is a second
//! database, `SECKILL_STOCK_DATABASE_URL` (a second database on the same
//! server, or another cluster), table `stock` ([`STOCK_SCHEMA`]); the
//! **order side** is the service's own database: its `orders` table, with
//! the audit's tally triggers, so `/admin/audit`, the orders route and the
//! load generator's acknowledged-order check read pg-2pc's orders exactly as
//! every other strategy's. The `products.stock` column of the order side is
//! a copy of the stock side written behind ([`Pg2pc::sync_stock_column`]:
//! [`WRITE_BEHIND`] after a committed grab, and before every audit
//! and every switch away), so the audit compares the
//! orders of one database with the stock of the other — any disagreement
//! between the two databases shows as a lost update or an undersold unit.
//!
//! A grab, the coordinator's steps:
//! 1. stock side: `BEGIN; UPDATE stock SET stock = stock - q WHERE
//!    product_id = $1 AND stock >= q` (the row lock waits at most
//!    `SECKILL_LOCK_WAIT_MS`, then `busy`); `PREPARE TRANSACTION
//!    '<gid>:stock'`;
//! 2. order side: `BEGIN`; the one-order-per-user check; `INSERT INTO
//!    orders`; `PREPARE TRANSACTION '<gid>:order'`. A side that cannot
//!    prepare votes no: both are rolled back;
//! 3. the decision, `INSERT INTO two_pc_decisions` (autocommit, durable)
//!    — the coordinator's log, skipped with `SECKILL_TWO_PC_DECISION_LOG=false`;
//! 4. `COMMIT PREPARED '<gid>:order'`, then `COMMIT PREPARED '<gid>:stock'`.
//!    The order side commits first: the stock row stays locked until the
//!    order is visible, so the next grab's one-order-per-user check sees it.
//!
//! **Recovery.** On start ([`Pg2pc::start`]) the coordinator lists the
//! transactions left prepared in `pg_prepared_xacts` — its own (the gid
//! names the instance, `SECKILL_INSTANCE_ID`), and any other coordinator's
//! prepared more than [`ORPHAN_AFTER`] ago — and settles each from its log:
//! a decision row commits both sides, none rolls them back (presumed
//! abort: no row means the coordinator never decided). A live coordinator
//! whose phase two fails (a database gone) retries it in the background
//! for [`RETRY_FOR`]. Only the transactions of its own two databases are
//! its business (`pg_prepared_xacts` lists the whole server). The default
//! instance id (`<host>-<pid>`) changes with every start: a restarted
//! coordinator then finds its old transactions as orphans, after
//! [`ORPHAN_AFTER`] — give it a stable `SECKILL_INSTANCE_ID` (the scenario
//! does). A coordinator that never returns leaves its transactions to the
//! next start of any replica.
//!
//! **Guarantee:** safe: both databases commit or neither does, as long as
//! the coordinator's decision survives it. A grab answered `201` has both
//! sides committed.
//!
//! **How it fails:** it blocks. A coordinator that dies between the phases
//! leaves both sides prepared: the stock row stays locked by a transaction
//! no session owns, every later grab of that product waits out its
//! `lock_timeout` and answers `busy`, until the coordinator comes back and
//! recovers (the `coordinator-crash` scenario; `pause_at: before-commit` and
//! `between-commits` hold it there). Without the decision log the restarted
//! coordinator can only guess: it rolls back — right when nothing had
//! committed, wrong when it died inside phase two, after the order side's
//! commit: an order whose unit was never taken (a lost update). And it is
//! slow: two prepares, a log write and two commits — five fsyncs — per grab.

use std::collections::BTreeMap;
use std::str::FromStr as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use seckill_wire::strategies::StrategyName;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgConnection, PgPool, Postgres};

use crate::configuration::Settings;
use crate::error::{Dependency, GrabError};
use crate::faults::PauseAt;
use crate::section::{insert_order, refuse_repeat_buyer, simulated_work};
use crate::strategy::{
    Deps, GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo,
};

/// Name, seed and guarantee of `pg-2pc`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::Pg2pc,
    seed:
        "001 2PC: PREPARE TRANSACTION on the stock and the order databases, the service coordinates",
    guarantee: "safe; blocks while its coordinator is down between the phases",
    safety: Safety::Safe,
    kind: Kind::NotALock,
};

/// Whether strategy `name` keeps its stock in the stock database
/// (`pg-2pc`, `pg-3pc`): a reset writes it there, an audit or a switch
/// away copies it into the column first.
pub fn uses_stock_database(name: StrategyName) -> bool {
    matches!(name, StrategyName::Pg2pc | StrategyName::Pg3pc)
}

/// The stock database's schema (`pg_2pc_stock.sql`), created on start.
pub const STOCK_SCHEMA: &str = include_str!("pg_2pc_stock.sql");

/// Every gid this strategy prepares starts so.
pub const GID_PREFIX: &str = "seckill2pc:";

/// Another coordinator's transaction still prepared after this long is an
/// orphan a starting coordinator settles (its own are settled at once).
pub const ORPHAN_AFTER: Duration = Duration::from_secs(60);

/// How long a live coordinator retries a second phase (or a rollback) that
/// failed.
pub const RETRY_FOR: Duration = Duration::from_secs(600);

/// A committed grab's stock reaches `products.stock` at most this long
/// after it (plus the copy), so the status page counts down during a run.
pub const WRITE_BEHIND: Duration = Duration::from_millis(100);

const READY: u8 = 1;
const NO_PREPARED_XACTS: u8 = 2;

/// The coordinator.
#[derive(Debug, Clone)]
pub struct Pg2pc {
    stock: Option<PgPool>,
    decision_log: bool,
    instance: String,
    /// 0 until [`Pg2pc::start`] has asked the servers, then [`READY`] or
    /// [`NO_PREPARED_XACTS`].
    state: Arc<AtomicU8>,
    /// A copy of the stock side into the column is scheduled (see
    /// [`WRITE_BEHIND`]).
    copy_pending: Arc<std::sync::atomic::AtomicBool>,
}

/// What a recovery settled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Prepared transactions committed from the decision log.
    pub committed: u64,
    /// Prepared transactions rolled back (no decision logged).
    pub rolled_back: u64,
}

impl Pg2pc {
    /// The coordinator of `settings` (the stock pool connects lazily).
    pub fn new(settings: &Settings) -> anyhow::Result<Self> {
        let stock = settings
            .stock_database_url()
            .map(|url| {
                let options = PgConnectOptions::from_str(url)?
                    .application_name("seckill-app-2pc")
                    .options([
                        ("lock_timeout", format!("{}ms", settings.lock_wait_ms)),
                        (
                            "synchronous_commit",
                            settings.synchronous_commit.as_str().to_owned(),
                        ),
                    ]);
                Ok::<_, sqlx::Error>(
                    PgPoolOptions::new()
                        // Half the main pool's size: three demo replicas'
                        // pools of both databases stay under the server's
                        // max_connections (200).
                        .max_connections((settings.database_max_connections.get() / 2).max(2))
                        .acquire_timeout(settings.database_acquire_timeout_ms.ms())
                        .test_before_acquire(false)
                        .connect_lazy_with(options),
                )
            })
            .transpose()
            .map_err(|e| anyhow::anyhow!("invalid SECKILL_STOCK_DATABASE_URL: {e}"))?;
        Ok(Self {
            stock,
            decision_log: settings.two_pc_decision_log,
            instance: settings.instance(),
            state: Arc::default(),
            copy_pending: Arc::default(),
        })
    }

    /// The stock database's pool, when one is configured.
    pub fn stock_pool(&self) -> Option<&PgPool> {
        self.stock.as_ref()
    }

    /// Create the stock table, ask both servers whether they allow prepared
    /// transactions, and recover this coordinator's in-doubt transactions.
    /// Retried by the caller until it succeeds.
    pub async fn start(&self, main: &PgPool) -> anyhow::Result<Recovered> {
        let Some(stock) = &self.stock else {
            return Ok(Recovered::default());
        };
        for pool in [main, stock] {
            let allowed: String = sqlx::query_scalar("SHOW max_prepared_transactions")
                .fetch_one(pool)
                .await?;
            if allowed.trim() == "0" {
                self.state.store(NO_PREPARED_XACTS, Ordering::Relaxed);
                tracing::warn!("pg-2pc unavailable: max_prepared_transactions is 0");
                return Ok(Recovered::default());
            }
        }
        if let Err(e) = sqlx::raw_sql(STOCK_SCHEMA).execute(stock).await {
            // Two replicas starting at once may race on CREATE TABLE.
            tracing::debug!(error = %e, "stock schema: retrying once");
            sqlx::raw_sql(STOCK_SCHEMA).execute(stock).await?;
        }
        self.state.store(READY, Ordering::Relaxed);
        let recovered = self.recover(main).await?;
        if recovered != Recovered::default() {
            tracing::warn!(
                committed = recovered.committed,
                rolled_back = recovered.rolled_back,
                "pg-2pc: in-doubt transactions recovered"
            );
        }
        Ok(recovered)
    }

    /// Settle every in-doubt transaction of this coordinator (and every
    /// orphan older than [`ORPHAN_AFTER`]) from the decision log.
    pub async fn recover(&self, main: &PgPool) -> anyhow::Result<Recovered> {
        let Some(stock) = &self.stock else {
            return Ok(Recovered::default());
        };
        let mine = format!("{GID_PREFIX}{}:%", self.instance);
        // Base gid → its sides still prepared, each in its own database
        // (pg_prepared_xacts lists the whole server: other databases, other
        // labs with the same instance ids, are not this coordinator's).
        let mut in_doubt: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pool in [main, stock] {
            let gids: Vec<String> = sqlx::query_scalar(
                "SELECT gid FROM pg_prepared_xacts
                 WHERE database = current_database() AND gid LIKE $1
                   AND (gid LIKE $2 OR prepared < now() - make_interval(secs => $3))",
            )
            .bind(format!("{GID_PREFIX}%"))
            .bind(&mine)
            .bind(ORPHAN_AFTER.as_secs_f64())
            .fetch_all(pool)
            .await?;
            for gid in gids {
                if let Some((base, _side)) = gid.rsplit_once(':') {
                    let sides = in_doubt.entry(base.to_owned()).or_default();
                    if !sides.contains(&gid) {
                        sides.push(gid);
                    }
                }
            }
        }
        let mut recovered = Recovered::default();
        for (base, sides) in &in_doubt {
            let decided: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM two_pc_decisions WHERE gid = $1)")
                    .bind(base)
                    .fetch_one(main)
                    .await?;
            for gid in sides {
                let pool = if gid.ends_with(":stock") { stock } else { main };
                finish_prepared(pool, gid, decided).await?;
                if decided {
                    recovered.committed += 1;
                } else {
                    recovered.rolled_back += 1;
                }
                tracing::warn!(
                    gid,
                    outcome = if decided { "committed" } else { "rolled back" },
                    "pg-2pc recovery: {}",
                    if decided {
                        "the decision log says commit"
                    } else {
                        "no decision logged: presumed abort"
                    }
                );
            }
        }
        // Every decision of this coordinator is settled now; old ones of
        // others too.
        sqlx::query(
            "DELETE FROM two_pc_decisions WHERE coordinator = $1 OR decided_at < now() - interval '1 day'",
        )
        .bind(&self.instance)
        .execute(main)
        .await?;
        Ok(recovered)
    }

    /// Load the stock side from the order side's `products` (all products,
    /// or one): what a switch to `pg-2pc` does.
    pub async fn load_stock(&self, main: &PgPool, only: Option<i64>) -> Result<(), GrabError> {
        if self.stock_side().is_none() {
            return Ok(());
        }
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT id, stock FROM products WHERE $1::BIGINT IS NULL OR id = $1 ORDER BY id",
        )
        .bind(only)
        .fetch_all(main)
        .await?;
        for (id, units) in rows {
            self.reset_stock(id, units).await?;
        }
        Ok(())
    }

    /// Set product `id`'s stock side to `units` (a reset). A reset writes
    /// this side first, then the product row: a copy written behind between
    /// the two writes the new stock into the row, where a copy between a
    /// row reset and a load of the stock side *from* the row put the old
    /// stock back on both sides (found by `coordinator-crash`'s rounds: a
    /// round's units counted twice, about one time in ten).
    pub async fn reset_stock(&self, id: i64, units: i64) -> Result<(), GrabError> {
        let Some(stock) = self.stock_side() else {
            return Ok(());
        };
        sqlx::raw_sql(STOCK_SCHEMA).execute(stock).await?;
        sqlx::query(
            "INSERT INTO stock (product_id, stock) VALUES ($1, $2)
             ON CONFLICT (product_id) DO UPDATE SET stock = EXCLUDED.stock",
        )
        .bind(id)
        .bind(units)
        .execute(stock)
        .await?;
        Ok(())
    }

    /// The stock database, when configured and able to prepare.
    fn stock_side(&self) -> Option<&PgPool> {
        self.stock
            .as_ref()
            .filter(|_| self.state.load(Ordering::Relaxed) != NO_PREPARED_XACTS)
    }

    /// Copy the stock side into the order side's `products.stock` column
    /// (written behind): after committed grabs, before an audit reads it,
    /// before a switch leaves `pg-2pc`. Each copy holds the product row
    /// (`FOR NO KEY UPDATE`: the orders' foreign-key locks, prepared ones
    /// too, do not block it) while it reads the stock side, so of two
    /// copies the later one reads the newer value and writes last.
    pub async fn sync_stock_column(&self, main: &PgPool) -> Result<(), GrabError> {
        let Some(stock) = &self.stock else {
            return Ok(());
        };
        let ids: Vec<i64> = sqlx::query_scalar("SELECT product_id FROM stock ORDER BY product_id")
            .fetch_all(stock)
            .await?;
        for id in ids {
            let mut tx = main.begin().await?;
            sqlx::query("SELECT 1 FROM products WHERE id = $1 FOR NO KEY UPDATE")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            let units: Option<i64> =
                sqlx::query_scalar("SELECT stock FROM stock WHERE product_id = $1")
                    .bind(id)
                    .fetch_optional(stock)
                    .await?;
            if let Some(units) = units {
                sqlx::query(
                    "UPDATE products SET stock = $2, updated_at = now() WHERE id = $1 AND stock <> $2",
                )
                .bind(id)
                .bind(units)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        }
        Ok(())
    }

    /// Copy the stock side into the column [`WRITE_BEHIND`] from now, in
    /// the background, unless a copy is scheduled already (it will see
    /// this grab: it reads after its wait).
    pub(crate) fn write_behind(&self, main: &PgPool) {
        if self.copy_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let (this, main) = (self.clone(), main.clone());
        tokio::spawn(async move {
            tokio::time::sleep(WRITE_BEHIND).await;
            this.copy_pending.store(false, Ordering::Release);
            if let Err(e) = this.sync_stock_column(&main).await {
                tracing::debug!(error = %e, "pg-2pc: stock column not written behind");
            }
        });
    }

    /// Over 80 lines on purpose: the two phases, the logged decision and every
    /// way out of them read in one place, as the protocol is taught.
    async fn coordinate(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        let stock = self.stock.as_ref().ok_or_else(|| GrabError::Unavailable {
            dependency: Dependency::Postgres,
            detail: "no stock database (SECKILL_STOCK_DATABASE_URL)".into(),
        })?;
        let main = &cx.deps.pool;
        let base = format!(
            "{GID_PREFIX}{}:{}",
            self.instance,
            uuid::Uuid::new_v4().simple()
        );
        let (gid_stock, gid_order) = (format!("{base}:stock"), format!("{base}:order"));

        // Phase one, the stock side: decrement and prepare. The grab keeps
        // its connection to each database to the end: its second phase
        // must never wait for a pooled connection held by a grab that
        // waits for the row it holds.
        pause_at(cx, PauseAt::BeforeRead).await;
        // Every stock connection open and taken, by grabs waiting for the
        // row: a pool starved by its own waiters, not a dead server.
        let mut sconn = crate::db::acquire_or_starved(stock).await?;
        match prepare_stock(&mut sconn, req, &gid_stock).await {
            Ok(()) => {}
            Err(GrabError::NotFound) => {
                // A product the stock side never saw: load it, try once more.
                self.load_stock(main, Some(req.product_id)).await?;
                prepare_stock(&mut sconn, req, &gid_stock).await?;
            }
            Err(e) => return Err(e),
        }
        pause_at(cx, PauseAt::BeforeWrite).await;

        // Phase one, the order side: the buyer check, the order, prepare.
        let mut mconn = match main.acquire().await {
            Ok(conn) => conn,
            Err(e) => {
                abort(&mut sconn, stock, &gid_stock).await;
                return Err(e.into());
            }
        };
        let order = match prepare_order(&mut mconn, req, &gid_order).await {
            Ok(order) => order,
            Err(e) => {
                // A no vote: both sides roll back.
                abort(&mut sconn, stock, &gid_stock).await;
                abort(&mut mconn, main, &gid_order).await;
                return Err(e);
            }
        };

        // The decision, durable before phase two.
        if self.decision_log {
            let logged =
                sqlx::query("INSERT INTO two_pc_decisions (gid, coordinator) VALUES ($1, $2)")
                    .bind(&base)
                    .bind(&self.instance)
                    .execute(&mut *mconn)
                    .await;
            if let Err(e) = logged {
                abort(&mut sconn, stock, &gid_stock).await;
                abort(&mut mconn, main, &gid_order).await;
                return Err(e.into());
            }
        }
        pause_at(cx, PauseAt::BeforeCommit).await;

        // Phase two: the order side first (the stock row stays locked until
        // the order is visible), then the stock side.
        if let Err(e) = finish_prepared(&mut *mconn, &gid_order, true).await {
            commit_later(main.clone(), gid_order);
            commit_later(stock.clone(), gid_stock);
            return Err(e.into());
        }
        pause_at(cx, PauseAt::BetweenCommits).await;
        if let Err(e) = finish_prepared(&mut *sconn, &gid_stock, true).await {
            commit_later(stock.clone(), gid_stock);
            return Err(e.into());
        }
        drop(sconn);
        drop(mconn);
        self.write_behind(main);
        Ok(order)
    }
}

/// The pause of this grab, when it takes one at `at`.
pub(crate) async fn pause_at(cx: GrabContext<'_>, at: PauseAt) {
    if cx.pause && cx.faults.pause_at == at && cx.faults.pause_ms > 0 {
        tokio::time::sleep(Duration::from_millis(cx.faults.pause_ms)).await;
    }
}

/// `BEGIN`, run `body`, `PREPARE TRANSACTION gid`; on any error the
/// transaction is rolled back — or, when even that fails, the connection
/// is closed, never returned to the pool inside a transaction.
pub(crate) async fn in_prepared<T>(
    conn: &mut PoolConnection<Postgres>,
    gid: &str,
    body: impl for<'c> FnOnce(
        &'c mut PgConnection,
    ) -> futures::future::BoxFuture<'c, Result<T, GrabError>>,
) -> Result<T, GrabError> {
    sqlx::query("BEGIN").execute(&mut **conn).await?;
    let result = match body(conn).await {
        Ok(value) => sqlx::query(&format!("PREPARE TRANSACTION '{gid}'"))
            .execute(&mut **conn)
            .await
            .map(|_| value)
            .map_err(GrabError::from),
        Err(e) => Err(e),
    };
    if result.is_err() && sqlx::query("ROLLBACK").execute(&mut **conn).await.is_err() {
        conn.close_on_drop();
    }
    result
}

async fn prepare_stock(
    conn: &mut PoolConnection<Postgres>,
    req: GrabRequest,
    gid: &str,
) -> Result<(), GrabError> {
    in_prepared(conn, gid, |conn| Box::pin(decrement(conn, req))).await
}

pub(crate) async fn decrement(conn: &mut PgConnection, req: GrabRequest) -> Result<(), GrabError> {
    let left: Option<i64> = sqlx::query_scalar(
        "UPDATE stock SET stock = stock - $2 WHERE product_id = $1 AND stock >= $2 RETURNING stock",
    )
    .bind(req.product_id)
    .bind(i64::from(req.quantity))
    .fetch_optional(&mut *conn)
    .await?;
    if left.is_none() {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM stock WHERE product_id = $1)")
                .bind(req.product_id)
                .fetch_one(&mut *conn)
                .await?;
        return Err(if exists {
            GrabError::SoldOut
        } else {
            GrabError::NotFound
        });
    }
    Ok(())
}

async fn prepare_order(
    conn: &mut PoolConnection<Postgres>,
    req: GrabRequest,
    gid: &str,
) -> Result<Order, GrabError> {
    in_prepared(conn, gid, |conn| {
        Box::pin(async move {
            refuse_repeat_buyer(conn, req).await?;
            insert_order(conn, req, INFO.name.as_str(), None).await
        })
    })
    .await
}

/// `COMMIT PREPARED` or `ROLLBACK PREPARED` `gid` (on a pool, or on a
/// connection outside any transaction); a transaction that is no longer
/// prepared (settled already) is no error.
pub async fn finish_prepared<'e, E>(on: E, gid: &str, commit: bool) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = Postgres>,
{
    let verb = if commit { "COMMIT" } else { "ROLLBACK" };
    match sqlx::query(&format!("{verb} PREPARED '{gid}'"))
        .execute(on)
        .await
    {
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42704") => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Roll back one side after a no vote (prepared or not: a side that never
/// got prepared was rolled back already), on the grab's own connection;
/// retried in the background through the pool when that fails.
async fn abort(conn: &mut PoolConnection<Postgres>, pool: &PgPool, gid: &str) {
    if let Err(e) = finish_prepared(&mut **conn, gid, false).await {
        conn.close_on_drop();
        tracing::warn!(gid, error = %e, "pg-2pc: rollback failed; retrying in the background");
        settle_later(pool.clone(), gid.to_owned(), false);
    }
}

fn commit_later(pool: PgPool, gid: String) {
    settle_later(pool, gid, true);
}

/// Retry a phase-two step (or a rollback) every second for [`RETRY_FOR`]
/// (also `pg-3pc`'s participants', whose commit or rollback failed).
pub(crate) fn settle_later(pool: PgPool, gid: String, commit: bool) {
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + RETRY_FOR;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match finish_prepared(&pool, &gid, commit).await {
                Ok(()) => {
                    tracing::info!(gid, commit, "pg-2pc: in-doubt side settled");
                    return;
                }
                Err(e) => tracing::debug!(gid, error = %e, "pg-2pc: settle retry failed"),
            }
        }
        tracing::error!(
            gid,
            commit,
            "pg-2pc: side left in doubt; a restart recovers it"
        );
    });
}

#[async_trait]
impl Strategy for Pg2pc {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        simulated_work(cx).await;
        self.coordinate(cx, req).await
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        if self.stock.is_none() {
            return Some("no stock database configured: set SECKILL_STOCK_DATABASE_URL");
        }
        (self.state.load(Ordering::Relaxed) == NO_PREPARED_XACTS).then_some(
            "max_prepared_transactions is 0 on PostgreSQL: PREPARE TRANSACTION is refused (set it above 0 and restart the server)",
        )
    }

    async fn activate(&self, deps: &Deps) -> Result<(), GrabError> {
        self.load_stock(&deps.pool, None).await
    }
}
