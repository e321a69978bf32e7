//! A row judged twice from its probes (the sweep's points and the
//! bisection's): the source's claim as the source states it
//! ([`SourceStanding`]: a "never" claim stands only on 0 of n and falls to
//! one violation; a "can happen" claim stands on k ≥ 1), and our model's
//! prediction (its boundary inside the measured bracket, its side at every
//! point of the sweep). The source's side is in `source.rs`, the model's
//! here.

use serde::{Deserialize, Serialize};

pub use super::measured::Measured;
use super::rows::Row;
use super::source::judge_source;
pub use super::source::SourceStanding;
use crate::scenario::locate::{self, Bracket, Probe};
use crate::scenario::{Params, Rate, Standing};
use seckill_load::judge::Expected;

/// Text of a row: a row's own words as written in `rows.rs`, or read
/// back from an earlier `redlock-debate.json`.
pub type Text = std::borrow::Cow<'static, str>;

/// One point of the sweep with the model's prediction there.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// The value as typed.
    pub value: String,
    /// Resolved (ms for a duration).
    #[serde(deserialize_with = "crate::scenario::locate::nan_from_null")]
    pub resolved: f64,
    /// What the model predicts here.
    pub predicts: Expected,
    /// k of n.
    pub exclusion_broken: Option<Rate>,
    /// k of n.
    pub data_damaged: Option<Rate>,
    /// The row's outcome against the model's prediction (its interval
    /// against the 25 % line).
    pub standing: Standing,
    /// Why, in words.
    pub reason: String,
    /// The scenario case's own verdict line.
    pub case_verdict: String,
}

/// The model's side of a row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Model {
    /// What it predicts, in words.
    pub predicts: Text,
    /// Where it predicts the outcome to flip along the dial, in the dial's
    /// unit (ms for a duration; `null`: no flip in the range probed).
    pub boundary: Option<f64>,
    /// Every predicted flip in the range probed.
    pub boundaries: Vec<f64>,
    /// Whether every predicted flip lies inside a measured bracket and
    /// every bracket holds one (`null`: neither flips).
    pub inside_bracket: Option<bool>,
    /// How far each predicted flip lies from the nearest measured bracket,
    /// in the dial's unit (0: inside one; `null`: no bracket measured), in
    /// the order of `boundaries`: a miss of 0.6 ms beside a bracket 20 ms
    /// wide reads differently from a miss of 200.
    #[serde(default)]
    pub misses: Vec<Option<f64>>,
}

/// A row, judged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Judged {
    /// The source's claim against the data.
    pub source_standing: SourceStanding,
    /// One sentence of evidence.
    pub source_evidence: String,
    /// 同上，中文（由同一组数字写成；较早的 JSON 没有这一项）。
    #[serde(default)]
    pub source_evidence_zh: String,
    /// The value whose violation refutes a "never" claim.
    pub refuted_at: Option<String>,
    /// The model's side.
    pub model: Model,
    /// Our model against the data.
    pub model_standing: Standing,
    /// The first measured flip of the row's outcome.
    pub bracket: Option<Bracket>,
    /// Every measured flip.
    pub brackets: Vec<Bracket>,
    /// Every probe (the sweep's points and the bisection's), by value.
    pub probes: Vec<Probe>,
    /// The sweep's points with the model's prediction at each.
    pub points: Vec<Point>,
}

/// The model's predicted flips along the probed range: numerically for a
/// number dial, between neighbouring words for a word dial.
fn model_flips(
    row: &Row,
    measured: &[Measured],
    params_at: &dyn Fn(&str) -> Option<Params>,
) -> Vec<f64> {
    let numbers: Vec<f64> = measured.iter().map(|m| m.probe.resolved).collect();
    if numbers.iter().all(|x| x.is_finite()) && !numbers.is_empty() {
        let lo = numbers.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let unit = row
            .run
            .scenario
            .params()
            .iter()
            .find(|s| s.name == row.run.sweep.0)
            .map(|s| s.unit);
        let Some(unit) = unit else { return Vec::new() };
        return locate::model_flips(lo, hi, |x| {
            params_at(&locate::typed(unit, x)).map(|p| (row.predicts)(&p))
        });
    }
    Vec::new()
}

