//! The debate's rows and their sources: each claim as its source states
//! it (a quote of at most 25 words a reader finds in the linked text, the
//! claim's kind — "never" or "can happen" — and where along the sweep it
//! applies), our model's prediction beside it, and the sweep that tests
//! both (a scenario, a strategy, a variant, dials held fixed and one
//! swept across the boundary).
//!
//! The model is the scenarios' own ([`crate::scenario::predictions`]):
//! the functions here only say which of its rules a row reads.

use serde::Serialize;

use crate::api::{StrategyName, Variant};
use crate::judge::Expected;
use crate::scenario::predictions;
use crate::scenario::typed::{
    AcquirePauseDials, ClockJumpDials, ClockSlewDials, FailoverDials, GcPauseDials, Persistence,
    Promote, RedlockRestartDials, SlowNetworkDials,
};
use crate::scenario::{Outcome, Params, Scenario};

/// Where a claim comes from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Source {
    /// Who.
    pub author: &'static str,
    /// The text's title.
    pub title: &'static str,
    /// When.
    pub year: u16,
    /// Where to read it.
    pub url: &'static str,
}

pub const KLEPPMANN: Source = Source {
    author: "Martin Kleppmann",
    title: "How to do distributed locking",
    year: 2016,
    url: "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
};

pub const ANTIREZ: Source = Source {
    author: "Salvatore Sanfilippo (antirez)",
    title: "Is Redlock safe?",
    year: 2016,
    url: "http://antirez.com/news/101",
};

pub const REDIS_DOCS: Source = Source {
    author: "the Redis documentation",
    title: "Distributed Locks with Redis",
    year: 2016,
    url: "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
};

pub const REDIS_WAIT: Source = Source {
    author: "the Redis documentation",
    title: "WAIT",
    year: 2015,
    url: "https://redis.io/docs/latest/commands/wait/",
};

pub const DERIVED: Source = Source {
    author: "derived by this project",
    title: "seckill-lab",
    year: 2026,
    url: "",
};

/// What kind of claim a source makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The outcome never happens where the claim applies: supported only
    /// by 0 of n; one violation refutes it.
    Never,
    /// The outcome can happen where the claim applies: supported by k ≥ 1
    /// proven injections; 0 of n leaves it undecided (with its bound).
    CanHappen,
}

/// A source's claim, as the source states it.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    pub kind: Kind,
    /// The points of the sweep the claim speaks of.
    pub applies: fn(&Params) -> bool,
    /// The same, in words ("at every pause longer than the TTL").
    pub applies_text: &'static str,
    /// 同上，中文。
    pub applies_zh: &'static str,
}

/// One sweep that rows read: a scenario, a strategy, a variant, the dials
/// held fixed and the one swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Its name (the report folder `<out>/<id>/`).
    pub id: &'static str,
    /// The scenario.
    pub scenario: Scenario,
    /// The strategy.
    pub strategy: StrategyName,
    /// The variant (`None`: the scenario has one).
    pub variant: Option<Variant>,
    /// Dials held fixed.
    pub sets: &'static [(&'static str, &'static str)],
    /// The dial swept and its values, on both sides of the boundary.
    pub sweep: (&'static str, &'static [&'static str]),
}

/// One claim of the debate.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Stable id.
    pub id: &'static str,
    /// Who made it.
    pub source: Source,
    /// Their words, at most 25 (empty for a derived claim).
    pub quote: &'static str,
    /// 引文的中文译文（空：本项目自己的论断）。
    pub quote_zh: &'static str,
    /// The claim, in our words.
    pub claim: &'static str,
    /// 论断，中文。
    pub claim_zh: &'static str,
    /// What the source claims, judged against the data.
    pub states: Claim,
    /// What really happens, to which process, node or link.
    pub mechanism: &'static str,
    /// The sweep that tests it.
    pub run: Run,
    /// The outcome the claim is about.
    pub outcome: Outcome,
    /// What our model predicts at a point of the sweep.
    pub predicts: fn(&Params) -> Expected,
    /// The same, in words.
    pub predicts_text: &'static str,
}

// Points on both sides of each boundary, none on it: a point within the
// timing noise of the machine would be undecided whatever the claim. The
// runner then bisects between the two sweep points a flip lies between.
const PAUSES: &[&str] = &["0.25ttl", "0.6ttl", "1.2ttl", "2ttl", "3ttl"];
const ACQUIRE_PAUSES: &[&str] = &["0.25ttl", "0.45ttl", "0.85ttl", "1.2ttl", "2ttl"];
const DELAYS: &[&str] = &["0.1ttl", "0.5ttl", "0.9ttl", "1.5ttl", "2.5ttl"];

