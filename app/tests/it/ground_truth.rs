//! Ground truth under failure: what the service acknowledged is what the
//! database holds, and what it refused took nothing — checked against
//! PostgreSQL and Redis themselves, not against the service's own view.
//!
//! - a `WAIT` that fails after `SET NX PX` gives the lock back at once;
//! - a grab of an unknown product takes no lock and grows no map;
//! - `redis-lua-stock` never cancels an order whose fate is unknown, never
//!   takes Redis stock below 0, and refuses (`busy`) when its batch queue
//!   is full — without touching the stock;
//! - PostgreSQL cut during `redis-lua-stock` confirms: no oversell, every
//!   acknowledged order is in the table.

use std::time::Duration;

use seckill_app::configuration::Settings;

use crate::harness::{fresh_database, until_lock_waiters, PgProxy, RedisServer, TestApp};
use seckill_testkit::eventually;

/// The service on `database_url` and `redis_url` with `strategy`, the
/// harness's test settings, and whatever `tweak` changes (settings the
/// harness's options do not carry).
async fn spawn(
    database_url: &str,
    redis_url: &str,
    strategy: &str,
    tweak: impl FnOnce(&mut Settings),
) -> TestApp {
    let mut settings = TestApp::base_settings(database_url, redis_url, strategy);
    tweak(&mut settings);
    TestApp::start(settings).await
}

/// A `WAIT` that fails (here: the Redis user may not run it, so Redis
/// answers `NOPERM` right after the `SET NX PX` succeeded) gives the lock
/// back before the grab answers its error: the key is gone at once, not
/// held for its 10 s TTL, and another client takes it immediately.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_wait_gives_the_lock_back_at_once() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = spawn(&db, &redis.url(), "set-nx-px-token", |s| {
        s.redis_wait_replicas = 1;
    })
    .await;
    app.reset(1, 10).await;
    let mut conn = redis.conn();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("-wait")
        .query(&mut conn)
        .expect("acl");

    let (status, body) = app.grab(1, 1, 1).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (500, Some("internal")),
        "{body}"
    );
    let held: bool = redis::cmd("EXISTS")
        .arg("lock:product:1")
        .query(&mut conn)
        .expect("exists");
    assert!(!held, "the lock whose WAIT failed was given back");
    let taken: Option<String> = redis::cmd("SET")
        .arg("lock:product:1")
        .arg("another-client")
        .arg("NX")
        .arg("PX")
        .arg(1_000)
        .query(&mut conn)
        .expect("set");
    assert!(taken.is_some(), "another client takes the lock at once");
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 0, "nothing written: {audit}");
    app.stop().await;
}

/// Every Redis key written since [`KeyWrites::watch`]: keyspace
/// notifications of the test's own server, collected by a subscriber.
struct KeyWrites {
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

/// The key [`KeyWrites::keys`] writes to know its subscriber caught up.
const MARK: &str = "keywrites:mark";

impl KeyWrites {
    async fn watch(redis: &RedisServer) -> Self {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg("KA")
            .query(&mut redis.conn())
            .expect("config set");
        let client = redis::Client::open(redis.url()).expect("client");
        let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
        pubsub
            .psubscribe("__keyspace@0__:*")
            .await
            .expect("psubscribe");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = seen.clone();
        let task = tokio::spawn(async move {
            use futures::StreamExt;
            let mut messages = pubsub.on_message();
            while let Some(message) = messages.next().await {
                let key = message
                    .get_channel_name()
                    .trim_start_matches("__keyspace@0__:")
                    .to_owned();
                into.lock().expect("seen").push(key);
            }
        });
        Self { seen, task }
    }

