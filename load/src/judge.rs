//! The one judge: what the database's audit and the history arbiter saw,
//! turned into breaches, and breaches into a verdict — the same checks, the
//! same way, for `run`, `compare` and `scenario`.
//!
//! The checks ([`Evidence::breaches`]): acknowledged orders missing from
//! the database and orders nobody acknowledged (the buyers' [ledger],
//! a violation under *every* strategy), the stock moved outside what the
//! buyers can explain, units oversold, lost updates, units undersold,
//! duplicate orders, a negative stock column, and — for a strategy that
//! promises mutual exclusion — overlapping critical sections.
//!
//! [ledger]: crate::load::ledger
//! A strategy that promises only exact data (the fence, the atomic
//! operations: [`Guarantee::Data`]) may overlap; its audit must still be
//! clean.
//!
//! Two verdicts read the breaches:
//! - a run of `run`/`compare` ([`RunVerdict`]): a strategy classed safe
//!   that shows any breach is a `VIOLATION`; one not classed safe (or aimed
//!   at by the faults in force) is `expected-unsafe` — unless an
//!   acknowledged order vanished or an unacknowledged one appeared, a
//!   `VIOLATION` for any strategy; a run whose history or orders could not
//!   be read completely is `inconclusive`, never `safe`;
//! - a scenario case ([`CaseVerdict`]): `as-expected` when the design held
//!   where it should hold and broke where it should break, `UNEXPECTED`
//!   otherwise, `inconclusive` when the case could not tell.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::api::{AuditRow, Damage, Kind, StrategyHistory};
use crate::load::ledger::{Accounting, Bounds};

/// What a strategy promises: no two holders, or only exact data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Guarantee {
    /// Mutual exclusion: overlaps must be 0 and the audit clean.
    Exclusion,
    /// Exact data: the audit must be clean; overlaps are shown, not judged.
    Data,
}

impl Guarantee {
    /// The guarantee of a strategy of `kind`: the fence and the non-locks
    /// guard the data; every other lock promises exclusion.
    pub fn of(kind: Kind) -> Self {
        if matches!(kind, Kind::Fenced | Kind::NotALock) {
            Guarantee::Data
        } else {
            Guarantee::Exclusion
        }
    }
}

/// What a run left behind: the audit of its products, summed (each product
/// on its own: one product's lost updates never hide behind another's
/// undersold units), and the arbiter's counts when the history was on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Oversold units, lost updates, undersold units, duplicates: each
    /// summed on its own over the products.
    #[serde(flatten)]
    pub damage: Damage,
    /// A product's stock column went below zero.
    pub negative_stock: bool,
    /// Sections that began while another was inside (`None`: no history).
    pub overlaps: Option<u64>,
    /// The most sections inside at once (`None`: no history).
    pub max_holders: Option<u64>,
    /// The acknowledgement check (`None`: not made).
    pub accounting: Option<Accounting>,
}

impl Evidence {
    /// The audit rows' figures, the history's counts if it was on, and the
    /// acknowledgement check if it was made.
    pub fn new(
        rows: &[AuditRow],
        history: Option<&StrategyHistory>,
        accounting: Option<Accounting>,
    ) -> Self {
        Self {
            damage: Damage::sum(rows.iter().map(|r| &r.damage)),
            negative_stock: rows.iter().any(|r| r.negative_stock),
            overlaps: history.map(|h| h.overlaps),
            max_holders: history.map(|h| h.max_holders),
            accounting,
        }
    }

