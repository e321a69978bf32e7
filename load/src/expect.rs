//! What a strategy is expected to do under the faults in force, for
//! `run`/`compare` (fault-aware verdicts). The scenarios' expectations live
//! beside each scenario's fault script (`seckill_faults::scenario`, which builds on this crate).
//!
//! A strategy's class (`safety` of `GET /admin/strategies`) says what it
//! promises with no fault; its `kind` says how it is built, so which fault
//! aims at its weak point: a within-TTL lock under a pause or work longer
//! than its TTL, any lock taken around the section under
//! `unlock_before_commit`, are *expected* to break — the teacher meant it —
//! and are reported `expected-unsafe`, not `VIOLATION`. Both come from the
//! service: there is no table of names here, so a new strategy cannot
//! silently land in the wrong class.

use crate::api::{Faults, Kind, Safety, StrategyEntry};

/// Why a strategy of `kind` is expected to break under `faults` with locks
/// of `ttl_ms`, or `None` when it should hold.
pub fn breaks_under(kind: Kind, faults: &Faults, ttl_ms: u64) -> Option<String> {
    let external = matches!(
        kind,
        Kind::NoExpiry | Kind::Ttl | Kind::Lease | Kind::Validity | Kind::LockTable | Kind::Session
    );
    if external && faults.unlock_before_commit {
        return Some("unlock_before_commit: the next holder reads before the commit".into());
    }
    let expiring = matches!(kind, Kind::Ttl | Kind::Validity | Kind::LockTable);
    let (work, pause) = (faults.work_delay_ms, faults.pause_ms);
    if expiring && work >= ttl_ms {
        return Some(format!(
            "work_delay_ms {work} >= the lock's TTL {ttl_ms} ms"
        ));
    }
    if expiring && pause >= ttl_ms {
        return Some(format!("pause_ms {pause} >= the lock's TTL {ttl_ms} ms"));
    }
    let held = faults.acquire_pause_ms;
    if kind == Kind::Validity && faults.skip_validity_check && held >= ttl_ms {
        return Some(format!(
            "acquire_pause_ms {held} >= the lock's TTL {ttl_ms} ms with skip_validity_check: \
             a quorum granted before the pause is trusted after its keys expired"
        ));
    }
    None
}

/// Whether `entry` is classed safe on `replicas` replicas when the faults
/// in force do (`faults_break_it`) or do not aim at it.
pub fn classed_safe(entry: &StrategyEntry, replicas: usize, faults_break_it: bool) -> bool {
    match entry.safety {
        Safety::Unsafe => false,
        Safety::SingleReplica => replicas < 2,
        Safety::SafeWhileHoldersLive | Safety::SafeWithinTtl | Safety::Safe => !faults_break_it,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_aimed_at_a_design_make_it_expected_to_break() {
        let pause = Faults {
            pause_ms: 500,
            work_delay_ms: 2,
            ..Faults::with_work_delay(0)
        };
        assert!(breaks_under(Kind::Ttl, &pause, 300).is_some());
        assert!(breaks_under(Kind::Validity, &pause, 300).is_some());
        // The in-process pause does not stop the watchdog's renewals.
        assert!(breaks_under(Kind::Lease, &pause, 300).is_none());
        assert!(breaks_under(Kind::Fenced, &pause, 300).is_none());
        assert!(breaks_under(Kind::InTransaction, &pause, 300).is_none());
        assert!(breaks_under(Kind::Ttl, &pause, 30_000).is_none());
        let early = Faults {
            unlock_before_commit: true,
            ..Faults::with_work_delay(0)
        };
        assert!(breaks_under(Kind::Lease, &early, 30_000).is_some());
        assert!(breaks_under(Kind::InTransaction, &early, 30_000).is_none());
        assert!(breaks_under(Kind::Fenced, &early, 30_000).is_none());
        // antirez: a pause during acquisition is refused by the validity
        // check; with the check off, Redlock is expected to break.
        let held = Faults {
            acquire_pause_ms: 500,
            ..Faults::with_work_delay(0)
        };
        assert!(breaks_under(Kind::Validity, &held, 300).is_none());
        let unchecked = Faults {
            skip_validity_check: true,
            ..held
        };
        assert!(breaks_under(Kind::Validity, &unchecked, 300).is_some());
        assert!(breaks_under(Kind::Ttl, &unchecked, 300).is_none());
    }
}