    /// The keys of every write the server ran before this call: once the
    /// subscriber has seen a mark written now (the notices reach it in the
    /// order the server ran the writes). The mark itself is left out.
    async fn keys(&self, redis: &RedisServer) -> Vec<String> {
        let marks: usize = redis::cmd("INCR")
            .arg(MARK)
            .query(&mut redis.conn())
            .expect("incr");
        eventually(
            "the subscriber sees the mark",
            Duration::from_secs(5),
            || {
                let seen = self.seen.lock().expect("seen").clone();
                let got = seen.iter().filter(|k| k.as_str() == MARK).count();
                std::future::ready(if got >= marks {
                    Ok(seen
                        .into_iter()
                        .filter(|k| k.as_str() != MARK)
                        .collect::<Vec<String>>())
                } else {
                    Err(format!("{got} of {marks} marks"))
                })
            },
        )
        .await
    }
}

impl Drop for KeyWrites {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A grab of a product that does not exist is answered `404 not_found`
/// before any lock: under every kind of strategy (an in-process mutex, the
/// watchdog's gates, a Redis lock, a PostgreSQL advisory lock, the Redis
/// stock), 100 unknown ids each leave no lock attempt, no Redis key
/// mentioning them (keyspace notifications of every write), no entry in a
/// strategy's per-product maps (`seckill_strategy_products`), and nothing
/// in the known-products set. The same observers do see a known product's
/// grab (its lock key, its map entry), and a product created behind this
/// replica's back (as another replica's reset would) is found on its first
/// grab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_products_take_no_lock_and_grow_no_map() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = spawn(&db, &redis.url(), "local-mutex", |_| {}).await;
    app.reset(1, 100).await;
    let writes = KeyWrites::watch(&redis).await;
    let strategies = [
        "local-mutex",
        "watchdog",
        "set-nx-px-token",
        "pg-advisory",
        "redis-lua-stock",
    ];
    let unknown = 1_001..=1_100_i64;
    let metrics = &app.state.deps.metrics;
    for strategy in strategies {
        app.switch(strategy).await;
        let grabs: Vec<_> = unknown
            .clone()
            .map(|product| {
                let client = app.client.clone();
                let url = format!("{}/api/v1/products/{product}/grab", app.address);
                tokio::spawn(async move {
                    let response = client
                        .post(&url)
                        .json(&serde_json::json!({ "user_id": 1, "quantity": 1 }))
                        .send()
                        .await
                        .expect("sent");
                    let status = response.status().as_u16();
                    let body: serde_json::Value = response.json().await.expect("json");
                    (
                        status,
                        body["error"].as_str().unwrap_or_default().to_owned(),
                    )
                })
            })
            .collect();
        for grab in grabs {
            let answer = grab.await.expect("grab");
            assert_eq!(answer, (404, "not_found".to_owned()), "{strategy}");
        }
        assert_eq!(
            metrics.lock_attempts.with_label_values(&[strategy]).get(),
            0,
            "{strategy}: no lock attempted"
        );
        assert_eq!(
            metrics
                .strategy_products
                .with_label_values(&[strategy])
                .get(),
            0.0,
            "{strategy}: no per-product state"
        );
    }
    let written = writes.keys(&redis).await;
    let mentions_unknown = |key: &String| {
        unknown
            .clone()
            .any(|id| key.ends_with(&format!("product:{id}")))
    };
    let bad: Vec<&String> = written.iter().filter(|k| mentions_unknown(k)).collect();
    assert!(bad.is_empty(), "keys written for unknown products: {bad:?}");
    assert_eq!(app.state.known_products.len(), 1, "only product 1 is known");

    // The observers see a known product's grab.
    for (user, strategy) in (1..).zip(strategies) {
        app.switch(strategy).await;
        let (status, body) = app.grab(1, user, 1).await;
        assert_eq!(status, 201, "{strategy}: {body}");
    }
    for strategy in ["local-mutex", "watchdog", "redis-lua-stock"] {
        assert_eq!(
            metrics
                .strategy_products
                .with_label_values(&[strategy])
                .get(),
            1.0,
            "{strategy}: product 1's state is counted"
        );
    }
    let written = writes.keys(&redis).await;
    assert!(
        written.iter().any(|k| k == "lock:product:1"),
        "the lock key of a known product is seen: {written:?}"
    );

    // Created after the fill, behind this replica's back: found on its
    // first grab, then known.
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    sqlx::query("INSERT INTO products (id, name, stock, initial_stock) VALUES (77, 'late', 5, 5)")
        .execute(&pool)
        .await
        .expect("insert");
    app.switch("pg-advisory").await;
    let (status, body) = app.grab(77, 1, 1).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(app.state.known_products.len(), 2);
    pool.close().await;
    app.stop().await;
}

/// Redis's view of product 1 under `redis-lua-stock`: the stock, how many
/// reservations wait for a confirm, the buyers (sorted).
fn stock_state(redis: &RedisServer) -> (Option<i64>, i64, Vec<i64>) {
    let mut conn = redis.conn();
    let stock: Option<i64> = redis::cmd("GET")
        .arg("stock:product:1")
        .query(&mut conn)
        .expect("get");
    let reserved: i64 = redis::cmd("ZCARD")
        .arg("reservations:product:1")
        .query(&mut conn)
        .expect("zcard");
    let mut buyers: Vec<i64> = redis::cmd("SMEMBERS")
        .arg("buyers:product:1")
        .query(&mut conn)
        .expect("smembers");
    buyers.sort_unstable();
    (stock, reserved, buyers)
}

/// An order written straight into the database, as a confirm's `INSERT`
/// that committed (whatever its caller heard).
async fn insert_order(pool: &sqlx::PgPool, user: i64) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO orders (product_id, user_id, quantity, strategy)
         VALUES (1, $1, 1, 'redis-lua-stock') RETURNING id",
    )
    .bind(user)
    .fetch_one(pool)
    .await
    .expect("insert")
}

