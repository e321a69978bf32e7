//! The load generator against real replicas: two `seckill-app` processes
//! sharing a real PostgreSQL database and a real `redis-server`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use seckill_testkit::{free_port, fresh_database, AppProcess, Image, RedisServer};
use serde_json::Value;

const TOKEN: &str = "loadgen-test-token";

struct Stack {
    _redis: RedisServer,
    database_url: String,
    replicas: Vec<AppProcess>,
}

impl Stack {
    async fn start(replicas: usize) -> Self {
        Self::start_with(replicas, Vec::new()).await
    }

    /// `replicas` replicas with `extra` settings besides the test's own.
    async fn start_with(replicas: usize, extra: Vec<(&'static str, String)>) -> Self {
        let redis = RedisServer::start();
        let database_url = fresh_database().await;
        let mut env = vec![
            ("SECKILL_DATABASE_URL", database_url.clone()),
            ("SECKILL_REDIS_URL", redis.url()),
            ("SECKILL_ADMIN_TOKEN", TOKEN.to_owned()),
            ("SECKILL_SEED_PRODUCTS", "1:100,2:100".to_owned()),
            ("SECKILL_CONTROL_REFRESH_MS", "50".to_owned()),
            ("SECKILL_WORK_DELAY_MS", "2".to_owned()),
            // A loaded CI machine can make 60 queued commits on one row slow:
            // the test is about counts, so waits are roomy.
            ("SECKILL_LOCK_WAIT_MS", "20000".to_owned()),
            ("SECKILL_DATABASE_ACQUIRE_TIMEOUT_MS", "20000".to_owned()),
            // Tests run side by side on one PostgreSQL (max_connections 100).
            ("SECKILL_DATABASE_MAX_CONNECTIONS", "8".to_owned()),
        ];
        env.extend(extra);
        let replicas = (0..replicas).map(|_| AppProcess::start(&env)).collect();
        Self {
            _redis: redis,
            database_url,
            replicas,
        }
    }

    fn urls(&self) -> String {
        self.replicas
            .iter()
            .map(|r| r.address.clone())
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "seckill-loadgen-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn loadgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seckill-loadgen"))
        .args(args)
        .env("SECKILL_ADMIN_TOKEN", TOKEN)
        .output()
        .expect("run seckill-loadgen")
}

/// `seckill-loadgen run --url URLS --strategy S EXTRA… --out DIR --quiet`.
fn run_one(urls: &str, strategy: &str, extra: &[&str], dir: &Path) -> Output {
    let mut args = vec!["run", "--url", urls, "--strategy", strategy];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", dir.to_str().expect("utf-8 path"), "--quiet"]);
    loadgen(&args)
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json written");
    serde_json::from_str(&text).expect("report.json is JSON")
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Product 1's ground truth, straight from the database.
async fn sql_audit(database_url: &str) -> (i64, i64, i64, i64, i64) {
    let pool = sqlx::PgPool::connect(database_url).await.expect("connect");
    let (initial, stock): (i64, i64) =
        sqlx::query_as("SELECT initial_stock::BIGINT, stock::BIGINT FROM products WHERE id = 1")
            .fetch_one(&pool)
            .await
            .expect("product 1");
    let (orders, units): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*)::BIGINT, COALESCE(SUM(quantity), 0)::BIGINT FROM orders WHERE product_id = 1",
    )
    .fetch_one(&pool)
    .await
    .expect("orders");
    let (dups,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*)::BIGINT FROM (SELECT user_id FROM orders WHERE product_id = 1
         GROUP BY user_id HAVING COUNT(*) > 1) d",
    )
    .fetch_one(&pool)
    .await
    .expect("duplicates");
    pool.close().await;
    let _ = initial;
    (stock, orders, units, dups, initial)
}

