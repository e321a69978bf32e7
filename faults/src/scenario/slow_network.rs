//! `slow-network` — Kleppmann's delayed packets: every reply from Redis to
//! replica a arrives `delay` late (a proxy holds it back; its requests go
//! through at once). A TTL lock's grant arrives after its key expired (or
//! so late that it expires during the section), and the holder enters
//! anyway; designs that check the time left (a lease deadline, Redlock's
//! validity) give a late grant back.
//!
//! Redlock has two guards, and the dials separate them: the per-node
//! timeout (`node_timeout_ms`, 50 ms by default, as the Redis docs advise
//! a short one) drops a vote slower than it, so a delay above the timeout
//! never makes a quorum at all; with a timeout longer than the delay the
//! late votes arrive, and only the validity check (TTL − elapsed − drift)
//! stands between the client and an expired lock — antirez's claim,
//! tested where it matters.
//!
//! `link=postgres` moves the delay to replica a's link to PostgreSQL, after
//! the lock: its requests to the database (the stock read, the write, the
//! commit) arrive `delay` late, while its locks answer at once. A check
//! before the write cannot help a write already on the wire: the lock
//! expires while the write travels, the next holder reads, writes and
//! commits, and the late write lands on top (a lost update) — unless the
//! database itself refuses it (a fence, a row lock). With `where=anywhere`
//! the delay starts at a moment the sections do not choose: exposed when 6
//! trips (`BEGIN`, the read, the duplicate check, then the write, the
//! insert, the commit) × delay + work > TTL, and once the 3 trips before
//! the check (`BEGIN`, the read, the duplicate check) with the work
//! outlast the lock's validity, only a section caught between its check
//! and its write can be damaged (a fresh one fails its check), a race. With `where=after-check` replica
//! a's own hook stops it as it passes its last check, the delay begins,
//! and a is let go: its write is the first late request, every time.
//! Exposed when the 3 trips after the check (the write, the insert, the
//! commit) × delay + work > TTL.
//!
//! Each injection is one window of delay: the delay switched on while
//! buyers press on both replicas, held for `delay` + TTL + work (with
//! `link=postgres`, 3 × `delay` + TTL + work: long enough for a section
//! begun as the delay starts to land its write while b's buyers, pausing
//! 100 ms between grabs instead of 800, still press; with
//! `where=after-check`, 3 × `delay` + 50 ms: until the held section's
//! commit is on its way, so no later section has more late trips than
//! it), switched off; the round judged. A damaged round is a race (b must
//! read before a's late commit), so its rate stays below certainty near
//! the boundary. In our release runs (TTL 400 ms, work 150 ms, 20
//! injections), data damaged: `where=anywhere` 10 of 20 at 0.1ttl, 7–11
//! of 20 from 0.2 to 0.6ttl (only a section caught before its write),
//! 19 of 20 at 1.5ttl; `where=after-check` 0 of 20 at 0.05 and 0.1ttl, 12
//! of 20 at 0.4ttl, 20 of 20 at 0.8 and 1.5ttl.
//!
//! The proof the delay landed: a Redis `PING` through replica a's links
//! (to its Redis and to Redlock node 1), or a `SELECT 1` through its link
//! to PostgreSQL, timed while the delay is on, takes at least the delay;
//! with `where=after-check`, also replica a stopped at its last check.

use seckill_load::api::StrategyName;
use std::time::Duration;

use sqlx::Connection as _;

mod model;

pub use model::{
    expect, late_grant_breaks, lives_in_redis, postgres_damage, votes_arrive, DelayFrom, Link,
    SlowNetworkDials, PARAMS, QUICK,
};

use super::buyers;
use super::dials;
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::{Lab, Setup};
use super::world::{
    arm, pause, redis_and_nodes, start_replicas, timed_ping, work, Case, CaseRun, World,
};
use crate::procs::{self, RedisNode};
use model::TRIPS_AFTER_CHECK;
use seckill_load::api::FreezeAt;
use seckill_proxy::Proxy;

/// b's buyers' pause between grabs (ms): `link=redis` leaves the lock
/// free most of the time; `link=postgres` presses.
const B_THINK_REDIS_MS: u64 = 800;
const B_THINK_PG_MS: u64 = 100;