fn grab_request(user_id: i64) -> seckill_app::strategy::GrabRequest {
    seckill_app::strategy::GrabRequest {
        product_id: 1,
        user_id,
        quantity: 1,
    }
}

/// The audit with every order counted (`?recount=true`), retried while the
/// service's own pools find their way back to the database.
async fn recount(app: &TestApp) -> serde_json::Value {
    eventually("the audit answers", Duration::from_secs(10), || async {
        match app
            .admin(reqwest::Method::GET, "/admin/audit?recount=true", None)
            .await
        {
            (200, body) => Ok(body["products"][0].clone()),
            other => Err(other),
        }
    })
    .await
}

/// Sweep product 1's reservations older than 10 ms, asked again (testkit's
/// poll) until one is old enough to go, or while the sweep fails (a
/// database link still reconnecting): how many it gave back.
async fn sweep_once_aged(
    stock: &seckill_app::lock::redis_lua_stock::RedisLuaStock,
    deps: &seckill_app::strategy::Deps,
) -> u64 {
    eventually(
        "a reservation older than 10 ms is swept",
        Duration::from_secs(10),
        || async {
            match stock.sweep(deps, 1, Duration::from_millis(10)).await {
                Ok(0) => Err("nothing old enough yet".to_owned()),
                Ok(swept) => Ok(swept),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await
}

/// Let `span` go by in a test's timeline of cuts and buyers.
///
/// A fixed wait is the point: the link is cut and restored on a schedule,
/// and the buyers arrive spread over it and retry at a pace, so that their
/// grabs meet PostgreSQL up, cut and coming back.
async fn pace(span: Duration) {
    tokio::time::sleep(span).await;
}

/// A confirm that failed is settled by what the database holds:
/// - the `INSERT` committed and only its reply was lost: `201` with the
///   order read back (its id), the unit and the buyer kept, the
///   reservation forgotten;
/// - the order surely does not exist: the reservation is given back;
/// - nobody can tell (PostgreSQL cut): `503 unavailable` and nothing given
///   back — the unit stays reserved, the buyer stays a buyer — until the
///   sweep, once the database answers, finds no order and gives it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_confirm_is_cancelled_only_when_its_order_surely_does_not_exist() {
    use seckill_app::error::{Dependency, GrabError};
    use seckill_app::lock::redis_lua_stock::RedisLuaStock;

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let proxy = PgProxy::start(&db).await;
    let app = spawn(&proxy.url_for(&db), &redis.url(), "redis-lua-stock", |s| {
        s.database_acquire_timeout_ms = seckill_app::configuration::Positive::new(500);
    })
    .await;
    app.reset(1, 5).await;
    let deps = &app.state.deps;
    let stock = RedisLuaStock::default();
    let direct = sqlx::PgPool::connect(&db).await.expect("connect");
    let lost_reply = || GrabError::Unavailable {
        dependency: Dependency::Postgres,
        detail: "connection reset by peer".into(),
    };

    // Committed; the reply was lost.
    assert_eq!(
        stock.try_reserve(deps, grab_request(7)).await.expect("try"),
        4
    );
    let id = insert_order(&direct, 7).await;
    let order = stock
        .after_failed_confirm(deps, grab_request(7), lost_reply())
        .await
        .expect("the committed order is answered");
    assert_eq!((order.order_id, order.user_id, order.quantity), (id, 7, 1));
    assert_eq!(order.strategy, "redis-lua-stock");
    assert_eq!(stock_state(&redis), (Some(4), 0, vec![7]));

    // Not committed, and the database says so: cancelled.
    assert_eq!(
        stock.try_reserve(deps, grab_request(8)).await.expect("try"),
        3
    );
    let answer = stock
        .after_failed_confirm(deps, grab_request(8), lost_reply())
        .await;
    assert!(
        matches!(answer, Err(GrabError::Unavailable { .. })),
        "{answer:?}"
    );
    assert_eq!(stock_state(&redis), (Some(4), 0, vec![7]), "given back");

    // Unknown: the database cannot be asked. Nothing is given back.
    assert_eq!(
        stock.try_reserve(deps, grab_request(9)).await.expect("try"),
        3
    );
    proxy.cut();
    let answer = stock
        .after_failed_confirm(deps, grab_request(9), lost_reply())
        .await;
    assert!(
        matches!(
            answer,
            Err(GrabError::Unavailable {
                dependency: Dependency::Postgres,
                ..
            })
        ),
        "{answer:?}"
    );
    assert_eq!(
        stock_state(&redis),
        (Some(3), 1, vec![7, 9]),
        "the reservation is left to the sweep"
    );
    proxy.restore();
    // The sweep's first call after the restore may still find the link
    // reconnecting.
    let given_back = sweep_once_aged(&stock, deps).await;
    assert_eq!(given_back, 1, "no order: the sweep gives it back");
    assert_eq!(stock_state(&redis), (Some(4), 0, vec![7]));
    let orders: Vec<i64> = sqlx::query_scalar("SELECT id FROM orders WHERE product_id = 1")
        .fetch_all(&direct)
        .await
        .expect("orders");
    assert_eq!(orders, vec![id]);
    direct.close().await;
    app.stop().await;
}

/// A confirm that comes after the sweep gave its reservation back, and
/// after another buyer took that unit, takes nothing: Redis stock stays at
/// 0 (never -1), the late order is deleted again and its grab answered
/// `sold_out`, the conflict counted in
/// `seckill_stock_confirm_conflicts_total`, and the audit shows no
/// oversell. With the unit still there, the late confirm takes it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirm_after_the_sweep_never_takes_stock_below_zero() {
    use seckill_app::error::GrabError;
    use seckill_app::lock::redis_lua_stock::{confirm_committed, RedisLuaStock};
    use seckill_app::strategy::Order;

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = spawn(&db, &redis.url(), "redis-lua-stock", |_| {}).await;
    app.reset(1, 1).await;
    let deps = &app.state.deps;
    let stock = RedisLuaStock::default();
    let direct = sqlx::PgPool::connect(&db).await.expect("connect");
    let late_order = |order_id: i64, user_id: i64| Order {
        order_id,
        product_id: 1,
        user_id,
        quantity: 1,
        strategy: "redis-lua-stock".into(),
        fence_token: None,
    };

    // Buyer 7's try; its confirm is slow; the sweep gives the unit back and
    // buyer 8 buys it.
    assert_eq!(
        stock.try_reserve(deps, grab_request(7)).await.expect("try"),
        0
    );
    let swept = sweep_once_aged(&stock, deps).await;
    assert_eq!(swept, 1);
    let (status, body) = app.grab(1, 8, 1).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(stock_state(&redis), (Some(0), 0, vec![8]));

    // Buyer 7's INSERT commits now, and its confirm runs.
    let id = insert_order(&direct, 7).await;
    let answers = confirm_committed(deps.clone(), vec![late_order(id, 7)]).await;
    assert!(
        matches!(answers.as_slice(), [Err(GrabError::SoldOut)]),
        "{answers:?}"
    );
    assert_eq!(
        stock_state(&redis),
        (Some(0), 0, vec![8]),
        "nothing taken: the stock is not below 0"
    );
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE id = $1")
        .bind(id)
        .fetch_one(&direct)
        .await
        .expect("count");
    assert_eq!(left, 0, "the late order is undone");
    assert_eq!(deps.metrics.stock_confirm_conflicts.get(), 1);
    assert!(app
        .metrics()
        .await
        .contains("seckill_stock_confirm_conflicts_total 1"));
    let audit = recount(&app).await;
    assert_eq!(
        (
            &audit["orders"],
            &audit["oversold"],
            &audit["lost_updates"],
            &audit["undersold"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!(0),
            &serde_json::json!(0),
            &serde_json::json!(0)
        ),
        "{audit}"
    );

    // Swept, but the unit is still there: the late confirm takes it again.
    app.reset(1, 2).await;
    assert_eq!(
        stock.try_reserve(deps, grab_request(9)).await.expect("try"),
        1
    );
    let swept = sweep_once_aged(&stock, deps).await;
    assert_eq!(swept, 1);
    assert_eq!(stock_state(&redis), (Some(2), 0, vec![]));
    let id = insert_order(&direct, 9).await;
    let answers = confirm_committed(deps.clone(), vec![late_order(id, 9)]).await;
    assert!(
        matches!(answers.as_slice(), [Ok(order)] if order.order_id == id),
        "{answers:?}"
    );
    assert_eq!(stock_state(&redis), (Some(1), 0, vec![9]));
    assert_eq!(deps.metrics.stock_confirm_conflicts.get(), 1);
    direct.close().await;
    app.stop().await;
}

/// With the batch queue full (one commit at a time, held by a table lock;
/// one order waiting; a queue of one), a grab is answered `429 busy` with
/// `Retry-After: 1` before it reserves anything: the Redis stock, buyers
/// and reservations are exactly those of the two grabs in flight. Once the
/// lock goes, both are ordered and the refused buyer buys on retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_batch_queue_answers_busy_and_reserves_nothing() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = spawn(&db, &redis.url(), "redis-lua-stock", |s| {
        s.order_batch_max = 16;
        s.order_batch_commits = 1;
        s.order_batch_queue = 1;
        s.lock_wait_ms = seckill_app::configuration::Positive::new(30_000);
    })
    .await;
    app.reset(1, 10).await;
    let direct = sqlx::PgPool::connect(&db).await.expect("connect");
    let mut blocker = direct.begin().await.expect("begin");
    sqlx::query("LOCK TABLE orders IN SHARE MODE")
        .execute(&mut *blocker)
        .await
        .expect("lock");
    let background_grab = |user: i64| {
        let client = app.client.clone();
        let url = format!("{}/api/v1/products/1/grab", app.address);
        tokio::spawn(async move {
            let response = client
                .post(&url)
                .json(&serde_json::json!({ "user_id": user, "quantity": 1 }))
                .send()
                .await
                .expect("sent");
            response.status().as_u16()
        })
    };

    // The first batch commits (and waits for the table).
    let first = background_grab(1);
    let waiting = until_lock_waiters(&direct, Duration::from_secs(5)).await;
    assert_eq!(waiting, 1, "the first batch waits for the table");
    // The second order waits in the queue (its try is done): two units
    // reserved, nothing else (and nothing moves: checked again below,
    // after the refused grab).
    let second = background_grab(2);
    eventually("both buyers are queued", Duration::from_secs(5), || async {
        let state = stock_state(&redis);
        if state == (Some(8), 2, vec![1, 2]) {
            Ok(())
        } else {
            Err(state)
        }
    })
    .await;

    let response = app
        .client
        .post(format!("{}/api/v1/products/1/grab", app.address))
        .json(&serde_json::json!({ "user_id": 3, "quantity": 1 }))
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(
        (status, body["error"].as_str(), retry_after.as_deref()),
        (429, Some("busy"), Some("1")),
        "{body}"
    );
    assert_eq!(
        stock_state(&redis),
        (Some(8), 2, vec![1, 2]),
        "the refused grab reserved nothing"
    );

    blocker.rollback().await.expect("unlock");
    assert_eq!(first.await.expect("first"), 201);
    assert_eq!(second.await.expect("second"), 201);
    let (status, body) = app.grab(1, 3, 1).await;
    assert_eq!(status, 201, "the refused buyer buys on retry: {body}");
    assert_eq!(stock_state(&redis), (Some(7), 0, vec![1, 2, 3]));
    let audit = recount(&app).await;
    assert_eq!(audit["orders"], 3, "{audit}");
    assert_eq!(audit["oversold"], 0, "{audit}");
    assert_eq!(
        app.state
            .deps
            .metrics
            .grab_requests
            .with_label_values(&["redis-lua-stock", "busy"])
            .get(),
        1
    );
    direct.close().await;
    app.stop().await;
}

