//! `seckill-lab bench` (`make bench`): the service's throughput beside the
//! raw floors, measured in one run on this machine, each ratio printed
//! with its goal.
//!
//! | figure | floor | goal |
//! |---|---|---|
//! | pg-atomic grabs/s | pgbench, the same transaction | ≥ 0.60 |
//! | pg-for-update grabs/s | pgbench, the same transaction | ≥ 0.60 |
//! | set-nx-px-token grabs/s (hot product) | pg-for-update | ≥ 0.70 |
//! | redlock, 5 nodes (hot) | pg-for-update | ≥ 0.50 |
//! | redis-lua-stock orders/s | pg-atomic orders/s | ≥ 2.00 |
//! | redis-lua-stock orders/s, `BENCH_CEILING_USERS` (64) users: the ceiling, orders committed in batches | `wrk` GET product, as many connections | ≥ 0.50 |
//! | goose GET product | `wrk`, the same connections | ≥ 0.70 |
//! | peak RSS of one replica at 1000 users | the same replica at rest | ≤ 64 MiB (+ GET p99) |
//! | set-nx-px-token with `--history`, the demo's load (50 users, 5 ms of work), alternating, two rounds each | without | ≥ 0.90 |
//!
//! `seckill-lab bench history` measures the last row alone. Everything
//! runs against the same PostgreSQL (`PG_ADMIN_URL`: the machine's, or the
//! cluster scripts/services.sh starts) and redis-servers of its own on free
//! ports. `BENCH_CLIENTS` (16), `BENCH_SECONDS` (10), `BENCH_SYNC` (on: the
//! service's default `synchronous_commit`; pgbench sessions get the same)
//! tune it. A load that exits non-zero or has any error outcome stops the
//! bench: no figure is printed from a failing run. scripts/bench.sh
//! installs pgbench and wrk, makes sure PostgreSQL answers and builds the
//! release binaries first.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use seckill_launch::{servers, start_on_free_ports, Ready, Running, Service};
use seckill_load::api::StrategyName;
use seckill_load::load::probe::Probe;
use seckill_load::report::{Report, Run};

use crate::util::number_after;

/// The database the bench creates (and drops).
const DB: &str = "seckill_bench";
/// Product 1's stock: never sold out within a run.
const STOCK: u64 = 100_000_000;
/// The service's default admin token.
const TOKEN: &str = "seckill-demo-admin";

/// The knobs, from the environment.
struct Knobs {
    clients: u32,
    ceiling: u32,
    seconds: u32,
    sync: String,
}

fn knob(name: &str, default: u32) -> anyhow::Result<u32> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .with_context(|| format!("{name}={v}: a whole number")),
        Err(_) => Ok(default),
    }
}

impl Knobs {
    fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            clients: knob("BENCH_CLIENTS", 16)?,
            ceiling: knob("BENCH_CEILING_USERS", 64)?,
            seconds: knob("BENCH_SECONDS", 10)?,
            sync: std::env::var("BENCH_SYNC").unwrap_or_else(|_| "on".into()),
        })
    }
}

/// `url` with its database replaced by `db` (the query kept).
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{db}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `a / b` to two decimals.
pub(crate) fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}", a / b)
}

/// `ok` or `SHORT`.
pub(crate) fn check(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "SHORT"
    }
}

/// One line of the table.
pub(crate) fn row(
    name: &str,
    ours: &str,
    floor: &str,
    ratio: &str,
    goal: &str,
    ok: &str,
) -> String {
    format!("{name:<52} {ours:>10} {floor:>10} {ratio:>6} {goal:>8} {ok}")
}

/// A field `key` of `/proc/<pid>/status`, in KiB.
fn status_kib(pid: u32, key: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("read /proc/{pid}/status"))?;
    number_after(&status, key).with_context(|| format!("no {key} in /proc/{pid}/status"))
}

