//! The live status page (`GET /`) seen through a real headless Chromium,
//! and its JSON and Server-Sent Events feeds seen over HTTP.
//!
//! While a paced load runs (bursts of distinct buyers every 100 ms, a work
//! delay inside the critical section), the page is loaded twice: the stock
//! shown must change between the loads. After the load, the numbers in the
//! page must equal `/admin/audit`'s. Under `none` the page shows oversold
//! units in red; a screenshot is decoded and checked to be a real render.
//!
//! Chromium loads `/?transport=poll`: `--virtual-time-budget` never runs
//! out while a request is pending, and an open event stream always is. The
//! stream itself is checked over HTTP.
//!
//! Needs `/usr/bin/chromium` (`scripts/services.sh` installs it). Without it
//! the browser tests are skipped with a loud message — unless
//! `SECKILL_REQUIRE_CHROMIUM` is set (CI), where a missing browser fails.
//! `SECKILL_STATUS_SCREENSHOT=path` keeps a copy of the screenshot
//! (that is how `docs/status-page.png` is made).
//!
//! The faults banner, the undersold units and the history's overlaps: a
//! fault switched on through `PUT /admin/faults` shows in the page, `DELETE
//! /admin/faults` clears it ("no fault"); the overlaps read "history off"
//! until `PUT /admin/history` starts a run, then the arbiter's count.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::harness::{fresh_database, AppOptions, Outcomes, RedisServer, TestApp};
use seckill_testkit::{eventually, Image};

/// Virtual time each page load gets: the first fetch, then a poll or two.
const BUDGET_MS: u64 = 1_500;
/// Real time a Chromium run may take before it is killed.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);
/// Stock colour of the page (`--stock`) and its violation red (`--bad`).
const STOCK_RGB: [u8; 3] = [0xff, 0xd2, 0x3f];
const BAD_RGB: [u8; 3] = [0xff, 0x3b, 0x3b];

/// Whether the browser tests can run; panics when CI requires them.
fn chromium_available() -> bool {
    browser().is_some()
}

fn browser() -> Option<&'static str> {
    seckill_testkit::chromium("status page browser test")
}

/// A child process killed (and reaped) when dropped: a Chromium the test
/// gave up on does not outlive it.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run headless Chromium with `args` then `url`, in a profile of its own;
/// its stdout. Killed after [`CHROMIUM_TIMEOUT`].
async fn chromium(args: Vec<String>, url: String) -> String {
    let dir = std::env::temp_dir().join(format!("seckill-chromium-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("profile dir");
    let out_path = dir.join("stdout.html");
    let out = std::fs::File::create(&out_path).expect("stdout file");
    let mut child = KillOnDrop(
        Command::new(browser().expect("chromium checked by the test"))
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                "--mute-audio",
            ])
            .arg(format!("--user-data-dir={}", dir.join("profile").display()))
            .args(&args)
            .arg(&url)
            .stdout(out)
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts"),
    );
    let what = format!("chromium {args:?} {url} finishes");
    let status = eventually(&what, CHROMIUM_TIMEOUT, || {
        std::future::ready(match child.0.try_wait().expect("wait for chromium") {
            Some(status) => Ok(status),
            None => Err("still running"),
        })
    })
    .await;
    assert!(status.success(), "chromium {args:?} {url}: {status}");
    let text = std::fs::read_to_string(&out_path).expect("chromium output");
    let _ = std::fs::remove_dir_all(&dir);
    text
}

fn page_url(app: &TestApp, product: i64) -> String {
    format!("{}/?product={product}&transport=poll", app.address)
}

/// The page's DOM after its first numbers (and a poll or two).
async fn dump_dom(app: &TestApp, product: i64) -> Page {
    let dom = chromium(
        vec![
            format!("--virtual-time-budget={BUDGET_MS}"),
            "--dump-dom".into(),
        ],
        page_url(app, product),
    )
    .await;
    assert!(
        dom.contains("data-loaded=\"1\""),
        "the page never rendered numbers:\n{dom}"
    );
    Page { dom }
}

