//! `seckill-loadgen debate` — the Redlock debate, claim by claim, on
//! measured curves.
//!
//! Each row of [`ROWS`] is one claim: its source (author, title, year,
//! link, a quote of at most 25 words; a claim this project derived says
//! so), the mechanism (what really happens to which process, node or
//! link), and the sweep that crosses the boundary the claim names — a
//! scenario, a strategy, a variant, fixed dials and one dial swept, with
//! points on both sides and `--injections` (20 by default) at every point.
//! The claim predicts, at each point, whether its outcome (exclusion
//! broken, or data damaged) happens on more or fewer than a quarter of the
//! injections; each point's Wilson 95 % interval agrees, contradicts or
//! straddles (undecided), and the row stands `agrees` only when every
//! point agrees — never on an interval that straddles. Where the measured
//! curve crosses the line, the row says between which two values.
//!
//! A claim that is a rate with no boundary in its dial (a failover's:
//! WAIT's "more likely (but not guaranteed)" at every replication lag)
//! predicts the same side at every point of its sweep.
//!
//! `make debate` runs every row (`seckill-loadgen debate`), writes each
//! run's report under `loadgen-report/debate/<run>/`, and writes
//! `docs/redlock-debate.md` and `docs/redlock-debate.json`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use crate::api::StrategyName;
use crate::api::Variant;
use crate::judge::Expected;
use crate::scenario::predictions;
use crate::scenario::{
    self, owned_sets, CaseResult, Outcomes, Params, Rate, Scenario, Standing, DECISION_RATE,
};

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

const KLEPPMANN: Source = Source {
    author: "Martin Kleppmann",
    title: "How to do distributed locking",
    year: 2016,
    url: "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
};

const ANTIREZ: Source = Source {
    author: "Salvatore Sanfilippo (antirez)",
    title: "Is Redlock safe?",
    year: 2016,
    url: "http://antirez.com/news/101",
};

const ANTIREZ_HN: Source = Source {
    author: "Salvatore Sanfilippo (antirez)",
    title: "comment on Kleppmann's post, Hacker News",
    year: 2016,
    url: "https://news.ycombinator.com/item?id=11059738",
};

const REDIS_DOCS: Source = Source {
    author: "the Redis documentation",
    title: "Distributed Locks with Redis",
    year: 2016,
    url: "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
};

const REDIS_WAIT: Source = Source {
    author: "the Redis documentation",
    title: "WAIT",
    year: 2015,
    url: "https://redis.io/docs/latest/commands/wait/",
};

const DERIVED: Source = Source {
    author: "derived by this project",
    title: "seckill-lab",
    year: 2026,
    url: "",
};

/// Which outcome a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An overlap involving the faulted holder.
    ExclusionBroken,
    /// A committed stale write.
    DataDamaged,
}

impl Outcome {
    fn of(self, outcomes: &Outcomes) -> Rate {
        match self {
            Outcome::ExclusionBroken => outcomes.exclusion_broken,
            Outcome::DataDamaged => outcomes.data_damaged,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Outcome::ExclusionBroken => "exclusion broken",
            Outcome::DataDamaged => "data damaged",
        }
    }
}

/// One sweep that rows read: a scenario, a strategy, a variant, the dials
/// held fixed and the one swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Its name (the report folder `loadgen-report/debate/<id>/`).
    pub id: &'static str,
    /// The scenario.
    pub scenario: &'static str,
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
    /// The claim, in our words.
    pub claim: &'static str,
    /// What really happens, to which process, node or link.
    pub mechanism: &'static str,
    /// The sweep that tests it.
    pub run: Run,
    /// The outcome the claim is about.
    pub outcome: Outcome,
    /// What the claim predicts at a point of the sweep.
    pub predicts: fn(&Params) -> Expected,
    /// The same, in words.
    pub predicts_text: &'static str,
}

// Points on both sides of each boundary, none on it: a point within the
// timing noise of the machine would be undecided whatever the claim.
const PAUSES: &[&str] = &["0.25ttl", "0.6ttl", "1.2ttl", "2ttl", "3ttl"];
const ACQUIRE_PAUSES: &[&str] = &["0.25ttl", "0.45ttl", "0.85ttl", "1.2ttl", "2ttl"];
const DELAYS: &[&str] = &["0.1ttl", "0.5ttl", "0.9ttl", "1.5ttl", "2.5ttl"];

