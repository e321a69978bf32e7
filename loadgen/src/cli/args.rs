//! The flags shared by several commands: the lab's (database, binary,
//! lanes), the service's (its URLs, the admin token), the load's (users,
//! stock, workload), the verdicts' and their parsers.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use seckill_load::api::StrategyName;
use seckill_load::load::{Shape, Workload};
use seckill_load::report::threshold::Threshold;

/// What a scenario run starts its processes with.
#[derive(Debug, Args)]
#[command(next_help_heading = "Lab")]
pub(super) struct LabArgs {
    /// PostgreSQL server to use; each run creates (and drops) a database
    /// of its own on it.
    #[arg(
        long,
        env = "SECKILL_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pub(super) database_url: String,
    /// The seckill-app binary [default: beside this one, or on PATH].
    #[arg(long)]
    pub(super) app_bin: Option<PathBuf>,
    /// MariaDB for `mysql-get-lock` (GET_LOCK needs no tables).
    #[arg(
        long,
        env = "SECKILL_MYSQL_URL",
        default_value = "mysql://root@127.0.0.1:3306/test"
    )]
    pub(super) mysql_url: String,
    /// Cases run at once, each in a lane of its own (its database, arbiter,
    /// coordination servers and processes). Most of a case's time is
    /// waiting out TTLs and pauses, so lanes share the cores well; 1 runs
    /// the cases one after another.
    #[arg(long, env = "SECKILL_SCENARIO_JOBS", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub(super) jobs: u16,
}

impl LabArgs {
    /// A scenario run's options from these flags, its reports under `out`
    /// (every other option at its default).
    pub(super) fn options(self, out: PathBuf) -> seckill_faults::scenario::Options {
        seckill_faults::scenario::Options {
            out,
            database_url: self.database_url,
            app_bin: self.app_bin,
            mysql_url: self.mysql_url,
            jobs: usize::from(self.jobs),
            ..seckill_faults::scenario::Options::default()
        }
    }
}

/// The replicas to load.
#[derive(Debug, Args)]
#[command(next_help_heading = "Service")]
pub(super) struct Target {
    /// App replica base URL; repeat (or comma-separate) for several:
    /// users are spread over them round-robin.
    #[arg(
        long = "url",
        short = 'H',
        value_delimiter = ',',
        default_value = "http://127.0.0.1:8080"
    )]
    pub(super) urls: Vec<String>,
}

/// The replicas, and the token of their admin endpoints.
#[derive(Debug, Args)]
pub(super) struct ServiceArgs {
    #[command(flatten)]
    pub(super) target: Target,
    #[command(flatten)]
    pub(super) token: TokenArgs,
}

impl ServiceArgs {
    pub(super) fn admin_token(&self) -> Result<String, ExitCode> {
        self.token.admin_token()
    }
}

/// The token of the admin endpoints.
#[derive(Debug, Args)]
#[command(next_help_heading = "Service")]
pub(super) struct TokenArgs {
    /// Bearer token of the admin endpoints (the service's SECKILL_ADMIN_TOKEN)
    /// [default: the loopback demo token, seckill-demo-admin].
    #[arg(long, env = "SECKILL_ADMIN_TOKEN", hide_env_values = true)]
    pub(super) admin_token: Option<String>,
    /// A file whose first line is the admin token (a docker-compose stack's
    /// token, see `admin-token`); instead of --admin-token.
    #[arg(long, env = "SECKILL_ADMIN_TOKEN_FILE", conflicts_with = "admin_token")]
    pub(super) admin_token_file: Option<PathBuf>,
}

