//! One case's record: what it expected, what was observed, and the verdict
//! — judged by [`seckill_load::judge`], as `run`/`compare` are, after the checks
//! only a scenario makes (did its fault land, did anything contend, was
//! anything sold, was an outage felt, did a crash deadlock: `checks.rs`),
//! and for a measured case from its rates (here).

use seckill_load::api::StrategyName;
use serde::{Deserialize, Serialize};

use super::in_force::{FaultRecord, InForce};
use super::name::Scenario;
use super::rate::{Rate, Standing};
pub use super::record::Observed;
use super::record::{Injection, Outcome, Outcomes};
use seckill_load::api::Variant;
use seckill_load::api::{OverlapEvent, Section, StrategyEntry};
use seckill_load::judge::{self, Breach, CaseVerdict, Expected, Guarantee};

/// What a strategy should do under a scenario's fault (`Err`: the scenario
/// does not apply to it, and why).
pub type Expectation = Result<(Expected, String), String>;

/// One case: a strategy under one variant of a scenario's fault.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    /// The scenario.
    pub name: Scenario,
    /// Strategy.
    pub strategy: StrategyName,
    /// Variant of the fault, when the scenario has several.
    pub variant: Option<Variant>,
    /// The faults in force (what was broken, how long, the TTL; `null`
    /// for a case that did not run).
    pub faults: Option<FaultRecord>,
    /// `holds` or `breaks`.
    pub expected: Expected,
    /// Why that is the expectation.
    pub why: String,
    /// What "holds" means for this strategy.
    pub guarantee: Guarantee,
    /// What happened.
    pub observed: Observed,
    /// Judged.
    pub verdict: CaseVerdict,
    /// Why the verdict (what broke, or what made it inconclusive).
    pub verdict_reason: String,
    /// What the runner did, with timings from the start of the case.
    pub steps: Vec<String>,
    /// The arbiter's first overlaps (time, who entered, who was inside).
    pub first_overlaps: Vec<OverlapEvent>,
    /// The case's critical sections, for the timeline of `scenarios.html`
    /// (not written to `scenarios.json`).
    #[serde(skip)]
    pub sections: Vec<Section>,
    /// Length of the case, seconds (all its trials).
    pub duration_s: f64,
    /// With `--trials N`: how many of the N runs of this case were
    /// `as-expected` (the verdict is `as-expected` only when all were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials: Option<Trials>,
    /// Every dial in force (`--set`, `--sweep`, the defaults).
    pub params: InForce,
    /// Each injection of the fault: target, window, proof, outcomes.
    pub injections: Vec<Injection>,
    /// k of n injections for each outcome, with Wilson 95 % intervals
    /// (`null`: the case did not run, or recorded no injection).
    pub outcomes: Option<Outcomes>,
    /// What the judged outcome's interval says of `expected`.
    pub standing: Option<Standing>,
    /// The curve of a swept case (every point of its sweep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    /// Why a `not-run` case did not run, and the remedy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The strategy as the service listed it (its kind): what the model's
    /// prediction reads (not written to `scenarios.json`).
    #[serde(skip)]
    pub entry: Option<StrategyEntry>,
}

/// `"sweep": {"key", "points": [{"value", "exclusion_broken", "data_damaged"}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The dial swept.
    pub key: String,
    /// One point per value, in the order given.
    pub points: Vec<SweepPoint>,
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The value as typed (`1.5ttl`); `null` when the case does not say
    /// (never shown as an empty value).
    pub value: Option<String>,
    /// The value in the dial's unit when it is a number (ms for a duration).
    pub resolved: Option<f64>,
    /// k of n.
    pub exclusion_broken: Option<Rate>,
    /// k of n.
    pub data_damaged: Option<Rate>,
    /// k of n, where the scenario watches for a stall after a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Rate>,
    /// k of n, where the run checks a token that may go backwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Rate>,
    /// The standing of the judged outcome.
    pub standing: Option<Standing>,
    /// The verdict at this point.
    pub verdict: CaseVerdict,
}

