//! PostgreSQL: the pool, migrations, seed products, and the audit — the
//! ground truth every report and dashboard is checked against.
//!
//! The pool sets two session settings on every connection:
//! - `lock_timeout` = `SECKILL_LOCK_WAIT_MS`, so `FOR UPDATE`, advisory locks
//!   and row waits are bounded by the same budget as the Redis locks
//!   (PostgreSQL answers 55P03, which becomes `busy`);
//! - `synchronous_commit` = `SECKILL_SYNCHRONOUS_COMMIT`, so a report can say
//!   whether the commit's fsync was part of what it measured.

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::RwLock;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use crate::configuration::{SeedProduct, Settings};
use crate::error::GrabError;

/// Build the pool. Connections are opened lazily, so the service starts
/// (and answers 503) even while the database is still coming up.
pub fn pool(settings: &Settings) -> Result<PgPool, sqlx::Error> {
    let options = PgConnectOptions::from_str(&settings.database_url)?
        .application_name("seckill-app")
        .options([
            ("lock_timeout", format!("{}ms", settings.lock_wait_ms)),
            (
                "synchronous_commit",
                settings.synchronous_commit.as_str().to_owned(),
            ),
        ]);
    Ok(PgPoolOptions::new()
        .max_connections(settings.database_max_connections.get())
        .acquire_timeout(settings.database_acquire_timeout_ms.ms())
        // A ping before every checkout is a round trip on the hot path; a
        // dead connection fails its first statement instead and is dropped.
        .test_before_acquire(false)
        .connect_lazy_with(options))
}

/// Connections of the readers' own pool.
pub const READ_POOL_CONNECTIONS: u32 = 3;

/// The readers' pool: the status page, `/metrics`, `/health/ready` and the
/// audit. Under `pg-for-update` every grab holds a connection of the main
/// pool while it waits for the row; the pages people watch must not wait
/// behind them. Plain reads take no row lock, so they never queue.
pub fn read_pool(settings: &Settings) -> Result<PgPool, sqlx::Error> {
    let options = PgConnectOptions::from_str(&settings.database_url)?
        .application_name("seckill-app-read")
        .options([("statement_timeout", "2s")]);
    Ok(PgPoolOptions::new()
        .max_connections(READ_POOL_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(1))
        .test_before_acquire(false)
        .connect_lazy_with(options))
}

/// Whether every connection `pool` may open is open and taken: its size is
/// at the maximum and none is idle. Read right after a pool timeout, this
/// is what a pool starved by its own users looks like (a server that does
/// not answer can look the same — connections being opened count in the
/// size — so [`ServerWitness`] asks the server too).
pub fn pool_exhausted(pool: &PgPool) -> bool {
    pool.size() >= pool.options().get_max_connections() && pool.num_idle() == 0
}

/// A pooled connection for a grab that may wait for a row: a timeout
/// with every connection open and taken is a pool starved by grabs
/// waiting for that row, not a dead server ([`GrabError::PoolStarved`],
/// answered busy); any other failure is the database's.
pub async fn acquire_or_starved(pool: &PgPool) -> Result<PoolConnection<Postgres>, GrabError> {
    match pool.acquire().await {
        Ok(conn) => Ok(conn),
        Err(sqlx::Error::PoolTimedOut) if pool_exhausted(pool) => Err(GrabError::PoolStarved),
        Err(e) => Err(e.into()),
    }
}

/// How long [`ServerWitness`] waits for the server's answer.
pub const WITNESS_TIMEOUT: Duration = Duration::from_millis(500);

/// How long one verdict of [`ServerWitness`] stands: a burst of pool
/// timeouts asks the server once, not once each.
pub const WITNESS_FRESH: Duration = Duration::from_millis(250);

/// Whether the PostgreSQL server answers, asked through another pool than
/// the starved one (the readers' pool): a pool timeout while the server
/// answers is contention, not an outage.
#[derive(Debug, Default)]
pub struct ServerWitness {
    last: std::sync::Mutex<Option<(tokio::time::Instant, bool)>>,
}