fn run_of<'a>(report: &'a Value, strategy: &str) -> &'a Value {
    report["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["strategy"] == strategy)
        .unwrap_or_else(|| panic!("run of {strategy} in {report}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn compare_on_two_replicas_matches_the_database() {
    let stack = Stack::start(2).await;
    let dir = out_dir("compare");
    let urls = stack.urls();
    let output = loadgen(&[
        "compare",
        "--url",
        &urls,
        "--strategies",
        "set-nx-px-token,local-mutex,redis-lua-stock,none",
        "--stock",
        "30",
        "--users",
        "20",
        "--out",
        dir.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    // `none` and `local-mutex` on two replicas are expected to break: exit 0.
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("expected-unsafe"), "{stdout}");
    // --quiet and no terminal: still one line per strategy as it finishes.
    let stderr = String::from_utf8_lossy(&output.stderr);
    for strategy in ["set-nx-px-token", "local-mutex", "redis-lua-stock", "none"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.trim_start().starts_with(strategy) && l.contains("grabs/s")),
            "no progress line for {strategy} on stderr:\n{stderr}"
        );
    }

    let report = report(&dir);
    assert_eq!(report["replicas"].as_array().map(Vec::len), Some(2));
    // Durations are milliseconds, like every other `_ms` field.
    assert_eq!(
        report["workload"]["max_run_time_ms"], 120_000,
        "{}",
        report["workload"]
    );
    assert!(report["workload"]["give_up_after_ms"].is_u64());
    assert!(report["workload"]["run_time_ms"].is_null());
    for run in report["runs"].as_array().expect("runs") {
        let points = run["stock_over_time"].as_array().expect("stock_over_time");
        assert!(points.len() >= 2, "{run}");
        assert_eq!(points[0][1], 30, "starts at the stock: {run}");
        assert_eq!(
            points.last().expect("last")[1],
            run["audit"][0]["stock"],
            "ends on the audit"
        );
    }
    for safe in ["set-nx-px-token", "redis-lua-stock"] {
        let run = run_of(&report, safe);
        assert_eq!(run["verdict"], "safe", "{run}");
        assert_eq!(run["orders"], 30, "{run}");
        assert_eq!(run["stock_left"], 0, "{run}");
        assert_eq!(run["oversold"], 0, "{run}");
        assert_eq!(run["lost_updates"], 0, "{run}");
        assert_eq!(run["outcomes"]["ordered"], 30, "{run}");
        assert!(run["grabs_per_sec"].as_f64().expect("rate") > 0.0, "{run}");
        assert!(run["p99_ms"].as_f64().expect("p99") >= run["p50_ms"].as_f64().expect("p50"));
    }
    // The lock's own figures come from the replicas' /metrics deltas.
    let token = run_of(&report, "set-nx-px-token");
    assert!(
        token["lock"]["attempts"].as_u64().expect("attempts") >= 30,
        "{token}"
    );

    // The lock wait is measured per grab (`Server-Timing`), exactly: its
    // p99 can never be above the p99 of the grabs that contain it.
    for locked in ["set-nx-px-token", "local-mutex"] {
        let run = run_of(&report, locked);
        let wait = run["lock"]["acquire_wait_p99_ms"]
            .as_f64()
            .unwrap_or_else(|| panic!("an exact wait p99: {run}"));
        let p99 = run["p99_ms"].as_f64().expect("p99");
        assert!(
            wait > 0.0 && wait <= p99,
            "wait p99 {wait} vs grab p99 {p99}: {run}"
        );
    }

    // The last run (`none`) is what the database holds now.
    let none = run_of(&report, "none");
    let (stock, orders, units, dups, initial) = sql_audit(&stack.database_url).await;
    assert_eq!(none["orders"], orders, "{none}");
    assert_eq!(none["ordered_units"], units, "{none}");
    assert_eq!(none["stock_left"], stock, "{none}");
    assert_eq!(none["duplicates"], dups, "{none}");
    assert_eq!(none["oversold"], (units - initial).max(0), "{none}");
    assert_eq!(
        none["lost_updates"],
        (units - (initial - stock)).max(0),
        "{none}"
    );
    assert_eq!(none["verdict"], "expected-unsafe", "{none}");
    assert_eq!(
        none["violations"], true,
        "none must show its lesson: {none}"
    );
    assert_eq!(
        none["outcomes"]["ordered"], orders,
        "client and database agree: {none}"
    );
    assert_eq!(run_of(&report, "local-mutex")["verdict"], "expected-unsafe");

    // Every report form, and goose's own report per strategy.
    for file in [
        "report.md",
        "report.html",
        "goose/none.html",
        "goose/set-nx-px-token.html",
    ] {
        let path = dir.join(file);
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(len > 200, "{} written", path.display());
    }
    let markdown = std::fs::read_to_string(dir.join("report.md")).expect("md");
    // A GitHub table: header, separator, one row per strategy, all piped.
    let table: Vec<&str> = markdown.lines().filter(|l| l.starts_with('|')).collect();
    assert!(table.len() >= 4, "{markdown}");
    assert!(
        table[1].starts_with("|--") && table[1].ends_with('|'),
        "{markdown}"
    );
    assert!(
        table.iter().any(|l| l.starts_with("| set-nx-px-token ")),
        "{markdown}"
    );

    // Asked to treat `none` as safe, the same lesson is a failure: exit 1.
    let dir2 = out_dir("strict");
    let output = run_one(
        &urls,
        "none",
        &["--stock", "30", "--users", "20", "--treat-as-safe", "none"],
        &dir2,
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("VIOLATION: none"));
    let strict = self::report(&dir2);
    assert_eq!(run_of(&strict, "none")["verdict"], "VIOLATION");

    // The HTML report renders in a real browser with its charts.
    check_html_in_chromium(&dir.join("report.html"), &dir.join("shot.png"));
    check_html_in_chromium(&dir2.join("report.html"), &dir2.join("shot.png"));
}

#[tokio::test(flavor = "multi_thread")]
async fn burst_each_buyer_once_and_rate_follows_its_schedule() {
    let stack = Stack::start(2).await;
    let urls = stack.urls();
    let dir = out_dir("burst");
    let output = run_one(
        &urls,
        "pg-atomic",
        &["--burst", "60", "--stock", "40"],
        &dir,
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let run = run_of(&report(&dir), "pg-atomic").clone();
    // 60 buyers, one grab each: 40 orders, 20 told sold out, nothing else.
    assert_eq!(run["outcomes"]["ordered"], 40, "{run}");
    assert_eq!(run["outcomes"]["sold_out"], 20, "{run}");
    assert_eq!(run["grabs"], 60, "{run}");
    assert_eq!(run["orders"], 40, "{run}");

    // Repeat buyers get `already_purchased`; several products share the load.
    let dir = out_dir("repeat");
    let output = run_one(
        &urls,
        "pg-for-update",
        &[
            "--users",
            "10",
            "--stock",
            "1000",
            "--products",
            "2",
            "--repeat-ratio",
            "0.5",
            "--run-time",
            "2s",
        ],
        &dir,
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let run = run_of(&report(&dir), "pg-for-update").clone();
    assert!(
        run["outcomes"]["already_purchased"].as_u64() > Some(0),
        "{run}"
    );
    assert_eq!(run["duplicates"], 0, "{run}");
    assert_eq!(run["audit"].as_array().map(Vec::len), Some(2), "{run}");
    let per_product: Vec<i64> = run["audit"]
        .as_array()
        .expect("audit rows")
        .iter()
        .map(|r| r["orders"].as_i64().expect("orders"))
        .collect();
    assert!(
        per_product.iter().all(|n| *n > 0),
        "both products sold: {run}"
    );

    // An open rate: grabs are scheduled, not sent as fast as answered.
    let dir = out_dir("rate");
    let output = run_one(
        &urls,
        "pg-atomic",
        &[
            "--rate",
            "100",
            "--users",
            "20",
            "--stock",
            "100000",
            "--run-time",
            "3s",
        ],
        &dir,
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let run = run_of(&report(&dir), "pg-atomic").clone();
    let rate = run["grabs_per_sec"].as_f64().expect("rate");
    // Scheduled at 100/s: a closed loop of 20 users would send thousands
    // per second; the schedule can run late on a loaded machine, never early.
    assert!((40.0..=110.0).contains(&rate), "{rate} grabs/s: {run}");
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_errors_for_wrong_url_token_and_strategy() {
    let stack = Stack::start(1).await;
    let urls = stack.urls();
    let dir = out_dir("errors");
    let dir = dir.to_str().expect("utf-8");

    let dead = format!("http://127.0.0.1:{}", free_port());
    // Local mistakes are refused before any request: exit 2 even with a
    // dead URL (which alone would be 3).
    for bad in [
        &["--report-file", "out.bogus"][..],
        &["--out", "/proc/seckill-no-such-dir"][..],
    ] {
        let mut args = vec!["run", "--url", &dead, "--strategy", "none"];
        args.extend_from_slice(bad);
        if !bad.contains(&"--out") {
            args.extend_from_slice(&["--out", dir]);
        }
        let output = loadgen(&args);
        assert_eq!(output.status.code(), Some(2), "{bad:?}: {}", text(&output));
        assert!(
            !text(&output).contains("cannot reach the service"),
            "{bad:?} must fail before any request: {}",
            text(&output)
        );
    }
    let output = loadgen(&["run", "--url", &dead, "--strategy", "none", "--out", dir]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    assert!(
        text(&output).contains("cannot reach the service"),
        "{}",
        text(&output)
    );

    let output = Command::new(env!("CARGO_BIN_EXE_seckill-loadgen"))
        .args(["run", "--url", &urls, "--strategy", "none", "--out", dir])
        .env("SECKILL_ADMIN_TOKEN", "wrong")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("admin token was refused"),
        "{}",
        text(&output)
    );

    let output = loadgen(&[
        "run",
        "--url",
        &urls,
        "--strategy",
        "no-such-lock",
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let all = text(&output);
    // Refused at the command line, before any request (clap's
    // ValueEnum), with every name this build knows.
    assert!(all.contains("invalid value 'no-such-lock'"), "{all}");
    assert!(
        all.contains("set-nx-px-token"),
        "lists the known names: {all}"
    );

    let output = loadgen(&[
        "run",
        "--url",
        &urls,
        "--strategy",
        "none",
        "--products",
        "3",
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("product 3 does not exist"),
        "{}",
        text(&output)
    );
}

/// Open the report in headless Chromium: the DOM has the chart bars, and the
/// screenshot shows them in their colours (blue = safe, orange = expected
/// to break, red = a safe strategy that broke).
fn check_html_in_chromium(html: &Path, shot: &Path) {
    let Some(chromium) = seckill_testkit::chromium("the HTML report browser check") else {
        return;
    };
    let url = format!("file://{}", html.display());
    let dom = Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            &url,
        ])
        .output()
        .expect("chromium --dump-dom");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("id=\"chart-throughput\""),
        "throughput chart in the DOM"
    );
    assert!(dom.contains("id=\"chart-p99\""), "p99 chart in the DOM");
    assert!(dom.matches("class=\"bar\"").count() >= 2, "bars drawn");
    assert!(
        dom.contains("id=\"chart-lesson\""),
        "lesson chart in the DOM"
    );
    let report_json: Value = serde_json::from_str(
        &std::fs::read_to_string(html.with_file_name("report.json")).expect("json"),
    )
    .expect("json");
    let runs = report_json["runs"].as_array().expect("runs");
    assert_eq!(
        dom.matches("class=\"stock\"").count(),
        runs.len(),
        "one stock-over-time chart per run"
    );
    // A strategy that let something through has a red or orange bar in the
    // lesson chart; an exact one says so.
    let broken = runs
        .iter()
        .filter(|r| r["oversold"] != 0 || r["lost_updates"] != 0 || r["duplicates"] != 0)
        .count();
    assert_eq!(
        dom.contains("class=\"lesson-bar\""),
        broken > 0,
        "lesson bars iff some run broke"
    );

    // It fits a 1280-pixel projector: no horizontal scrolling. The report
    // has no script of its own; a copy gets one that writes the page's
    // scroll width into the DOM.
    let probe = html.with_file_name("width-probe.html");
    let page = std::fs::read_to_string(html).expect("html").replace(
        "</body>",
        "<script>document.body.dataset.scrollWidth = document.documentElement.scrollWidth</script></body>",
    );
    std::fs::write(&probe, page).expect("probe written");
    let dom = Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,800",
            "--dump-dom",
            &format!("file://{}", probe.display()),
        ])
        .output()
        .expect("chromium --dump-dom");
    let dom = String::from_utf8_lossy(&dom.stdout);
    let width: u32 = dom
        .split("data-scroll-width=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("scroll width in the probe's DOM: {dom}"));
    assert!(
        width <= 1280,
        "the report is {width} px wide at a 1280 px window"
    );

    let status = Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,2400",
            &format!("--screenshot={}", shot.display()),
            &url,
        ])
        .output()
        .expect("chromium --screenshot");
    assert!(shot.exists(), "screenshot written: {}", text(&status));
    let shot = Image::decode(shot);
    // Same bound as before: every channel strictly within 8.
    let has = |rgb: [u8; 3]| shot.count_near(rgb, 7) > 0;
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(html.with_file_name("report.json")).expect("json"),
    )
    .expect("json");
    for run in report["runs"].as_array().expect("runs") {
        let (name, rgb) = match run["verdict"].as_str() {
            Some("safe") => ("blue", [0x4a, 0x90, 0xd9]),
            Some("expected-unsafe") => ("orange", [0xf5, 0xa6, 0x23]),
            _ => ("red", [0xd3, 0x2f, 0x2f]),
        };
        assert!(
            has(rgb),
            "a {name} bar for {} on the screenshot",
            run["strategy"]
        );
    }
}

/// `--history` across two replicas: the arbiter counts the sections that
/// overlap under `none` and none under the token lock; a pause past the
/// TTL makes the token lock expected-unsafe (not a VIOLATION), and its
/// overlaps are counted.
#[tokio::test(flavor = "multi_thread")]
async fn history_counts_overlaps_across_replicas_and_faults_set_the_expectation() {
    let stack = Stack::start(2).await;
    let urls = stack.urls();

    let dir = out_dir("history-none");
    let output = run_one(
        &urls,
        "none",
        &["--burst", "40", "--stock", "20", "--history"],
        &dir,
    );
    assert!(output.status.success(), "{}", text(&output));
    let none = run_of(&report(&dir), "none").clone();
    assert!(none["overlaps"].as_u64() > Some(0), "{none}");
    assert!(none["max_holders"].as_u64() > Some(1), "{none}");
    assert!(
        !none["first_overlaps"]
            .as_array()
            .expect("events")
            .is_empty(),
        "{none}"
    );
    assert!(
        std::fs::read_to_string(dir.join("report.html"))
            .expect("html")
            .contains("First overlaps"),
        "the HTML report has the timeline"
    );

    let dir = out_dir("history-token");
    let output = run_one(
        &urls,
        "set-nx-px-token",
        &["--burst", "40", "--stock", "20", "--history"],
        &dir,
    );
    assert!(output.status.success(), "{}", text(&output));
    let token = run_of(&report(&dir), "set-nx-px-token").clone();
    assert_eq!(token["overlaps"], 0, "{token}");
    assert_eq!(token["max_holders"], 1, "{token}");
    assert_eq!(token["verdict"], "safe", "{token}");

    // Releasing before the commit is aimed at every lock around the
    // section: the token lock is expected to break (no VIOLATION, exit 0),
    // while `fenced`, whose database refuses stale holders, stays classed safe.
    let status = reqwest::Client::new()
        .put(format!("{}/admin/faults", stack.replicas[0].address))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "unlock_before_commit": true }))
        .send()
        .await
        .expect("put faults")
        .status();
    assert!(status.is_success(), "faults: {status}");
    let dir = out_dir("history-expected");
    let output = loadgen(&[
        "compare",
        "--url",
        &urls,
        "--strategies",
        "set-nx-px-token,fenced",
        "--burst",
        "40",
        "--stock",
        "20",
        "--history",
        "--out",
        dir.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let both = report(&dir);
    let token = run_of(&both, "set-nx-px-token");
    assert_eq!(token["verdict"], "expected-unsafe", "{token}");
    assert!(
        token["expected_to_break"]
            .as_str()
            .is_some_and(|why| why.contains("unlock_before_commit")),
        "{token}"
    );
    let fenced = run_of(&both, "fenced");
    assert_eq!(fenced["verdict"], "safe", "{fenced}");
    assert!(fenced["expected_to_break"].is_null(), "{fenced}");
}

/// `seckill-loadgen run … --run-time 4` started in the background, its
/// output collected by a thread.
fn run_in_background(args: &[String]) -> std::thread::JoinHandle<Output> {
    let child = Command::new(env!("CARGO_BIN_EXE_seckill-loadgen"))
        .args(args)
        .env("SECKILL_ADMIN_TOKEN", TOKEN)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start seckill-loadgen");
    std::thread::spawn(move || child.wait_with_output().expect("seckill-loadgen ran"))
}

fn timed_run(urls: &str, strategy: &str, extra: &[&str], dir: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--url",
        urls,
        "--strategy",
        strategy,
        "--stock",
        "1000000",
        "--users",
        "8",
        "--run-time",
        "4",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args.extend([
        "--out".to_owned(),
        dir.display().to_string(),
        "--quiet".to_owned(),
    ]);
    args
}

/// Jepsen's check: orders deleted behind the service's back while buyers
/// hold their `201`s are found missing — exit 1 even for `none`, a strategy
/// expected to break, because a lost acknowledged order is a lie no design
/// may tell.
#[tokio::test(flavor = "multi_thread")]
async fn orders_deleted_behind_the_service_are_acknowledged_missing() {
    let stack = Stack::start(1).await;
    let dir = out_dir("ack-missing");
    let run = run_in_background(&timed_run(&stack.urls(), "none", &[], &dir));
    let pool = sqlx::PgPool::connect(&stack.database_url)
        .await
        .expect("connect");
    // Wait for some orders, then take three away.
    orders_at_least(&pool, 10).await;
    let deleted = sqlx::query(
        "DELETE FROM orders WHERE id IN
         (SELECT id FROM orders WHERE product_id = 1 ORDER BY id LIMIT 3)",
    )
    .execute(&pool)
    .await
    .expect("delete")
    .rows_affected();
    assert_eq!(deleted, 3, "orders came in during the run");
    pool.close().await;
    let output = run.join().expect("joined");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("3 acknowledged orders missing from the database"),
        "{stderr}"
    );
    let none = run_of(&report(&dir), "none").clone();
    assert_eq!(none["verdict"], "VIOLATION", "{none}");
    assert_eq!(none["acknowledged_missing"], 3, "{none}");
    assert_eq!(none["unacknowledged_present"], 0, "{none}");
    assert!(none["acknowledged"].as_u64() > Some(3), "{none}");
    assert!(none["indeterminate"]["found"].is_u64(), "{none}");
}

