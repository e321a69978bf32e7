//! The admin routes a load generator checks a run with: a product's
//! orders, paged (`GET /admin/products/{id}/orders`), and clearing every
//! fault at once (`DELETE /admin/faults`).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use seckill_wire::faults::Faults;
use seckill_wire::orders::OrdersPage;
use serde_json::{json, Value};

use crate::harness::{fresh_database, AppOptions, PgProxy, RedisServer, TestApp};
use seckill_testkit::eventually;

fn page(body: &Value) -> OrdersPage {
    serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("not an OrdersPage: {e}: {body}"))
}

async fn orders(app: &TestApp, path: &str) -> OrdersPage {
    let (status, body) = app.admin(Method::GET, path, None).await;
    assert_eq!(status, 200, "{path}: {body}");
    page(&body)
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
async fn orders_come_in_pages_in_id_order_since_the_last_reset() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url())).await;
    app.reset(1, 100).await;
    app.reset(2, 100).await;

    // Seven orders of product 1 (interleaved with orders of product 2,
    // which its pages must not show): order id -> (user, quantity).
    let mut placed = BTreeMap::new();
    for user in 1..=7 {
        let quantity = 1 + user % 3;
        let (status, order) = app.grab(1, user, quantity).await;
        assert_eq!(status, 201, "{order}");
        let id = order["order_id"].as_i64().expect("order_id");
        placed.insert(id, (user, quantity));
        let (status, other) = app.grab(2, 100 + user, 1).await;
        assert_eq!(status, 201, "{other}");
    }
    let ids: Vec<i64> = placed.keys().copied().collect();

    // Pages of three: 3 + 3 + 1, each `next_after` the last id of a full page.
    let mut seen = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let got = orders(
            &app,
            &format!("/admin/products/1/orders?after={after}&limit=3"),
        )
        .await;
        pages += 1;
        assert!(got.orders.len() <= 3, "{got:?}");
        seen.extend(got.orders.iter().cloned());
        match got.next_after {
            Some(next) => {
                assert_eq!(got.orders.len(), 3, "a full page: {got:?}");
                assert_eq!(Some(next), got.orders.last().map(|o| o.order_id));
                after = next;
            }
            None => {
                assert!(got.orders.len() < 3, "{got:?}");
                break;
            }
        }
        assert!(pages < 10, "paging does not end: {seen:?}");
    }
    assert_eq!(pages, 3);
    let seen_ids: Vec<i64> = seen.iter().map(|o| o.order_id).collect();
    assert_eq!(seen_ids, ids, "every order once, ascending by id");
    for order in &seen {
        let (user, quantity) = placed[&order.order_id];
        assert_eq!(
            (order.user_id, i64::from(order.quantity)),
            (user, quantity),
            "{order:?}"
        );
        assert!(
            order.created_at.ends_with('Z') && order.created_at.contains('T'),
            "RFC 3339 in UTC: {order:?}"
        );
    }

    // The defaults: from the first, up to 1000 — all of them, last page.
    let all = orders(&app, "/admin/products/1/orders").await;
    assert_eq!(all.orders, seen);
    assert_eq!(all.next_after, None);
    // A page that is exactly full still names its last id; the next is empty.
    let full = orders(&app, "/admin/products/1/orders?limit=7").await;
    assert_eq!(full.next_after, Some(ids[6]));
    let empty = orders(&app, &format!("/admin/products/1/orders?after={}", ids[6])).await;
    assert!(empty.orders.is_empty() && empty.next_after.is_none());
    // `after` in the middle: the orders above it.
    let tail = orders(&app, &format!("/admin/products/1/orders?after={}", ids[4])).await;
    let tail_ids: Vec<i64> = tail.orders.iter().map(|o| o.order_id).collect();
    assert_eq!(tail_ids, ids[5..]);

    // A reset deletes the product's orders: nothing since it.
    app.reset(1, 100).await;
    let after_reset = orders(&app, "/admin/products/1/orders").await;
    assert!(after_reset.orders.is_empty(), "{after_reset:?}");
    let other = orders(&app, "/admin/products/2/orders").await;
    assert_eq!(other.orders.len(), 7, "product 2 keeps its own: {other:?}");
    app.stop().await;
}

