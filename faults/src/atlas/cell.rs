//! One cell of the atlas (a strategy under a fault) in its JSON shape, and
//! how its probes become a verdict for each outcome: where it starts (a
//! bracket), that it holds up to the largest size tried (with the 95 %
//! upper bound of its rate there), that it breaks from the smallest, or
//! why the pair cannot apply.

use serde::{Deserialize, Serialize};

use crate::scenario::locate::{self, Bracket, Probe};
use crate::scenario::{Outcome, Scenario};
use seckill_load::api::{Kind, Variant};

/// `docs/atlas.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AtlasJson {
    /// `seckill-loadgen`.
    pub tool: String,
    /// Its version.
    pub version: String,
    /// `release` or `debug`: the build that measured.
    pub profile: String,
    /// Injections at every probe.
    pub injections_per_probe: u32,
    /// Whether the scenarios' `--quick` dials were in force.
    pub quick: bool,
    /// Seconds the run took.
    pub duration_s: f64,
    /// Every (strategy, fault) pair, strategies in teaching order, faults
    /// in the columns' order.
    pub cells: Vec<CellJson>,
}

/// One (strategy, fault) pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellJson {
    /// The strategy.
    pub strategy: seckill_load::api::StrategyName,
    /// The fault (its column's id).
    pub fault: String,
    /// The dial that sizes it.
    pub dial: String,
    /// The scenario that injects it, its variant, the dials fixed.
    pub scenario: Scenario,
    pub variant: Option<Variant>,
    pub fixed: Vec<(String, String)>,
    /// What kind of lock the strategy is (its family).
    pub kind: Option<Kind>,
    /// The TTL the cell ran with, ms (`None`: the scenario has none).
    pub ttl_ms: Option<u64>,
    /// Exclusion broken along the dial.
    pub exclusion: Cell,
    /// Data damaged along the dial.
    pub data: Cell,
    /// A stall after a crash along the dial, where the scenario watches
    /// for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Cell>,
    /// The scenario's model along the dial, for the outcome the case is
    /// judged on.
    pub model: Option<Model>,
    /// Reruns the cell (its ends, then its bisection).
    pub command: String,
    /// Runs the two ends of the exclusion's (else the data's) bracket, or
    /// the ends of the range, as one scenario sweep.
    pub check: Option<String>,
}

impl CellJson {
    /// A cell whose both outcomes are `cell` (not applicable, or not
    /// measured yet): no TTL, no model, no check.
    pub fn unmeasured(
        strategy: seckill_load::api::StrategyName,
        fault: &super::faults::Fault,
        kind: Option<Kind>,
        cell: Cell,
        command: String,
    ) -> Self {
        Self {
            strategy,
            fault: fault.id.into(),
            dial: fault.dial.into(),
            scenario: fault.scenario,
            variant: fault.variant,
            fixed: crate::scenario::owned_sets(fault.sets),
            kind,
            ttl_ms: None,
            exclusion: cell.clone(),
            data: cell,
            stalled: None,
            model: None,
            command,
            check: None,
        }
    }
}

/// What was measured of one outcome in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    /// The outcome changes side between two sizes.
    Bracket { bracket: Ends, probes: Vec<Point> },
    /// Never seen, at any size up to the largest tried.
    Holds {
        holds_up_to: String,
        /// At that size: k of n, and the 95 % upper bound of the rate.
        k: u64,
        n: u64,
        upper95: f64,
        probes: Vec<Point>,
    },
    /// Seen at every size, from the smallest tried.
    Breaks {
        breaks_from: String,
        /// At that size.
        k: u64,
        n: u64,
        probes: Vec<Point>,
    },
    /// Nothing landed where a side was needed (a probe that did not run).
    Undecided {
        undecided: String,
        probes: Vec<Point>,
    },
    /// The fault cannot reach this strategy, and why.
    NotApplicable { not_applicable: String },
}

/// A bracket's two ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ends {
    /// The lower size, as run.
    pub below: String,
    /// The higher size, as run.
    pub above: String,
    /// Both in the dial's unit (ms for a duration).
    pub below_resolved: f64,
    pub above_resolved: f64,
    /// Whether the outcome was seen below (and not above): it stops
    /// there, instead of starting.
    pub seen_below: bool,
    /// Every other flip, when the outcome changed side more than once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<Bracket>,
    /// Where the outcome was first seen, when that was in fewer than half
    /// the injections: the seen end is then the nearest size where half
    /// or more saw it (a side a rerun keeps), and between the two lies a
    /// band where it happens now and then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onset: Option<Onset>,
    /// Whether the seen end was seen in half the injections or more
    /// (`false`: no size on that side was; a rerun of it may see none).
    #[serde(default = "yes")]
    pub firm: bool,
}

