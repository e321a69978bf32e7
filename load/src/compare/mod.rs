//! `run` and `compare`: the same workload under each strategy, one after
//! another, judged by [`crate::judge`] and written as one side-by-side
//! report; the exit status says what a script needs to know.
//!
//! For each strategy (`run.rs`): reset the products, switch the
//! strategy and wait until every replica reports it, scrape `/metrics`,
//! run the goose attack, read `/admin/audit` (and the history), scrape
//! again.

mod finish;
mod limits;
mod read_back;
mod run;
mod settings;
mod shard;

pub use finish::outcome;
pub use settings::Settings;
pub use shard::{
    merge_main, prepare_main, read_records, shard_main, MergeSettings, Prepared, Record,
    ShardRecord,
};

use std::process::ExitCode;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};

use settings::Conditions;

use finish::{error_code, exit_code, thresholds_name_runs, write_reports};

use crate::api::{Service, ServiceError, StrategiesBody, StrategyEntry, StrategyName};
use crate::report::{Report, Run, Skipped};

/// `run`/`compare`: run, print, write, and map the result to an exit code.
pub fn main(strategies: Vec<StrategyName>, settings: &Settings) -> crate::Boxed<'_, ExitCode> {
    Box::pin(main_here(strategies, settings))
}

async fn main_here(strategies: Vec<StrategyName>, settings: &Settings) -> ExitCode {
    match execute(strategies, settings).await {
        Ok(report) => {
            println!("{}", report.terminal());
            println!("reports: {}", settings.out.join("report.html").display());
            exit_code(&report)
        }
        Err(error) => {
            eprintln!("seckill-loadgen: {error:#}");
            error_code(&error)
        }
    }
}

/// One line per strategy as it finishes: above the progress bar on a
/// terminal, plain on stderr when the bar is hidden (`--quiet`, CI, a pipe).
pub(crate) fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

/// Run `strategies` (empty = all) with `settings`' workload and write the reports.
async fn execute(strategies: Vec<StrategyName>, settings: &Settings) -> anyhow::Result<Report> {
    let workload = settings.workload.clone();
    // Every local mistake before the first request: an --out that cannot be
    // created fails here (exit 2), not after the runs.
    let goose_dir = settings.out.join("goose");
    std::fs::create_dir_all(&goose_dir)
        .with_context(|| format!("create {}", goose_dir.display()))?;
    let service = Service::new(settings.urls.clone(), settings.admin_token.clone());
    let listed = service.check().await?;
    let (chosen, skipped) = choose(&listed, strategies)?;
    thresholds_name_runs(&settings.thresholds, &chosen)?;
    let ready = run::ready(&service, settings).await?;
    let conditions = Conditions {
        faults: ready.faults.clone(),
        ttl_ms: listed.lock_ttl_ms,
        replicas: service.urls.len(),
    };
    let done = run_each(&service, &chosen, settings, &conditions).await;
    run::restore(&service, ready.restore).await;

    let synchronous_commit = service.audit().await.ok().map(|a| a.synchronous_commit);
    let thresholds = limits::check(&settings.thresholds, &done.runs);
    let report = Report {
        tool: "seckill-loadgen".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        replicas: service.urls.clone(),
        synchronous_commit,
        faults: ready.faults.ok(),
        workload,
        runs: done.runs,
        skipped,
        failed: done.failed,
        interrupted: done.interrupted,
        thresholds,
        shards: Vec::new(),
    };
    write_reports(&report, &settings.out, &settings.report_files)?;
    Ok(report)
}

/// The strategies to run, in order (`names` empty: every one the service
/// lists), and those it lists as unavailable, skipped with its reason. A
/// name it does not know is an error.
fn choose(
    listed: &StrategiesBody,
    names: Vec<StrategyName>,
) -> Result<(Vec<StrategyEntry>, Vec<Skipped>), ServiceError> {
    let names: Vec<StrategyName> = if names.is_empty() {
        listed.strategies.iter().map(|s| s.name).collect()
    } else {
        names
    };
    let mut chosen = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        // A name this build knows that the service does not list (an older
        // service) is still an error, naming the ones it lists.
        let entry = crate::api::entry(listed, name.as_str())?;
        match crate::api::unavailable(entry) {
            None => chosen.push(entry.clone()),
            Some(reason) => skipped.push(Skipped {
                strategy: entry.name,
                reason,
            }),
        }
    }
    Ok((chosen, skipped))
}

/// What the runs left: each strategy's run, the strategies that failed,
/// and whether Ctrl-C stopped them.
struct Done {
    runs: Vec<Run>,
    failed: Vec<Skipped>,
    interrupted: bool,
}

