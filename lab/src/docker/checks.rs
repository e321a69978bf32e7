//! What the Docker check asks of the compose stack once it is up, read
//! through the service's own types: its own admin token (the demo token
//! refused), one strategy and one fault set for every replica, the
//! console, the loadgen job's report and the dashboards' queries, the
//! balancer with a replica killed, and the same volumes after `down`/`up`.
//!
//! The stack publishes its own ports 8080 (the balancer), 8089 (the
//! console) and 9090 (Prometheus); 3000 stays free: no Grafana here.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use seckill_load::api::{Faults, FaultsPatch, Scrape, Service, StrategiesBody, StrategyName};
use seckill_load::load::Grab;
use serde::Deserialize;

use super::compose::Compose;
use super::engine::{output, standins};
use crate::util::say;

/// The balancer and Prometheus, as the stack publishes them.
const LB: &str = "http://127.0.0.1:8080";
const CONSOLE: &str = "http://127.0.0.1:8089";
const PROM: &str = "http://127.0.0.1:9090";
/// The loadgen job's `--url` list: every replica by its compose name.
const REPLICA_URLS: [&str; 6] = [
    "--url",
    "http://app-1:8080",
    "--url",
    "http://app-2:8080",
    "--url",
    "http://app-3:8080",
];
/// The replicas, as the compose file numbers them.
const REPLICAS: [usize; 3] = [1, 2, 3];

/// How much of the stack the check loads: `Full` runs the compose file's
/// own loadgen command, `Quick` nine strategies on a small stock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Full,
    Quick,
}

/// `docker-compose up` for real: healthy, checked, down and up again on
/// the same volumes, and down with nothing left.
pub fn check_stack(root: &Path, mode: Mode) -> anyhow::Result<()> {
    let started = Instant::now();
    let compose = Compose::new(root)?;
    let pulled = compose.pulled_images()?;
    standins(root, &pulled.iter().map(String::as_str).collect::<Vec<_>>())?;
    for image in ["seckill-lab/app:local", "seckill-lab/loadgen:local"] {
        ensure!(
            output("docker", &["image", "inspect", image]).is_ok(),
            "{image} is missing: make docker-images"
        );
    }
    for port in [8080, 8089, 9090] {
        ensure!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} is taken on 127.0.0.1 (a running demo? make demo-stop): the compose stack publishes it"
        );
    }
    let services = compose.services()?;
    // Ctrl-C and every failure take the stack down as a pass does.
    let down = compose.clone();
    crate::util::on_interrupt(move || {
        let _ = down.take_down();
        std::process::exit(130);
    });
    let checked = (|| {
        let _ = compose
            .command(&["--profile", "load", "down", "-v", "--remove-orphans"])
            .output();
        say(&format!(
            "docker-compose up -d {} (grafana left out: no image here)",
            services.join(" ")
        ));
        let up = Instant::now();
        compose.up(&services)?;
        compose.wait_healthy(Duration::from_secs(300))?;
        say(&format!("stack healthy in {} s", up.elapsed().as_secs()));
        checks(root, &compose, &services, mode)
    })();
    let taken_down = compose.take_down();
    checked?;
    taken_down?;
    say(&format!(
        "check-docker ({}) passed in {} s",
        if mode == Mode::Full { "full" } else { "quick" },
        started.elapsed().as_secs()
    ));
    Ok(())
}

/// The checks, in the order a user meets them.
fn checks(root: &Path, compose: &Compose, services: &[String], mode: Mode) -> anyhow::Result<()> {
    crate::panels::prometheus_up(PROM, REPLICAS.len()).context("Prometheus")?;
    let rt = crate::util::runtime()?;
    let token = read_token(compose, &rt)?;
    rt.block_on(check_shared_state(compose, &token))?;
    rt.block_on(check_console(compose, &token))?;
    let out = root.join(".state/check-docker");
    load_and_panels(compose, &out, mode)?;
    rt.block_on(check_balancer(compose, &token))?;
    again_after_down_up(compose, services, &out, &rt, &token)
}