impl Sweep {
    /// The curve of `cases`, each one point of a sweep of `key`.
    pub fn of(key: &str, cases: &[CaseResult]) -> Self {
        let points = cases
            .iter()
            .map(|c| SweepPoint {
                value: c.sweep_value(key),
                resolved: c.params.f64(key),
                exclusion_broken: c.outcomes.map(|o| o.exclusion_broken),
                data_damaged: c.outcomes.map(|o| o.data_damaged),
                stalled: c.outcomes.and_then(|o| o.stalled),
                refused: c.outcomes.and_then(|o| o.refused),
                standing: c.standing,
                verdict: c.verdict,
            })
            .collect();
        Self {
            key: key.to_owned(),
            points,
        }
    }
}

/// `"trials": {"runs", "as_expected"}` of a case run more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trials {
    /// Times the case ran.
    pub runs: u32,
    /// Of those, the runs judged `as-expected`.
    pub as_expected: u32,
}

impl CaseResult {
    /// The value of dial `key` in force, as typed (`1.5ttl`, `after-check`,
    /// `50`).
    pub fn sweep_value(&self, key: &str) -> Option<String> {
        self.params.typed(key)
    }

    /// The value of the swept dial `key` this case ran at: an error when
    /// its params lack it (a report another build wrote), never a blank
    /// value placed on the curve.
    pub fn swept_value(&self, key: &str) -> anyhow::Result<String> {
        self.sweep_value(key).ok_or_else(|| {
            anyhow::anyhow!(
                "{} · {}: its params have no value for the swept dial {key}",
                self.name.name(),
                self.strategy
            )
        })
    }

    /// A case that could not run here: `reason` says why and the remedy.
    #[allow(clippy::too_many_arguments)]
    pub fn not_run(
        scenario: Scenario,
        entry: &StrategyEntry,
        variant: Option<Variant>,
        params: &super::params::Params,
        expected: Expected,
        why: String,
        reason: String,
    ) -> Self {
        Self {
            name: scenario,
            strategy: entry.name,
            variant,
            faults: None,
            expected,
            why,
            guarantee: Guarantee::of(entry.kind),
            observed: Observed::default(),
            verdict: CaseVerdict::NotRun,
            verdict_reason: reason.clone(),
            steps: Vec::new(),
            first_overlaps: Vec::new(),
            sections: Vec::new(),
            duration_s: 0.0,
            trials: None,
            params: params.in_force(),
            injections: Vec::new(),
            outcomes: None,
            standing: None,
            sweep: None,
            reason: Some(reason),
            entry: Some(entry.clone()),
        }
    }

    /// This record, for a case that started and did not finish: it failed
    /// (the reason: the error) or ran past its time limit. It is
    /// `inconclusive`, with the steps it logged and the injections it
    /// finished (their k of n is kept, the interval as wide as those few
    /// allow); the run goes on.
    pub fn unfinished(mut self, case: super::world::Case) -> Self {
        self.verdict = CaseVerdict::Inconclusive;
        self.duration_s = (case.started.elapsed().as_secs_f64() * 100.0).round() / 100.0;
        self.outcomes = (!case.injections.is_empty()).then(|| Outcomes::of(&case.injections));
        self.injections = case.injections;
        self.steps = case.steps;
        self
    }

    /// The verdict of a measured case, from its rates: the judged
    /// outcome's interval against the prediction (`agrees` →
    /// `as-expected`, `contradicts` → `UNEXPECTED`, `undecided` →
    /// `inconclusive`). What the whole-case judge found first still wins:
    /// a lie to a buyer, an incomplete history, unread orders, nothing
    /// sold, no contention.
    pub fn judge_rates(&mut self) {
        let Some(outcomes) = self.outcomes else {
            return;
        };
        let (what, rate) = outcomes.judged(self.guarantee);
        let standing = rate.standing(self.expected);
        self.standing = Some(standing);
        let lies: Vec<Breach> = self
            .observed
            .evidence()
            .breaches(self.guarantee)
            .into_iter()
            .filter(Breach::always_a_violation)
            .collect();
        if !lies.is_empty() {
            self.verdict = CaseVerdict::Unexpected;
            self.verdict_reason = format!("the service lied to buyers: {}", judge::list(&lies));
            return;
        }
        let measured = format!(
            "{} {} (predicted {}: {} {:.0} % of the injections)",
            what.as_str(),
            rate.text(),
            self.expected.as_str(),
            if self.expected == Expected::Breaks {
                "on more than"
            } else {
                "on fewer than"
            },
            super::rate::DECISION_RATE * 100.0
        );
        if rate.n == 0 {
            self.verdict = CaseVerdict::Inconclusive;
            self.verdict_reason = "no injection was proven to land (see the steps)".into();
            return;
        }
        // A landed injection proved the fault (the scenario said so), so
        // an inconclusive whole-case verdict here has another reason.
        if self.verdict == CaseVerdict::Inconclusive {
            self.verdict_reason = format!("{}; {measured}", self.verdict_reason);
            return;
        }
        let data = format!("; data damaged {}", outcomes.data_damaged.text());
        let data = if what != Outcome::DataDamaged {
            data
        } else {
            String::new()
        };
        (self.verdict, self.verdict_reason) = match standing {
            Standing::Agrees => (CaseVerdict::AsExpected, format!("agrees: {measured}{data}")),
            Standing::Contradicts => (
                CaseVerdict::Unexpected,
                format!("contradicts: {measured}{data}"),
            ),
            Standing::Undecided => (
                CaseVerdict::Inconclusive,
                format!("undecided: {measured}{data} — the interval straddles the line; more injections narrow it"),
            ),
        };
    }

