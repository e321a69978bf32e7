//! The console (`seckill-loadgen console`) clicked through in a real
//! headless Chromium, driven over WebDriver (chromedriver), against two
//! real `seckill-app` replicas sharing a real PostgreSQL database and a
//! real `redis-server`:
//!
//! - a fault switched on in the page shows on every replica's
//!   `GET /admin/faults` and in the banner; "reset everything" clears it;
//! - a `none` load draws red (overlapping) bars on the timeline;
//! - a `set-nx-px-token` load draws its bars, none red, and the overlap
//!   count reads 0;
//! - stop stops the load; reset brings the default strategy back, clears
//!   the faults and switches the history off.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian's
//! `chromium` and `chromium-driver`; `scripts/services.sh` installs both).
//! Without them the test is skipped with a loud message — unless
//! `SECKILL_REQUIRE_CHROMIUM` is set (CI), where a missing one fails.
//! `SECKILL_CONSOLE_SCREENSHOTS=dir` keeps a screenshot of each step.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use seckill_testkit::{free_port, fresh_database, AppProcess, RedisServer};
use serde_json::{json, Value};

const TOKEN: &str = "console-test-token";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a step may take to show in the page (a loaded CI machine).
const STEP: Duration = Duration::from_secs(30);

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver's path, or None after a loud skip (a failure in CI).
fn chromedriver() -> Option<&'static str> {
    if Path::new(CHROMEDRIVER).exists() {
        return Some(CHROMEDRIVER);
    }
    seckill_testkit::skip_unless_required(
        "SECKILL_REQUIRE_CHROMIUM",
        "console browser test",
        &format!("{CHROMEDRIVER} is missing"),
        "apt-get install -y chromium-driver",
    );
    None
}

async fn wait_for_port(port: u16, what: &str) {
    seckill_testkit::eventually(&format!("{what} listens on {port}"), STEP, || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .map(drop)
    })
    .await;
}

/// Poll `probe` (testkit's `eventually`) until it returns Some, or fail
/// naming `what`.
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    seckill_testkit::eventually(what, STEP, || {
        let seen = probe();
        async move { seen.await.ok_or("not yet") }
    })
    .await
}

struct Room {
    http: reqwest::Client,
    replicas: Vec<AppProcess>,
    console: String,
    browser: Client,
    shots: Option<PathBuf>,
}

impl Room {
    async fn admin_get(&self, base: &str, path: &str) -> Value {
        self.http
            .get(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("replica answers")
            .json()
            .await
            .expect("JSON")
    }

    /// `GET /admin/faults` of every replica.
    async fn faults_everywhere(&self) -> Vec<Value> {
        let mut all = Vec::new();
        for replica in &self.replicas {
            all.push(self.admin_get(&replica.address, "/admin/faults").await);
        }
        all
    }

    /// Wait until every replica reports `unlock_before_commit` as `on`.
    async fn unlock_before_commit_everywhere(&self, on: bool) {
        eventually(
            &format!("every replica reports unlock_before_commit {on}"),
            || async {
                self.faults_everywhere()
                    .await
                    .iter()
                    .all(|f| f["unlock_before_commit"] == json!(on))
                    .then_some(())
            },
        )
        .await;
    }

    /// Wait until the banner's text starts with `start`.
    async fn banner_starts_with(&self, start: &str) {
        eventually(&format!("the banner says {start:?}"), || async {
            self.text("faults-banner")
                .await
                .starts_with(start)
                .then_some(())
        })
        .await;
    }

    /// The strategy every replica reports, when they agree.
    async fn strategy_everywhere(&self) -> Option<String> {
        let mut seen = Vec::new();
        for replica in &self.replicas {
            let product: Value = self
                .http
                .get(format!("{}/api/v1/products/1", replica.address))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            seen.push(product["strategy"].as_str()?.to_owned());
        }
        seen.windows(2)
            .all(|w| w[0] == w[1])
            .then(|| seen[0].clone())
    }

    async fn console_state(&self) -> Value {
        self.http
            .get(format!("{}/api/state", self.console))
            .send()
            .await
            .expect("console answers")
            .json()
            .await
            .expect("JSON")
    }

    async fn click(&self, testid: &str) {
        self.browser
            .find(Locator::Css(&format!("[data-testid={testid}]")))
            .await
            .unwrap_or_else(|e| panic!("no [data-testid={testid}]: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {testid}: {e}"));
    }

    async fn text(&self, testid: &str) -> String {
        self.browser
            .find(Locator::Css(&format!("[data-testid={testid}]")))
            .await
            .unwrap_or_else(|e| panic!("no [data-testid={testid}]: {e}"))
            .text()
            .await
            .expect("text")
    }

    async fn count(&self, css: &str) -> u64 {
        self.browser
            .execute(
                "return document.querySelectorAll(arguments[0]).length;",
                vec![json!(css)],
            )
            .await
            .expect("script runs")
            .as_u64()
            .expect("a count")
    }

    /// The values the `<select>` `testid` offers.
    async fn options(&self, testid: &str) -> Value {
        self.js(&format!(
            "return [...document.querySelectorAll('[data-testid={testid}] option')].map(o => o.value);"
        ))
        .await
    }

    /// Choose `value` in the `<select>` `testid`, click `button`, and wait
    /// until `state` (a hook's text) starts with `says`: the scenario run
    /// it started, as `GET /api/state` shows it.
    async fn run_from(
        &self,
        testid: &str,
        value: &str,
        button: &str,
        state: &str,
        says: &str,
    ) -> Value {
        self.browser
            .find(Locator::Css(&format!("[data-testid={testid}]")))
            .await
            .unwrap_or_else(|e| panic!("no [data-testid={testid}]: {e}"))
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("choose {value}: {e}"));
        self.click(button).await;
        eventually(&format!("the page says {says}"), || async {
            self.text(state).await.starts_with(says).then_some(())
        })
        .await;
        self.console_state().await["scenario"].clone()
    }

