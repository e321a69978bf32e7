//! The HTTP contract: happy path, every bad input, admin auth.

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{fresh_database, AppOptions, RedisServer, TestApp};
use seckill_app::configuration::Settings;

async fn app() -> (RedisServer, TestApp) {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url())).await;
    (redis, app)
}

fn assert_error(status: u16, body: &Value, want_status: u16, want_code: &str) {
    assert_eq!(status, want_status, "body: {body}");
    assert_eq!(body["error"], want_code, "body: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "message in {body}"
    );
}

#[tokio::test]
async fn grab_answers_with_the_order_then_refuses_a_second_one() {
    let (_redis, app) = app().await;
    let (status, order) = app.grab(1, 42, 2).await;
    assert_eq!(status, 201, "{order}");
    for key in [
        "order_id",
        "product_id",
        "user_id",
        "quantity",
        "strategy",
        "fence_token",
    ] {
        assert!(order.get(key).is_some(), "{key} missing in {order}");
    }
    assert_eq!(order["user_id"], 42);
    assert_eq!(order["quantity"], 2);
    assert_eq!(order["strategy"], "set-nx-px-token");

    let (status, body) = app.grab(1, 42, 1).await;
    assert_error(status, &body, 409, "already_purchased");

    let (status, product) = app.get("/api/v1/products/1").await;
    assert_eq!(status, 200);
    assert_eq!(product["stock"], 98);
    assert_eq!(product["initial_stock"], 100);
    assert_eq!(product["strategy"], "set-nx-px-token");
    assert_eq!(product["id"], 1);
    assert!(product["name"].is_string());
}

#[tokio::test]
async fn sold_out_is_a_409_and_changes_nothing() {
    let (_redis, app) = app().await;
    app.reset(1, 1).await;
    assert_eq!(app.grab(1, 1, 1).await.0, 201);
    let (status, body) = app.grab(1, 2, 1).await;
    assert_error(status, &body, 409, "sold_out");
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 1);
    assert_eq!(audit["stock"], 0);
}

#[tokio::test]
async fn bad_input_gets_a_clear_4xx_json_error() {
    let (_redis, app) = app().await;
    let url = format!("{}/api/v1/products/1/grab", app.address);
    let raw = |body: &'static str| {
        app.client
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: &[(&str, u16, &str)] = &[
        ("{\"user_id\": 1,", 400, "malformed_json"),
        ("not json", 400, "malformed_json"),
        ("{}", 400, "invalid_field"),
        ("{\"quantity\": 1}", 400, "invalid_field"),
        ("{\"user_id\": \"seven\"}", 400, "invalid_field"),
        ("{\"user_id\": 1.5}", 400, "invalid_field"),
        (
            "{\"user_id\": 1, \"quantity\": \"many\"}",
            400,
            "invalid_field",
        ),
        ("{\"user_id\": 0}", 400, "invalid_user_id"),
        ("{\"user_id\": -3}", 400, "invalid_user_id"),
        ("{\"user_id\": 1, \"quantity\": 0}", 400, "invalid_quantity"),
        (
            "{\"user_id\": 1, \"quantity\": -1}",
            400,
            "invalid_quantity",
        ),
        ("{\"user_id\": 1, \"quantity\": 6}", 400, "invalid_quantity"),
        ("{\"user_id\": 1, \"bogus\": true}", 400, "invalid_field"),
    ];
    for (body, want_status, want_code) in cases {
        let response = raw(body).await.expect("sent");
        let status = response.status().as_u16();
        let value: Value = response.json().await.expect("json error body");
        assert_eq!(status, *want_status, "{body} -> {value}");
        assert_eq!(value["error"], *want_code, "{body} -> {value}");
    }

    // Over 16 KiB.
    let big = format!("{{\"user_id\": 1, \"pad\": \"{}\"}}", "x".repeat(17 * 1024));
    let response = app
        .client
        .post(&url)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 413);
    let value: Value = response.json().await.expect("json");
    assert_eq!(value["error"], "payload_too_large");

    // Not JSON at all.
    let response = app
        .client
        .post(&url)
        .body("user_id=1")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 415);

    // Unknown product, non-numeric and non-positive ids.
    let (status, body) = app.grab(999, 1, 1).await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = app.get("/api/v1/products/999").await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = app
        .post_json("/api/v1/products/abc/grab", &json!({"user_id": 1}))
        .await;
    assert_error(status, &body, 400, "invalid_product_id");
    let (status, body) = app.get("/api/v1/products/0").await;
    assert_error(status, &body, 400, "invalid_product_id");
    let (status, body) = app.get("/no/such/route").await;
    assert_error(status, &body, 404, "not_found");

    // None of it wrote anything.
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 0);
    assert_eq!(audit["stock"], 100);
}

