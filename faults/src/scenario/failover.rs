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
//! page says Sentinel and Redis Cluster try to: with two replicas, the one
//! whose replication offset is the larger at the promotion (Sentinel's
//! rule; on a tie, the fast one). That is usually the fast one, which
//! acknowledged `WAIT 1`, but not always: a fast replica still catching up
//! has the smaller offset, and the proof gives both. The other then
//! follows it on a direct link, and a fresh lagging replica joins behind
//! the delayed one; with one replica there is no other to choose.
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

use seckill_load::api::StrategyName;
use std::time::Duration;

use anyhow::{bail, Context};
use tokio::time::Instant;

mod model;

pub use model::{
    expect, promoted_lacks_key, variant_sets, FailoverDials, Promote, PARAMS, QUICK, VARIANTS,
};

use super::buyers::{self, Targets};
use super::dials;
use super::in_force::{DialValue, Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::{Lab, Setup};
use super::world::{
    arm, pause, start_buyers, start_replicas, wait_inside, work, Case, CaseRun, World,
};
use crate::procs::{self, RedisNode};
use model::{waits, WaitCount};
use seckill_load::api::{Service, Variant};
use seckill_proxy::Proxy;

/// Promote the lagging replica `promotions` times, each while one grab on
/// replica a is inside, then rush replica b; a fresh lagging replica of
/// the new primary replaces the old one, so the next round fails over
/// again. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = FailoverDials::of(cx.params);
    let (lab, world, case, strategy, variant) = cx.parts();
    let promotions = d.promotions;
    let two = variant == Some(Variant::Wait1TwoReplicas);
    let (link, front) = start_nodes(lab, world, d.lag_ms, two).await?;
    let service = start_service(lab, world, case, strategy, variant, &d, &front).await?;
    let rush_targets = buyers::retargeted(world.replica("b")?.url());
    // world.nodes' slots of the primary, the lagging replica and the fast
    // one; promote=best (two replicas) promotes the more up-to-date one.
    let best = two && d.promote == Promote::Best;
    let target = if best {
        "the most up-to-date replica"
    } else {
        "the lagging replica"
    };
    let rounds = Rounds {
        service,
        rush_targets,
        link: &link,
        front: &front,
        two,
        best,
        target,
        lag: d.lag_ms,
        promote_after: d.promote_after_ms,
    };
    let mut slots: Slots = (0, 1, 2);
    for _ in 0..promotions {
        slots = promotion_round(lab, world, case, strategy, &rounds, slots).await?;
    }
    world.proxies.push(link);
    world.proxies.push(front);
    case.proven_by_injections(|proven| {
        format!("{proven} of {promotions} promotions while a grab on a was inside, each promoted replica answering ROLE master")
    });
    // Without WAIT its bound and its count are not in force (absent); with
    // one replica the lagging one is the only one to promote.
    let waited = waits(variant);
    let mut record = dials::record(
        &d,
        Facts {
            wait_replicas: Some(u8::from(waited)),
            replicas: Some(if two { 2 } else { 1 }),
            promoted: Some(target.to_owned()),
            ..Facts::default()
        },
    );
    if !waited {
        record.dials.remove("wait_timeout_ms");
        record.dials.remove("wait_count");
    }
    if !two {
        let lagging = DialValue::Word(Promote::Lagging.to_string());
        record.dials.insert("promote", lagging, None);
    }
    Ok(record)
}

/// world.nodes' slots of the primary, the lagging replica and the fast one.
type Slots = (usize, usize, usize);

/// What every promotion round shares.
#[derive(Debug)]
struct Rounds<'a> {
    /// The two app replicas.
    service: Service,
    /// Replica b, which the rush aims at.
    rush_targets: Targets,
    /// The lagging replica's delayed link.
    link: &'a Proxy,
    /// The app replicas' link to the primary.
    front: &'a Proxy,
    /// Two replicas (`wait-1-two-replicas`).
    two: bool,
    /// The more up-to-date replica is promoted (`promote=best` with two
    /// replicas).
    best: bool,
    /// Which replica is promoted, as the steps name it.
    target: &'static str,
    /// `lag_ms`.
    lag: u64,
    /// `promote_after_ms`.
    promote_after: u64,
}

/// Step 1: the primary, its lagging replica behind a delayed link, the fast
/// one (two replicas) and the app replicas' front proxy; the nodes synced
/// and in `world.nodes`. The link and the front proxy.
async fn start_nodes(
    lab: &Lab,
    world: &mut World,
    lag: u64,
    two: bool,
) -> anyhow::Result<(Proxy, Proxy)> {
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
    for node in std::iter::once(&replica).chain(fast.iter()) {
        synced(node).await?;
    }
    // world.nodes: [0] and [1] take turns as primary and lagging replica
    // (the replica's slot gets a new process each round); [2] the fast one
    // (with promote=best the three slots rotate: see the loop).
    world.nodes.push(primary);
    world.nodes.push(replica);
    world.nodes.extend(fast);
    Ok((link, front))
}

