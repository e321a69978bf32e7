//! 150 buyers, 50 units, a few ms of work inside the critical section, all
//! at once. `none` must lose updates or oversell; every lock must sell
//! exactly 50 with no duplicates; across two replicas `local-mutex` breaks
//! and `set-nx-px-token` holds.

use serde_json::Value;

use crate::harness::{
    fresh_database, grab_once_each, hammer, mysql_test_url, AppOptions, EtcdServer, Outcomes,
    RedisServer, TestApp, ZkServer,
};

const STOCK: i64 = 50;
const BUYERS: i64 = 150;
const WORK_DELAY_MS: u64 = 5;

fn violations(audit: &Value) -> i64 {
    let field = |k: &str| {
        audit[k]
            .as_i64()
            .unwrap_or_else(|| panic!("{k} in {audit}"))
    };
    field("oversold") + field("lost_updates") + field("undersold") + field("duplicates")
}

async fn run_one_replica(strategy: &'static str) -> (Value, Outcomes) {
    let redis = RedisServer::start();
    // Redlock gets five nodes of its own; the others ignore them.
    let nodes: Vec<RedisServer> = if strategy == "redlock" {
        (0..5).map(|_| RedisServer::start()).collect()
    } else {
        Vec::new()
    };
    // The coordination services: a server of the test's own (MariaDB is
    // the machine's).
    let etcd = (strategy == "etcd-lease").then(EtcdServer::start);
    let zk = (strategy == "zk-ephemeral-seq").then(ZkServer::start);
    let db = fresh_database().await;
    let mut options = AppOptions::new(&db, &redis.url())
        .strategy(strategy)
        .work_delay_ms(WORK_DELAY_MS);
    options.redlock_urls = nodes.iter().map(RedisServer::url).collect();
    options.etcd_urls = etcd.iter().map(EtcdServer::url).collect();
    options.zookeeper_url = zk.as_ref().map(ZkServer::url);
    options.mysql_url = (strategy == "mysql-get-lock").then(mysql_test_url);
    let app = TestApp::spawn(options).await;
    app.reset(1, STOCK).await;
    let outcomes = hammer(&[&app], 1, 1, BUYERS).await;
    let audit = app.audit(1).await;
    app.stop().await;
    (audit, outcomes)
}

fn assert_exact(strategy: &str, audit: &Value, outcomes: &Outcomes) {
    let context = format!("{strategy}: audit {audit}, outcomes {outcomes:?}");
    assert_eq!(audit["orders"], STOCK, "{context}");
    assert_eq!(audit["ordered_units"], STOCK, "{context}");
    assert_eq!(audit["stock"], 0, "{context}");
    assert_eq!(audit["oversold"], 0, "{context}");
    assert_eq!(audit["lost_updates"], 0, "{context}");
    assert_eq!(audit["duplicates"], 0, "{context}");
    assert_eq!(audit["negative_stock"], false, "{context}");
    assert_eq!(
        outcomes.get("201").copied().unwrap_or(0),
        STOCK as u64,
        "{context}"
    );
    assert_eq!(
        outcomes.get("409 sold_out").copied().unwrap_or(0),
        (BUYERS - STOCK) as u64,
        "{context}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_loses_updates_under_contention() {
    let (audit, outcomes) = run_one_replica("none").await;
    eprintln!("none: {audit} {outcomes:?}");
    assert!(
        audit["lost_updates"].as_i64().unwrap_or(0) > 0
            || audit["oversold"].as_i64().unwrap_or(0) > 0,
        "no lock must show lost updates or oversold units: {audit} {outcomes:?}"
    );
    // The lost updates are real: more orders than the stock column lost.
    let orders = audit["ordered_units"].as_i64().expect("units");
    let sold_per_stock = STOCK - audit["stock"].as_i64().expect("stock");
    assert!(orders > sold_per_stock, "{audit}");
}

macro_rules! exact_under_contention {
    ($($test:ident => $strategy:literal),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let (audit, outcomes) = run_one_replica($strategy).await;
            assert_exact($strategy, &audit, &outcomes);
        }
    )*};
}