#[tokio::test]
async fn admin_needs_the_token() {
    let (_redis, app) = app().await;
    let paths = [
        (Method::GET, "/admin/strategies", None),
        (
            Method::PUT,
            "/admin/strategy",
            Some(json!({"strategy": "none"})),
        ),
        (
            Method::POST,
            "/admin/products/1/reset",
            Some(json!({"stock": 5})),
        ),
        (Method::GET, "/admin/audit", None),
        (Method::GET, "/admin/faults", None),
        (
            Method::PUT,
            "/admin/faults",
            Some(json!({"work_delay_ms": 1})),
        ),
    ];
    for (method, path, body) in paths {
        for token in [None, Some("wrong-token")] {
            let mut request = app
                .client
                .request(method.clone(), format!("{}{path}", app.address));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            if let Some(body) = &body {
                request = request.json(body);
            }
            let response = request.send().await.expect("sent");
            let status = response.status().as_u16();
            let value: Value = response.json().await.expect("json");
            assert_eq!(status, 401, "{method} {path} with {token:?}: {value}");
            assert_eq!(value["error"], "unauthorized");
        }
    }
    // Nothing changed.
    let (status, product) = app.get("/api/v1/products/1").await;
    assert_eq!(status, 200);
    assert_eq!(product["strategy"], "set-nx-px-token");
}

#[tokio::test]
async fn strategies_switch_at_run_time_and_unknown_names_are_listed() {
    let (_redis, app) = app().await;
    let (status, body) = app.admin(Method::GET, "/admin/strategies", None).await;
    assert_eq!(status, 200);
    assert_eq!(body["active"], "set-nx-px-token");
    let names: Vec<&str> = body["strategies"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| {
            assert!(
                s["guarantee"].is_string() && s["available"].is_boolean(),
                "{s}"
            );
            s["name"].as_str().expect("name")
        })
        .collect();
    for expected in seckill_wire::strategies::StrategyName::NAMES {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }

    let (status, body) = app
        .admin(
            Method::PUT,
            "/admin/strategy",
            Some(json!({"strategy": "yolo"})),
        )
        .await;
    assert_error(status, &body, 400, "unknown_strategy");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("pg-for-update"),
        "lists the valid names: {body}"
    );
    let (status, body) = app
        .admin(
            Method::PUT,
            "/admin/strategy",
            Some(json!({"name": "none"})),
        )
        .await;
    assert_error(status, &body, 400, "invalid_field");

    app.switch("pg-atomic").await;
    let (_, order) = app.grab(1, 5, 1).await;
    assert_eq!(order["strategy"], "pg-atomic");
}

#[tokio::test]
async fn every_listed_strategy_carries_its_kind() {
    let (_redis, app) = app().await;
    let (status, body) = app.admin(Method::GET, "/admin/strategies", None).await;
    assert_eq!(status, 200, "{body}");
    // The construction class of each strategy, as the load generator's
    // expectations need it (what each fault does to it).
    let want = [
        ("none", "no-lock"),
        ("local-mutex", "process-local"),
        ("setnx", "no-expiry"),
        ("setnx-expire", "ttl"),
        ("setnx-expire-lua", "ttl"),
        ("setnx-getset", "ttl"),
        ("set-nx-px", "ttl"),
        ("set-nx-px-check-del", "ttl"),
        ("set-nx-px-token", "ttl"),
        ("watchdog", "lease"),
        ("redlock", "validity"),
        ("fenced", "fenced"),
        ("mysql-get-lock", "session"),
        ("etcd-lease", "lease"),
        ("zk-ephemeral-seq", "lease"),
        ("pg-lock-table", "lock-table"),
        ("pg-for-update", "in-transaction"),
        ("pg-optimistic", "not-a-lock"),
        ("pg-advisory", "in-transaction"),
        ("pg-atomic", "not-a-lock"),
        ("redis-lua-stock", "not-a-lock"),
        ("pg-2pc", "not-a-lock"),
        ("pg-3pc", "not-a-lock"),
    ];
    let listed: Vec<(&str, &str)> = body["strategies"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| {
            let name = s["name"].as_str().expect("name");
            let kind = s["kind"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} has no kind: {s}"));
            (name, kind)
        })
        .collect();
    assert_eq!(listed, want, "every strategy, in order, with its kind");
    assert_eq!(
        listed.len(),
        seckill_wire::strategies::StrategyName::NAMES.len()
    );
}