/// Step 2: both app replicas on the primary through `front` (WAIT 1 in the
/// wait variants), the strategy armed, the setup logged. The service.
async fn start_service(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    variant: Option<Variant>,
    d: &FailoverDials,
    front: &Proxy,
) -> anyhow::Result<Service> {
    let (ttl, lag, promotions) = (d.ttl_ms, d.lag_ms, d.promotions);
    let two = variant == Some(Variant::Wait1TwoReplicas);
    let work_ms = d.work_ms;
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
    let faults = seckill_load::api::FaultsPatch {
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
    Ok(service)
}

/// Step 3, once per promotion: a grab on a inside, a replica promoted, the
/// rush on b, a fresh lagging replica; the round judged. The next slots.
async fn promotion_round(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    rounds: &Rounds<'_>,
    (up, down, quick): Slots,
) -> anyhow::Result<Slots> {
    // The replicas in step again, and the lock free, before each round:
    // linked, and the last round's releases through its delayed link.
    synced(&world.nodes[down]).await?;
    if rounds.two {
        synced(&world.nodes[quick]).await?;
    }
    pause(rounds.lag + 100).await;
    let mut round = inject::begin_aimed(&lab.http, world, case, &[], 0).await?;
    let holder = buyers::grab_once(
        &lab.http,
        &world.replica("a")?.url(),
        &case.next_user,
        &case.tally,
    );
    let (window, promoted_port, chosen, other) =
        promote_while_inside(world, case, rounds, down, quick).await?;
    round.add(start_buyers(lab, case, &rounds.rush_targets, 6));
    // The rush met the promoted replica while the holder was inside;
    // its grabs in flight are answered before the round is judged.
    let _ = holder.await;
    pause(100).await;
    // A fresh lagging replica of the new primary takes the old one's
    // place (Sentinel would bring the old primary back as a replica;
    // a new process starts from the same empty state every round).
    rounds.link.retarget(procs::local(promoted_port));
    let next = lagging_replica(
        lab,
        &format!("redis-{}", case.injections.len() + 2),
        rounds.link,
    )
    .await?;
    world.nodes[up] = next;
    // The promoted one is the primary; the fresh process lags behind it
    // (in the old primary's slot); the other replica follows it directly.
    let slots = (chosen, up, other);
    round.end(world, case, strategy, window).await?;
    Ok(slots)
}

/// Once the grab on a is seen inside, promote the chosen replica; its
/// window (proven when the grab was still inside), the promoted port, and
/// the slots of the promoted replica and of the other one.
async fn promote_while_inside(
    world: &World,
    case: &mut Case,
    rounds: &Rounds<'_>,
    down: usize,
    quick: usize,
) -> anyhow::Result<(Window, u16, usize, usize)> {
    let (target, promote_after) = (rounds.target, rounds.promote_after);
    let caught = wait_inside(&rounds.service, Some("a"), Duration::from_secs(3)).await?;
    let mut window = Window::starting(case, target, Some("a"));
    pause(promote_after).await;
    let still_inside = inside(&rounds.service, "a").await;
    let label = |slot: usize| if slot == quick { "fast" } else { "lagging" };
    // With best, which one it was and why (the proof's clause).
    let (chosen, other, which) = if rounds.best {
        let (fast, lagging) = (
            offset(&world.nodes[quick]).await?,
            offset(&world.nodes[down]).await?,
        );
        let (chosen, other) = if lagging > fast {
            (down, quick)
        } else {
            (quick, down)
        };
        let which = format!(
            ", the {} one (replication offsets: fast {fast}, lagging {lagging}),",
            label(chosen)
        );
        (chosen, other, which)
    } else {
        (down, quick, String::new())
    };
    let Promoted {
        had_key,
        on_other,
        master,
        port: promoted_port,
    } = promote(
        world,
        chosen,
        rounds.two.then_some((other, label(other))),
        rounds.front,
    )
    .await?;
    window.end_ms = case.clock_ms();
    if caught && still_inside && master {
        window.proof = Some(format!(
            "a grab on a was inside when {target}{which} was promoted ({promote_after} ms after it was seen inside); its ROLE answers master; it {} the lock key{on_other}",
            if had_key { "had" } else { "did NOT have" }
        ));
    } else {
        case.step(format!(
            "not counted: holder seen inside {caught}, still inside at the promotion {still_inside}, the replica's ROLE master {master}"
        ));
    }
    Ok((window, promoted_port, chosen, other))
}

/// A replica's replication offset (`slave_repl_offset` of `INFO
/// replication`): how much of the primary's stream it has processed.
async fn offset(node: &RedisNode) -> anyhow::Result<u64> {
    node.info("replication", "slave_repl_offset")
        .await?
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no slave_repl_offset in the INFO of {}", node.name))
}

/// Whether a section of replica `name` is inside now, as the arbiter has
/// it (an unreadable history counts as not inside: the injection is then
/// not counted).
async fn inside(service: &seckill_load::api::Service, name: &str) -> bool {
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
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = node.info("replication", "master_link_status").await?;
        if status.as_deref() == Some("up") {
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
    /// What the other replica had, as a clause.
    on_other: String,
    /// The promoted replica's ROLE answers master.
    master: bool,
    /// Its port.
    port: u16,
}

/// Promote `world.nodes[chosen]` (`REPLICAOF NO ONE`) and aim the
/// replicas' front proxy at it; the other replica, when there are two
/// (`other`: its slot, and which it is, `fast` or `lagging`), is asked
/// whether it has the lock key, then follows the promoted one on a direct
/// link, as Sentinel reconfigures the others.
async fn promote(
    world: &World,
    chosen: usize,
    other: Option<(usize, &str)>,
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
    let mut on_other = String::new();
    if let Some((other, which)) = other {
        let mut fast = world.nodes[other].conn().await?;
        let exists: i64 = redis::cmd("EXISTS")
            .arg("lock:product:1")
            .query_async(&mut fast)
            .await?;
        on_other = format!(
            "; the {which} replica {} it",
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
        on_other,
        master,
        port: promoted_port,
    })
}