impl ServerWitness {
    /// Whether the server answered `SELECT 1` on `pool` within
    /// [`WITNESS_TIMEOUT`] (a verdict younger than [`WITNESS_FRESH`] is
    /// reused).
    pub async fn server_answers(&self, pool: &PgPool) -> bool {
        let fresh = *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, answered)) = fresh.filter(|(at, _)| at.elapsed() < WITNESS_FRESH) {
            tracing::trace!(?at, answered, "server witness: fresh verdict reused");
            return answered;
        }
        let answered = tokio::time::timeout(WITNESS_TIMEOUT, sqlx::query("SELECT 1").execute(pool))
            .await
            .is_ok_and(|result| result.is_ok());
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((tokio::time::Instant::now(), answered));
        answered
    }
}

/// Apply the embedded migrations (concurrent replicas serialise on
/// sqlx's advisory lock).
pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    sqlx::migrate!("../migrations").run(pool).await
}

/// Create the seed products that do not exist yet; existing ones keep
/// their stock, so a restarted replica never refills a running sale.
pub async fn seed(pool: &PgPool, products: &[SeedProduct]) -> Result<(), sqlx::Error> {
    for p in products {
        sqlx::query(
            "INSERT INTO products (id, name, stock, initial_stock) VALUES ($1, $2, $3, $3)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(p.id)
        .bind(format!("product {}", p.id))
        .bind(p.stock)
        .execute(pool)
        .await?;
    }
    Ok(())
}

/// The ids of the products that exist, as far as this replica has seen:
/// filled from the database at start, and grown by every id a grab asked
/// for that the database then had. A grab of an id in the set goes on with
/// no database round trip; an id not in it is looked up once in
/// PostgreSQL (a product created after the fill — seeded by another
/// replica, or by `POST /admin/products/{id}/reset` on any replica — is
/// found then and kept). An id the database does not have is answered
/// `404` before any lock is taken and is *not* remembered, so the set holds
/// only products that exist: asking for millions of unknown ids costs a
/// primary-key lookup each, never memory. Products are never deleted by
/// the service (a reset updates or creates), so a known id stays right;
/// a row deleted by hand is still refused by the strategies' own reads.
#[derive(Debug, Default)]
pub struct KnownProducts {
    ids: RwLock<HashSet<i64>>,
}

impl KnownProducts {
    /// Learn every product in the database (at start).
    pub async fn fill(&self, pool: &PgPool) -> Result<(), sqlx::Error> {
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM products")
            .fetch_all(pool)
            .await?;
        self.ids
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(ids);
        Ok(())
    }

    /// Whether `id` is known to exist, without asking the database.
    pub fn contains(&self, id: i64) -> bool {
        self.ids
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&id)
    }

    /// Whether product `id` exists: from the set, else from the database
    /// (and then remembered when it does).
    pub async fn exists(&self, pool: &PgPool, id: i64) -> Result<bool, sqlx::Error> {
        if self.contains(id) {
            return Ok(true);
        }
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)")
                .bind(id)
                .fetch_one(pool)
                .await?;
        if exists {
            self.ids
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(id);
        }
        Ok(exists)
    }

    /// How many product ids are known (never more than the products table
    /// holds).
    pub fn len(&self) -> usize {
        self.ids
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether no product id is known yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A product as the API shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProductRow {
    /// Product id.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// Stock column as stored.
    pub stock: i64,
    /// Stock at the last reset.
    pub initial_stock: i64,
}

/// One product, if it exists.
pub async fn product(pool: &PgPool, id: i64) -> Result<Option<ProductRow>, sqlx::Error> {
    sqlx::query_as("SELECT id, name, stock, initial_stock FROM products WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Name of a product's row in `distributed_locks`, the lock of
/// `pg-lock-table` (here so [`reset_product`] can clear it).
pub fn lock_row_name(product_id: i64) -> String {
    format!("product:{product_id}")
}

/// Reset one product to `stock`: creates it when missing, deletes its
/// orders, its `pg-lock-table` row, clears version and fencing token — in
/// one transaction.
pub async fn reset_product(pool: &PgPool, id: i64, stock: i64) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM orders WHERE product_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM distributed_locks WHERE name = $1")
        .bind(lock_row_name(id))
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO products (id, name, stock, initial_stock) VALUES ($1, $2, $3, $3)
         ON CONFLICT (id) DO UPDATE
         SET stock = $3, initial_stock = $3, version = 0, fence_token = 0, lock_value = NULL, updated_at = now()",
    )
    .bind(id)
    .bind(format!("product {id}"))
    .bind(stock)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// The ground truth of one product (the audit of docs/api.md): a wire type,
/// shared with the load generator (`GET /admin/audit`).
pub use seckill_wire::audit::AuditRow;
use seckill_wire::damage::Damage;

/// `row` judged against `stock` read elsewhere — the Redis stock of
/// `redis-lua-stock`, whose column is written behind.
pub fn with_stock(row: &AuditRow, stock: i64) -> AuditRow {
    judge(
        row.product_id,
        row.initial_stock,
        stock,
        row.orders,
        row.ordered_units,
        row.damage.duplicates,
    )
}

/// The row of these counts, with oversold, lost updates, undersold and
/// negative stock derived from them (the audit of docs/api.md).
fn judge(
    product_id: i64,
    initial_stock: i64,
    stock: i64,
    orders: i64,
    ordered_units: i64,
    duplicates: i64,
) -> AuditRow {
    AuditRow {
        product_id,
        initial_stock,
        stock,
        orders,
        ordered_units,
        damage: Damage::of_product(initial_stock, stock, ordered_units, duplicates),
        negative_stock: stock < 0,
    }
}

/// How the audit counts orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Count {
    /// From the totals the `orders` triggers keep (migration
    /// `audit_tally`): a few rows per product, whatever the number of
    /// orders. What every scrape, status page and audit uses.
    #[default]
    Tally,
    /// A `GROUP BY` over every order: the check that the totals are right
    /// (`GET /admin/audit?recount=true`), at a scan of the whole table.
    Recount,
}

impl Count {
    /// As the audit answer names it (`counted_by`).
    pub fn as_str(self) -> &'static str {
        match self {
            Count::Tally => "tally",
            Count::Recount => "recount",
        }
    }
}