exact_under_contention! {
    local_mutex_sells_exactly_the_stock_on_one_replica => "local-mutex",
    set_nx_px_token_sells_exactly_the_stock => "set-nx-px-token",
    pg_for_update_sells_exactly_the_stock => "pg-for-update",
    pg_optimistic_sells_exactly_the_stock => "pg-optimistic",
    pg_advisory_sells_exactly_the_stock => "pg-advisory",
    pg_atomic_sells_exactly_the_stock => "pg-atomic",
    redis_lua_stock_sells_exactly_the_stock => "redis-lua-stock",
    setnx_sells_exactly_the_stock => "setnx",
    setnx_expire_sells_exactly_the_stock => "setnx-expire",
    setnx_expire_lua_sells_exactly_the_stock => "setnx-expire-lua",
    setnx_getset_sells_exactly_the_stock => "setnx-getset",
    set_nx_px_sells_exactly_the_stock => "set-nx-px",
    set_nx_px_check_del_sells_exactly_the_stock => "set-nx-px-check-del",
    watchdog_sells_exactly_the_stock => "watchdog",
    redlock_sells_exactly_the_stock => "redlock",
    fenced_sells_exactly_the_stock => "fenced",
    pg_lock_table_sells_exactly_the_stock => "pg-lock-table",
    mysql_get_lock_sells_exactly_the_stock => "mysql-get-lock",
    etcd_lease_sells_exactly_the_stock => "etcd-lease",
    zk_ephemeral_seq_sells_exactly_the_stock => "zk-ephemeral-seq",
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_past_the_ttl_breaks_the_token_lock_but_fencing_keeps_the_stock_exact() {
    // 100 ms TTL, 250 ms of work: every holder outlives its lock.
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let mut options = AppOptions::new(&db, &redis.url())
        .strategy("set-nx-px-token")
        .work_delay_ms(250);
    options.lock_ttl_ms = 100;
    let app = TestApp::spawn(options).await;
    app.reset(1, 10).await;
    let outcomes = hammer(&[&app], 1, 1, 30).await;
    let audit = app.audit(1).await;
    eprintln!("set-nx-px-token past its TTL: {audit} {outcomes:?}");
    assert!(
        violations(&audit) > 0,
        "the token lock alone loses updates: {audit}"
    );

    app.switch("fenced").await;
    app.reset(1, 10).await;
    let outcomes = hammer(&[&app], 1, 100, 30).await;
    let audit = app.audit(1).await;
    eprintln!("fenced past its TTL: {audit} {outcomes:?}");
    assert_eq!(
        violations(&audit),
        0,
        "fencing keeps the stock exact: {audit} {outcomes:?}"
    );
    assert_eq!(
        audit["ordered_units"].as_i64().expect("units"),
        10 - audit["stock"].as_i64().expect("stock"),
        "{audit}"
    );
    let rejected = outcomes.get("409 rejected").copied().unwrap_or(0);
    assert!(
        rejected > 0,
        "stale holders were rejected by the database: {outcomes:?}"
    );
    let metrics = &app.state.deps.metrics;
    assert_eq!(
        metrics
            .fence_rejections
            .with_label_values(&["fenced"])
            .get(),
        rejected,
        "every rejection is counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_break_local_mutex_but_not_the_redis_lock() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let options = AppOptions::new(&db, &redis.url())
        .strategy("local-mutex")
        .work_delay_ms(WORK_DELAY_MS);
    let a = TestApp::spawn(options.clone()).await;
    let b = TestApp::spawn(options).await;

    a.reset(1, STOCK).await;
    let outcomes = hammer(&[&a, &b], 1, 1, BUYERS).await;
    let audit = a.audit(1).await;
    eprintln!("local-mutex x2: {audit} {outcomes:?}");
    assert!(
        violations(&audit) > 0,
        "two replicas with in-process mutexes must overlap: {audit} {outcomes:?}"
    );

    // The switch made on one replica reaches the other through Redis.
    a.switch("set-nx-px-token").await;
    seckill_testkit::eventually(
        "replica b follows the switch",
        std::time::Duration::from_secs(2),
        || async {
            let (_, product) = b.get("/api/v1/products/1").await;
            let seen = product["strategy"].as_str().unwrap_or("").to_owned();
            if seen == "set-nx-px-token" {
                Ok(())
            } else {
                Err(seen)
            }
        },
    )
    .await;

    a.reset(1, STOCK).await;
    let outcomes = hammer(&[&a, &b], 1, 1_000, BUYERS).await;
    let audit = b.audit(1).await;
    assert_exact("set-nx-px-token x2", &audit, &outcomes);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_before_commit_lets_the_next_holder_read_a_stale_stock() {
    // The classic bug: the lock is released before the commit, so the next
    // holder reads the stock the previous one has not committed yet.
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(
        AppOptions::new(&db, &redis.url())
            .strategy("set-nx-px-token")
            .work_delay_ms(0),
    )
    .await;
    app.reset(1, STOCK).await;
    app.set_faults(serde_json::json!({"unlock_before_commit": true}))
        .await;
    let outcomes = hammer(&[&app], 1, 1, BUYERS).await;
    let audit = app.audit(1).await;
    eprintln!("unlock-before-commit: {audit} {outcomes:?}");
    assert!(
        violations(&audit) > 0,
        "releasing before commit must lose updates under contention: {audit} {outcomes:?}"
    );
}

/// `redis-lua-stock` never touches the hot row in a grab: the stock column
/// is written behind from Redis. It converges without anyone asking, and a
/// Redis that lost its keys is reloaded from what the orders prove was sold
/// (the lagging column can never hand stock out twice).
#[tokio::test]
async fn redis_lua_stock_writes_the_stock_column_behind() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url()).strategy("redis-lua-stock")).await;
    app.reset(1, STOCK).await;
    let outcomes = hammer(&[&app], 1, 1, BUYERS).await;
    assert_eq!(
        outcomes.get("201").copied(),
        Some(STOCK as u64),
        "{outcomes:?}"
    );

    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    let column = || async {
        sqlx::query_scalar::<_, i64>("SELECT stock::BIGINT FROM products WHERE id = 1")
            .fetch_one(&pool)
            .await
            .expect("stock")
    };
    // Written behind within WRITE_BEHIND (100 ms); no audit call in between.
    seckill_testkit::eventually(
        "the column catches up",
        std::time::Duration::from_secs(5),
        || async {
            match column().await {
                0 => Ok(()),
                stock => Err(stock),
            }
        },
    )
    .await;

    // Redis loses everything, and the column is made to lag on purpose.
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut redis.conn())
        .expect("flushall");
    sqlx::query("UPDATE products SET stock = 30 WHERE id = 1")
        .execute(&pool)
        .await
        .expect("lagging column");
    let outcomes = hammer(&[&app], 1, 10_000, 20).await;
    assert_eq!(
        outcomes.get("409 sold_out").copied(),
        Some(20),
        "{outcomes:?}"
    );
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], STOCK, "{audit}");
    assert_eq!(audit["oversold"], 0, "{audit}");

    // Straight from a sale to the next strategy: the copies still pending
    // from the last redis-lua-stock orders must not overwrite the column
    // the next strategy decrements.
    app.reset(1, STOCK).await;
    let _ = hammer(&[&app], 1, 20_000, 10).await;
    app.switch("pg-atomic").await;
    app.reset(1, STOCK).await;
    let outcomes = hammer(&[&app], 1, 30_000, 10).await;
    assert_eq!(outcomes.get("201").copied(), Some(10), "{outcomes:?}");
    // A fixed wait is the point: the copies the last redis-lua-stock orders
    // scheduled run WRITE_BEHIND after them and must write nothing. No
    // state shows a copy that wrote nothing; four times its delay lets
    // every one of them run before the audit reads the column.
    tokio::time::sleep(seckill_app::lock::redis_lua_stock::WRITE_BEHIND * 4).await;
    let audit = app.audit(1).await;
    assert_eq!(audit["stock"], STOCK - 10, "{audit}");
    assert_eq!(audit["lost_updates"], 0, "{audit}");
    pool.close().await;
    app.stop().await;
}

