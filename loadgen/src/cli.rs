//! Command line and the per-strategy loop.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::report::{BatchFigures, LockFigures, Report, Run, Skipped, Verdict};
use crate::service::{Service, ServiceError, StrategyEntry};
use crate::workload::{self, Live, Shape, Workload, OUTCOMES};

/// Load generator for seckill-lab: hammer the flash-sale service under each
/// lock strategy and compare what holds and what breaks.
///
/// For each strategy: reset the product(s) to --stock, switch every replica
/// to the strategy (and wait until each one reports it), read their
/// /metrics, let goose's users grab (spread over the --url replicas), then
/// read the database's audit and /metrics again. The verdict comes from the
/// database, not from the answers: oversold units, lost updates (decrements
/// overwritten by a stale read) and duplicate orders. A strategy classed
/// safe that shows any of them is a VIOLATION (exit 1); `none`, and
/// `local-mutex` across replicas, are expected to break: that is the
/// lesson.
#[derive(Debug, Parser)]
#[command(
    name = "seckill-loadgen",
    version,
    after_help = "Examples:\n  \
      seckill-loadgen compare --url http://127.0.0.1:8081 --url http://127.0.0.1:8082 --stock 100 --users 50 --out report\n  \
      seckill-loadgen run --strategy redlock --burst 500 --stock 100\n  \
      seckill-loadgen compare --strategies none,set-nx-px-token,redlock --rate 300 --run-time 20s\n\n\
      Exit codes: 0 ok; 1 a strategy classed safe oversold, lost an update or duplicated an order;\n\
      2 bad usage (a bad flag, --out or --report-file: before any request; unknown strategy/product,\n\
      wrong admin token); 3 service unreachable, a strategy's run failed, or the service failed\n\
      half or more of a strategy's grabs (503/5xx); 130 interrupted (Ctrl-C). A violation is\n\
      printed first and wins over 3: it is never hidden behind a failing service."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one strategy and report it.
    Run {
        /// The strategy to run (see GET /admin/strategies).
        #[arg(long, short = 's')]
        strategy: String,
        #[command(flatten)]
        common: Common,
    },
    /// Run the same workload under several strategies, one after another,
    /// and write one side-by-side report (terminal, Markdown, JSON, HTML).
    Compare {
        /// Comma-separated strategies, in order [default: every strategy the
        /// service lists; those it cannot run are reported as skipped].
        #[arg(long, value_delimiter = ',')]
        strategies: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Break each design where it is weak, with the processes the scenario
    /// owns: replicas, Redis nodes and proxies on free ports, a frozen
    /// replica, a clock jump, a node restart, a failover, slow and cut links,
    /// a killed holder, lost dependencies. Counts overlapping critical
    /// sections (the history arbiter) beside the database's audit, and
    /// judges each strategy against what it promises under that fault.
    /// Writes DIR/scenarios.{json,md,html}. Exit 1 on any UNEXPECTED verdict.
    Scenario {
        /// Scenario names, or `all` (see --list).
        names: Vec<String>,
        /// List the scenarios, one a line, its name first.
        #[arg(long)]
        list: bool,
        /// Comma-separated strategies instead of each scenario's defaults.
        #[arg(long, value_delimiter = ',')]
        strategies: Vec<String>,
        /// Report folder.
        #[arg(long, default_value = "loadgen-report")]
        out: PathBuf,
        /// PostgreSQL server to use; the scenario creates (and drops) a
        /// database of its own on it.
        #[arg(
            long,
            env = "SECKILL_DATABASE_URL",
            default_value = "postgres://postgres@127.0.0.1:5432/postgres"
        )]
        database_url: String,
        /// The seckill-app binary [default: beside this one, or on PATH].
        #[arg(long)]
        app_bin: Option<PathBuf>,
        /// MariaDB for `mysql-get-lock` (GET_LOCK needs no tables).
        #[arg(
            long,
            env = "SECKILL_MYSQL_URL",
            default_value = "mysql://root@127.0.0.1:3306/test"
        )]
        mysql_url: String,
        /// Shorter fault windows (CI); verdicts are the same.
        #[arg(long)]
        quick: bool,
        /// Only the verdict lines and the table, not every step.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Read-only load: GET one path (default: product 1) with N users for a
    /// fixed time and print requests/s and latency as JSON. Used by
    /// `make bench` to check goose keeps up with `wrk`, and to load the
    /// read path while memory is measured.
    Probe {
        #[command(flatten)]
        target: Target,
        /// Path to GET.
        #[arg(long, default_value = "/api/v1/products/1")]
        path: String,
        /// Concurrent users (one connection each).
        #[arg(long, short = 'u', default_value_t = 50)]
        users: usize,
        /// How long: 90, 30s, 1m30s (whole seconds, at least 1).
        #[arg(long, short = 't', value_parser = parse_duration, default_value = "10s")]
        run_time: Duration,
    },
}