#[tokio::test]
async fn the_orders_route_refuses_bad_queries_and_unknown_products_and_needs_the_token() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url())).await;
    assert_eq!(app.grab(1, 1, 1).await.0, 201);

    for (query, code) in [
        ("limit=0", "invalid_limit"),
        ("limit=10001", "invalid_limit"),
        ("limit=-5", "invalid_limit"),
        ("after=-1", "invalid_after"),
        ("limit=ten", "invalid_query"),
        ("after=1.5", "invalid_query"),
        ("page=2", "invalid_query"),
    ] {
        let (status, body) = app
            .admin(
                Method::GET,
                &format!("/admin/products/1/orders?{query}"),
                None,
            )
            .await;
        assert_error(status, &body, 400, code);
    }
    let largest = orders(&app, "/admin/products/1/orders?limit=10000").await;
    assert_eq!(largest.orders.len(), 1);

    let (status, body) = app
        .admin(Method::GET, "/admin/products/999/orders", None)
        .await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = app
        .admin(Method::GET, "/admin/products/0/orders", None)
        .await;
    assert_error(status, &body, 400, "invalid_product_id");

    let url = format!("{}/admin/products/1/orders", app.address);
    for token in [None, Some("wrong-token")] {
        let mut request = app.client.get(&url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("sent");
        let status = response.status().as_u16();
        let body: Value = response.json().await.expect("json");
        assert_error(status, &body, 401, "unauthorized");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_orders_route_answers_503_without_its_database() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let proxy = PgProxy::start(&db).await;
    let app = TestApp::spawn(AppOptions::new(&proxy.url_for(&db), &redis.url())).await;
    assert_eq!(app.grab(1, 1, 1).await.0, 201);
    assert_eq!(
        orders(&app, "/admin/products/1/orders").await.orders.len(),
        1
    );

    proxy.cut();
    let (status, body) = app
        .admin(Method::GET, "/admin/products/1/orders", None)
        .await;
    assert_error(status, &body, 503, "unavailable");

    proxy.restore();
    let body = eventually(
        "the orders route recovers",
        Duration::from_secs(10),
        || async {
            match app
                .admin(Method::GET, "/admin/products/1/orders", None)
                .await
            {
                (200, body) => Ok(body),
                other => Err(other),
            }
        },
    )
    .await;
    assert_eq!(page(&body).orders.len(), 1, "{body}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_faults_clears_every_fault_on_every_replica() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let configured = AppOptions::new(&db, &redis.url()).work_delay_ms(3);
    let a = TestApp::spawn(configured.clone()).await;
    let b = TestApp::spawn(configured).await;

    a.set_faults(json!({
        "work_delay_ms": 40, "pause_ms": 100, "pause_every": 3,
        "pause_at": "before-commit", "unlock_before_commit": true,
        "setnx_expire_gap_ms": 5, "release_gap_ms": 6, "check_revision": true
    }))
    .await;
    let (_, set) = a.admin(Method::GET, "/admin/faults", None).await;
    assert_eq!(set["unlock_before_commit"], true, "{set}");
    faults_reach(&b, &set).await;

    // Without the token nothing is cleared.
    let response = a
        .client
        .delete(format!("{}/admin/faults", a.address))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 401);
    let (_, still) = a.admin(Method::GET, "/admin/faults", None).await;
    assert_eq!(still, set);

    // Cleared: the faults of a fresh deployment, the configured work delay
    // back (it is the simulated work, not a fault).
    let cleared = Faults::with_work_delay(3);
    let (status, body) = a.admin(Method::DELETE, "/admin/faults", None).await;
    assert_eq!(status, 200, "{body}");
    let answered: Faults = serde_json::from_value(body.clone()).expect("Faults");
    assert_eq!(answered, cleared, "{body}");
    let (_, now) = a.admin(Method::GET, "/admin/faults", None).await;
    assert_eq!(now, body, "the answer is what is in force");

    // The other replica follows (it re-reads the shared faults).
    faults_reach(&b, &body).await;
    a.stop().await;
    b.stop().await;
}

/// Wait until `app` applies exactly `faults` (it re-reads them every 50 ms).
async fn faults_reach(app: &TestApp, faults: &Value) {
    let what = format!("the replica applies {faults}");
    eventually(&what, Duration::from_secs(10), || async {
        let (status, body) = app.admin(Method::GET, "/admin/faults", None).await;
        assert_eq!(status, 200, "{body}");
        if body == *faults {
            Ok(())
        } else {
            Err(body)
        }
    })
    .await;
}
