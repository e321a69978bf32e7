//! slow-network's dials and its model: what each strategy should do when
//! replica a's link is late ([`expect`]), and the pure predictions the
//! verdict and the debate's rows read (a late grant, late votes, late writes).

use crate::scenario::case::Expectation;
use crate::scenario::dials::{self, choice, dials, Choice as _, Shape};
use crate::scenario::params::{Params, Spec};
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};

choice! {
    /// Which of replica a's links is slow.
    pub enum Link {
        /// Its replies from Redis (the grant).
        Redis = "redis",
        /// Its requests to PostgreSQL (after the lock).
        Postgres = "postgres",
    }
}

choice! {
    /// `link=postgres`: when the delay begins.
    pub enum DelayFrom {
        /// A moment the sections do not choose.
        Anywhere = "anywhere",
        /// With replica a held at its last check.
        AfterCheck = "after-check",
    }
}

dials! {
    /// slow-network's dials.
    pub struct SlowNetworkDials {
        ttl_ms: u64 = dials::ttl("400"),
        work_ms: u64 = dials::work("150"),
        injections: u64 = dials::injections("12"),
        delay: u64 = Shape::ms("1.5ttl", "how late every reply from Redis reaches replica a"),
        link: Link = Shape::choice(
            Link::WORDS,
            "redis",
            "which of replica a's links is slow: its replies from Redis (the grant), or its requests to PostgreSQL (after the lock)",
        ),
        r#where as "where": DelayFrom = Shape::choice(
            DelayFrom::WORDS,
            "anywhere",
            "link=postgres only: when the delay begins — a moment the sections do not choose, or with replica a held at its last check, so the write it sends next is the first late request",
        ),
        node_timeout_ms: u64 = Shape::count(
            "50",
            "Redlock's per-node timeout on both replicas (SECKILL_REDLOCK_NODE_TIMEOUT_MS)",
        ),
        lock_wait_ms: u64 = dials::lock_wait("3000"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = SlowNetworkDials::SPECS;

/// `--quick`: a shorter TTL and work (the delay, 1.5× the TTL, shrinks).
pub const QUICK: &[(&str, &str)] = &[("ttl_ms", "250"), ("work_ms", "100")];

/// A lock that does not check the time: whether a grant heard `delay`
/// late leaves its holder inside after the key expired (delay + work >
/// TTL).
pub fn late_grant_breaks(d: &SlowNetworkDials) -> bool {
    d.delay + d.work_ms > d.ttl_ms
}

/// Whether Redlock's votes `delay` late still make a quorum: only below
/// the per-node timeout.
pub fn votes_arrive(d: &SlowNetworkDials) -> bool {
    d.delay < d.node_timeout_ms
}

/// Whether `strategy` keeps its lock (or its stock) in Redis: what a
/// slow Redis link can reach.
pub fn lives_in_redis(strategy: StrategyName) -> bool {
    matches!(
        strategy,
        StrategyName::Setnx
            | StrategyName::SetnxExpire
            | StrategyName::SetnxExpireLua
            | StrategyName::SetnxGetset
            | StrategyName::SetNxPx
            | StrategyName::SetNxPxCheckDel
            | StrategyName::SetNxPxToken
            | StrategyName::Watchdog
            | StrategyName::Redlock
            | StrategyName::Fenced
            | StrategyName::RedisLuaStock
    )
}

/// What `strategy` should do when its grants arrive `delay` late.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    let d = SlowNetworkDials::of(params);
    let validity = crate::scenario::acquire_pause::validity_ms(d.ttl_ms, d.delay);
    if d.link == Link::Postgres {
        if strategy.kind == Kind::NotALock {
            return Err("no lock: an injection is proven by replica a's lock attempt or its last check while the delay is in force, and this strategy makes neither (one atomic statement)".into());
        }
        return Ok(expect_postgres(strategy, &d));
    }
    if !lives_in_redis(strategy.name) {
        return Err("its lock is not in Redis: the delayed link (Redis to replica a) carries none of its lock's traffic (link=postgres delays what it uses)".into());
    }
    if strategy.kind == Kind::NotALock {
        return Err("no lock: an injection is proven by replica a's lock attempt while the delay is in force, and this strategy makes none (one script in Redis)".into());
    }
    let (expected, why) = match strategy.kind {
        Kind::Ttl if late_grant_breaks(&d) => (
            Breaks,
            "the grant arrives so late that the key expires before the holder leaves; it enters anyway",
        ),
        Kind::Ttl => (
            Holds,
            "the grant arrives late, but the key outlives the section",
        ),
        Kind::Lease => (
            Holds,
            "renewals reach Redis at once (only replies are late), and a grant that arrives after the lease deadline is given back",
        ),
        Kind::Validity if !votes_arrive(&d) => (
            Holds,
            "every vote is slower than the per-node timeout: no quorum, no lock",
        ),
        Kind::Validity if validity == 0 => (
            Holds,
            "the votes arrive, but elapsed exceeds the TTL: validity = TTL - elapsed refuses the quorum",
        ),
        Kind::Validity if crate::scenario::acquire_pause::short_validity(d.ttl_ms, d.work_ms, d.delay) => (
            Breaks,
            "the votes arrive with a validity shorter than the work: the keys expire while the holder is inside",
        ),
        Kind::Validity => (
            Holds,
            "the votes arrive in time: the validity left covers the work",
        ),
        Kind::Fenced => (Holds, "late holders are refused by the database"),
        Kind::NoExpiry | Kind::LockTable | Kind::InTransaction | Kind::NotALock | Kind::Session => {
            (Holds, "no TTL on the slow link to run out")
        }
        Kind::NoLock | Kind::ProcessLocal => return Err("not applicable".into()),
    };
    Ok((expected, why.into()))
}

/// Round trips to PostgreSQL a section makes: `BEGIN`, the stock read,
/// the duplicate check, then — after its last check — the write, the
/// order's insert, the commit.
const SECTION_TRIPS: u64 = 6;

/// Round trips after the last check: the write, the order's insert, the
/// commit.
pub(super) const TRIPS_AFTER_CHECK: u64 = 3;

/// `link=postgres`: whether a section's database trips outlast its lock.
/// `where=anywhere`: SECTION_TRIPS × delay + work > TTL — its last check
/// passes after the first three trips, so the writes of such a section
/// are sent before the lock runs out and land after it did, and a section
/// caught between its check and its write when the delay begins is later
/// still. `where=after-check`: the delay begins as replica a passes its
/// check, its work done: TRIPS_AFTER_CHECK × delay + work > TTL.
fn postgres_exposed(d: &SlowNetworkDials) -> bool {
    let trips = if d.r#where == DelayFrom::AfterCheck {
        TRIPS_AFTER_CHECK
    } else {
        SECTION_TRIPS
    };
    trips * d.delay + d.work_ms > d.ttl_ms
}