/// The loadgen job (the compose file's own command, or nine strategies on
/// a small stock), its report judged, then every dashboard query.
fn load_and_panels(compose: &Compose, out: &Path, mode: Mode) -> anyhow::Result<()> {
    let strategies = [
        StrategyName::None,
        StrategyName::LocalMutex,
        StrategyName::SetNxPxToken,
        StrategyName::Redlock,
        StrategyName::ZkEphemeralSeq,
        StrategyName::EtcdLease,
        StrategyName::MysqlGetLock,
        StrategyName::PgAtomic,
        StrategyName::RedisLuaStock,
    ]
    .map(StrategyName::as_str)
    .join(",");
    let args = if mode == Mode::Quick {
        compare_job(&strategies)
    } else {
        Vec::new()
    };
    let load_start = unix_s();
    say(&format!(
        "docker-compose --profile load run loadgen {}",
        if args.is_empty() {
            "(its own command: compare over app-1, app-2, app-3)".to_owned()
        } else {
            args.join(" ")
        }
    ));
    compose.run_loadgen(&out.join("compare"), &args)?;
    let load_end = unix_s();
    crate::compose_report::judge(&out.join("compare"))
        .context("the compare report breaks a promise")?;
    // The panels wait for two scrapes of each replica first, and are
    // evaluated 10 s after the load ended.
    crate::panels::run_check(&crate::panels::Check {
        prometheus: PROM.into(),
        since: Some(load_start),
        at: Some(load_end),
        strategy: StrategyName::Redlock.as_str().into(),
        instance: Some("app-1:8080".into()),
        replicas: REPLICAS.len(),
        positive: Vec::new(),
        dashboards: Vec::new(),
    })
    .context("a dashboard query returned nothing from the compose stack's Prometheus")
}

/// `down` then `up` on the same volumes: the same admin token, and a
/// second load whose report keeps every promise.
fn again_after_down_up(
    compose: &Compose,
    services: &[String],
    out: &Path,
    rt: &tokio::runtime::Runtime,
    token: &str,
) -> anyhow::Result<()> {
    say("docker-compose down, then up again on the same volumes: nothing kept may break the next demo");
    let _ = compose.command(&["down", "--timeout", "20"]).output();
    compose.up(services)?;
    compose
        .wait_healthy(Duration::from_secs(300))
        .context("the stack did not come back healthy after down/up")?;
    let kept = read_token(compose, rt)?;
    ensure!(kept == token, "down/up without -v made a new admin token");
    let again = [
        StrategyName::None.as_str(),
        StrategyName::SetNxPxToken.as_str(),
    ]
    .join(",");
    compose
        .run_loadgen(&out.join("again"), &compare_job(&again))
        .context("the loadgen job failed after down/up")?;
    crate::compose_report::judge(&out.join("again"))
        .context("after down/up the compare report breaks a promise")
}

/// The loadgen job's command: a comparison of `strategies` over the three
/// replicas on a small stock, its report in the job's volume.
fn compare_job(strategies: &str) -> Vec<String> {
    let mut args = vec!["compare".to_owned()];
    args.extend(REPLICA_URLS.map(str::to_owned));
    for word in [
        "--strategies",
        strategies,
        "--stock",
        "50",
        "--users",
        "50",
        "--out",
        "/reports",
    ] {
        args.push(word.to_owned());
    }
    args
}