    /// Stop the scenario run from the page, and wait until it stopped.
    async fn stop_run(&self) {
        self.click("stop-scenario").await;
        eventually("the run stopped", || async {
            (self.console_state().await["scenario"]["running"] == json!(false)).then_some(())
        })
        .await;
    }

    /// Once `cases` cases are drawn (naming the wait `what`), each
    /// [data-testid=scenario-case] as the page shows it: its caption and,
    /// per [data-testid=scenario-round], the round's data-broken,
    /// data-landed and data-damaged and its fault band's data-name,
    /// data-start-ms and data-end-ms (numbers; null when absent).
    async fn drawn_rounds(&self, what: &str, cases: usize) -> Value {
        eventually(what, || async {
            let drawn = self
                .js(
                    "return [...document.querySelectorAll('[data-testid=scenario-case]')].map((c) => ({ \
                       title: c.querySelector('figcaption').textContent, \
                       rounds: [...c.querySelectorAll('[data-testid=scenario-round]')].map((r) => { \
                         const b = r.querySelector('[data-testid=fault-band]'); \
                         const ms = (v) => (v === undefined ? null : Number(v)); \
                         return { broken: r.dataset.broken, landed: r.dataset.landed, damaged: r.dataset.damaged, \
                                  name: b.dataset.name, start: ms(b.dataset.startMs), end: ms(b.dataset.endMs) }; }) }));",
                )
                .await;
            drawn
                .as_array()
                .is_some_and(|c| c.len() == cases)
                .then_some(drawn)
        })
        .await
    }

