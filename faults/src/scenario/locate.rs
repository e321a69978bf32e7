//! `--locate KEY=LO..HI`: where along one dial an outcome starts to
//! happen, found by bisection with a fixed number of injections at every
//! probe.
//!
//! A probe's side is whether the outcome was *seen* there: k ≥ 1 of n
//! proven injections (a "never" claim falls to one), or 0 of n. Both ends
//! run first; where two neighbouring probes differ, the midpoint runs
//! next, until the two closest probes on either side of the flip — the
//! bracket — are at most a tolerance apart: 5 % of the TTL for a duration
//! (or a count in milliseconds), 1 for a number (a clock's slew in %), 1
//! for any other count. A probe where nothing landed (n = 0) has no side:
//! the bisection stops there and says so. A categorical dial has no
//! midpoint: sweep its words instead (`--sweep`).
//!
//! Every probe is a whole case (its own world, its injections, its
//! report under `OUT/probe-<value>/`), so a bracket can be rerun point by
//! point with `--set KEY=VALUE`.

use seckill_load::api::StrategyName;
use serde::{Deserialize, Serialize};

use super::case::CaseResult;
use super::list::Scenario;
pub use super::params::{parse_locate, Locate};
use super::params::{Params, Unit};
use super::record::Outcome;
use super::Rate;
use seckill_load::judge::Expected;

/// The unit of `key` in `scenario`'s dials (`None`: no such dial).
pub fn unit_of(scenario: Scenario, key: &str) -> Option<Unit> {
    scenario
        .params()
        .iter()
        .find(|s| s.name == key)
        .map(|s| s.unit)
}

/// Whether `key` of `unit` can be bisected, and why not.
pub fn check_locatable(key: &str, unit: Unit) -> Result<(), String> {
    match unit {
        Unit::Choice(words) => Err(format!(
            "{key} is one of {}: a word has no midpoint; sweep them instead (--sweep {key}={})",
            words.join(", "),
            words.join(",")
        )),
        _ => Ok(()),
    }
}

/// The widest bracket bisection stops at: 5 % of the TTL for a duration
/// (or a count of milliseconds), 1 for a number (a percentage) or any
/// other count.
pub fn tolerance(key: &str, unit: Unit, ttl_ms: u64) -> f64 {
    match unit {
        Unit::Ms | Unit::MsOrFill => 0.05 * ttl_ms as f64,
        Unit::Count if key.ends_with("_ms") => (0.05 * ttl_ms as f64).max(1.0),
        Unit::Count | Unit::Number | Unit::Choice(_) => 1.0,
    }
}

/// `x` written as the dial takes it: whole milliseconds (`212`), a whole
/// count, or a number with at most two decimals (`2.13`).
pub fn typed(unit: Unit, x: f64) -> String {
    match unit {
        Unit::Number => {
            let text = format!("{x:.2}");
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
        _ => format!("{}", x.round().max(0.0) as u64),
    }
}

/// A number a JSON writer wrote as `null` (serde_json writes a NaN, a
/// categorical dial's "resolved" value, so) read back as NaN.
pub fn nan_from_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One probe: a case at one value of the dial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    /// The value as run (as typed).
    pub value: String,
    /// In the dial's unit (ms for a duration).
    #[serde(deserialize_with = "nan_from_null")]
    pub resolved: f64,
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
}

impl Probe {
    /// The probe of `case` at `value`.
    pub fn of(case: &CaseResult, key: &str, value: &str) -> Self {
        Self {
            value: value.to_owned(),
            resolved: case.params.f64(key).unwrap_or(f64::NAN),
            exclusion_broken: case.outcomes.map(|o| o.exclusion_broken),
            data_damaged: case.outcomes.map(|o| o.data_damaged),
            stalled: case.outcomes.and_then(|o| o.stalled),
            refused: case.outcomes.and_then(|o| o.refused),
        }
    }

    /// The rate of `outcome` here.
    pub fn rate(&self, outcome: Outcome) -> Option<Rate> {
        match outcome {
            Outcome::ExclusionBroken => self.exclusion_broken,
            Outcome::DataDamaged => self.data_damaged,
            Outcome::Stalled => self.stalled,
            Outcome::Refused => self.refused,
        }
    }

    /// Whether `outcome` was seen here (k ≥ 1), not seen (0 of n ≥ 1), or
    /// cannot be told (nothing landed).
    pub fn seen(&self, outcome: Outcome) -> Option<bool> {
        self.rate(outcome).filter(|r| r.n > 0).map(|r| r.k > 0)
    }