/// Judge `row` from every measured point. `params_at` gives the row's
/// dials with the swept dial at a value (as typed).
pub fn judge_row(
    row: &Row,
    measured: &[Measured],
    params_at: &dyn Fn(&str) -> Option<Params>,
) -> Judged {
    let (source_standing, source_evidence, source_evidence_zh, refuted_at) =
        judge_source(row, measured);
    let points = points(row, measured);
    let mut probes: Vec<Probe> = measured.iter().map(|m| m.probe.clone()).collect();
    probes.sort_by(|a, b| a.resolved.total_cmp(&b.resolved));
    let categorical = probes.iter().any(|p| !p.resolved.is_finite());
    let (brackets, boundaries) = if categorical {
        word_flips(row, measured)
    } else {
        (
            locate::brackets(&probes, row.outcome),
            model_flips(row, measured, params_at),
        )
    };
    let misses: Vec<Option<f64>> = boundaries.iter().map(|x| miss(&brackets, *x)).collect();
    let inside_bracket = if brackets.is_empty() && boundaries.is_empty() {
        None
    } else {
        let each_flip_inside = misses.iter().all(|m| *m == Some(0.0));
        let each_bracket_held = brackets
            .iter()
            .all(|b| boundaries.iter().any(|x| b.contains(*x)));
        Some(each_flip_inside && each_bracket_held)
    };
    let model_standing = model_standing(&points, inside_bracket);
    Judged {
        source_standing,
        source_evidence,
        source_evidence_zh,
        refuted_at,
        model: Model {
            predicts: row.predicts_text.into(),
            boundary: boundaries.first().copied(),
            misses,
            boundaries,
            inside_bracket,
        },
        model_standing,
        bracket: brackets.first().cloned(),
        brackets,
        probes,
        points,
    }
}

/// How far `x` lies outside the nearest of `brackets` (0 inside one;
/// `None`: no bracket).
fn miss(brackets: &[Bracket], x: f64) -> Option<f64> {
    brackets
        .iter()
        .map(|b| (b.below_resolved - x).max(x - b.above_resolved).max(0.0))
        .min_by(f64::total_cmp)
}

/// The sweep's fixed points, each with the model's prediction and the
/// row's outcome against it (its interval against the 25 % line).
fn points(row: &Row, measured: &[Measured]) -> Vec<Point> {
    let mut points = Vec::new();
    for m in measured.iter().filter(|m| m.swept) {
        let predicts = (row.predicts)(&m.params);
        let rate = m.probe.rate(row.outcome);
        let standing = rate.map_or(Standing::Undecided, |r| r.standing(predicts));
        let reason = match rate {
            Some(rate) => format!(
                "{}: {} {} (predicted {})",
                standing.as_str(),
                row.outcome.as_str(),
                rate.text(),
                predicts.as_str()
            ),
            None => format!("undecided: no rates ({})", m.case_verdict),
        };
        points.push(Point {
            value: m.probe.value.clone(),
            resolved: m.probe.resolved,
            predicts,
            exclusion_broken: m.probe.exclusion_broken,
            data_damaged: m.probe.data_damaged,
            standing,
            reason,
            case_verdict: m.case_verdict.clone(),
        });
    }
    points
}

/// The model's standing: it contradicts the data when a fixed point lies
/// on the other side of the line or its boundary lies outside the
/// measured bracket; it agrees when every fixed point agrees and no
/// boundary misses; else undecided.
fn model_standing(points: &[Point], inside_bracket: Option<bool>) -> Standing {
    let points_standing = if points.is_empty() {
        Standing::Undecided
    } else if points.iter().any(|p| p.standing == Standing::Contradicts) {
        Standing::Contradicts
    } else if points.iter().all(|p| p.standing == Standing::Agrees) {
        Standing::Agrees
    } else {
        Standing::Undecided
    };
    match (points_standing, inside_bracket) {
        (Standing::Contradicts, _) | (_, Some(false)) => Standing::Contradicts,
        (Standing::Agrees, _) => Standing::Agrees,
        _ => Standing::Undecided,
    }
}

