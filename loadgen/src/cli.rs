//! The command line (clap): the flags of `run` (whole or `--shard K/N`),
//! `prepare`, `merge`, `compare`, `scenario`,
//! `scenario-table`, `console`, `debate` and `probe`, checked and handed to the module that does the work.

use std::process::ExitCode;

use clap::Parser;

use crate::console;
use seckill_faults::atlas;
use seckill_faults::debate;
use seckill_faults::scenario;
use seckill_load::api::StrategyName;
use seckill_load::compare::{self, Settings};
use seckill_load::load::{self, Shard};
use seckill_load::token;

mod args;
mod commands;
use args::*;
use commands::{AtlasArgs, Command, ConsoleArgs, DebateArgs, MergeArgs, Named, ScenarioArgs};

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

/// Parse the command line and run the command; its exit code.
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
        Command::Merge(args) => return merge_command(args).await,
        Command::ScenarioTable { reports } => return scenario::table(&reports),
        Command::Probe {
            target: Target { urls },
            path,
            users,
            run_time,
        } => return load::probe::main(&urls, &path, users, run_time).await,
        Command::AdminToken { file } => return token::main(&file),
        Command::Console(args) => return console_command(args).await,
        Command::Debate(args) => return debate_command(args).await,
        Command::Atlas(args) => return atlas_command(args).await,
        Command::Scenario(args) => return scenario_command(args).await,
    };
    load_command(strategies, common, step).await
}

/// `run`, `prepare`, `compare`: the load's settings from `common`, then
/// the step's own `main`.
async fn load_command(strategies: Vec<StrategyName>, common: Common, step: Step) -> ExitCode {
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
        Step::Prepare => compare::prepare_main(strategies[0], &settings).await,
        Step::Shard(shard) => compare::shard_main(strategies[0], shard, &settings).await,
    }
}

/// `merge`: [`compare::merge_main`].
async fn merge_command(args: MergeArgs) -> ExitCode {
    let MergeArgs {
        inputs,
        urls,
        token,
        verdicts,
    } = args;
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
    compare::merge_main(&inputs, merge).await
}

/// `console`: [`console::main`].
async fn console_command(args: ConsoleArgs) -> ExitCode {
    let ConsoleArgs {
        service,
        port,
        bind,
        product,
        default_strategy,
        scenario_out,
        app_bin,
        database_url,
        atlas,
    } = args;
    let admin_token = match service.admin_token() {
        Ok(token) => token,
        Err(code) => return code,
    };
    console::main(console::Options {
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
    .await
}

/// `debate`: [`debate::main`].
async fn debate_command(args: DebateArgs) -> ExitCode {
    let DebateArgs {
        injections,
        rows,
        out,
        write_docs,
        no_locate,
        reuse,
        rejudge,
        lab,
    } = args;
    let scenario = lab.options(out.clone());
    debate::main(debate::Settings {
        injections,
        only: rows,
        out,
        write_docs,
        no_locate,
        reuse,
        rejudge,
        scenario,
    })
    .await
}

/// `atlas`: [`atlas::main`].
async fn atlas_command(args: AtlasArgs) -> ExitCode {
    let AtlasArgs {
        injections,
        quick,
        cells,
        out,
        write_docs,
        plan,
        reuse,
        no_locate,
        recheck,
        quiet,
        lab,
    } = args;
    let scenario = scenario::Options {
        quick,
        quiet,
        ..lab.options(out.clone())
    };
    atlas::main(atlas::Settings {
        injections: injections.unwrap_or(if quick { 6 } else { 10 }),
        quick,
        cells,
        out,
        write_docs,
        plan,
        reuse,
        no_locate,
        recheck,
        scenario,
    })
    .await
}

/// `scenario`: the replays, the dials'
/// descriptions, or [`scenario::main`].
async fn scenario_command(args: ScenarioArgs) -> ExitCode {
    let ScenarioArgs {
        names,
        list,
        strategies,
        out,
        lab,
        quick,
        quiet,
        trials,
        sets,
        sweep,
        locate,
        params,
        variants,
    } = args;
    let (mut selections, mut replays, mut replaying) = (Vec::new(), Vec::new(), false);
    for name in names {
        match name {
            Named::Scenario(s) => selections.push(s),
            Named::Replay => replaying = true,
            Named::ReplayCase(i) => {
                replaying = true;
                replays.extend(seckill_faults::replay::REPLAYS.get(i));
            }
        }
    }
    if replaying && !selections.is_empty() {
        eprintln!("seckill-loadgen: `replay` runs the replays alone: name no scenario beside it");
        return ExitCode::from(2);
    }
    if replaying && list {
        return seckill_faults::replay::list();
    }
    if params {
        return scenario::describe_params(&selections);
    }
    let options = scenario::Options {
        sets,
        sweep,
        locate,
        variants,
        strategies,
        quick,
        quiet,
        trials,
        ..lab.options(out)
    };
    if replaying {
        return seckill_faults::replay::main(&replays, options).await;
    }
    scenario::main(&selections, list, options).await
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
    use std::time::Duration;

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