/// The sum and count of a histogram of `/metrics` text, for one strategy.
fn histogram_sum_count(metrics: &str, name: &str, strategy: &str) -> (f64, f64) {
    let value = |suffix: &str| -> f64 {
        let prefix = format!("{name}_{suffix}{{strategy=\"{strategy}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name}_{suffix} for {strategy} in /metrics"))
    };
    (value("sum"), value("count"))
}

/// `redis-lua-stock` commits orders in batches (one multi-row `INSERT`
/// each). A batch that fails fails whole, and exactly its grabs' Redis
/// reservations are given back: the stock and the buyer set in Redis, the
/// orders and the audit all agree afterwards, and every `201` has its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_lua_stock_batches_orders_and_a_failed_batch_gives_back_exactly_its_reservations() {
    const UNITS: i64 = 1_000;
    const REFUSED_USER: i64 = 666;
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let mut options = AppOptions::new(&db, &redis.url()).strategy("redis-lua-stock");
    // One batch commits at a time: the grabs arriving meanwhile queue up.
    options.order_batch_commits = 1;
    let app = TestApp::spawn(options).await;
    app.reset(1, UNITS).await;
    // The database refuses one buyer's order: the statement holding it fails.
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    for statement in [
        "CREATE FUNCTION refuse_one_buyer() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'buyer % refused by the test', NEW.user_id; END $$",
        "CREATE TRIGGER refuse_one_buyer BEFORE INSERT ON orders FOR EACH ROW
         WHEN (NEW.user_id = 666) EXECUTE FUNCTION refuse_one_buyer()",
    ] {
        sqlx::query(statement)
            .execute(&pool)
            .await
            .expect("trigger");
    }

    let buyers = 300;
    let outcomes = hammer(&[&app], 1, REFUSED_USER - 150, buyers).await;
    let ordered = outcomes.get("201").copied().unwrap_or(0);
    let failed = outcomes.get("500 internal").copied().unwrap_or(0);
    assert_eq!(ordered + failed, buyers as u64, "{outcomes:?}");
    assert!(
        failed >= 1,
        "the refused buyer's batch must fail: {outcomes:?}"
    );

    // The database holds exactly the acknowledged orders.
    let audit = app.audit(1).await;
    let context = format!("audit {audit}, outcomes {outcomes:?}");
    assert_eq!(audit["orders"], ordered, "{context}");
    assert_eq!(audit["stock"], UNITS - ordered as i64, "{context}");
    for field in ["oversold", "lost_updates", "undersold", "duplicates"] {
        assert_eq!(audit[field], 0, "{field}: {context}");
    }
    // Redis gave back exactly the failed batches' reservations.
    let mut conn = redis.conn();
    let stock: i64 = redis::cmd("GET")
        .arg("stock:product:1")
        .query(&mut conn)
        .expect("stock");
    let buyers_left: i64 = redis::cmd("SCARD")
        .arg("buyers:product:1")
        .query(&mut conn)
        .expect("buyers");
    let reservations: i64 = redis::cmd("ZCARD")
        .arg("reservations:product:1")
        .query(&mut conn)
        .expect("reservations");
    assert_eq!(stock, UNITS - ordered as i64, "{context}");
    assert_eq!(buyers_left, ordered as i64, "{context}");
    assert_eq!(reservations, 0, "{context}");
    let refused_is_buyer: bool = redis::cmd("SISMEMBER")
        .arg("buyers:product:1")
        .arg(REFUSED_USER)
        .query(&mut conn)
        .expect("sismember");
    assert!(!refused_is_buyer, "{context}");

    // Every order went through a batch, and batches held more than one.
    let metrics = app.metrics().await;
    let (orders_in_batches, batches) =
        histogram_sum_count(&metrics, "seckill_order_batch_size", "redis-lua-stock");
    assert_eq!(orders_in_batches, buyers as f64, "{context}");
    assert!(
        batches < orders_in_batches,
        "{batches} batches for {orders_in_batches} orders"
    );
    // A grab answers how long its order waited for its batch.
    let response = app
        .client
        .post(format!("{}/api/v1/products/1/grab", app.address))
        .json(&serde_json::json!({ "user_id": 1, "quantity": 1 }))
        .send()
        .await
        .expect("grab");
    assert_eq!(response.status().as_u16(), 201);
    let timing = response
        .headers()
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(timing.starts_with("batch;dur="), "Server-Timing: {timing}");
    app.stop().await;
}

