//! The whole-case judge of a scenario: the checks only a scenario makes (did
//! its fault land, did anything contend, was anything sold, was an outage
//! felt, did a crash deadlock), then the audit's breaches through
//! [`seckill_load::judge`].

use super::record::Observed;
use seckill_load::judge::{self, Breach, CaseVerdict, Expected, Guarantee};

/// What a scenario adds to the judge: whether its fault landed, whether it
/// is `crash-holder` (nothing sold after the crash is the finding, not a
/// reason to doubt) or `dependency-loss` (an outage nobody felt proves
/// nothing).
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    /// The fault was proven to land.
    pub fault_landed: bool,
    /// The case kills the holder and watches for the next order.
    pub crash: bool,
    /// The case cuts the dependencies: some request must have failed.
    pub outage: bool,
    /// The strategy takes a lock, so a round must show contention for
    /// it (waits, retries, busy answers, overlaps). A design with no lock
    /// (`pg-atomic`, `redis-lua-stock`) has none to show: its fault
    /// landing and its orders sold make the case conclusive.
    pub locks: bool,
}

/// Judge a case from its observations.
pub fn judge(
    checks: Checks,
    guarantee: Guarantee,
    expected: Expected,
    o: &Observed,
) -> (CaseVerdict, String) {
    let inconclusive = |why: &str| (CaseVerdict::Inconclusive, why.to_owned());
    // A lie to a buyer is never what a design predicts, whatever the fault.
    let lies: Vec<Breach> = o
        .evidence()
        .breaches(guarantee)
        .into_iter()
        .filter(Breach::always_a_violation)
        .collect();
    if !lies.is_empty() {
        return (
            CaseVerdict::Unexpected,
            format!("the service lied to buyers: {}", judge::list(&lies)),
        );
    }
    if !checks.fault_landed {
        return inconclusive("the fault was not proven to land (see the steps)");
    }
    if o.history_errors > 0 {
        return (
            CaseVerdict::Inconclusive,
            format!(
                "the history is incomplete: {} arbiter calls failed",
                o.history_errors
            ),
        );
    }
    if o.accounting.is_none() {
        return inconclusive("the orders could not be read: acknowledgements unchecked");
    }
    if o.orders == 0 && !checks.crash {
        return inconclusive("nothing was sold");
    }
    if checks.locks && !o.contended {
        return inconclusive("no contention: no waits, retries, busy answers or overlaps");
    }
    if checks.outage && o.unavailable + o.errors == 0 {
        return inconclusive("no request failed: the outage was not felt");
    }
    let mut breaches = o.evidence().breaches(guarantee);
    if checks.crash && o.recovered_after_ms.is_none() {
        breaches.push(Breach::Deadlocked);
    }
    let reason = if breaches.is_empty() {
        let mut held = String::from("held: audit exact");
        if guarantee == Guarantee::Exclusion {
            held.push_str(", 0 overlaps");
        } else if o.overlaps > 0 {
            held.push_str(&format!(
                " although {} sections overlapped (stale holders refused: {} rejected)",
                o.overlaps, o.rejected
            ));
        }
        if let Some(ms) = o.recovered_after_ms {
            held.push_str(&format!(", sold again {ms} ms after the crash"));
        }
        held
    } else {
        format!("broke: {}", judge::list(&breaches))
    };
    (CaseVerdict::of(expected, &breaches), reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use seckill_load::api::{AuditRow, Damage};
    use seckill_load::judge::Evidence;
    use seckill_load::load::Accounting;

    /// `run`/`compare` read a product's audit row; a scenario its
    /// `Observed`. The same figures must make the same breaches, and so the
    /// same verdicts, whichever path they took.
    #[test]
    fn scenarios_and_runs_are_held_to_the_same_judge() {
        let row = AuditRow {
            product_id: 1,
            initial_stock: 100,
            stock: -2,
            orders: 103,
            ordered_units: 103,
            damage: Damage {
                oversold: 2,
                lost_updates: 1,
                undersold: 4,
                duplicates: 3,
            },
            negative_stock: true,
        };
        let counts = seckill_load::api::StrategyHistory {
            strategy: "x".into(),
            entries: 90,
            overlaps: 6,
            max_holders: 2,
        };
        let from_run = Evidence::new(
            std::slice::from_ref(&row),
            Some(&counts),
            Some(Accounting::default()),
        );
        let observed = Observed {
            overlaps: 6,
            max_holders: 2,
            damage: row.damage,
            negative_stock: true,
            orders: 103,
            contended: true,
            accounting: Some(Accounting::default()),
            ..Observed::default()
        };
        assert_eq!(observed.evidence(), from_run);
        let breaches = from_run.breaches(Guarantee::Exclusion);
        assert_eq!(breaches.len(), 6, "{breaches:?}");
        let checks = Checks {
            fault_landed: true,
            crash: false,
            outage: false,
            locks: true,
        };
        let (verdict, reason) = judge(checks, Guarantee::Exclusion, Expected::Holds, &observed);
        assert_eq!(verdict, CaseVerdict::Unexpected);
        assert_eq!(reason, format!("broke: {}", judge::list(&breaches)));
        assert!(
            seckill_load::judge::violation_line("x", &breaches).ends_with(&judge::list(&breaches)),
            "the VIOLATION line names every breach"
        );
        // Any one of them alone is enough.
        for only in [
            Observed {
                damage: Damage {
                    oversold: 1,
                    ..Damage::default()
                },
                ..clean()
            },
            Observed {
                damage: Damage {
                    lost_updates: 1,
                    ..Damage::default()
                },
                ..clean()
            },
            Observed {
                damage: Damage {
                    undersold: 1,
                    ..Damage::default()
                },
                ..clean()
            },
            Observed {
                damage: Damage {
                    duplicates: 1,
                    ..Damage::default()
                },
                ..clean()
            },
            Observed {
                negative_stock: true,
                ..clean()
            },
            Observed {
                overlaps: 1,
                max_holders: 2,
                ..clean()
            },
        ] {
            let (verdict, _) = judge(checks, Guarantee::Exclusion, Expected::Holds, &only);
            assert_eq!(verdict, CaseVerdict::Unexpected, "{only:?}");
        }
        let (verdict, _) = judge(checks, Guarantee::Exclusion, Expected::Holds, &clean());
        assert_eq!(verdict, CaseVerdict::AsExpected);
    }

    fn clean() -> Observed {
        Observed {
            orders: 10,
            contended: true,
            max_holders: 1,
            accounting: Some(Accounting::default()),
            ..Observed::default()
        }
    }

    #[test]
    fn a_case_that_could_not_tell_is_inconclusive() {
        let landed = Checks {
            fault_landed: true,
            crash: false,
            outage: false,
            locks: true,
        };
        let missed = Checks {
            fault_landed: false,
            ..landed
        };
        let broken = Observed {
            damage: Damage {
                oversold: 3,
                ..Damage::default()
            },
            ..clean()
        };
        for (checks, observed) in [
            (missed, broken.clone()),
            (
                landed,
                Observed {
                    orders: 0,
                    ..broken
                },
            ),
            (
                landed,
                Observed {
                    contended: false,
                    max_holders: 1,
                    ..clean()
                },
            ),
            (
                Checks {
                    outage: true,
                    ..landed
                },
                clean(),
            ),
        ] {
            let (verdict, why) = judge(checks, Guarantee::Exclusion, Expected::Breaks, &observed);
            assert_eq!(verdict, CaseVerdict::Inconclusive, "{why}");
        }
    }

    #[test]
    fn a_design_without_a_lock_needs_no_contention_to_be_judged() {
        let lockless = Checks {
            fault_landed: true,
            crash: false,
            outage: false,
            locks: false,
        };
        let quiet = Observed {
            contended: false,
            ..clean()
        };
        let (verdict, why) = judge(lockless, Guarantee::Data, Expected::Holds, &quiet);
        assert_eq!(verdict, CaseVerdict::AsExpected, "{why}");
        let undersold = Observed {
            damage: Damage {
                undersold: 3,
                ..Damage::default()
            },
            contended: false,
            ..clean()
        };
        let (verdict, why) = judge(lockless, Guarantee::Data, Expected::Holds, &undersold);
        assert_eq!(verdict, CaseVerdict::Unexpected, "{why}");
        assert_eq!(why, "broke: undersold 3");
        // The same quiet round of a lock cannot tell.
        let locked = Checks {
            locks: true,
            ..lockless
        };
        let (verdict, _) = judge(locked, Guarantee::Data, Expected::Holds, &quiet);
        assert_eq!(verdict, CaseVerdict::Inconclusive);
    }

    #[test]
    fn a_lost_acknowledgement_is_unexpected_even_where_a_break_is_expected() {
        let landed = Checks {
            fault_landed: false,
            crash: false,
            outage: false,
            locks: true,
        };
        let lied = Observed {
            accounting: Some(Accounting {
                acknowledged_missing: 1,
                ..Accounting::default()
            }),
            ..clean()
        };
        for expected in [Expected::Holds, Expected::Breaks] {
            let (verdict, why) = judge(landed, Guarantee::Exclusion, expected, &lied);
            assert_eq!(verdict, CaseVerdict::Unexpected, "{why}");
        }
    }

    #[test]
    fn a_history_with_errors_or_unread_orders_cannot_tell() {
        let landed = Checks {
            fault_landed: true,
            crash: false,
            outage: false,
            locks: true,
        };
        for observed in [
            Observed {
                history_errors: 2,
                ..clean()
            },
            Observed {
                accounting: None,
                ..clean()
            },
        ] {
            let (verdict, why) = judge(landed, Guarantee::Exclusion, Expected::Holds, &observed);
            assert_eq!(verdict, CaseVerdict::Inconclusive, "{why}");
        }
    }
}