    /// What `script` returns in the page.
    async fn js(&self, script: &str) -> Value {
        self.browser
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("run {script}: {e}"))
    }

    async fn set_input(&self, id: &str, value: &str) {
        let input = self
            .browser
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|e| panic!("no #{id}: {e}"));
        input.clear().await.expect("clear");
        input.send_keys(value).await.expect("type");
    }

    async fn choose_strategy(&self, name: &str) {
        self.browser
            .find(Locator::Css("[data-testid=strategy]"))
            .await
            .expect("the strategy select")
            .select_by_value(name)
            .await
            .unwrap_or_else(|e| panic!("select {name}: {e}"));
        eventually(&format!("every replica runs {name}"), || async {
            (self.strategy_everywhere().await.as_deref() == Some(name)).then_some(())
        })
        .await;
    }

    /// A screenshot with `#id` scrolled into view (then back to the top).
    async fn shot_of(&self, id: &str, name: &str) {
        if self.shots.is_some() {
            self.js(&format!(
                "window.scrollTo(0, document.getElementById('{id}').offsetTop - 250); return null;"
            ))
            .await;
            self.shot(name).await;
            self.js("window.scrollTo(0, 0); return null;").await;
        }
    }

    async fn shot(&self, name: &str) {
        if let Some(dir) = &self.shots {
            let png = self.browser.screenshot().await.expect("screenshot");
            std::fs::create_dir_all(dir).expect("screenshot dir");
            std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
        }
    }

    async fn start_load(&self, rate: &str, buyers: &str, stock: &str) {
        self.set_input("rate", rate).await;
        self.set_input("buyers", buyers).await;
        self.set_input("stock-in", stock).await;
        self.set_input("repeat", "0.1").await;
        self.click("start-load").await;
        eventually("the console reports the load running", || async {
            (self.console_state().await["load"]["running"] == json!(true)).then_some(())
        })
        .await;
    }

    async fn stop_load(&self) {
        self.click("stop-load").await;
        eventually("the console reports the load stopped", || async {
            (self.console_state().await["load"]["running"] == json!(false)).then_some(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_runs_the_workshop_in_a_real_browser() {
    let Some(chromium) = seckill_testkit::chromium("console browser test") else {
        return;
    };
    let Some(driver) = chromedriver() else {
        return;
    };
    let redis = RedisServer::start();
    let database_url = fresh_database().await;
    let env = vec![
        ("SECKILL_DATABASE_URL", database_url.clone()),
        ("SECKILL_REDIS_URL", redis.url()),
        ("SECKILL_ADMIN_TOKEN", TOKEN.to_owned()),
        ("SECKILL_SEED_PRODUCTS", "1:100".to_owned()),
        ("SECKILL_CONTROL_REFRESH_MS", "50".to_owned()),
        // Sections long enough that a paced load under `none` overlaps.
        ("SECKILL_WORK_DELAY_MS", "30".to_owned()),
        ("SECKILL_DATABASE_MAX_CONNECTIONS", "8".to_owned()),
        ("SECKILL_STRATEGY", "pg-for-update".to_owned()),
    ];
    let replicas: Vec<AppProcess> = (0..2).map(|_| AppProcess::start(&env)).collect();
    let urls = replicas
        .iter()
        .map(|r| r.address.clone())
        .collect::<Vec<_>>()
        .join(",");

    let atlas = atlas_fixture();
    let scenario_out =
        std::env::temp_dir().join(format!("seckill-console-runs-{}", std::process::id()));
    let console_port = free_port();
    let _console = Killed(
        Command::new(env!("CARGO_BIN_EXE_seckill-loadgen"))
            .args(["console", "--url", &urls, "--port"])
            .arg(console_port.to_string())
            .arg("--atlas")
            .arg(&atlas)
            .arg("--scenario-out")
            .arg(&scenario_out)
            .arg("--app-bin")
            .arg(seckill_testkit::workspace_binary(
                "seckill-app",
                "seckill-app",
            ))
            .arg("--database-url")
            .arg(seckill_testkit::admin_database_url())
            .env("SECKILL_ADMIN_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .spawn()
            .expect("start the console"),
    );
    wait_for_port(console_port, "the console").await;
    let driver_port = free_port();
    let _driver = Killed(
        Command::new(driver)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver"),
    );
    wait_for_port(driver_port, "chromedriver").await;
    let (browser, profile) = browser_session(chromium, driver_port, "en-US").await;
    let mut room = Room {
        http: reqwest::Client::new(),
        replicas,
        console: format!("http://127.0.0.1:{console_port}"),
        browser,
        shots: std::env::var_os("SECKILL_CONSOLE_SCREENSHOTS").map(PathBuf::from),
    };
    exercise(&room).await;
    atlas_cell(&room).await;
    replay(&room).await;
    three_phase_commit(&room).await;
    let _ = std::fs::remove_file(&atlas);
    let _ = std::fs::remove_dir_all(&scenario_out);
    let _ = room.browser.clone().close().await;
    let _ = std::fs::remove_dir_all(&profile);

    // The room in Chinese: a browser whose Accept-Language prefers zh-CN
    // gets the page in Chinese, and drives one fault and one load in it.
    let (browser, profile) = browser_session(chromium, driver_port, "zh-CN").await;
    room.browser = browser;
    in_chinese(&room).await;
    let _ = room.browser.clone().close().await;
    let _ = std::fs::remove_dir_all(&profile);
    drop(redis);
}

/// An atlas of two cells, in docs/atlas.json's shape: one located (a
/// bracket of exclusion broken), one the fault cannot reach.
fn atlas_fixture() -> PathBuf {
    let probes = json!([
        {"value": "0.25ttl", "resolved": 100.0, "k": 0, "n": 2},
        {"value": "196", "resolved": 196.0, "k": 0, "n": 2},
        {"value": "204", "resolved": 204.0, "k": 2, "n": 2},
        {"value": "3ttl", "resolved": 1200.0, "k": 2, "n": 2}
    ]);
    let na = json!({"not_applicable": "this scenario fails over the service's one Redis"});
    let doc = json!({
        "tool": "seckill-loadgen", "version": "test", "profile": "debug",
        "injections_per_probe": 2, "quick": false, "duration_s": 1.0,
        "cells": [
            {"strategy": "set-nx-px-token", "fault": "pause", "dial": "pause",
             "scenario": "gc-pause", "variant": null, "fixed": [], "kind": "ttl",
             "ttl_ms": 400,
             "exclusion": {"bracket": {"below": "196", "above": "204",
                 "below_resolved": 196.0, "above_resolved": 204.0, "seen_below": false},
                 "probes": probes},
             "data": {"holds_up_to": "3ttl", "k": 0, "n": 2, "upper95": 0.658, "probes": probes},
             "model": {"outcome": "exclusion_broken", "flips": [210.0], "at_lo": "holds"},
             "command": "seckill-loadgen atlas --cells set-nx-px-token:pause",
             "check": null},
            {"strategy": "mysql-get-lock", "fault": "failover", "dial": "lag_ms",
             "scenario": "failover", "variant": "no-wait", "fixed": [], "kind": "session",
             "ttl_ms": null, "exclusion": na, "data": na, "model": null,
             "command": "seckill-loadgen atlas --cells mysql-get-lock:failover", "check": null}
        ]
    });
    let path =
        std::env::temp_dir().join(format!("seckill-console-atlas-{}.json", std::process::id()));
    std::fs::write(&path, doc.to_string()).expect("write the atlas");
    path
}

/// An atlas cell picked on the page and run: the located cell is offered
/// (the one the fault cannot reach is not), the run is that cell's — its
/// strategy, both ends of its bracket, its injections, no --quick — and
/// the page says which cell it is; stopped from the page.
async fn atlas_cell(room: &Room) {
    let offered = room.options("atlas-cell").await;
    assert_eq!(offered, json!(["set-nx-px-token:pause"]), "{offered}");
    let run = room
        .run_from(
            "atlas-cell",
            "set-nx-px-token:pause",
            "run-atlas-cell",
            "atlas-cell-state",
            "atlas cell set-nx-px-token × pause",
        )
        .await;
    let command = run["lines"][0].as_str().unwrap_or_default().to_owned();
    for part in [
        "scenario gc-pause",
        "--strategies set-nx-px-token",
        "--set injections=2",
        "--sweep pause=196,204",
    ] {
        assert!(command.contains(part), "{part} in {command}");
    }
    assert!(!command.contains("--quick"), "{command}");
    room.stop_run().await;
}

/// A replayed bug report picked on the page and run: every replay is
/// offered, the run is `scenario replay ID` (both variants, its own dials,
/// no --quick), and the page says which replay is running; stopped from
/// the page, it shows no result.
async fn replay(room: &Room) {
    let offered = room.options("replay").await;
    for id in ["redisson-2515", "redisson-4698", "jepsen-etcd-3.4.3"] {
        assert!(
            offered.as_array().is_some_and(|o| o.contains(&json!(id))),
            "{id} offered: {offered}"
        );
    }
    let run = room
        .run_from(
            "replay",
            "redisson-4698",
            "run-replay",
            "replay-state",
            "replaying redisson-4698",
        )
        .await;
    let command = run["lines"][0].as_str().unwrap_or_default().to_owned();
    assert!(
        command.starts_with("$ seckill-loadgen scenario replay redisson-4698 --out "),
        "{command}"
    );
    assert!(!command.contains("--quick"), "{command}");
    assert_eq!(run["replay"], json!("redisson-4698"), "{run}");
    room.stop_run().await;
    // Stopped before it wrote replays.json: no result, no verdict.
    let result: serde_json::Value = room
        .http
        .get(format!("{}/api/replay/result", room.console))
        .send()
        .await
        .expect("result")
        .json()
        .await
        .expect("json");
    assert_eq!(result, serde_json::Value::Null);
    assert_eq!(
        room.js(
            "return document.querySelector('[data-testid=replay-state]').dataset.held ?? null;"
        )
        .await,
        serde_json::Value::Null
    );

    // Run to its end with 2 injections a variant (the page's field): the
    // page says it held, and draws each variant's rounds, the reported
    // bug's data damaged where ours is not (each a band of the pause).
    room.set_input("replay-injections", "2").await;
    room.click("run-replay").await;
    let held: Value = seckill_testkit::eventually(
        "the replay ends and the page shows its result",
        Duration::from_secs(240),
        || async {
            let held = room
                .js("return document.querySelector('[data-testid=replay-state]').dataset.held ?? null;")
                .await;
            (!held.is_null()).then_some(held).ok_or("running")
        },
    )
    .await;
    let state = room.text("replay-state").await;
    assert_eq!(held, json!("true"), "{state}");
    let rounds = room
        .drawn_rounds("the page draws the replay's rounds", 2)
        .await;
    eprintln!("replayed from the page: {state}; {rounds}");
    for case in rounds.as_array().expect("cases") {
        let title = case["title"].as_str().expect("title");
        let case_rounds = case["rounds"].as_array().expect("rounds");
        assert_eq!(case_rounds.len(), 2, "a round per injection: {case}");
        for round in case_rounds {
            assert!(
                round["start"].is_number() && round["end"].is_number(),
                "its band has both ends: {round}"
            );
        }
        let damaged = if title.contains("(redisson-4698/reported-bug)") {
            "true"
        } else {
            assert!(title.contains("(redisson-4698/ours)"), "{title}");
            "false"
        };
        let seen: Vec<&Value> = case_rounds.iter().map(|r| &r["damaged"]).collect();
        assert_eq!(seen, [&json!(damaged), &json!(damaged)], "{case}");
    }
}

/// A 3PC case run from the page to its end: coordinator-crash, one
/// injection, pg-3pc only (the page's strategy choice). Once it ended the
/// page draws each case's rounds: a fault band per injection with the
/// contract's hooks (data-name, data-start-ms before data-end-ms, epoch
/// ms around the run), and no round stalled — 3PC's participants commit
/// at their timeout with the coordinator dead, where 2PC blocks.
async fn three_phase_commit(room: &Room) {
    room.browser
        .find(Locator::Css("[data-testid=scenario]"))
        .await
        .expect("the scenario select")
        .select_by_value("coordinator-crash")
        .await
        .expect("choose coordinator-crash");
    let injections = room
        .browser
        .find(Locator::Css("[data-testid=param-injections]"))
        .await
        .expect("its injections dial");
    injections.send_keys("1").await.expect("type");
    room.browser
        .find(Locator::Css("[data-testid=scenario-strategy]"))
        .await
        .expect("the scenario's strategy select")
        .select_by_value("pg-3pc")
        .await
        .expect("choose pg-3pc");
    let began_ms = now_ms();
    room.click("run-scenario").await;
    let run = seckill_testkit::eventually("the 3PC run ends", Duration::from_secs(240), || async {
        let run = room.console_state().await["scenario"].clone();
        (run["name"] == json!("coordinator-crash") && run["running"] == json!(false))
            .then_some(run.clone())
            .ok_or(run)
    })
    .await;
    let command = run["lines"][0].as_str().unwrap_or_default().to_owned();
    for part in [
        "scenario coordinator-crash",
        "--strategies pg-3pc",
        "--set injections=1",
    ] {
        assert!(command.contains(part), "{part} in {command}");
    }
    // Its two variants that apply to 3PC (the decision-log ones).
    let rounds = room
        .drawn_rounds("the page draws the run's rounds", 2)
        .await;
    let ended_ms = now_ms();
    eprintln!("3PC from the page: {rounds}");
    room.shot_of("scenario-rounds", "3pc-rounds").await;
    // Each with its one injection.
    for case in rounds.as_array().expect("cases") {
        let title = case["title"].as_str().expect("title");
        assert!(title.starts_with("coordinator-crash · pg-3pc"), "{title}");
        let case_rounds = case["rounds"].as_array().expect("rounds");
        assert_eq!(case_rounds.len(), 1, "{case}");
        let round = &case_rounds[0];
        assert!(
            round["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("coordinator-crash: ")),
            "{round}"
        );
        let (start, end) = (
            round["start"].as_f64().expect("start"),
            round["end"].as_f64().expect("end"),
        );
        assert!(
            began_ms <= start && start < end && end <= ended_ms,
            "{began_ms} ≤ {start} < {end} ≤ {ended_ms}"
        );
        assert_eq!(
            round["landed"],
            json!("true"),
            "the crash was proven: {case}"
        );
        assert_eq!(
            round["broken"],
            json!("false"),
            "3PC must not stall: {case}"
        );
    }
}

/// A WebDriver session of headless Chromium at 1280×720 whose
/// `Accept-Language` (and `navigator.language`) is `lang`, in a profile of
/// its own (returned, to remove).
async fn browser_session(chromium: &str, driver_port: u16, lang: &str) -> (Client, PathBuf) {
    let profile = std::env::temp_dir().join(format!("seckill-console-{}", uuid_like()));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--window-size=1280,720", "--hide-scrollbars",
                format!("--lang={lang}"),
                format!("--user-data-dir={}", profile.display()),
            ],
            "prefs": { "intl.accept_languages": lang },
        }),
    );
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .expect("a WebDriver session");
    (browser, profile)
}

/// Now, Unix epoch milliseconds (the bands' clock).
fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as f64
}

/// A name no other run of the test uses at the same time.
fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

async fn exercise(room: &Room) {
    room.browser
        .goto(&format!("{}/", room.console))
        .await
        .expect("open the console");
    room.browser
        .wait()
        .at_most(STEP)
        .for_element(Locator::Css("body[data-ready='1']"))
        .await
        .expect("the page draws its first state");
    assert_eq!(
        room.text("faults-banner").await.lines().next(),
        Some("No fault in force"),
        "a fresh stack has no fault"
    );
    // Every fault of /admin/faults has its control.
    let faults = room.faults_everywhere().await;
    for key in faults[0].as_object().expect("faults object").keys() {
        assert_eq!(
            room.count(&format!("[data-testid=fault-{key}]")).await,
            1,
            "one control for the fault {key}"
        );
    }

    // The scenario panel: the chosen scenario's dials, one input each,
    // and the sweep (the first scenario, gc-pause, is chosen at first).
    room.browser
        .find(Locator::Css("[data-testid=scenario]"))
        .await
        .expect("the scenario select")
        .select_by_value("gc-pause")
        .await
        .expect("choose gc-pause");
    for dial in [
        "param-pause",
        "param-where",
        "param-ttl_ms",
        "param-injections",
        "sweep",
    ] {
        assert_eq!(
            room.count(&format!(
                "[data-testid=scenario-dials] [data-testid={dial}]"
            ))
            .await,
            1,
            "an input for {dial}"
        );
    }

    // 1. A fault switched on in the page: on every replica, in the banner.
    room.click("fault-unlock_before_commit").await;
    room.unlock_before_commit_everywhere(true).await;
    room.banner_starts_with("Faults in force: unlock_before_commit")
        .await;
    room.shot("fault-on").await;
    // Another web page the teacher has open posts a form to the console:
    // refused before it does anything, the fault stays on. (The page's own
    // clicks, same-origin, go on working: the reset below.)
    let forged = room
        .http
        .post(format!("{}/api/reset", room.console))
        .header("Origin", "http://evil.example")
        .header("Sec-Fetch-Site", "cross-site")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send()
        .await
        .expect("the console answers");
    assert_eq!(forged.status(), reqwest::StatusCode::FORBIDDEN);
    let body: Value = forged.json().await.expect("a JSON error");
    assert_eq!(body["error"], "cross_site", "{body}");
    // The console answers a control only after the replicas took it: a
    // refused reset has changed nothing by now.
    assert!(
        room.faults_everywhere()
            .await
            .iter()
            .all(|f| f["unlock_before_commit"] == json!(true)),
        "the forged reset cleared nothing"
    );
    room.click("reset-all").await;
    room.unlock_before_commit_everywhere(false).await;
    room.banner_starts_with("No fault in force").await;

    // 2. `none` under a paced load: red bars.
    room.choose_strategy("none").await;
    room.start_load("100", "20", "100000").await;
    let red = "[data-testid=timeline] [data-testid=section][data-strategy=none][data-overlap=true]";
    let n = eventually("red bars under none", || async {
        let n = room.count(red).await;
        (n >= 3).then_some(n)
    })
    .await;
    eprintln!("none: {n} red bars drawn");
    room.shot("none").await;
    charts_shade_a_fault(room).await;
    room.stop_load().await;
    download_has_a_row_per_grab(room).await;
    // Stopped means stopped: the grabs in flight were answered before the
    // stop returned, and no new one starts.
    let orders = room.console_state().await["live"]["orders"].clone();
    // A fixed wait is the point: nothing must happen during it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        room.console_state().await["live"]["orders"],
        orders,
        "no order after the load stopped"
    );

    // 3. `set-nx-px-token`: bars, none red, overlaps 0.
    room.choose_strategy("set-nx-px-token").await;
    room.start_load("60", "20", "100000").await;
    let bars = "[data-testid=timeline] [data-testid=section][data-strategy=set-nx-px-token]";
    eventually("bars under set-nx-px-token", || async {
        (room.count(bars).await >= 40).then_some(())
    })
    .await;
    // Twice as many drawn: the load went on under the lock a while longer.
    eventually("twice as many bars under set-nx-px-token", || async {
        (room.count(bars).await >= 80).then_some(())
    })
    .await;
    let drawn = room.count(bars).await;
    let red_now = room
        .count("[data-testid=timeline] [data-testid=section][data-overlap=true]")
        .await;
    room.shot("set-nx-px-token").await;
    assert_eq!(
        red_now, 0,
        "no red bar under set-nx-px-token ({drawn} drawn)"
    );
    assert_eq!(room.text("overlaps").await, "0");
    assert_eq!(room.text("oversold").await, "0");
    eprintln!("set-nx-px-token: {drawn} bars drawn, none red");

    // 3b. The room turns the running load down, without a restart: the same
    // load (its clock and counts go on) at the new rate and buyers.
    let before = room.console_state().await["load"].clone();
    room.set_input("rate", "4").await;
    room.set_input("buyers", "2").await;
    room.click("adjust-load").await;
    let after = eventually("the console reports the new rate and buyers", || async {
        let load = room.console_state().await["load"].clone();
        (load["settings"]["rate"] == json!(4.0) && load["settings"]["buyers"] == json!(2))
            .then_some(load)
    })
    .await;
    let secs = |l: &Value| l["seconds"].as_f64().expect("seconds");
    let sent = |l: &Value| l["counts"]["sent"].as_u64().expect("sent");
    assert!(
        secs(&after) >= secs(&before) && sent(&after) >= sent(&before),
        "the same load went on: {before} then {after}"
    );
    let rate_before = sent(&before) as f64 / secs(&before);
    // The grabs already sent at the old rate drain first (a busy machine
    // answers them late): the new rate is read over the 5 s after a
    // second's grace, against the rate asked, which no machine's speed
    // changes: 4 a second, Poisson, so 20 expected in 5 s and more than
    // 40 (8 a second) about once in 10⁵ runs.
    // Both read on the load's own clock (its seconds).
    let load_at = |at: f64| async move {
        eventually(&format!("the load's clock at {at:.1} s"), || async {
            let load = room.console_state().await["load"].clone();
            (load["seconds"].as_f64().is_some_and(|s| s >= at)).then_some(load)
        })
        .await
    };
    let settled = load_at(secs(&after) + 1.0).await;
    let later = load_at(secs(&settled) + 5.0).await;
    let rate_after = (sent(&later) - sent(&settled)) as f64 / (secs(&later) - secs(&settled));
    eprintln!(
        "adjusted: {rate_before:.1} grabs/s before, {rate_after:.1} after (asked 60, then 4)"
    );
    assert!(
        rate_after <= 8.0 && rate_after < rate_before,
        "the rate went down to the 4 a second asked: {rate_before:.1} grabs/s before, {rate_after:.1} after"
    );
    room.stop_load().await;

    // 4. Reset everything: default strategy, no fault, history off.
    room.click("fault-unlock_before_commit").await;
    room.unlock_before_commit_everywhere(true).await;
    room.start_load("20", "5", "500").await;
    room.click("reset-all").await;
    eventually("everything is reset", || async {
        let state = room.console_state().await;
        let faults_off = room
            .faults_everywhere()
            .await
            .iter()
            .all(|f| f["unlock_before_commit"] == json!(false));
        let strategy = room.strategy_everywhere().await;
        (faults_off
            && strategy.as_deref() == Some("pg-for-update")
            && state["load"]["running"] == json!(false)
            && state["live"]["history"] == json!(false)
            && state["live"]["stock"] == json!(500)
            && state["live"]["orders"] == json!(0))
        .then_some(())
    })
    .await;
    eventually("the page shows the reset", || async {
        (room.text("overlaps").await == "off" && room.text("load-state").await == "stopped")
            .then_some(())
    })
    .await;
    room.shot("reset").await;
}