/// Each chosen strategy's run, one after another, a line each as it
/// finishes. One strategy failing (a replica that would not switch, a
/// 5xx) does not throw the others' results away; Ctrl-C stops after the
/// run it interrupted.
async fn run_each(
    service: &Service,
    chosen: &[StrategyEntry],
    settings: &Settings,
    conditions: &Conditions,
) -> Done {
    let bar = if settings.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(chosen.len() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>18} [{bar:18}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut done = Done {
        runs: Vec::new(),
        failed: Vec::new(),
        interrupted: false,
    };
    for entry in chosen {
        bar.set_prefix(entry.name.as_str());
        match run::strategy(
            service,
            entry,
            &settings.workload,
            settings,
            &bar,
            conditions,
        )
        .await
        {
            Ok((run, stopped)) => {
                say(&bar, finished_line(&run));
                done.runs.push(run);
                done.interrupted = stopped;
            }
            Err(e) => {
                say(&bar, format!("{:>18}  failed: {e:#}", entry.name));
                done.failed.push(Skipped {
                    strategy: entry.name,
                    reason: format!("{e:#}"),
                });
            }
        }
        bar.inc(1);
        if done.interrupted {
            break;
        }
    }
    bar.finish_and_clear();
    done
}

/// A strategy's line once its run finished.
fn finished_line(run: &Run) -> String {
    format!(
        "{:>18}  {:>7.0} grabs/s  {:>5} orders  p99 {:>7.1} ms  {}  {}",
        run.strategy,
        run.grabs_per_sec,
        run.orders,
        run.p99_ms,
        if run.breaches.is_empty() {
            "exact".to_owned()
        } else {
            run.breaches.join(", ")
        },
        run.verdict.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::{limits, outcome, thresholds_name_runs};
    use crate::judge::RunVerdict;
    use crate::report::fixtures::{report_of, run};
    use crate::report::threshold::Threshold;

    #[test]
    fn a_violation_is_reported_first_and_wins_over_a_failing_service() {
        let mut failing = run(crate::api::StrategyName::Redlock, RunVerdict::Safe, 0);
        failing.outcomes.insert("error".into(), 30);
        let broken = run(crate::api::StrategyName::SetNxPx, RunVerdict::Violation, 2);
        let mut report = report_of(vec![failing.clone(), broken]);
        let (code, lines) = outcome(&report);
        assert_eq!(code, 1, "{lines:?}");
        assert!(lines[0].starts_with("VIOLATION: set-nx-px"), "{lines:?}");
        assert!(
            lines[1].contains("failed 30 of 40 grabs under redlock"),
            "{lines:?}"
        );
        report.runs = vec![failing];
        assert_eq!(outcome(&report).0, 3);
        report.runs = vec![run(crate::api::StrategyName::PgAtomic, RunVerdict::Safe, 0)];
        assert_eq!(outcome(&report), (0, Vec::new()));
        report.interrupted = true;
        assert_eq!(outcome(&report).0, 130);
    }

    #[test]
    fn a_breached_threshold_exits_5_below_every_correctness_code() {
        let slow = run(crate::api::StrategyName::Redlock, RunVerdict::Safe, 0);
        let limit = |text: &str| vec![Threshold::parse(text).expect("a threshold")];
        let mut report = report_of(vec![slow]);
        report.thresholds = limits::check(&limit("p99<400ms"), &report.runs);
        assert_eq!(outcome(&report), (0, Vec::new()));
        report.thresholds = limits::check(&limit("redlock:p99<1ms"), &report.runs);
        let (code, lines) = outcome(&report);
        assert_eq!(code, 5, "{lines:?}");
        assert_eq!(
            lines,
            ["THRESHOLD: redlock: redlock:p99<1ms measured 3.0 ms: BREACHED"]
        );
        // A violation still wins, and is printed first.
        report.runs.push(run(
            crate::api::StrategyName::SetNxPx,
            RunVerdict::Violation,
            2,
        ));
        let (code, lines) = outcome(&report);
        assert_eq!(code, 1);
        assert!(lines[0].starts_with("VIOLATION: set-nx-px"), "{lines:?}");
    }

    #[test]
    fn a_threshold_naming_a_strategy_not_run_is_refused() {
        let chosen = [crate::report::fixtures::entry(
            crate::api::StrategyName::Redlock,
        )];
        let ok = [
            Threshold::parse("redlock:p99<4ms").expect("a threshold"),
            Threshold::parse("p99<4ms").expect("a threshold"),
        ];
        assert!(thresholds_name_runs(&ok, &chosen).is_ok());
        // A misspelt strategy is refused where the threshold is read.
        let typo = Threshold::parse("redlok:p99<4ms").expect_err("refused");
        assert!(typo.contains("redlok"), "{typo}");
        let other = [Threshold::parse("fenced:p99<4ms").expect("a threshold")];
        let e = thresholds_name_runs(&other, &chosen)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("fenced is not among the strategies this run runs (redlock)"),
            "{e}"
        );
    }
}