fn yes() -> bool {
    true
}

/// The size where an outcome was first seen, in fewer than half the
/// injections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Onset {
    /// The size as run.
    pub value: String,
    /// In the dial's unit.
    pub resolved: f64,
    /// k of n there.
    pub k: u64,
    pub n: u64,
}

impl Ends {
    /// The first flip `b` of `outcome` along `sorted` (by size), its seen
    /// end moved away from the clean one to the nearest size where half
    /// the injections or more saw the outcome: a rerun of as many
    /// injections sees it there too (at a rate of one half, ten
    /// injections all miss once in a thousand), where at a size seen once
    /// in ten a rerun often sees nothing. The size first seen is kept as
    /// the onset.
    fn of(b: &Bracket, more: &[Bracket], sorted: &[&Probe], outcome: Outcome) -> Self {
        let seen_at = if b.seen_below {
            b.below_resolved
        } else {
            b.above_resolved
        };
        let onset = sorted.iter().find(|p| p.resolved == seen_at);
        // Walking away from the clean end: up where it starts, down where
        // it stops.
        let away: Vec<&&Probe> = if b.seen_below {
            sorted
                .iter()
                .rev()
                .filter(|p| p.resolved <= seen_at)
                .collect()
        } else {
            sorted.iter().filter(|p| p.resolved >= seen_at).collect()
        };
        let firm = away.iter().find(|p| p.firm(outcome) == Some(true));
        let mut ends = Self {
            below: b.below.clone(),
            above: b.above.clone(),
            below_resolved: b.below_resolved,
            above_resolved: b.above_resolved,
            seen_below: b.seen_below,
            more: more.to_vec(),
            onset: None,
            firm: firm.is_some(),
        };
        let (Some(firm), Some(onset)) = (firm, onset) else {
            return ends;
        };
        if firm.resolved != seen_at {
            if b.seen_below {
                ends.below = firm.value.clone();
                ends.below_resolved = firm.resolved;
            } else {
                ends.above = firm.value.clone();
                ends.above_resolved = firm.resolved;
            }
            let rate = onset
                .rate(outcome)
                .unwrap_or_else(|| crate::scenario::Rate::of(0, 0));
            ends.onset = Some(Onset {
                value: onset.value.clone(),
                resolved: onset.resolved,
                k: rate.k,
                n: rate.n,
            });
        }
        ends
    }
}

/// One probe of one outcome: k of n at a size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The size as run.
    pub value: String,
    /// In the dial's unit.
    #[serde(deserialize_with = "locate::nan_from_null")]
    pub resolved: f64,
    /// Injections that showed the outcome (absent: nothing landed).
    pub k: Option<u64>,
    pub n: Option<u64>,
}

/// The model's prediction along the dial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// The outcome it predicts (the one the case is judged on).
    pub outcome: Outcome,
    /// Where it changes side, in the dial's unit.
    pub flips: Vec<f64>,
    /// Its side at the smallest size: `holds` or `breaks`.
    pub at_lo: seckill_load::judge::Expected,
}

impl Cell {
    /// The verdict of `outcome` along `probes`.
    pub fn of(probes: &[Probe], outcome: Outcome) -> Self {
        let mut sorted: Vec<&Probe> = probes.iter().filter(|p| p.resolved.is_finite()).collect();
        sorted.sort_by(|a, b| a.resolved.total_cmp(&b.resolved));
        let points: Vec<Point> = sorted
            .iter()
            .map(|p| {
                let rate = p.rate(outcome).filter(|r| r.n > 0);
                Point {
                    value: p.value.clone(),
                    resolved: p.resolved,
                    k: rate.map(|r| r.k),
                    n: rate.map(|r| r.n),
                }
            })
            .collect();
        let decided: Vec<(&Probe, bool)> = sorted
            .iter()
            .filter_map(|p| p.seen(outcome).map(|s| (*p, s)))
            .collect();
        let (Some(first), Some(last)) = (decided.first(), decided.last()) else {
            return Cell::Undecided {
                undecided: "nothing landed at any size: no probe has a side".into(),
                probes: points,
            };
        };
        let flips = locate::brackets(probes, outcome);
        if let Some((b, more)) = flips.split_first() {
            return Cell::Bracket {
                bracket: Ends::of(b, more, &sorted, outcome),
                probes: points,
            };
        }
        if first.1 {
            let rate = first
                .0
                .rate(outcome)
                .unwrap_or_else(|| crate::scenario::Rate::of(0, 0));
            Cell::Breaks {
                breaks_from: first.0.value.clone(),
                k: rate.k,
                n: rate.n,
                probes: points,
            }
        } else {
            let rate = last
                .0
                .rate(outcome)
                .unwrap_or_else(|| crate::scenario::Rate::of(0, 0));
            Cell::Holds {
                holds_up_to: last.0.value.clone(),
                k: rate.k,
                n: rate.n,
                upper95: (rate.ci95[1] * 1000.0).round() / 1000.0,
                probes: points,
            }
        }
    }

