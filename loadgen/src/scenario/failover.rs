//! `failover` — the service's one Redis has a replica (replication delayed
//! `lag_ms`, 200 by default, by a proxy); the replica is promoted while a lock is held and the
//! service's link pointed at it. Without `WAIT 1` the lock key has not
//! reached the replica; with it, the holder entered only once it had. The
//! fence refuses the promoted replica's stale tokens either way.
//!
//! `wait-1-two-replicas` is the Redis docs' own caveat (WAIT "does not
//! make Redis a strongly consistent store"): a second replica on a fast
//! link acknowledges the `WAIT 1`, and the lagging one is promoted — it
//! lacks the key; the fast replica then follows it (as Sentinel would
//! have it) and acknowledges the next holder's `WAIT 1` too: the lock is
//! given twice. (Its holder works 1 s by default — the variant sets
//! `work_ms=1000`, and the case records it — so that it is still inside
//! when the fast replica has resynchronised.)
//!
//! `promote=best` promotes the most up-to-date replica instead, as the WAIT
//! page says Sentinel and Redis Cluster try to: with two replicas, the
//! fast one that acknowledged `WAIT 1` (the lagging one then follows it on
//! a direct link, and a fresh lagging replica joins behind the delayed
//! one); with one replica there is no other to choose.
//!
//! `wait_timeout_ms` bounds the `WAIT` (1 s by default, above every lag
//! swept); below the lag it times out before the copy arrived, with 0
//! replicas. The service then gives the lock back (`wait_count=checked`,
//! as the WAIT page asks: nobody enters), or trusts it
//! (`wait_count=ignored`, the `ignore_wait_count` fault: the client that
//! never reads WAIT's answer) and loses it to the promotion.
//!
//! `promote_after_ms` is the failover's own boundary: how long after the
//! holder was seen inside the lagging replica is promoted. Below the
//! replication lag the lock key has not reached it; above, it has.
//!
//! Each promotion is an injection, a round of its own (`promotions`, 12 by
//! default: WAIT's "more likely (but not guaranteed)" is a rate): fresh
//! stock, a new history run, one grab on replica a; while it is inside the
//! lagging replica is promoted and the service's link pointed at it, and
//! six buyers rush replica b; then a fresh replica of the new primary
//! takes the old primary's place on the same delayed link, and the next
//! round fails over again. The proof a promotion landed: a grab was
//! inside when the replica was promoted, the promoted replica's `ROLE`
//! answers `master`, and whether it had the lock key is printed.

use std::time::Duration;

use anyhow::bail;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::buyers;
use super::case::Expectation;
use super::dials::{self, choice, dials, Choice as _, Shape};
use super::inject::{self, Window};
use super::lab::{Lab, Setup};
use super::params::{Params, Spec};
use super::world::{arm, pause, start_buyers, start_replicas, wait_inside, work, CaseRun, World};
use crate::api::Variant;
use crate::api::{Kind, StrategyEntry, StrategyName};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs::{self, RedisNode};
use seckill_proxy::Proxy;

/// Without and with `WAIT 1` after each lock write; and `WAIT 1`
/// acknowledged by one replica while the other is promoted.
pub const VARIANTS: &[Variant] = &[Variant::NoWait, Variant::Wait1, Variant::Wait1TwoReplicas];