    /// Whether `outcome` was seen in at least half the injections here
    /// (a side a rerun of as many injections keeps: at a rate of one
    /// half, ten see none once in a thousand), or not; `None` where
    /// nothing landed.
    pub fn firm(&self, outcome: Outcome) -> Option<bool> {
        self.rate(outcome)
            .filter(|r| r.n > 0)
            .map(|r| r.k > 0 && 2 * r.k >= r.n)
    }
}

/// The two closest probes on either side of a flip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bracket {
    /// The lower value, as run.
    pub below: String,
    /// The higher value, as run.
    pub above: String,
    /// Both in the dial's unit.
    pub below_resolved: f64,
    pub above_resolved: f64,
    /// Whether the outcome was seen at `below` (and so not at `above`).
    pub seen_below: bool,
}

impl Bracket {
    /// `above − below`, in the dial's unit.
    pub fn width(&self) -> f64 {
        self.above_resolved - self.below_resolved
    }

    /// Whether `x` lies inside it (ends included).
    pub fn contains(&self, x: f64) -> bool {
        (self.below_resolved..=self.above_resolved).contains(&x)
    }
}

/// Every flip of `outcome` along `probes` (sorted by value), each as its
/// bracket; probes with no side between two decided ones are skipped over
/// (see [`undecided_between`]).
pub fn brackets(probes: &[Probe], outcome: Outcome) -> Vec<Bracket> {
    brackets_by(probes, |p| p.seen(outcome))
}

/// Every flip of `side` along `probes` (sorted by value): `brackets` for
/// any way of telling a probe's side.
pub fn brackets_by(probes: &[Probe], side: impl Fn(&Probe) -> Option<bool>) -> Vec<Bracket> {
    let mut sorted: Vec<&Probe> = probes.iter().filter(|p| p.resolved.is_finite()).collect();
    sorted.sort_by(|a, b| a.resolved.total_cmp(&b.resolved));
    let decided: Vec<(&Probe, bool)> = sorted
        .iter()
        .filter_map(|p| side(p).map(|s| (*p, s)))
        .collect();
    decided
        .windows(2)
        .filter(|pair| pair[0].1 != pair[1].1)
        .map(|pair| Bracket {
            below: pair[0].0.value.clone(),
            above: pair[1].0.value.clone(),
            below_resolved: pair[0].0.resolved,
            above_resolved: pair[1].0.resolved,
            seen_below: pair[0].1,
        })
        .collect()
}

/// Whether a probe with no side (nothing landed) lies inside `bracket`:
/// bisection stops there.
pub fn undecided_between(probes: &[Probe], outcome: Outcome, bracket: &Bracket) -> bool {
    probes.iter().any(|p| {
        p.seen(outcome).is_none()
            && p.resolved > bracket.below_resolved
            && p.resolved < bracket.above_resolved
    })
}

/// The next values to probe along one line: the midpoint of every bracket
/// still wider than `tolerance` with no undecided probe inside.
pub fn next_values(probes: &[Probe], outcome: Outcome, unit: Unit, tolerance: f64) -> Vec<String> {
    brackets(probes, outcome)
        .iter()
        .filter(|b| b.width() > tolerance && !undecided_between(probes, outcome, b))
        .filter_map(|b| {
            let mid = typed(unit, (b.below_resolved + b.above_resolved) / 2.0);
            let at = mid.parse::<f64>().ok()?;
            // Whole units: a midpoint equal to an end cannot narrow it.
            (at > b.below_resolved && at < b.above_resolved).then_some(mid)
        })
        .collect()
}

/// Where a model's prediction along `lo..hi` changes side: each flip as
/// the midpoint of the two steps (of 1000) it falls between.
pub fn model_flips(lo: f64, hi: f64, predict: impl Fn(f64) -> Option<Expected>) -> Vec<f64> {
    const STEPS: u32 = 1000;
    let at = |i: u32| lo + (hi - lo) * f64::from(i) / f64::from(STEPS);
    let mut flips = Vec::new();
    let mut last: Option<(f64, Expected)> = None;
    for i in 0..=STEPS {
        let x = at(i);
        let Some(p) = predict(x) else { continue };
        if let Some((prev_x, prev)) = last {
            if prev != p {
                flips.push((prev_x + x) / 2.0);
            }
        }
        last = Some((x, p));
    }
    flips
}