const GC_REDLOCK_BEFORE: Run = Run {
    id: "gc-redlock-before-check",
    scenario: "gc-pause",
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
    scenario: "slow-network",
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
const ACQ_CHECK: Run = Run {
    id: "acquire-redlock-check",
    scenario: "acquire-pause",
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
    scenario: "clock-jump",
    strategy: StrategyName::Redlock,
    variant: Some(Variant::PartitionJump),
    sets: &[("ttl_ms", "1000"), ("work_ms", "300")],
    // The boundary: jump = TTL − work (0.7 TTL).
    sweep: ("jump", &["0.3ttl", "0.5ttl", "0.9ttl", "1.5ttl"]),
};
const RESTART_DELAY: Run = Run {
    id: "restart-delay-redlock",
    scenario: "redlock-restart",
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000")],
    // The boundary: the delay = the work (0.5 TTL); the docs' remedy is 1 TTL.
    sweep: ("restart_delay", &["0", "0.25ttl", "0.75ttl", "1.3ttl"]),
};
const FSYNC_POWER: Run = Run {
    id: "fsync-power-cut-redlock",
    scenario: "redlock-restart",
    strategy: StrategyName::Redlock,
    variant: Some(Variant::Restart),
    sets: &[("ttl_ms", "2000"), ("work_ms", "1000"), ("crash", "power")],
    sweep: ("persistence", &["none", "everysec", "always"]),
};
const FSYNC_PROCESS: Run = Run {
    id: "fsync-kill-9-redlock",
    sets: &[
        ("ttl_ms", "2000"),
        ("work_ms", "1000"),
        ("crash", "process"),
    ],
    sweep: ("persistence", &["everysec", "always"]),
    ..FSYNC_POWER
};
// Slews on both sides of each drift factor's boundary (about 1.4 % with
// the docs' 0.01, 0.4 % with 0, at TTL 1000 ms and a 10 ms margin).
const SLEWS: &[&str] = &["0.2", "1", "3", "8"];
const DRIFT_DEFAULT: Run = Run {
    id: "clock-slew-drift-0.01",
    scenario: "clock-slew",
    strategy: StrategyName::Redlock,
    variant: None,
    sets: &[
        ("ttl_ms", "1000"),
        ("margin_ms", "10"),
        ("users", "2"),
        ("drift_factor", "0.01"),
    ],
    sweep: ("slew_pct", SLEWS),
};
const DRIFT_ZERO: Run = Run {
    id: "clock-slew-drift-0",
    sets: &[
        ("ttl_ms", "1000"),
        ("margin_ms", "10"),
        ("users", "2"),
        ("drift_factor", "0"),
    ],
    ..DRIFT_DEFAULT
};

const NET_PG_REDLOCK: Run = Run {
    id: "net-postgres-redlock",
    scenario: "slow-network",
    strategy: StrategyName::Redlock,
    variant: None,
    sets: &[
        ("ttl_ms", "400"),
        ("work_ms", "150"),
        ("link", "postgres"),
        ("where", "after-check"),
    ],
    // The boundary: 3 trips after the check × delay + work = TTL (delay
    // ≈ 0.21 TTL).
    sweep: (
        "delay",
        &["0.05ttl", "0.1ttl", "0.4ttl", "0.8ttl", "1.5ttl"],
    ),
};
const NET_PG_FENCED: Run = Run {
    id: "net-postgres-fenced",
    strategy: StrategyName::Fenced,
    ..NET_PG_REDLOCK
};

// Replication lags on both sides of the work (300 ms): WAIT's promise
// does not depend on the lag, and a rate is a rate at each.
const LAGS: &[&str] = &["100", "400"];
const FAILOVER_NO_WAIT: Run = Run {
    id: "failover-no-wait",
    scenario: "failover",
    strategy: StrategyName::SetNxPxToken,
    variant: Some(Variant::NoWait),
    sets: &[("ttl_ms", "2000"), ("work_ms", "300")],
    sweep: ("lag_ms", LAGS),
};
const FAILOVER_WAIT: Run = Run {
    id: "failover-wait-1",
    variant: Some(Variant::Wait1),
    ..FAILOVER_NO_WAIT
};
const FAILOVER_WAIT_TWO: Run = Run {
    id: "failover-wait-1-two-replicas",
    variant: Some(Variant::Wait1TwoReplicas),
    ..FAILOVER_NO_WAIT
};
const FAILOVER_FENCED: Run = Run {
    id: "failover-fenced",
    strategy: StrategyName::Fenced,
    ..FAILOVER_NO_WAIT
};
const JUMP_CONTROL: Run = Run {
    id: "clock-jump-control",
    variant: Some(Variant::Partition),
    sweep: ("work_ms", &["100", "300"]),
    ..JUMP
};

fn breaks(_: &Params) -> Expected {
    Expected::Breaks
}

fn postgres_write_late(p: &Params) -> Expected {
    predictions::postgres_damage(crate::api::Kind::Validity, p)
}

fn outlived(p: &Params) -> Expected {
    // gc-pause: the frozen holder's key expires when the time inside
    // before the stop plus the pause exceeds the TTL.
    if p.ms("pause") + p.ms("work_ms") > p.ttl_ms() {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

fn holds(_: &Params) -> Expected {
    Expected::Holds
}

fn late_grant(p: &Params) -> Expected {
    if p.ms("delay") + p.ms("work_ms") > p.ttl_ms() {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

/// Redlock: a quorum that arrives (or is read) `late` ms after the SETs
/// leaves a validity of TTL − late − drift; the keys expire inside the
/// section when that is positive but shorter than the work.
fn short_validity(p: &Params, late: u64) -> Expected {
    let ttl = p.ttl_ms();
    let validity = ttl.saturating_sub(late + predictions::redlock_drift_ms(ttl));
    if validity > 0 && validity < p.ms("work_ms") {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

fn redlock_delay(p: &Params) -> Expected {
    if p.ms("delay") >= p.count("node_timeout_ms") {
        Expected::Holds
    } else {
        short_validity(p, p.ms("delay"))
    }
}

fn acquire_check(p: &Params) -> Expected {
    short_validity(p, p.ms("pause"))
}

fn acquire_no_check(p: &Params) -> Expected {
    if p.ms("pause") + p.ms("work_ms") > p.ttl_ms() {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

/// The swept claims, in the order of the debate.
pub const ROWS: &[Row] = &[
    Row {
        id: "pause-breaks-redlock",
        source: KLEPPMANN,
        quote: "if the GC pause lasts longer than the lease expiry period, and the client doesn't realise that it has expired, it may go ahead",
        claim: "A process pause longer than the TTL lets a second holder in beside the paused one, Redlock included",
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
        claim: "When the pause lands before Redlock's validity check, the check refuses the woken holder: exclusion broken, data exact",
        mechanism: "the same freeze as the row above; a wakes, its validity (TTL − elapsed − drift) has run out, the check before the write refuses it and nothing is written",
        run: GC_REDLOCK_BEFORE,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every pause",
    },
    Row {
        id: "pause-after-check-redlock",
        source: KLEPPMANN,
        quote: "You cannot fix this problem by inserting a check on the lock expiry just before writing back to storage.",
        claim: "A pause after the last check defeats the check: the woken Redlock holder commits a stale write",
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
        claim: "The same pause damages the data under a single Redis SET NX PX with a token",
        mechanism: "as the row above, with one Redis and no validity at all: the woken holder writes whatever it read",
        run: GC_TOKEN_AFTER,
        outcome: Outcome::DataDamaged,
        predicts: outlived,
        predicts_text: "breaks when pause + work > TTL, holds below",
    },
    Row {
        id: "fencing-keeps-data",
        source: KLEPPMANN,
        quote: "you need to include a fencing token with every write request to the storage service",
        claim: "A fencing token the database checks keeps the data exact through the same pause, after the check",
        mechanism: "b's larger token is registered on the product row before b reads; a wakes and its write, conditional on its own token, matches no row",
        run: GC_FENCED_AFTER,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every pause",
    },
    Row {
        id: "random-value-check-and-set-keeps-data",
        source: ANTIREZ_HN,
        quote: "I think the unique random token of Redlock is enough for Check & Set when the lock holder work materializes into a database write",
        claim: "Redlock's random value, checked and set by the database, keeps the data exact through the same pause after the check, as a fencing token does",
        mechanism: "each holder writes its random value into the product row before it reads (unconditionally: a random value has no order); b's value overwrites a's while a is stopped; a wakes and its write, conditional on its own value, matches no row",
        run: GC_REDLOCK_CHECK_AND_SET,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every pause",
    },
    Row {
        id: "late-grant-single-redis",
        source: KLEPPMANN,
        quote: "Packet networks such as Ethernet and IP may delay packets arbitrarily",
        claim: "A grant delivered late is acted on by a lock that does not check the time: its key expires while the holder works",
        mechanism: "every reply from Redis to replica a is held back by a proxy (requests go at once); a's SET NX succeeds at once, a hears of it `delay` later and enters with less than TTL − delay left",
        run: NET_TOKEN,
        outcome: Outcome::ExclusionBroken,
        predicts: late_grant,
        predicts_text: "breaks when delay + work > TTL, holds below",
    },
    Row {
        id: "node-timeout-drops-late-votes",
        source: REDIS_DOCS,
        quote: "the client uses a timeout which is small compared to the total lock auto-release time in order to acquire it",
        claim: "With a short per-node timeout, votes slower than it are dropped: delayed packets never make a quorum",
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
        claim: "With a node timeout longer than the delay the late votes arrive, and only TTL − elapsed stands between the client and an expired lock",
        mechanism: "the votes arrive `delay` late; validity = TTL − delay − drift: refused above the TTL, trusted below — and trusted even when the validity left is shorter than the work, so the keys expire inside the section",
        run: NET_REDLOCK_LONG,
        outcome: Outcome::ExclusionBroken,
        predicts: redlock_delay,
        predicts_text: "breaks where 0 < TTL − delay − drift < work, holds elsewhere",
    },
    Row {
        id: "validity-shorter-than-work",
        source: REDIS_DOCS,
        quote: "it is guaranteed only as long as the client holding the lock terminates its work within the lock validity time",
        claim: "A pause during acquisition that leaves less validity than the work breaks exclusion even with the check",
        mechanism: "a is stopped (SIGSTOP) holding a quorum of yes unread; it wakes, its check passes with a short validity, it starts 100 ms of work; its keys expire inside; b enters",
        run: ACQ_CHECK,
        outcome: Outcome::ExclusionBroken,
        predicts: acquire_check,
        predicts_text: "breaks where 0 < TTL − pause − drift < work, holds elsewhere",
    },
    Row {
        id: "acquire-pause-without-check",
        source: DERIVED,
        quote: "",
        claim: "Without the elapsed-time check, a client paused during acquisition enters on keys that expire under it",
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
        claim: "A write delayed on its way to the database lands after the lock expired, past every check: Redlock's validity included",
        mechanism: "replica a is held at the moment it passes its validity check (its own hook), its requests to PostgreSQL are delayed by `delay` (a proxy; its locks answer at once), and a is let go: the write it sends next, the insert and the commit land late; once they outlast the keys, the next holder reads the stock a read, writes and commits, and a's stale write lands on top: a lost update",
        run: NET_PG_REDLOCK,
        outcome: Outcome::DataDamaged,
        predicts: postgres_write_late,
        predicts_text: "breaks when 3 trips × delay + work > TTL (the write, the insert and the commit, sent after the check), holds below",
    },
    Row {
        id: "write-delayed-fenced",
        source: KLEPPMANN,
        quote: "you need to include a fencing token with every write request to the storage service",
        claim: "The fence refuses the same delayed write",
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
        claim: "Control: the partition of the clock-jump rows alone keeps one holder at a time",
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
        claim: "A clock jump on one node expires its key early: both sides of a partition reach a majority",
        mechanism: "five nodes, a reaching 1,2,3 and b 3,4,5; while a holder is inside, node 3's wall clock (the one Redis expires keys by) jumps forward by `jump`; its key expires and the other side builds a majority on node 3",
        run: JUMP,
        outcome: Outcome::ExclusionBroken,
        predicts: predictions::clock_jump,
        predicts_text: "breaks when jump > TTL − work, holds below",
    },
    Row {
        id: "delayed-restart",
        source: REDIS_DOCS,
        quote: "make an instance, after a crash, unavailable for at least a bit more than the max TTL we use",
        claim: "Remedy: a crashed node kept down longer than the TTL does not give its vote twice",
        mechanism: "the same partition; node 3 (no persistence) is killed while a holder is inside and comes back empty after `restart_delay`; the other side builds a majority on it if the holder is still inside",
        run: RESTART_DELAY,
        outcome: Outcome::ExclusionBroken,
        predicts: predictions::redlock_restart,
        predicts_text: "breaks when the delay is shorter than the section (work), holds from there on — the TTL is more than enough",
    },
    Row {
        id: "fsync-power-cut",
        source: REDIS_DOCS,
        quote: "If Redis is configured, as by default, to fsync on disk every second, it is possible that after a restart our key is missing.",
        claim: "Only appendfsync always keeps the key through a crash that loses the page cache",
        mechanism: "node 3 runs under a preload that keeps its AOF's unsynced bytes in process memory; kill -9 then loses them as a power cut would (the bytes lost are in each injection's proof); it restarts at once",
        run: FSYNC_POWER,
        outcome: Outcome::ExclusionBroken,
        predicts: predictions::redlock_restart,
        predicts_text: "breaks with none and everysec (the key written since the last sync is lost), holds with always",
    },
    Row {
        id: "fsync-kill-9",
        source: DERIVED,
        quote: "",
        claim: "kill -9 is not a test of fsync: any AOF survives it, because the kernel keeps what was written",
        mechanism: "the same restart at once, with a plain kill -9: the page cache survives the process, so everysec keeps the key as always does",
        run: FSYNC_PROCESS,
        outcome: Outcome::ExclusionBroken,
        predicts: predictions::redlock_restart,
        predicts_text: "holds at every persistence with an AOF (everysec, always)",
    },
    Row {
        id: "failover-no-wait",
        source: DERIVED,
        quote: "",
        claim: "A single Redis with a replica loses the lock on failover: replication is asynchronous",
        mechanism: "one grab on a holds the lock; the replica, its copy `lag_ms` late, lacks the key when it is promoted and the service pointed at it; b's rush takes the lock beside a. 20 promotions at each lag",
        run: FAILOVER_NO_WAIT,
        outcome: Outcome::ExclusionBroken,
        predicts: breaks,
        predicts_text: "breaks at every lag",
    },
    Row {
        id: "wait-one-replica",
        source: REDIS_WAIT,
        quote: "more likely (but not guaranteed) that if the master fails, we'll be able to promote, during a failover, a replica that received the write",
        claim: "With WAIT 1 and the only replica promoted, the key is there: the lock survives the failover",
        mechanism: "the same promotions; the holder enters only once WAIT 1 says the one replica has the key, and that replica is the one promoted",
        run: FAILOVER_WAIT,
        outcome: Outcome::ExclusionBroken,
        predicts: holds,
        predicts_text: "holds at every lag",
    },
    Row {
        id: "wait-acked-by-another-replica",
        source: REDIS_WAIT,
        quote: "more likely (but not guaranteed) that if the master fails, we'll be able to promote, during a failover, a replica that received the write",
        claim: "Not guaranteed: WAIT 1 acknowledged by one replica while another, lagging, is promoted loses the lock",
        mechanism: "a second replica on a direct link acknowledges WAIT 1 at once; the lagging one is promoted without the key; the fast one follows it and acknowledges b's WAIT 1 too",
        run: FAILOVER_WAIT_TWO,
        outcome: Outcome::ExclusionBroken,
        predicts: breaks,
        predicts_text: "breaks at every lag",
    },
    Row {
        id: "failover-fenced",
        source: KLEPPMANN,
        quote: "you need to include a fencing token with every write request to the storage service",
        claim: "Fencing keeps the data exact through a failover as well",
        mechanism: "the promoted replica's counter is older, so b's tokens are smaller than a's; the database refuses whichever write carries the token that went backwards",
        run: FAILOVER_FENCED,
        outcome: Outcome::DataDamaged,
        predicts: holds,
        predicts_text: "holds at every lag",
    },
    Row {
        id: "drift-factor-covers-slew",
        source: ANTIREZ,
        quote: "be able to count 5 seconds with a maximum of 10% error",
        claim: "A clock that runs a little fast (slewed, not jumped) is covered by the drift allowance",
        mechanism: "every node's clock runs `slew_pct` fast, so a key lives TTL / (1 + slew); the client works until its validity (TTL − TTL × 0.01 − 2 ms) less 10 ms; past the boundary the keys expire while it still writes",
        run: DRIFT_DEFAULT,
        outcome: Outcome::ExclusionBroken,
        predicts: predictions::clock_slew,
        predicts_text: "holds while TTL × slew / (1 + slew) < the drift allowance + the margin − the write (about 1.4 %), breaks above",
    },
    Row {
        id: "drift-factor-zero",
        source: DERIVED,
        quote: "",
        claim: "Without the drift allowance (factor 0), a smaller slew is enough",
        mechanism: "the same slew; the client's validity is TTL − 2 ms, so its work runs 10 ms longer and the keys expire under it at a smaller slew",
        run: DRIFT_ZERO,
        outcome: Outcome::ExclusionBroken,
        predicts: predictions::clock_slew,
        predicts_text: "breaks from about 0.4 % of slew",
    },
];

/// One point of a row's curve, as `redlock-debate.json` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The value as typed.
    pub value: String,
    /// Resolved (ms for a duration).
    pub resolved: Option<f64>,
    /// What the claim predicts here.
    pub predicts: Expected,
    /// k of n.
    pub exclusion_broken: Option<Rate>,
    /// k of n.
    pub data_damaged: Option<Rate>,
    /// The row's outcome against the prediction.
    pub standing: Standing,
    /// Why [`Point::standing`]: the row's outcome, its rate and the
    /// prediction (`agrees: data damaged 9 of 20 [26–66 %] (predicted
    /// breaks)`).
    pub reason: String,
    /// The scenario case's own verdict line. The case judges the outcome
    /// its scenario names for the strategy, which may not be the row's
    /// (`write-delayed-to-storage` judges the data; its case, the overlaps).
    pub case_verdict: String,
}

/// A row's curve and standing.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    /// The dial swept.
    pub key: String,
    /// Its points.
    pub points: Vec<Point>,
    /// Every point agrees → agrees; any contradicts → contradicts; else
    /// undecided.
    pub standing: Standing,
    /// Between which values the measured outcome crosses the line.
    pub flips_at: Option<String>,
}

/// Judge a row from its sweep's points: each point's params and outcomes.
pub fn judge_row(row: &Row, points: &[(String, Params, Option<Outcomes>, String)]) -> Judged {
    let mut judged = Vec::new();
    for (value, params, outcomes, case_verdict) in points {
        let predicts = (row.predicts)(params);
        let rate = outcomes.map(|o| row.outcome.of(&o));
        let standing = rate.map_or(Standing::Undecided, |r| r.standing(predicts));
        let reason = match rate {
            Some(rate) => format!(
                "{}: {} {} (predicted {})",
                standing.as_str(),
                row.outcome.as_str(),
                rate.text(),
                predicts.as_str()
            ),
            None => format!("undecided: no rates ({case_verdict})"),
        };
        judged.push(Point {
            value: value.clone(),
            resolved: params
                .json()
                .get(row.run.sweep.0)
                .and_then(serde_json::Value::as_f64),
            predicts,
            exclusion_broken: outcomes.map(|o| o.exclusion_broken),
            data_damaged: outcomes.map(|o| o.data_damaged),
            standing,
            reason,
            case_verdict: case_verdict.clone(),
        });
    }
    let standing = if judged.is_empty() {
        Standing::Undecided
    } else if judged.iter().any(|p| p.standing == Standing::Contradicts) {
        Standing::Contradicts
    } else if judged.iter().all(|p| p.standing == Standing::Agrees) {
        Standing::Agrees
    } else {
        Standing::Undecided
    };
    Judged {
        key: row.run.sweep.0.to_owned(),
        flips_at: flips_at(row.outcome, &judged),
        points: judged,
        standing,
    }
}

/// Which side of the decision line a rate lies on (`None`: it straddles).
fn side(rate: Rate) -> Option<bool> {
    if rate.ci95[0] > DECISION_RATE {
        Some(true)
    } else if rate.ci95[1] < DECISION_RATE {
        Some(false)
    } else {
        None
    }
}

/// Where the measured outcome moves from one side of the line to the
/// other: "between A and B", with every straddling point between named.
fn flips_at(outcome: Outcome, points: &[Point]) -> Option<String> {
    let rates: Vec<(String, Option<bool>)> = points
        .iter()
        .map(|p| {
            let rate = match outcome {
                Outcome::ExclusionBroken => p.exclusion_broken,
                Outcome::DataDamaged => p.data_damaged,
            };
            (p.value.clone(), rate.and_then(side))
        })
        .collect();
    let decided: Vec<(usize, bool)> = rates
        .iter()
        .enumerate()
        .filter_map(|(i, (_, s))| s.map(|s| (i, s)))
        .collect();
    let mut flips = Vec::new();
    for pair in decided.windows(2) {
        let ((i, a), (j, b)) = (pair[0], pair[1]);
        if a != b {
            let between: Vec<&str> = rates[i + 1..j].iter().map(|(v, _)| v.as_str()).collect();
            flips.push(if between.is_empty() {
                format!("between {} and {}", rates[i].0, rates[j].0)
            } else {
                format!(
                    "between {} and {} (undecided at {})",
                    rates[i].0,
                    rates[j].0,
                    between.join(", ")
                )
            });
        }
    }
    (!flips.is_empty()).then(|| flips.join("; "))
}

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

/// The settings of `make debate`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Injections at every point of every sweep.
    pub injections: u32,
    /// Only these rows (ids; empty: all).
    pub only: Vec<String>,
    /// Report folders go under it.
    pub out: PathBuf,
    /// The Markdown table.
    pub markdown: PathBuf,
    /// The JSON.
    pub json: PathBuf,
    /// What every scenario run needs (database, binary, …).
    pub scenario: scenario::Options,
}

#[derive(Debug, Serialize)]
struct RowJson {
    id: &'static str,
    source: Source,
    quote: &'static str,
    claim: &'static str,
    mechanism: &'static str,
    scenario: &'static str,
    strategy: StrategyName,
    variant: Option<Variant>,
    fixed: Vec<(String, String)>,
    outcome: Outcome,
    predicts: &'static str,
    sweep: Judged,
    standing: Standing,
    flips_at: Option<String>,
    report: String,
}

#[derive(Debug, Serialize)]
struct DebateJson {
    tool: &'static str,
    version: &'static str,
    /// The build that measured: `release` (`make debate`) or `debug`.
    profile: &'static str,
    injections_per_point: u32,
    decision_rate: f64,
    duration_s: f64,
    rows: Vec<RowJson>,
}

fn scenario_named(name: &str) -> Option<Scenario> {
    use clap::ValueEnum as _;
    Scenario::value_variants()
        .iter()
        .copied()
        .find(|s| s.name() == name)
}

/// `seckill-loadgen debate`: run every row's sweep,
/// write the table and the JSON; exit 1 when a row contradicts its claim,
/// 4 when one is undecided, 3 when a run failed.
///
/// Over 80 lines on purpose: the debate's run in order — the sweeps, each claim
/// judged, the documents written, the exit status.
pub async fn main(settings: Settings) -> ExitCode {
    let started = std::time::Instant::now();
    let wanted = |id: &str| settings.only.is_empty() || settings.only.iter().any(|o| o == id);
    let mut batches = Vec::new();
    let mut chosen_runs = Vec::new();
    for run in runs() {
        if !ROWS.iter().any(|r| r.run == run && wanted(r.id)) {
            continue;
        }
        let Some(scenario) = scenario_named(run.scenario) else {
            eprintln!(
                "seckill-loadgen: debate run {} names no scenario {}",
                run.id, run.scenario
            );
            return ExitCode::from(3);
        };
        let mut options = settings.scenario.clone();
        options.strategies = vec![run.strategy.as_str().to_owned()];
        options.variants = run.variant.map(|v| vec![v]).unwrap_or_default();
        options.sets = owned_sets(run.sets);
        options
            .sets
            .push(("injections".into(), settings.injections.to_string()));
        options.sweep = Some((
            run.sweep.0.to_owned(),
            run.sweep.1.iter().map(|v| (*v).to_owned()).collect(),
        ));
        options.trials = 1;
        options.out = settings.out.join(run.id);
        println!(
            "== debate run {}: {} · {} · sweep {}",
            run.id, run.scenario, run.strategy, run.sweep.0
        );
        batches.push((vec![scenario], options));
        chosen_runs.push(run);
    }
    // Every run's points as one plan on `--jobs` lanes.
    let reports: Vec<(Run, Vec<CaseResult>)> = if batches.is_empty() {
        Vec::new()
    } else {
        match scenario::run_batches_and_write(&batches).await {
            Ok(reports) => chosen_runs
                .into_iter()
                .zip(reports.into_iter().map(|r| r.scenarios))
                .collect(),
            Err(e) => {
                eprintln!("seckill-loadgen: the debate's runs failed: {e:#}");
                return ExitCode::from(3);
            }
        }
    };
    let rows: Vec<RowJson> = ROWS
        .iter()
        .filter(|r| wanted(r.id))
        .filter_map(|row| {
            let (_, cases) = reports.iter().find(|(run, _)| *run == row.run)?;
            let scenario = scenario_named(row.run.scenario)?;
            let points: Vec<(String, Params, Option<Outcomes>, String)> = cases
                .iter()
                .filter_map(|c| {
                    let value = c.sweep_value(row.run.sweep.0)?;
                    let mut sets: Vec<(String, String)> = owned_sets(row.run.sets);
                    sets.push((row.run.sweep.0.to_owned(), value.clone()));
                    let params = Params::new(scenario.name(), scenario.params(), &sets).ok()?;
                    Some((value, params, c.outcomes, c.verdict_reason.clone()))
                })
                .collect();
            let judged = judge_row(row, &points);
            Some(RowJson {
                id: row.id,
                source: row.source,
                quote: row.quote,
                claim: row.claim,
                mechanism: row.mechanism,
                scenario: row.run.scenario,
                strategy: row.run.strategy,
                variant: row.run.variant,
                fixed: owned_sets(row.run.sets),
                outcome: row.outcome,
                predicts: row.predicts_text,
                standing: judged.standing,
                flips_at: judged.flips_at.clone(),
                sweep: judged,
                report: settings
                    .out
                    .join(row.run.id)
                    .join("scenarios.html")
                    .display()
                    .to_string(),
            })
        })
        .collect();
    let doc = DebateJson {
        tool: "seckill-loadgen",
        version: env!("CARGO_PKG_VERSION"),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        injections_per_point: settings.injections,
        decision_rate: DECISION_RATE,
        duration_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        rows,
    };
    if let Err(e) = write(&settings, &doc) {
        eprintln!("seckill-loadgen: {e:#}");
        return ExitCode::from(2);
    }
    let all: Vec<Standing> = doc.rows.iter().map(|r| r.standing).collect();
    let count = |s: Standing| all.iter().filter(|x| **x == s).count();
    println!(
        "{} rows: {} agree, {} contradict, {} undecided, in {:.0} s; {} and {}",
        all.len(),
        count(Standing::Agrees),
        count(Standing::Contradicts),
        count(Standing::Undecided),
        doc.duration_s,
        settings.markdown.display(),
        settings.json.display()
    );
    if count(Standing::Contradicts) > 0 {
        ExitCode::from(1)
    } else if count(Standing::Undecided) > 0 {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    }
}

fn write(settings: &Settings, doc: &DebateJson) -> anyhow::Result<()> {
    for path in [&settings.markdown, &settings.json] {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
    }
    std::fs::write(&settings.json, serde_json::to_string_pretty(doc)? + "\n")?;
    std::fs::write(&settings.markdown, markdown(doc))?;
    Ok(())
}

fn cite(source: &Source) -> String {
    if source.url.is_empty() {
        source.author.to_owned()
    } else {
        format!(
            "{}, [\"{}\"]({}) ({})",
            source.author, source.title, source.url, source.year
        )
    }
}

/// Over 80 lines on purpose: one document's Markdown, in the order it reads.
fn markdown(doc: &DebateJson) -> String {
    let mut md = String::from("# The Redlock debate, claim by claim, on measured curves\n\n");
    let _ = writeln!(
        md,
        "Generated by `seckill-loadgen debate` ({} build) in {:.0} s: every claim tested by a sweep \
         that crosses the boundary it names, {} injections at every point, each injection judged on its \
         own. A point agrees when the Wilson 95 % interval of the claim's outcome lies on the predicted \
         side of {:.0} % of the injections, contradicts when it lies on the other side, and is undecided \
         when it straddles; a row agrees only when every point agrees. The reports of each sweep \
         (scenarios.json, the curves in scenarios.html) are under `loadgen-report/debate/`.\n",
        doc.profile,
        doc.duration_s,
        doc.injections_per_point,
        doc.decision_rate * 100.0
    );
    md.push_str("| # | source | claim | sweep | outcome | predicts | measured (k of n at each point) | flips | standing |\n");
    md.push_str("|---:|---|---|---|---|---|---|---|---|\n");
    for (i, r) in doc.rows.iter().enumerate() {
        let measured: Vec<String> = r
            .sweep
            .points
            .iter()
            .map(|p| {
                let rate = match r.outcome {
                    Outcome::ExclusionBroken => p.exclusion_broken,
                    Outcome::DataDamaged => p.data_damaged,
                };
                format!(
                    "{}: {}{}",
                    p.value,
                    rate.map_or("not run".into(), |r| format!("{} of {}", r.k, r.n)),
                    if p.standing == Standing::Agrees {
                        ""
                    } else {
                        match p.standing {
                            Standing::Contradicts => " ✗",
                            _ => " ?",
                        }
                    }
                )
            })
            .collect();
        let quote = if r.quote.is_empty() {
            String::new()
        } else {
            format!(" — “{}”", r.quote)
        };
        let _ = writeln!(
            md,
            "| {} | {}{} | {} | `{}` · `{}`{} · `{}` swept{} | {} | {} | {} | {} | **{}** |",
            i + 1,
            cite(&r.source),
            quote,
            r.claim,
            r.scenario,
            r.strategy,
            r.variant.map_or(String::new(), |v| format!(" · `{v}`")),
            r.sweep.key,
            if r.fixed.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    r.fixed
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            Outcome::as_str(r.outcome),
            r.predicts,
            measured.join("; "),
            r.flips_at.as_deref().unwrap_or("—"),
            r.standing.as_str()
        );
    }
    md.push_str(
        "\n✗ a point that contradicts the prediction, ? one whose interval straddles the line.\n",
    );
    md.push_str("\n## Mechanisms\n\n");
    for (i, r) in doc.rows.iter().enumerate() {
        let _ = writeln!(md, "{}. **{}** — {}", i + 1, r.id, r.mechanism);
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(row: &Row, value: &str) -> Params {
        let scenario = scenario_named(row.run.scenario).expect("scenario");
        let mut sets: Vec<(String, String)> = owned_sets(row.run.sets);
        sets.push((row.run.sweep.0.to_owned(), value.to_owned()));
        Params::new(scenario.name(), scenario.params(), &sets).expect("params")
    }

    fn outcomes(k: u64, n: u64) -> Option<Outcomes> {
        Some(Outcomes {
            exclusion_broken: Rate::of(k, n),
            data_damaged: Rate::of(k, n),
            stalled: None,
        })
    }

    #[test]
    fn every_row_names_a_scenario_its_dials_and_crosses_a_boundary_or_holds_everywhere() {
        for row in ROWS {
            let scenario = scenario_named(row.run.scenario).expect(row.id);
            assert!(
                row.quote.split_whitespace().count() <= 25,
                "{}: quote too long",
                row.id
            );
            assert_eq!(
                row.quote.is_empty(),
                row.source.author == DERIVED.author,
                "{}",
                row.id
            );
            let predictions: Vec<Expected> = row
                .run
                .sweep
                .1
                .iter()
                .map(|v| (row.predicts)(&params(row, v)))
                .collect();
            assert!(
                scenario.params().iter().any(|s| s.name == row.run.sweep.0),
                "{}",
                row.id
            );
            // A sweep either crosses its boundary (points on both sides)
            // or tests a claim that holds (or, for a rate with no boundary
            // in the dial — a failover's — breaks) at every point.
            let both =
                predictions.contains(&Expected::Holds) && predictions.contains(&Expected::Breaks);
            let everywhere = predictions.iter().all(|p| *p == predictions[0]);
            assert!(
                both || (everywhere && row.predicts_text.contains("at every")),
                "{}: {predictions:?}",
                row.id
            );
        }
    }

    #[test]
    fn a_row_agrees_only_when_every_point_agrees_and_a_straddle_is_undecided() {
        let row = &ROWS[0]; // breaks when pause + work > TTL
        let values = ["0.25ttl", "3ttl"];
        let agree: Vec<_> = values
            .iter()
            .zip([outcomes(0, 20), outcomes(20, 20)])
            .map(|(v, o)| ((*v).to_owned(), params(row, v), o, String::new()))
            .collect();
        let judged = judge_row(row, &agree);
        assert_eq!(judged.standing, Standing::Agrees);
        assert_eq!(judged.flips_at.as_deref(), Some("between 0.25ttl and 3ttl"));
        let straddle: Vec<_> = values
            .iter()
            .zip([outcomes(0, 5), outcomes(20, 20)])
            .map(|(v, o)| ((*v).to_owned(), params(row, v), o, String::new()))
            .collect();
        assert_eq!(judge_row(row, &straddle).standing, Standing::Undecided);
        let contra: Vec<_> = values
            .iter()
            .zip([outcomes(20, 20), outcomes(20, 20)])
            .map(|(v, o)| ((*v).to_owned(), params(row, v), o, String::new()))
            .collect();
        assert_eq!(judge_row(row, &contra).standing, Standing::Contradicts);
    }

    #[test]
    fn a_points_reason_judges_the_rows_outcome_not_the_cases() {
        let row = ROWS
            .iter()
            .find(|r| r.id == "write-delayed-to-storage")
            .expect("the row");
        assert_eq!(row.outcome, Outcome::DataDamaged);
        let mut measured = outcomes(20, 20);
        measured.as_mut().expect("outcomes").data_damaged = Rate::of(9, 20);
        let case = "agrees: exclusion broken 20 of 20 [84–100 %]".to_owned();
        let judged = judge_row(
            row,
            &[(
                "1.5ttl".into(),
                params(row, "1.5ttl"),
                measured,
                case.clone(),
            )],
        );
        let point = &judged.points[0];
        assert_eq!(point.standing, Standing::Agrees);
        assert_eq!(
            point.reason,
            "agrees: data damaged 9 of 20 [26–66 %] (predicted breaks)"
        );
        assert_eq!(point.case_verdict, case);
    }
}