/// The audit of every product, by id. Products and counts come from one
/// statement, so from one snapshot.
pub async fn audit(pool: &PgPool, count: Count) -> Result<Vec<AuditRow>, sqlx::Error> {
    let sql = match count {
        Count::Tally => {
            "SELECT p.id, p.initial_stock, p.stock,
                    COALESCE(SUM(t.orders), 0)::BIGINT, COALESCE(SUM(t.units), 0)::BIGINT,
                    COALESCE(SUM(t.duplicates), 0)::BIGINT
             FROM products p LEFT JOIN order_tally t ON t.product_id = p.id
             GROUP BY p.id ORDER BY p.id"
        }
        Count::Recount => {
            "WITH per_user AS (
                 SELECT product_id, user_id, COUNT(*) AS n, SUM(quantity) AS units
                 FROM orders GROUP BY product_id, user_id
             ), per_product AS (
                 SELECT product_id,
                        SUM(n)::BIGINT AS orders,
                        SUM(units)::BIGINT AS units,
                        COUNT(*) FILTER (WHERE n > 1)::BIGINT AS duplicates
                 FROM per_user GROUP BY product_id
             )
             SELECT p.id, p.initial_stock, p.stock,
                    COALESCE(pp.orders, 0), COALESCE(pp.units, 0), COALESCE(pp.duplicates, 0)
             FROM products p LEFT JOIN per_product pp ON pp.product_id = p.id
             ORDER BY p.id"
        }
    };
    let rows: Vec<(i64, i64, i64, i64, i64, i64)> = sqlx::query_as(sql).fetch_all(pool).await?;
    Ok(rows
        .into_iter()
        .map(|(id, initial, stock, orders, units, duplicates)| {
            judge(id, initial, stock, orders, units, duplicates)
        })
        .collect())
}