/// A 1280×800 screenshot of the page, decoded.
async fn screenshot(app: &TestApp, product: i64) -> (PathBuf, Image) {
    let path = std::env::temp_dir().join(format!("seckill-status-{}.png", uuid::Uuid::new_v4()));
    chromium(
        vec![
            format!("--virtual-time-budget={BUDGET_MS}"),
            "--window-size=1280,800".into(),
            format!("--screenshot={}", path.display()),
        ],
        page_url(app, product),
    )
    .await;
    let image = Image::decode(&path);
    (path, image)
}

/// A dumped DOM.
struct Page {
    dom: String,
}

impl Page {
    /// Text of the element with `id` (no nested tags in the ones we read).
    fn text(&self, id: &str) -> String {
        let marker = format!("id=\"{id}\"");
        let at = self
            .dom
            .find(&marker)
            .unwrap_or_else(|| panic!("#{id} in the page:\n{}", self.dom));
        let rest = &self.dom[at..];
        let start = rest.find('>').expect("tag end") + 1;
        let end = rest[start..].find('<').expect("text end") + start;
        rest[start..end].trim().to_owned()
    }

    fn number(&self, id: &str) -> f64 {
        let text = self.text(id);
        text.parse()
            .unwrap_or_else(|_| panic!("#{id} is not a number: {text:?}"))
    }

    fn int(&self, id: &str) -> i64 {
        let value = self.number(id);
        assert!(value.fract() == 0.0, "#{id} = {value} is not whole");
        value as i64
    }

    /// Attribute `name` of the element with `id`.
    fn attr(&self, id: &str, name: &str) -> String {
        let marker = format!("id=\"{id}\"");
        let at = self.dom.find(&marker).expect("element");
        let tag_start = self.dom[..at].rfind('<').expect("tag start");
        let tag_end = at + self.dom[at..].find('>').expect("tag end");
        self.dom[tag_start..tag_end]
            .split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .unwrap_or_else(|| panic!("#{id} has no {name}: {}", &self.dom[tag_start..tag_end]))
            .to_owned()
    }

    /// Whether the card of `id` is marked as a violation (red).
    fn is_red(&self, id: &str) -> bool {
        let marker = format!("id=\"{id}-card\"");
        let at = self.dom.find(&marker).expect("card");
        let tag_start = self.dom[..at].rfind('<').expect("tag start");
        let tag_end = at + self.dom[at..].find('>').expect("tag end");
        let tag = &self.dom[tag_start..tag_end];
        tag.split("class=\"")
            .nth(1)
            .and_then(|c| c.split('"').next())
            .is_some_and(|classes| classes.split_whitespace().any(|c| c == "bad"))
    }

    /// The page's numbers must be the audit's.
    fn assert_matches_audit(&self, audit: &Value, strategy: &str) {
        assert_eq!(self.text("strategy"), strategy);
        for (id, key) in [
            ("stock", "stock"),
            ("initial-stock", "initial_stock"),
            ("orders", "orders"),
            ("ordered-units", "ordered_units"),
            ("oversold", "oversold"),
            ("lost", "lost_updates"),
            ("duplicates", "duplicates"),
        ] {
            assert_eq!(
                Some(self.int(id)),
                audit[key].as_i64(),
                "#{id} against audit {key} in {audit}"
            );
        }
        for (id, key) in [
            ("oversold", "oversold"),
            ("lost", "lost_updates"),
            ("duplicates", "duplicates"),
        ] {
            assert_eq!(
                self.is_red(id),
                audit[key] != 0,
                "#{id} red exactly when non-zero ({audit})"
            );
        }
    }
}