impl TokenArgs {
    /// The token to send: from the file, else as given, else the demo's.
    /// A file that gives none is said, and is exit 2 (bad usage).
    pub(super) fn admin_token(&self) -> Result<String, ExitCode> {
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
pub(super) struct Common {
    #[command(flatten)]
    pub(super) service: ServiceArgs,
    #[command(flatten)]
    pub(super) load: LoadArgs,
    #[command(flatten)]
    pub(super) verdicts: Verdicts,
    /// Count overlapping critical sections across every replica (the
    /// service's history arbiter): each run gets `overlaps` and
    /// `max_holders`, and an overlap under a lock that promises exclusion
    /// is a violation. Costs two arbiter round trips per grab.
    #[arg(help_heading = "Reports and verdicts", long)]
    pub(super) history: bool,
}

/// Where the report goes and how runs are classed and held to limits
/// (`run`, `compare`, `prepare` and `merge` alike).
#[derive(Debug, Args)]
#[command(next_help_heading = "Reports and verdicts")]
pub(super) struct Verdicts {
    /// Folder for report.{json,md,html} and goose's reports (goose/<strategy>.html).
    #[arg(long, default_value = "loadgen-report")]
    pub(super) out: PathBuf,
    /// Also write the side-by-side report here (goose's flag name; the
    /// format follows the extension: .html, .json or .md). Repeatable.
    #[arg(long, value_parser = parse_report_file)]
    pub(super) report_file: Vec<PathBuf>,
    /// Also class these strategies safe: their violations fail the run (exit 1).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(super) treat_as_safe: Vec<StrategyName>,
    /// Class these strategies expected-unsafe (e.g. after a fault you set).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(super) expect_unsafe: Vec<StrategyName>,
    /// No progress bar.
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Fail the run (exit 5) when a run's figure passes this limit:
    /// `[STRATEGY:]METRIC OP NUMBER[UNIT]`, e.g. `p99<400ms`,
    /// `error_rate<1%`, `grabs_per_s>100`, `redlock:p99<400ms`. Metrics:
    /// p50 p95 p99 max buyer_p50 buyer_p99 (ms or s), error_rate busy_rate
    /// (% or a fraction), grabs_per_s orders_per_s. Repeatable. Each is
    /// written to `report.json` as `"thresholds": [{"expr", "strategy",
    /// "value", "ok"}]`.
    #[arg(long, value_parser = Threshold::parse)]
    pub(super) threshold: Vec<Threshold>,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Load shape")]
pub(super) struct LoadArgs {
    /// Concurrent buyers (goose users). Closed loop: each grabs again as soon
    /// as answered. With --rate: the concurrency available to the schedule.
    #[arg(long, short = 'u', default_value_t = 50)]
    pub(super) users: usize,
    /// Users started per second [default: all at once, users × 20 per second].
    #[arg(long, short = 'r', alias = "hatch-rate")]
    pub(super) increase_rate: Option<f64>,
    /// Fixed run length per strategy, goose's forms: 90, 30s, 1m30s, 1h30m
    /// (whole seconds: a sub-second value rounds down, to at least 1 s)
    /// [default: until sold out].
    #[arg(long, short = 't', value_parser = parse_duration)]
    pub(super) run_time: Option<Duration>,
    /// Upper bound of an until-sold-out run.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    pub(super) max_run_time: Duration,
    /// Flash-sale moment: N buyers released together, one grab each
    /// (busy/rejected answers retried). Overrides --users.
    #[arg(long, conflicts_with = "rate")]
    pub(super) burst: Option<usize>,
    /// Open arrival rate in grabs per second; latency is measured from each
    /// grab's scheduled time (no coordinated omission).
    #[arg(long)]
    pub(super) rate: Option<f64>,
    /// Stock each product is reset to before each strategy.
    #[arg(long, default_value_t = 100)]
    pub(super) stock: u64,
    /// Products 1..=N to buy (must be seeded: SECKILL_SEED_PRODUCTS).
    #[arg(long, default_value_t = 1)]
    pub(super) products: u64,
    /// Share of grabs aimed at product 1 when --products > 1.
    #[arg(long, default_value_t = 0.8)]
    pub(super) hot_ratio: f64,
    /// Share of grabs by a buyer who already tried (→ already_purchased).
    #[arg(long, default_value_t = 0.0)]
    pub(super) repeat_ratio: f64,
    /// Units per grab: N or MIN..MAX.
    #[arg(long, default_value = "1", value_parser = parse_range)]
    pub(super) quantity: (u32, u32),
    /// Count busy/rejected as final instead of retrying them.
    #[arg(long)]
    pub(super) no_retry: bool,
    /// Pause before retrying a busy/rejected grab (jittered up to +50%).
    #[arg(long, default_value_t = 5)]
    pub(super) retry_ms: u64,
    /// A buyer stops retrying after this long.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub(super) give_up_after: Duration,
    /// Set the service's work_delay_ms fault (time inside the lock) first.
    #[arg(long)]
    pub(super) work_delay_ms: Option<u64>,
}

/// goose's own forms (`90`, `30s`, `1m30s`, `1h30m`, read by goose's
/// parser), plus one number with a unit for sub-second or fractional values
/// (`500ms`, `1.5s`, `2m`). Run times are whole seconds for goose: a
/// sub-second `--run-time` rounds down, to at least 1 s.
pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Some(secs) = goose::util::parse_timespan(text) {
        return Ok(Duration::from_secs(secs as u64));
    }
    let (n, unit) = seckill_load::report::threshold::number_and_unit(text)
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
pub(super) fn parse_report_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    match path.extension().and_then(|e| e.to_str()) {
        Some("json" | "md" | "html" | "htm") => Ok(path),
        _ => Err(format!(
            "{text}: the format follows the extension; use .html, .json or .md"
        )),
    }
}

/// `3` or `1..3`.
pub(super) fn parse_range(text: &str) -> Result<(u32, u32), String> {
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
    pub(super) fn workload(&self) -> Result<Workload, String> {
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