/// 2a. Under the running load, a fault ticked in the page is a shaded band
/// on the charts, starting within 1 s of the moment every replica had it.
async fn charts_shade_a_fault(room: &Room) {
    // A few seconds of load first: the band has points before it.
    eventually("the load has run 3 s", || async {
        let seconds = room.console_state().await["load"]["seconds"].as_f64();
        seconds.is_some_and(|s| s >= 3.0).then_some(())
    })
    .await;
    room.click("fault-unlock_before_commit").await;
    room.unlock_before_commit_everywhere(true).await;
    let landed_ms = now_ms();
    let landed_s = room.console_state().await["load"]["seconds"]
        .as_f64()
        .expect("the load's seconds");
    // Only the contract's hooks (shared/DESIGN.md): [data-testid=fault-band]
    // with data-name and data-start-ms (epoch milliseconds), no
    // data-end-ms while the fault is in force.
    let band: Value = eventually("the page lists the fault's band", || async {
        let band = room
            .browser
            .execute(
                "const b = document.querySelector('[data-testid=fault-band][data-name=unlock_before_commit]'); \
                 return b ? { start: Number(b.dataset.startMs), end: b.hasAttribute('data-end-ms') } : null;",
                vec![],
            )
            .await
            .expect("read the bands");
        (!band.is_null()).then_some(band)
    })
    .await;
    let start_ms = band["start"].as_f64().expect("data-start-ms");
    assert_eq!(band["end"], json!(false), "no end while in force: {band}");
    eprintln!(
        "fault band from {start_ms:.0}; every replica had the fault at {landed_ms:.0} (epoch ms)"
    );
    assert!(
        (start_ms - landed_ms).abs() <= 1000.0,
        "the band starts within 1 s of the landing: {start_ms} vs {landed_ms}"
    );
    // The band's start in the charts' seconds since the load began.
    let from = landed_s + (start_ms - landed_ms) / 1000.0;
    // Two more seconds of load, then the latency chart has points on both
    // sides of the band's start and the band painted on its canvas.
    let pixels = eventually("the latency chart paints the band", || async {
        let seen = room
            .browser
            .execute(
                "const u = window.seckillCharts['chart-latency']; const from = arguments[0]; \
                 if (!u || u.data[0].length === 0 || u.scales.x.max < from + 1.5) return null; \
                 const points = u.data.slice(1).flat().filter((v) => v !== null).length; \
                 const at = (s) => { const x = Math.round(u.valToPos(s, 'x', true)); \
                   return [0.3, 0.38, 0.46, 0.54, 0.62, 0.7, 0.78, 0.86, 0.94].map((f) => Array.from( \
                     u.ctx.getImageData(x, Math.round(u.bbox.top + f * u.bbox.height), 1, 1).data)); }; \
                 return { points, inside: at(from + 0.5), before: from > 0.6 ? at(from - 0.5) : [] };",
                vec![json!(from)],
            )
            .await
            .expect("read the chart");
        (!seen.is_null()).then_some(seen)
    })
    .await;
    let red = |px: &Value| {
        let c: Vec<u64> = px
            .as_array()
            .expect("rgba")
            .iter()
            .map(|v| v.as_u64().unwrap_or(0))
            .collect();
        c[3] > 0 && c[0] > c[2] + 60
    };
    let count = |side: &str| {
        pixels[side]
            .as_array()
            .expect(side)
            .iter()
            .filter(|p| red(p))
            .count()
    };
    assert!(
        pixels["points"].as_u64().expect("points") > 0,
        "a load draws points: {pixels}"
    );
    // Nine heights: a data line or a grid line crossing one or two of
    // them is not red (CI once saw 3 of 5 red with the old five).
    assert!(count("inside") >= 6, "the band is painted inside: {pixels}");
    assert!(count("before") <= 1, "and not before the fault: {pixels}");
    room.shot_of("charts-card", "charts-band").await;
    room.click("fault-unlock_before_commit").await;
    room.unlock_before_commit_everywhere(false).await;
}

