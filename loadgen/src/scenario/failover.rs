//! `failover` — the service's one Redis has a replica (replication delayed
//! 300 ms by a proxy); the replica is promoted while a lock is held and the
//! service's link pointed at it. Without `WAIT 1` the lock key has not
//! reached the replica; with it, the holder entered only once it had. The
//! fence refuses the promoted replica's stale tokens either way.
//!
//! `wait-1-two-replicas` is the Redis docs' own caveat (WAIT "does not
//! make Redis a strongly consistent store"): a second replica on a fast
//! link acknowledges the `WAIT 1`, and the lagging one is promoted — it
//! lacks the key; the fast replica then follows it (as Sentinel would
//! have it) and acknowledges the next holder's `WAIT 1` too: the lock is
//! given twice. (Its holder works 1.5 s, so that it is still inside when
//! the fast replica has resynchronised.)
//!
//! The proof the failover landed: a grab was inside when the replica was
//! promoted, and the promoted replica's `ROLE` answers `master`.

use std::time::Duration;

use anyhow::bail;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::buyers;
use super::case::Expectation;
use super::lab::Setup;
use super::world::{
    arm, duration, pause, start_buyers, start_replicas, wait_inside, work, CaseRun,
};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs::{self, RedisNode};
use seckill_proxy::Proxy;

/// Without and with `WAIT 1` after each lock write; and `WAIT 1`
/// acknowledged by one replica while the other is promoted.
pub const VARIANTS: &[&str] = &["no-wait", "wait-1", "wait-1-two-replicas"];

/// The single-instance Redis locks only: what each does when the replica
/// is promoted.
pub fn expect(strategy: &StrategyEntry, variant: &str) -> Expectation {
    if matches!(strategy.name.as_str(), "etcd-lease" | "zk-ephemeral-seq") {
        return Err("this scenario fails over the service's one Redis; etcd and ZooKeeper replicate by consensus".into());
    }
    let (expected, why) = match (strategy.kind, variant) {
        (Kind::Validity | Kind::LockTable | Kind::InTransaction | Kind::NotALock | Kind::Session, _) => {
            return Err("this scenario fails over the service's one Redis; it applies to the single-instance Redis locks".into())
        }
        (Kind::Fenced, _) => (Holds, "the promoted replica's older counter yields stale tokens the database refuses"),
        (_, "no-wait") => (Breaks, "the lock key had not reached the replica when it was promoted"),
        (_, "wait-1-two-replicas") => (Breaks, "WAIT 1 was acknowledged by the fast replica; the lagging one, promoted, lacks the key"),
        // Only the SET NX PX family waits for the replica (WAIT 1).
        (_, _) if strategy.name.starts_with("set-nx-px") => {
            (Holds, "WAIT 1: the holder enters only once the replica has the key")
        }
        _ => (Breaks, "this lock's writes do not WAIT for the replica"),
    };
    Ok((expected, why.into()))
}

/// Promote the replica while one grab on replica a is inside, then rush
/// replica b. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, variant) = cx.parts();
    let ttl = 2000;
    let lag = 300;
    let primary = RedisNode::start(
        &lab.dir,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
        Vec::new(),
    )
    .await?;
    let link = Proxy::start(procs::local(primary.port)).await?;
    link.set_delays(Duration::ZERO, Duration::from_millis(lag));
    let replica = RedisNode::start(
        &lab.dir,
        "replica",
        &[
            "--replicaof",
            "127.0.0.1",
            &link.port.to_string(),
            // Promoted, it feeds the fast replica at once.
            "--repl-diskless-sync-delay",
            "0",
        ],
        Vec::new(),
    )
    .await?;
    // The second replica, on a direct link: it acknowledges WAIT 1 at once.
    let two = variant == "wait-1-two-replicas";
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
    let extra = if variant.starts_with("wait-1") {
        vec![
            ("SECKILL_REDIS_WAIT_REPLICAS".to_owned(), "1".to_owned()),
            (
                "SECKILL_REDIS_WAIT_TIMEOUT_MS".to_owned(),
                "1000".to_owned(),
            ),
        ]
    } else {
        Vec::new()
    };
    let mut conn = replica.conn().await?;
    for node in std::iter::once(&replica).chain(fast.iter()) {
        synced(node).await?;
    }
    let replica_port = replica.port;
    world.nodes.push(primary);
    world.nodes.push(replica);
    world.nodes.extend(fast);
    world.proxies.push(link);
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
    // With two replicas the rush's own WAIT 1 needs the fast replica to
    // follow the promoted one first: the holder stays inside longer.
    let work_ms = if two { 1500 } else { 300 };
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!(
        "primary + replica (replication delayed {lag} ms by a proxy){}; both app replicas use the primary through a proxy; TTL {ttl} ms, work {work_ms} ms{}",
        if two { " + a second replica on a direct link" } else { "" },
        if variant.starts_with("wait-1") { ", WAIT 1 after each lock write" } else { "" }
    ));
    let targets = buyers::targets(world.urls());
    let warm = start_buyers(lab, case, &targets, 6);
    pause(duration(lab, 1500)).await;
    warm.stop().await;
    pause(lag + 300).await;
    case.step("contended warm-up done; the lock is free and the replica in sync");
    let holder = buyers::grab_once(
        &lab.http,
        &world.replica("a")?.url(),
        &case.next_user,
        &case.tally,
    );
    let caught = wait_inside(&service, Some("a"), Duration::from_secs(3)).await?;
    let key_on_replica: i64 = redis::cmd("EXISTS")
        .arg("lock:product:1")
        .query_async(&mut conn)
        .await?;
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut conn)
        .await?;
    front.retarget(procs::local(replica_port));
    let on_fast = if two {
        let mut fast = world.nodes[2].conn().await?;
        let exists: i64 = redis::cmd("EXISTS")
            .arg("lock:product:1")
            .query_async(&mut fast)
            .await?;
        format!(
            " (the fast replica, which acknowledged WAIT 1, {})",
            if exists == 1 { "has it" } else { "does not" }
        )
    } else {
        String::new()
    };
    case.step(format!(
        "one grab on a is inside; the {}replica {} the lock key{on_fast}: promote it (REPLICAOF NO ONE) and point the service's Redis link at it",
        if two { "lagging " } else { "" },
        if key_on_replica == 1 { "already has" } else { "does not have yet" }
    ));
    world.proxies.push(front);
    if two {
        let mut fast = world.nodes[2].conn().await?;
        redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(replica_port)
            .query_async::<()>(&mut fast)
            .await?;
        case.step("the fast replica now follows the promoted one (REPLICAOF, as Sentinel reconfigures the others)");
    }
    // The proof: the promoted replica says it is a master now.
    let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
    let master = matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master")
        || matches!(role.first(), Some(redis::Value::SimpleString(r)) if r == "master");
    if caught && master {
        case.proven("a grab on a was inside when the replica was promoted, and the replica's ROLE answers master");
    } else {
        case.step(format!(
            "not proven: holder inside {caught}, the replica's ROLE master {master}"
        ));
    }
    let rush = start_buyers(lab, case, &buyers::retargeted(world.replica("b")?.url()), 6);
    case.step("6 buyers rush replica b");
    let _ = holder.await;
    pause(duration(lab, 1500)).await;
    rush.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "replication_lag_ms": lag, "wait_replicas": u8::from(variant.starts_with("wait-1")), "replicas": if two { 2 } else { 1 }, "promoted": "the lagging replica", "lock_ttl_ms": ttl }),
    )
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