/// What one located line says: its dial, its outcome, the tolerance, its
/// probes (sorted), every bracket, and the model's predicted flips.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Located {
    /// Scenario.
    pub scenario: Scenario,
    /// Strategy.
    pub strategy: StrategyName,
    /// Variant.
    pub variant: Option<seckill_load::api::Variant>,
    /// The dial.
    pub key: String,
    /// The outcome bisected (the case's judged one).
    pub outcome: Outcome,
    /// The widest bracket bisection stops at, in the dial's unit.
    pub tolerance: f64,
    /// The first flip (absent when the outcome never changed side).
    pub bracket: Option<Bracket>,
    /// Every flip.
    pub brackets: Vec<Bracket>,
    /// Every probe, by value.
    pub probes: Vec<Probe>,
    /// Where the scenario's model predicts the flips, in the dial's unit.
    pub model_flips: Vec<f64>,
    /// In words.
    pub summary: String,
}

impl Located {
    /// Judge a line from its probes.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        scenario: Scenario,
        strategy: StrategyName,
        variant: Option<seckill_load::api::Variant>,
        key: &str,
        outcome: Outcome,
        tolerance: f64,
        mut probes: Vec<Probe>,
        model_flips: Vec<f64>,
    ) -> Self {
        probes.sort_by(|a, b| a.resolved.total_cmp(&b.resolved));
        let brackets = brackets(&probes, outcome);
        let summary = summary(key, outcome, tolerance, &probes, &brackets, &model_flips);
        Self {
            scenario,
            strategy: strategy.to_owned(),
            variant,
            key: key.to_owned(),
            outcome,
            tolerance,
            bracket: brackets.first().cloned(),
            brackets,
            probes,
            model_flips,
            summary,
        }
    }
}

fn summary(
    key: &str,
    outcome: Outcome,
    tolerance: f64,
    probes: &[Probe],
    brackets: &[Bracket],
    model: &[f64],
) -> String {
    let model = if model.is_empty() {
        "the model predicts no flip in this range".to_owned()
    } else {
        let at: Vec<String> = model.iter().map(|x| format!("{x:.1}")).collect();
        format!("the model predicts a flip at {}", at.join(", "))
    };
    if brackets.is_empty() {
        let sides: Vec<Option<bool>> = probes.iter().map(|p| p.seen(outcome)).collect();
        let word = match (
            sides.iter().all(|s| *s == Some(true)),
            sides.iter().all(|s| *s == Some(false)),
        ) {
            (true, _) => "seen at every probe",
            (_, true) => "seen at no probe",
            _ => "undecided (a probe where nothing landed)",
        };
        return format!(
            "{}: {word} of {key} from {} to {}; {model}",
            outcome.as_str(),
            probes.first().map_or("?", |p| p.value.as_str()),
            probes.last().map_or("?", |p| p.value.as_str()),
        );
    }
    let each: Vec<String> = brackets
        .iter()
        .map(|b| {
            let stop = if b.width() <= tolerance {
                format!("{:.2} wide, within the tolerance {tolerance:.2}", b.width())
            } else if undecided_between(probes, outcome, b) {
                "not narrowed further: a probe inside it had nothing land".to_owned()
            } else {
                format!("{:.2} wide", b.width())
            };
            format!(
                "{} between {key}={} ({}) and {key}={} ({}), {stop}",
                if b.seen_below { "stops" } else { "starts" },
                b.below,
                if b.seen_below { "seen" } else { "not seen" },
                b.above,
                if b.seen_below { "not seen" } else { "seen" },
            )
        })
        .collect();
    format!("{} {}; {model}", outcome.as_str(), each.join("; "))
}

/// The dials in force of `case`, as `--set` pairs (durations in ms), with
/// `key` left out: the base every probe of a line shares.
pub fn sets_of(case: &CaseResult, key: &str) -> Vec<(String, String)> {
    case.params
        .iter()
        .filter(|(k, _)| *k != key)
        .map(|(k, v)| (k.to_owned(), v.typed()))
        .collect()
}

/// The model's flips along `lo..hi` for `case`'s scenario and strategy:
/// the scenario's own expectation at each value, the other dials as the
/// case ran them.
pub fn case_model_flips(case: &CaseResult, key: &str, lo: f64, hi: f64, unit: Unit) -> Vec<f64> {
    if case.entry.is_none() {
        return Vec::new();
    }
    model_flips(lo, hi, |x| case_model_at(case, key, x, unit))
}