/// What one bench holds: its servers, the service, the knobs.
struct Bench {
    knobs: Knobs,
    bin: PathBuf,
    state: PathBuf,
    admin_url: String,
    db_url: String,
    app: String,
    app_pid: u32,
    /// The replica's resident set at rest, ready, before any load.
    idle_rss_mib: f64,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    /// Killed when the bench ends.
    _servers: Vec<Service>,
}

fn psql(url: &str, commands: &[&str]) -> anyhow::Result<()> {
    let mut psql = Command::new("psql");
    psql.arg(url).arg("-q");
    for c in commands {
        psql.args(["-c", c]);
    }
    let status = psql
        .stdout(Stdio::null())
        .status()
        .context("run psql (Debian's postgresql-client)")?;
    if !status.success() {
        bail!("psql {commands:?} failed ({status})");
    }
    Ok(())
}

impl Bench {
    /// Six redis-servers (the service's, five for Redlock), the database,
    /// one replica with product 1 seeded.
    fn start(root: &Path) -> anyhow::Result<Self> {
        let knobs = Knobs::from_env()?;
        let admin_url = std::env::var("PG_ADMIN_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let state = root.join(".state/bench");
        let mut servers = Vec::new();
        let mut redis = Vec::new();
        for i in 0..6 {
            let dir = state.join(format!("redis-{i}"));
            std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            let ([port], service) = start_on_free_ports(|[port]| {
                Ok(Service::new(servers::redis(port, &dir), Ready::redis(port)))
            })?;
            servers.push(service);
            redis.push(format!("redis://127.0.0.1:{port}"));
        }
        psql(
            &admin_url,
            &[
                &format!("DROP DATABASE IF EXISTS {DB}"),
                &format!("CREATE DATABASE {DB}"),
            ],
        )?;
        let db_url = with_database(&admin_url, DB);
        let bin = root.join("target/release");
        let app_bin = bin.join("seckill-app");
        let log = state.join("app.log");
        let ([port], app) = start_on_free_ports(|[port]| {
            let launch = servers::seckill_app(&app_bin, port)
                .env("SECKILL_DATABASE_URL", &db_url)
                .env("SECKILL_REDIS_URL", &redis[0])
                .env("SECKILL_REDLOCK_URLS", redis[1..].join(","))
                .env("SECKILL_WORK_DELAY_MS", "0")
                .env("SECKILL_SYNCHRONOUS_COMMIT", &knobs.sync)
                .env("SECKILL_SEED_PRODUCTS", format!("1:{STOCK}"))
                .log(&log);
            Ok(Service::new(launch, Ready::http(port, "/health/ready")))
        })?;
        let app_pid = app
            .running()
            .map(Running::pid)
            .context("the replica runs")?;
        let idle_rss_mib = status_kib(app_pid, "VmRSS:")? / 1024.0;
        servers.push(app);
        Ok(Self {
            knobs,
            bin,
            state,
            admin_url,
            db_url,
            app: format!("http://127.0.0.1:{port}"),
            app_pid,
            idle_rss_mib,
            runtime: crate::util::runtime()?,
            // No connection kept between calls: a minute of load lies
            // between two of them, and the service closes an idle
            // keep-alive connection long before (a reused one fails).
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .context("an HTTP client")?,
            _servers: servers,
        })
    }

    /// An admin call with a JSON body.
    fn admin(&self, method: reqwest::Method, path: &str, body: String) -> anyhow::Result<()> {
        let url = format!("{}{path}", self.app);
        let request = self
            .client
            .request(method, &url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body);
        self.runtime
            .block_on(async { request.send().await?.error_for_status() })
            .with_context(|| url.clone())?;
        Ok(())
    }

    /// The stock back to [`STOCK`], no orders, the tables analysed.
    fn reset(&self) -> anyhow::Result<()> {
        self.admin(
            reqwest::Method::POST,
            "/admin/products/1/reset",
            format!("{{\"stock\": {STOCK}}}"),
        )?;
        psql(
            &self.db_url,
            &["VACUUM ANALYZE orders", "VACUUM ANALYZE products"],
        )
    }

    fn work_delay(&self, ms: u64) -> anyhow::Result<()> {
        self.admin(
            reqwest::Method::PUT,
            "/admin/faults",
            format!("{{\"work_delay_ms\": {ms}}}"),
        )
    }

    /// pgbench's transactions per second for `script`.
    fn pgbench(&self, script: &str) -> anyhow::Result<f64> {
        self.reset()?;
        let k = &self.knobs;
        let output = Command::new("pgbench")
            .args(["-n", "-M", "prepared", "-j", "2"])
            .args(["-c", &k.clients.to_string(), "-T", &k.seconds.to_string()])
            .args(["-f", script, &self.db_url])
            .env("PGOPTIONS", format!("-c synchronous_commit={}", k.sync))
            .stderr(Stdio::null())
            .output()
            .context("run pgbench")?;
        let text = String::from_utf8_lossy(&output.stdout);
        number_after(&text, "tps = ").with_context(|| format!("pgbench {script}: no tps in {text}"))
    }

    /// One `seckill-loadgen run`, its report read back. A run that exits
    /// non-zero or has any error outcome stops the bench.
    fn load(&self, strategy: StrategyName, users: u32, extra: Option<&str>) -> anyhow::Result<Run> {
        let strategy = strategy.as_str();
        self.reset()?;
        let out = self.state.join(format!(
            "run-{strategy}-{users}{}",
            extra.unwrap_or_default()
        ));
        let stderr = out.with_extension("stderr");
        let mut run = Command::new(self.bin.join("seckill-loadgen"));
        run.args(["run", "--url", &self.app, "--strategy", strategy, "--quiet"])
            .args(["--users", &users.to_string()])
            .args(["--run-time", &format!("{}s", self.knobs.seconds)])
            .args(["--stock", &STOCK.to_string()])
            .arg("--out")
            .arg(&out)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).context("the run's stderr file")?);
        let status = run.status().context("run seckill-loadgen")?;
        if !status.success() {
            let text = std::fs::read_to_string(&stderr).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(3).collect();
            bail!(
                "seckill-loadgen run --strategy {strategy} exited {status}: no figure ({})",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            );
        }
        let path = out.join("report.json");
        let report: Report = serde_json::from_str(
            &std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?,
        )
        .with_context(|| format!("read back {}", path.display()))?;
        let run = report
            .runs
            .into_iter()
            .next()
            .with_context(|| format!("{}: no run", path.display()))?;
        if run.errors() > 0 {
            bail!(
                "{strategy}: {} grabs answered with an error: no figure",
                run.errors()
            );
        }
        Ok(run)
    }

    /// `wrk`'s requests per second on GET product 1.
    fn wrk(&self, connections: u32) -> anyhow::Result<f64> {
        let output = Command::new("wrk")
            .args(["-t2", "-c", &connections.to_string()])
            .args(["-d", &format!("{}s", self.knobs.seconds)])
            .arg(format!("{}/api/v1/products/1", self.app))
            .output()
            .context("run wrk")?;
        let text = String::from_utf8_lossy(&output.stdout);
        number_after(&text, "Requests/sec:")
            .with_context(|| format!("wrk: no Requests/sec in {text}"))
    }

    /// `seckill-loadgen probe`'s figures.
    fn probe(&self, users: u32) -> anyhow::Result<Probe> {
        let output = Command::new(self.bin.join("seckill-loadgen"))
            .args(["probe", "--url", &self.app, "--users", &users.to_string()])
            .args(["--run-time", &format!("{}s", self.knobs.seconds)])
            .output()
            .context("run seckill-loadgen probe")?;
        if !output.status.success() {
            bail!("seckill-loadgen probe exited {}", output.status);
        }
        serde_json::from_slice(&output.stdout).context("read back probe's figures")
    }

    /// The history's cost at the demo's load: set-nx-px-token on one hot
    /// product, 50 users, 5 ms of work, without and with `--history`,
    /// alternating, two rounds each.
    fn history_cost(&self) -> anyhow::Result<String> {
        crate::util::say(
            "the cost of --history: set-nx-px-token, 50 users, work delay 5 ms, alternating",
        );
        self.work_delay(5)?;
        let (mut with, mut without) = (0.0, 0.0);
        for _ in 0..2 {
            without += self
                .load(StrategyName::SetNxPxToken, 50, None)?
                .grabs_per_sec;
            with += self
                .load(StrategyName::SetNxPxToken, 50, Some("--history"))?
                .grabs_per_sec;
        }
        self.work_delay(0)?;
        let (with, without) = (with / 2.0, without / 2.0);
        Ok(row(
            "set-nx-px-token --history vs without (demo load)",
            &format!("{with:.0}"),
            &format!("{without:.0}"),
            &ratio(with, without),
            ">=0.90",
            check(with / without >= 0.9),
        ))
    }

    /// Every figure but the history's, as rows of the table.
    ///
    /// Over 80 lines on purpose: the table's rows in the order they print, each
    /// beside the floor it is compared with.
    fn figures(&self) -> anyhow::Result<(Vec<String>, String)> {
        let k = &self.knobs;
        let (c, t) = (k.clients, k.seconds);
        crate::util::say(&format!(
            "pgbench, pg-atomic transaction ({c} clients, {t}s, synchronous_commit={})",
            k.sync
        ));
        let atomic_floor = self.pgbench("bench/pgbench/pg-atomic.sql")?;
        crate::util::say("HTTP pg-atomic");
        let atomic = self.load(StrategyName::PgAtomic, c, None)?;
        crate::util::say("pgbench, pg-for-update transaction");
        let for_update_floor = self.pgbench("bench/pgbench/pg-for-update.sql")?;
        crate::util::say("HTTP pg-for-update");
        let for_update = self.load(StrategyName::PgForUpdate, c, None)?.grabs_per_sec;
        crate::util::say("HTTP set-nx-px-token");
        let token = self
            .load(StrategyName::SetNxPxToken, c, None)?
            .grabs_per_sec;
        crate::util::say("HTTP redlock (5 nodes)");
        let redlock = self.load(StrategyName::Redlock, c, None)?.grabs_per_sec;
        crate::util::say("HTTP redis-lua-stock");
        let lua = self
            .load(StrategyName::RedisLuaStock, c, None)?
            .orders_per_sec;
        crate::util::say(&format!(
            "HTTP redis-lua-stock, the ceiling: {} users",
            k.ceiling
        ));
        let ceiling_run = self.load(StrategyName::RedisLuaStock, k.ceiling, None)?;
        let batches = ceiling_run
            .batch
            .as_ref()
            .map_or_else(|| "batches: none".to_owned(), |b| b.line());

        crate::util::say(&format!(
            "wrk vs goose: GET /api/v1/products/1 with {c} connections"
        ));
        let wrk = self.wrk(c)?;
        let wrk_ceiling = self.wrk(k.ceiling)?;
        let goose = self.probe(c)?.requests_per_sec;

        crate::util::say(
            "memory: 1000 concurrent users (GET product, then grabs under set-nx-px-token)",
        );
        let p99_1000 = self.probe(1000)?.p99_ms;
        self.load(StrategyName::SetNxPxToken, 1000, None)?;
        let rss = status_kib(self.app_pid, "VmHWM:")? / 1024.0;

        let ceiling_name = format!(
            "ceiling: redis-lua-stock orders/s vs wrk GET ({})",
            k.ceiling
        );
        // (figure, ours, floor, the least ratio that meets the goal)
        let goals = [
            (
                "pg-atomic grabs/s vs pgbench same tx",
                atomic.grabs_per_sec,
                atomic_floor,
                0.6,
            ),
            (
                "pg-for-update grabs/s vs pgbench same tx",
                for_update,
                for_update_floor,
                0.6,
            ),
            (
                "set-nx-px-token vs pg-for-update grabs/s",
                token,
                for_update,
                0.7,
            ),
            (
                "redlock (5 nodes) vs pg-for-update grabs/s",
                redlock,
                for_update,
                0.5,
            ),
            (
                "redis-lua-stock vs pg-atomic orders/s",
                lua,
                atomic.orders_per_sec,
                2.0,
            ),
            (&ceiling_name, ceiling_run.orders_per_sec, wrk_ceiling, 0.5),
            ("goose GET product req/s vs wrk", goose, wrk, 0.7),
        ];
        let mut rows = vec![row("figure", "ours", "floor", "ratio", "goal", "")];
        for (name, ours, floor, goal) in goals {
            rows.push(row(
                name,
                &format!("{ours:.0}"),
                &format!("{floor:.0}"),
                &ratio(ours, floor),
                &format!(">={goal:.2}"),
                check(ours / floor >= goal),
            ));
        }
        rows.push(row(
            "peak RSS at 1000 users vs at rest (MiB)",
            &format!("{rss:.1}"),
            &format!("{:.1}", self.idle_rss_mib),
            &ratio(rss, self.idle_rss_mib),
            "<=64MiB",
            check(rss <= 64.0),
        ));
        rows.push(row(
            "GET product p99 at 1000 users (ms)",
            &format!("{p99_1000:.1}"),
            "-",
            "-",
            "printed",
            "",
        ));
        Ok((rows, batches))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = psql(
            &self.admin_url,
            &[&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)")],
        );
    }
}