    /// Whether the outcome was seen at some size.
    pub fn seen(&self) -> bool {
        matches!(self, Cell::Bracket { .. } | Cell::Breaks { .. })
    }

    /// The smallest size it was seen at, in the dial's unit: the bracket's
    /// onset (else its upper end) where it starts, the smallest size where it breaks
    /// throughout; `None` where it was never seen.
    pub fn breaks_at(&self) -> Option<f64> {
        match self {
            Cell::Bracket { bracket, .. } if bracket.seen_below => {
                self.probes().first().map(|p| p.resolved)
            }
            Cell::Bracket { bracket, .. } => Some(
                bracket
                    .onset
                    .as_ref()
                    .map_or(bracket.above_resolved, |o| o.resolved),
            ),
            Cell::Breaks { probes, .. } => probes.first().map(|p| p.resolved),
            _ => None,
        }
    }

    /// Its probes.
    pub fn probes(&self) -> &[Point] {
        match self {
            Cell::Bracket { probes, .. }
            | Cell::Holds { probes, .. }
            | Cell::Breaks { probes, .. }
            | Cell::Undecided { probes, .. } => probes,
            Cell::NotApplicable { .. } => &[],
        }
    }

    /// In a few words, each size in the dial's unit (` ms`, ` %`).
    pub fn text(&self, unit: &str) -> String {
        self.text_in(unit, false)
    }

    /// The same in Chinese (`zh`), the reasons as the scenarios give them.
    pub fn text_in(&self, unit: &str, zh: bool) -> String {
        let size = |x: f64| {
            let n = format!("{x:.2}");
            format!("{}{unit}", n.trim_end_matches('0').trim_end_matches('.'))
        };
        let first = || self.probes().first().map_or(f64::NAN, |p| p.resolved);
        let last = || self.probes().last().map_or(f64::NAN, |p| p.resolved);
        if zh {
            return self.text_zh(&size(first()), &size(last()), &size);
        }
        match self {
            Cell::Bracket { bracket: b, .. } => format!(
                "{} between {} and {}{}{}",
                if b.seen_below { "stops" } else { "starts" },
                size(b.below_resolved),
                size(b.above_resolved),
                match (&b.onset, b.firm) {
                    (Some(o), _) => format!(
                        " (seen from {} in {} of {}, in half or more at {})",
                        size(o.resolved),
                        o.k,
                        o.n,
                        size(if b.seen_below {
                            b.below_resolved
                        } else {
                            b.above_resolved
                        })
                    ),
                    (None, false) => " (seen there in under half the injections)".into(),
                    (None, true) => String::new(),
                },
                if b.more.is_empty() {
                    String::new()
                } else {
                    format!(" (and {} more flips)", b.more.len())
                }
            ),
            Cell::Holds { k, n, upper95, .. } => format!(
                "holds up to {} ({k} of {n} there: rate < {} % at 95 %)",
                size(last()),
                crate::scenario::ceil_pct(*upper95)
            ),
            Cell::Breaks { k, n, .. } => {
                format!(
                    "breaks from the smallest size, {} ({k} of {n})",
                    size(first())
                )
            }
            Cell::Undecided { undecided, .. } => format!("undecided: {undecided}"),
            Cell::NotApplicable { not_applicable } => format!("n/a: {not_applicable}"),
        }
    }
}