/// What this build's model predicts for `case`'s strategy with `key` at
/// `x` and the case's other dials (`None`: no strategy entry, or the
/// scenario does not apply): the model as it is now, not as it was when
/// the case ran.
pub fn case_model_at(case: &CaseResult, key: &str, x: f64, unit: Unit) -> Option<Expected> {
    let entry = case.entry.as_ref()?;
    let mut sets = sets_of(case, key);
    sets.push((key.to_owned(), typed(unit, x)));
    let params = Params::new(case.name.name(), case.name.params(), &sets).ok()?;
    case.name
        .expect(entry, case.variant, &params)
        .ok()
        .map(|e| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(value: f64, k: u64, n: u64) -> Probe {
        Probe {
            value: typed(Unit::Number, value),
            resolved: value,
            exclusion_broken: Some(Rate::of(k, n)),
            data_damaged: Some(Rate::of(0, n)),
            stalled: None,
            refused: None,
        }
    }

    #[test]
    fn locate_parses_key_and_both_ends() {
        let l = parse_locate("slew_pct=1..20").expect("valid");
        assert_eq!(
            (l.key.as_str(), l.lo.as_str(), l.hi.as_str()),
            ("slew_pct", "1", "20")
        );
        let l = parse_locate("pause = 0.2ttl .. 2ttl").expect("valid");
        assert_eq!((l.lo.as_str(), l.hi.as_str()), ("0.2ttl", "2ttl"));
        for bad in ["slew_pct", "slew_pct=1", "=1..2", "slew_pct=..2"] {
            assert!(parse_locate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_violation_puts_a_probe_on_the_seen_side_and_the_bracket_narrows_to_the_tolerance() {
        let exclusion = Outcome::ExclusionBroken;
        // 0 of 20 at 1 %, 1 of 20 at 20 %: a flip, and 1 of 20 is "seen".
        let mut probes = vec![probe(1.0, 0, 20), probe(20.0, 1, 20)];
        let next = next_values(&probes, exclusion, Unit::Number, 1.0);
        assert_eq!(next, ["10.5"]);
        probes.push(probe(10.5, 20, 20));
        assert_eq!(next_values(&probes, exclusion, Unit::Number, 1.0), ["5.75"]);
        probes.push(probe(5.75, 0, 20));
        probes.push(probe(8.13, 0, 20));
        probes.push(probe(9.31, 3, 20));
        probes.push(probe(8.72, 0, 20));
        let bracket = &brackets(&probes, exclusion)[0];
        assert_eq!(
            (bracket.below.as_str(), bracket.above.as_str()),
            ("8.72", "9.31")
        );
        assert!(bracket.width() <= 1.0);
        assert!(next_values(&probes, exclusion, Unit::Number, 1.0).is_empty());
        // A probe where nothing landed stops the bisection inside its bracket.
        let stuck = vec![probe(1.0, 0, 20), probe(10.0, 0, 0), probe(20.0, 5, 20)];
        assert!(next_values(&stuck, exclusion, Unit::Number, 1.0).is_empty());
        let located = Located::of(
            Scenario::ClockSlew,
            StrategyName::Redlock,
            None,
            "slew_pct",
            exclusion,
            1.0,
            stuck,
            vec![],
        );
        assert!(
            located.summary.contains("not narrowed further"),
            "{}",
            located.summary
        );
    }

    #[test]
    fn the_tolerance_is_five_percent_of_the_ttl_for_a_duration_and_one_for_a_number() {
        assert_eq!(tolerance("pause", Unit::Ms, 400), 20.0);
        assert_eq!(tolerance("lag_ms", Unit::Count, 2000), 100.0);
        assert_eq!(tolerance("slew_pct", Unit::Number, 1000), 1.0);
        assert_eq!(tolerance("promotions", Unit::Count, 1000), 1.0);
        assert!(check_locatable("where", Unit::Choice(&["a", "b"])).is_err());
        assert_eq!(typed(Unit::Ms, 212.4), "212");
        assert_eq!(typed(Unit::Number, 2.0), "2");
    }

    #[test]
    fn a_models_flips_are_found_between_the_steps_they_fall_between() {
        // Breaks in 300..600 of 0..1000: two flips.
        let flips = model_flips(0.0, 1000.0, |x| {
            Some(if (300.0..600.0).contains(&x) {
                Expected::Breaks
            } else {
                Expected::Holds
            })
        });
        assert_eq!(flips.len(), 2, "{flips:?}");
        assert!((flips[0] - 300.0).abs() <= 1.0 && (flips[1] - 600.0).abs() <= 1.0);
    }
}
