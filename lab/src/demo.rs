//! `make demo` (`seckill-lab demo`): the local stack ([`crate::stack`]) in
//! `.demo/`, Prometheus scraping it, then a short side-by-side comparison
//! over the replicas, its table, and every URL to open. A second `make
//! demo` restarts what the first started (the PostgreSQL cluster and the
//! ports are reused); `make demo-stop` stops exactly what the pid files
//! name.
//!
//! `up` writes `.demo/env`: `source .demo/env` sets A, B, C (the
//! replicas' URLs), L (the load generator), SECKILL_ADMIN_TOKEN, REDIS_PORT
//! and REDLOCK_PORTS for the workshop's commands. `restart` restarts the
//! named replicas (default all) on their ports with extra settings, and
//! nothing else: Redis and its keys, the database, the faults and the
//! strategy in force stay. `restart redlock` starts again (empty) the
//! Redlock nodes that were stopped.
//!
//! Knobs: DEMO_STRATEGIES, DEMO_STOCK (100), DEMO_USERS (50),
//! DEMO_WORK_DELAY_MS (5), DEMO_SCRAPE_INTERVAL (2s), SECKILL_DATABASE_URL,
//! SECKILL_ADMIN_TOKEN, SECKILL_SKIP_BUILD=1, SECKILL_BIN_DIR.

use seckill_load::api::StrategyName;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Subcommand;
use seckill_launch::{servers, Ready};

use crate::stack::{Stack, REDIS_NAMES};
use crate::util::say;