/// Whether the lock write waits for a replica (`WAIT 1`).
fn waits(variant: Option<Variant>) -> bool {
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
        strategy.strategy(),
        Some(StrategyName::EtcdLease | StrategyName::ZkEphemeralSeq)
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
        (_, Some(Variant::Wait1TwoReplicas)) if d.promote == Promote::Best => (Holds, "WAIT 1 was acknowledged by the fast replica, and the fast one, the best, is promoted: it has the key"),
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
        strategy.strategy(),
        Some(StrategyName::SetNxPx | StrategyName::SetNxPxCheckDel | StrategyName::SetNxPxToken)
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
            "which replica is promoted: the lagging one, or the most up to date (with two replicas the fast one, as Sentinel tries to)",
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

/// Promote the lagging replica `promotions` times, each while one grab on
/// replica a is inside, then rush replica b; a fresh lagging replica of
/// the new primary replaces the old one, so the next round fails over
/// again. The faults, as reported.
///
/// Over 80 lines on purpose: the scenario's steps read top to bottom, each one
/// logged as it happens.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let d = FailoverDials::of(cx.params);
    let (lab, world, case, strategy, variant) = cx.parts();
    let (ttl, lag, promotions) = (d.ttl_ms, d.lag_ms, d.promotions);
    let two = variant == Some(Variant::Wait1TwoReplicas);
    let (work_ms, promote_after) = (d.work_ms, d.promote_after_ms);
    let primary = RedisNode::start(
        &lab.dir,
        "redis-x",
        &["--repl-diskless-sync-delay", "0"],
        Vec::new(),
    )
    .await?;
    // The lagging replica's link: replies (the replication stream) late.
    let link = Proxy::start(procs::local(primary.port)).await?;
    link.set_delays(Duration::ZERO, Duration::from_millis(lag));
    let replica = lagging_replica(lab, "redis-y", &link).await?;
    // The second replica, on a direct link: it acknowledges WAIT 1 at once.
    let fast = if two {
        Some(
            RedisNode::start(
                &lab.dir,
                "replica-fast",
                &["--replicaof", "127.0.0.1", &primary.port.to_string()],
                Vec::new(),
            )
            .await?,
        )
    } else {
        None
    };
    let front = Proxy::start(procs::local(primary.port)).await?;
    let front_url = format!("redis://127.0.0.1:{}", front.port);
    let extra = if waits(variant) {
        vec![
            ("SECKILL_REDIS_WAIT_REPLICAS".to_owned(), "1".to_owned()),
            (
                "SECKILL_REDIS_WAIT_TIMEOUT_MS".to_owned(),
                d.wait_timeout_ms.to_string(),
            ),
        ]
    } else {
        Vec::new()
    };
    for node in std::iter::once(&replica).chain(fast.iter()) {
        synced(node).await?;
    }
    // world.nodes: [0] and [1] take turns as primary and lagging replica
    // (the replica's slot gets a new process each round); [2] the fast one
    // (with promote=best the three slots rotate: see the loop).
    world.nodes.push(primary);
    world.nodes.push(replica);
    world.nodes.extend(fast);
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&front_url, ttl).extra(extra.clone())),
            ("b", Setup::new(&front_url, ttl).extra(extra)),
        ],
    )
    .await?;
    let service = world.service();
    let faults = crate::api::FaultsPatch {
        ignore_wait_count: Some(d.wait_count == WaitCount::Ignored),
        ..work(work_ms)
    };
    arm(&service, strategy, faults).await?;
    case.step(format!(
        "a primary and a replica whose copy arrives {lag} ms late (a proxy){}; both app replicas use the primary through a proxy; TTL {ttl} ms, work {work_ms} ms{}; {promotions} promotions, each while a holder is inside, the old primary then following the new one",
        if two { ", and a second replica on a direct link" } else { "" },
        if waits(variant) {
            format!(", WAIT 1 after each lock write (at most {} ms; a short count {})", d.wait_timeout_ms, d.wait_count)
        } else {
            String::new()
        }
    ));
    let rush_targets = buyers::retargeted(world.replica("b")?.url());
    // world.nodes' slots of the primary, the lagging replica and the fast
    // one; promote=best (two replicas) promotes the fast one.
    let best = two && d.promote == Promote::Best;
    let target = if best {
        "the fast replica"
    } else {
        "the lagging replica"
    };
    let (mut up, mut down, mut quick) = (0usize, 1usize, 2usize);
    for _ in 0..promotions {
        // The replicas in step again, and the lock free, before each round:
        // linked, and the last round's releases through its delayed link.
        synced(&world.nodes[down]).await?;
        if two {
            synced(&world.nodes[quick]).await?;
        }
        pause(lag + 100).await;
        let mut round = inject::begin_aimed(&lab.http, world, case, &[], 0).await?;
        let holder = buyers::grab_once(
            &lab.http,
            &world.replica("a")?.url(),
            &case.next_user,
            &case.tally,
        );
        let caught = wait_inside(&service, Some("a"), Duration::from_secs(3)).await?;
        let mut window = Window::starting(case, target, Some("a"));
        pause(promote_after).await;
        let still_inside = inside(&service, "a").await;
        let (chosen, other) = if best { (quick, down) } else { (down, quick) };
        let Promoted {
            had_key,
            on_fast,
            master,
            port: promoted_port,
        } = promote(world, chosen, two.then_some((other, best)), &front).await?;
        window.end_ms = case.clock_ms();
        if caught && still_inside && master {
            window.proof = Some(format!(
                "a grab on a was inside when {target} was promoted ({promote_after} ms after it was seen inside); its ROLE answers master; it {} the lock key{on_fast}",
                if had_key { "had" } else { "did NOT have" }
            ));
        } else {
            case.step(format!(
                "not counted: holder seen inside {caught}, still inside at the promotion {still_inside}, the replica's ROLE master {master}"
            ));
        }
        round.add(start_buyers(lab, case, &rush_targets, 6));
        // The rush met the promoted replica while the holder was inside;
        // its grabs in flight are answered before the round is judged.
        let _ = holder.await;
        pause(100).await;
        // A fresh lagging replica of the new primary takes the old one's
        // place (Sentinel would bring the old primary back as a replica;
        // a new process starts from the same empty state every round).
        link.retarget(procs::local(promoted_port));
        let next =
            lagging_replica(lab, &format!("redis-{}", case.injections.len() + 2), &link).await?;
        world.nodes[up] = next;
        // The promoted one is the primary; the fresh process lags behind
        // it; with best, the old lagging replica follows it directly.
        (up, down, quick) = if best {
            (quick, up, down)
        } else {
            (down, up, quick)
        };
        round.end(world, case, strategy, window).await?;
    }
    world.proxies.push(link);
    world.proxies.push(front);
    case.proven_by_injections(|proven| {
        format!("{proven} of {promotions} promotions while a grab on a was inside, each promoted replica answering ROLE master")
    });
    // Without WAIT its bound and its count are not in force (null); with
    // one replica the lagging one is the only one to promote.
    let waited = waits(variant);
    Ok(dials::record(
        &d,
        json!({
            "wait_timeout_ms": waited.then_some(d.wait_timeout_ms),
            "wait_count": waited.then_some(d.wait_count),
            "promote": if two { d.promote } else { Promote::Lagging },
            "wait_replicas": u8::from(waited),
            "replicas": if two { 2 } else { 1 },
            "promoted": target,
        }),
    ))
}

