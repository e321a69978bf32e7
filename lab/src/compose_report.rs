//! `seckill-lab judge-compare DIR`, what the Docker check
//! (`seckill-lab docker`) asks of the compose loadgen job's report, read
//! back through the load generator's own types. (Its Prometheus and
//! panels: `seckill-lab prometheus-up` and `panels`, [`crate::panels`].)

use std::path::Path;

use anyhow::{bail, Context as _};
use seckill_load::api::StrategyName;
use seckill_load::judge::RunVerdict;
use seckill_load::report::{Report, Run};

/// What is wrong with one run: inconclusive, an acknowledged order
/// missing, a breach of a strategy classed safe, `none` without its race,
/// no order at all.
fn faults_of(run: &Run) -> Vec<String> {
    let name = &run.strategy;
    let mut bad = Vec::new();
    let damage = run.damage.oversold
        + run.damage.lost_updates
        + run.damage.undersold
        + run.damage.duplicates
        + i64::from(run.negative_stock);
    if run.verdict == RunVerdict::Inconclusive {
        bad.push(format!(
            "{name}: inconclusive: {}",
            run.inconclusive_because.join("; ")
        ));
    }
    if let Some(a) = run
        .accounting
        .as_ref()
        .filter(|a| a.acknowledged_missing + a.unacknowledged_present > 0)
    {
        bad.push(format!(
            "{name}: {} acknowledged orders missing, {} unacknowledged present",
            a.acknowledged_missing, a.unacknowledged_present
        ));
    }
    if run.verdict == RunVerdict::Violation || (run.verdict == RunVerdict::Safe && damage > 0) {
        bad.push(format!(
            "{name}: classed safe, verdict {}, oversold {}, lost {}, undersold {}, dup {}, negative stock {}",
            run.verdict.as_str(), run.damage.oversold, run.damage.lost_updates, run.damage.undersold, run.damage.duplicates, run.negative_stock
        ));
    }
    if name == StrategyName::None.as_str()
        && run.damage.oversold == 0
        && run.damage.lost_updates == 0
    {
        bad.push("none: no oversold unit and no lost update: the race did not show".into());
    }
    if run.orders == 0 {
        bad.push(format!("{name}: no order at all"));
    }
    bad
}

/// `seckill-lab judge-compare DIR`: every strategy classed safe exact,
/// `none` broken, every acknowledged order there.
pub fn judge(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join("report.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    let report: Report =
        serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
    let mut bad: Vec<String> = report.runs.iter().flat_map(faults_of).collect();
    let none = report
        .runs
        .iter()
        .find(|r| r.strategy == StrategyName::None.as_str());
    if none.is_none() {
        bad.push("the report has no `none` run".into());
    }
    for line in &bad {
        println!("FAIL {line}");
    }
    let safe = report
        .runs
        .iter()
        .filter(|r| r.verdict == RunVerdict::Safe)
        .count();
    let summary = format!(
        "compare over the three replicas: {} strategies; {safe} classed safe, all exact; none oversold {}",
        report.runs.len(),
        none.map_or_else(|| "-".to_owned(), |r| r.damage.oversold.to_string())
    );
    if !bad.is_empty() {
        bail!("{summary}: {} problems", bad.len());
    }
    println!("ok   {summary}");
    Ok(())
}