/// Wait until product 1 has at least `n` orders (the run is under way).
async fn orders_at_least(pool: &sqlx::PgPool, n: i64) {
    seckill_testkit::eventually(
        &format!("{n} orders of product 1"),
        std::time::Duration::from_secs(30),
        || async {
            let (orders,): (i64,) =
                sqlx::query_as("SELECT COUNT(*)::BIGINT FROM orders WHERE product_id = 1")
                    .fetch_one(pool)
                    .await
                    .map_err(|e| e.to_string())?;
            (orders >= n)
                .then_some(())
                .ok_or(format!("{orders} orders"))
        },
    )
    .await;
}

/// The arbiter killed mid-run leaves the history with gaps: the run is
/// `inconclusive` (exit 4), never `safe`.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_arbiter_dies_is_inconclusive() {
    let mut arbiter = RedisServer::start();
    let stack = Stack::start_with(1, vec![("SECKILL_HISTORY_URL", arbiter.url())]).await;
    let dir = out_dir("arbiter-dies");
    let run = run_in_background(&timed_run(
        &stack.urls(),
        "set-nx-px-token",
        &["--history"],
        &dir,
    ));
    // The run is under way (sections recorded in the arbiter) before it dies.
    let pool = sqlx::PgPool::connect(&stack.database_url)
        .await
        .expect("connect");
    orders_at_least(&pool, 5).await;
    pool.close().await;
    arbiter.stop();
    let output = run.join().expect("joined");
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("INCONCLUSIVE: set-nx-px-token could not be judged"),
        "{stderr}"
    );
    let token = run_of(&report(&dir), "set-nx-px-token").clone();
    assert_eq!(token["verdict"], "inconclusive", "{token}");
    assert!(
        !token["inconclusive_because"]
            .as_array()
            .expect("reasons")
            .is_empty(),
        "{token}"
    );
    // The acknowledgement check needs no arbiter: it still ran, clean.
    assert_eq!(token["acknowledged_missing"], 0, "{token}");
    assert_eq!(token["oversold"], 0, "{token}");
}

