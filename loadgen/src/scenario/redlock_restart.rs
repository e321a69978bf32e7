//! `redlock-restart` — Kleppmann's restart without fsync: the same
//! partitioned five-node Redlock as `clock-jump`; node 3 is killed while a
//! lock is held and comes back empty (its vote is given twice), after a
//! delay longer than the TTL (every lock it knew has expired anyway), or
//! with `appendfsync always` (it comes back with its keys).
//!
//! A restart counts (the proof it landed) when node 3's `INFO` `run_id`
//! changed: a new process; its key count after the restart is printed.

use anyhow::Context as _;
use serde_json::{json, Value};

use super::buyers;
use super::case::Expectation;
use super::world::{
    arm, overlaps_so_far, partitioned_redlock, pause, start_buyers, wait_inside, work, CaseRun,
};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs::RedisNode;
use std::time::Duration;

/// How node 3 comes back.
pub const VARIANTS: &[&str] = &["restart", "delayed-restart", "appendfsync-always"];

/// Redlock only: what it should do when node 3 restarts each way.
pub fn expect(strategy: &StrategyEntry, variant: &str) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario breaks Redlock's nodes; run it with redlock".into());
    }
    let (expected, why) = match variant {
        "restart" => (Breaks, "node 3 comes back empty: its vote is given twice"),
        "delayed-restart" => (
            Holds,
            "node 3 stays down longer than the TTL; every lock it knew has expired",
        ),
        _ => (Holds, "appendfsync always: node 3 comes back with its keys"),
    };
    Ok((expected, why.into()))
}

/// Kill node 3 while a lock is held and bring it back as `variant` says. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, variant) = cx.parts();
    let ttl = 1500;
    let aof: &[&str] = if variant == "appendfsync-always" {
        &["--appendonly", "yes", "--appendfsync", "always"]
    } else {
        &[]
    };
    partitioned_redlock(lab, world, ttl, aof, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, work(300)).await?;
    case.step(format!("5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work 300 ms{}", if aof.is_empty() { "" } else { "; node 3: appendonly yes, appendfsync always" }));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 6);
    pause(400).await;
    // The variant expected to break restarts node 3 again (up to twice as
    // often) until the history shows an overlap, as gc-pause freezes
    // again: on two shared cores one restart can land while the other side
    // is between attempts. The variants expected to hold restart it the
    // same number of times whatever they show.
    let breaking = variant == "restart";
    let restarts = match (lab.options.quick, breaking) {
        (true, false) => 4,
        (false, false) => 5,
        (true, true) => 8,
        (false, true) => 10,
    };
    let mut landed = 0;
    for _ in 0..restarts {
        if !wait_inside(&service, None, Duration::from_secs(3)).await? {
            continue;
        }
        let before = run_id(&world.nodes[3]).await?;
        let node = &mut world.nodes[3];
        node.kill();
        if variant == "delayed-restart" {
            case.step(format!(
                "kill -9 node 3 while a lock is held; restart it after {} ms (> TTL)",
                ttl + 300
            ));
            pause(ttl + 300).await;
        } else {
            case.step("kill -9 node 3 while a lock is held; restart it at once");
        }
        world.nodes[3].restart().await?;
        // The proof: a new process (another run_id) with or without the key.
        let after = run_id(&world.nodes[3]).await?;
        let mut conn = world.nodes[3].conn().await?;
        let keys: i64 = redis::cmd("DBSIZE").query_async(&mut conn).await?;
        if after == before {
            case.step(format!(
                "node 3's run_id is still {before}: it did not restart, not counted"
            ));
            continue;
        }
        landed += 1;
        case.proven(format!(
            "node 3's INFO run_id changed ({} → {}); it holds {keys} key(s) now",
            &before[..8.min(before.len())],
            &after[..8.min(after.len())]
        ));
        pause(500).await;
        if breaking {
            let overlaps = overlaps_so_far(&service, strategy).await;
            if overlaps > 0 {
                case.step(format!(
                    "the history shows {overlaps} overlap(s): no more restarts"
                ));
                break;
            }
        }
    }
    load.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "partition": "a: nodes 1,2,3; b: nodes 3,4,5", "node3_restarts": landed, "restart": variant, "lock_ttl_ms": ttl }),
    )
}

/// `node`'s `run_id` (`INFO server`): a new one for every process.
async fn run_id(node: &RedisNode) -> anyhow::Result<String> {
    let mut conn = node.conn().await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await?;
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
        .context("no run_id in INFO server")
}
