//! What every end of a run shares — `run`/`compare` in one process and
//! `merge` of many: the exit status and the lines that explain it, the
//! thresholds held to the runs they name, and the reports written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::api::{ServiceError, StrategyEntry};
use crate::judge;
use crate::report::threshold::Threshold;
use crate::report::{Report, Run};

/// The exit status of a run that could not finish: 3 when the service is
/// unreachable, would not switch or failed (5xx), else 2 (usage: an
/// unknown strategy or product, a wrong token, a folder not writable).
pub(super) fn error_code(error: &anyhow::Error) -> ExitCode {
    let code = match error.downcast_ref::<ServiceError>() {
        Some(ServiceError::Unreachable { .. } | ServiceError::NotSwitched { .. }) => 3,
        Some(ServiceError::Unexpected { status, .. }) if *status >= 500 => 3,
        _ => 2,
    };
    ExitCode::from(code)
}

/// Interrupted → 130; a violation (of a strategy classed safe, or an
/// acknowledged order lost under any) → 1, reported first and winning over
/// a failing service (a violation is never hidden behind an error); a
/// failed strategy or a service failing most grabs → 3; a run that could
/// not be judged (history with gaps, orders unreadable) → 4; a breached
/// `--threshold` → 5 (a correctness or service code wins over it).
pub(super) fn exit_code(report: &Report) -> ExitCode {
    let (code, lines) = outcome(report);
    for line in lines {
        eprintln!("{line}");
    }
    ExitCode::from(code)
}

/// The exit status and the lines that explain it, in the order printed.
pub fn outcome(report: &Report) -> (u8, Vec<String>) {
    if report.interrupted {
        return (
            130,
            vec!["seckill-loadgen: interrupted; the reports hold the runs finished so far".into()],
        );
    }
    let mut lines = Vec::new();
    let bad = report.violations();
    for run in &bad {
        lines.push(judge::violation_line(run.strategy.as_str(), &run.breaches));
    }
    let failing: Vec<&Run> = report
        .runs
        .iter()
        .filter(|r| r.grabs > 0 && r.errors() * 2 >= r.grabs)
        .collect();
    for run in &failing {
        lines.push(format!(
            "seckill-loadgen: the service failed {} of {} grabs under {} (503/5xx or transport errors): see its log",
            run.errors(),
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
    let unsure = report.inconclusive();
    for run in &unsure {
        lines.push(format!(
            "INCONCLUSIVE: {} could not be judged: {}",
            run.strategy,
            run.inconclusive_because.join("; ")
        ));
    }
    let breached = report.breached();
    for check in &breached {
        lines.push(format!("THRESHOLD: {}", check.line()));
    }
    let code = if !bad.is_empty() {
        1
    } else if !failing.is_empty() || !report.failed.is_empty() {
        3
    } else if !unsure.is_empty() {
        4
    } else if !breached.is_empty() {
        5
    } else {
        0
    };
    (code, lines)
}

/// A threshold that names a strategy this comparison does not run is a
/// mistake (a typo would otherwise pass unchecked): refused before the
/// first grab, exit 2.
pub(super) fn thresholds_name_runs(
    thresholds: &[Threshold],
    chosen: &[StrategyEntry],
) -> anyhow::Result<()> {
    for t in thresholds {
        if let Some(name) = &t.strategy {
            if !chosen.iter().any(|s| &s.name == name) {
                let running: Vec<&str> = chosen.iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!(
                    "--threshold {t}: {name} is not among the strategies this run runs ({})",
                    running.join(", ")
                );
            }
        }
    }
    Ok(())
}

pub(crate) fn write_reports(report: &Report, out: &Path, extra: &[PathBuf]) -> anyhow::Result<()> {
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