/// Bursts of `burst` distinct buyers every 100 ms until `stop` is set,
/// then the outcomes once the last burst has answered. A `busy` answer is
/// retried (testkit's poll, for up to a minute), as a client would.
fn paced_load(
    app: &TestApp,
    product: i64,
    burst: i64,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Outcomes> {
    let client = app.client.clone();
    let url = format!("{}/api/v1/products/{product}/grab", app.address);
    tokio::spawn(async move {
        let mut grabs = Vec::new();
        let mut next_user = 1;
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        while !stop.load(Ordering::SeqCst) {
            ticker.tick().await;
            for user in next_user..next_user + burst {
                let client = client.clone();
                let url = url.clone();
                grabs.push(tokio::spawn(async move {
                    let what = format!("buyer {user} gets an answer other than busy");
                    eventually(&what, Duration::from_secs(60), || async {
                        let response = client
                            .post(&url)
                            .json(&json!({ "user_id": user, "quantity": 1 }))
                            .send()
                            .await
                            .expect("grab sent");
                        match response.status().as_u16() {
                            429 => Err(429),
                            status => Ok(status.to_string()),
                        }
                    })
                    .await
                }));
            }
            next_user += burst;
        }
        let mut outcomes = Outcomes::new();
        for grab in grabs {
            *outcomes.entry(grab.await.expect("grab task")).or_default() += 1;
        }
        outcomes
    })
}

/// Wait until the audit's stock of product 1 is other than `from`.
async fn until_the_stock_moves_from(app: &TestApp, from: i64) {
    eventually(
        &format!("the stock moves from {from}"),
        Duration::from_secs(15),
        || async {
            let audit = app.audit(1).await;
            if audit["stock"].as_i64().is_some_and(|stock| stock != from) {
                Ok(())
            } else {
                Err(audit)
            }
        },
    )
    .await;
}

async fn app_with(strategy: &'static str, stock: i64) -> (RedisServer, TestApp) {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(
        AppOptions::new(&db, &redis.url())
            .strategy(strategy)
            .work_delay_ms(20),
    )
    .await;
    app.reset(1, stock).await;
    (redis, app)
}

