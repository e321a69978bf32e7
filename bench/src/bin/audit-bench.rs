//! `make bench-audit`: what one Prometheus scrape costs once a million
//! orders are in the database (issue 13: under 10 ms), beside what the
//! same audit cost when it counted every order (the `GROUP BY` that
//! `GET /admin/audit?recount=true` still runs) and beside the floors of
//! the same run: an HTTP round trip to the same replica (`/health/live`)
//! and a PostgreSQL round trip (`SELECT 1`).
//!
//! Orders are loaded with `INSERT … SELECT generate_series` in chunks, so
//! they pass through the same triggers a grab's INSERT does.

use std::future::Future;
use std::time::Duration;

use seckill_bench::stats::quantile;
use seckill_bench::timing::each_ms;
use seckill_testkit::{fresh_database, AppProcess, RedisServer};
use tokio::time::Instant;

const ORDERS: i64 = 1_000_000;
/// Rows per INSERT: the row trigger's tally row gathers one version per row
/// until commit, so one huge INSERT would be quadratic (see the migration).
const CHUNK: i64 = 1_000;
const SCRAPES: usize = 200;

/// Median and p99 of `n` timed runs of `op`, in milliseconds (NaN for
/// none).
async fn time_ms<F, Fut>(n: usize, op: F) -> (f64, f64)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let ms = each_ms(n, op).await;
    let at = |q| quantile(&ms, q).unwrap_or(f64::NAN);
    (at(0.5), at(0.99))
}

/// One row of the table: what was requested, its p50 and p99 in ms.
fn line(what: &str, (p50, p99): (f64, f64)) {
    println!("{what:<58} {p50:>9.2} {p99:>9.2}");
}

/// The p50 and p99 of each request measured, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Timings {
    floor_http: (f64, f64),
    floor_pg: (f64, f64),
    scrape: (f64, f64),
    audit: (f64, f64),
    recount: (f64, f64),
}

/// The benchmark's steps in order: seed, time every request, print the table.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = AppProcess::start(&[
        ("SECKILL_DATABASE_URL", db.clone()),
        ("SECKILL_REDIS_URL", redis.url()),
        ("SECKILL_SEED_PRODUCTS", "1:1000000,2:100".into()),
        ("SECKILL_STRATEGY", "pg-for-update".into()),
    ]);
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    let orders = load_orders(&pool).await;
    println!("{:<58} {:>9} {:>9}", "request", "p50 ms", "p99 ms");
    let timings = measure(&app, &pool).await;
    print_table(orders, &timings);
}

/// [`ORDERS`] orders loaded through the triggers in chunks of [`CHUNK`],
/// then analyzed; their count, printed with the time the load took.
async fn load_orders(pool: &sqlx::PgPool) -> i64 {
    let load = Instant::now();
    for first in (0..ORDERS).step_by(CHUNK as usize) {
        sqlx::query(
            "INSERT INTO orders (product_id, user_id, quantity, strategy)
             SELECT 1, g % 950000, 1, 'pg-for-update' FROM generate_series($1::BIGINT, $2) g",
        )
        .bind(first)
        .bind(first + CHUNK - 1)
        .execute(pool)
        .await
        .expect("load orders");
    }
    sqlx::query("ANALYZE").execute(pool).await.expect("analyze");
    let (orders,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM orders")
        .fetch_one(pool)
        .await
        .expect("count");
    println!(
        "audit-bench: {orders} orders (50,000 duplicate users) loaded through the triggers in {:.1} s; \
         {SCRAPES} sequential requests each, one replica, 2 tokio workers\n",
        load.elapsed().as_secs_f64()
    );
    orders
}

/// After a warm-up, each request timed in turn: the two floors, the
/// scrape, the audit and the recount.
async fn measure(app: &AppProcess, pool: &sqlx::PgPool) -> Timings {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client");
    let get = |path: &'static str, admin: bool| {
        let mut request = http.get(format!("{}{path}", app.address));
        if admin {
            request = request.bearer_auth(seckill_app::configuration::DEMO_ADMIN_TOKEN);
        }
        async move {
            let response = request.send().await.expect("request");
            assert!(
                response.status().is_success(),
                "{path}: {}",
                response.status()
            );
            let body = response.text().await.expect("body");
            assert!(!body.is_empty());
        }
    };
    // Warm the connections and plans first.
    for _ in 0..20 {
        get("/metrics", false).await;
    }
    let floor_http = time_ms(SCRAPES, || get("/health/live", false)).await;
    let floor_pg = time_ms(SCRAPES, move || async move {
        sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .expect("select 1");
    })
    .await;
    let scrape = time_ms(SCRAPES, || get("/metrics", false)).await;
    let audit = time_ms(SCRAPES, || get("/admin/audit", true)).await;
    let recount = time_ms(10, || get("/admin/audit?recount=true", true)).await;
    Timings {
        floor_http,
        floor_pg,
        scrape,
        audit,
        recount,
    }
}

/// The table's rows, then the scrape's verdict against the 10 ms goal.
fn print_table(orders: i64, t: &Timings) {
    line(
        "floor: GET /health/live (HTTP round trip, same replica)",
        t.floor_http,
    );
    line("floor: SELECT 1 (PostgreSQL round trip)", t.floor_pg);
    line(
        "GET /metrics (audit gauges from the trigger totals)",
        t.scrape,
    );
    line("GET /admin/audit", t.audit);
    line(
        "GET /admin/audit?recount=true (GROUP BY, 10 runs)",
        t.recount,
    );
    println!(
        "\nscrape p99 at {orders} orders: {:.2} ms (goal < 10 ms: {}); \
         the recount that every scrape used to run: {:.0}× the scrape's p50",
        t.scrape.1,
        if t.scrape.1 < 10.0 { "ok" } else { "MISSED" },
        t.recount.0 / t.scrape.0
    );
}
