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
    /// Runs the two ends of the exclusion's (else the data's, else the
    /// stall's) bracket, or the ends of the range, as one scenario sweep.
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
    /// the onset. Its clean end likewise moves away, to the nearest size
    /// `margin` or more from the onset with nothing seen between (where
    /// one was probed).
    fn of(b: &Bracket, more: &[Bracket], sorted: &[&Probe], outcome: Outcome, margin: f64) -> Self {
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
        if let Some(clear) = clear_end(b, sorted, outcome, seen_at, margin) {
            if b.seen_below {
                ends.above = clear.value.clone();
                ends.above_resolved = clear.resolved;
            } else {
                ends.below = clear.value.clone();
                ends.below_resolved = clear.resolved;
            }
        }
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

/// The clean end of `b`, `margin` or more from `seen_at` (where the
/// outcome was first seen) with nothing seen between, where a probe lies
/// there: a boundary is a band (a pause a few ms longer or shorter lands
/// on either side of the TTL as the scheduler pleases), and the clean size
/// the bisection stopped at, a tolerance from it, sees the outcome now and
/// then on a rerun.
fn clear_end<'p>(
    b: &Bracket,
    sorted: &[&'p Probe],
    outcome: Outcome,
    seen_at: f64,
    margin: f64,
) -> Option<&'p Probe> {
    let clean = |p: &&Probe| p.seen(outcome) == Some(false);
    let clear = if b.seen_below {
        sorted
            .iter()
            .find(|p| p.resolved >= seen_at + margin && clean(p))
    } else {
        sorted
            .iter()
            .rev()
            .find(|p| p.resolved <= seen_at - margin && clean(p))
    }?;
    let (lo, hi) = if b.seen_below {
        (seen_at, clear.resolved)
    } else {
        (clear.resolved, seen_at)
    };
    let seen_between = sorted
        .iter()
        .any(|q| q.resolved > lo && q.resolved < hi && q.seen(outcome) == Some(true));
    (!seen_between).then_some(*clear)
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
    pub fn of(probes: &[Probe], outcome: Outcome, margin: f64) -> Self {
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
                bracket: Ends::of(b, more, &sorted, outcome, margin),
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
                    (Some(o), _) if b.seen_below => format!(
                        " (seen up to {} in {} of {}, in half or more up to {})",
                        size(o.resolved),
                        o.k,
                        o.n,
                        size(b.below_resolved)
                    ),
                    (Some(o), _) => format!(
                        " (seen from {} in {} of {}, in half or more at {})",
                        size(o.resolved),
                        o.k,
                        o.n,
                        size(b.above_resolved)
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
                    (Some(o), _) if b.seen_below => format!(
                        "（直到 {} 仍偶尔出现，{}/{}；直到 {} 过半）",
                        size(o.resolved),
                        o.k,
                        o.n,
                        size(b.below_resolved)
                    ),
                    (Some(o), _) => format!(
                        "（从 {} 起偶尔出现，{}/{}；在 {} 处过半）",
                        size(o.resolved),
                        o.k,
                        o.n,
                        size(b.above_resolved)
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
mod tests;