/// A lock that runs out by age while its holder waits on a slow database
/// link: a TTL (one Redis, Redlock's validity) or a lock-table row swept
/// once older than the TTL. A lease is not one: its keep-alive runs on
/// its own connection, untouched by the slow link (the atlas measured
/// `watchdog`, `etcd-lease` and `zk-ephemeral-seq` holding at every delay
/// up to 3 TTL, where this model first predicted a break).
fn ages_on_the_db_link(kind: Kind) -> bool {
    matches!(kind, Kind::Ttl | Kind::Validity | Kind::LockTable)
}

/// `link=postgres`, judged on exclusion.
fn expect_postgres(
    strategy: &StrategyEntry,
    d: &SlowNetworkDials,
) -> (seckill_load::judge::Expected, String) {
    let (expected, why) = match strategy.kind {
        kind if ages_on_the_db_link(kind) && postgres_exposed(d) => (
            Breaks,
            "a section's write, sent after its last check, and the trips after it arrive late: the lock expires under them and the next holder enters",
        ),
        kind if ages_on_the_db_link(kind) => (
            Holds,
            "the section ends, delayed trips and all, before the lock expires",
        ),
        Kind::Lease => (
            Holds,
            "the lease is kept alive on its own connection (Redis, etcd, ZooKeeper), which the slow database link does not touch: it outlives the slow section",
        ),
        _ => (
            Holds,
            "the database refuses the late write (a fence), or no TTL runs out",
        ),
    };
    (expected, why.into())
}

/// `link=postgres`, judged on the data: a write already on the wire is
/// past every check (a lease deadline, Redlock's validity), so every TTL
/// lock's late write lands on the next holder's; a fence refuses it.
pub fn postgres_damage(kind: Kind, d: &SlowNetworkDials) -> seckill_load::judge::Expected {
    if ages_on_the_db_link(kind) && postgres_exposed(d) {
        Breaks
    } else {
        Holds
    }
}