#[tokio::test]
async fn coordination_locks_without_their_server_are_listed_unavailable() {
    // `app()` configures no MariaDB, etcd or ZooKeeper.
    let (_redis, app) = app().await;
    let (status, body) = app.admin(Method::GET, "/admin/strategies", None).await;
    assert_eq!(status, 200);
    for (name, setting) in [
        ("mysql-get-lock", "SECKILL_MYSQL_URL"),
        ("etcd-lease", "SECKILL_ETCD_URLS"),
        ("zk-ephemeral-seq", "SECKILL_ZOOKEEPER_URL"),
        ("pg-2pc", "SECKILL_STOCK_DATABASE_URL"),
        ("pg-3pc", "SECKILL_STOCK_DATABASE_URL"),
    ] {
        let entry = body["strategies"]
            .as_array()
            .expect("list")
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed: {body}"));
        assert_eq!(entry["available"], false, "{entry}");
        assert!(
            entry["unavailable_reason"]
                .as_str()
                .is_some_and(|r| r.contains(setting)),
            "the reason names {setting}: {entry}"
        );
        let (status, answer) = app
            .admin(
                Method::PUT,
                "/admin/strategy",
                Some(json!({ "strategy": name })),
            )
            .await;
        assert_error(status, &answer, 400, "strategy_unavailable");
        assert!(
            answer["message"]
                .as_str()
                .is_some_and(|m| m.contains(setting)),
            "{answer}"
        );
    }
    // Available ones carry no reason.
    let token = body["strategies"]
        .as_array()
        .expect("list")
        .iter()
        .find(|s| s["name"] == "set-nx-px-token")
        .cloned()
        .expect("listed");
    assert_eq!(token["available"], true);
    assert!(token.get("unavailable_reason").is_none(), "{token}");
}

/// An admin write is in force on the replica that took it as soon as it
/// answers: a refresh that read Redis just before the write must not put
/// the older faults back (seen once in CI: a cleared fault still shown).
/// Refreshing every millisecond puts a refresh in flight at most writes.
#[tokio::test]
async fn a_refresh_under_way_never_undoes_an_admin_write() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let settings = Settings {
        control_refresh_ms: seckill_app::configuration::Positive::new(1),
        ..TestApp::base_settings(&db, &redis.url(), "set-nx-px-token")
    };
    let app = TestApp::start(settings).await;
    for round in 0..150 {
        let delay = round % 2 == 0;
        let (status, written) = if delay {
            app.admin(
                Method::PUT,
                "/admin/faults",
                Some(json!({"work_delay_ms": 7})),
            )
            .await
        } else {
            app.admin(Method::DELETE, "/admin/faults", None).await
        };
        assert_eq!(status, 200, "{written}");
        let (_, now) = app.admin(Method::GET, "/admin/faults", None).await;
        assert_eq!(now, written, "round {round}: the write just answered");
    }
    app.stop().await;
}

#[tokio::test]
async fn faults_and_reset_round_trip() {
    let (redis, app) = app().await;
    app.set_faults(json!({"work_delay_ms": 3})).await;
    app.set_faults(json!({"unlock_before_commit": true})).await;
    let (status, faults) = app.admin(Method::GET, "/admin/faults", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        faults["work_delay_ms"], 3,
        "a subset keeps the rest: {faults}"
    );
    assert_eq!(faults["unlock_before_commit"], true);
    assert!(faults["pause_ms"].is_u64());
    let (status, body) = app
        .admin(Method::PUT, "/admin/faults", Some(json!({"work_delay": 3})))
        .await;
    assert_error(status, &body, 400, "invalid_field");

    assert_eq!(app.grab(1, 1, 1).await.0, 201);
    app.switch("redis-lua-stock").await;
    assert_eq!(app.grab(1, 2, 1).await.0, 201);
    // A foreign lock key, as another client would leave it.
    let mut conn = redis.conn();
    let _: () = redis::cmd("SET")
        .arg("lock:product:1")
        .arg("someone")
        .query(&mut conn)
        .expect("set");
    app.reset(1, 7).await;
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 0);
    assert_eq!(audit["stock"], 7);
    assert_eq!(audit["initial_stock"], 7);
    let exists: bool = redis::cmd("EXISTS")
        .arg("lock:product:1")
        .query(&mut conn)
        .expect("exists");
    assert!(!exists, "reset clears the lock key");
    let redis_stock: i64 = redis::cmd("GET")
        .arg("stock:product:1")
        .query(&mut conn)
        .expect("get");
    assert_eq!(redis_stock, 7, "reset reloads the Redis stock");
    // The user who bought before the reset may buy again.
    assert_eq!(app.grab(1, 2, 1).await.0, 201);

    let (status, body) = app
        .admin(
            Method::POST,
            "/admin/products/1/reset",
            Some(json!({"stock": -1})),
        )
        .await;
    assert_error(status, &body, 400, "invalid_stock");
}

