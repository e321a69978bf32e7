//! The history tells the truth about what it lost: an exit that never
//! reached the arbiter is dropped as stale, not counted as an overlap; each
//! run counts its own errors; and `GET /admin/history/sections` lists every
//! section with its replica, its times and whether it overlapped.
//!
//! The arbiter is a `redis-server` of its own, reached through a proxy
//! ([`PgProxy`] forwards any TCP service) where a test cuts the link; the
//! service's own Redis (locks, strategy, faults) is never touched.

use std::time::Duration;

use reqwest::Method;
use seckill_app::configuration::Settings;
use seckill_wire::history::{HistoryReport, Section, SectionsBody};
use serde_json::{json, Value};

use crate::harness::{fresh_database, PgProxy, RedisServer, TestApp};
use seckill_testkit::eventually;

/// How long a replica gets to reach a state the test waits for.
const TEN_S: Duration = Duration::from_secs(10);

/// A replica named `instance` whose history arbiter is `arbiter_url`, with
/// the stale bound `stale_ms` (otherwise as [`TestApp::spawn`] builds it).
async fn replica(
    db: &str,
    redis: &RedisServer,
    arbiter_url: &str,
    instance: &str,
    stale_ms: u64,
) -> TestApp {
    TestApp::start(Settings {
        history_url: Some(arbiter_url.parse().expect("a Redis URL")),
        history_stale_ms: seckill_app::configuration::Positive::new(stale_ms),
        instance_id: Some(instance.to_owned()),
        ..TestApp::base_settings(db, &redis.url(), "set-nx-px-token")
    })
    .await
}

/// A proxy in front of `arbiter`, and the arbiter's URL through it.
async fn proxied(arbiter: &RedisServer) -> (PgProxy, String) {
    let proxy = PgProxy::start(&arbiter.url()).await;
    let url = format!("redis://127.0.0.1:{}", proxy.port);
    (proxy, url)
}

async fn history(app: &TestApp) -> (u16, Value) {
    app.admin(Method::GET, "/admin/history", None).await
}

/// `GET /admin/history`, retried until the arbiter answers (after a cut
/// link is restored, the replica reconnects at its next call).
async fn report(app: &TestApp) -> HistoryReport {
    let body = eventually("the arbiter answers again", TEN_S, || async {
        match history(app).await {
            (200, body) => Ok(body),
            other => Err(other),
        }
    })
    .await;
    serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("not a HistoryReport: {e}: {body}"))
}

async fn sections(app: &TestApp) -> SectionsBody {
    let (status, body) = app
        .admin(Method::GET, "/admin/history/sections", None)
        .await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("not a SectionsBody: {e}: {body}"))
}

