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