#[tokio::test]
async fn status_page_counts_down_live_and_ends_on_the_audit_under_none() {
    if !chromium_available() {
        return;
    }
    let (_redis, app) = app_with("none", 300).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = paced_load(&app, 1, 8, stop.clone());
    // The page first loads once the run has begun (no stock point at the
    // top of the chart), and again once the stock moved since.
    until_the_stock_moves_from(&app, 300).await;
    let first = dump_dom(&app, 1).await;
    until_the_stock_moves_from(&app, first.int("stock")).await;
    let second = dump_dom(&app, 1).await;
    // Mid-run, so the picture shows a live rate and the red cards.
    let (shot_path, shot) = screenshot(&app, 1).await;
    // The paced load (80 grabs/s) oversells 300 units only once more than
    // 300 orders went through: keep it on until the audit shows it, however
    // fast the browser was (at most 15 s).
    seckill_testkit::eventually(
        "the audit shows an oversell",
        Duration::from_secs(15),
        || async {
            let audit = app.audit(1).await;
            if audit["oversold"].as_i64().unwrap_or(0) > 0 {
                Ok(())
            } else {
                Err(audit)
            }
        },
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    let outcomes = load.await.expect("load");

    assert_eq!(first.text("strategy"), "none");
    // Live: the number moves between two loads and is below the 300 the
    // run began with. Not "falls": under none a lost update writes back an
    // older, higher stock, so two reads can go up (the bug this page shows).
    let (before, after) = (first.int("stock"), second.int("stock"));
    assert!(
        after != before && before < 300 && after < 300,
        "the stock shown must change between two loads during the run: {before} then {after}"
    );
    assert!(
        second.number("grabs-per-sec") > 0.0,
        "grabs/s during the run: {}",
        second.text("grabs-per-sec")
    );
    // The small chart drew every number the page received (one at load,
    // then a poll a second): a line of as many points, falling for stock.
    for id in ["trend-stock", "trend-rate"] {
        let samples: usize = second.attr(id, "data-samples").parse().expect("count");
        let points: Vec<(f64, f64)> = second
            .attr(id, "points")
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect();
        assert!(samples >= 2, "#{id}: {samples} samples");
        assert_eq!(points.len(), samples, "#{id}");
        // Inside the 600×100 view box. The page maps the initial stock
        // (300, the scale's top) to y = 2; every stock point sits lower,
        // since the run had begun before the page first loaded.
        assert!(
            points
                .iter()
                .all(|&(x, y)| (0.0..=600.0).contains(&x) && (0.0..=100.0).contains(&y)),
            "#{id} leaves the view box: {points:?}"
        );
        if id == "trend-stock" {
            assert!(
                points.iter().all(|&(_, y)| y > 2.0),
                "a stock point at the top although the run had begun: {points:?}"
            );
        }
    }

    let audit = app.audit(1).await;
    assert!(
        audit["oversold"].as_i64().is_some_and(|n| n > 0),
        "none must oversell under this load: {audit} {outcomes:?}"
    );
    let last = dump_dom(&app, 1).await;
    last.assert_matches_audit(&audit, "none");
    assert!(last.int("oversold") > 0 && last.is_red("oversold"));
    assert!(last.is_red("lost"), "none loses updates: {audit}");

    assert_eq!((shot.width, shot.height), (1280, 800));
    let colours = shot.distinct_colours();
    assert!(
        colours > 50,
        "a blank or flat screenshot: {colours} colours"
    );
    let stock_px = shot.count_near(STOCK_RGB, 8);
    let red_px = shot.count_near(BAD_RGB, 8);
    assert!(
        stock_px > 2_000,
        "the large stock number is missing: {stock_px} px"
    );
    assert!(red_px > 1_000, "no red oversold/lost numbers: {red_px} px");
    if let Some(keep) = std::env::var_os("SECKILL_STATUS_SCREENSHOT") {
        std::fs::copy(&shot_path, &keep).expect("copy screenshot");
        eprintln!("screenshot kept at {}", PathBuf::from(keep).display());
    }
    let _ = std::fs::remove_file(&shot_path);
    app.stop().await;
}

#[tokio::test]
async fn status_page_shows_a_safe_strategy_clean() {
    if !chromium_available() {
        return;
    }
    let (_redis, app) = app_with("set-nx-px-token", 300).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = paced_load(&app, 1, 2, stop.clone());
    // The page loads during the run, once it has ordered something.
    eventually("the run orders", Duration::from_secs(15), || async {
        let audit = app.audit(1).await;
        if audit["orders"].as_i64().is_some_and(|n| n > 0) {
            Ok(())
        } else {
            Err(audit)
        }
    })
    .await;
    let during = dump_dom(&app, 1).await;
    stop.store(true, Ordering::SeqCst);
    let outcomes = load.await.expect("load");
    assert_eq!(during.text("strategy"), "set-nx-px-token");

    let audit = app.audit(1).await;
    assert!(
        audit["orders"].as_i64().is_some_and(|n| n > 0),
        "{outcomes:?}"
    );
    let last = dump_dom(&app, 1).await;
    last.assert_matches_audit(&audit, "set-nx-px-token");
    assert_eq!(last.int("oversold"), 0);
    assert_eq!(last.int("lost"), 0);
    assert!(!last.is_red("oversold") && !last.is_red("lost"));
    app.stop().await;
}

/// The keys of every status body (the wire rule: add freely, rename none).
const STATUS_KEYS: &[&str] = &[
    "strategy",
    "product_id",
    "stock",
    "initial_stock",
    "orders",
    "oversold",
    "lost_updates",
    "duplicates",
    "grabs_total",
    "grabs_per_sec",
    "replica",
    "undersold",
    "faults",
    "history_run",
    "overlaps",
];

fn assert_status_shape(body: &Value) {
    for key in STATUS_KEYS {
        assert!(body.get(key).is_some(), "{key} missing in {body}");
    }
}

#[tokio::test]
async fn status_json_and_event_stream_follow_the_audit() {
    let (_redis, app) = app_with("set-nx-px-token", 40).await;

    let page = app
        .client
        .get(format!("{}/", app.address))
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"]
        .to_str()
        .is_ok_and(|c| c.starts_with("text/html")));
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_owned();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    let html = page.text().await.expect("html");
    for id in [
        "stock",
        "oversold",
        "lost",
        "strategy",
        "grabs-per-sec",
        "strategies",
        "token",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "#{id} in the page");
    }

    // Five buyers, then the one-shot status equals the audit.
    for user in 1..=5 {
        assert_eq!(app.grab(1, user, 1).await.0, 201);
    }
    let (status, body) = app.get("/api/v1/status").await;
    assert_eq!(status, 200, "{body}");
    assert_status_shape(&body);
    let audit = app.audit(1).await;
    for key in [
        "stock",
        "initial_stock",
        "orders",
        "oversold",
        "lost_updates",
        "duplicates",
    ] {
        assert_eq!(body[key], audit[key], "{key}: {body} vs {audit}");
    }
    assert_eq!(body["product_id"], 1);
    assert_eq!(body["stock"], 35);
    assert_eq!(body["strategy"], "set-nx-px-token");
    assert!(
        body["grabs_total"].as_u64().is_some_and(|n| n >= 5),
        "{body}"
    );

    // The stream: events about 500 ms apart that see a grab made between them.
    let mut stream = app
        .client
        .get(format!("{}/api/v1/status/stream?product=1", app.address))
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), 200);
    assert!(stream.headers()["content-type"]
        .to_str()
        .is_ok_and(|c| c.starts_with("text/event-stream")));
    let mut buffer = String::new();
    let mut events: Vec<(tokio::time::Instant, Value)> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while events.len() < 3 {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("events within 10 s")
            .expect("stream readable")
            .expect("stream open");
        buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or_else(|| panic!("a data line in {frame:?}"));
            let event: Value = serde_json::from_str(data).expect("event JSON");
            assert_status_shape(&event);
            events.push((tokio::time::Instant::now(), event));
            if events.len() == 1 {
                assert_eq!(app.grab(1, 6, 1).await.0, 201);
            }
        }
    }
    drop(stream);
    assert_eq!(events[0].1["stock"], 35);
    assert_eq!(events[2].1["stock"], 34, "the stream sees the new order");
    let gap = events[2].0 - events[1].0;
    assert!(
        gap >= Duration::from_millis(300) && gap <= Duration::from_millis(2_000),
        "events ~500 ms apart, got {gap:?}"
    );

    // Bad and unknown products answer with the API's JSON errors.
    let (status, body) = app.get("/api/v1/status?product=0").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_product_id"))
    );
    let (status, body) = app.get("/api/v1/status?product=abc").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_product_id"))
    );
    let (status, body) = app.get("/api/v1/status/stream?product=999").await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
    app.stop().await;
}