#[tokio::test]
async fn health_and_metrics() {
    let (_redis, app) = app().await;
    let (status, _) = app.get("/health/live").await;
    assert_eq!(status, 200);
    let (status, body) = app.get("/health/ready").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["checks"]["postgres"], "ok");
    assert_eq!(body["checks"]["redis"], "ok");

    app.reset(1, 1).await;
    assert_eq!(app.grab(1, 1, 1).await.0, 201);
    assert_eq!(app.grab(1, 2, 1).await.0, 409);
    let text = app.metrics().await;
    for line in [
        "seckill_grab_requests_total{outcome=\"ordered\",strategy=\"set-nx-px-token\"} 1",
        "seckill_grab_requests_total{outcome=\"sold_out\",strategy=\"set-nx-px-token\"} 1",
        "seckill_stock_remaining{product=\"1\"} 0",
        "seckill_oversold_units{product=\"1\"} 0",
        "seckill_lost_updates{product=\"1\"} 0",
        "seckill_duplicate_orders{product=\"1\"} 0",
        "seckill_active_strategy{strategy=\"set-nx-px-token\"} 1",
        "seckill_lock_releases_total{result=\"released\",strategy=\"set-nx-px-token\"} 2",
        // Series that never had an event exist at 0 from the start, so
        // the first one is an increase Prometheus sees.
        "seckill_lock_lost_total{strategy=\"watchdog\"} 0",
        "seckill_fence_rejections_total{strategy=\"fenced\"} 0",
        "seckill_grab_requests_total{outcome=\"busy\",strategy=\"redlock\"} 0",
        "seckill_lock_renewals_total{result=\"lost\",strategy=\"etcd-lease\"} 0",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
    for family in [
        "seckill_grab_duration_seconds_bucket",
        "seckill_lock_acquire_duration_seconds_bucket",
        "seckill_lock_hold_duration_seconds_bucket",
        "seckill_lock_attempts_total",
        "seckill_build_info{version=",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        // Buckets from 100 µs to past the longest lease or pause.
        "seckill_grab_duration_seconds_bucket{strategy=\"set-nx-px-token\",le=\"0.0001\"}",
        "seckill_grab_duration_seconds_bucket{strategy=\"set-nx-px-token\",le=\"300\"}",
    ] {
        assert!(text.contains(family), "missing {family}");
    }
}