/// 2b. "Download this run": one CSV row per grab the load sent.
async fn download_has_a_row_per_grab(room: &Room) {
    let series: Value = room
        .http
        .get(format!("{}/api/run", room.console))
        .send()
        .await
        .expect("GET /api/run")
        .json()
        .await
        .expect("JSON");
    let grabs: u64 = series["grabs_per_s"]
        .as_array()
        .expect("grabs_per_s")
        .iter()
        .map(|n| n.as_u64().expect("a count"))
        .sum();
    // The contract's routes: GET /api/run.csv and GET /api/run.json.
    let csv = room
        .http
        .get(format!("{}/api/run.csv", room.console))
        .send()
        .await
        .expect("GET /api/run.csv")
        .text()
        .await
        .expect("CSV");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("t_s,replica,outcome,latency_ms,faults"));
    let rows: Vec<&str> = lines.collect();
    assert!(grabs > 0);
    assert_eq!(rows.len() as u64, grabs, "one row per grab");
    assert!(
        rows.iter().any(|r| r.ends_with("unlock_before_commit")),
        "the rows sent under the fault name it"
    );
    let json: Value = room
        .http
        .get(format!("{}/api/run.json", room.console))
        .send()
        .await
        .expect("GET /api/run.json")
        .json()
        .await
        .expect("JSON");
    let kept = json["grabs"].as_array().expect("grabs").len();
    assert_eq!(kept, rows.len(), "the JSON has the CSV's grabs");
    let band = json["bands"]
        .as_array()
        .expect("bands")
        .iter()
        .find(|b| b["name"] == "unlock_before_commit")
        .expect("the fault's band in the JSON");
    assert!(band["start_ms"].as_u64().is_some(), "{band}");
    eprintln!("download: {} rows, one per grab", rows.len());
}

