//! `--threshold` applied: each limit against each run it names (the
//! language and the checked results are [`crate::report::threshold`]'s).

use crate::load::Outcome;
use crate::report::threshold::{Checked, Metric, Threshold};
use crate::report::Run;

/// The run's value, in the metric's base unit (ms, a fraction, per s);
/// `None` when the run has nothing to measure it by (no grab).
pub fn measure(metric: Metric, run: &Run) -> Option<f64> {
    let grabs = run.grabs as f64;
    let count = |o: Outcome| run.outcomes.get(o.as_str()).copied().unwrap_or(0) as f64;
    match metric {
        Metric::P50 => Some(run.p50_ms),
        Metric::P95 => Some(run.p95_ms),
        Metric::P99 => Some(run.p99_ms),
        Metric::Max => Some(run.max_ms),
        Metric::BuyerP50 => Some(run.buyer_p50_ms),
        Metric::BuyerP99 => Some(run.buyer_p99_ms),
        Metric::ErrorRate => (grabs > 0.0).then(|| run.errors() as f64 / grabs),
        Metric::BusyRate => {
            (grabs > 0.0).then(|| (count(Outcome::Busy) + count(Outcome::Rejected)) / grabs)
        }
        Metric::GrabsPerS => Some(run.grabs_per_sec),
        Metric::OrdersPerS => Some(run.orders_per_sec),
    }
    .filter(|_| run.grabs > 0)
}

/// Every threshold against every run it applies to, in order.
pub fn check(thresholds: &[Threshold], runs: &[Run]) -> Vec<Checked> {
    let mut out = Vec::new();
    for t in thresholds {
        for run in runs.iter().filter(|r| t.applies_to(r.strategy)) {
            let measured = measure(t.metric, run);
            out.push(Checked {
                expr: t.expr.clone(),
                strategy: run.strategy,
                metric: t.metric,
                op: t.op,
                limit: t.limit,
                value: measured,
                ok: measured.is_some_and(|v| t.op.holds(v, t.limit)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::RunVerdict;
    use crate::report::fixtures;

    #[test]
    fn each_run_is_held_to_the_thresholds_that_name_it() {
        let mut fast = fixtures::run(crate::api::StrategyName::SetNxPxToken, RunVerdict::Safe, 0);
        fast.p99_ms = 3.0;
        fast.grabs = 200;
        fast.outcomes.insert("error".into(), 1);
        let mut slow = fixtures::run(crate::api::StrategyName::Redlock, RunVerdict::Safe, 0);
        slow.p99_ms = 450.0;
        slow.grabs = 200;
        let runs = [fast, slow];
        let all = Threshold::parse("p99<400ms").expect("a threshold");
        let only = Threshold::parse("set-nx-px-token:error_rate<0.1%").expect("a threshold");
        let checked = check(&[all, only], &runs);
        let verdicts: Vec<(&str, &str, bool)> = checked
            .iter()
            .map(|c| (c.expr.as_str(), c.strategy.as_str(), c.ok))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("p99<400ms", "set-nx-px-token", true),
                ("p99<400ms", "redlock", false),
                ("set-nx-px-token:error_rate<0.1%", "set-nx-px-token", false),
            ]
        );
        assert_eq!(checked[2].value, Some(0.005));
        assert!(checked[1].line().ends_with("measured 450.0 ms: BREACHED"));
    }

    #[test]
    fn a_run_without_grabs_fails_its_threshold() {
        let mut idle = fixtures::run(crate::api::StrategyName::Redlock, RunVerdict::Safe, 0);
        idle.grabs = 0;
        let checked = check(
            &[Threshold::parse("p99<400ms").expect("a threshold")],
            &[idle],
        );
        assert_eq!(checked[0].value, None);
        assert!(!checked[0].ok);
    }
}