/// The replicas to load.
#[derive(Debug, Args)]
#[command(next_help_heading = "Service")]
struct Target {
    /// App replica base URL; repeat (or comma-separate) for several:
    /// users are spread over them round-robin.
    #[arg(
        long = "url",
        short = 'H',
        value_delimiter = ',',
        default_value = "http://127.0.0.1:8080"
    )]
    urls: Vec<String>,
}

#[derive(Debug, Args)]
struct Common {
    #[command(flatten)]
    target: Target,
    /// Bearer token of the admin endpoints (the service's SECKILL_ADMIN_TOKEN;
    /// the default is the loopback demo token).
    #[arg(
        long,
        env = "SECKILL_ADMIN_TOKEN",
        default_value = "seckill-demo-admin",
        hide_env_values = true
    )]
    admin_token: String,
    #[command(flatten)]
    load: LoadArgs,
    /// Folder for report.{json,md,html} and goose's reports (goose/<strategy>.html).
    #[arg(
        help_heading = "Reports and verdicts",
        long,
        default_value = "loadgen-report"
    )]
    out: PathBuf,
    /// Also write the side-by-side report here (goose's flag name; the
    /// format follows the extension: .html, .json or .md). Repeatable.
    #[arg(help_heading = "Reports and verdicts", long, value_parser = parse_report_file)]
    report_file: Vec<PathBuf>,
    /// Also class these strategies safe: their violations fail the run (exit 1).
    #[arg(help_heading = "Reports and verdicts", long, value_delimiter = ',')]
    treat_as_safe: Vec<String>,
    /// Class these strategies expected-unsafe (e.g. after a fault you set).
    #[arg(help_heading = "Reports and verdicts", long, value_delimiter = ',')]
    expect_unsafe: Vec<String>,
    /// No progress bar.
    #[arg(help_heading = "Reports and verdicts", long, short)]
    quiet: bool,
    /// Count overlapping critical sections across every replica (the
    /// service's history arbiter): each run gets `overlaps` and
    /// `max_holders`, and an overlap under a lock that promises exclusion
    /// is a violation. Costs two arbiter round trips per grab.
    #[arg(help_heading = "Reports and verdicts", long)]
    history: bool,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Load shape")]
struct LoadArgs {
    /// Concurrent buyers (goose users). Closed loop: each grabs again as soon
    /// as answered. With --rate: the concurrency available to the schedule.
    #[arg(long, short = 'u', default_value_t = 50)]
    users: usize,
    /// Users started per second [default: all at once, users × 20 per second].
    #[arg(long, short = 'r', alias = "hatch-rate")]
    increase_rate: Option<f64>,
    /// Fixed run length per strategy, goose's forms: 90, 30s, 1m30s, 1h30m
    /// (whole seconds: a sub-second value rounds down, to at least 1 s)
    /// [default: until sold out].
    #[arg(long, short = 't', value_parser = parse_duration)]
    run_time: Option<Duration>,
    /// Upper bound of an until-sold-out run.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    max_run_time: Duration,
    /// Flash-sale moment: N buyers released together, one grab each
    /// (busy/rejected answers retried). Overrides --users.
    #[arg(long, conflicts_with = "rate")]
    burst: Option<usize>,
    /// Open arrival rate in grabs per second; latency is measured from each
    /// grab's scheduled time (no coordinated omission).
    #[arg(long)]
    rate: Option<f64>,
    /// Stock each product is reset to before each strategy.
    #[arg(long, default_value_t = 100)]
    stock: u64,
    /// Products 1..=N to buy (must be seeded: SECKILL_SEED_PRODUCTS).
    #[arg(long, default_value_t = 1)]
    products: u64,
    /// Share of grabs aimed at product 1 when --products > 1.
    #[arg(long, default_value_t = 0.8)]
    hot_ratio: f64,
    /// Share of grabs by a buyer who already tried (→ already_purchased).
    #[arg(long, default_value_t = 0.0)]
    repeat_ratio: f64,
    /// Units per grab: N or MIN..MAX.
    #[arg(long, default_value = "1", value_parser = parse_range)]
    quantity: (u32, u32),
    /// Count busy/rejected as final instead of retrying them.
    #[arg(long)]
    no_retry: bool,
    /// Pause before retrying a busy/rejected grab (jittered up to +50%).
    #[arg(long, default_value_t = 5)]
    retry_ms: u64,
    /// A buyer stops retrying after this long.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    give_up_after: Duration,
    /// Set the service's work_delay_ms fault (time inside the lock) first.
    #[arg(long)]
    work_delay_ms: Option<u64>,
}