/// Delay replica a's link (`link`: its replies from Redis, or its
/// requests to PostgreSQL), `injections` windows. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = SlowNetworkDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let (delay, injections) = (d.delay, d.injections);
    let postgres = d.link == Link::Postgres;
    let b_think = Duration::from_millis(if postgres {
        B_THINK_PG_MS
    } else {
        B_THINK_REDIS_MS
    });
    let database_via = start_service(lab, world, case, strategy, &d, b_think).await?;
    let on_a = buyers::targets(vec![world.replica("a")?.url()]);
    let on_b = buyers::targets(vec![world.replica("b")?.url()]);
    // The proof's probe (link=postgres): a connection through a's link,
    // opened once, before any delay.
    let mut probe = match &database_via {
        Some(url) => Some(sqlx::PgConnection::connect(url).await?),
        None => None,
    };
    // a's buyers press on. link=redis: b's leave the lock free most
    // of the time, so a's grants — each one late — are not all lost
    // to b. link=postgres: a's grants are prompt; b's press too, so a
    // next holder writes while a's late write is on its way.
    let loads = [(&on_a, 2, Duration::ZERO), (&on_b, 2, b_think)];
    for _ in 0..injections {
        delay_window(lab, world, case, strategy, &d, &loads, probe.as_mut()).await?;
    }
    case.proven_by_injections(|landed| {
        format!("{landed} of {injections} windows seen: a round trip through a's slow link took at least {delay} ms")
    });
    Ok(dials::record(
        &d,
        Facts {
            links: Some(
                if postgres {
                    "postgresql (requests)"
                } else {
                    "redis and every redlock node (replies)"
                }
                .to_owned(),
            ),
            ..Facts::replica_a()
        },
    ))
}

/// Step 1: the replicas wired up, the strategy armed, the setup logged;
/// the database's URL through a's link (link=postgres), for the probe.
async fn start_service(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    d: &SlowNetworkDials,
    b_think: Duration,
) -> anyhow::Result<Option<String>> {
    let (ttl, delay, work_ms) = (d.ttl_ms, d.delay, d.work_ms);
    let (timeout, injections) = (d.node_timeout_ms, d.injections);
    let postgres = d.link == Link::Postgres;
    let after_check = postgres && d.r#where == DelayFrom::AfterCheck;
    let database_via = wire_up(lab, world, strategy, (ttl, timeout), postgres).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    let what = if after_check {
        "from the moment replica a passes its last check, every request from a to PostgreSQL arrives"
    } else if postgres {
        "every request from a to PostgreSQL arrives"
    } else {
        "every reply from Redis to a arrives"
    };
    case.step(format!(
        "replicas a, b up (TTL {ttl} ms, work {work_ms} ms, Redlock node timeout {timeout} ms); per injection 2 buyers on a, 2 on b pausing {} ms between grabs; {injections} injections: {what} {delay} ms late",
        b_think.as_millis()
    ));
    Ok(database_via)
}

/// Step 2, once per injection: buyers on `loads`, the delay on, the proof
/// taken, the delay held and switched off; the round judged.
async fn delay_window(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    d: &SlowNetworkDials,
    loads: &[(&buyers::Targets, usize, Duration)],
    probe: Option<&mut sqlx::PgConnection>,
) -> anyhow::Result<()> {
    let (delay, postgres) = (d.delay, d.link == Link::Postgres);
    let round = inject::begin_aimed(&lab.http, world, case, loads, 100).await?;
    let delayed = delay_on(world, case, strategy, d).await?;
    // The proof: a round trip through a's slow links takes at least
    // the delay (a PING to its Redis and Redlock node 1, or a
    // `SELECT 1` to PostgreSQL).
    let slowest = round_trips(world, probe, delay).await;
    let wanted = if postgres { 1 } else { 2 };
    let seen = delayed.at_check
        && slowest.len() == wanted
        && slowest.iter().all(|d| d.as_millis() >= u128::from(delay));
    pause(hold_ms(d).saturating_sub(case.clock_ms() - delayed.start_ms)).await;
    let window = delay_off(world, case, strategy, d, &delayed, &slowest, seen).await;
    pause(d.work_ms + 150).await;
    round.end(world, case, strategy, window).await?;
    Ok(())
}

/// The delay just switched on.
#[derive(Debug)]
struct DelayOn {
    /// Replica a alone, to read its lock attempts.
    a_only: seckill_load::api::Service,
    /// Its lock attempts before the delay (`None`: where=after-check, or
    /// unreadable).
    tries_before: Option<f64>,
    /// When the delay began, ms on the case's clock.
    start_ms: u64,
    /// Replica a was held at its check as it began (always, where=anywhere).
    at_check: bool,
}