/// What `seckill-lab demo` does (default: `up`).
#[derive(Debug, Clone, Subcommand)]
pub enum Action {
    /// Start (again) the stack, run the comparison, print the URLs.
    Up,
    /// Stop exactly what the pid files under .demo/ name.
    Stop,
    /// Print the URLs again.
    Urls,
    /// Every URL `urls` prints must answer 200.
    CheckUrls,
    /// Print .demo/env again.
    Env,
    /// `restart [all|1|2|3]... [SECKILL_NAME=value]...`: those replicas
    /// with those settings (none: back to the defaults); `restart
    /// redlock`: the Redlock nodes that are down.
    Restart {
        #[arg(allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

const STRATEGIES: &str = "none,local-mutex,setnx-expire,set-nx-px-token,watchdog,redlock,fenced,zk-ephemeral-seq,etcd-lease,mysql-get-lock,pg-for-update,pg-atomic,redis-lua-stock,pg-2pc";

/// The key panels of the Grafana dashboard, as Prometheus graphs.
const PANELS: [(&str, &str); 5] = [
    ("oversold units", "max by (product) (seckill_oversold_units)"),
    ("lost updates", "max by (product) (seckill_lost_updates)"),
    ("grabs/s by strategy", "sum by (strategy) (rate(seckill_grab_requests_total[1m]))"),
    ("acquire-wait p99 (s)", "histogram_quantile(0.99, sum by (strategy, le) (rate(seckill_lock_acquire_duration_seconds_bucket[1m])))"),
    ("lost leases", "sum by (strategy) (increase(seckill_lock_lost_total[5m]))"),
];

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

pub fn run(action: Option<Action>) -> anyhow::Result<()> {
    let stack = Stack::new(Path::new(".demo"), 3)?;
    let runtime = crate::util::runtime()?;
    match action.unwrap_or(Action::Up) {
        Action::Up => runtime.block_on(up(&stack)),
        Action::Stop => {
            runtime.block_on(stack.down())?;
            say("demo stopped (state kept: ports in .demo/, the database in the checkout's PostgreSQL cluster; the next make demo reuses both)");
            Ok(())
        }
        Action::Urls => {
            print!("{}", urls(&stack)?);
            Ok(())
        }
        Action::CheckUrls => runtime.block_on(check_urls(&stack)),
        Action::Env => {
            let env = std::fs::read_to_string(stack.state.path.join("env"))
                .context("no .demo/env — run: make demo")?;
            print!("{env}");
            Ok(())
        }
        Action::Restart { args } => restart(&stack, &args),
    }
}

async fn up(stack: &Stack) -> anyhow::Result<()> {
    let started = Instant::now();
    stack.build()?;
    let up_started = Instant::now();
    // A new demo: every replica with the defaults.
    for name in stack.state.names("app-") {
        let _ = std::fs::remove_file(stack.state.file(&name, "settings"));
    }
    stack.up().await?;
    write_env(stack)?;
    let interval = env_or("DEMO_SCRAPE_INTERVAL", "2s");
    let prometheus = stack.prometheus("prometheus", &interval)?;
    say(&format!("Prometheus: {prometheus} (scraping {} replicas every {interval}, rules of prometheus/alerts.yml)", stack.replicas));
    say(&format!("stack up in {} s", up_started.elapsed().as_secs()));
    let code = compare(stack)?;
    say(&format!("whole demo: {} s", started.elapsed().as_secs()));
    match code {
        0 => {}
        1 => say("a strategy classed safe showed a violation (VIOLATION lines above): worth a look in .demo/report/ and the replicas' logs"),
        _ => say(&format!("seckill-loadgen failed (exit {code}, message above); the stack stays up: .demo/*.log")),
    }
    print!("{}", urls(stack)?);
    let _ = check_urls(stack).await;
    if code >= 2 {
        bail!("seckill-loadgen compare exited {code}");
    }
    Ok(())
}

/// The demo's comparison over the replicas; its exit code.
fn compare(stack: &Stack) -> anyhow::Result<i32> {
    let (stock, users, work) = (
        env_or("DEMO_STOCK", "100"),
        env_or("DEMO_USERS", "50"),
        env_or("DEMO_WORK_DELAY_MS", "5"),
    );
    say(&format!("flash sale over the {} replicas: {stock} units, {users} buyers, {work} ms of work inside the lock, per strategy", stack.replicas));
    let report = stack.state.path.join("report");
    let _ = std::fs::remove_dir_all(&report);
    let started = Instant::now();
    let status = stack
        .compare(&env_or("DEMO_STRATEGIES", STRATEGIES))
        .args([
            "--stock",
            &stock,
            "--users",
            &users,
            "--work-delay-ms",
            &work,
            "--max-run-time",
            "20s",
            "--quiet",
            "--out",
        ])
        .arg(&report)
        .status()
        .context("run seckill-loadgen")?;
    say(&format!(
        "load generator: {} s",
        started.elapsed().as_secs()
    ));
    if let Some(secs) = since_make_demo() {
        say(&format!(
            "first table {secs} s after make demo started (its builds included)"
        ));
    }
    Ok(status.code().unwrap_or(2))
}

/// Seconds since `scripts/demo.sh` started (`SECKILL_DEMO_STARTED_MS`, Unix
/// milliseconds), when it set the variable: the time to the first table a
/// newcomer waits, the lab's and the service's builds included.
fn since_make_demo() -> Option<u64> {
    let started: u64 = std::env::var("SECKILL_DEMO_STARTED_MS")
        .ok()?
        .parse()
        .ok()?;
    Some(seckill_load::clock::unix_ms().checked_sub(started)? / 1000)
}

/// `.demo/env`: the variables the workshop's commands use.
fn write_env(stack: &Stack) -> anyhow::Result<()> {
    let urls = stack.replica_urls();
    let url = |i: usize| urls.get(i).or(urls.first()).cloned().unwrap_or_default();
    let ports: Vec<String> = REDIS_NAMES[1..]
        .iter()
        .filter_map(|n| stack.state.port(n))
        .map(|p| p.to_string())
        .collect();
    let text = format!(
        "# Written by make demo (seckill-lab demo): the workshop's variables. Use: source .demo/env\n\
         export A={} B={} C={} L={} SECKILL_ADMIN_TOKEN={}\n\
         export REDIS_PORT={} REDLOCK_PORTS='{}'\n",
        url(0), url(1), url(2), stack.loadgen_bin().display(), stack.token,
        stack.state.port("redis").unwrap_or_default(), ports.join(" ")
    );
    std::fs::write(stack.state.path.join("env"), text).context("write .demo/env")
}

fn graph_link(ui: &str, expr: &str) -> String {
    let mut url = reqwest::Url::parse(&format!("{ui}/graph")).expect("a valid URL");
    url.query_pairs_mut()
        .append_pair("g0.expr", expr)
        .append_pair("g0.range_input", "15m");
    url.to_string()
}

/// Every URL to open, and the commands to try.
fn urls(stack: &Stack) -> anyhow::Result<String> {
    let Some(first) = stack.state.url("app-1") else {
        bail!("no demo state in .demo/ — run: make demo");
    };
    let s = &stack.state;
    let mut out = String::from("\nOpen:\n");
    for (i, url) in stack.replica_urls().iter().enumerate() {
        out += &format!(
            "  replica {}     {url}/   (status page; /metrics, /health/ready)\n",
            i + 1
        );
    }
    if s.alive("lb", "nginx").is_some() {
        out += &format!(
            "  balancer      {}/   (nginx over the three replicas)\n",
            s.url("lb").unwrap_or_default()
        );
    }
    if s.alive("console", "seckill-loadgen").is_some() {
        out += &format!("  console       {}/   (the control room: strategy, load, faults, who holds the lock)\n", s.url("console").unwrap_or_default());
    }
    if let (Some(_), Some(prom)) = (s.alive("prometheus", "prometheus"), s.url("prometheus")) {
        // Debian's Prometheus 2.42 serves its UI under /classic/; newer ones at /.
        let port = s.port("prometheus").unwrap_or_default();
        let ui = if Ready::http(port, "/alerts").probe_once() {
            prom
        } else {
            format!("{prom}/classic")
        };
        out += &format!("  Prometheus    {ui}/alerts\n");
        for (name, expr) in PANELS {
            out += &format!("    {name:<22} {}\n", graph_link(&ui, expr));
        }
    }
    if s.path.join("report/report.html").is_file() {
        out += &format!(
            "  report        file://{}/report/report.html   (.md and .json beside it)\n",
            s.path.display()
        );
    }
    let token = &stack.token;
    out +=
        &format!("  audit         curl -H 'Authorization: Bearer {token}' {first}/admin/audit\n");
    let (none, redlock) = (StrategyName::None, StrategyName::Redlock);
    out += &format!("  switch        curl -XPUT -H 'Authorization: Bearer {token}' -H 'content-type: application/json' -d '{{\"strategy\":\"{none}\"}}' {first}/admin/strategy\n");
    out += &format!("  grab          curl -XPOST -H 'content-type: application/json' -d '{{\"user_id\":1}}' {first}/api/v1/products/1/grab\n");
    out += &format!("  run again     SECKILL_ADMIN_TOKEN={token} {} compare --url {} --strategies {none},{redlock} --stock 100 --users 50 --out .demo/report\n", stack.loadgen_bin().display(), stack.replica_urls().join(","));
    out += &format!(
        "  logs          .demo/*.log, {}/postgres.log\n",
        crate::stack::postgres::folder(&stack.root)?.display()
    );
    for i in 1..=stack.replicas {
        let settings =
            std::fs::read_to_string(s.file(&format!("app-{i}"), "settings")).unwrap_or_default();
        if !settings.trim().is_empty() {
            out += &format!(
                "  replica {i} runs with: {} (scripts/demo.sh restart {i}: back to the defaults)\n",
                settings.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
    }
    out += "\nThe workshop's variables (also in .demo/env — in another shell: source .demo/env):\n";
    let env = std::fs::read_to_string(s.path.join("env")).unwrap_or_default();
    for line in env.lines().filter(|l| l.starts_with("export ")) {
        out += &format!("  {line}\n");
    }
    out += "Restart replicas with other settings (Redis keys kept): scripts/demo.sh restart all SECKILL_LOCK_TTL_MS=100\n";
    out += "Stop everything with: make demo-stop\n";
    Ok(out)
}

/// Every http URL [`urls`] shows (but the admin and grab routes) answers 200.
async fn check_urls(stack: &Stack) -> anyhow::Result<()> {
    let text = urls(stack)?;
    let re = regex::Regex::new(r"http://[^ ,']*")?;
    let mut found: Vec<&str> = re
        .find_iter(&text)
        .map(|m| m.as_str())
        .filter(|u| !u.contains("/admin/") && !u.contains("/api/v1/products"))
        .collect();
    found.sort_unstable();
    found.dedup();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?;
    let mut bad = Vec::new();
    for url in &found {
        let ok = client
            .get(*url)
            .send()
            .await
            .is_ok_and(|r| r.status() == reqwest::StatusCode::OK);
        if !ok {
            say(&format!("does not answer 200: {url}"));
            bad.push(*url);
        }
    }
    if !bad.is_empty() {
        bail!(
            "{} of {} URLs the demo prints do not answer 200",
            bad.len(),
            found.len()
        );
    }
    say(&format!(
        "all {} URLs the demo prints answer 200",
        found.len()
    ));
    Ok(())
}

/// `restart [all|N]... [NAME=value]...`, `restart redlock`: see [`Action::Restart`].
fn restart(stack: &Stack, args: &[String]) -> anyhow::Result<()> {
    let usage = || {
        anyhow::anyhow!("usage: scripts/demo.sh restart [all|1..{}]... [SECKILL_NAME=value]... | restart redlock", stack.replicas)
    };
    let (mut which, mut settings) = (Vec::new(), Vec::new());
    for arg in args {
        match arg.as_str() {
            "all" => which.extend(1..=stack.replicas),
            "redlock" => restart_redlock(stack)?,
            n if n.parse::<usize>().is_ok() => {
                let i: usize = n.parse()?;
                if !(1..=stack.replicas).contains(&i) {
                    bail!("no replica {i} (1..{})", stack.replicas);
                }
                which.push(i);
            }
            s if s.starts_with(|c: char| c.is_ascii_uppercase()) && s.contains('=') => {
                settings.push(s.to_owned())
            }
            _ => return Err(usage()),
        }
    }
    if args.iter().any(|a| a == "redlock") && which.is_empty() && settings.is_empty() {
        return Ok(());
    }
    if which.is_empty() {
        which.extend(1..=stack.replicas);
    }
    which.sort_unstable();
    which.dedup();
    for i in &which {
        let file = stack.state.file(&format!("app-{i}"), "settings");
        if settings.is_empty() {
            let _ = std::fs::remove_file(&file);
        } else {
            std::fs::write(&file, settings.join("\n") + "\n")?;
        }
    }
    let wiring = stack.wiring()?;
    stack.start_replicas(&wiring, &which)?;
    let list: Vec<String> = which.iter().map(ToString::to_string).collect();
    let with = if settings.is_empty() {
        "with the defaults".to_owned()
    } else {
        settings.join(" ")
    };
    say(&format!(
        "restarted replica(s) {} {with} (Redis, its keys, the faults and the strategy untouched)",
        list.join(" ")
    ));
    Ok(())
}

/// Start again, empty, the Redlock nodes that are down (a workshop
/// exercise stops some); the running ones are left alone.
fn restart_redlock(stack: &Stack) -> anyhow::Result<()> {
    let mut up = Vec::new();
    for name in &REDIS_NAMES[1..] {
        if stack.state.alive(name, "redis-server").is_none() {
            let port = stack.state.pick_port(name)?;
            let dir = stack.state.sub(name)?;
            stack
                .state
                .start(name, servers::redis(port, &dir), &Ready::redis(port))?;
            up.push(name.trim_start_matches("redlock-"));
        }
    }
    let up = if up.is_empty() {
        "none was down".to_owned()
    } else {
        up.join(" ")
    };
    say(&format!("Redlock nodes started again: {up}"));
    Ok(())
}
