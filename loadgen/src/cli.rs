//! The command line (clap): the flags of `run` (whole or `--shard K/N`),
//! `prepare`, `merge`, `compare`, `scenario`,
//! `scenario-table`, `console`, `debate` and `probe`, checked and handed to the module that does the work.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::api::Variant;
use crate::atlas;
use crate::compare::{self, Settings};
use crate::console;
use crate::debate;
use crate::load::{self, Shape, Shard, Workload};
use crate::report::threshold::Threshold;
use crate::scenario::{self, Selection};
use crate::token;

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
        /// Send only shard K of N of the load (--users, --burst and --rate
        /// are then the whole load's), on a run `prepare` made ready; write
        /// the shard's record (OUT/shard-K-of-N.json, and one line on
        /// standard output) for `merge`, instead of a report.
        #[arg(long, value_name = "K/N")]
        shard: Option<Shard>,
        #[command(flatten)]
        common: Common,
    },
    /// Make one strategy's run ready for its shards: reset the products,
    /// switch every replica, start the history, set --work-delay-ms, scrape
    /// the metrics. Writes OUT/prepare.json (and one line on standard
    /// output) for `merge`.
    Prepare {
        /// The strategy the shards will run.
        #[arg(long, short = 's')]
        strategy: String,
        #[command(flatten)]
        common: Common,
    },
    /// Join a prepared run and its shards (`run --shard K/N`) into one
    /// report, as if one process had sent the whole load: counts summed,
    /// latency histograms added, the acknowledged-order check over every
    /// shard's ledger, the audit read once. Exit codes as `run`'s.
    Merge {
        /// Record files, folders of them (their *.json), or logs with
        /// record lines (`kubectl logs` of the Job's pods).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The replicas to read back from [default: those the prepared run
        /// names]. Others (a port-forward to a cluster's Service) give the
        /// same audit and verdict; the lock figures, differences of two
        /// scrapes, then compare different replicas (merge says so).
        #[arg(
            long = "url",
            short = 'H',
            value_delimiter = ',',
            help_heading = "Service"
        )]
        urls: Vec<String>,
        #[command(flatten)]
        token: TokenArgs,
        #[command(flatten)]
        verdicts: Verdicts,
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
        #[arg(value_parser = scenario::selection_parser())]
        names: Vec<Selection>,
        /// List the scenarios, one a line, its name first.
        #[arg(long)]
        list: bool,
        /// Comma-separated strategies instead of each scenario's defaults.
        #[arg(long, value_delimiter = ',')]
        strategies: Vec<String>,
        /// Report folder.
        #[arg(long, default_value = "loadgen-report")]
        out: PathBuf,
        #[command(flatten)]
        lab: LabArgs,
        /// Shorter fault windows (CI); verdicts are the same.
        #[arg(long)]
        quick: bool,
        /// Only the verdict lines and the table, not every step.
        #[arg(long, short)]
        quiet: bool,
        /// Run each case N times, each in a fresh world; a verdict reports
        /// k of N, and `as-expected` needs all N (any UNEXPECTED trial makes
        /// the case UNEXPECTED, else any inconclusive one inconclusive).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        trials: u32,
        /// Set a dial of the fault: NAME=VALUE (repeatable). Durations are
        /// ms or a multiple of the TTL (`pause=1.5ttl`). See --params.
        #[arg(long = "set", value_name = "NAME=VALUE", value_parser = scenario::parse_set)]
        sets: Vec<(String, String)>,
        /// Run each case at each value of one dial: NAME=v1,v2,… The
        /// report gives the curve (scenarios.json, scenarios.html).
        #[arg(long, value_name = "NAME=V1,V2,…", value_parser = scenario::parse_sweep)]
        sweep: Option<(String, Vec<String>)>,
        /// Locate where one dial's outcome flips: both ends, then the
        /// midpoint of the bracket, with the case's injections at every
        /// probe, until the bracket is at most 5 % of the TTL wide (a
        /// duration) or 1 (a number, e.g. slew_pct). One scenario only;
        /// scenarios.json gains `located` (probes, bracket, the model's
        /// predicted flip).
        #[arg(long, value_name = "NAME=LO..HI", value_parser = scenario::parse_locate, conflicts_with = "sweep")]
        locate: Option<scenario::Locate>,
        /// List the dials of the named scenarios (name, unit, default,
        /// meaning) and exit.
        #[arg(long)]
        params: bool,
        /// Comma-separated variants to run (e.g. `check` of acquire-pause)
        /// instead of every variant of each scenario.
        #[arg(long, value_delimiter = ',', value_parser = scenario::variant_parser())]
        variants: Vec<Variant>,
    },
    /// Every scenario report kept under a folder in one table, the newest
    /// run of each case (scenario, strategy, variant): each
    /// `DIR/*/scenarios.json`, read back through the type that wrote it.
    /// Writes DIR/table.md. Exit 3 when a report cannot be read.
    ScenarioTable {
        /// The folder of the reports (`make scenarios` keeps one folder per
        /// run under it).
        #[arg(default_value = "loadgen-report/scenarios")]
        reports: PathBuf,
    },
    /// The Redlock debate, claim by claim, judged against its sources
    /// (Kleppmann 2016, antirez's reply, the Redis docs) on measured
    /// curves: each claim's sweep, then a bisection of every flip; each row
    /// judged as its source states it (supported, refuted, undecided) and,
    /// separately, against our model. Writes under --out (and docs/ with
    /// --write-docs). Exit 3 when a run failed, 2 when nothing could be
    /// written, else 0: a refuted source is a finding, not a failure.
    Debate {
        /// Injections at every point of every sweep and every probe.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
        injections: u32,
        /// Only these rows (comma-separated ids; see the JSON).
        #[arg(long, value_delimiter = ',')]
        rows: Vec<String>,
        /// Where everything goes: each run's reports, redlock-debate.{md,json},
        /// zh/redlock-debate.md, the curves and the counterexamples.
        #[arg(long, default_value = "loadgen-report/debate")]
        out: PathBuf,
        /// Also write the pages, curves and counterexamples into docs/;
        /// with --rows, the rows measured now replace theirs in
        /// docs/redlock-debate.json and every other row is kept as it was
        /// measured (the JSON lists them under `kept`).
        #[arg(long)]
        write_docs: bool,
        /// The sweep's fixed points only: no bisection between them.
        #[arg(long)]
        no_locate: bool,
        /// Read back each run already measured under --out (its
        /// scenarios.json and its probe-* reports) instead of running it
        /// again; the others run. The JSON lists the runs read back.
        #[arg(long)]
        reuse: bool,
        #[command(flatten)]
        lab: LabArgs,
    },
    /// The atlas: every strategy under every fault, each pair located
    /// along the fault's size (both ends, then bisection to 5 % of the TTL)
    /// for exclusion broken and for data damaged, or the reason the fault
    /// cannot reach it. Writes under --out; a run of every cell (or
    /// --write-docs) writes docs/atlas.{md,json}, docs/zh/atlas.md and
    /// docs/atlas/atlas.svg too. Exit 3 when a run failed, 2 on a bad
    /// --cells or unwritable files.
    Atlas {
        /// Injections at every probe [default: 10; 6 with --quick].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
        injections: Option<u32>,
        /// A fixed sample, one cell per family of locks, with the
        /// scenarios' --quick dials.
        #[arg(long)]
        quick: bool,
        /// Only these cells: STRATEGY:FAULT, either may be * (comma-separated).
        #[arg(long, value_delimiter = ',')]
        cells: Vec<String>,
        /// Where everything goes: each cell's reports, atlas.{md,json}, the map.
        #[arg(long, default_value = "loadgen-report/atlas")]
        out: PathBuf,
        /// Write the pages into docs/ for some cells too: they replace
        /// theirs in docs/atlas.json, every other cell is kept.
        #[arg(long)]
        write_docs: bool,
        /// Print each cell's plan (measured, or why the fault cannot reach
        /// it) and stop.
        #[arg(long)]
        plan: bool,
        /// Read back each cell's reports an earlier run left under --out
        /// and go on from there: an interrupted atlas resumes.
        #[arg(long)]
        reuse: bool,
        /// The starting sizes only (both ends and either side of the
        /// model's flips): no bisection. With --reuse, the pages from what
        /// is there.
        #[arg(long)]
        no_locate: bool,
        /// No per-case lines.
        #[arg(long, short)]
        quiet: bool,
        #[command(flatten)]
        lab: LabArgs,
    },
    /// The room's control room: a web page (Locust's port, 8089, by
    /// default) to choose the strategy, start and stop a paced load,
    /// switch every fault, reset everything, run one fault scenario, and
    /// watch the live figures and a timeline of who holds the lock when.
    /// It holds the admin token: it listens on 127.0.0.1 unless --bind
    /// says otherwise.
    Console {
        #[command(flatten)]
        service: ServiceArgs,
        /// Port of the page.
        #[arg(long, default_value_t = 8089)]
        port: u16,
        /// Address to listen on (0.0.0.0 in a container).
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// The product the room buys.
        #[arg(long, default_value_t = 1)]
        product: u64,
        /// The strategy "reset everything" goes back to [default: the one
        /// active when the console starts].
        #[arg(long)]
        default_strategy: Option<String>,
        /// Report folders of the scenarios run from the page, one per run.
        #[arg(long, default_value = "loadgen-report/console")]
        scenario_out: PathBuf,
        /// The seckill-app binary the scenarios start [default: beside this
        /// one, or on PATH].
        #[arg(long)]
        app_bin: Option<PathBuf>,
        /// PostgreSQL server the scenarios create their database on
        /// [default: SECKILL_DATABASE_URL, else the local one].
        #[arg(long)]
        database_url: Option<String>,
        /// The atlas whose cells the page offers to run (make atlas writes it).
        #[arg(long, default_value = "docs/atlas.json")]
        atlas: PathBuf,
    },
    /// This stack's admin token, for docker-compose: SECKILL_ADMIN_TOKEN
    /// when set, else the token already in FILE, else a new random one
    /// written there. Every replica, the console and the load
    /// generator then read FILE (SECKILL_ADMIN_TOKEN_FILE). Prints where
    /// the token came from, and a made one itself.
    AdminToken {
        /// The token file (in a volume the stack's services share).
        #[arg(long)]
        file: PathBuf,
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

/// What a scenario run starts its processes with.
#[derive(Debug, Args)]
#[command(next_help_heading = "Lab")]
struct LabArgs {
    /// PostgreSQL server to use; each run creates (and drops) a database
    /// of its own on it.
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
    /// Cases run at once, each in a lane of its own (its database, arbiter,
    /// coordination servers and processes). Most of a case's time is
    /// waiting out TTLs and pauses, so lanes share the cores well; 1 runs
    /// the cases one after another.
    #[arg(long, env = "SECKILL_SCENARIO_JOBS", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=16))]
    jobs: u16,
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

/// The replicas, and the token of their admin endpoints.
#[derive(Debug, Args)]
struct ServiceArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    token: TokenArgs,
}

impl ServiceArgs {
    fn admin_token(&self) -> Result<String, ExitCode> {
        self.token.admin_token()
    }
}

/// The token of the admin endpoints.
#[derive(Debug, Args)]
#[command(next_help_heading = "Service")]
struct TokenArgs {
    /// Bearer token of the admin endpoints (the service's SECKILL_ADMIN_TOKEN)
    /// [default: the loopback demo token, seckill-demo-admin].
    #[arg(long, env = "SECKILL_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// A file whose first line is the admin token (a docker-compose stack's
    /// token, see `admin-token`); instead of --admin-token.
    #[arg(long, env = "SECKILL_ADMIN_TOKEN_FILE", conflicts_with = "admin_token")]
    admin_token_file: Option<PathBuf>,
}

impl TokenArgs {
    /// The token to send: from the file, else as given, else the demo's.
    /// A file that gives none is said, and is exit 2 (bad usage).
    fn admin_token(&self) -> Result<String, ExitCode> {
        match (&self.admin_token_file, &self.admin_token) {
            (Some(path), _) => seckill_wire::admin::read_token_file(path).map_err(|e| {
                eprintln!("seckill-loadgen: {e}");
                ExitCode::from(2)
            }),
            (None, Some(token)) => Ok(token.clone()),
            (None, None) => Ok(seckill_wire::admin::DEMO_TOKEN.to_owned()),
        }
    }
}

#[derive(Debug, Args)]
struct Common {
    #[command(flatten)]
    service: ServiceArgs,
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    verdicts: Verdicts,
    /// Count overlapping critical sections across every replica (the
    /// service's history arbiter): each run gets `overlaps` and
    /// `max_holders`, and an overlap under a lock that promises exclusion
    /// is a violation. Costs two arbiter round trips per grab.
    #[arg(help_heading = "Reports and verdicts", long)]
    history: bool,
}

/// Where the report goes and how runs are classed and held to limits
/// (`run`, `compare`, `prepare` and `merge` alike).
#[derive(Debug, Args)]
#[command(next_help_heading = "Reports and verdicts")]
struct Verdicts {
    /// Folder for report.{json,md,html} and goose's reports (goose/<strategy>.html).
    #[arg(long, default_value = "loadgen-report")]
    out: PathBuf,
    /// Also write the side-by-side report here (goose's flag name; the
    /// format follows the extension: .html, .json or .md). Repeatable.
    #[arg(long, value_parser = parse_report_file)]
    report_file: Vec<PathBuf>,
    /// Also class these strategies safe: their violations fail the run (exit 1).
    #[arg(long, value_delimiter = ',')]
    treat_as_safe: Vec<String>,
    /// Class these strategies expected-unsafe (e.g. after a fault you set).
    #[arg(long, value_delimiter = ',')]
    expect_unsafe: Vec<String>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Fail the run (exit 5) when a run's figure passes this limit:
    /// `[STRATEGY:]METRIC OP NUMBER[UNIT]`, e.g. `p99<400ms`,
    /// `error_rate<1%`, `grabs_per_s>100`, `redlock:p99<400ms`. Metrics:
    /// p50 p95 p99 max buyer_p50 buyer_p99 (ms or s), error_rate busy_rate
    /// (% or a fraction), grabs_per_s orders_per_s. Repeatable.
    #[arg(long, value_parser = Threshold::parse)]
    threshold: Vec<Threshold>,
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
    let (n, unit) = crate::report::threshold::number_and_unit(text)
        .ok_or_else(|| format!("{text:?} is not a duration like 30s, 1m30s, 500ms"))?;
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

/// Parse the command line and run the command; its exit code. Over 80
/// lines on purpose: the dispatch, one arm per subcommand, each only
/// unpacking its arguments for the command's own `main`.
pub async fn run() -> ExitCode {
    let cli = Cli::parse();
    let (strategies, common, step) = match cli.command {
        Command::Run {
            strategy,
            shard: Some(shard),
            common,
        } => (vec![strategy], common, Step::Shard(shard)),
        Command::Run {
            strategy,
            shard: None,
            common,
        } => (vec![strategy], common, Step::Whole),
        Command::Prepare { strategy, common } => (vec![strategy], common, Step::Prepare),
        Command::Compare { strategies, common } => (strategies, common, Step::Whole),
        Command::Merge {
            inputs,
            urls,
            token,
            verdicts,
        } => {
            let admin_token = match token.admin_token() {
                Ok(token) => token,
                Err(code) => return code,
            };
            let merge = compare::MergeSettings {
                urls,
                admin_token,
                out: verdicts.out,
                report_files: verdicts.report_file,
                treat_as_safe: verdicts.treat_as_safe,
                expect_unsafe: verdicts.expect_unsafe,
                quiet: verdicts.quiet,
                thresholds: verdicts.threshold,
            };
            return compare::merge_main(&inputs, merge).await;
        }
        Command::ScenarioTable { reports } => return scenario::table(&reports),
        Command::Probe {
            target: Target { urls },
            path,
            users,
            run_time,
        } => return load::probe::main(&urls, &path, users, run_time).await,
        Command::AdminToken { file } => return token::main(&file),
        Command::Console {
            service,
            port,
            bind,
            product,
            default_strategy,
            scenario_out,
            app_bin,
            database_url,
            atlas,
        } => {
            let admin_token = match service.admin_token() {
                Ok(token) => token,
                Err(code) => return code,
            };
            return console::main(console::Options {
                urls: service.target.urls,
                admin_token,
                bind: std::net::SocketAddr::new(bind, port),
                product,
                default_strategy,
                runner: console::RunnerOptions {
                    out: scenario_out,
                    app_bin,
                    database_url,
                    atlas,
                },
            })
            .await;
        }
        Command::Debate {
            injections,
            rows,
            out,
            write_docs,
            no_locate,
            reuse,
            lab:
                LabArgs {
                    database_url,
                    app_bin,
                    mysql_url,
                    jobs,
                },
        } => {
            let scenario = scenario::Options {
                out: out.clone(),
                database_url,
                app_bin,
                mysql_url,
                jobs: usize::from(jobs),
                ..scenario::Options::default()
            };
            return debate::main(debate::Settings {
                injections,
                only: rows,
                out,
                write_docs,
                no_locate,
                reuse,
                scenario,
            })
            .await;
        }
        Command::Atlas {
            injections,
            quick,
            cells,
            out,
            write_docs,
            plan,
            reuse,
            no_locate,
            quiet,
            lab:
                LabArgs {
                    database_url,
                    app_bin,
                    mysql_url,
                    jobs,
                },
        } => {
            let scenario = scenario::Options {
                out: out.clone(),
                database_url,
                app_bin,
                quick,
                quiet,
                mysql_url,
                jobs: usize::from(jobs),
                ..scenario::Options::default()
            };
            return atlas::main(atlas::Settings {
                injections: injections.unwrap_or(if quick { 6 } else { 10 }),
                quick,
                cells,
                out,
                write_docs,
                plan,
                reuse,
                no_locate,
                scenario,
            })
            .await;
        }
        Command::Scenario {
            names,
            list,
            strategies,
            out,
            lab:
                LabArgs {
                    database_url,
                    app_bin,
                    mysql_url,
                    jobs,
                },
            quick,
            quiet,
            trials,
            sets,
            sweep,
            locate,
            params,
            variants,
        } => {
            if params {
                return scenario::describe_params(&names);
            }
            let options = scenario::Options {
                sets,
                sweep,
                locate,
                variants,
                strategies,
                out,
                database_url,
                app_bin,
                quick,
                quiet,
                mysql_url,
                trials,
                jobs: usize::from(jobs),
            };
            return scenario::main(&names, list, options).await;
        }
    };
    let workload = match common.load.workload() {
        Ok(workload) => workload,
        Err(message) => {
            eprintln!("seckill-loadgen: {message}");
            return ExitCode::from(2);
        }
    };
    let admin_token = match common.service.admin_token() {
        Ok(token) => token,
        Err(code) => return code,
    };
    let settings = Settings {
        urls: common.service.target.urls,
        admin_token,
        workload,
        work_delay_ms: common.load.work_delay_ms,
        out: common.verdicts.out,
        report_files: common.verdicts.report_file,
        treat_as_safe: common.verdicts.treat_as_safe,
        expect_unsafe: common.verdicts.expect_unsafe,
        quiet: common.verdicts.quiet,
        history: common.history,
        thresholds: common.verdicts.threshold,
    };
    match step {
        Step::Whole => compare::main(strategies, &settings).await,
        Step::Prepare => compare::prepare_main(&strategies[0], &settings).await,
        Step::Shard(shard) => compare::shard_main(&strategies[0], shard, &settings).await,
    }
}

/// What `run`, `compare` and `prepare` do with their load.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Run each strategy from this process, whole, and report it.
    Whole,
    /// Make one strategy's run ready for its shards.
    Prepare,
    /// Send one shard of a prepared run.
    Shard(Shard),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `args:` list of a Job of deploy/k8s/jobs/ (one container each).
    fn job_args(job: &str) -> Vec<String> {
        let path = format!(
            "{}/../deploy/k8s/jobs/{job}/job.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("the Job's file");
        text.lines()
            .skip_while(|l| l.trim() != "args:")
            .skip(1)
            .map_while(|l| l.trim().strip_prefix("- "))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_kubernetes_jobs_arguments_are_this_command_lines() {
        let prepare = job_args("prepare");
        assert_eq!(prepare.first().map(String::as_str), Some("prepare"));
        let parsed =
            Cli::try_parse_from(std::iter::once("seckill-loadgen".to_owned()).chain(prepare));
        assert!(matches!(
            parsed.map(|c| c.command),
            Ok(Command::Prepare { .. })
        ));
        // The shards' pod puts `run --shard K/N` before its args.
        let shard = ["seckill-loadgen", "run", "--shard", "1/4"]
            .map(str::to_owned)
            .into_iter()
            .chain(job_args("shards"));
        match Cli::try_parse_from(shard).map(|c| c.command) {
            Ok(Command::Run { shard, .. }) => assert_eq!(shard, Some(Shard { index: 1, of: 4 })),
            other => panic!("the shards' args do not parse: {other:?}"),
        }
    }

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
