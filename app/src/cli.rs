//! The `seckill-app` command line: reads settings, builds the
//! application, serves until SIGINT/SIGTERM. `--help` lists every
//! `SECKILL_*` setting with its default and meaning (from the doc comments
//! of `Settings`); `--config FILE` names a TOML file of settings;
//! `--version`; `participant` serves one side of `pg-3pc`.
//!
//! In the library, not the binary: awaited from the binary's
//! `#[tokio::main]`, the service's whole future was compiled again in the
//! binary's crate (21 s of a clean release build on two cores, in our runs;
//! docs/performance.md), as the load generator's once was.

use std::path::PathBuf;

use crate::configuration::{settings_help, Settings};
use crate::lock::participant::{Participant, Side};
use crate::startup::Application;
use crate::telemetry;
use clap::{CommandFactory, FromArgMatches, Parser};

/// The seckill-lab flash-sale service: a stock decrement inside a
/// configurable distributed lock, with the audit, metrics and status page
/// that show whether the lock held.
#[derive(Debug, Parser)]
#[command(name = "seckill-app", version)]
struct Cli {
    /// A TOML file of settings (`lock_ttl_ms = 800`, …); `SECKILL_*`
    /// variables still override it.
    #[arg(long, short = 'c', value_name = "FILE", env = "SECKILL_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// What else the binary runs.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// A `pg-3pc` participant: one database behind a process with its own
    /// timeout (`SECKILL_THREE_PC_TIMEOUT_MS`); the coordinators reach it
    /// through `SECKILL_THREE_PC_STOCK_PARTICIPANT` /
    /// `SECKILL_THREE_PC_ORDER_PARTICIPANT`.
    Participant {
        /// The database it fronts: stock (`SECKILL_STOCK_DATABASE_URL`)
        /// or order (`SECKILL_DATABASE_URL`).
        #[arg(long, value_enum)]
        side: Side,
        /// Where it listens.
        #[arg(long, default_value = "127.0.0.1:7300")]
        listen: String,
    },
}

/// The binary's `main`: a multi-threaded tokio runtime running [`run`].
pub fn main() -> std::process::ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("seckill-app: cannot start the tokio runtime: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Parse the command line and serve; the exit code.
pub async fn run() -> std::process::ExitCode {
    // Shown after both -h and --help (clap uses after_help for both).
    let command = Cli::command().after_help(settings_help());
    // Usage errors exit 2 with clap's message; --help / --version exit 0.
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    let mut vars: Vec<(String, String)> = std::env::vars().collect();
    if let Some(path) = &cli.config {
        if !path.is_file() {
            eprintln!("seckill-app: --config {}: no such file", path.display());
            return std::process::ExitCode::from(2);
        }
        vars.retain(|(key, _)| key != "SECKILL_CONFIG");
        vars.push(("SECKILL_CONFIG".into(), path.display().to_string()));
    }
    let settings = match Settings::load_from(vars) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("seckill-app: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    telemetry::init(settings.log_format);
    if let Some(Command::Participant { side, listen }) = cli.command {
        return participant(&settings, side, &listen).await;
    }
    let strategy = settings.strategy;
    let app = match Application::build(settings).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("cannot start: {e:#}");
            eprintln!("seckill-app: cannot start: {e:#}");
            return std::process::ExitCode::from(1);
        }
    };
    tracing::info!(port = app.port(), %strategy, "seckill-app listening");
    match app.run_until_stopped().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            std::process::ExitCode::from(1)
        }
    }
}

/// Serve as `side`'s participant until killed.
async fn participant(settings: &Settings, side: Side, listen: &str) -> std::process::ExitCode {
    let participant = match Participant::new(settings, side) {
        Ok(Some(p)) => p,
        Ok(None) => {
            eprintln!("seckill-app participant: the stock side needs SECKILL_STOCK_DATABASE_URL");
            return std::process::ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("seckill-app participant: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("seckill-app participant: cannot listen on {listen}: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    tracing::info!(side = side.as_str(), listen, "3pc participant listening");
    participant.serve(listener).await;
    std::process::ExitCode::SUCCESS
}