#[tokio::test]
async fn lost_updates_and_undersold_are_counted_apart_and_never_cancel() {
    let (_redis, app) = app().await;
    app.reset(1, 10).await;
    app.reset(2, 10).await;
    let pool = &app.state.deps.pool;
    // Product 1: three orders the stock column never saw (lost updates).
    for user in 1..=3 {
        sqlx::query(
            "INSERT INTO orders (product_id, user_id, quantity, strategy) VALUES (1, $1, 1, 'none')",
        )
        .bind(user)
        .execute(pool)
        .await
        .expect("insert");
    }
    // Product 2: three units gone from the column, no order (undersold).
    sqlx::query("UPDATE products SET stock = 7 WHERE id = 2")
        .execute(pool)
        .await
        .expect("update");
    let one = app.audit(1).await;
    assert_eq!(
        (one["lost_updates"].as_i64(), one["undersold"].as_i64()),
        (Some(3), Some(0)),
        "{one}"
    );
    let two = app.audit(2).await;
    assert_eq!(
        (two["lost_updates"].as_i64(), two["undersold"].as_i64()),
        (Some(0), Some(3)),
        "{two}"
    );
    let text = app.metrics().await;
    for line in [
        "seckill_lost_updates{product=\"1\"} 3",
        "seckill_lost_updates{product=\"2\"} 0",
        "seckill_undersold_units{product=\"1\"} 0",
        "seckill_undersold_units{product=\"2\"} 3",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
}

/// `redis-lua-stock` writes its stock column behind the orders: a scrape in
/// the middle of a sale must judge the orders against the Redis stock and
/// never show a lost update the audit after the sale does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_during_a_redis_lua_stock_sale_never_shows_a_lost_update() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = std::sync::Arc::new(
        TestApp::spawn(
            AppOptions::new(&db, &redis.url())
                .strategy("redis-lua-stock")
                .work_delay_ms(0),
        )
        .await,
    );
    app.reset(1, 400).await;
    let buyers: Vec<_> = (0..16)
        .map(|b| {
            let app = app.clone();
            tokio::spawn(async move {
                for i in 0..30 {
                    app.grab(1, b * 1_000 + i, 1).await;
                }
            })
        })
        .collect();
    let mut scrapes = 0;
    let mut seen_lost = Vec::new();
    while !buyers.iter().all(tokio::task::JoinHandle::is_finished) {
        let text = app.metrics().await;
        let lost = text
            .lines()
            .find_map(|l| l.strip_prefix("seckill_lost_updates{product=\"1\"} "))
            .and_then(|v| v.parse::<f64>().ok())
            .expect("lost updates gauge of product 1");
        scrapes += 1;
        if lost != 0.0 {
            seen_lost.push(lost);
        }
    }
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 400, "sold out: {audit}");
    assert_eq!(audit["lost_updates"], 0, "{audit}");
    assert!(scrapes >= 5, "scraped during the sale: {scrapes}");
    assert!(
        seen_lost.is_empty(),
        "{} of {scrapes} scrapes showed lost updates: {seen_lost:?}",
        seen_lost.len()
    );
}

