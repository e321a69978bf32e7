//! Dependencies that go away: Redis killed while a Redis strategy is
//! active, PostgreSQL unreachable. The service answers 503, writes nothing
//! half-way, and recovers when the dependency is back.

use std::time::Duration;

use crate::harness::{fresh_database, grab_once_each, AppOptions, PgProxy, RedisServer, TestApp};

async fn eventually_status(app: &TestApp, product: i64, user: i64, want: u16) -> serde_json::Value {
    let what = format!("a grab answers {want}");
    seckill_testkit::eventually(&what, Duration::from_secs(10), || async {
        match app.grab(product, user, 1).await {
            (status, body) if status == want => Ok(body),
            other => Err(other),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_is_a_503_that_writes_nothing_and_recovers() {
    for strategy in ["set-nx-px-token", "redis-lua-stock"] {
        let mut redis = RedisServer::start();
        let db = fresh_database().await;
        let app = TestApp::spawn(AppOptions::new(&db, &redis.url()).strategy(strategy)).await;
        app.reset(1, 10).await;
        assert_eq!(app.grab(1, 1, 1).await.0, 201, "{strategy}");
        let before = app.audit(1).await;

        redis.stop();
        for user in 2..6 {
            let (status, body) = app.grab(1, user, 1).await;
            assert_eq!(status, 503, "{strategy}: {body}");
            assert_eq!(body["error"], "unavailable");
            let message = body["message"].as_str().expect("message");
            assert!(
                !message.contains("Connection refused") && !message.contains("os error"),
                "{message}"
            );
        }
        let (status, body) = app.get("/health/ready").await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["checks"]["redis"], "unavailable");
        let after = app.audit(1).await;
        assert_eq!(
            before, after,
            "{strategy}: nothing written while Redis was down"
        );

        redis.restart();
        let order = eventually_status(&app, 1, 7, 201).await;
        assert_eq!(order["strategy"], strategy);
        let audit = app.audit(1).await;
        assert_eq!(audit["orders"], 2, "{strategy}: {audit}");
        assert_eq!(audit["lost_updates"], 0, "{strategy}: {audit}");
        app.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_unreachable_is_a_503_and_recovers() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let proxy = PgProxy::start(&db).await;
    let app = TestApp::spawn(
        AppOptions::new(&proxy.url_for(&db), &redis.url()).strategy("pg-for-update"),
    )
    .await;
    app.reset(1, 10).await;
    assert_eq!(app.grab(1, 1, 1).await.0, 201);

    proxy.cut();
    for (user, strategy) in [(2, "pg-for-update"), (3, "set-nx-px-token")] {
        app.switch(strategy).await;
        let (status, body) = app.grab(1, user, 1).await;
        assert_eq!(status, 503, "{strategy}: {body}");
        assert_eq!(body["error"], "unavailable");
        assert!(
            !body["message"]
                .as_str()
                .expect("message")
                .contains("os error"),
            "{body}"
        );
    }
    let (status, body) = app.get("/api/v1/products/1").await;
    assert_eq!(status, 503, "{body}");
    let (status, body) = app.get("/health/ready").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["checks"]["postgres"], "unavailable");
    // The Redis lock was released after the failed grab: nobody is locked out.
    let mut conn = redis.conn();
    let exists: bool = redis::cmd("EXISTS")
        .arg("lock:product:1")
        .query(&mut conn)
        .expect("exists");
    assert!(!exists, "lock released after a database failure");

    proxy.restore();
    eventually_status(&app, 1, 4, 201).await;
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 2, "{audit}");
    assert_eq!(audit["stock"], 8, "{audit}");
    assert_eq!(audit["lost_updates"], 0, "{audit}");
    app.stop().await;
}

/// A pool timeout with a server that does not answer stays `503
/// unavailable`: PostgreSQL's connections hang unanswered (a proxy that
/// accepts and never forwards), so sqlx's connects wait out the acquire
/// timeout just as a starved pool's waiters do — but the server witness
/// gets no answer either. Nothing is counted as pool starvation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_timeout_with_a_silent_server_is_a_503_not_busy() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let proxy = PgProxy::start(&db).await;
    let mut options = AppOptions::new(&proxy.url_for(&db), &redis.url()).strategy("pg-advisory");
    options.database_max_connections = 2;
    options.database_acquire_timeout_ms = 500;
    let app = TestApp::spawn(options).await;
    app.reset(1, 10).await;
    assert_eq!(app.grab(1, 1, 1).await.0, 201);

    proxy.go_silent();
    let mut answers = grab_once_each(&app, 1, 2..6).await;
    answers.extend(grab_once_each(&app, 1, 6..10).await);
    for answer in &answers {
        assert_eq!(
            (
                answer.status,
                answer.code.as_str(),
                answer.retry_after.as_deref()
            ),
            (503, "unavailable", Some("2")),
            "{answers:?}"
        );
    }
    assert!(
        answers.iter().any(|a| a.took >= Duration::from_millis(500)),
        "some grabs waited out the acquire timeout (the pool-timeout path): {answers:?}"
    );
    let metrics = &app.state.deps.metrics;
    assert_eq!(
        metrics
            .db_pool_starved
            .with_label_values(&["pg-advisory"])
            .get(),
        0
    );

    proxy.restore();
    eventually_status(&app, 1, 20, 201).await;
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 2, "{audit}");
    assert_eq!(audit["stock"], 8, "{audit}");
    app.stop().await;
}