fn unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The stack's admin token, as its admin-token service made it (a random
/// one: no SECKILL_ADMIN_TOKEN here), printed in that service's log; the
/// README's demo token must be refused.
fn read_token(compose: &Compose, rt: &tokio::runtime::Runtime) -> anyhow::Result<String> {
    let token = compose
        .run(&[
            "exec",
            "-T",
            "console",
            "cat",
            "/var/lib/seckill/admin-token",
        ])
        .context("no admin token in the stack's volume")?
        .trim()
        .to_owned();
    let demo = seckill_wire::admin::DEMO_TOKEN;
    ensure!(
        token.len() >= 16 && token != demo,
        "the stack's admin token is '{token}': not a made one (does .env set SECKILL_ADMIN_TOKEN?)"
    );
    let logs = compose.run(&["logs", "--no-color", "admin-token"])?;
    ensure!(
        logs.contains(&token),
        "docker-compose logs admin-token does not print the token"
    );
    let status = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{LB}/admin/strategies"))
            .bearer_auth(demo)
            .send()
            .await
            .map(|r| r.status().as_u16())
    })?;
    ensure!(
        status == 401,
        "the stack answered {status} to the demo token, not 401"
    );
    println!(
        "ok   this stack's own admin token ({} characters, printed by docker-compose logs admin-token); the demo token is refused (401)",
        token.len()
    );
    Ok(token)
}

/// Replica `n`'s answer to `path`, read from inside its container.
fn replica<T: serde::de::DeserializeOwned>(
    compose: &Compose,
    n: usize,
    path: &str,
    token: &str,
) -> anyhow::Result<T> {
    let body = compose.in_replica(n, path, token)?;
    serde_json::from_str(&body).with_context(|| format!("app-{n}'s {path}: {body}"))
}

/// A switch and a fault through the balancer reach every replica.
async fn check_shared_state(compose: &Compose, token: &str) -> anyhow::Result<()> {
    let lb = Service::new(vec![LB.into()], token.into());
    lb.switch(StrategyName::Redlock, 1).await?;
    lb.set_faults(FaultsPatch {
        work_delay_ms: Some(7),
        ..FaultsPatch::default()
    })
    .await?;
    for n in REPLICAS {
        let listed: StrategiesBody = replica(compose, n, "/admin/strategies", token)?;
        ensure!(
            listed.active == StrategyName::Redlock,
            "app-{n}'s active strategy is {} after PUT /admin/strategy redlock through the balancer",
            listed.active
        );
        let faults: Faults = replica(compose, n, "/admin/faults", token)?;
        ensure!(
            faults.work_delay_ms == 7,
            "app-{n}'s work_delay_ms is {} after PUT /admin/faults through the balancer",
            faults.work_delay_ms
        );
    }
    lb.set_faults(FaultsPatch {
        work_delay_ms: Some(0),
        ..FaultsPatch::default()
    })
    .await?;
    lb.switch(StrategyName::SetNxPxToken, 1).await?;
    println!("ok   one strategy and one fault set: a switch through the balancer reached app-1, app-2 and app-3");
    Ok(())
}

/// What the check reads of the console's `GET /api/state`.
#[derive(Debug, Deserialize)]
struct ConsoleState {
    replicas: Vec<ConsoleReplica>,
    faults_in_force: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ConsoleReplica {
    strategy: Option<StrategyName>,
    error: Option<String>,
}

/// The console through its published port: it refuses a reset without
/// the token, sees every replica, and a fault switched in it reaches each.
async fn check_console(compose: &Compose, token: &str) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    // It listens on 0.0.0.0 in its container: without the token, nothing.
    let status = http
        .post(format!("{CONSOLE}/api/reset"))
        .send()
        .await?
        .status();
    ensure!(
        status.as_u16() == 401,
        "the console answered {status} to a reset without the admin token, not 401"
    );
    let page = http
        .get(format!("{CONSOLE}/"))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    ensure!(
        page.contains("data-testid=\"timeline\""),
        "the console's page at {CONSOLE}/ has no timeline"
    );
    let state = console_state(&http, token).await?;
    let healthy = state
        .replicas
        .iter()
        .filter(|r| r.strategy.is_some() && r.error.is_none())
        .count();
    ensure!(
        healthy == REPLICAS.len(),
        "the console sees {healthy} healthy replicas of 3 ({CONSOLE}/api/state)"
    );
    http.put(format!("{CONSOLE}/api/faults"))
        .bearer_auth(token)
        .json(&FaultsPatch {
            unlock_before_commit: Some(true),
            ..FaultsPatch::default()
        })
        .send()
        .await?
        .error_for_status()
        .context("PUT /api/faults through the console")?;
    for n in REPLICAS {
        let faults: Faults = replica(compose, n, "/admin/faults", token)?;
        ensure!(
            faults.unlock_before_commit,
            "app-{n}'s unlock_before_commit is off after the console switched it on"
        );
    }
    http.post(format!("{CONSOLE}/api/reset"))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()
        .context("POST /api/reset through the console")?;
    let left = console_state(&http, token).await?.faults_in_force;
    ensure!(
        left.is_empty(),
        "after the console's reset these faults are still in force: {left:?}"
    );
    println!("ok   the console (127.0.0.1:8089) refuses a reset without the token (401); with it, sees app-1, app-2 and app-3; a fault switched in it reached each; its reset cleared it");
    Ok(())
}