/// Switch the delay on in every proxy of a's links (where=after-check:
/// with replica a held at its last check, then let go).
async fn delay_on(
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    d: &SlowNetworkDials,
) -> anyhow::Result<DelayOn> {
    let (delay, postgres) = (d.delay, d.link == Link::Postgres);
    let after_check = postgres && d.r#where == DelayFrom::AfterCheck;
    // where=after-check: replica a is held at its last check (its own
    // hook stops it there), the delay switched on, and a let go: the
    // write it sends next is the first late request.
    // where=anywhere: a's lock attempts so far, to see it try while
    // the delay is in force. Read before a may be stopped: a stopped
    // replica answers nothing, not even its metrics, and a read that
    // waited for it would hold a past its TTL.
    let a_only =
        seckill_load::api::Service::new(vec![world.replica("a")?.url()], super::lab::TOKEN.into());
    let tries_before = if after_check {
        None
    } else {
        lock_attempts(&a_only, strategy).await
    };
    let held = if after_check {
        inject::stop_replica(world, case, "a", FreezeAt::AfterCheck).await?
    } else {
        None
    };
    for proxy in &world.proxies {
        if postgres {
            proxy.set_delays(Duration::from_millis(delay), Duration::ZERO);
        } else {
            proxy.set_delays(Duration::ZERO, Duration::from_millis(delay));
        }
    }
    let start_ms = case.clock_ms();
    let at_check = match held {
        Some(stopped) => {
            procs::signal(stopped.pid, "CONT")?;
            true
        }
        None => !after_check,
    };
    Ok(DelayOn {
        a_only,
        tries_before,
        start_ms,
        at_check,
    })
}

/// How long the delay is held, ms.
fn hold_ms(d: &SlowNetworkDials) -> u64 {
    let (ttl, delay, work_ms) = (d.ttl_ms, d.delay, d.work_ms);
    let postgres = d.link == Link::Postgres;
    let after_check = postgres && d.r#where == DelayFrom::AfterCheck;
    // link=postgres: long enough that a section begun as the delay
    // starts has its write land (BEGIN, the read, the write: three
    // late trips) while b's buyers still press. where=after-check:
    // until a's held section has sent its last late request (the
    // commit) and a little more; a section begun meanwhile has at most
    // its three first trips late, no more than the held one.
    if after_check {
        TRIPS_AFTER_CHECK * delay + 50
    } else if postgres {
        3 * delay + ttl + work_ms
    } else {
        delay + ttl + work_ms
    }
}

/// Whether replica a was touched, the delay switched off, and the
/// injection's window (proven when `seen` and touched).
async fn delay_off(
    world: &World,
    case: &mut Case,
    strategy: StrategyName,
    d: &SlowNetworkDials,
    delayed: &DelayOn,
    slowest: &[Duration],
    seen: bool,
) -> Window {
    let (delay, postgres) = (d.delay, d.link == Link::Postgres);
    let after_check = postgres && d.r#where == DelayFrom::AfterCheck;
    // The holder was touched: held at its check as the delay began
    // (where=after-check), or it tried to take the lock while the
    // delay was in force — else the slow link delayed nobody's lock.
    let tries = match delayed.tries_before {
        Some(before) => lock_attempts(&delayed.a_only, strategy)
            .await
            .map_or(0.0, |after| after - before),
        None => 0.0,
    };
    let touched = (after_check && delayed.at_check) || tries >= 1.0;
    if !touched {
        case.step(format!(
            "not counted: replica a did not try to take the lock while the delay was in force ({tries} attempts)"
        ));
    }
    for proxy in &world.proxies {
        proxy.set_delay(Duration::ZERO);
    }
    let end_ms = case.clock_ms();
    Window {
        target: if postgres {
            "replica a's link to PostgreSQL".into()
        } else {
            "replica a's links to Redis".into()
        },
        holder: Some("a".into()),
        start_ms: delayed.start_ms,
        end_ms,
        proof: (seen && touched).then(|| {
            format!(
                "{}; replica a {}",
                proof(slowest, delay, postgres, after_check),
                if after_check {
                    "held the lock at its check as the delay began".to_owned()
                } else {
                    format!("tried to take the lock {tries} times while the delay was in force")
                }
            )
        }),
        stalled: None,
        refused: None,
    }
}