    /// The table cells of this case, in [`CaseResult::HEAD`]'s order.
    pub fn cells(&self) -> Vec<String> {
        let o = &self.observed;
        vec![
            self.name.name().to_owned(),
            self.strategy.to_string(),
            self.variant.map_or("-", Variant::as_str).to_owned(),
            self.expected.as_str().to_owned(),
            o.overlaps.to_string(),
            o.max_holders.to_string(),
            o.damage.oversold.to_string(),
            o.damage.lost_updates.to_string(),
            o.damage.undersold.to_string(),
            o.damage.duplicates.to_string(),
            if o.negative_stock { "yes" } else { "no" }.to_owned(),
            o.accounting
                .map_or("?".into(), |a| a.acknowledged_missing.to_string()),
            o.accounting
                .map_or("?".into(), |a| a.unacknowledged_present.to_string()),
            o.accounting.map_or("?".into(), |a| {
                format!("{}/{}", a.indeterminate.found, a.indeterminate.not_found)
            }),
            o.rejected.to_string(),
            o.busy.to_string(),
            o.orders.to_string(),
            self.trials
                .map_or("-".into(), |t| format!("{}/{}", t.as_expected, t.runs)),
            self.outcomes
                .map_or("-".into(), |o| o.exclusion_broken.text()),
            self.outcomes.map_or("-".into(), |o| o.data_damaged.text()),
            self.standing.map_or("-", Standing::as_str).to_owned(),
            self.verdict.as_str().to_owned(),
        ]
    }

    /// The column names of [`CaseResult::cells`].
    pub const HEAD: [&'static str; 22] = [
        "scenario",
        "strategy",
        "variant",
        "expected",
        "overlaps",
        "max holders",
        "oversold",
        "lost updates",
        "undersold",
        "duplicates",
        "negative stock",
        "ack lost",
        "unacked",
        "indet f/nf",
        "rejected",
        "busy",
        "orders",
        "trials as expected",
        "exclusion broken",
        "data damaged",
        "standing",
        "verdict",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swept_value_the_params_lack_is_an_error_not_a_blank() {
        let entry =
            seckill_load::report::fixtures::entry(seckill_load::api::StrategyName::SetNxPxToken);
        const SPECS: &[crate::scenario::params::Spec] = &[crate::scenario::params::Spec {
            name: "pause",
            unit: crate::scenario::params::Unit::Ms,
            default: "1000",
            meaning: "",
        }];
        let params = crate::scenario::params::Params::new(
            "gc-pause",
            SPECS,
            &[("pause".to_owned(), "250ms".to_owned())],
        )
        .expect("valid dials");
        let case = CaseResult::not_run(
            Scenario::GcPause,
            &entry,
            None,
            &params,
            Expected::Holds,
            String::new(),
            "not here".into(),
        );
        assert_eq!(case.swept_value("pause").expect("swept"), "250");
        let why = case.swept_value("paws").expect_err("no such dial");
        assert!(
            why.to_string().contains("no value for the swept dial paws"),
            "{why}"
        );
    }
}