/// Whether a section of replica `name` is inside now, as the arbiter has
/// it (an unreadable history counts as not inside: the injection is then
/// not counted).
async fn inside(service: &crate::api::Service, name: &str) -> bool {
    service
        .history()
        .await
        .is_ok_and(|history| history.inside.iter().any(|i| i.instance == name))
}

/// A new replica of whatever `link` leads to, through it (its copy late).
/// Promoted, it feeds its own replicas at once.
async fn lagging_replica(lab: &Lab, name: &str, link: &Proxy) -> anyhow::Result<RedisNode> {
    let port = link.port.to_string();
    RedisNode::start(
        &lab.dir,
        name,
        &[
            "--replicaof",
            "127.0.0.1",
            &port,
            "--repl-diskless-sync-delay",
            "0",
        ],
        Vec::new(),
    )
    .await
}

/// Wait (up to 10 s) until `node` reports its link to the primary up.
async fn synced(node: &RedisNode) -> anyhow::Result<()> {
    let mut conn = node.conn().await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await?;
        if info.contains("master_link_status:up") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("replica {} never synced with the primary", node.name);
        }
        pause(50).await;
    }
}

/// What a promotion found.
struct Promoted {
    /// The promoted replica had the lock key.
    had_key: bool,
    /// What the fast replica (which acknowledged WAIT 1) had, as a clause.
    on_fast: String,
    /// The promoted replica's ROLE answers master.
    master: bool,
    /// Its port.
    port: u16,
}

/// Promote `world.nodes[chosen]` (`REPLICAOF NO ONE`) and aim the
/// replicas' front proxy at it; the other replica, when there are two
/// (`other`: its slot, and whether it is the lagging one, `best` having
/// been promoted), is asked whether it has the lock key, then follows the
/// promoted one on a direct link, as Sentinel reconfigures the others.
async fn promote(
    world: &World,
    chosen: usize,
    other: Option<(usize, bool)>,
    front: &Proxy,
) -> anyhow::Result<Promoted> {
    let mut conn = world.nodes[chosen].conn().await?;
    let had_key: i64 = redis::cmd("EXISTS")
        .arg("lock:product:1")
        .query_async(&mut conn)
        .await?;
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut conn)
        .await?;
    front.retarget(procs::local(world.nodes[chosen].port));
    let promoted_port = world.nodes[chosen].port;
    let mut on_fast = String::new();
    if let Some((other, lagging)) = other {
        let mut fast = world.nodes[other].conn().await?;
        let exists: i64 = redis::cmd("EXISTS")
            .arg("lock:product:1")
            .query_async(&mut fast)
            .await?;
        on_fast = format!(
            "; the {} {} it",
            if lagging {
                "lagging replica"
            } else {
                "fast replica, which acknowledged WAIT 1,"
            },
            if exists == 1 { "has" } else { "does not have" }
        );
        // It follows the promoted one, as Sentinel reconfigures the others.
        redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(promoted_port)
            .query_async::<()>(&mut fast)
            .await?;
    }
    let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
    let master = matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master")
        || matches!(role.first(), Some(redis::Value::SimpleString(r)) if r == "master");
    Ok(Promoted {
        had_key: had_key == 1,
        on_fast,
        master,
        port: promoted_port,
    })
}