    /// Every breach, in the order they are printed.
    pub fn breaches(&self, guarantee: Guarantee) -> Vec<Breach> {
        let mut found = Vec::new();
        if let Some(a) = &self.accounting {
            if a.acknowledged_missing > 0 {
                found.push(Breach::AcknowledgedMissing(a.acknowledged_missing));
            }
            if a.unacknowledged_present > 0 {
                found.push(Breach::UnacknowledgedPresent(a.unacknowledged_present));
            }
            if !a.bounds.hold() {
                found.push(Breach::OutOfBounds(a.bounds));
            }
        }
        if self.damage.oversold > 0 {
            found.push(Breach::Oversold(self.damage.oversold));
        }
        if self.damage.lost_updates > 0 {
            found.push(Breach::LostUpdates(self.damage.lost_updates));
        }
        if self.damage.undersold > 0 {
            found.push(Breach::Undersold(self.damage.undersold));
        }
        if self.damage.duplicates > 0 {
            found.push(Breach::Duplicates(self.damage.duplicates));
        }
        if self.negative_stock {
            found.push(Breach::NegativeStock);
        }
        if let Some(overlaps) = self.overlaps.filter(|n| *n > 0) {
            if guarantee == Guarantee::Exclusion {
                found.push(Breach::Overlaps {
                    overlaps,
                    max_holders: self.max_holders.unwrap_or(0),
                });
            }
        }
        found
    }
}

/// One way a run broke its strategy's promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breach {
    /// `201`s whose order is not in the database.
    AcknowledgedMissing(u64),
    /// Orders no `201` and no indeterminate answer explains.
    UnacknowledgedPresent(u64),
    /// Units gone from the stock outside acknowledged ..= attempted.
    OutOfBounds(Bounds),
    /// Units sold beyond the stock.
    Oversold(i64),
    /// Orders the stock column never saw.
    LostUpdates(i64),
    /// Units gone from the stock column that no order took.
    Undersold(i64),
    /// Users with more than one order.
    Duplicates(i64),
    /// A stock column below zero.
    NegativeStock,
    /// Overlapping critical sections under a lock that promises exclusion.
    Overlaps { overlaps: u64, max_holders: u64 },
    /// `crash-holder`: no order after the holder died.
    Deadlocked,
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breach::AcknowledgedMissing(n) => {
                write!(f, "{n} acknowledged orders missing from the database")
            }
            Breach::UnacknowledgedPresent(n) => {
                write!(f, "{n} orders nobody acknowledged")
            }
            Breach::OutOfBounds(b) => write!(
                f,
                "{} units left the stock, outside {}..={} (acknowledged..=attempted)",
                b.sold_units, b.acknowledged_units, b.attempted_units
            ),
            Breach::Oversold(n) => write!(f, "oversold {n}"),
            Breach::LostUpdates(n) => write!(f, "{n} lost updates"),
            Breach::Undersold(n) => write!(f, "undersold {n}"),
            Breach::Duplicates(n) => write!(f, "{n} duplicate orders"),
            Breach::NegativeStock => f.write_str("negative stock"),
            Breach::Overlaps {
                overlaps,
                max_holders,
            } => write!(
                f,
                "{overlaps} overlapping sections (max {max_holders} holders)"
            ),
            Breach::Deadlocked => f.write_str("no order after the holder died: deadlocked"),
        }
    }
}

impl Breach {
    /// A breach no design may show, whatever its class: the service lied
    /// to a buyer (an acknowledged order gone, an order never answered).
    pub fn always_a_violation(&self) -> bool {
        matches!(
            self,
            Breach::AcknowledgedMissing(_) | Breach::UnacknowledgedPresent(_)
        )
    }

    /// A breach the history shows (an incomplete history can invent one).
    pub fn from_history(&self) -> bool {
        matches!(self, Breach::Overlaps { .. })
    }
}