#[tokio::test(flavor = "multi_thread")]
async fn thresholds_pass_or_fail_the_run_with_their_exit_codes() {
    let stack = Stack::start(1).await;
    let urls = stack.urls();
    let load = ["--stock", "20", "--users", "4"];
    // Every grab works 2 ms inside the lock (SECKILL_WORK_DELAY_MS): a p99
    // under 1 ms cannot hold.
    let dir = out_dir("threshold-breached");
    let mut args = load.to_vec();
    args.extend(["--threshold", "p99<1ms", "--threshold", "error_rate<1%"]);
    let output = run_one(&urls, "set-nx-px-token", &args, &dir);
    assert_eq!(output.status.code(), Some(5), "{}", text(&output));
    let all = text(&output);
    assert!(
        all.contains("THRESHOLD: set-nx-px-token: p99<1ms measured"),
        "{all}"
    );
    let checked = report(&dir)["thresholds"].clone();
    let checked = checked.as_array().expect("thresholds in report.json");
    assert_eq!(checked.len(), 2, "{checked:?}");
    // Only the contract's names (shared/DESIGN.md): expr, strategy, value, ok.
    assert_eq!(checked[0]["expr"], "p99<1ms");
    assert_eq!(checked[0]["strategy"], "set-nx-px-token");
    assert_eq!(checked[0]["ok"], false);
    assert!(checked[0]["value"].as_f64().expect("value") >= 1.0);
    assert_eq!(checked[1]["expr"], "error_rate<1%");
    assert_eq!(checked[1]["ok"], true, "{checked:?}");

    // Limits the run meets: exit 0, each printed with its value.
    let dir = out_dir("threshold-met");
    let mut args = load.to_vec();
    args.extend([
        "--threshold",
        "set-nx-px-token:grabs_per_s>0",
        "--threshold",
        "p99<30s",
    ]);
    let output = run_one(&urls, "set-nx-px-token", &args, &dir);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("threshold set-nx-px-token: p99<30s measured"),
        "{}",
        text(&output)
    );

    // A malformed limit, or one naming a strategy the run does not run, is
    // refused before the first grab: exit 2.
    for bad in ["p98<3ms", "redlock:p99<3ms"] {
        let dir = out_dir("threshold-bad");
        let output = run_one(&urls, "set-nx-px-token", &["--threshold", bad], &dir);
        assert_eq!(output.status.code(), Some(2), "{bad}: {}", text(&output));
        assert!(!dir.join("report.json").exists(), "{bad}: no run");
    }
}