const GC_REDLOCK_BEFORE: Run = Run {
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
const GC_REDLOCK_AFTER: Run = Run {
    id: "gc-redlock-after-check",
    sets: &[
        ("ttl_ms", "300"),
        ("work_ms", "40"),
        ("users", "6"),
        ("where", "after-check"),
    ],
    ..GC_REDLOCK_BEFORE
};
const GC_TOKEN_AFTER: Run = Run {
    id: "gc-set-nx-px-token-after-check",
    strategy: StrategyName::SetNxPxToken,
    ..GC_REDLOCK_AFTER
};
const GC_REDLOCK_CHECK_AND_SET: Run = Run {
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
const GC_FENCED_AFTER: Run = Run {
    id: "gc-fenced-after-check",
    strategy: StrategyName::Fenced,
    ..GC_REDLOCK_AFTER
};
const NET_TOKEN: Run = Run {
    id: "net-set-nx-px-token",
    scenario: Scenario::SlowNetwork,
    strategy: StrategyName::SetNxPxToken,
    variant: None,
    sets: &[("ttl_ms", "400"), ("work_ms", "100")],
    sweep: ("delay", DELAYS),
};
const NET_REDLOCK_SHORT: Run = Run {
    id: "net-redlock-node-timeout-50",
    strategy: StrategyName::Redlock,
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "100"),
        ("node_timeout_ms", "50"),
    ],
    ..NET_TOKEN
};
const NET_REDLOCK_LONG: Run = Run {
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
const NET_REDLOCK_TIMEOUTS: Run = Run {
    id: "net-redlock-node-timeouts",
    sets: &[("ttl_ms", "400"), ("work_ms", "100"), ("delay", "0.9ttl")],
    sweep: ("node_timeout_ms", &["50", "200", "500", "1000"]),
    ..NET_REDLOCK_SHORT
};
const ACQ_CHECK: Run = Run {
    id: "acquire-redlock-check",
    scenario: Scenario::AcquirePause,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Check),
    sets: &[("ttl_ms", "400"), ("work_ms", "100"), ("users", "6")],
    sweep: ("pause", ACQUIRE_PAUSES),
};
const ACQ_NO_CHECK: Run = Run {
    id: "acquire-redlock-no-check",
    variant: Some(Variant::NoCheck),
    ..ACQ_CHECK
};
const JUMP: Run = Run {
    id: "clock-jump-redlock",
    scenario: Scenario::ClockJump,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::PartitionJump),
    sets: &[("ttl_ms", "1000"), ("work_ms", "300")],
    // The model's boundary: jump = TTL − work (0.7 TTL).
    sweep: ("jump", &["0.3ttl", "0.5ttl", "0.9ttl", "1.5ttl"]),
};
const JUMP_CONTROL: Run = Run {
    id: "clock-jump-control",
    variant: Some(Variant::Partition),
    sweep: ("work_ms", &["100", "300"]),
    ..JUMP
};
const RESTART_DELAY: Run = Run {
    id: "restart-delay-redlock",
    scenario: Scenario::RedlockRestart,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000")],
    // The model's boundary: the delay = the work (0.5 TTL); the docs'
    // remedy is 1 TTL.
    sweep: ("restart_delay", &["0", "0.25ttl", "0.75ttl", "1.3ttl"]),
};
// The docs' remedy (1.3 TTL) timed on node 3's host clock, which jumps
// forward as node 3 crashes: the model's boundary is delay − jump = the
// work (jump = 0.8 TTL).
const RESTART_JUMP: Run = Run {
    id: "restart-delay-jump-redlock",
    sets: &[
        ("ttl_ms", "2000"),
        ("work_ms", "1000"),
        ("restart_delay", "1.3ttl"),
    ],
    sweep: ("jump", &["0", "0.5ttl", "1ttl", "1.3ttl"]),
    ..RESTART_DELAY
};
const FSYNC_POWER: Run = Run {
    id: "fsync-power-cut-redlock",
    scenario: Scenario::RedlockRestart,
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("crash", "power")],
    // In order of how much reaches the disk at once: no AOF, the kernel's
    // own sync (`no`), once a second, at every write.
    sweep: ("persistence", &["none", "no", "everysec", "always"]),
};
const FSYNC_PROCESS: Run = Run {
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
const EVERYSEC_WINDOW: Run = Run {
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
const FENCE_PERSISTENCE: Run = Run {
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
const NET_PG_REDLOCK: Run = Run {
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
const NET_PG_ANYWHERE: Run = Run {
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
const NET_PG_FENCED: Run = Run {
    id: "net-postgres-fenced",
    strategy: StrategyName::Fenced,
    ..NET_PG_REDLOCK
};
// The failover's own boundary: the promotion against the replication lag
// (200 ms). The holder works 1 s, below the TTL (2 s): still inside when
// the latest promotion (600 ms after entry) and the rush come.
const PROMOTIONS: &[&str] = &["0", "100", "300", "600"];
const FAILOVER_NO_WAIT: Run = Run {
    id: "failover-no-wait",
    scenario: Scenario::Failover,
    strategy: StrategyName::SetNxPxToken,
    variant: Some(Variant::NoWait),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("lag_ms", "200")],
    sweep: ("promote_after_ms", PROMOTIONS),
};
const FAILOVER_WAIT: Run = Run {
    id: "failover-wait-1",
    variant: Some(Variant::Wait1),
    ..FAILOVER_NO_WAIT
};
// WAIT 1 acknowledged by the fast replica while the lagging one is
// promoted at once: a rate at each lag, the work fixed at 1 s (no longer
// stretched with the lag).
const FAILOVER_WAIT_TWO: Run = Run {
    id: "failover-wait-1-two-replicas",
    variant: Some(Variant::Wait1TwoReplicas),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000")],
    sweep: ("lag_ms", &["100", "400"]),
    ..FAILOVER_NO_WAIT
};
// WAIT 1 bounded below and above the lag (200 ms), its count ignored by
// the client (the ignore_wait_count fault); promoted at once.
const FAILOVER_WAIT_IGNORED: Run = Run {
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
// The same two replicas and WAIT 1, the lag fixed (200 ms): the lagging
// replica promoted, or the best one (the fast one, which acknowledged).
const FAILOVER_BEST: Run = Run {
    id: "failover-wait-1-best-replica",
    variant: Some(Variant::Wait1TwoReplicas),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("lag_ms", "200")],
    sweep: ("promote", &["lagging", "best"]),
    ..FAILOVER_NO_WAIT
};
const FAILOVER_FENCED: Run = Run {
    id: "failover-fenced",
    strategy: StrategyName::Fenced,
    ..FAILOVER_NO_WAIT
};
// Slews on both sides of each drift factor's boundary (about 4.6 % with
// the reference 0.01, 3.5 % with 0, 15.5 % with 0.1, at TTL 1000 ms and
// the scenario's 40 ms margin for the write: a smaller margin leaves a
// few ms of slack below the boundary, within a busy machine's scheduling
// noise, and a break there would be the noise's, not the slew's).
const SLEWS: &[&str] = &["1", "2", "6", "10"];
const CLOCK_SLEW: &[(&str, &str)] = &[
    ("ttl_ms", "1000"),
    ("margin_ms", "40"),
    ("users", "2"),
    ("drift_factor", "0.01"),
];
const DRIFT_DEFAULT: Run = Run {
    id: "clock-slew-drift-0.01",
    scenario: Scenario::ClockSlew,
    strategy: StrategyName::Redlock,
    variant: None,
    sets: CLOCK_SLEW,
    sweep: ("slew_pct", SLEWS),
};
const DRIFT_ZERO: Run = Run {
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
const DRIFT_TENTH: Run = Run {
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
const CLIENT_SLOW_TENTH: Run = Run {
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

fn yes(b: bool) -> Expected {
    if b {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

fn breaks(_: &Params) -> Expected {
    Expected::Breaks
}

fn holds(_: &Params) -> Expected {
    Expected::Holds
}

fn postgres_write_late(p: &Params) -> Expected {
    predictions::postgres_damage(crate::api::Kind::Validity, &SlowNetworkDials::of(p))
}

fn outlived(p: &Params) -> Expected {
    yes(predictions::outlived(&GcPauseDials::of(p)))
}

fn late_grant(p: &Params) -> Expected {
    yes(predictions::late_grant_breaks(&SlowNetworkDials::of(p)))
}

fn redlock_delay(p: &Params) -> Expected {
    let d = SlowNetworkDials::of(p);
    yes(predictions::votes_arrive(&d) && predictions::short_validity(d.ttl_ms, d.work_ms, d.delay))
}

fn acquire_check(p: &Params) -> Expected {
    let d = AcquirePauseDials::of(p);
    yes(predictions::short_validity(d.ttl_ms, d.work_ms, d.pause))
}

fn acquire_no_check(p: &Params) -> Expected {
    yes(predictions::unchecked_outlived(&AcquirePauseDials::of(p)))
}

fn failover_key_missing(p: &Params) -> Expected {
    yes(promoted_before_the_copy(p))
}

// Where each source's claim applies, as the source states it.

fn everywhere(_: &Params) -> bool {
    true
}

fn acquire_pause_over_ttl(p: &Params) -> bool {
    let d = AcquirePauseDials::of(p);
    d.pause > d.ttl_ms
}

fn pause_over_ttl(p: &Params) -> bool {
    let d = GcPauseDials::of(p);
    d.pause > d.ttl_ms
}

fn delay_over_ttl(p: &Params) -> bool {
    let d = SlowNetworkDials::of(p);
    d.delay > d.ttl_ms
}

fn jump_over_ttl(p: &Params) -> bool {
    let d = ClockJumpDials::of(p);
    d.jump >= d.ttl_ms
}

fn restart_delay_over_ttl(p: &Params) -> bool {
    let d = RedlockRestartDials::of(p);
    d.restart_delay > d.ttl_ms
}

/// The cut comes 1.2 s or more after the SET.
fn cut_a_sync_later(p: &Params) -> bool {
    RedlockRestartDials::of(p).crash_after_ms >= 1200
}

fn jump_of_a_ttl(p: &Params) -> bool {
    let d = RedlockRestartDials::of(p);
    d.jump >= d.ttl_ms
}

/// Node 3 comes back without what it held (no AOF).
fn counter_lost(p: &Params) -> bool {
    RedlockRestartDials::of(p).persistence == Persistence::None
}

fn everysec(p: &Params) -> bool {
    RedlockRestartDials::of(p).persistence == Persistence::Everysec
}

fn slew_up_to_ten_pct(p: &Params) -> bool {
    ClockSlewDials::of(p).slew_pct <= 10.0
}

fn timeout_within_ttl_minus_work(p: &Params) -> bool {
    let d = SlowNetworkDials::of(p);
    d.node_timeout_ms <= d.ttl_ms.saturating_sub(d.work_ms)
}

fn slew_from_six_pct(p: &Params) -> bool {
    ClockSlewDials::of(p).slew_pct >= 6.0
}

/// antirez: a quorum that came too late is refused; one in time leaves
/// the work its validity (he sets aside a validity shorter than the work).
fn delay_leaves_work_its_validity(p: &Params) -> bool {
    let d = SlowNetworkDials::of(p);
    !predictions::short_validity(d.ttl_ms, d.work_ms, d.delay)
}

fn wait_times_out(p: &Params) -> bool {
    let d = FailoverDials::of(p);
    d.wait_timeout_ms < d.lag_ms
}

fn best_promoted(p: &Params) -> bool {
    FailoverDials::of(p).promote == Promote::Best
}

fn promoted_before_the_copy(p: &Params) -> bool {
    predictions::promoted_lacks_key(&FailoverDials::of(p), Some(Variant::NoWait))
}

/// The Redis docs: the guarantee holds while the work fits in the
/// validity; a quorum with no validity left is refused (nobody enters).
fn work_fits_validity(p: &Params) -> bool {
    let d = AcquirePauseDials::of(p);
    !predictions::short_validity(d.ttl_ms, d.work_ms, d.pause)
}

const NEVER_ANYWHERE: Claim = Claim {
    kind: Kind::Never,
    applies: everywhere,
    applies_text: "at every point of the sweep",
    applies_zh: "扫描的每一个点",
};

const CAN_HAPPEN_ANYWHERE: Claim = Claim {
    kind: Kind::CanHappen,
    applies: everywhere,
    applies_text: "at every point of the sweep",
    applies_zh: "扫描的每一个点",
};

const FENCING_QUOTE: &str =
    "you need to include a fencing token with every write request to the storage service";
const FENCING_ZH: &str = "你需要在每一次写存储服务的请求里带上一个 fencing token（防护令牌）";

/// The swept claims, in the order of the debate.
pub const ROWS: &[Row] = &[
    Row {
        id: "pause-breaks-redlock",
        source: ANTIREZ,
        quote: "After the expire time, the mutual exclusion guarantee, which is the *main* property of the lock, is gone: another client may already have the lock.",
        quote_zh: "过期时间一到，互斥保证——锁的“首要”性质——就不复存在：别的客户端可能已经拿到了锁。",
        claim: "A process pause longer than the TTL lets a second holder in beside the paused one, Redlock included",
        claim_zh: "进程暂停超过 TTL，第二个持有者就会在被暂停者身旁进入临界区，Redlock 也不例外",
        states: Claim {
            kind: Kind::CanHappen,
            applies: pause_over_ttl,
            applies_text: "at every pause longer than the TTL",
            applies_zh: "暂停长于 TTL 的每一个点",
        },
        mechanism: "replica a's whole process is stopped (SIGSTOP) inside its section, before the lock's last check; its keys expire on every node; b takes the lock and enters; a wakes inside",
        run: GC_REDLOCK_BEFORE,
        outcome: Outcome::ExclusionBroken,
        predicts: outlived,
        predicts_text: "breaks when pause + work > TTL, holds below",
    },
    Row {
        id: "check-before-write-keeps-data",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "When the pause lands before Redlock's validity check, the check refuses the woken holder: exclusion broken, data exact",
        claim_zh: "暂停落在 Redlock 有效期检查之前时，检查会拒绝醒来的持有者：互斥被破坏，数据仍然准确",
        states: NEVER_ANYWHERE,
        mechanism: "the same freeze as the row above; a wakes, its validity (TTL − elapsed − drift) has run out, the check before the write refuses it and nothing is written",
        run: GC_REDLOCK_BEFORE,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every pause",
    },
    Row {
        id: "pause-after-check-redlock",
        source: KLEPPMANN,
        quote: "you cannot prevent the race condition between clients in the case where one client is paused or its packets are delayed",
        quote_zh: "当一个客户端被暂停、或者它的数据包被延迟时，你无法阻止客户端之间的竞争条件",
        claim: "A pause after the last check defeats the check: the woken Redlock holder commits a stale write",
        claim_zh: "暂停落在最后一次检查之后，检查就失效了：醒来的 Redlock 持有者提交了过时的写",
        states: Claim {
            kind: Kind::CanHappen,
            applies: pause_over_ttl,
            applies_text: "at every pause longer than the lease (the TTL)",
            applies_zh: "暂停长于租约（TTL）的每一个点",
        },
        mechanism: "a is stopped after its validity check and before its write; b takes the expired lock, reads, writes and commits; a wakes and writes the stock it read before b — a lost update",
        run: GC_REDLOCK_AFTER,
        outcome: Outcome::DataDamaged,
        predicts: outlived,
        predicts_text: "breaks when pause + work > TTL, holds below",
    },
    Row {
        id: "pause-after-check-single-redis",
        source: KLEPPMANN,
        quote: "GC can pause a running thread at any point, including the point that is maximally inconvenient for you",
        quote_zh: "GC 可以在任何一点暂停正在运行的线程，包括对你来说最糟糕的那一点",
        claim: "The same pause damages the data under a single Redis SET NX PX with a token",
        claim_zh: "同样的暂停，在单个 Redis 的 SET NX PX（带令牌值）之下也会损坏数据",
        states: Claim {
            kind: Kind::CanHappen,
            applies: pause_over_ttl,
            applies_text: "at every pause longer than the TTL",
            applies_zh: "暂停长于 TTL 的每一个点",
        },
        mechanism: "as the row above, with one Redis and no validity at all: the woken holder writes whatever it read",
        run: GC_TOKEN_AFTER,
        outcome: Outcome::DataDamaged,
        predicts: outlived,
        predicts_text: "breaks when pause + work > TTL, holds below",
    },
    Row {
        id: "fencing-keeps-data",
        source: KLEPPMANN,
        quote: FENCING_QUOTE,
        quote_zh: FENCING_ZH,
        claim: "A fencing token the database checks keeps the data exact through the same pause, after the check",
        claim_zh: "由数据库检查的 fencing token，在同样的（检查之后的）暂停下仍让数据准确",
        states: NEVER_ANYWHERE,
        mechanism: "b's larger token is registered on the product row before b reads; a wakes and its write, conditional on its own token, matches no row",
        run: GC_FENCED_AFTER,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every pause",
    },
    Row {
        id: "random-value-check-and-set-keeps-data",
        source: ANTIREZ,
        quote: "a unique identifier for each lock can be used for the same goals",
        quote_zh: "每把锁一个唯一标识，就可以用来达到同样的目的",
        claim: "Redlock's random value, checked and set by the database, keeps the data exact through the same pause after the check, as a fencing token does",
        claim_zh: "Redlock 的随机值由数据库做“检查并设置”，在检查之后的同样暂停下也能让数据准确，和 fencing token 一样",
        states: NEVER_ANYWHERE,
        mechanism: "each holder writes its random value into the product row before it reads (unconditionally: a random value has no order); b's value overwrites a's while a is stopped; a wakes and its write, conditional on its own value, matches no row",
        run: GC_REDLOCK_CHECK_AND_SET,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every pause",
    },
    Row {
        id: "late-grant-single-redis",
        source: ANTIREZ,
        quote: "the client may receive the \"OK, the lock is your\" too late, when the lock is already expired",
        quote_zh: "客户端可能太晚才收到“好，锁归你了”，而那时锁已经过期",
        claim: "A grant delivered late is acted on by a lock that does not check the time: its key expires while the holder works",
        claim_zh: "不检查时间的锁会照单全收迟到的授予：持有者还在工作，键已经过期",
        states: Claim {
            kind: Kind::CanHappen,
            applies: delay_over_ttl,
            applies_text: "at every delay longer than the TTL",
            applies_zh: "延迟长于 TTL 的每一个点",
        },
        mechanism: "every reply from Redis to replica a is held back by a proxy (requests go at once); a's SET NX succeeds at once, a hears of it `delay` later and enters with less than TTL − delay left",
        run: NET_TOKEN,
        outcome: Outcome::ExclusionBroken,
        predicts: late_grant,
        predicts_text: "breaks when delay + work > TTL, holds below",
    },
    Row {
        id: "node-timeout-drops-late-votes",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "With a per-node timeout far below the TTL, replies later than the timeout never count, and those within it leave almost the whole validity: delayed replies never break exclusion",
        claim_zh: "每个节点的超时远小于 TTL 时，晚于超时的回复永远不计数，超时之内到达的回复几乎留下全部有效期：延迟的回复破坏不了互斥",
        states: NEVER_ANYWHERE,
        mechanism: "a's replies from all three Redlock nodes arrive `delay` late; with a 50 ms node timeout a delay above it loses every vote, below it the votes arrive with almost the whole validity left",
        run: NET_REDLOCK_SHORT,
        outcome: Outcome::ExclusionBroken,
        predicts: redlock_delay,
        predicts_text: "holds at every delay (above the node timeout: no quorum; below: validity ≈ TTL)",
    },
    Row {
        id: "validity-check-refuses-late-quorum",
        source: ANTIREZ,
        quote: "you can add the network delays you want, the lock will always be considered not valid if too much time elapsed",
        quote_zh: "网络延迟你想加多少都行，只要耗时太长，锁就总会被判定为无效",
        claim: "Network delays during acquisition cannot break Redlock where its check answers: a quorum that came too late is refused, one in time leaves the work its validity (antirez sets aside a validity shorter than the work)",
        claim_zh: "获取锁时的网络延迟，在耗时检查管得到的地方破坏不了 Redlock：来得太迟的多数票被拒绝，及时的多数票给工作留下有效期（有效期短于工作的情形 antirez 另作别论）",
        states: Claim {
            kind: Kind::Never,
            applies: delay_leaves_work_its_validity,
            applies_text: "at every delay that leaves the work within the validity, or none (refused)",
            applies_zh: "延迟后剩余有效期仍容得下工作（或已无有效期、被拒绝）的每一个点",
        },
        mechanism: "the votes arrive `delay` late (the node timeout, 3 s, lets them in); validity = TTL − delay − drift: refused above the TTL, trusted below — and trusted even when the validity left is shorter than the work, so the keys expire inside the section",
        run: NET_REDLOCK_LONG,
        outcome: Outcome::ExclusionBroken,
        predicts: redlock_delay,
        predicts_text: "breaks where 0 < TTL − delay − drift < work, holds elsewhere",
    },
    Row {
        id: "node-timeout-below-ttl-minus-work",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "A per-node timeout no longer than TTL − work keeps late votes from leaving the holder less validity than its work: exclusion holds; a longer one lets them count",
        claim_zh: "每节点超时不超过 TTL − 工作时长时，迟到的票不会让持有者的有效期短于工作：互斥成立；超时更长，迟到的票就会被计入",
        states: Claim {
            kind: Kind::Never,
            applies: timeout_within_ttl_minus_work,
            applies_text: "at every node timeout no longer than TTL − work",
            applies_zh: "每节点超时不超过 TTL − 工作时长的每一个点",
        },
        mechanism: "a's replies from the three Redlock nodes arrive 0.9 TTL (360 ms) late; a vote slower than the node timeout is dropped; one within it arrives with 34 ms of validity for 100 ms of work, and the keys expire inside the section",
        run: NET_REDLOCK_TIMEOUTS,
        outcome: Outcome::ExclusionBroken,
        predicts: redlock_delay,
        predicts_text: "breaks once the timeout exceeds the delay (the late votes count, their validity shorter than the work), holds below",
    },
    Row {
        id: "validity-shorter-than-work",
        source: REDIS_DOCS,
        quote: "it is guaranteed only as long as the client holding the lock terminates its work within the lock validity time",
        quote_zh: "只有当持有锁的客户端在锁的有效期内完成工作时，（互斥）才有保证",
        claim: "Exclusion holds wherever the work fits in the validity left after a pause during acquisition",
        claim_zh: "获取锁时被暂停，只要剩下的有效期容得下工作，互斥就成立",
        states: Claim {
            kind: Kind::Never,
            applies: work_fits_validity,
            applies_text: "at every pause that leaves the work within the validity (or no validity: refused)",
            applies_zh: "暂停后剩余有效期仍容得下工作（或已无有效期、被拒绝）的每一个点",
        },
        mechanism: "a is stopped (SIGSTOP) holding a quorum of yes unread; it wakes, its check passes with a short validity, it starts 100 ms of work; its keys expire inside; b enters",
        run: ACQ_CHECK,
        outcome: Outcome::ExclusionBroken,
        predicts: acquire_check,
        predicts_text: "breaks where 0 < TTL − pause − drift < work, holds elsewhere",
    },
    Row {
        id: "acquire-pause-kleppmann",
        source: KLEPPMANN,
        quote: "Client 1 finishes GC, and receives the responses from Redis nodes indicating that it successfully acquired the lock",
        quote_zh: "客户端 1 结束 GC，收到 Redis 各节点的回复，显示它已成功获得锁",
        claim: "A client paused while the responses to its lock requests are in flight wakes believing it holds the lock beside the next holder — Redlock as specified, its elapsed-time check on",
        claim_zh: "客户端在锁请求的回复途中被暂停，醒来后以为自己持有锁，与下一个持有者并存——按规范实现的 Redlock，耗时检查开着",
        states: Claim {
            kind: Kind::CanHappen,
            applies: acquire_pause_over_ttl,
            applies_text: "at every pause longer than the TTL (the locks expired during it)",
            applies_zh: "暂停长于 TTL（锁在暂停中过期）的每一个点",
        },
        mechanism: "a is stopped (SIGSTOP) holding a quorum of yes unread; b takes the expired keys; a wakes, and its check (TTL − elapsed − drift) refuses the quorum once the pause outlasted the TTL",
        run: ACQ_CHECK,
        outcome: Outcome::ExclusionBroken,
        predicts: acquire_check,
        predicts_text: "breaks where 0 < TTL − pause − drift < work, holds elsewhere (above the TTL the check refuses)",
    },
    Row {
        id: "acquire-pause-without-check",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "A client paused during acquisition, trusting the quorum without the elapsed-time check, enters on keys that expire under it",
        claim_zh: "获取锁时被暂停的客户端，若不做耗时检查就相信多数票，会在即将过期的键上进入临界区",
        states: Claim {
            kind: Kind::CanHappen,
            applies: acquire_pause_over_ttl,
            applies_text: "at every pause longer than the TTL (the locks expired during it)",
            applies_zh: "暂停长于 TTL（锁在暂停中过期）的每一个点",
        },
        mechanism: "the same stop; the skip_validity_check fault trusts the quorum as if granted on waking, so every pause with pause + work > TTL lets b in beside a",
        run: ACQ_NO_CHECK,
        outcome: Outcome::ExclusionBroken,
        predicts: acquire_no_check,
        predicts_text: "breaks when pause + work > TTL, holds below",
    },
    Row {
        id: "write-delayed-to-storage",
        source: KLEPPMANN,
        quote: "an application process may send a write request, and it may reach the storage server a minute later when the lease has already expired",
        quote_zh: "应用进程发出的写请求，可能一分钟后才到达存储服务器，而那时租约早已过期",
        claim: "A write delayed on its way to the database lands after the lock expired, past every check: Redlock's validity included",
        claim_zh: "在去数据库的路上被延迟的写，会在锁过期之后落地，绕过一切检查，包括 Redlock 的有效期",
        states: Claim {
            kind: Kind::CanHappen,
            applies: delay_over_ttl,
            applies_text: "at every delay longer than the lease (the TTL)",
            applies_zh: "延迟长于租约（TTL）的每一个点",
        },
        mechanism: "replica a is held at the moment it passes its validity check (its own hook), its requests to PostgreSQL are delayed by `delay` (a proxy; its locks answer at once), and a is let go: the write it sends next, the insert and the commit land late; once they outlast the keys, the next holder reads the stock a read, writes and commits, and a's stale write lands on top: a lost update",
        run: NET_PG_REDLOCK,
        outcome: Outcome::DataDamaged,
        predicts: postgres_write_late,
        predicts_text: "breaks when 3 trips × delay + work > TTL (the write, the insert and the commit, sent after the check), holds below",
    },
    Row {
        id: "write-delayed-anywhere",
        source: KLEPPMANN,
        quote: "an application process may send a write request, and it may reach the storage server a minute later when the lease has already expired",
        quote_zh: "应用进程发出的写请求，可能一分钟后才到达存储服务器，而那时租约早已过期",
        claim: "The same delayed link, begun at a moment the sections do not choose: a section's own time (its work and every late trip) outlasts the lock",
        claim_zh: "同样被延迟的链路，但延迟从临界区无法选择的时刻开始：临界区自身的耗时（工作加上每一次迟到的往返）比锁活得更久",
        states: Claim {
            kind: Kind::CanHappen,
            applies: delay_over_ttl,
            applies_text: "at every delay longer than the lease (the TTL)",
            applies_zh: "延迟长于租约（TTL）的每一个点",
        },
        mechanism: "replica a's requests to PostgreSQL are delayed by `delay` from a moment its sections do not choose (no hook), while buyers press on both replicas; a section begun under the delay sends BEGIN, the read and the duplicate check late before its check and the write, the insert and the commit late after it; the next holder reads and commits before the late commit lands. Past about half the TTL a section begun under the delay fails its check: only one caught between its check and its write is damaged (a race)",
        run: NET_PG_ANYWHERE,
        outcome: Outcome::DataDamaged,
        predicts: postgres_write_late,
        predicts_text: "breaks when 6 trips × delay + work > TTL (a section begun under the delay: its own time is its work and six late trips), holds below",
    },
    Row {
        id: "write-delayed-fenced",
        source: KLEPPMANN,
        quote: FENCING_QUOTE,
        quote_zh: FENCING_ZH,
        claim: "The fence refuses the same delayed write",
        claim_zh: "fencing 会拒绝同样被延迟的写",
        states: NEVER_ANYWHERE,
        mechanism: "the same delayed link; the next holder's larger token is on the product row before a's late write lands, and that write, conditional on a's token, matches no row",
        run: NET_PG_FENCED,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every delay",
    },
    Row {
        id: "clock-jump-partition-control",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "Control: the partition of the clock-jump rows alone keeps one holder at a time",
        claim_zh: "对照组：只有时钟跳变那几行的网络分区、没有跳变时，同一时刻只有一个持有者",
        states: NEVER_ANYWHERE,
        mechanism: "the same five nodes and cut links, node 3 shared, and no jump: every round's holder is alone",
        run: JUMP_CONTROL,
        outcome: Outcome::ExclusionBroken,
        predicts: holds,
        predicts_text: "holds at every work",
    },
    Row {
        id: "clock-jump",
        source: KLEPPMANN,
        quote: "The clock on node C jumps forward, causing the lock to expire.",
        quote_zh: "节点 C 的时钟向前跳，导致锁过期。",
        claim: "A clock jump on one node expires its key early: both sides of a partition reach a majority",
        claim_zh: "一个节点的时钟跳变让它的键提前过期：分区两侧都凑齐了多数",
        states: Claim {
            kind: Kind::CanHappen,
            applies: jump_over_ttl,
            applies_text: "at every jump of at least the TTL (the key surely expires)",
            applies_zh: "跳变不小于 TTL（键必然过期）的每一个点",
        },
        mechanism: "five nodes, a reaching 1,2,3 and b 3,4,5; while a holder is inside, node 3's wall clock (the one Redis expires keys by) jumps forward by `jump`; its key expires and the other side builds a majority on node 3",
        run: JUMP,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::clock_jump(&ClockJumpDials::of(p)),
        predicts_text: "breaks when jump > TTL − work, holds below",
    },
    Row {
        id: "delayed-restart",
        source: REDIS_DOCS,
        quote: "make an instance, after a crash, unavailable for at least a bit more than the max TTL we use",
        quote_zh: "让实例在崩溃后至少保持不可用，时长略多于我们使用的最大 TTL",
        claim: "Remedy: a crashed node kept down longer than the TTL does not give its vote twice",
        claim_zh: "补救：崩溃的节点停机时间超过 TTL，就不会把票投两次",
        states: Claim {
            kind: Kind::Never,
            applies: restart_delay_over_ttl,
            applies_text: "at every restart delay longer than the TTL",
            applies_zh: "重启延迟长于 TTL 的每一个点",
        },
        mechanism: "the same partition; node 3 (no persistence) is killed while a holder is inside and comes back empty after `restart_delay`; the other side builds a majority on it if the holder is still inside",
        run: RESTART_DELAY,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::redlock_restart(&RedlockRestartDials::of(p)),
        predicts_text: "breaks when the delay is shorter than the section (work), holds from there on — the TTL is more than enough",
    },
    Row {
        id: "delayed-restart-clock-jump",
        source: KLEPPMANN,
        quote: "this restart delay again relies on a reasonably accurate measurement of time, and would fail if the clock jumps",
        quote_zh: "这个重启延迟同样依赖于相当准确的时间测量，一旦时钟跳变就会失效",
        claim: "The delayed restart, timed on a clock that jumps forward, brings the node back empty while the holder is inside",
        claim_zh: "用会向前跳变的时钟来计时的延迟重启，会让节点在持有者仍在临界区时清空回来",
        states: Claim {
            kind: Kind::CanHappen,
            applies: jump_of_a_ttl,
            applies_text: "wherever the clock jumps by the TTL or more (Kleppmann names no size)",
            applies_zh: "时钟跳变达到 TTL 或更多（Kleppmann 未给出大小）的每一个点",
        },
        mechanism: "the same partition; node 3 (no persistence) is killed while a holder is inside and its wall clock (the clockshift preload's) jumps forward by `jump`; the supervisor, reading that clock with `date` under the same preload, restarts node 3 once it reads the crash time + 1.3 TTL: after 1.3 TTL − jump of real time (at once from a jump of 1.3 TTL), empty",
        run: RESTART_JUMP,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::redlock_restart(&RedlockRestartDials::of(p)),
        predicts_text: "breaks when the delay less the jump is shorter than the section (work), holds above",
    },
    Row {
        id: "fsync-power-cut",
        source: REDIS_DOCS,
        quote: "If Redis is configured, as by default, to fsync on disk every second, it is possible that after a restart our key is missing.",
        quote_zh: "如果 Redis 按默认配置每秒 fsync 一次，重启之后我们的键可能就不见了。",
        claim: "A crash that loses the page cache can lose the key under appendfsync everysec",
        claim_zh: "丢失页缓存的崩溃，在 appendfsync everysec 下可能丢掉锁的键",
        states: Claim {
            kind: Kind::CanHappen,
            applies: everysec,
            applies_text: "with appendfsync everysec",
            applies_zh: "appendfsync everysec 时",
        },
        mechanism: "node 3 runs under a preload that keeps its AOF's unsynced bytes in process memory; kill -9 then loses them as a power cut would (the bytes lost are in each injection's proof); it restarts at once",
        run: FSYNC_POWER,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::redlock_restart(&RedlockRestartDials::of(p)),
        predicts_text: "breaks with none, no (the kernel syncs seconds later) and everysec (the key written since the last sync is lost), holds with always",
    },
    Row {
        id: "fsync-kill-9",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "kill -9 is not a test of fsync: an AOF with no, everysec or always survives it, because the kernel keeps what was written",
        claim_zh: "kill -9 测不出 fsync 的问题：内核保留了已写入的内容，appendfsync 为 no、everysec 或 always 的 AOF 都能挺过去",
        states: NEVER_ANYWHERE,
        mechanism: "the same restart at once, with a plain kill -9: the page cache survives the process, so no and everysec keep the key as always does",
        run: FSYNC_PROCESS,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::redlock_restart(&RedlockRestartDials::of(p)),
        predicts_text: "holds at every persistence with an AOF (no, everysec, always)",
    },
    Row {
        id: "everysec-window",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "Under appendfsync everysec a power cut never loses a key written 1.2 s or more before it: a sync comes within the second and the next tick",
        claim_zh: "appendfsync everysec 下，断电绝不会丢掉 1.2 秒以前写入的键：一秒之内、再加一个事件循环周期，必有一次同步",
        states: Claim {
            kind: Kind::Never,
            applies: cut_a_sync_later,
            applies_text: "wherever the cut comes 1.2 s or more after the holder is seen inside (crash_after_ms ≥ 1200)",
            applies_zh: "断电发生在持有者进入临界区 1.2 秒及以后的每一个点（crash_after_ms ≥ 1200）",
        },
        mechanism: "node 3 under the power-cut preload with appendfsync everysec; the cut comes `crash_after_ms` after the holder (2 s of work) is seen inside; node 3 restarts at once: without the key, b's side reaches a majority beside the holder",
        run: EVERYSEC_WINDOW,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::redlock_restart(&RedlockRestartDials::of(p)),
        predicts_text: "breaks while the cut can come before everysec's sync (crash_after_ms < 1100: up to a second for the wall clock's second to move, up to 100 ms for the tick that syncs; the rate falls along the way), holds after",
    },
    Row {
        id: "majority-counter-goes-backwards",
        source: KLEPPMANN,
        quote: "Keeping counters on several nodes would mean they would go out of sync.",
        quote_zh: "在多个节点上各自保存计数器，意味着它们会失去同步。",
        claim: "Redlock's fencing token built from counters on its nodes does not grow across a node that restarts empty: the database refuses the newer holder",
        claim_zh: "用 Redlock 各节点上的计数器拼出的 fencing 令牌，跨过一个清空重启的节点就不再增长：数据库拒绝较新的持有者",
        states: Claim {
            kind: Kind::CanHappen,
            applies: counter_lost,
            applies_text: "wherever node 3 comes back without its data (no AOF; Kleppmann names no condition)",
            applies_zh: "节点 3 重启后丢了数据（没有 AOF；Kleppmann 未给出条件）的每一个点",
        },
        mechanism: "the restart's partition (a: nodes 1,2,3; b: 3,4,5); each node's grant also increments its own counter, the holder's token is the largest its majority returned and the database registers it (`check_revision=on`); every counter starts the round at 0; one buyer on a holds the lock (its token is node 3's count), node 3 is killed and restarts at once, then b's buyers rush: b's first token counts from 0 on nodes 3, 4, 5; counted: b's holders refused by the fence",
        run: FENCE_PERSISTENCE,
        outcome: Outcome::Refused,
        predicts: |p| predictions::redlock_refused(&RedlockRestartDials::of(p)),
        predicts_text: "refuses a newer holder whenever node 3 loses its counter (none), never when an AOF keeps it (kill -9 loses nothing written)",
    },
    Row {
        id: "failover-no-wait",
        source: REDIS_DOCS,
        quote: "By doing so we can’t implement our safety property of mutual exclusion, because Redis replication is asynchronous.",
        quote_zh: "这样做就实现不了互斥这一安全性质，因为 Redis 的复制是异步的。",
        claim: "A single Redis with a replica loses the lock on failover when the replica is promoted before the lock key reached it",
        claim_zh: "单个 Redis 加一个副本：若副本在锁键复制过去之前被提升，故障转移就会丢锁",
        states: Claim {
            kind: Kind::CanHappen,
            applies: promoted_before_the_copy,
            applies_text: "wherever the replica is promoted before the replication stream brought the key (promote_after_ms < lag_ms)",
            applies_zh: "副本在复制流带来锁键之前被提升的每一个点（promote_after_ms < lag_ms）",
        },
        mechanism: "one grab on a holds the lock; the replica's copy arrives `lag_ms` (200) late; it is promoted `promote_after_ms` after the holder was seen inside and the service pointed at it; b's rush takes the lock beside a when the key had not arrived",
        run: FAILOVER_NO_WAIT,
        outcome: Outcome::ExclusionBroken,
        predicts: failover_key_missing,
        predicts_text: "breaks when the promotion comes before the copy (promote_after_ms < lag_ms), holds after",
    },
    Row {
        id: "wait-one-replica",
        source: REDIS_WAIT,
        quote: "are guaranteed to be received by the number of replicas returned by `WAIT`",
        quote_zh: "（之前的写命令）保证已被 `WAIT` 返回的那么多个副本收到",
        claim: "With WAIT 1 and the only replica — the one that received the write — promoted, the key is there: the lock survives the failover",
        claim_zh: "有 WAIT 1、且被提升的正是唯一那个收到写入的副本时，键还在：锁挺过了故障转移",
        states: NEVER_ANYWHERE,
        mechanism: "the same promotions; the holder enters only once WAIT 1 says the one replica has the key, and that replica is the one promoted",
        run: FAILOVER_WAIT,
        outcome: Outcome::ExclusionBroken,
        predicts: holds,
        predicts_text: "holds at every promotion time",
    },
    Row {
        id: "wait-acked-by-another-replica",
        source: REDIS_WAIT,
        quote: "it is possible to still lose a write synchronously replicated to multiple replicas",
        quote_zh: "即使一个写入已同步复制到多个副本，仍然可能丢失它",
        claim: "Not guaranteed: WAIT 1 acknowledged by one replica while another, lagging, is promoted loses the lock",
        claim_zh: "并不保证：WAIT 1 由一个副本确认，而被提升的却是另一个落后的副本，锁就丢了",
        states: CAN_HAPPEN_ANYWHERE,
        mechanism: "a second replica on a direct link acknowledges WAIT 1 at once; the lagging one is promoted without the key; the fast one follows it and acknowledges b's WAIT 1 too (the holder works 1 s at every lag)",
        run: FAILOVER_WAIT_TWO,
        outcome: Outcome::ExclusionBroken,
        predicts: breaks,
        predicts_text: "breaks at every lag",
    },
    Row {
        id: "wait-count-ignored",
        source: REDIS_WAIT,
        quote: "the client should check that the returned value is equal or greater to the replication level it demanded",
        quote_zh: "客户端应当检查返回值是否大于等于它所要求的复制级别",
        claim: "A client that does not check WAIT's answer trusts a lock whose WAIT timed out before the replica had it, and loses the lock on failover",
        claim_zh: "不检查 WAIT 返回值的客户端，会相信一把在副本拿到之前 WAIT 就已超时的锁，并在故障转移时丢掉它",
        states: Claim {
            kind: Kind::CanHappen,
            applies: wait_times_out,
            applies_text: "wherever the WAIT times out before the copy arrives (wait_timeout_ms < lag_ms)",
            applies_zh: "WAIT 在副本收到之前超时（wait_timeout_ms < lag_ms）的每一个点",
        },
        mechanism: "one replica, its copy 200 ms late; every lock write waits WAIT 1 for at most `wait_timeout_ms`; the service trusts the lock whatever WAIT answered (`ignore_wait_count`); the replica is promoted as soon as the holder is seen inside, and b's rush tries the lock on it",
        run: FAILOVER_WAIT_IGNORED,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| {
            yes(predictions::promoted_lacks_key(
                &FailoverDials::of(p),
                Some(Variant::Wait1),
            ))
        },
        predicts_text: "breaks when the WAIT times out before the copy (wait_timeout_ms < lag_ms), holds when it waits the copy out",
    },
    Row {
        id: "wait-best-replica-promoted",
        source: REDIS_WAIT,
        quote: "more likely (but not guaranteed) that if the master fails, we'll be able to promote, during a failover, a replica that received the write",
        quote_zh: "更有可能（但不保证）在主节点故障时，于故障转移中提升一个收到了该写入的副本",
        claim: "The WAIT page's premise: when the promoted replica is one that received the write (the one that acknowledged WAIT 1), the lock is kept; the promotion itself is only best-effort",
        claim_zh: "WAIT 页面的前提：被提升的副本若是收到了那次写入的副本（确认了 WAIT 1 的那个），锁就保住了；提升本身只是尽力而为",
        states: Claim {
            kind: Kind::Never,
            applies: best_promoted,
            applies_text: "wherever the replica that received the write is promoted (promote=best)",
            applies_zh: "提升收到了该写入的副本（promote=best）的每一个点",
        },
        mechanism: "the two replicas of the row above, the lag 200 ms; at once after the holder is seen inside, either the lagging replica is promoted or the fast one that acknowledged its WAIT 1 (the other then follows it on a direct link); b's rush then tries the lock on the new primary",
        run: FAILOVER_BEST,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| {
            yes(predictions::promoted_lacks_key(
                &FailoverDials::of(p),
                Some(Variant::Wait1TwoReplicas),
            ))
        },
        predicts_text: "breaks when the lagging replica is promoted before the copy, holds when the best one is",
    },
    Row {
        id: "failover-fenced",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "The database's strict fence check keeps the data exact through a failover, though the counter on the one Redis is not strictly increasing across it (Kleppmann: one node's counter \"would not be sufficient\")",
        claim_zh: "即使唯一那个 Redis 上的计数器在故障转移中不再严格递增（Kleppmann：单节点计数器“不够”），数据库严格的 fence 检查仍让数据准确",
        states: NEVER_ANYWHERE,
        mechanism: "promoted before the copy, the replica's counter lacks a's INCR: b's first token equals a's and the strict `fence_token < token` refuses b's registration; b's later, larger tokens are registered, and a's write, conditional on its own token, then matches no row; promoted after the copy, no token goes back",
        run: FAILOVER_FENCED,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every promotion time",
    },
    Row {
        id: "drift-factor-covers-slew",
        source: ANTIREZ,
        quote: "be able to count 5 seconds with a maximum of 10% error",
        quote_zh: "能够数 5 秒，误差最多 10%",
        claim: "Clocks that count time with up to 10 % error are fine for Redlock — here with the reference implementation's drift factor (0.01; antirez names none)",
        claim_zh: "时钟计时误差不超过 10% 时 Redlock 没问题——这里用参考实现的漂移系数（0.01）",
        states: Claim {
            kind: Kind::Never,
            applies: slew_up_to_ten_pct,
            applies_text: "at every slew up to 10 %",
            applies_zh: "时钟偏快不超过 10% 的每一个点",
        },
        mechanism: "every node's clock runs `slew_pct` fast, so a key lives TTL / (1 + slew); the client works until its validity (TTL − TTL × 0.01 − 2 ms, the reference implementation's drift factor) less 40 ms for its write; past the boundary the keys expire while it still writes",
        run: DRIFT_DEFAULT,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::clock_slew(&ClockSlewDials::of(p)),
        predicts_text: "holds while TTL × slew / (1 + slew) < the drift allowance + the margin − the write (about 4.6 %), breaks above",
    },
    Row {
        id: "drift-factor-matches-clock-error",
        source: ANTIREZ,
        quote: "be able to count 5 seconds with a maximum of 10% error",
        quote_zh: "能够数 5 秒，误差最多 10%",
        claim: "antirez's premise: with a drift allowance as large as the error (factor 0.1), clocks up to 10 % fast are fine",
        claim_zh: "antirez 的前提：漂移容差和误差一样大（系数 0.1）时，快 10% 以内的时钟没问题",
        states: Claim {
            kind: Kind::Never,
            applies: slew_up_to_ten_pct,
            applies_text: "at every slew up to 10 %",
            applies_zh: "时钟偏快不超过 10% 的每一个点",
        },
        mechanism: "the same slewed nodes; the client's validity is TTL − TTL × 0.1 − 2 ms, so it stops working 90 ms earlier than with 0.01 and the keys outlive it until the slew eats that allowance",
        run: DRIFT_TENTH,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::clock_slew(&ClockSlewDials::of(p)),
        predicts_text: "holds while TTL × slew / (1 + slew) < the drift allowance + the margin − the write (about 15.5 %), breaks above",
    },
    Row {
        id: "client-clock-slow",
        source: ANTIREZ,
        quote: "be able to count 5 seconds with a maximum of 10% error",
        quote_zh: "能够数 5 秒，误差最多 10%",
        claim: "antirez's premise with the client's own clock slow, not the nodes' fast: with factor 0.1, a client clock up to 10 % slow is fine (his example lets two clocks err opposite ways at once; this sweep errs only the client's)",
        claim_zh: "antirez 的前提换成客户端自己的时钟偏慢（而不是节点偏快）：系数 0.1 时，客户端时钟慢 10% 以内没问题（他的例子允许两个时钟同时朝相反方向出错；这里只让客户端出错）",
        states: Claim {
            kind: Kind::Never,
            applies: slew_up_to_ten_pct,
            applies_text: "at every slew up to 10 %",
            applies_zh: "时钟偏差不超过 10% 的每一个点",
        },
        mechanism: "the nodes' clocks true; both replicas under a preload that runs their monotonic clocks (elapsed time, validity, the work's timer) at 1 − slew of real time; the client trusts (TTL − 0.1 TTL − 2 ms) of its own time and works nearly all of it, which lasts 1 / (1 − slew) times as long in real time",
        run: CLIENT_SLOW_TENTH,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::clock_slew(&ClockSlewDials::of(p)),
        predicts_text: "holds while work / (1 − slew) + the write < TTL (about 13.5 %), breaks above",
    },
    Row {
        id: "drift-factor-zero",
        source: DERIVED,
        quote: "",
        quote_zh: "",
        claim: "Without the drift allowance (factor 0), the boundary moves down by the allowance: 6 % of slew breaks exclusion",
        claim_zh: "没有漂移容差（系数 0）时，边界下移一个容差：偏快 6% 就会破坏互斥",
        states: Claim {
            kind: Kind::CanHappen,
            applies: slew_from_six_pct,
            applies_text: "at every slew of 6 % or more",
            applies_zh: "偏快 6% 及以上的每一个点",
        },
        mechanism: "the same slew; the client's validity is TTL − 2 ms, so its work runs 10 ms longer and the keys expire under it at a smaller slew",
        run: DRIFT_ZERO,
        outcome: Outcome::ExclusionBroken,
        predicts: |p| predictions::clock_slew(&ClockSlewDials::of(p)),
        predicts_text: "breaks from about 3.5 % of slew",
    },
];

/// Every run [`ROWS`] need, each once, in order.
pub fn runs() -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for row in ROWS {
        if !runs.contains(&row.run) {
            runs.push(row.run);
        }
    }
    runs
}