/// `pg-for-update` with more buyers than pooled connections: every grab
/// connection waits for the row. The pages people watch have their own
/// small pool and answer anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_answer_while_pg_for_update_starves_the_grab_pool() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = Arc::new(
        TestApp::spawn(
            AppOptions::new(&db, &redis.url())
                .strategy("pg-for-update")
                .work_delay_ms(100),
        )
        .await,
    );
    app.reset(1, 100_000).await;
    let stop = Arc::new(AtomicBool::new(false));
    let buyers: Vec<_> = (0..48)
        .map(|b| {
            let (app, stop) = (app.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    app.grab(1, b * 100_000 + i, 1).await;
                    i += 1;
                }
            })
        })
        .collect();
    let grab_pool = &app.state.deps.pool;
    let starving = || {
        grab_pool.size() == app.state.settings.database_max_connections && grab_pool.num_idle() == 0
    };
    // The reads begin once the buyers have taken every grab connection.
    seckill_testkit::eventually(
        "the buyers take every grab connection",
        Duration::from_secs(10),
        || {
            std::future::ready(if starving() {
                Ok(())
            } else {
                Err((grab_pool.size(), grab_pool.num_idle()))
            })
        },
    )
    .await;
    let mut starved = false;
    let mut took = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..15 {
        starved |= starving();
        for path in ["/api/v1/status", "/metrics", "/health/ready"] {
            let started = Instant::now();
            let status = app
                .client
                .get(format!("{}{path}", app.address))
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16();
            took.push(started.elapsed());
            statuses.push((path, status));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for buyer in buyers {
        buyer.await.expect("buyer");
    }
    assert!(starved, "every grab connection was taken during the reads");
    assert!(
        statuses.iter().all(|(_, s)| *s == 200),
        "every read answered 200: {statuses:?}"
    );
    took.sort();
    let p99 = took[took.len() * 99 / 100];
    eprintln!(
        "status/metrics/ready under a starved grab pool: p99 {p99:?}, max {:?}",
        took.last()
    );
    // The goal (100 ms) is a benchmark figure; here: far below the grab
    // pool's acquire timeout (1.5 s), which is what the readers waited for
    // when they shared it.
    assert!(p99 < Duration::from_millis(1_000), "p99 {p99:?}");
}

/// The audit reads totals the `orders` triggers keep (one scrape must not
/// scan every order). They must equal a count of the rows themselves after
/// everything that can happen to orders: two orders of one user racing in
/// two open transactions (the duplicate a broken lock lets in), multi-row
/// inserts, rolled-back inserts, deletes, a reset, and grabs over HTTP.
#[tokio::test]
async fn the_audit_totals_equal_a_recount_after_races_rollbacks_and_resets() {
    let (_redis, app) = app().await;
    app.reset(1, 1_000).await;
    app.reset(2, 1_000).await;
    let pool = app.state.deps.pool.clone();
    let insert = "INSERT INTO orders (product_id, user_id, quantity, strategy)
                  SELECT $1, u, $2, 'none' FROM unnest($3::BIGINT[]) u";
    // Users 1..=40 of product 1: a second order inserted while the first
    // one's transaction is still open, so it cannot see it (it waits in the
    // trigger for the first to commit, then counts the user twice).
    for user in 1..=40_i64 {
        let mut first = pool.begin().await.expect("begin");
        sqlx::query(insert)
            .bind(1_i64)
            .bind(1_i32)
            .bind(vec![user])
            .execute(&mut *first)
            .await
            .expect("first insert");
        let second = tokio::spawn({
            let pool = pool.clone();
            async move {
                sqlx::query(insert)
                    .bind(1_i64)
                    .bind(2_i32)
                    .bind(vec![user])
                    .execute(&pool)
                    .await
                    .expect("second insert");
            }
        });
        // The second waits for the first's row (read from PostgreSQL).
        crate::harness::until_lock_waiters(&pool, std::time::Duration::from_secs(10)).await;
        first.commit().await.expect("commit");
        second.await.expect("second");
    }
    // A multi-row insert with a user twice, and one that rolls back.
    sqlx::query(insert)
        .bind(2_i64)
        .bind(3_i32)
        .bind(vec![7_i64, 8, 7, 9])
        .execute(&pool)
        .await
        .expect("multi-row insert");
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query(insert)
        .bind(2_i64)
        .bind(1_i32)
        .bind(vec![8_i64, 9, 10])
        .execute(&mut *tx)
        .await
        .expect("insert");
    tx.rollback().await.expect("rollback");
    // Grabs over HTTP (the strategy's own INSERT), then a delete that
    // leaves user 5 with one order and user 6 with none.
    for user in 1_000..1_010 {
        assert_eq!(app.grab(1, user, 1).await.0, 201);
    }
    sqlx::query(
        "DELETE FROM orders WHERE product_id = 1 AND (user_id = 6 OR id IN
            (SELECT MIN(id) FROM orders WHERE product_id = 1 AND user_id = 5))",
    )
    .execute(&pool)
    .await
    .expect("delete");

    let (status, tally) = app.admin(Method::GET, "/admin/audit", None).await;
    assert_eq!(status, 200, "{tally}");
    let (status, recount) = app
        .admin(Method::GET, "/admin/audit?recount=true", None)
        .await;
    assert_eq!(status, 200, "{recount}");
    assert_eq!(
        (&tally["counted_by"], &recount["counted_by"]),
        (&json!("tally"), &json!("recount"))
    );
    assert_eq!(tally["products"], recount["products"]);
    let one = &tally["products"][0];
    // 80 racing orders (units 1 + 2 each) + 10 grabs − 3 deleted.
    assert_eq!(
        (&one["orders"], &one["ordered_units"], &one["duplicates"]),
        (&json!(87), &json!(40 * 3 + 10 - 3 - 1), &json!(38)),
        "{one}"
    );
    let two = &tally["products"][1];
    assert_eq!(
        (&two["orders"], &two["ordered_units"], &two["duplicates"]),
        (&json!(4), &json!(12), &json!(1)),
        "{two}"
    );

    app.reset(1, 5).await;
    let (_, after) = app.admin(Method::GET, "/admin/audit", None).await;
    let (_, recounted) = app
        .admin(Method::GET, "/admin/audit?recount=true", None)
        .await;
    assert_eq!(after["products"], recounted["products"]);
    assert_eq!(after["products"][0]["orders"], 0, "{after}");
    let (status, body) = app
        .admin(Method::GET, "/admin/audit?recount=maybe", None)
        .await;
    assert_error(status, &body, 400, "invalid_query");
}

