//! The sweeps the debate's rows read: each a scenario, a strategy, a
//! variant, the dials held fixed and the one swept, with points on both
//! sides of its boundary.

use super::rows::Run;
use crate::scenario::Scenario;
use seckill_load::api::{StrategyName, Variant};

// Points on both sides of each boundary, none on it: a point within the
// timing noise of the machine would be undecided whatever the claim. The
// runner then bisects between the two sweep points a flip lies between.
pub(super) const PAUSES: &[&str] = &["0.25ttl", "0.6ttl", "1.2ttl", "2ttl", "3ttl"];
pub(super) const ACQUIRE_PAUSES: &[&str] = &["0.25ttl", "0.45ttl", "0.85ttl", "1.2ttl", "2ttl"];
pub(super) const DELAYS: &[&str] = &["0.1ttl", "0.5ttl", "0.9ttl", "1.5ttl", "2.5ttl"];

pub(super) const GC_REDLOCK_BEFORE: Run = Run {
    id: "gc-redlock-before-check",
    scenario: Scenario::GcPause,
    strategy: StrategyName::Redlock,
    variant: None,
    sets: &[
        ("ttl_ms", "300"),
        ("work_ms", "40"),
        ("users", "6"),
        ("where", "before-check"),
    ],
    sweep: ("pause", PAUSES),
};
pub(super) const GC_REDLOCK_AFTER: Run = Run {
    id: "gc-redlock-after-check",
    sets: &[
        ("ttl_ms", "300"),
        ("work_ms", "40"),
        ("users", "6"),
        ("where", "after-check"),
    ],
    ..GC_REDLOCK_BEFORE
};
pub(super) const GC_TOKEN_AFTER: Run = Run {
    id: "gc-set-nx-px-token-after-check",
    strategy: StrategyName::SetNxPxToken,
    ..GC_REDLOCK_AFTER
};
pub(super) const GC_REDLOCK_CHECK_AND_SET: Run = Run {
    id: "gc-redlock-check-and-set",
    sets: &[
        ("ttl_ms", "300"),
        ("work_ms", "40"),
        ("users", "6"),
        ("where", "after-check"),
        ("check_token", "on"),
    ],
    ..GC_REDLOCK_BEFORE
};
pub(super) const GC_FENCED_AFTER: Run = Run {
    id: "gc-fenced-after-check",
    strategy: StrategyName::Fenced,
    ..GC_REDLOCK_AFTER
};
pub(super) const NET_TOKEN: Run = Run {
    id: "net-set-nx-px-token",
    scenario: Scenario::SlowNetwork,
    strategy: StrategyName::SetNxPxToken,
    variant: None,
    sets: &[("ttl_ms", "400"), ("work_ms", "100")],
    sweep: ("delay", DELAYS),
};
pub(super) const NET_REDLOCK_SHORT: Run = Run {
    id: "net-redlock-node-timeout-50",
    strategy: StrategyName::Redlock,
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "100"),
        ("node_timeout_ms", "50"),
    ],
    ..NET_TOKEN
};
pub(super) const NET_REDLOCK_LONG: Run = Run {
    id: "net-redlock-node-timeout-3000",
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "100"),
        ("node_timeout_ms", "3000"),
    ],
    ..NET_REDLOCK_SHORT
};
// The per-node timeout swept at one delay (0.9 TTL: a vote that arrives
// leaves 34 ms of validity for 100 ms of work): below the delay no late
// vote counts; above it they all do.
pub(super) const NET_REDLOCK_TIMEOUTS: Run = Run {
    id: "net-redlock-node-timeouts",
    sets: &[("ttl_ms", "400"), ("work_ms", "100"), ("delay", "0.9ttl")],
    sweep: ("node_timeout_ms", &["50", "200", "500", "1000"]),
    ..NET_REDLOCK_SHORT
};
// The per-node timeout at the bound TTL − work − drift (400 − 100 − 6 =
// 294 ms), the delay swept on both sides of it: a vote within the
// timeout leaves at least the work's validity, a later one is dropped.
pub(super) const NET_REDLOCK_AT_BOUND: Run = Run {
    id: "net-redlock-node-timeout-at-bound",
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "100"),
        ("node_timeout_ms", "294"),
    ],
    sweep: ("delay", &["0.5ttl", "250", "280", "290", "300", "0.9ttl"]),
    ..NET_REDLOCK_SHORT
};
pub(super) const ACQ_CHECK: Run = Run {
    id: "acquire-redlock-check",
    scenario: Scenario::AcquirePause,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Check),
    sets: &[("ttl_ms", "400"), ("work_ms", "100"), ("users", "6")],
    sweep: ("pause", ACQUIRE_PAUSES),
};
pub(super) const ACQ_NO_CHECK: Run = Run {
    id: "acquire-redlock-no-check",
    variant: Some(Variant::NoCheck),
    ..ACQ_CHECK
};
pub(super) const ACQ_BOTH: Run = Run {
    id: "acquire-redlock-both-clients",
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "100"),
        ("users", "6"),
        ("stopped", "both"),
    ],
    ..ACQ_CHECK
};
pub(super) const JUMP: Run = Run {
    id: "clock-jump-redlock",
    scenario: Scenario::ClockJump,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::PartitionJump),
    sets: &[("ttl_ms", "1000"), ("work_ms", "300")],
    // The model's boundary: jump = TTL − work (0.7 TTL).
    sweep: ("jump", &["0.3ttl", "0.5ttl", "0.9ttl", "1.5ttl"]),
};
pub(super) const JUMP_CONTROL: Run = Run {
    id: "clock-jump-control",
    variant: Some(Variant::Partition),
    // The work is the dial swept: only the TTL is held.
    sets: &[("ttl_ms", "1000")],
    sweep: ("work_ms", &["100", "300"]),
    ..JUMP
};
pub(super) const RESTART_DELAY: Run = Run {
    id: "restart-delay-redlock",
    scenario: Scenario::RedlockRestart,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000")],
    // The model's boundary: the delay = the work (0.5 TTL); the docs'
    // remedy is 1 TTL, tested at three delays beyond it (60 injections).
    sweep: (
        "restart_delay",
        &["0", "0.25ttl", "0.75ttl", "1.1ttl", "1.3ttl", "2ttl"],
    ),
};
// The docs' remedy (1.3 TTL) timed on node 3's host clock, which jumps
// forward as node 3 crashes: the model's boundary is delay − jump = the
// work (jump = 0.8 TTL).
pub(super) const RESTART_JUMP: Run = Run {
    id: "restart-delay-jump-redlock",
    sets: &[
        ("ttl_ms", "2000"),
        ("work_ms", "1000"),
        ("restart_delay", "1.3ttl"),
    ],
    sweep: ("jump", &["0", "0.5ttl", "1ttl", "1.3ttl"]),
    ..RESTART_DELAY
};
pub(super) const FSYNC_POWER: Run = Run {
    id: "fsync-power-cut-redlock",
    scenario: Scenario::RedlockRestart,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("crash", "power")],
    // In order of how much reaches the disk at once: no AOF, the kernel's
    // own sync (`no`), once a second, at every write.
    sweep: ("persistence", &["none", "no", "everysec", "always"]),
};
pub(super) const FSYNC_PROCESS: Run = Run {
    id: "fsync-kill-9-redlock",
    sets: &[
        ("ttl_ms", "2000"),
        ("work_ms", "1000"),
        ("crash", "process"),
    ],
    sweep: ("persistence", &["no", "everysec", "always"]),
    ..FSYNC_POWER
};
// everysec's window: the power cut `crash_after_ms` after the holder is
// seen inside; it works 2 s, so it is still inside at the latest cut.
// Redis syncs at the first write of each wall-clock second, so a SET is
// lost only when a sync already ran in its second and the next second
// has not come: the rate falls from about 1 at 0 to 0 near 1.1 s, a ramp,
// not a step. No fixed point sits where the ramp crosses the 25 % line
// (about 0.75 s); the bisection finds the last loss seen.
pub(super) const EVERYSEC_WINDOW: Run = Run {
    id: "everysec-window-redlock",
    sets: &[
        ("ttl_ms", "3000"),
        ("work_ms", "2000"),
        ("persistence", "everysec"),
        ("crash", "power"),
    ],
    sweep: ("crash_after_ms", &["0", "400", "1200", "1600"]),
    ..FSYNC_POWER
};
// Redlock's majority counter as a fencing token (check_revision=on): node
// 3 shares every majority, so its count is the token while it keeps it.
pub(super) const FENCE_PERSISTENCE: Run = Run {
    id: "majority-counter-redlock",
    scenario: Scenario::RedlockRestart,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[
        ("ttl_ms", "2000"),
        ("work_ms", "1000"),
        ("crash", "process"),
        ("check_revision", "on"),
    ],
    // kill -9: any AOF keeps the counter, none loses it.
    sweep: ("persistence", &["none", "everysec", "always"]),
};
pub(super) const NET_PG_REDLOCK: Run = Run {
    id: "net-postgres-redlock",
    scenario: Scenario::SlowNetwork,
    strategy: StrategyName::Redlock,
    variant: None,
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "150"),
        ("link", "postgres"),
        ("where", "after-check"),
    ],
    // The model's boundary: 3 trips after the check × delay + work = TTL
    // (delay ≈ 0.21 TTL).
    sweep: (
        "delay",
        &["0.05ttl", "0.1ttl", "0.4ttl", "0.8ttl", "1.5ttl"],
    ),
};
// The same link, the delay beginning wherever a's sections are: the
// model's boundary is a section begun under the delay, 6 trips × delay +
// work = TTL (delay ≈ 0.1 TTL).
pub(super) const NET_PG_ANYWHERE: Run = Run {
    id: "net-postgres-anywhere-redlock",
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "150"),
        ("link", "postgres"),
        ("where", "anywhere"),
    ],
    sweep: ("delay", &["0.05ttl", "0.2ttl", "0.4ttl", "1.5ttl"]),
    ..NET_PG_REDLOCK
};
pub(super) const NET_PG_FENCED: Run = Run {
    id: "net-postgres-fenced",
    strategy: StrategyName::Fenced,
    ..NET_PG_REDLOCK
};
// The failover's own boundary: the promotion against the replication lag
// (200 ms). The holder works 1 s, below the TTL (2 s): still inside when
// the latest promotion (600 ms after entry) and the rush come.
pub(super) const PROMOTIONS: &[&str] = &["0", "100", "300", "600"];
pub(super) const FAILOVER_NO_WAIT: Run = Run {
    id: "failover-no-wait",
    scenario: Scenario::Failover,
    strategy: StrategyName::SetNxPxToken,
    variant: Some(Variant::NoWait),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("lag_ms", "200")],
    sweep: ("promote_after_ms", PROMOTIONS),
};
pub(super) const FAILOVER_WAIT: Run = Run {
    id: "failover-wait-1",
    variant: Some(Variant::Wait1),
    ..FAILOVER_NO_WAIT
};
// WAIT 1 acknowledged by the fast replica while the lagging one is
// promoted at once: a rate at each lag, the work fixed at 1 s (no longer
// stretched with the lag).
pub(super) const FAILOVER_WAIT_TWO: Run = Run {
    id: "failover-wait-1-two-replicas",
    variant: Some(Variant::Wait1TwoReplicas),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000")],
    sweep: ("lag_ms", &["100", "400"]),
    ..FAILOVER_NO_WAIT
};
// WAIT 1 bounded below and above the lag (200 ms), its count ignored by
// the client (the ignore_wait_count fault); promoted at once.
pub(super) const FAILOVER_WAIT_IGNORED: Run = Run {
    id: "failover-wait-1-count-ignored",
    variant: Some(Variant::Wait1),
    sets: &[
        ("ttl_ms", "2000"),
        ("work_ms", "1000"),
        ("lag_ms", "200"),
        ("wait_count", "ignored"),
    ],
    sweep: ("wait_timeout_ms", &["50", "150", "400"]),
    ..FAILOVER_NO_WAIT
};
// The same two replicas and WAIT 1, the best one promoted (the fast one,
// which acknowledged) at three lags: 60 injections (the lagging one
// promoted is FAILOVER_WAIT_TWO).
pub(super) const FAILOVER_BEST: Run = Run {
    id: "failover-wait-1-best-replica",
    variant: Some(Variant::Wait1TwoReplicas),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("promote", "best")],
    sweep: ("lag_ms", &["100", "200", "400"]),
    ..FAILOVER_NO_WAIT
};
pub(super) const FAILOVER_FENCED: Run = Run {
    id: "failover-fenced",
    strategy: StrategyName::Fenced,
    ..FAILOVER_NO_WAIT
};
// Slews on both sides of each drift factor's boundary (about 4.6 % with
// the reference 0.01, 3.5 % with 0, 15.5 % with 0.1, at TTL 1000 ms and
// the scenario's 40 ms margin for the write: a smaller margin leaves a
// few ms of slack below the boundary, within a busy machine's scheduling
// noise, and a break there would be the noise's, not the slew's).
pub(super) const SLEWS: &[&str] = &["1", "2", "6", "10"];
pub(super) const CLOCK_SLEW: &[(&str, &str)] = &[
    ("ttl_ms", "1000"),
    ("margin_ms", "40"),
    ("users", "2"),
    ("drift_factor", "0.01"),
];
pub(super) const DRIFT_DEFAULT: Run = Run {
    id: "clock-slew-drift-0.01",
    scenario: Scenario::ClockSlew,
    strategy: StrategyName::Redlock,
    variant: None,
    sets: CLOCK_SLEW,
    sweep: ("slew_pct", SLEWS),
};
pub(super) const DRIFT_ZERO: Run = Run {
    id: "clock-slew-drift-0",
    sets: &[
        ("ttl_ms", "1000"),
        ("margin_ms", "40"),
        ("users", "2"),
        ("drift_factor", "0"),
    ],
    ..DRIFT_DEFAULT
};
// antirez's premise: a drift allowance as large as the clock error he
// allows (10 %), swept over slews up to 15 %.
pub(super) const DRIFT_TENTH: Run = Run {
    id: "clock-slew-drift-0.1",
    sets: &[
        ("ttl_ms", "1000"),
        ("margin_ms", "40"),
        ("users", "2"),
        ("drift_factor", "0.1"),
    ],
    sweep: ("slew_pct", &["1", "6", "10", "13", "20"]),
    ..DRIFT_DEFAULT
};

// The same premise with the client's own clock slow instead of the
// nodes' fast (the model's boundary: work / (1 − slew) + the write = TTL,
// about 13.5 %).
pub(super) const CLIENT_SLOW_TENTH: Run = Run {
    id: "clock-slew-client-drift-0.1",
    sets: &[
        ("ttl_ms", "1000"),
        ("margin_ms", "40"),
        ("users", "2"),
        ("drift_factor", "0.1"),
        ("clock", "client"),
    ],
    sweep: ("slew_pct", &["1", "6", "10", "20"]),
    ..DRIFT_DEFAULT
};
