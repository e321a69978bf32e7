//! failover's variants, dials and model: what each strategy should do when
//! the replica is promoted ([`expect`]), and whether the promoted replica
//! lacks the lock key ([`promoted_lacks_key`], which the debate's rows read).

use crate::scenario::case::Expectation;
use crate::scenario::dials::{self, choice, dials, Choice as _, Shape};
use crate::scenario::params::{Params, Spec};
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};

/// Without and with `WAIT 1` after each lock write; and `WAIT 1`
/// acknowledged by one replica while the other is promoted.
pub const VARIANTS: &[Variant] = &[Variant::NoWait, Variant::Wait1, Variant::Wait1TwoReplicas];

/// Whether the lock write waits for a replica (`WAIT 1`).
pub(super) fn waits(variant: Option<Variant>) -> bool {
    matches!(variant, Some(Variant::Wait1 | Variant::Wait1TwoReplicas))
}

/// The variants' own dials: with two replicas the holder works 1 s (it
/// must still be inside once the fast replica follows the promoted one).
pub fn variant_sets(variant: Option<Variant>) -> &'static [(&'static str, &'static str)] {
    match variant {
        Some(Variant::Wait1TwoReplicas) => &[("work_ms", "1000")],
        _ => &[],
    }
}

choice! {
    /// Which replica is promoted.
    pub enum Promote {
        /// The one behind the delayed link.
        Lagging = "lagging",
        /// The most up to date: with two replicas, the fast one.
        Best = "best",
    }
}

choice! {
    /// What the service does with a `WAIT` that timed out short.
    pub enum WaitCount {
        /// Gives the lock back (the WAIT page's advice).
        Checked = "checked",
        /// Trusts it (the `ignore_wait_count` fault).
        Ignored = "ignored",
    }
}

/// Whether the promoted replica lacks the lock key when `variant` runs:
/// the holder enters once its `WAIT 1` returned (at once without WAIT or
/// with the fast replica's acknowledgement; after the lag, or the WAIT's
/// timeout when shorter and its count ignored), and the replica is
/// promoted `promote_after_ms` later; it lacks the key when that is before
/// the copy (`lag_ms` after the write). The best of two replicas has it; a
/// WAIT timed out and checked lets nobody in. `None`: no WAIT in force.
pub fn promoted_lacks_key(d: &FailoverDials, variant: Option<Variant>) -> bool {
    let entered = match variant {
        Some(Variant::Wait1TwoReplicas) if d.promote == Promote::Best => return false,
        Some(Variant::Wait1) if d.wait_timeout_ms < d.lag_ms => {
            if d.wait_count == WaitCount::Checked {
                return false;
            }
            d.wait_timeout_ms
        }
        Some(Variant::Wait1) => d.lag_ms,
        _ => 0,
    };
    entered + d.promote_after_ms < d.lag_ms
}

/// The single-instance Redis locks only: what each does when the replica
/// is promoted.
pub fn expect(strategy: &StrategyEntry, variant: Option<Variant>, params: &Params) -> Expectation {
    if matches!(
        strategy.name,
        StrategyName::EtcdLease | StrategyName::ZkEphemeralSeq
    ) {
        return Err("this scenario fails over the service's one Redis; etcd and ZooKeeper replicate by consensus".into());
    }
    let d = FailoverDials::of(params);
    // For a lock whose writes do not WAIT, whatever the variant.
    let missing = promoted_lacks_key(&d, None);
    let (expected, why) = match (strategy.kind, variant) {
        (Kind::Validity | Kind::LockTable | Kind::InTransaction | Kind::NotALock | Kind::Session, _) => {
            return Err("this scenario fails over the service's one Redis; it applies to the single-instance Redis locks".into())
        }
        (Kind::Fenced, v) if waits(v) => {
            return Err("fenced does not WAIT for the replica: its wait-1 variants are its no-wait case".into())
        }
        (Kind::Fenced, _) => (Holds, "the promoted replica's older counter yields stale tokens the database refuses"),
        (_, Some(Variant::NoWait)) if missing => (Breaks, "the lock key had not reached the replica when it was promoted"),
        (_, Some(Variant::NoWait)) => (Holds, "the replica was promoted after the lock key reached it (promote_after_ms ≥ lag_ms)"),
        (_, Some(Variant::Wait1)) if waits_for_replica(strategy) && d.wait_timeout_ms < d.lag_ms => {
            if promoted_lacks_key(&d, variant) {
                (Breaks, "WAIT 1 timed out before the copy (wait_timeout_ms < lag_ms) and its count was ignored: the holder entered on a key the promoted replica lacks")
            } else {
                (Holds, "WAIT 1 times out before the copy (wait_timeout_ms < lag_ms): the lock is given back and nobody enters (or the promotion came after the copy)")
            }
        }
        (_, Some(Variant::Wait1TwoReplicas)) if d.promote == Promote::Best => (Holds, "WAIT 1 was acknowledged by a replica, and the most up-to-date one (the larger replication offset) is promoted: it has the key"),
        (_, Some(Variant::Wait1TwoReplicas)) => (Breaks, "WAIT 1 was acknowledged by the fast replica; the lagging one, promoted, lacks the key"),
        // Only the SET NX PX family waits for the replica (WAIT 1).
        (_, _) if waits_for_replica(strategy) => {
            (Holds, "WAIT 1: the holder enters only once the replica has the key")
        }
        _ if missing => (Breaks, "this lock's writes do not WAIT for the replica"),
        _ => (Holds, "the replica was promoted after the lock key reached it (promote_after_ms ≥ lag_ms)"),
    };
    Ok((expected, why.into()))
}

/// The SET NX PX family: the locks whose writes `WAIT` for the replica.
fn waits_for_replica(strategy: &StrategyEntry) -> bool {
    matches!(
        strategy.name,
        StrategyName::SetNxPx | StrategyName::SetNxPxCheckDel | StrategyName::SetNxPxToken
    )
}

dials! {
    /// failover's dials: the promotions are its injections.
    pub struct FailoverDials {
        ttl_ms: u64 = dials::ttl("2000"),
        work_ms: u64 = dials::work("300"),
        promotions: u64 = Shape::count(
            "12",
            "promotions per trial, each an injection judged on its own (`injections` is its alias)",
        ),
        lag_ms: u64 = Shape::count(
            "200",
            "how late the lagging replica's copy of the primary's writes arrives (a proxy on its link)",
        ),
        promote: Promote = Shape::choice(
            Promote::WORDS,
            "lagging",
            "which replica is promoted: the lagging one, or the most up to date (with two replicas the larger replication offset, as Sentinel picks)",
        ),
        wait_timeout_ms: u64 = Shape::ms(
            "1000",
            "the WAIT's bound (SECKILL_REDIS_WAIT_TIMEOUT_MS) in the wait-1 variants; below lag_ms it times out before the copy",
        ),
        wait_count: WaitCount = Shape::choice(
            WaitCount::WORDS,
            "checked",
            "a WAIT that timed out short: the lock given back (checked) or trusted (ignored, the ignore_wait_count fault)",
        ),
        promote_after_ms: u64 = Shape::ms(
            "0",
            "how long after the holder is seen inside the lagging replica is promoted (below lag_ms the lock key has not reached it)",
        ),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = FailoverDials::SPECS;

/// `--quick`: the same fault (a 200 ms lag is short already).
pub const QUICK: &[(&str, &str)] = &[];