/// goose's own forms (`90`, `30s`, `1m30s`, `1h30m`, read by goose's
/// parser), plus one number with a unit for sub-second or fractional values
/// (`500ms`, `1.5s`, `2m`). Run times are whole seconds for goose: a
/// sub-second `--run-time` rounds down, to at least 1 s.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Some(secs) = goose::util::parse_timespan(text) {
        return Ok(Duration::from_secs(secs as u64));
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 30s, 1m30s, 500ms"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit {unit:?} (use ms, s, m, h)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// A `--report-file` whose format the extension names: refused while the
/// flags are parsed (exit 2), not after the whole comparison ran.
fn parse_report_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    match path.extension().and_then(|e| e.to_str()) {
        Some("json" | "md" | "html" | "htm") => Ok(path),
        _ => Err(format!(
            "{text}: the format follows the extension; use .html, .json or .md"
        )),
    }
}

/// `3` or `1..3`.
fn parse_range(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{text:?} is not a quantity like 1 or 1..3");
    let (lo, hi) = match text.split_once("..") {
        Some((a, b)) => (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        ),
        None => {
            let n = text.trim().parse().map_err(|_| bad())?;
            (n, n)
        }
    };
    if lo == 0 || lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

impl LoadArgs {
    fn workload(&self) -> Result<Workload, String> {
        let (shape, users) = match (self.burst, self.rate) {
            (Some(n), _) => (Shape::Burst, n),
            (None, Some(r)) if r > 0.0 => (Shape::Rate { per_sec: r }, self.users),
            (None, Some(_)) => return Err("--rate must be above 0".into()),
            (None, None) => (Shape::ClosedLoop, self.users),
        };
        if users == 0 {
            return Err("--users/--burst must be at least 1".into());
        }
        if self.products == 0 {
            return Err("--products must be at least 1".into());
        }
        for (name, v) in [
            ("--hot-ratio", self.hot_ratio),
            ("--repeat-ratio", self.repeat_ratio),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name} must be between 0 and 1"));
            }
        }
        let increase_rate = match (shape, self.increase_rate) {
            // Effectively at once: goose starts them within ~50 ms.
            (Shape::Burst, _) | (_, None) => users as f64 * 20.0,
            (_, Some(r)) if r > 0.0 => r,
            (_, Some(_)) => return Err("--increase-rate must be above 0".into()),
        };
        Ok(Workload {
            shape,
            users,
            increase_rate,
            run_time: if shape == Shape::Burst {
                None
            } else {
                self.run_time
            },
            max_run_time: self.max_run_time,
            stock: self.stock,
            products: self.products,
            hot_ratio: self.hot_ratio,
            repeat_ratio: self.repeat_ratio,
            quantity_min: self.quantity.0,
            quantity_max: self.quantity.1,
            retry: !self.no_retry,
            retry_ms: self.retry_ms,
            give_up_after: self.give_up_after,
        })
    }
}

/// The process's entry point: a multi-thread tokio runtime running [`run`]
/// (exit 3 if the runtime cannot start, as for any run that cannot go on).
/// The runtime is built here, not by a `#[tokio::main]` in `main.rs`: awaited
/// from the binary, the whole future of [`run`] was compiled again in the
/// binary's crate (34 s of a release build, 0.7 s now; the library takes 8 s
/// more).
pub fn main() -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("seckill-loadgen: cannot start the tokio runtime: {e}");
            ExitCode::from(3)
        }
    }
}