/// The breaches as one phrase: `oversold 3, 2 lost updates`.
pub fn list<B: fmt::Display>(breaches: &[B]) -> String {
    breaches
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The verdict of one strategy's run in `run`/`compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunVerdict {
    /// Classed safe, and no breach.
    #[serde(rename = "safe")]
    Safe,
    /// Classed safe, yet it breached.
    #[serde(rename = "VIOLATION")]
    Violation,
    /// Not classed safe here (`none`; `local-mutex` on 2+ replicas; a lock
    /// the faults in force aim at): its breaches are the lesson.
    #[serde(rename = "expected-unsafe")]
    ExpectedUnsafe,
    /// The run could not be judged: the history had errors or could not
    /// be read, or the orders could not be read.
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

impl RunVerdict {
    /// Judge a run: `classed_safe` is the strategy's class under the
    /// faults in force (see [`crate::expect`]); `complete` is false when
    /// the history or the orders could not be read whole. A lie to a buyer
    /// is a violation whatever the class; an audit breach of a strategy
    /// classed safe is one whatever the history; otherwise an incomplete
    /// run is inconclusive (its overlaps may be the history's own gaps).
    pub fn of(classed_safe: bool, breaches: &[Breach], complete: bool) -> Self {
        if breaches.iter().any(Breach::always_a_violation) {
            return RunVerdict::Violation;
        }
        if classed_safe && breaches.iter().any(|b| !b.from_history()) {
            return RunVerdict::Violation;
        }
        if !complete {
            return RunVerdict::Inconclusive;
        }
        match (classed_safe, breaches.is_empty()) {
            (false, _) => RunVerdict::ExpectedUnsafe,
            (true, false) => RunVerdict::Violation,
            (true, true) => RunVerdict::Safe,
        }
    }

    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            RunVerdict::Safe => "safe",
            RunVerdict::Violation => "VIOLATION",
            RunVerdict::ExpectedUnsafe => "expected-unsafe",
            RunVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// The line printed for a run classed safe that breached.
pub fn violation_line<B: fmt::Display>(strategy: &str, breaches: &[B]) -> String {
    format!(
        "VIOLATION: {strategy} is classed safe but {}",
        list(breaches)
    )
}

/// What a scenario case expects of its strategy: `holds` or `breaks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expected {
    /// The design's promise survives this fault.
    Holds,
    /// This fault is the design's weak point: it should show.
    Breaks,
}

impl Expected {
    /// As written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Expected::Holds => "holds",
            Expected::Breaks => "breaks",
        }
    }
}

/// The verdict of one scenario case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CaseVerdict {
    /// Observed what the design predicts.
    #[serde(rename = "as-expected")]
    AsExpected,
    /// Observed the opposite.
    #[serde(rename = "UNEXPECTED")]
    Unexpected,
    /// No contention, nothing sold, the fault never landed, or a measured
    /// rate whose interval straddles the line (`undecided`).
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// The case could not run here (its strategy is unavailable: a setting
    /// or a server missing); `reason` says which, and the remedy. Never
    /// counted as passed.
    #[serde(rename = "not-run")]
    NotRun,
}

impl CaseVerdict {
    /// Judge a case that could tell (the caller has ruled out the
    /// inconclusive ones): held where it should hold, broke where it should
    /// break.
    pub fn of(expected: Expected, breaches: &[Breach]) -> Self {
        match (expected, breaches.is_empty()) {
            (Expected::Holds, true) | (Expected::Breaks, false) => CaseVerdict::AsExpected,
            _ => CaseVerdict::Unexpected,
        }
    }

    /// As written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            CaseVerdict::AsExpected => "as-expected",
            CaseVerdict::Unexpected => "UNEXPECTED",
            CaseVerdict::Inconclusive => "inconclusive",
            CaseVerdict::NotRun => "not-run",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_of_each() -> Vec<(&'static str, Evidence)> {
        let clean = Evidence {
            overlaps: Some(0),
            max_holders: Some(1),
            ..Evidence::default()
        };
        vec![
            (
                "oversold 2",
                Evidence {
                    damage: Damage {
                        oversold: 2,
                        ..Damage::default()
                    },
                    ..clean
                },
            ),
            (
                "3 lost updates",
                Evidence {
                    damage: Damage {
                        lost_updates: 3,
                        ..Damage::default()
                    },
                    ..clean
                },
            ),
            (
                "undersold 4",
                Evidence {
                    damage: Damage {
                        undersold: 4,
                        ..Damage::default()
                    },
                    ..clean
                },
            ),
            (
                "5 duplicate orders",
                Evidence {
                    damage: Damage {
                        duplicates: 5,
                        ..Damage::default()
                    },
                    ..clean
                },
            ),
            (
                "negative stock",
                Evidence {
                    negative_stock: true,
                    ..clean
                },
            ),
            (
                "6 overlapping sections (max 2 holders)",
                Evidence {
                    overlaps: Some(6),
                    max_holders: Some(2),
                    ..clean
                },
            ),
        ]
    }