async fn console_state(http: &reqwest::Client, token: &str) -> anyhow::Result<ConsoleState> {
    http.get(format!("{CONSOLE}/api/state"))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await
        .context("the console's /api/state")
}

/// The grab requests replica `n` has counted.
fn grabs_of(compose: &Compose, n: usize, token: &str) -> anyhow::Result<u64> {
    let text = compose.in_replica(n, "/metrics", token)?;
    Ok(Scrape::parse(&text)
        .sum("seckill_grab_requests_total", &[])
        .round() as u64)
}

/// `count` grabs through the balancer by users from `first_user`: every
/// answer must be the API's (201, 409 or 429), never the balancer's.
async fn grab_through_lb(count: u64, first_user: u64) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let mut bad = Vec::new();
    for user in first_user..first_user + count {
        let status = Grab::one(1, user)
            .send(&http, LB)
            .await
            .map_or(0, |r| r.status().as_u16());
        if !matches!(status, 201 | 409 | 429) {
            bad.push(status);
        }
    }
    if !bad.is_empty() {
        bail!(
            "{} of {count} grabs through the balancer were not answered by the API (statuses {bad:?}; 0: no answer)",
            bad.len()
        );
    }
    Ok(())
}

/// Every replica serves grabs through the balancer; with one killed the
/// balancer leaves it out; back, it serves again.
async fn check_balancer(compose: &Compose, token: &str) -> anyhow::Result<()> {
    Service::new(vec![LB.into()], token.into())
        .reset(1, 1000)
        .await?;
    let before: Vec<u64> = REPLICAS
        .iter()
        .map(|&n| grabs_of(compose, n, token))
        .collect::<anyhow::Result<_>>()?;
    grab_through_lb(60, 500_000).await?;
    for (i, n) in REPLICAS.into_iter().enumerate() {
        let after = grabs_of(compose, n, token)?;
        ensure!(
            after > before[i],
            "app-{n} got none of 60 grabs through the balancer"
        );
        println!(
            "ok   balancer: app-{n} served {} of 60 grabs",
            after - before[i]
        );
    }
    say("docker-compose kill app-3: the balancer must leave it out");
    compose.run(&["kill", "app-3"])?;
    grab_through_lb(30, 600_000)
        .await
        .context("with app-3 killed")?;
    println!("ok   balancer: 30 grabs answered by the API with app-3 killed");
    compose.run(&["start", "app-3"])?;
    compose
        .wait_healthy(Duration::from_secs(120))
        .context("app-3 did not come back healthy")?;
    grab_through_lb(30, 700_000)
        .await
        .context("after app-3 came back")?;
    println!("ok   balancer: app-3 back (docker-compose start), 30 more grabs answered");
    Ok(())
}