/// Parse the command line, run, print, write, and map the result to an exit code.
pub async fn run() -> ExitCode {
    let cli = Cli::parse();
    let (strategies, common) = match cli.command {
        Command::Run { strategy, common } => (vec![strategy], common),
        Command::Compare { strategies, common } => (strategies, common),
        Command::Probe {
            target: Target { urls },
            path,
            users,
            run_time,
        } => return probe(urls, &path, users, run_time).await,
        Command::Scenario {
            names,
            list,
            strategies,
            out,
            database_url,
            app_bin,
            mysql_url,
            quick,
            quiet,
        } => {
            let options = crate::scenario::Options {
                strategies,
                out,
                database_url,
                app_bin,
                quick,
                quiet,
                mysql_url,
            };
            return crate::scenario::main(&names, list, options).await;
        }
    };
    match execute(strategies, &common).await {
        Ok(report) => {
            println!("{}", report.terminal());
            println!("reports: {}", common.out.join("report.html").display());
            exit_code(&report)
        }
        Err(error) => {
            eprintln!("seckill-loadgen: {error:#}");
            let code = match error.downcast_ref::<ServiceError>() {
                Some(ServiceError::Unreachable { .. } | ServiceError::NotSwitched { .. }) => 3,
                Some(ServiceError::Unexpected { status, .. }) if *status >= 500 => 3,
                _ => 2,
            };
            ExitCode::from(code)
        }
    }
}

/// Interrupted → 130; a violation of a strategy classed safe → 1, reported
/// first and winning over a failing service (a violation is never hidden
/// behind an error); a failed strategy or a service failing most grabs → 3.
fn exit_code(report: &Report) -> ExitCode {
    let (code, lines) = outcome(report);
    for line in lines {
        eprintln!("{line}");
    }
    ExitCode::from(code)
}

/// The exit status and the lines that explain it, in the order printed.
pub(crate) fn outcome(report: &Report) -> (u8, Vec<String>) {
    if report.interrupted {
        return (
            130,
            vec!["seckill-loadgen: interrupted; the reports hold the runs finished so far".into()],
        );
    }
    let mut lines = Vec::new();
    let bad = report.violations();
    for run in &bad {
        lines.push(format!(
            "VIOLATION: {} is classed safe but oversold {}, lost {} updates, duplicated {} orders, overlapped {} sections",
            run.strategy, run.oversold, run.lost_updates, run.duplicates, run.overlaps.unwrap_or(0)
        ));
    }
    let failing: Vec<&Run> = report
        .runs
        .iter()
        .filter(|r| r.grabs > 0 && r.outcomes.get("error").copied().unwrap_or(0) * 2 >= r.grabs)
        .collect();
    for run in &failing {
        lines.push(format!(
            "seckill-loadgen: the service failed {} of {} grabs under {} (503/5xx or transport errors): see its log",
            run.outcomes.get("error").copied().unwrap_or(0),
            run.grabs,
            run.strategy
        ));
    }
    for failed in &report.failed {
        lines.push(format!(
            "seckill-loadgen: {} failed: {}",
            failed.strategy, failed.reason
        ));
    }
    let code = if !bad.is_empty() {
        1
    } else if !failing.is_empty() || !report.failed.is_empty() {
        3
    } else {
        0
    };
    (code, lines)
}