/// A word dial (`persistence`): the measured flips and the model's, each
/// between two neighbouring words in the sweep's order, placed at the
/// words' indices.
fn word_flips(row: &Row, measured: &[Measured]) -> (Vec<Bracket>, Vec<f64>) {
    let swept: Vec<&Measured> = measured.iter().filter(|m| m.swept).collect();
    let mut brackets = Vec::new();
    let mut flips = Vec::new();
    for (i, pair) in swept.windows(2).enumerate() {
        let (a, b) = (pair[0], pair[1]);
        if let (Some(sa), Some(sb)) = (a.probe.seen(row.outcome), b.probe.seen(row.outcome)) {
            if sa != sb {
                brackets.push(Bracket {
                    below: a.probe.value.clone(),
                    above: b.probe.value.clone(),
                    below_resolved: i as f64,
                    above_resolved: (i + 1) as f64,
                    seen_below: sa,
                });
            }
        }
        if (row.predicts)(&a.params) != (row.predicts)(&b.params) {
            flips.push(i as f64 + 0.5);
        }
    }
    (brackets, flips)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::table::ROWS;

    fn params(row: &Row, value: &str) -> Params {
        let mut sets = crate::scenario::owned_sets(row.run.sets);
        sets.push((row.run.sweep.0.to_owned(), value.to_owned()));
        Params::new(row.run.scenario.name(), row.run.scenario.params(), &sets).expect("params")
    }

    fn measured(row: &Row, value: &str, k: u64, n: u64) -> Measured {
        let params = params(row, value);
        let resolved = params.in_force().f64(row.run.sweep.0).unwrap_or(f64::NAN);
        Measured {
            params,
            probe: Probe {
                value: value.to_owned(),
                resolved,
                exclusion_broken: Some(Rate::of(k, n)),
                data_damaged: Some(Rate::of(k, n)),
                stalled: None,
                refused: None,
            },
            swept: true,
            case_verdict: String::new(),
        }
    }

    fn row(id: &str) -> &'static Row {
        ROWS.iter().find(|r| r.id == id).expect("the row")
    }

    fn judge(row: &Row, points: &[Measured]) -> Judged {
        judge_row(row, points, &|v| Some(params(row, v)))
    }

    #[test]
    fn one_violation_in_twenty_refutes_a_never_claim_and_zero_supports_it_with_its_bound() {
        let r = row("fencing-keeps-data");
        let clean = judge(
            r,
            &[measured(r, "0.25ttl", 0, 20), measured(r, "3ttl", 0, 20)],
        );
        assert_eq!(clean.source_standing, SourceStanding::Supported);
        assert!(
            clean.source_evidence.contains("0 of 40"),
            "{}",
            clean.source_evidence
        );
        assert!(
            clean.source_evidence.contains("below 9 %"),
            "{}",
            clean.source_evidence
        );
        assert!(
            clean.source_evidence_zh.contains("共 40 次注入，0 次"),
            "{}",
            clean.source_evidence_zh
        );
        let one = judge(
            r,
            &[measured(r, "0.25ttl", 0, 20), measured(r, "3ttl", 1, 20)],
        );
        assert_eq!(one.source_standing, SourceStanding::Refuted);
        assert_eq!(one.refuted_at.as_deref(), Some("3ttl"));
        // The point's own interval (1 of 20, [1–24 %]) lies below the 25 %
        // line, yet the model said "never" too: the flip it did not
        // predict contradicts it.
        assert_eq!(one.points[1].standing, Standing::Agrees);
        assert_eq!(one.model.inside_bracket, Some(false));
        assert_eq!(one.model_standing, Standing::Contradicts);
    }

    #[test]
    fn a_can_happen_claim_seen_at_some_probes_in_its_range_names_the_ones_where_it_was_not() {
        // Pause 393 leaves 1 ms of validity: in the claim's range, clean.
        let r = row("validity-shorter-than-work");
        let judged = judge(r, &[measured(r, "300", 20, 20), measured(r, "393", 0, 20)]);
        assert_eq!(judged.source_standing, SourceStanding::Supported);
        let evidence = &judged.source_evidence;
        assert!(evidence.contains("seen at 1 of the 2 probes"), "{evidence}");
        assert!(
            evidence.contains("not seen: 0 of 20 at pause=393"),
            "{evidence}"
        );
        assert!(
            judged.source_evidence_zh.contains("2 个探测点中，1 个"),
            "{}",
            judged.source_evidence_zh
        );
    }

    #[test]
    fn antirez_ten_percent_is_refuted_by_a_violation_below_ten_percent_with_the_reference_factor() {
        let r = row("drift-factor-covers-slew");
        let judged = judge(
            r,
            &[
                measured(r, "1", 0, 20),
                measured(r, "2", 0, 20),
                measured(r, "6", 20, 20),
                measured(r, "10", 20, 20),
            ],
        );
        assert_eq!(judged.source_standing, SourceStanding::Refuted);
        assert_eq!(judged.refuted_at.as_deref(), Some("6"));
        // The model flips near 4.6 %: inside the bracket 2..6, so the
        // model agrees while the source is refuted.
        let bracket = judged.bracket.as_ref().expect("a bracket");
        assert_eq!((bracket.below.as_str(), bracket.above.as_str()), ("2", "6"));
        assert_eq!(
            judged.model.inside_bracket,
            Some(true),
            "{:?}",
            judged.model
        );
        assert_eq!(judged.model_standing, Standing::Agrees);
    }

    #[test]
    fn a_can_happen_claim_stands_on_one_injection_and_absence_leaves_it_undecided() {
        let r = row("pause-breaks-redlock");
        let seen = judge(
            r,
            &[measured(r, "0.25ttl", 0, 20), measured(r, "2ttl", 1, 20)],
        );
        assert_eq!(seen.source_standing, SourceStanding::Supported);
        // Both languages from the same numbers.
        assert!(
            seen.source_evidence.contains("1 of 20 at pause=2ttl"),
            "{}",
            seen.source_evidence
        );
        assert!(
            seen.source_evidence_zh
                .contains("pause=2ttl 时 20 次中 1 次"),
            "{}",
            seen.source_evidence_zh
        );
        let absent = judge(
            r,
            &[measured(r, "0.25ttl", 0, 20), measured(r, "2ttl", 0, 20)],
        );
        assert_eq!(absent.source_standing, SourceStanding::Undecided);
        // Only the points where the source's claim applies count: a
        // violation below the TTL does not support "longer than the TTL".
        let below = judge(
            r,
            &[measured(r, "0.6ttl", 5, 20), measured(r, "2ttl", 0, 20)],
        );
        assert_eq!(below.source_standing, SourceStanding::Undecided);
    }

    #[test]
    fn a_model_boundary_outside_the_measured_bracket_contradicts_the_model() {
        let r = row("pause-breaks-redlock"); // model: pause + 40 > 300, at 260 ms
        let judged = judge(
            r,
            &[
                measured(r, "0.25ttl", 0, 20),
                measured(r, "0.6ttl", 20, 20),
                measured(r, "3ttl", 20, 20),
            ],
        );
        assert_eq!(judged.model.inside_bracket, Some(false));
        assert_eq!(judged.model_standing, Standing::Contradicts);
        // The miss is the distance to the bracket's nearer end.
        let b = judged.bracket.expect("a bracket");
        let x = judged.model.boundary.expect("a boundary");
        assert!(x > b.above_resolved, "{x} vs {b:?}");
        assert_eq!(judged.model.misses, vec![Some(x - b.above_resolved)]);
    }

    #[test]
    fn a_miss_is_the_distance_to_the_nearest_bracket_and_zero_inside_one() {
        let bracket = |below: f64, above: f64| Bracket {
            below: below.to_string(),
            above: above.to_string(),
            below_resolved: below,
            above_resolved: above,
            seen_below: false,
        };
        let brackets = [bracket(280.0, 300.0), bracket(375.0, 393.0)];
        assert_eq!(miss(&brackets, 294.25), Some(0.0));
        assert_eq!(miss(&brackets, 393.5), Some(0.5));
        assert_eq!(miss(&brackets, 270.0), Some(10.0));
        assert_eq!(miss(&[], 270.0), None);
    }
}