#[tokio::test]
async fn status_page_shows_the_faults_in_force_undersold_and_the_historys_overlaps() {
    let (_redis, app) = app_with("set-nx-px-token", 50).await;

    // A fresh deployment: no fault, history off.
    let (status, body) = app.get("/api/v1/status").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["faults"], json!([]), "{body}");
    assert_eq!(body["history_run"], Value::Null, "{body}");
    assert_eq!(body["overlaps"], Value::Null, "{body}");
    assert_eq!(body["undersold"], 0, "{body}");

    // Two faults on: both in the JSON, by name, values as text.
    let (status, faults) = app
        .admin(
            Method::PUT,
            "/admin/faults",
            Some(
                json!({ "pause_ms": 25, "pause_at": "before-write", "unlock_before_commit": true }),
            ),
        )
        .await;
    assert_eq!(status, 200, "{faults}");
    let (_, body) = app.get("/api/v1/status").await;
    assert_eq!(
        body["faults"],
        json!([
            { "name": "pause_at", "value": "before-write" },
            { "name": "pause_ms", "value": "25" },
            { "name": "unlock_before_commit", "value": "true" },
        ]),
        "{body}"
    );
    // A history run: its id and the arbiter's count (none yet).
    let (status, run) = app
        .admin(
            Method::PUT,
            "/admin/history",
            Some(json!({ "enabled": true })),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    let (_, body) = app.get("/api/v1/status").await;
    assert_eq!(body["history_run"], run["run"], "{body}");
    assert_eq!(body["overlaps"], 0, "{body}");

    // The bounded stream carries the same fields and ends after two events.
    let response = app
        .client
        .get(format!("{}/api/v1/status/stream?events=2", app.address))
        .send()
        .await
        .expect("stream");
    assert_eq!(response.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("a bounded stream ends")
        .expect("stream read");
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).expect("event JSON"))
        .collect();
    assert_eq!(events.len(), 2, "{text}");
    for event in &events {
        assert_status_shape(event);
        assert_eq!(event["faults"].as_array().map(Vec::len), Some(3), "{event}");
        assert_eq!(event["history_run"], run["run"], "{event}");
    }
    for bad in ["0", "1001", "x"] {
        let (status, body) = app
            .get(&format!("/api/v1/status/stream?events={bad}"))
            .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_events")),
            "events={bad}: {body}"
        );
    }

    if chromium_available() {
        let page = dump_dom(&app, 1).await;
        let banner = page.text("faults");
        for shown in [
            "pause_ms=25",
            "pause_at=before-write",
            "unlock_before_commit=true",
        ] {
            assert!(banner.contains(shown), "{shown} in the banner: {banner:?}");
        }
        assert_eq!(page.attr("faults", "data-count"), "3");
        assert_eq!(page.int("overlaps"), 0);
        assert_eq!(page.int("undersold"), 0);
        assert!(!page.is_red("overlaps") && !page.is_red("undersold"));
    }

    // Cleared: no fault, and with the history off again, "history off".
    let (status, cleared) = app.admin(Method::DELETE, "/admin/faults", None).await;
    assert_eq!(status, 200, "{cleared}");
    let (status, off) = app
        .admin(
            Method::PUT,
            "/admin/history",
            Some(json!({ "enabled": false })),
        )
        .await;
    assert_eq!(status, 200, "{off}");
    let (_, body) = app.get("/api/v1/status").await;
    assert_eq!(body["faults"], json!([]), "{body}");
    assert_eq!(body["overlaps"], Value::Null, "{body}");
    if chromium_available() {
        let page = dump_dom(&app, 1).await;
        assert_eq!(page.text("faults"), "no fault");
        assert_eq!(page.attr("faults", "data-count"), "0");
        assert_eq!(page.text("overlaps"), "history off");
    }
    app.stop().await;
}