async fn probe(urls: Vec<String>, path: &str, users: usize, run_time: Duration) -> ExitCode {
    let live = Arc::new(Live::default());
    if let Err(e) = workload::probe(&urls, path, users, run_time, live.clone()).await {
        eprintln!("seckill-loadgen: probe failed: {e:#}");
        return ExitCode::from(3);
    }
    let secs = live.elapsed().as_secs_f64().max(1e-3);
    let ok = live.outcome("ordered");
    let errors = live.outcome("error");
    println!(
        "{}",
        json!({
            "path": path,
            "users": users,
            "duration_s": secs,
            "requests": ok + errors,
            "errors": errors,
            "requests_per_sec": (ok + errors) as f64 / secs,
            "p50_ms": live.latency_ms(0.50),
            "p99_ms": live.latency_ms(0.99),
        })
    );
    if ok == 0 {
        eprintln!(
            "seckill-loadgen: no successful answer from {}",
            urls.join(", ")
        );
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

/// One line per strategy as it finishes: above the progress bar on a
/// terminal, plain on stderr when the bar is hidden (`--quiet`, CI, a pipe).
fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

/// Run `strategies` (empty = all) with `common`'s workload and write the reports.
async fn execute(strategies: Vec<String>, common: &Common) -> anyhow::Result<Report> {
    let workload = common.load.workload().map_err(anyhow::Error::msg)?;
    // Every local mistake before the first request: an --out that cannot be
    // created fails here (exit 2), not after the runs.
    let goose_dir = common.out.join("goose");
    std::fs::create_dir_all(&goose_dir)
        .with_context(|| format!("create {}", goose_dir.display()))?;
    let service = Service::new(common.target.urls.clone(), common.admin_token.clone());
    let listed = service.check().await?;
    let names: Vec<String> = if strategies.is_empty() {
        listed.strategies.iter().map(|s| s.name.clone()).collect()
    } else {
        strategies
    };
    let mut chosen: Vec<StrategyEntry> = Vec::new();
    let mut skipped = Vec::new();
    for name in &names {
        let entry = listed.get(name)?;
        if entry.available {
            chosen.push(entry.clone());
        } else {
            skipped.push(Skipped {
                strategy: name.clone(),
                reason: format!(
                    "not available on this service: {}",
                    entry
                        .unavailable_reason
                        .as_deref()
                        .unwrap_or("the service did not say why")
                ),
            });
        }
    }
    for product in 1..=workload.products {
        service.product(&service.urls[0], product).await?;
    }
    // A fault set for this run is put back as it was afterwards.
    let restore_faults = match common.load.work_delay_ms {
        Some(ms) => {
            let before = service.faults().await?;
            service.set_faults(json!({ "work_delay_ms": ms })).await?;
            Some(json!({ "work_delay_ms": before["work_delay_ms"] }))
        }
        None => None,
    };
    let bar = if common.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(chosen.len() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>18} [{bar:18}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    // The faults the runs ran under (a workshop may have set some).
    let faults_in_force = service.faults().await.ok();
    let ttl_ms = listed.lock_ttl_ms;
    let mut runs = Vec::new();
    let mut failed = Vec::new();
    let mut interrupted = false;
    for entry in &chosen {
        bar.set_prefix(entry.name.clone());
        let conditions = (faults_in_force.clone().unwrap_or_default(), ttl_ms);
        let run = match run_strategy(&service, entry, &workload, common, &bar, &conditions).await {
            Ok((run, stopped)) => {
                interrupted = stopped;
                run
            }
            Err(e) => {
                // One strategy failing (a replica that would not switch, a
                // 5xx) does not throw the others' results away.
                say(&bar, format!("{:>18}  failed: {e:#}", entry.name));
                failed.push(Skipped {
                    strategy: entry.name.clone(),
                    reason: format!("{e:#}"),
                });
                bar.inc(1);
                continue;
            }
        };
        say(
            &bar,
            format!(
                "{:>18}  {:>7.0} grabs/s  {:>5} orders  p99 {:>7.1} ms  oversold {}  lost {}{}  {}",
                run.strategy,
                run.grabs_per_sec,
                run.orders,
                run.p99_ms,
                run.oversold,
                run.lost_updates,
                run.overlaps
                    .map(|o| format!("  overlaps {o}"))
                    .unwrap_or_default(),
                run.verdict.as_str()
            ),
        );
        runs.push(run);
        bar.inc(1);
        if interrupted {
            break;
        }
    }
    bar.finish_and_clear();
    if let Some(faults) = restore_faults {
        if let Err(e) = service.set_faults(faults).await {
            eprintln!("seckill-loadgen: could not restore work_delay_ms: {e}");
        }
    }

    let synchronous_commit = service
        .audit()
        .await
        .ok()
        .and_then(|a| a.synchronous_commit);
    let report = Report {
        tool: "seckill-loadgen",
        version: env!("CARGO_PKG_VERSION"),
        replicas: service.urls.clone(),
        synchronous_commit,
        faults: faults_in_force,
        workload,
        runs,
        skipped,
        failed,
        interrupted,
    };
    write_reports(&report, &common.out, &common.report_file)?;
    Ok(report)
}

fn write_reports(report: &Report, out: &Path, extra: &[PathBuf]) -> anyhow::Result<()> {
    let mut files: Vec<PathBuf> = ["report.json", "report.md", "report.html"]
        .iter()
        .map(|name| out.join(name))
        .collect();
    files.extend(extra.iter().cloned());
    for path in files {
        let text = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => report.json(),
            Some("md") => report.markdown(),
            Some("html" | "htm") => report.html(),
            _ => anyhow::bail!("--report-file {}: use .html, .json or .md", path.display()),
        };
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

async fn run_strategy(
    service: &Service,
    entry: &StrategyEntry,
    workload: &Workload,
    common: &Common,
    bar: &ProgressBar,
    conditions: &(serde_json::Value, Option<u64>),
) -> anyhow::Result<(Run, bool)> {
    let name = entry.name.as_str();
    for product in 1..=workload.products {
        service.reset(product, workload.stock).await?;
    }
    service.switch(name, 1).await?;
    if common.history {
        service.history_start().await?;
    }
    let before = service.scrape().await?;

    let live = Arc::new(Live::default());
    // Product 1's stock every 250 ms: the progress line, and the report's
    // stock-over-time chart.
    let stock_samples = Arc::new(std::sync::Mutex::new(vec![(0.0, workload.stock as i64)]));
    let ticker = {
        let live = live.clone();
        let bar = bar.clone();
        let service = service.clone();
        let samples = stock_samples.clone();
        tokio::spawn(async move {
            loop {
                let stock = service
                    .product(&service.urls[0], 1)
                    .await
                    .ok()
                    .and_then(|p| p["stock"].as_i64());
                let secs = live.elapsed().as_secs_f64();
                if let (Some(stock), true) = (stock, secs > 0.0) {
                    samples
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((secs, stock));
                }
                let rate = if secs > 0.0 {
                    live.grabs() as f64 / secs
                } else {
                    0.0
                };
                bar.set_message(format!(
                    "{secs:5.1}s  {rate:7.0} grabs/s  orders {}  stock left {}",
                    live.outcome("ordered"),
                    stock.map_or("?".into(), |s| s.to_string())
                ));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let goose_file = format!("goose/{name}.html");
    let result = workload::run(
        workload,
        &service.urls,
        live.clone(),
        &common.out.join(&goose_file),
    )
    .await;
    ticker.abort();
    let (_, interrupted) = result.with_context(|| format!("goose run of {name}"))?;

    let audit = service.audit().await?;
    let delta = service.scrape().await?.since(&before);
    let rows: Vec<_> = audit
        .products
        .into_iter()
        .filter(|r| r.product_id >= 1 && (r.product_id as u64) <= workload.products)
        .collect();
    let sum = |f: fn(&crate::service::AuditRow) -> i64| rows.iter().map(f).sum::<i64>();
    let (oversold, duplicates) = (sum(|r| r.oversold), sum(|r| r.duplicates));
    // Per product: one product's lost updates must not hide behind another's
    // stock that went missing (negative: undersold).
    let lost_updates = sum(crate::service::AuditRow::lost);
    let undersold = sum(crate::service::AuditRow::under);
    let negative_stock = rows.iter().any(|r| r.negative_stock);
    let history = if common.history {
        Some(service.history().await?)
    } else {
        None
    };
    let mine = history.as_ref().map_or(&serde_json::Value::Null, |h| {
        crate::service::strategy_history(h, name)
    });
    let overlaps = history
        .as_ref()
        .map(|_| mine["overlaps"].as_u64().unwrap_or(0));
    let max_holders = history
        .as_ref()
        .map(|_| mine["max_holders"].as_u64().unwrap_or(0));
    let exclusion_broken =
        overlaps.unwrap_or(0) > 0 && !crate::expect::guards_data_only(crate::expect::kind(name));
    let violations = oversold > 0
        || lost_updates > 0
        || undersold > 0
        || duplicates > 0
        || negative_stock
        || exclusion_broken;
    let expected_to_break = crate::expect::breaks_under(name, &conditions.0, conditions.1);
    let verdict = verdict(
        entry,
        service.urls.len(),
        common,
        violations,
        expected_to_break.is_some(),
    );

    let s = [("strategy", name)];
    let count = |metric: &str, extra: &[(&str, &str)]| -> u64 {
        let mut filter = s.to_vec();
        filter.extend_from_slice(extra);
        delta.sum(metric, &filter).round().max(0.0) as u64
    };
    let lock = LockFigures {
        attempts: count("seckill_lock_attempts_total", &[]),
        retries: count("seckill_lock_retries_total", &[]),
        // Exact, from each grab's `Server-Timing` (a histogram bucket of
        // the service would only bound it): never above the grabs' p99.
        acquire_wait_p99_ms: live.lock_wait_ms(0.99),
        hold_p99_ms: delta
            .quantile("seckill_lock_hold_duration_seconds", &s, 0.99)
            .map(|v| v * 1000.0),
        renewals: count("seckill_lock_renewals_total", &[]),
        lost: count("seckill_lock_lost_total", &[]),
        releases_not_owner: count("seckill_lock_releases_total", &[("result", "not_owner")]),
        fence_rejections: count("seckill_fence_rejections_total", &[]),
        redlock_quorum_failures: if name == "redlock" {
            delta
                .sum("seckill_redlock_quorum_failures_total", &[])
                .round()
                .max(0.0) as u64
        } else {
            0
        },
    };
    let batches = count("seckill_order_batch_size_count", &[]);
    let batch = (batches > 0).then(|| BatchFigures {
        batches,
        mean_size: delta.sum("seckill_order_batch_size_sum", &s) / batches as f64,
        p50_size: delta.quantile("seckill_order_batch_size", &s, 0.50),
        p99_size: delta.quantile("seckill_order_batch_size", &s, 0.99),
        wait_p50_ms: live.batch_wait_ms(0.50),
        wait_p99_ms: live.batch_wait_ms(0.99),
        commit_p99_ms: delta
            .quantile("seckill_order_batch_commit_seconds", &s, 0.99)
            .map(|v| v * 1000.0),
    });
    let secs = live.elapsed().as_secs_f64().max(1e-3);
    let orders = sum(|r| r.orders);
    let mut stock_over_time = std::mem::take(
        &mut *stock_samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    if let Some(first) = rows.iter().find(|r| r.product_id == 1) {
        // The audit's stock closes the line (settled, after the last grab).
        stock_over_time.push((secs, first.stock));
    }
    let run = Run {
        strategy: name.to_owned(),
        safety: entry.safety.clone(),
        guarantee: entry.guarantee.clone(),
        verdict,
        violations,
        duration_s: (secs * 1000.0).round() / 1000.0,
        grabs: live.grabs(),
        grabs_per_sec: live.grabs() as f64 / secs,
        orders,
        orders_per_sec: orders as f64 / secs,
        ordered_units: sum(|r| r.ordered_units),
        p50_ms: live.latency_ms(0.50),
        p95_ms: live.latency_ms(0.95),
        p99_ms: live.latency_ms(0.99),
        max_ms: live.latency_max_ms(),
        outcomes: OUTCOMES
            .iter()
            .map(|o| ((*o).to_owned(), live.outcome(o)))
            .collect(),
        initial_stock: sum(|r| r.initial_stock),
        stock_left: sum(|r| r.stock),
        oversold,
        lost_updates,
        undersold,
        duplicates,
        negative_stock,
        buyer_p50_ms: live.buyer_latency_ms(0.50),
        buyer_p99_ms: live.buyer_latency_ms(0.99),
        lock,
        batch,
        overlaps,
        max_holders,
        first_overlaps: history
            .as_ref()
            .and_then(|h| h["first_overlaps"].as_array().cloned())
            .unwrap_or_default(),
        expected_to_break,
        stock_over_time,
        audit: rows,
        goose_report: goose_file,
    };
    Ok((run, interrupted))
}

/// Classed safe unless the service says it is unsafe (or single-replica
/// while several replicas run), or the faults in force aim at its weak
/// point (see [`crate::expect::breaks_under`]); `--treat-as-safe` /
/// `--expect-unsafe` override.
fn verdict(
    entry: &StrategyEntry,
    replicas: usize,
    common: &Common,
    violations: bool,
    faults_break_it: bool,
) -> Verdict {
    let name = &entry.name;
    let classed_safe = if common.treat_as_safe.contains(name) {
        true
    } else if common.expect_unsafe.contains(name) {
        false
    } else {
        match entry.safety.as_str() {
            "unsafe" => false,
            "single-replica" => replicas < 2,
            _ => !faults_break_it,
        }
    };
    match (classed_safe, violations) {
        (false, _) => Verdict::ExpectedUnsafe,
        (true, true) => Verdict::Violation,
        (true, false) => Verdict::Safe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_and_ranges() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("soon").is_err());
        // goose's own forms.
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1_500)));
        assert!(parse_duration("3d").is_err());
        assert_eq!(parse_range("2"), Ok((2, 2)));
        assert_eq!(parse_range("1..3"), Ok((1, 3)));
        assert!(parse_range("0").is_err());
        assert!(parse_range("3..1").is_err());
    }
}
