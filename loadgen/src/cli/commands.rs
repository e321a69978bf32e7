//! The subcommands and their own flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand, ValueEnum as _};

use super::args::*;
use seckill_faults::replay::REPLAYS;
use seckill_faults::scenario::{self, Scenario, Selection};
use seckill_load::api::{StrategyName, Variant};
use seckill_load::load::Shard;

/// What `scenario` names: a scenario (or `all`), or the replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Named {
    /// A scenario, or `all`.
    Scenario(Selection),
    /// `replay`: the replayed bug reports (`scenario replay [ID …]`).
    Replay,
    /// A replay's id (after `replay`): its index in [`REPLAYS`].
    ReplayCase(usize),
}

/// The parser of a scenario name, `all`, `replay` or a replay's id: an
/// unknown name is refused by clap with the list of known ones (exit 2).
fn named_parser() -> impl TypedValueParser<Value = Named> {
    let names = ["all", "replay"]
        .into_iter()
        .chain(Scenario::value_variants().iter().map(|s| s.name()))
        .chain(REPLAYS.iter().map(|r| r.id))
        .map(PossibleValue::new);
    PossibleValuesParser::new(names).map(|name| {
        if name == "replay" {
            return Named::Replay;
        }
        if let Some(i) = REPLAYS.iter().position(|r| r.id == name) {
            return Named::ReplayCase(i);
        }
        Named::Scenario(scenario::selection(&name).unwrap_or(Selection::All))
    })
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Run one strategy and report it.
    Run {
        /// The strategy to run (see GET /admin/strategies).
        #[arg(long, short = 's', value_enum)]
        strategy: StrategyName,
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
        #[arg(long, short = 's', value_enum)]
        strategy: StrategyName,
        #[command(flatten)]
        common: Common,
    },
    /// Join a prepared run and its shards (`run --shard K/N`) into one
    /// report, as if one process had sent the whole load: counts summed,
    /// latency histograms added, the acknowledged-order check over every
    /// shard's ledger, the audit read once. Exit codes as `run`'s.
    Merge(MergeArgs),
    /// Run the same workload under several strategies, one after another,
    /// and write one side-by-side report (terminal, Markdown, JSON, HTML).
    Compare {
        /// Comma-separated strategies, in order [default: every strategy the
        /// service lists; those it cannot run are reported as skipped].
        #[arg(long, value_delimiter = ',', value_enum)]
        strategies: Vec<StrategyName>,
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
    Scenario(ScenarioArgs),
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
    Debate(DebateArgs),
    /// The atlas: every strategy under every fault, each pair located
    /// along the fault's size (both ends, then bisection to 5 % of the TTL)
    /// for exclusion broken and for data damaged, or the reason the fault
    /// cannot reach it. Writes under --out; a run of every cell (or
    /// --write-docs) writes docs/atlas.{md,json}, docs/zh/atlas.md and
    /// docs/atlas/atlas.svg too. Exit 3 when a run failed, 2 on a bad
    /// --cells or unwritable files.
    Atlas(AtlasArgs),
    /// The room's control room: a web page (Locust's port, 8089, by
    /// default) to choose the strategy, start and stop a paced load,
    /// switch every fault, reset everything, run one fault scenario, and
    /// watch the live figures and a timeline of who holds the lock when.
    /// It holds the admin token: it listens on 127.0.0.1 unless --bind
    /// says otherwise.
    Console(ConsoleArgs),
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

// `merge`'s flags (its doc is the variant's, in `Command`).
#[derive(Debug, Args)]
pub(super) struct MergeArgs {
    /// Record files, folders of them (their *.json), or logs with
    /// record lines (`kubectl logs` of the Job's pods).
    #[arg(required = true)]
    pub(super) inputs: Vec<PathBuf>,
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
    pub(super) urls: Vec<String>,
    #[command(flatten)]
    pub(super) token: TokenArgs,
    #[command(flatten)]
    pub(super) verdicts: Verdicts,
}

// `scenario`'s flags (its doc is the variant's, in `Command`).
#[derive(Debug, Args)]
pub(super) struct ScenarioArgs {
    /// Scenario names, or `all` (see --list); or `replay` and the ids
    /// of replayed bug reports (`replay --list` names them; `replay`
    /// alone runs every one).
    #[arg(value_parser = named_parser())]
    pub(super) names: Vec<Named>,
    /// List the scenarios, one a line, its name first.
    #[arg(long)]
    pub(super) list: bool,
    /// Comma-separated strategies instead of each scenario's defaults.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(super) strategies: Vec<StrategyName>,
    /// Report folder.
    #[arg(long, default_value = "loadgen-report")]
    pub(super) out: PathBuf,
    #[command(flatten)]
    pub(super) lab: LabArgs,
    /// Shorter fault windows (CI); verdicts are the same.
    #[arg(long)]
    pub(super) quick: bool,
    /// Only the verdict lines and the table, not every step.
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Run each case N times, each in a fresh world; a verdict reports
    /// k of N, and `as-expected` needs all N (any UNEXPECTED trial makes
    /// the case UNEXPECTED, else any inconclusive one inconclusive).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(super) trials: u32,
    /// Set a dial of the fault: NAME=VALUE (repeatable). Durations are
    /// ms or a multiple of the TTL (`pause=1.5ttl`). See --params.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = scenario::parse_set)]
    pub(super) sets: Vec<(String, String)>,
    /// Run each case at each value of one dial: NAME=v1,v2,… The
    /// report gives the curve (scenarios.json, scenarios.html).
    #[arg(long, value_name = "NAME=V1,V2,…", value_parser = scenario::parse_sweep)]
    pub(super) sweep: Option<(String, Vec<String>)>,
    /// Locate where one dial's outcome flips: both ends, then the
    /// midpoint of the bracket, with the case's injections at every
    /// probe, until the bracket is at most 5 % of the TTL wide (a
    /// duration) or 1 (a number, e.g. slew_pct). One scenario only;
    /// scenarios.json gains `located` (probes, bracket, the model's
    /// predicted flip).
    #[arg(long, value_name = "NAME=LO..HI", value_parser = scenario::parse_locate, conflicts_with = "sweep")]
    pub(super) locate: Option<scenario::Locate>,
    /// List the dials of the named scenarios (name, unit, default,
    /// meaning) and exit.
    #[arg(long)]
    pub(super) params: bool,
    /// Comma-separated variants to run (e.g. `check` of acquire-pause)
    /// instead of every variant of each scenario.
    #[arg(long, value_delimiter = ',', value_parser = scenario::variant_parser())]
    pub(super) variants: Vec<Variant>,
}

// `debate`'s flags (its doc is the variant's, in `Command`).
#[derive(Debug, Args)]
pub(super) struct DebateArgs {
    /// Injections at every point of every sweep and every probe.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(super) injections: u32,
    /// Only these rows (comma-separated ids; see the JSON).
    #[arg(long, value_delimiter = ',')]
    pub(super) rows: Vec<String>,
    /// Where everything goes: each run's reports, redlock-debate.{md,json},
    /// zh/redlock-debate.md, the curves and the counterexamples.
    #[arg(long, default_value = "loadgen-report/debate")]
    pub(super) out: PathBuf,
    /// Also write the pages, curves and counterexamples into docs/;
    /// with --rows, the rows measured now replace theirs in
    /// docs/redlock-debate.json and every other row is kept as it was
    /// measured (the JSON lists them under `kept`).
    #[arg(long)]
    pub(super) write_docs: bool,
    /// The sweep's fixed points only: no bisection between them.
    #[arg(long)]
    pub(super) no_locate: bool,
    /// Read back each run already measured under --out (its
    /// scenarios.json and its probe-* reports) instead of running it
    /// again; the others run. The JSON lists the runs read back.
    #[arg(long)]
    pub(super) reuse: bool,
    /// Measure nothing: judge every row of docs/redlock-debate.json
    /// again from the probes it keeps, with this build's claims, rules
    /// and words, and write the pages under --out (docs/ too with
    /// --write-docs). The page says so.
    #[arg(long, conflicts_with_all = ["rows", "reuse", "no_locate"])]
    pub(super) rejudge: bool,
    #[command(flatten)]
    pub(super) lab: LabArgs,
}

// `atlas`'s flags (its doc is the variant's, in `Command`).
#[derive(Debug, Args)]
pub(super) struct AtlasArgs {
    /// Injections at every probe [default: 10; 6 with --quick].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(super) injections: Option<u32>,
    /// A fixed sample, one cell per family of locks, with the
    /// scenarios' --quick dials.
    #[arg(long)]
    pub(super) quick: bool,
    /// Only these cells: STRATEGY:FAULT, either may be * (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(super) cells: Vec<String>,
    /// Where everything goes: each cell's reports, atlas.{md,json}, the map.
    #[arg(long, default_value = "loadgen-report/atlas")]
    pub(super) out: PathBuf,
    /// Write the pages into docs/ for some cells too: they replace
    /// theirs in docs/atlas.json, every other cell is kept.
    #[arg(long)]
    pub(super) write_docs: bool,
    /// Print each cell's plan (measured, or why the fault cannot reach
    /// it) and stop.
    #[arg(long)]
    pub(super) plan: bool,
    /// Read back each cell's reports an earlier run left under --out
    /// and go on from there: an interrupted atlas resumes.
    #[arg(long)]
    pub(super) reuse: bool,
    /// The starting sizes only (both ends and either side of the
    /// model's flips): no bisection. With --reuse, the pages from what
    /// is there.
    #[arg(long)]
    pub(super) no_locate: bool,
    /// Run both ends of each chosen cell's bracket in docs/atlas.json
    /// again (its check command) and print whether each end kept its
    /// side; exit 1 if one did not. Writes recheck.{md,json} under --out.
    #[arg(long, conflicts_with_all = ["reuse", "no_locate", "write_docs", "plan"])]
    pub(super) recheck: bool,
    /// No per-case lines.
    #[arg(long, short)]
    pub(super) quiet: bool,
    #[command(flatten)]
    pub(super) lab: LabArgs,
}

// `console`'s flags (its doc is the variant's, in `Command`).
#[derive(Debug, Args)]
pub(super) struct ConsoleArgs {
    #[command(flatten)]
    pub(super) service: ServiceArgs,
    /// Port of the page.
    #[arg(long, default_value_t = 8089)]
    pub(super) port: u16,
    /// Address to listen on (0.0.0.0 in a container).
    #[arg(long, default_value = "127.0.0.1")]
    pub(super) bind: std::net::IpAddr,
    /// The product the room buys.
    #[arg(long, default_value_t = 1)]
    pub(super) product: u64,
    /// The strategy "reset everything" goes back to [default: the one
    /// active when the console starts].
    #[arg(long, value_enum)]
    pub(super) default_strategy: Option<StrategyName>,
    /// Report folders of the scenarios run from the page, one per run.
    #[arg(long, default_value = "loadgen-report/console")]
    pub(super) scenario_out: PathBuf,
    /// The seckill-app binary the scenarios start [default: beside this
    /// one, or on PATH].
    #[arg(long)]
    pub(super) app_bin: Option<PathBuf>,
    /// PostgreSQL server the scenarios create their database on
    /// [default: SECKILL_DATABASE_URL, else the local one].
    #[arg(long)]
    pub(super) database_url: Option<String>,
    /// The atlas whose cells the page offers to run (make atlas writes it).
    #[arg(long, default_value = "docs/atlas.json")]
    pub(super) atlas: PathBuf,
}