impl Cell {
    fn text_zh(&self, first: &str, last: &str, size: &dyn Fn(f64) -> String) -> String {
        match self {
            Cell::Bracket { bracket: b, .. } => format!(
                "在 {} 与 {} 之间{}{}{}",
                size(b.below_resolved),
                size(b.above_resolved),
                if b.seen_below {
                    "消失"
                } else {
                    "开始出现"
                },
                match (&b.onset, b.firm) {
                    (Some(o), _) => format!(
                        "（从 {} 起偶尔出现，{}/{}；在 {} 处过半）",
                        size(o.resolved),
                        o.k,
                        o.n,
                        size(if b.seen_below {
                            b.below_resolved
                        } else {
                            b.above_resolved
                        })
                    ),
                    (None, false) => "（该处出现的次数不到一半）".into(),
                    (None, true) => String::new(),
                },
                if b.more.is_empty() {
                    String::new()
                } else {
                    format!("（另有 {} 处翻转）", b.more.len())
                }
            ),
            Cell::Holds { k, n, upper95, .. } => format!(
                "直到 {last} 都未出现（该处 {k}/{n}：95 % 置信上界 < {} %）",
                crate::scenario::ceil_pct(*upper95)
            ),
            Cell::Breaks { k, n, .. } => format!("从最小值 {first} 起即出现（{k}/{n}）"),
            Cell::Undecided { undecided, .. } => format!("无法判定：{undecided}"),
            Cell::NotApplicable { not_applicable } => format!("不适用：{not_applicable}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Rate;

    fn probe(value: f64, exclusion: (u64, u64), data: (u64, u64)) -> Probe {
        Probe {
            value: format!("{value}"),
            resolved: value,
            exclusion_broken: Some(Rate::of(exclusion.0, exclusion.1)),
            data_damaged: Some(Rate::of(data.0, data.1)),
            stalled: None,
            refused: None,
        }
    }

    #[test]
    fn each_outcome_is_a_bracket_a_hold_a_break_or_undecided_and_round_trips() {
        let probes = [
            probe(100.0, (0, 10), (0, 10)),
            probe(1200.0, (10, 10), (0, 10)),
            probe(650.0, (1, 10), (0, 10)),
            probe(375.0, (0, 10), (0, 10)),
        ];
        let exclusion = Cell::of(&probes, Outcome::ExclusionBroken);
        let Cell::Bracket {
            bracket,
            probes: points,
        } = &exclusion
        else {
            panic!("{exclusion:?}")
        };
        // First seen at 650 (1 of 10), in half or more at 1200: the
        // bracket ends where a rerun keeps both sides.
        assert_eq!(
            (bracket.below.as_str(), bracket.above.as_str()),
            ("375", "1200")
        );
        assert_eq!(
            bracket.onset,
            Some(Onset {
                value: "650".into(),
                resolved: 650.0,
                k: 1,
                n: 10
            })
        );
        assert!(!bracket.seen_below && bracket.firm);
        assert_eq!(points.len(), 4);
        assert_eq!(exclusion.breaks_at(), Some(650.0));
        let data = Cell::of(&probes, Outcome::DataDamaged);
        assert_eq!(
            data,
            Cell::Holds {
                holds_up_to: "1200".into(),
                k: 0,
                n: 10,
                upper95: 0.278,
                probes: data.probes().to_vec(),
            }
        );
        assert_eq!(
            data.text(" ms"),
            "holds up to 1200 ms (0 of 10 there: rate < 28 % at 95 %)"
        );
        assert_eq!(
            exclusion.text(" ms"),
            "starts between 375 ms and 1200 ms (seen from 650 ms in 1 of 10, in half or more at 1200 ms)"
        );
        // Where it stops, the firm end is below; where no size on the seen
        // side reaches half, the bracket says so.
        let stops = [
            probe(100.0, (9, 10), (1, 10)),
            probe(200.0, (2, 10), (1, 10)),
            probe(300.0, (0, 10), (0, 10)),
        ];
        let Cell::Bracket { bracket: b, .. } = Cell::of(&stops, Outcome::ExclusionBroken) else {
            panic!("a bracket")
        };
        assert_eq!((b.below.as_str(), b.above.as_str()), ("100", "300"));
        assert_eq!(b.onset.map(|o| o.value), Some("200".into()));
        assert!(b.seen_below && b.firm);
        let weak = Cell::of(&stops, Outcome::DataDamaged);
        let Cell::Bracket { bracket: b, .. } = &weak else {
            panic!("a bracket")
        };
        assert_eq!(
            (b.below.as_str(), b.above.as_str(), b.firm),
            ("200", "300", false)
        );
        assert_eq!(
            weak.text(" ms"),
            "stops between 200 ms and 300 ms (seen there in under half the injections)"
        );
        // A file written before the onset was kept reads as firm.
        let old: Ends = serde_json::from_str(
            r#"{"below":"1","above":"2","below_resolved":1.0,"above_resolved":2.0,"seen_below":false}"#,
        )
        .expect("an earlier bracket");
        assert!(old.firm && old.onset.is_none());
        let all = [
            probe(100.0, (1, 10), (0, 0)),
            probe(1200.0, (9, 10), (0, 0)),
        ];
        assert!(matches!(
            Cell::of(&all, Outcome::ExclusionBroken),
            Cell::Breaks { ref breaks_from, k: 1, n: 10, .. } if breaks_from == "100"
        ));
        assert!(matches!(
            Cell::of(&all, Outcome::DataDamaged),
            Cell::Undecided { .. }
        ));
        for cell in [
            exclusion,
            data,
            Cell::NotApplicable {
                not_applicable: "no TTL".into(),
            },
        ] {
            let text = serde_json::to_string(&cell).expect("json");
            let back: Cell = serde_json::from_str(&text).expect("read back");
            assert_eq!(back, cell, "{text}");
        }
    }
}