async fn new_run(app: &TestApp) -> String {
    let (status, body) = app
        .admin(
            Method::PUT,
            "/admin/history",
            Some(json!({ "enabled": true })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["run"].as_str().expect("run id").to_owned()
}

/// Wait until `app` records run `run` (a replica follows a run started
/// elsewhere at its next refresh).
async fn follows(app: &TestApp, run: &str) -> HistoryReport {
    eventually(&format!("the replica follows run {run}"), TEN_S, || async {
        let report = report(app).await;
        if report.run.as_deref() == Some(run) {
            Ok(report)
        } else {
            Err(report)
        }
    })
    .await
}

/// Ask `app` to re-read the run id until a read fails: its link is cut
/// (a link still open closes as soon as the proxy's task is dropped). A
/// read that still succeeds reads the run `app` already follows.
async fn until_a_refresh_fails(app: &TestApp) {
    eventually("a refresh of the run id fails", TEN_S, || async {
        match app.state.deps.history.refresh().await {
            Err(_) => Ok(()),
            Ok(()) => Err("the run id was read"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_that_never_arrived_is_stale_not_an_overlap() {
    let redis = RedisServer::start();
    let arbiter = RedisServer::start();
    let db = fresh_database().await;
    let (proxy, arbiter_url) = proxied(&arbiter).await;
    let app = replica(&db, &redis, &arbiter_url, "r1", 500).await;
    let run = new_run(&app).await;

    // A grab inside its section for 1.5 s; the arbiter's link is cut while
    // it is inside, so its exit fails.
    app.set_faults(json!({ "work_delay_ms": 1500 })).await;
    let grab = {
        let client = app.client.clone();
        let url = format!("{}/api/v1/products/1/grab", app.address);
        tokio::spawn(async move {
            let response = client
                .post(url)
                .json(&json!({ "user_id": 1 }))
                .send()
                .await
                .expect("sent");
            response.status().as_u16()
        })
    };
    eventually("the grab is inside", TEN_S, || async {
        let report = report(&app).await;
        if report.inside.is_empty() {
            Err(report)
        } else {
            Ok(())
        }
    })
    .await;
    proxy.cut();
    assert_eq!(
        grab.await.expect("grab task"),
        201,
        "the history never fails a grab"
    );
    proxy.restore();

    // The ghost: the arbiter still has it inside; the replica counted the
    // failure.
    let after_cut = report(&app).await;
    assert_eq!(after_cut.run.as_deref(), Some(run.as_str()));
    assert_eq!(after_cut.inside.len(), 1, "the lost exit: {after_cut:?}");
    assert_eq!(after_cut.inside[0].instance, "r1");
    assert!(after_cut.errors >= 1, "{after_cut:?}");

    // Past the stale bound (500 ms since the ghost entered, on the
    // arbiter's clock, which judges it), a second grab drops the ghost
    // instead of counting an overlap with it.
    app.set_faults(json!({ "work_delay_ms": 0 })).await;
    let entered_us = after_cut.inside[0].since_us;
    eventually("the ghost is past the stale bound", TEN_S, || {
        let (secs, micros): (i64, i64) =
            redis::cmd("TIME").query(&mut arbiter.conn()).expect("time");
        let age_us = secs * 1_000_000 + micros - entered_us;
        std::future::ready(if age_us > 500_000 {
            Ok(())
        } else {
            Err(age_us)
        })
    })
    .await;
    assert_eq!(app.grab(1, 2, 1).await.0, 201);
    let after = report(&app).await;
    let figures = after.of("set-nx-px-token");
    assert_eq!(figures.entries, 2, "{after:?}");
    assert_eq!(figures.overlaps, 0, "a lost exit is no overlap: {after:?}");
    assert_eq!(figures.max_holders, 1, "{after:?}");
    assert_eq!(after.stale, 1, "{after:?}");
    assert!(after.errors >= 1, "{after:?}");
    assert!(after.inside.is_empty(), "{after:?}");
    // Only the second section finished: the ghost has no exit to show.
    let listed = sections(&app).await;
    assert_eq!(listed.sections.len(), 1, "{listed:?}");
    assert!(!listed.sections[0].overlap, "{listed:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_counts_its_own_errors() {
    let redis = RedisServer::start();
    let arbiter = RedisServer::start();
    let db = fresh_database().await;
    let (proxy_a, url_a) = proxied(&arbiter).await;
    let (proxy_b, url_b) = proxied(&arbiter).await;
    let a = replica(&db, &redis, &url_a, "a", 60_000).await;
    let b = replica(&db, &redis, &url_b, "b", 60_000).await;
    let first = new_run(&a).await;
    follows(&b, &first).await;

    // Both links cut: a's entry fails (the grab goes on), b's refreshes of
    // the run id fail while the run is on (its own loop's, and those asked
    // here). Both count.
    proxy_a.cut();
    proxy_b.cut();
    assert_eq!(a.grab(1, 1, 1).await.0, 201);
    until_a_refresh_fails(&b).await;
    proxy_a.restore();
    proxy_b.restore();
    let (ra, rb) = (report(&a).await, report(&b).await);
    assert_eq!(ra.run.as_deref(), Some(first.as_str()));
    assert!(ra.errors >= 1, "a's failed entry: {ra:?}");
    assert_eq!(ra.of("set-nx-px-token").entries, 0, "{ra:?}");
    assert!(rb.errors >= 1, "b's failed refreshes: {rb:?}");
    // b reads the run id again before the next run starts.
    eventually("b reads the run id again", TEN_S, || {
        b.state.deps.history.refresh()
    })
    .await;

    // A new run: each replica counts from zero — a at once (it started
    // the run), b when its refresh finds the new id.
    let second = new_run(&a).await;
    let ra = report(&a).await;
    assert_eq!(
        (ra.run.as_deref(), ra.errors),
        (Some(second.as_str()), 0),
        "{ra:?}"
    );
    let rb = follows(&b, &second).await;
    assert_eq!(rb.errors, 0, "{rb:?}");
    assert_eq!(b.grab(1, 2, 1).await.0, 201);
    let rb = report(&b).await;
    assert_eq!(rb.of("set-nx-px-token").entries, 1, "{rb:?}");
    assert_eq!(rb.errors, 0, "{rb:?}");

    // b cannot read the run id while a third run starts: when it finds
    // that run, it starts it at one error (it may have missed its first
    // sections), while a, which started it, has none.
    proxy_b.cut();
    until_a_refresh_fails(&b).await;
    let third = new_run(&a).await;
    proxy_b.restore();
    let rb = follows(&b, &third).await;
    assert_eq!(rb.errors, 1, "{rb:?}");
    assert_eq!(report(&a).await.errors, 0);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sections_list_each_replica_its_times_and_both_sides_of_an_overlap() {
    let redis = RedisServer::start();
    let arbiter = RedisServer::start();
    let db = fresh_database().await;
    let a = replica(&db, &redis, &arbiter.url(), "r1", 60_000).await;
    let b = replica(&db, &redis, &arbiter.url(), "r2", 60_000).await;

    // Off: no run, no sections. And the route needs the token.
    let off = sections(&a).await;
    assert_eq!((off.run, off.sections.len(), off.dropped), (None, 0, 0));
    let response = a
        .client
        .get(format!("{}/admin/history/sections", a.address))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 401);

    let run = new_run(&a).await;
    follows(&b, &run).await;
    a.switch("none").await;
    // Two grabs at once, one on each replica, each inside for a second:
    // with no lock, they overlap.
    a.set_faults(json!({ "work_delay_ms": 1000 })).await;
    eventually("b applies the work delay", TEN_S, || {
        let faults = b.state.control.faults();
        std::future::ready(if faults.work_delay_ms == 1000 {
            Ok(())
        } else {
            Err(faults)
        })
    })
    .await;
    let (one, two) = tokio::join!(a.grab(1, 1, 1), b.grab(1, 2, 1));
    assert_eq!((one.0, two.0), (201, 201), "{one:?} {two:?}");
    // Then one alone, after both left: no overlap.
    a.set_faults(json!({ "work_delay_ms": 0 })).await;
    assert_eq!(a.grab(1, 3, 1).await.0, 201);

    let listed = sections(&b).await;
    assert_eq!(listed.run.as_deref(), Some(run.as_str()));
    assert_eq!(listed.dropped, 0);
    let s = &listed.sections;
    assert_eq!(s.len(), 3, "{listed:?}");
    for section in s {
        assert_eq!((section.strategy.as_str(), section.product), ("none", 1));
        assert!(
            section
                .member
                .starts_with(&format!("{}:", section.instance)),
            "{section:?}"
        );
        let exited = section.exited_us.expect("finished");
        assert!(
            section.entered_us > 1_600_000_000_000_000 && exited > section.entered_us,
            "times in µs on the arbiter's clock: {section:?}"
        );
    }
    let (x, y, alone) = (&s[0], &s[1], &s[2]);
    let mut instances = [x.instance.as_str(), y.instance.as_str()];
    instances.sort_unstable();
    assert_eq!(instances, ["r1", "r2"], "{listed:?}");
    assert!(
        x.entered_us < y.exited_us.unwrap_or(0) && y.entered_us < x.exited_us.unwrap_or(0),
        "the two grabs were inside together: {listed:?}"
    );
    assert!(x.overlap && y.overlap, "both sides marked: {listed:?}");
    assert_eq!(alone.instance, "r1");
    assert!(
        alone.entered_us >= x.exited_us.unwrap_or(0).max(y.exited_us.unwrap_or(0)),
        "{listed:?}"
    );
    assert!(!alone.overlap, "a section alone: {listed:?}");
    let figures = report(&a).await.of("none");
    assert_eq!(
        (figures.entries, figures.overlaps, figures.max_holders),
        (3, 1, 2)
    );

    // A section inside now is listed last, without an exit.
    a.set_faults(json!({ "work_delay_ms": 1500 })).await;
    let grab = {
        let client = a.client.clone();
        let url = format!("{}/api/v1/products/1/grab", a.address);
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({ "user_id": 4 }))
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        })
    };
    let open: Section = eventually("the fourth section is open", TEN_S, || async {
        let listed = sections(&a).await;
        match listed.sections.last().filter(|s| s.exited_us.is_none()) {
            Some(last) => {
                assert_eq!(listed.sections.len(), 4, "{listed:?}");
                Ok(last.clone())
            }
            None => Err(listed),
        }
    })
    .await;
    assert_eq!(open.instance, "r1");
    assert!(!open.overlap, "{open:?}");
    assert_eq!(grab.await.expect("grab task"), 201);
    let listed = sections(&a).await;
    assert_eq!(listed.sections.len(), 4, "{listed:?}");
    assert!(listed.sections.iter().all(|s| s.exited_us.is_some()));
    a.stop().await;
    b.stop().await;
}