/// Two replicas: b reaches Redis, the Redlock nodes and PostgreSQL
/// directly; a reaches Redis and every node through a proxy
/// (`link=redis`), or PostgreSQL through one (`link=postgres`, whose URL
/// is returned for the proof's probe). The proxies join the world.
async fn wire_up(
    lab: &Lab,
    world: &mut World,
    strategy: StrategyName,
    (ttl, timeout): (u64, u64),
    postgres: bool,
) -> anyhow::Result<Option<String>> {
    // Both replicas reach the strategy's own server (etcd, ZooKeeper,
    // MariaDB) directly: without it those strategies could not run here
    // (the atlas's slow-db-link cells of all three were `undecided`, every
    // case failing on `strategy_unavailable`).
    let mut timeout_env = lab.coordination(strategy)?;
    timeout_env.push((
        "SECKILL_REDLOCK_NODE_TIMEOUT_MS".to_owned(),
        timeout.to_string(),
    ));
    let (redis, direct_nodes) = redis_and_nodes(lab).await?;
    let b_redis = redis.url();
    let b_redlock: Vec<String> = direct_nodes.iter().map(RedisNode::url).collect();
    // Replica a reaches every Redis through a proxy (link=redis), or its
    // database (link=postgres); b reaches everything directly.
    let mut a_links = Vec::new();
    let (a_setup, database_via) = if postgres {
        let (proxy, url) = lab.database_proxy().await?;
        a_links.push(proxy);
        (
            Setup::new(&b_redis, ttl)
                .redlock(b_redlock.clone())
                .database(&url),
            Some(url),
        )
    } else {
        for node in std::iter::once(&redis).chain(direct_nodes.iter()) {
            a_links.push(Proxy::start(procs::local(node.port)).await?);
        }
        let urls: Vec<String> = a_links
            .iter()
            .map(|p| format!("redis://127.0.0.1:{}", p.port))
            .collect();
        (Setup::new(&urls[0], ttl).redlock(urls[1..].to_vec()), None)
    };
    world.nodes.push(redis);
    world.nodes.extend(direct_nodes);
    start_replicas(
        lab,
        world,
        [
            ("a", a_setup.extra(timeout_env.clone())),
            (
                "b",
                Setup::new(&b_redis, ttl)
                    .redlock(b_redlock)
                    .extra(timeout_env),
            ),
        ],
    )
    .await?;
    world.proxies.extend(a_links);
    Ok(database_via)
}

/// The proof's round trips through a's slow links, timed: a `SELECT 1`
/// through its link to PostgreSQL (`probe`), or a PING to its Redis and to
/// Redlock node 1. Those that failed are left out.
async fn round_trips(
    world: &World,
    probe: Option<&mut sqlx::PgConnection>,
    delay: u64,
) -> Vec<Duration> {
    let mut slowest = Vec::new();
    if let Some(conn) = probe {
        let sent = tokio::time::Instant::now();
        if sqlx::query("SELECT 1").execute(&mut *conn).await.is_ok() {
            slowest.push(sent.elapsed());
        }
    } else {
        for proxy in &world.proxies[..2] {
            if let Ok(took) = timed_ping(proxy.port, Duration::from_millis(delay * 3 + 1000)).await
            {
                slowest.push(took);
            }
        }
    }
    slowest
}

/// Replica `service`'s lock attempts under `strategy` so far
/// (`seckill_lock_attempts_total`; `None`: unreadable).
async fn lock_attempts(
    service: &seckill_load::api::Service,
    strategy: StrategyName,
) -> Option<f64> {
    service.scrape().await.ok().map(|s| {
        s.sum(
            "seckill_lock_attempts_total",
            &[("strategy", strategy.as_str())],
        )
    })
}

/// The window's proof, as the report prints it.
fn proof(slowest: &[Duration], delay: u64, postgres: bool, after_check: bool) -> String {
    format!(
        "{}{} took {} (≥ {delay} ms)",
        if after_check {
            "replica a stopped itself at its last check and was let go as the delay began; "
        } else {
            ""
        },
        if postgres {
            "a SELECT 1 through a's link to PostgreSQL"
        } else {
            "a PING through a's links to Redis and to Redlock node 1"
        },
        slowest
            .iter()
            .map(|d| format!("{} ms", d.as_millis()))
            .collect::<Vec<_>>()
            .join(" and ")
    )
}
