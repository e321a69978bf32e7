//! `slow-network` — Kleppmann's delayed packets: every reply from Redis to
//! one replica arrives 1.5× the TTL late (a proxy holds it back; its
//! requests go through at once). A TTL lock's grant arrives after its key
//! expired, and the holder enters anyway; designs that check the time left
//! (a lease deadline, Redlock's validity) give a late grant back.
//!
//! The proof the delay landed: a Redis `PING` through replica a's links
//! (to its Redis and to Redlock node 1), timed while the delay is on,
//! takes at least the delay.

use std::time::Duration;

use serde_json::{json, Value};

use super::buyers::{self, Buyers};
use super::case::Expectation;
use super::lab::Setup;
use super::world::{arm, duration, pause, start_buyers, start_replicas, timed_ping, work, CaseRun};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs::{self, RedisNode};
use seckill_proxy::Proxy;

/// What `strategy` should do when its grants arrive late.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    let (expected, why) = match strategy.kind {
        Kind::Ttl => (
            Breaks,
            "the grant arrives after the key expired; the holder enters anyway",
        ),
        Kind::Lease => (
            Holds,
            "a grant that arrives after the lease deadline is given back",
        ),
        Kind::Validity => (
            Holds,
            "per-node timeouts, and validity = TTL - elapsed refuses a late quorum",
        ),
        Kind::Fenced => (Holds, "late holders are refused by the database"),
        Kind::NoExpiry | Kind::LockTable | Kind::InTransaction | Kind::NotALock | Kind::Session => {
            (Holds, "no TTL on the slow link to run out")
        }
        Kind::NoLock | Kind::ProcessLocal => return Err("not applicable".into()),
    };
    Ok((expected, why.into()))
}

/// Delay every reply from Redis to replica a past the TTL while buyers
/// press on both replicas. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, _) = cx.parts();
    let ttl = 400;
    let delay = ttl * 3 / 2;
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let mut direct_nodes = Vec::new();
    for i in 1..=3 {
        direct_nodes.push(RedisNode::start(&lab.dir, &format!("node{i}"), &[], Vec::new()).await?);
    }
    // Replica a reaches every Redis through a proxy; b directly.
    let mut a_links = Vec::new();
    for node in std::iter::once(&redis).chain(direct_nodes.iter()) {
        a_links.push(Proxy::start(procs::local(node.port)).await?);
    }
    let a_redis = format!("redis://127.0.0.1:{}", a_links[0].port);
    let a_redlock: Vec<String> = a_links[1..]
        .iter()
        .map(|p| format!("redis://127.0.0.1:{}", p.port))
        .collect();
    let b_redis = redis.url();
    let b_redlock: Vec<String> = direct_nodes.iter().map(RedisNode::url).collect();
    world.nodes.push(redis);
    world.nodes.extend(direct_nodes);
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&a_redis, ttl).redlock(a_redlock)),
            ("b", Setup::new(&b_redis, ttl).redlock(b_redlock)),
        ],
    )
    .await?;
    world.proxies.extend(a_links);
    let service = world.service();
    arm(&service, strategy, work(300)).await?;
    // a's buyers press on; b's leave the lock free most of the time, so
    // a's grants — each one late — are not all lost to b.
    let on_a = buyers::targets(vec![world.replica("a")?.url()]);
    let on_b = buyers::targets(vec![world.replica("b")?.url()]);
    let load_a = start_buyers(lab, case, &on_a, 2);
    let load_b = Buyers::start(
        &lab.http,
        &on_b,
        2,
        Duration::from_millis(800),
        &case.next_user,
        &case.tally,
    );
    case.step(format!("replicas a, b up (TTL {ttl} ms, work 300 ms); 2 buyers on a, 2 on b pausing 800 ms between grabs"));
    pause(300).await;
    for proxy in &world.proxies {
        proxy.set_delays(Duration::ZERO, Duration::from_millis(delay));
    }
    case.step(format!("every reply from Redis to replica a now arrives {delay} ms late (its requests are not delayed)"));
    // The proof: a PING through a's links (its Redis, Redlock node 1)
    // takes at least the delay.
    let mut slowest = Vec::new();
    for proxy in &world.proxies[..2] {
        match timed_ping(proxy.port, Duration::from_millis(delay * 3)).await {
            Ok(took) => slowest.push(took),
            Err(e) => case.step(format!(
                "PING through a's link on port {}: {e:#}",
                proxy.port
            )),
        }
    }
    let took: Vec<String> = slowest
        .iter()
        .map(|d| format!("{} ms", d.as_millis()))
        .collect();
    if slowest.len() == 2 && slowest.iter().all(|d| d.as_millis() >= u128::from(delay)) {
        case.proven(format!(
            "a PING through replica a's links to Redis and to Redlock node 1 took {} (≥ {delay} ms)",
            took.join(" and ")
        ));
    } else {
        case.step(format!(
            "a PING through replica a's links took {}: the delay is not seen",
            took.join(" and ")
        ));
    }
    pause(duration(lab, 5000)).await;
    for proxy in &world.proxies {
        proxy.set_delay(Duration::ZERO);
    }
    case.step("links restored");
    load_a.stop().await;
    load_b.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "reply_delay_ms": delay, "replica": "a", "links": "redis and every redlock node", "lock_ttl_ms": ttl }),
    )
}