/// `make bench` (`history`: the history's cost alone).
pub fn run(history_only: bool) -> anyhow::Result<()> {
    let root = crate::docs::root()?;
    let bench = Bench::start(&root)?;
    let k = &bench.knobs;
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let date = crate::util::first_line("date", &["-u", "+%FT%TZ"], "");
    if history_only {
        let line = bench.history_cost()?;
        println!();
        println!(
            "seckill-lab bench history — {cores} cores, {}s per run, {date}",
            k.seconds
        );
        println!("{}", row("figure", "with", "without", "ratio", "goal", ""));
        println!("{line}");
        return Ok(());
    }
    let (rows, batches) = bench.figures()?;
    let history = bench.history_cost()?;
    println!();
    println!(
        "make bench — {cores} cores, {} clients, {}s per figure, synchronous_commit={}, {date}",
        k.clients, k.seconds, k.sync
    );
    for line in rows.iter().chain([&history]) {
        println!("{line}");
    }
    println!("ceiling run ({} users): {batches}", k.ceiling);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_of_a_url_is_replaced_and_its_query_kept() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "b"),
            "postgres://postgres@127.0.0.1:5432/b"
        );
        assert_eq!(
            with_database("postgres://u@h:1/x?sslmode=disable", "b"),
            "postgres://u@h:1/b?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h:1", "b"), "postgres://u@h:1/b");
    }

    #[test]
    fn a_figure_is_read_after_its_key() {
        let pgbench =
            "latency average = 1.2 ms\ntps = 1234.567890 (without initial connection time)\n";
        assert_eq!(number_after(pgbench, "tps = "), Some(1234.56789));
        let wrk = "  Latency 1ms\nRequests/sec:  45678.90\nTransfer/sec: 1MB\n";
        assert_eq!(number_after(wrk, "Requests/sec:"), Some(45678.9));
        assert_eq!(number_after(wrk, "tps = "), None);
        assert_eq!(
            number_after("VmHWM:\t  47720 kB\n", "VmHWM:"),
            Some(47720.0)
        );
    }

    #[test]
    fn a_row_lines_up_with_the_header() {
        let header = row("figure", "ours", "floor", "ratio", "goal", "");
        let line = row("x", "1", "2", "0.50", ">=0.60", "SHORT");
        assert_eq!(
            header.find("goal").map(|i| i + 4),
            line.find(">=0.60").map(|i| i + 6)
        );
        assert_eq!(
            (ratio(1.0, 3.0), check(false)),
            ("0.33".to_owned(), "SHORT")
        );
    }
}
