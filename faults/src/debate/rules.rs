//! What each row reads: the model's rule at a point of its sweep (the
//! scenarios' own, [`crate::scenario::predictions`]) and where the
//! source's claim applies, with the claims and quotes rows share.

use super::rows::{Claim, Kind};
use crate::scenario::predictions;
use crate::scenario::typed::*;
use crate::scenario::Params;
use seckill_load::api::Variant;
use seckill_load::judge::Expected;

pub(super) fn yes(b: bool) -> Expected {
    if b {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

pub(super) fn breaks(_: &Params) -> Expected {
    Expected::Breaks
}

pub(super) fn holds(_: &Params) -> Expected {
    Expected::Holds
}

pub(super) fn postgres_write_late(p: &Params) -> Expected {
    predictions::postgres_damage(seckill_load::api::Kind::Validity, &SlowNetworkDials::of(p))
}

pub(super) fn outlived(p: &Params) -> Expected {
    yes(predictions::outlived(&GcPauseDials::of(p)))
}

pub(super) fn late_grant(p: &Params) -> Expected {
    yes(predictions::late_grant_breaks(&SlowNetworkDials::of(p)))
}

pub(super) fn redlock_delay(p: &Params) -> Expected {
    let d = SlowNetworkDials::of(p);
    yes(predictions::votes_arrive(&d) && predictions::short_validity(d.ttl_ms, d.work_ms, d.delay))
}

pub(super) fn acquire_check(p: &Params) -> Expected {
    let d = AcquirePauseDials::of(p);
    yes(predictions::short_validity(d.ttl_ms, d.work_ms, d.pause))
}

pub(super) fn acquire_no_check(p: &Params) -> Expected {
    yes(predictions::unchecked_outlived(&AcquirePauseDials::of(p)))
}

pub(super) fn failover_key_missing(p: &Params) -> Expected {
    yes(promoted_before_the_copy(p))
}

// Where each source's claim applies, as the source states it.

pub(super) fn everywhere(_: &Params) -> bool {
    true
}

pub(super) fn acquire_pause_over_ttl(p: &Params) -> bool {
    let d = AcquirePauseDials::of(p);
    d.pause > d.ttl_ms
}

pub(super) fn pause_over_ttl(p: &Params) -> bool {
    let d = GcPauseDials::of(p);
    d.pause > d.ttl_ms
}

pub(super) fn delay_over_ttl(p: &Params) -> bool {
    let d = SlowNetworkDials::of(p);
    d.delay > d.ttl_ms
}

pub(super) fn jump_over_ttl(p: &Params) -> bool {
    let d = ClockJumpDials::of(p);
    d.jump >= d.ttl_ms
}

pub(super) fn restart_delay_over_ttl(p: &Params) -> bool {
    let d = RedlockRestartDials::of(p);
    d.restart_delay > d.ttl_ms
}

/// The cut comes 1.2 s or more after the SET.
pub(super) fn cut_a_sync_later(p: &Params) -> bool {
    RedlockRestartDials::of(p).crash_after_ms >= 1200
}

pub(super) fn jump_of_a_ttl(p: &Params) -> bool {
    let d = RedlockRestartDials::of(p);
    d.jump >= d.ttl_ms
}

/// Node 3 comes back without what it held (no AOF).
pub(super) fn counter_lost(p: &Params) -> bool {
    RedlockRestartDials::of(p).persistence == Persistence::None
}

pub(super) fn everysec(p: &Params) -> bool {
    RedlockRestartDials::of(p).persistence == Persistence::Everysec
}

pub(super) fn slew_up_to_ten_pct(p: &Params) -> bool {
    ClockSlewDials::of(p).slew_pct <= 10.0
}

pub(super) fn timeout_within_ttl_minus_work(p: &Params) -> bool {
    let d = SlowNetworkDials::of(p);
    d.node_timeout_ms + predictions::drift_ms(d.ttl_ms) <= d.ttl_ms.saturating_sub(d.work_ms)
}

/// Where the late votes count: the node timeout longer than the delay.
pub(super) fn timeout_over_delay(p: &Params) -> bool {
    predictions::votes_arrive(&SlowNetworkDials::of(p))
}

pub(super) fn slew_from_four_pct(p: &Params) -> bool {
    ClockSlewDials::of(p).slew_pct >= 4.0
}

/// antirez: a quorum that came too late is refused; one in time leaves
/// the work its validity (he concedes that a validity shorter than the work breaks exclusion,
/// as with any auto-release lock: those delays are shown, not judged).
pub(super) fn delay_leaves_work_its_validity(p: &Params) -> bool {
    let d = SlowNetworkDials::of(p);
    !predictions::short_validity(d.ttl_ms, d.work_ms, d.delay)
}

pub(super) fn wait_times_out(p: &Params) -> bool {
    let d = FailoverDials::of(p);
    d.wait_timeout_ms < d.lag_ms
}

pub(super) fn best_promoted(p: &Params) -> bool {
    FailoverDials::of(p).promote == Promote::Best
}

pub(super) fn promoted_before_the_copy(p: &Params) -> bool {
    predictions::promoted_lacks_key(&FailoverDials::of(p), Some(Variant::NoWait))
}

/// The Redis docs' "only as long as", its necessary side: a quorum that
/// leaves some validity, but less than the work.
pub(super) fn work_outlives_validity(p: &Params) -> bool {
    let d = AcquirePauseDials::of(p);
    predictions::short_validity(d.ttl_ms, d.work_ms, d.pause)
}

pub(super) const NEVER_ANYWHERE: Claim = Claim {
    kind: Kind::Never,
    applies: everywhere,
    applies_text: "at every point of the sweep",
    applies_zh: "扫描的每一个点",
};

pub(super) const CAN_HAPPEN_ANYWHERE: Claim = Claim {
    kind: Kind::CanHappen,
    applies: everywhere,
    applies_text: "at every point of the sweep",
    applies_zh: "扫描的每一个点",
};

pub(super) const FENCING_QUOTE: &str =
    "you need to include a fencing token with every write request to the storage service";
pub(super) const FENCING_ZH: &str =
    "你需要在每一次写存储服务的请求里带上一个 fencing token（防护令牌）";