/// The page in the language the browser asks for (`Accept-Language`):
/// Chinese labels in the source posts' terms (超卖 for oversold), the
/// strategy's name untouched; English without the ask.
#[tokio::test]
async fn status_page_speaks_chinese_to_a_browser_that_asks_for_it() {
    if !chromium_available() {
        return;
    }
    let (_redis, app) = app_with("set-nx-px-token", 10).await;
    let chinese = chromium(
        vec![
            "--lang=zh-CN".into(),
            "--accept-lang=zh-CN".into(),
            format!("--virtual-time-budget={BUDGET_MS}"),
            "--dump-dom".into(),
        ],
        page_url(&app, 1),
    )
    .await;
    assert!(chinese.contains("<html lang=\"zh-CN\""), "{chinese}");
    assert!(
        chinese.contains(">超卖件数<"),
        "oversold is 超卖: {chinese}"
    );
    assert!(
        chinese.contains(">无故障<"),
        "no fault is 无故障: {chinese}"
    );
    let page = Page { dom: chinese };
    assert_eq!(page.text("strategy"), "set-nx-px-token", "names stay");
    let english = dump_dom(&app, 1).await;
    assert!(english.dom.contains(">Oversold units<"), "{}", english.dom);
    assert!(!english.dom.contains(">超卖件数<"));
    assert!(english.dom.contains("<html lang=\"en\""));
    app.stop().await;
}