/// The batch writer folds a batch into the audit totals itself (one
/// statement, the row trigger skipped): buyers repeated inside one batch
/// and across batches, a second product and a mixed quantity all count as
/// a full recount counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_orders_fold_into_the_audit_totals_as_a_recount_counts_them() {
    use seckill_app::order_batch::OrderBatcher;
    use seckill_app::strategy::GrabRequest;

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let mut options = AppOptions::new(&db, &redis.url()).strategy("pg-atomic");
    options.seed = "1:1000,2:1000";
    let app = TestApp::spawn(options).await;
    // One batch at a time, so orders queue up and batches hold several.
    let batcher = std::sync::Arc::new(OrderBatcher::new("redis-lua-stock", 16, 1, |_, _| {
        Box::pin(async {})
    }));
    let mut tasks = Vec::new();
    // Buyers 1..=20 order product 1 three times each (quantity 1, 2, 1);
    // buyers 1..=5 order product 2 once.
    for round in 0..3 {
        for user in 1..=20 {
            let (batcher, deps) = (batcher.clone(), app.state.deps.clone());
            let quantity = if round == 1 { 2 } else { 1 };
            tasks.push(tokio::spawn(async move {
                let req = GrabRequest {
                    product_id: 1,
                    user_id: user,
                    quantity,
                };
                batcher.insert(&deps, req).await
            }));
        }
    }
    for user in 1..=5 {
        let (batcher, deps) = (batcher.clone(), app.state.deps.clone());
        tasks.push(tokio::spawn(async move {
            let req = GrabRequest {
                product_id: 2,
                user_id: user,
                quantity: 1,
            };
            batcher.insert(&deps, req).await
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let order = task.await.expect("task").expect("order written");
        assert!(ids.insert(order.order_id), "one id per order");
    }
    assert_eq!(ids.len(), 65);

    let (status, tally) = app.admin(Method::GET, "/admin/audit", None).await;
    assert_eq!(status, 200, "{tally}");
    let (status, recount) = app
        .admin(Method::GET, "/admin/audit?recount=true", None)
        .await;
    assert_eq!(status, 200, "{recount}");
    assert_eq!(tally["counted_by"], json!("tally"));
    assert_eq!(tally["products"], recount["products"]);
    let products = tally["products"].as_array().expect("products");
    let one = &products[0];
    assert_eq!(
        (&one["orders"], &one["ordered_units"], &one["duplicates"]),
        (&json!(60), &json!(80), &json!(20)),
        "{one}"
    );
    let two = &products[1];
    assert_eq!(
        (&two["orders"], &two["ordered_units"], &two["duplicates"]),
        (&json!(5), &json!(5), &json!(0)),
        "{two}"
    );
    // Batches held more than one order (one commit at a time).
    let metrics = app.metrics().await;
    let batches: f64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("seckill_order_batch_size_count{strategy=\"redis-lua-stock\"} ")
        })
        .and_then(|v| v.parse().ok())
        .expect("batch count");
    assert!((1.0..65.0).contains(&batches), "{batches} batches");
    app.stop().await;
}