/// Step 5, the console in Chinese, chosen by the browser's Accept-Language:
/// the labels in the source posts' terms (超卖 for oversold), one fault and
/// one load driven from the Chinese page, the choice kept across a reload,
/// and the toggle back to English.
async fn in_chinese(room: &Room) {
    let served = room
        .http
        .get(format!("{}/", room.console))
        .header("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
        .send()
        .await
        .expect("GET /")
        .text()
        .await
        .expect("the page");
    assert!(
        served.contains("<html lang=\"zh-CN\">"),
        "the page is served in Chinese"
    );
    room.browser
        .goto(&format!("{}/", room.console))
        .await
        .expect("open the console");
    eventually("the page draws its first state", || async {
        (room.js("return document.body.dataset.ready || null;").await == json!("1")).then_some(())
    })
    .await;
    let label = "return document.querySelector('#oversold-card .label').textContent;";
    assert_eq!(room.js(label).await, json!("超卖"), "oversold is 超卖");
    assert_eq!(
        room.text("lang").await,
        "English",
        "the toggle offers English"
    );
    room.banner_starts_with("无故障").await;
    room.click("fault-unlock_before_commit").await;
    room.unlock_before_commit_everywhere(true).await;
    room.banner_starts_with("生效的故障：unlock_before_commit")
        .await;
    room.shot("zh-fault-on").await;
    room.start_load("20", "5", "500").await;
    eventually("the load runs, said in Chinese", || async {
        room.text("load-state")
            .await
            .starts_with("运行中")
            .then_some(())
    })
    .await;
    eventually("the charts draw the load, said in Chinese", || async {
        let note = room
            .js("return document.getElementById('charts-note').textContent;")
            .await;
        let secs = room.console_state().await["load"]["seconds"].as_f64();
        (note.as_str().is_some_and(|n| n.contains("自压测开始")) && secs.is_some_and(|s| s >= 4.0))
            .then_some(())
    })
    .await;
    room.shot_of("charts-card", "zh-load").await;
    room.stop_load().await;
    room.click("reset-all").await;
    room.unlock_before_commit_everywhere(false).await;
    room.banner_starts_with("无故障").await;
    // The choice is the browser's to keep: English now, after a reload too.
    room.click("lang").await;
    assert_eq!(room.js(label).await, json!("oversold"));
    room.browser.refresh().await.expect("reload");
    eventually("the reloaded page stays in English", || async {
        (room.js(label).await == json!("oversold")).then_some(())
    })
    .await;
}

/// Beyond loopback (`--bind 0.0.0.0`), only whoever has the admin token
/// drives the room: every route but the login form and the charting
/// library answers 401 until a login sets the session cookie (HttpOnly,
/// SameSite=Strict), or the request carries the token. No browser needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_beyond_loopback_asks_for_the_admin_token() {
    let redis = RedisServer::start();
    let database_url = fresh_database().await;
    let env = vec![
        ("SECKILL_DATABASE_URL", database_url),
        ("SECKILL_REDIS_URL", redis.url()),
        ("SECKILL_ADMIN_TOKEN", TOKEN.to_owned()),
        ("SECKILL_SEED_PRODUCTS", "1:100".to_owned()),
        ("SECKILL_DATABASE_MAX_CONNECTIONS", "4".to_owned()),
    ];
    let replica = AppProcess::start(&env);
    let port = free_port();
    let _console = Killed(
        Command::new(env!("CARGO_BIN_EXE_seckill-loadgen"))
            .args([
                "console",
                "--url",
                &replica.address,
                "--bind",
                "0.0.0.0",
                "--port",
            ])
            .arg(port.to_string())
            .env("SECKILL_ADMIN_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .spawn()
            .expect("start the console"),
    );
    wait_for_port(port, "the console").await;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let status = |r: &reqwest::Response| r.status().as_u16();

    let state = http
        .get(format!("{base}/api/state"))
        .send()
        .await
        .expect("state");
    assert_eq!(status(&state), 401);
    let body: Value = state.json().await.expect("a JSON error");
    assert_eq!(body["error"], "unauthenticated", "{body}");
    let reset = http
        .post(format!("{base}/api/reset"))
        .send()
        .await
        .expect("reset");
    assert_eq!(
        status(&reset),
        401,
        "a control without a login changes nothing"
    );
    let page = http.get(format!("{base}/")).send().await.expect("page");
    assert_eq!(status(&page), 401);
    assert!(page
        .text()
        .await
        .expect("page")
        .contains("data-testid=\"login-token\""));
    let css = http
        .get(format!("{base}/assets/uPlot.min.css"))
        .send()
        .await
        .expect("css");
    assert_eq!(status(&css), 200, "the login page's own assets are open");

    let log_in = |token: &str| {
        http.post(format!("{base}/login"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    let wrong = log_in("not-the-token").await.expect("login");
    assert_eq!(status(&wrong), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let right = log_in(TOKEN).await.expect("login");
    assert_eq!(status(&right), 303);
    let cookie = right
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(TOKEN),
        "the cookie is a session id, not the token"
    );
    let session = cookie.split(';').next().expect("name=value");
    let state = http
        .get(format!("{base}/api/state"))
        .header("Cookie", session)
        .send()
        .await
        .expect("state");
    assert_eq!(status(&state), 200, "logged in");
    let scripted = http
        .get(format!("{base}/api/state"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("state");
    assert_eq!(status(&scripted), 200, "a script sends the token");
    drop(replica);
    drop(redis);
}