    #[test]
    fn every_check_is_a_breach_for_runs_and_cases_alike() {
        for (text, evidence) in one_of_each() {
            let breaches = evidence.breaches(Guarantee::Exclusion);
            assert_eq!(list(&breaches), text);
            assert_eq!(RunVerdict::of(true, &breaches, true), RunVerdict::Violation);
            assert_eq!(
                RunVerdict::of(false, &breaches, true),
                RunVerdict::ExpectedUnsafe
            );
            assert_eq!(
                CaseVerdict::of(Expected::Holds, &breaches),
                CaseVerdict::Unexpected
            );
            assert_eq!(
                CaseVerdict::of(Expected::Breaks, &breaches),
                CaseVerdict::AsExpected
            );
            assert!(violation_line("x", &breaches).ends_with(text));
        }
    }

    #[test]
    fn a_data_guarantee_may_overlap_but_not_miscount() {
        let overlapping = Evidence {
            overlaps: Some(3),
            max_holders: Some(2),
            ..Evidence::default()
        };
        assert!(overlapping.breaches(Guarantee::Data).is_empty());
        assert_eq!(overlapping.breaches(Guarantee::Exclusion).len(), 1);
        let exact = Evidence::default();
        assert_eq!(
            RunVerdict::of(true, &exact.breaches(Guarantee::Exclusion), true),
            RunVerdict::Safe
        );
        assert_eq!(
            CaseVerdict::of(Expected::Breaks, &exact.breaches(Guarantee::Data)),
            CaseVerdict::Unexpected
        );
    }

    #[test]
    fn a_lie_to_a_buyer_is_a_violation_for_every_strategy() {
        let lied = Evidence {
            accounting: Some(Accounting {
                acknowledged: 10,
                acknowledged_missing: 2,
                ..Accounting::default()
            }),
            ..Evidence::default()
        };
        let breaches = lied.breaches(Guarantee::Data);
        assert_eq!(
            list(&breaches),
            "2 acknowledged orders missing from the database"
        );
        for classed_safe in [true, false] {
            for complete in [true, false] {
                assert_eq!(
                    RunVerdict::of(classed_safe, &breaches, complete),
                    RunVerdict::Violation
                );
            }
        }
        let appeared = Evidence {
            accounting: Some(Accounting {
                unacknowledged_present: 1,
                ..Accounting::default()
            }),
            ..Evidence::default()
        };
        assert_eq!(
            RunVerdict::of(false, &appeared.breaches(Guarantee::Data), true),
            RunVerdict::Violation
        );
    }

    #[test]
    fn an_incomplete_history_is_never_safe() {
        let clean = Evidence {
            overlaps: Some(0),
            max_holders: Some(1),
            accounting: Some(Accounting::default()),
            ..Evidence::default()
        };
        let none = clean.breaches(Guarantee::Exclusion);
        assert_eq!(RunVerdict::of(true, &none, false), RunVerdict::Inconclusive);
        assert_eq!(
            RunVerdict::of(false, &none, false),
            RunVerdict::Inconclusive
        );
        // Overlaps read from a history with gaps prove nothing either way.
        let overlapped = Evidence {
            overlaps: Some(3),
            max_holders: Some(2),
            ..clean
        };
        let breaches = overlapped.breaches(Guarantee::Exclusion);
        assert_eq!(
            RunVerdict::of(true, &breaches, false),
            RunVerdict::Inconclusive
        );
        assert_eq!(RunVerdict::of(true, &breaches, true), RunVerdict::Violation);
        // The audit does not depend on the history: oversold stays a violation.
        let oversold = Evidence {
            damage: Damage {
                oversold: 1,
                ..Damage::default()
            },
            ..clean
        };
        assert_eq!(
            RunVerdict::of(true, &oversold.breaches(Guarantee::Exclusion), false),
            RunVerdict::Violation
        );
    }
}