#[tokio::test]
async fn a_foreign_client_holding_the_lock_makes_grabs_busy() {
    // Any client speaking SET NX PX on lock:product:{id} excludes the service.
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let mut options = AppOptions::new(&db, &redis.url());
    options.lock_wait_ms = 200;
    let app = TestApp::spawn(options).await;
    let mut conn = redis.conn();
    let set: Option<String> = redis::cmd("SET")
        .arg("lock:product:1")
        .arg("external-client")
        .arg("NX")
        .arg("PX")
        .arg(10_000)
        .query(&mut conn)
        .expect("set");
    assert!(set.is_some());
    let response = app
        .client
        .post(format!("{}/api/v1/products/1/grab", app.address))
        .json(&serde_json::json!({"user_id": 1}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"], "busy");
    let holder: String = redis::cmd("GET")
        .arg("lock:product:1")
        .query(&mut conn)
        .expect("get");
    assert_eq!(
        holder, "external-client",
        "the service never deletes another's lock"
    );
    assert_eq!(app.audit(1).await["orders"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_lua_stock_gives_back_a_reservation_whose_confirm_never_came() {
    use seckill_app::lock::redis_lua_stock::{RedisLuaStock, RESERVATION_TIMEOUT};
    use seckill_app::strategy::GrabRequest;

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url()).strategy("redis-lua-stock")).await;
    app.reset(1, 1).await;
    let deps = &app.state.deps;
    let stock = RedisLuaStock::default();
    let get = |key: &str| -> Option<i64> {
        redis::cmd("GET")
            .arg(key)
            .query(&mut redis.conn())
            .expect("get")
    };
    let is_buyer = |user: i64| -> bool {
        redis::cmd("SISMEMBER")
            .arg("buyers:product:1")
            .arg(user)
            .query(&mut redis.conn())
            .expect("sismember")
    };

    // The try of a process that dies right after it: no confirm, no cancel.
    let req = GrabRequest {
        product_id: 1,
        user_id: 7,
        quantity: 1,
    };
    assert_eq!(stock.try_reserve(deps, req).await.expect("try"), 0);
    let (_, body) = app.grab(1, 8, 1).await;
    assert_eq!(body["error"], "sold_out", "the unit is held: {body}");
    let (_, body) = app.grab(1, 7, 1).await;
    assert_eq!(body["error"], "already_purchased", "{body}");

    // Not stale yet under the service's own bound: left alone.
    assert_eq!(
        stock
            .sweep(deps, 1, RESERVATION_TIMEOUT)
            .await
            .expect("sweep"),
        0
    );
    // Under a bound of 10 ms it goes, once that old.
    let swept = seckill_testkit::eventually(
        "the reservation is older than 10 ms",
        Duration::from_secs(5),
        || async {
            match stock.sweep(deps, 1, Duration::from_millis(10)).await {
                Ok(0) => Err("not old enough yet".to_owned()),
                Ok(swept) => Ok(swept),
                Err(e) => panic!("sweep: {e}"),
            }
        },
    )
    .await;
    assert_eq!(swept, 1, "the stale reservation (no order) is given back");
    assert_eq!(get("stock:product:1"), Some(1), "the unit is back");
    assert!(!is_buyer(7), "the buyer is free again");

    let (status, body) = app.grab(1, 7, 1).await;
    assert_eq!(status, 201, "the buyer can buy: {body}");
    assert_eq!(get("stock:product:1"), Some(0));
    let pending: i64 = redis::cmd("ZCARD")
        .arg("reservations:product:1")
        .query(&mut redis.conn())
        .expect("zcard");
    assert_eq!(pending, 0, "the confirm forgot its reservation");

    // A stale reservation whose order exists (the process died after its
    // commit, before forgetting it) is only forgotten, never given back.
    let _: () = redis::cmd("ZADD")
        .arg("reservations:product:1")
        .arg(0)
        .arg("7:1")
        .query(&mut redis.conn())
        .expect("zadd");
    assert_eq!(
        stock
            .sweep(deps, 1, Duration::from_millis(10))
            .await
            .expect("sweep"),
        0
    );
    assert_eq!(get("stock:product:1"), Some(0));
    assert!(is_buyer(7));
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 1, "{audit}");
    assert_eq!(audit["oversold"], 0, "{audit}");
    assert_eq!(audit["lost_updates"], 0, "{audit}");
    app.stop().await;
}
