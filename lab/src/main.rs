//! `seckill-lab`: the lab's chores as one program, run from the `make`
//! targets (one line each). Today: `check-docs`, the run of every shell
//! block of the README's quick start and of the workshop;
//! `import-graph`, the layering check of each crate; `check-scripts`, the
//! checks of the shell that is left; `cheatsheet`, the one-page print of
//! docs/cheatsheet.md; `results`, the run behind docs/results.md; `bench`,
//! the throughput beside its floors; `demo`, `stack` and `check-panels`,
//! the local stack ([`stack`]) and what runs on it; `own-postgres`, the
//! checkout's PostgreSQL cluster (docs/architecture.md, "The launcher").
//!
//! A binary of its own rather than a cargo `xtask`: the lab image runs the
//! same chores where no cargo is installed.

mod bench;
mod build_floor;
mod cheatsheet;
mod check_stack;
mod compose_report;
mod dashboards;
mod demo;
mod docker;
mod docs;
mod fuzz;
mod imports;
mod lengths;
mod panels;
mod results;
mod scripts;
mod stack;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "seckill-lab",
    about = "The lab's chores: the docs check, the import graph, the scripts check, the cheat sheet, the results",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every ```sh block of the README's quick start and of
    /// docs/workshop.md, as written, in one bash session against a small
    /// demo; fail naming the first block that fails.
    CheckDocs {
        /// Print the bash the check would run, run nothing.
        #[arg(long)]
        print: bool,
    },
    /// The import graph of each crate's modules; fails on an import
    /// circle (a module that, through others, imports itself).
    ImportGraph {
        /// The `src` folders of the crates.
        #[arg(required = true)]
        folders: Vec<PathBuf>,
    },
    /// No function over 80 lines without a stated reason (lab/src/lengths.rs).
    CheckLengths {
        /// The `src` folders of the crates.
        #[arg(required = true)]
        folders: Vec<PathBuf>,
    },
    /// The one run the README's and the workshop's figures come from:
    /// the demo, the workshop's exercise 1 and every fault scenario,
    /// written to docs/results.md (and the README's table).
    Results,
    /// The service's throughput beside the raw floors (pgbench, wrk),
    /// measured in one run, each ratio with its goal (`make bench`).
    Bench {
        /// `history`: only the cost of `--history`.
        #[arg(value_parser = ["history"])]
        only: Option<String>,
    },
    /// A clean release build of what `make demo` runs beside its floor
    /// (an empty crate with the same dependencies and features), both
    /// from clean in one run (`make bench-build`).
    BenchBuild,
    /// The shell that is left: `bash -n`, shellcheck, no function
    /// written twice, no early reader behind a pipe.
    CheckScripts,
    /// docs/cheatsheet.md printed on one A4 page (headless Chromium,
    /// checked with pdfinfo), kept in docs/cheatsheet.pdf.
    Cheatsheet {
        /// Print and check only; keep nothing.
        #[arg(long)]
        check: bool,
    },
    /// `make demo`: the local stack in .demo/, Prometheus, a short
    /// comparison, every URL to open (`stop`, `urls`, `check-urls`, `env`,
    /// `restart`: see docs/running.md).
    Demo {
        #[command(subcommand)]
        action: Option<demo::Action>,
    },
    /// A local stack of its own in another folder (`make fuzz-api`):
    /// `up` prints nothing but what it started; `down` stops it.
    Stack {
        /// `up` or `down`.
        #[arg(value_parser = ["up", "down"])]
        action: String,
        /// Its state folder, relative to the checkout.
        #[arg(long)]
        dir: PathBuf,
        /// How many replicas.
        #[arg(long, default_value_t = 3)]
        replicas: usize,
        /// `NAME=value`: a setting of every replica (repeatable).
        #[arg(long = "set")]
        settings: Vec<String>,
    },
    /// `make check-stack`: the compose stack, the Prometheus files and
    /// the dashboards checked offline (docker-compose config, promtool,
    /// Grafana's published schema through tsc).
    CheckStack,
    /// `make check-k8s`: deploy/k8s/ rendered (kubectl kustomize), every
    /// object validated against the Kubernetes schemas (kubernetes-validate)
    /// and held to docker-compose.yml and the service, offline.
    CheckK8s,
    /// `make check-panels`: every dashboard query against a real
    /// Prometheus after a short load (a running demo is reused).
    CheckPanels,
    /// Every dashboard query against a running Prometheus (the Docker
    /// check's compose stack).
    Panels(panels::Check),
    /// `make fuzz-api`: schemathesis against one replica of a stack of
    /// its own, driven by the replica's OpenAPI document (lab/src/fuzz.rs).
    FuzzApi,
    /// The Docker paths: `images` (`make docker-images`), `check` (`make
    /// check-docker`), `ci BIN_DIR` (CI's Docker step).
    Docker {
        #[command(subcommand)]
        action: docker::Action,
    },
    /// The Docker check: the compose loadgen job's report.json — every
    /// strategy classed safe exact, `none` broken.
    JudgeCompare {
        /// The folder holding report.json.
        dir: PathBuf,
    },
    /// The Docker check: Prometheus scrapes that many replicas, all up,
    /// with alert rules loaded.
    PrometheusUp {
        /// Prometheus' URL.
        url: String,
        /// How many `seckill` targets.
        replicas: usize,
    },
    /// The checkout's own PostgreSQL cluster, started (or made) when it
    /// does not answer; prints its URL (`make test` where the machine has
    /// no server of its own).
    OwnPostgres,
    /// Between two exercises of the docs check: the faults in force must
    /// be the cleared ones, and no replica may run with extra settings.
    /// The first call clears the faults and keeps the answer in `state`.
    #[command(hide = true)]
    DocsBetween {
        /// Where the cleared faults are kept.
        state: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::CheckDocs { print } => docs::check(print),
        Command::DocsBetween { state } => docs::between(&state),
        Command::ImportGraph { folders } => imports::check(&folders),
        Command::CheckLengths { folders } => lengths::check(&folders),
        Command::CheckScripts => scripts::check(),
        Command::Results => results::make(),
        Command::Bench { only } => bench::run(only.is_some()),
        Command::BenchBuild => build_floor::run(),
        Command::Cheatsheet { check } => cheatsheet::make(check),
        Command::Demo { action } => demo::run(action),
        Command::Stack {
            action,
            dir,
            replicas,
            settings,
        } => stack::command(&action, &dir, replicas, settings),
        Command::CheckPanels => panels::check_panels(),
        Command::CheckStack => check_stack::run(),
        Command::CheckK8s => check_stack::run_k8s(),
        Command::Panels(args) => panels::run_check(&args),
        Command::OwnPostgres => stack::own_postgres(),
        Command::Docker { action } => docker::run(action),
        Command::FuzzApi => fuzz::run(),
        Command::JudgeCompare { dir } => compose_report::judge(&dir),
        Command::PrometheusUp { url, replicas } => panels::prometheus_up(&url, replicas),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\x1b[1;31m[seckill]\x1b[0m {e:#}");
            ExitCode::FAILURE
        }
    }
}