#[tokio::test]
async fn faults_refuse_delays_over_ten_minutes_and_a_zero_pause_every() {
    let (_redis, app) = app().await;
    for field in [
        "work_delay_ms",
        "pause_ms",
        "setnx_expire_gap_ms",
        "release_gap_ms",
    ] {
        let (status, body) = app
            .admin(
                Method::PUT,
                "/admin/faults",
                Some(json!({ field: 600_001 })),
            )
            .await;
        assert_error(status, &body, 400, "invalid_faults");
        assert!(
            body["message"].as_str().unwrap_or("").contains(field),
            "{body}"
        );
        let (status, body) = app
            .admin(
                Method::PUT,
                "/admin/faults",
                Some(json!({ field: 600_000 })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body[field], 600_000, "{body}");
    }
    let (status, body) = app
        .admin(
            Method::PUT,
            "/admin/faults",
            Some(json!({ "pause_every": 0 })),
        )
        .await;
    assert_error(status, &body, 400, "invalid_faults");
    app.stop().await;
}

/// Decode an answer into its wire type: the service writes exactly what the
/// load generator reads.
fn decode<T: serde::de::DeserializeOwned>(what: &str, body: &Value) -> T {
    serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("{what} does not decode into its wire type: {e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_decodes_into_its_wire_type() {
    use seckill_wire::{audit, error, faults, grab, history, products, strategies};

    let (_redis, app) = app().await;
    let (status, body) = app.admin(Method::GET, "/admin/strategies", None).await;
    assert_eq!(status, 200);
    let listed: strategies::StrategiesBody = decode("strategies", &body);
    assert_eq!(
        listed.get("fenced").map(|s| s.kind),
        Some(strategies::Kind::Fenced)
    );
    assert_eq!(serde_json::to_value(&listed).expect("encodes"), body);

    let (status, body) = app
        .admin(
            Method::PUT,
            "/admin/faults",
            Some(json!({ "work_delay_ms": 20 })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let set: faults::Faults = decode("faults", &body);
    assert_eq!(set.work_delay_ms, 20);
    let (_, body) = app
        .admin(
            Method::PUT,
            "/admin/history",
            Some(json!({ "enabled": true })),
        )
        .await;
    let switched: history::HistorySwitched = decode("history switch", &body);
    let run = switched.run.expect("a run id");

    // `none` under contention: sections overlap, the arbiter records them.
    app.switch("none").await;
    let grabs: Vec<_> = (1..=8)
        .map(|user| {
            let client = app.client.clone();
            let url = format!("{}/api/v1/products/1/grab", app.address);
            tokio::spawn(async move {
                let response = client
                    .post(url)
                    .json(&json!({ "user_id": user }))
                    .send()
                    .await
                    .expect("sent");
                (
                    response.status().as_u16(),
                    response.json::<Value>().await.expect("json"),
                )
            })
        })
        .collect();
    for grab in grabs {
        let (status, body) = grab.await.expect("grab task");
        assert_eq!(status, 201, "{body}");
        let order: grab::Order = decode("order", &body);
        assert_eq!((order.strategy.as_ref(), order.fence_token), ("none", None));
    }
    let (_, body) = app.admin(Method::GET, "/admin/history", None).await;
    let report: history::HistoryReport = decode("history", &body);
    assert_eq!(report.run.as_deref(), Some(run.as_str()));
    let none = report.of("none");
    assert_eq!(none.entries, 8, "{body}");
    assert!(none.overlaps > 0, "eight grabs at once overlap: {body}");
    let first = report.first_overlaps.first().expect("an overlap event");
    assert!(
        body["first_overlaps"][0]["at_us"].is_i64() && first.at_us > 1_600_000_000_000_000,
        "at_us is an exact integer of µs: {body}"
    );
    assert!(!first.inside.is_empty() && first.product == 1, "{body}");

    let (_, body) = app.get("/api/v1/products/1").await;
    let product: products::ProductBody = decode("product", &body);
    let (_, body) = app.admin(Method::GET, "/admin/audit", None).await;
    let audited: audit::AuditBody = decode("audit", &body);
    let row = audited.product(1).expect("product 1 audited");
    assert_eq!((row.stock, row.orders), (product.stock, 8));

    let (status, body) = app.grab(1, 1, 1).await;
    assert_eq!(status, 409, "{body}");
    let refused: error::ErrorBody = decode("error", &body);
    assert_eq!(refused.error, "already_purchased");

    let (_, body) = app
        .admin(
            Method::POST,
            "/admin/history/forget",
            Some(json!({ "instance": "gone" })),
        )
        .await;
    let forgotten: history::Forgotten = decode("forget", &body);
    assert_eq!(
        (forgotten.instance.as_str(), forgotten.removed),
        ("gone", 0)
    );
}

#[tokio::test]
async fn the_freeze_hook_is_refused_unless_scenario_hooks_are_on() {
    // A replica that stops itself needs someone to continue it: off by
    // default, the hook answers 403 and arms nothing.
    let (_redis, app) = app().await;
    let (status, body) = app
        .admin(
            Method::POST,
            "/admin/freeze",
            Some(json!({"at": "after-check"})),
        )
        .await;
    assert_error(status, &body, 403, "hooks_disabled");
    let (status, body) = app.admin(Method::DELETE, "/admin/freeze", None).await;
    assert_error(status, &body, 403, "hooks_disabled");
    assert_eq!(app.state.deps.freeze.armed(), None);
    // A point it does not know is a bad body, whatever the setting.
    let (status, body) = app
        .admin(Method::POST, "/admin/freeze", Some(json!({"at": "inside"})))
        .await;
    assert_eq!(status, 400, "{body}");
}
