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
use seckill_app::startup::Application;

use crate::harness::{fresh_database, RedisServer, TestApp, ADMIN_TOKEN};

/// The service on `database_url` and `redis_url` with `strategy`, the
/// harness's test settings, and whatever `tweak` changes (settings the
/// harness's options do not carry).
async fn spawn(
    database_url: &str,
    redis_url: &str,
    strategy: &str,
    tweak: impl FnOnce(&mut Settings),
) -> TestApp {
    let mut settings = Settings {
        listen: "127.0.0.1:0".into(),
        database_url: database_url.into(),
        redis_url: redis_url.into(),
        strategy: strategy.into(),
        work_delay_ms: 0,
        lock_wait_ms: 5_000,
        lock_ttl_ms: 10_000,
        admin_token: Some(ADMIN_TOKEN.into()),
        database_acquire_timeout_ms: 1_500,
        seed_products: "1:100".into(),
        control_refresh_ms: 50,
        ..Settings::default()
    };
    tweak(&mut settings);
    settings.validate().expect("valid test settings");
    let app = Application::build(settings).await.expect("app builds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let handle = app.handle();
    let state = app.state();
    tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client");
    TestApp {
        address,
        client,
        handle,
        state,
    }
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

/// Every Redis key written while `f` ran and shortly after: keyspace
/// notifications of the test's own server, collected by a subscriber.
struct KeyWrites {
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

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

    /// The keys written so far (after a moment for the last notices).
    async fn keys(&self) -> Vec<String> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.seen.lock().expect("seen").clone()
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
    let written = writes.keys().await;
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
    let written = writes.keys().await;
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