/// `seckill-loadgen ARGS… --url URLS --out DIR --quiet`, started in the
/// background.
fn loadgen_in_background(args: &[&str], urls: &str, dir: &Path) -> std::thread::JoinHandle<Output> {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend([
        "--url".to_owned(),
        urls.to_owned(),
        "--out".to_owned(),
        dir.display().to_string(),
        "--quiet".to_owned(),
    ]);
    run_in_background(&all)
}

/// The check of a load sent from many processes: one process with
/// all the buyers, then the same load prepared once, sent as two shards
/// side by side and merged — the same verdict and order count on the same
/// stock; the acknowledged-order check over both shards' ledgers; the
/// merged p99 (from the shards' histograms added) between the shards' own.
/// Also: a shard refuses a run nobody prepared, and merge refuses a shard
/// missing.
#[tokio::test(flavor = "multi_thread")]
async fn two_shards_merged_match_one_process_with_all_the_buyers() {
    let stack = Stack::start(2).await;
    let urls = stack.urls();
    let strategy = "set-nx-px-token";
    let load = ["--strategy", strategy, "--users", "40", "--stock", "150"];

    // Nobody prepared pg-atomic: the replicas run another strategy, and a
    // shard never switches them.
    let early = out_dir("shard-early");
    let refused = loadgen_in_background(
        &["run", "--shard", "1/2", "--strategy", "pg-atomic"],
        &urls,
        &early,
    )
    .join()
    .expect("ran");
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("not pg-atomic: prepare the run first"),
        "{}",
        text(&refused)
    );

    let whole_dir = out_dir("shard-whole");
    let whole = run_one(&urls, strategy, &load[2..], &whole_dir);
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
    let whole = report(&whole_dir);
    let whole = run_of(&whole, strategy);

    let split = out_dir("shard-split");
    let prepared = loadgen_in_background(&[&["prepare"], &load[..]].concat(), &urls, &split)
        .join()
        .expect("ran");
    assert_eq!(prepared.status.code(), Some(0), "{}", text(&prepared));
    let shards: Vec<_> = ["1/2", "2/2"]
        .iter()
        .map(|k| {
            loadgen_in_background(&[&["run", "--shard", k], &load[..]].concat(), &urls, &split)
        })
        .collect();
    for shard in shards {
        let output = shard.join().expect("ran");
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        // The record is also one line on standard output, for a pod's log.
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.starts_with("{\"record\":\"shard\""),
            "{}",
            text(&output)
        );
    }

    // One shard short: refused, naming it.
    let alone = out_dir("shard-alone");
    std::fs::create_dir_all(&alone).expect("mkdir");
    for file in ["prepare.json", "shard-1-of-2.json"] {
        std::fs::copy(split.join(file), alone.join(file)).expect("copy");
    }
    let short = loadgen(&[
        "merge",
        alone.to_str().expect("utf-8"),
        "--url",
        &urls,
        "--out",
        alone.to_str().expect("utf-8"),
        "--quiet",
    ]);
    assert_eq!(short.status.code(), Some(2), "{}", text(&short));
    assert!(
        String::from_utf8_lossy(&short.stderr).contains("shard(s) 2/2 missing"),
        "{}",
        text(&short)
    );

    let merged_dir = out_dir("shard-merged");
    let merge = loadgen(&[
        "merge",
        split.to_str().expect("utf-8"),
        "--url",
        &urls,
        "--out",
        merged_dir.to_str().expect("utf-8"),
        "--quiet",
    ]);
    assert_eq!(merge.status.code(), Some(0), "{}", text(&merge));
    let merged = report(&merged_dir);
    let run = run_of(&merged, strategy);

    // The same verdict and order count as one process, on the same stock.
    for key in ["verdict", "orders", "stock_left", "oversold", "duplicates"] {
        assert_eq!(run[key], whole[key], "{key}: merged {run}\nwhole {whole}");
    }
    assert_eq!(run["verdict"], "safe", "{run}");
    assert_eq!(run["orders"], 150, "{run}");
    // Every acknowledgement of either shard matched a row, and every row an
    // acknowledgement: the check ran over the union of the ledgers.
    assert_eq!(run["acknowledged"], 150, "{run}");
    assert_eq!(run["acknowledged_missing"], 0, "{run}");
    assert_eq!(run["unacknowledged_present"], 0, "{run}");
    // Disjoint user ids: no shard's buyer was another's.
    assert_eq!(run["outcomes"]["already_purchased"], 0, "{run}");
    assert_eq!(
        sql_audit(&stack.database_url).await.3,
        0,
        "duplicate orders"
    );

    // Both shards sent grabs; the merged p99 lies within their range.
    let lines = merged["shards"].as_array().expect("shards");
    assert_eq!(lines.len(), 2, "{merged}");
    let p99s: Vec<f64> = lines
        .iter()
        .map(|l| l["p99_ms"].as_f64().expect("p99"))
        .collect();
    let grabs: u64 = lines
        .iter()
        .map(|l| l["grabs"].as_u64().expect("grabs"))
        .sum();
    assert!(
        lines.iter().all(|l| l["grabs"].as_u64() > Some(0)),
        "{merged}"
    );
    assert_eq!(Some(grabs), run["grabs"].as_u64(), "{merged}");
    let p99 = run["p99_ms"].as_f64().expect("p99");
    let (lo, hi) = (p99s[0].min(p99s[1]), p99s[0].max(p99s[1]));
    assert!(
        lo <= p99 && p99 <= hi,
        "merged p99 {p99} outside the shards' {p99s:?}"
    );
}