/// PostgreSQL cut and restored again and again (through a proxy) while
/// buyers grab under `redis-lua-stock`: every answer is an order, a
/// refusal or `503`/`429` (never a 500); afterwards nothing is oversold,
/// no buyer holds two orders, every acknowledged order (each `201`'s
/// `order_id`) is in the orders table — and once the sweep has settled the
/// reservations whose confirm had an unknown outcome, the Redis stock
/// agrees with the orders exactly (no lost update, no undersell).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cut_during_confirms_never_oversells_nor_loses_an_acknowledged_order() {
    use seckill_app::lock::redis_lua_stock::RedisLuaStock;

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let proxy = PgProxy::start(&db).await;
    let app = spawn(&proxy.url_for(&db), &redis.url(), "redis-lua-stock", |s| {
        s.database_acquire_timeout_ms = seckill_app::configuration::Positive::new(300);
    })
    .await;
    app.reset(1, 40).await;

    let cutter = {
        let proxy = proxy.clone();
        tokio::spawn(async move {
            for _ in 0..8 {
                pace(Duration::from_millis(150)).await;
                proxy.cut();
                pace(Duration::from_millis(200)).await;
                proxy.restore();
            }
        })
    };
    let buyers: Vec<_> = (1..=120_i64)
        .map(|user| {
            let client = app.client.clone();
            let url = format!("{}/api/v1/products/1/grab", app.address);
            tokio::spawn(async move {
                // Buyers arrive over the cuts, and retry what may pass.
                pace(Duration::from_millis(user.unsigned_abs() * 20)).await;
                let mut answers = Vec::new();
                for _ in 0..40 {
                    let response = client
                        .post(&url)
                        .json(&serde_json::json!({ "user_id": user, "quantity": 1 }))
                        .send()
                        .await
                        .expect("sent");
                    let status = response.status().as_u16();
                    let body: serde_json::Value = response.json().await.expect("json");
                    let done = !matches!(status, 429 | 503);
                    answers.push((status, body));
                    if done {
                        break;
                    }
                    pace(Duration::from_millis(50)).await;
                }
                answers
            })
        })
        .collect();
    let mut acknowledged = Vec::new();
    let mut statuses = std::collections::BTreeMap::<String, u32>::new();
    for buyer in buyers {
        for (status, body) in buyer.await.expect("buyer") {
            let code = body["error"].as_str().unwrap_or("").to_owned();
            *statuses.entry(format!("{status} {code}")).or_default() += 1;
            if status == 201 {
                acknowledged.push(body["order_id"].as_i64().expect("order_id"));
            }
        }
    }
    cutter.await.expect("cutter");
    proxy.restore();
    let allowed = [
        "201 ",
        "409 sold_out",
        "409 already_purchased",
        "429 busy",
        "503 unavailable",
    ];
    assert!(
        statuses.keys().all(|k| allowed.contains(&k.as_str())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains_key("503 unavailable"),
        "the cuts hit: {statuses:?}"
    );
    assert!(!acknowledged.is_empty(), "{statuses:?}");

    let direct = sqlx::PgPool::connect(&db).await.expect("connect");
    let in_table: std::collections::HashSet<i64> =
        sqlx::query_scalar("SELECT id FROM orders WHERE product_id = 1")
            .fetch_all(&direct)
            .await
            .expect("orders")
            .into_iter()
            .collect();
    let missing: Vec<&i64> = acknowledged
        .iter()
        .filter(|id| !in_table.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged orders not in the table: {missing:?}"
    );
    let audit = recount(&app).await;
    assert_eq!(audit["oversold"], 0, "{audit}");
    assert_eq!(audit["duplicates"], 0, "{audit}");

    // Reservations whose confirm had an unknown outcome wait for the sweep
    // (of those older than 10 ms): swept until none is left.
    let stock = RedisLuaStock::default();
    eventually(
        "the sweep settles every reservation",
        Duration::from_secs(10),
        || async {
            let swept = stock
                .sweep(&app.state.deps, 1, Duration::from_millis(10))
                .await;
            let reserved = stock_state(&redis).1;
            if matches!(swept, Ok(0)) && reserved == 0 {
                Ok(())
            } else {
                Err(format!("swept {swept:?}, {reserved} reserved"))
            }
        },
    )
    .await;
    let (left, reserved, buyers) = stock_state(&redis);
    assert_eq!(reserved, 0, "every reservation settled");
    let audit = recount(&app).await;
    assert_eq!(
        (
            &audit["oversold"],
            &audit["lost_updates"],
            &audit["undersold"],
            &audit["duplicates"]
        ),
        (
            &serde_json::json!(0),
            &serde_json::json!(0),
            &serde_json::json!(0),
            &serde_json::json!(0)
        ),
        "{audit}"
    );
    let ordered = audit["ordered_units"].as_i64().expect("units");
    assert_eq!(
        left,
        Some(40 - ordered),
        "Redis stock agrees with the orders"
    );
    assert_eq!(buyers.len() as i64, ordered, "one buyer per order");
    direct.close().await;
    app.stop().await;
}