/// A pool starved by the lock's own waiters is contention, not a dead
/// database. Two pooled connections, `pg-advisory` with 2 s of work inside
/// the lock, four buyers at once: two get a connection (one holds the
/// advisory lock, the other waits for it on its connection); the other two
/// find no connection within the 500 ms acquire timeout while the server
/// answers — `429 busy` with `Retry-After`, counted apart from lock waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_starved_by_lock_waiters_answers_busy_and_the_sale_stays_exact() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let mut options = AppOptions::new(&db, &redis.url())
        .strategy("pg-advisory")
        .work_delay_ms(2_000);
    options.database_max_connections = 2;
    options.database_acquire_timeout_ms = 500;
    let app = TestApp::spawn(options).await;
    app.reset(1, 10).await;
    // The readers' pool (the server's witness) has a connection open.
    assert_eq!(app.audit(1).await["orders"], 0);

    let answers = grab_once_each(&app, 1, 1..5).await;
    let mut seen: Vec<(u16, &str, Option<&str>)> = answers
        .iter()
        .map(|a| (a.status, a.code.as_str(), a.retry_after.as_deref()))
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        [
            (201, "", None),
            (201, "", None),
            (429, "busy", Some("1")),
            (429, "busy", Some("1")),
        ],
        "{answers:?}"
    );
    let metrics = &app.state.deps.metrics;
    assert_eq!(
        metrics
            .db_pool_starved
            .with_label_values(&["pg-advisory"])
            .get(),
        2
    );
    assert_eq!(
        metrics
            .grab_requests
            .with_label_values(&["pg-advisory", "busy"])
            .get(),
        2
    );
    assert_eq!(
        metrics
            .grab_requests
            .with_label_values(&["pg-advisory", "error"])
            .get(),
        0
    );
    let audit = app.audit(1).await;
    assert_eq!(
        (audit["orders"].as_i64(), audit["stock"].as_i64()),
        (Some(2), Some(8)),
        "{audit}"
    );
    assert_eq!(violations(&audit), 0, "{audit}");

    // Busy means "retry later": the two that were turned away get in now.
    let busy: Vec<i64> = answers
        .iter()
        .zip(1..)
        .filter(|(a, _)| a.status == 429)
        .map(|(_, user)| user)
        .collect();
    for user in busy {
        let (status, body) = app.grab(1, user, 1).await;
        assert_eq!(status, 201, "user {user} retried: {body}");
    }
    let audit = app.audit(1).await;
    assert_eq!(
        (audit["orders"].as_i64(), audit["stock"].as_i64()),
        (Some(4), Some(6)),
        "{audit}"
    );
    assert_eq!(violations(&audit), 0, "{audit}");
    app.stop().await;
}
