//! `redlock-restart` — Kleppmann's restart without fsync: the same
//! partitioned five-node Redlock as `clock-jump`; node 3 is killed while a
//! lock is held and comes back empty (its vote is given twice), after a
//! delay longer than the TTL (every lock it knew has expired anyway), or
//! with `appendfsync always` (it comes back with its keys).
//!
//! Each injection is a round of its own ([`super::inject`]): fresh stock
//! and history run, wait until a holder is inside, `kill -9` node 3, bring
//! it back (at once, or after `restart_delay` for `delayed-restart`), give
//! the other side 500 ms and the work, judge the round. A restart counts
//! (the proof it landed) when node 3's `INFO` `run_id` changed: a new
//! process; its key count after the restart is printed.

use anyhow::Context as _;
use serde_json::{json, Value};

use super::case::Expectation;
use super::inject::{self, Window};
use super::params::{self, Params, Spec, Unit};
use super::world::{arm, partitioned_redlock, pause, wait_inside, work, CaseRun};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs::RedisNode;
use std::time::Duration;

/// How node 3 comes back.
pub const VARIANTS: &[&str] = &["restart", "delayed-restart", "appendfsync-always"];

/// Its dials.
pub const PARAMS: &[Spec] = &[
    params::ttl("1500"),
    params::work("300"),
    params::injections("12"),
    Spec {
        name: "restart_delay",
        unit: Unit::Ms,
        default: "1.2ttl",
        meaning: "delayed-restart only: how long node 3 stays down before it rejoins",
    },
    params::users("6"),
];

/// Redlock only: what it should do when node 3 restarts each way. A key
/// node 3 held has between TTL − work and TTL left when it dies (a holder
/// is inside): down longer than that, it forgets nothing that matters.
pub fn expect(strategy: &StrategyEntry, variant: &str, params: &Params) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario breaks Redlock's nodes; run it with redlock".into());
    }
    let (ttl, delay) = (params.ttl_ms(), params.ms("restart_delay"));
    let (expected, why) = match variant {
        "restart" => (Breaks, "node 3 comes back empty: its vote is given twice"),
        "delayed-restart" if delay >= ttl => (
            Holds,
            "node 3 stays down longer than the TTL; every lock it knew has expired",
        ),
        "delayed-restart" => (
            Breaks,
            "node 3 rejoins empty before the lock it knew expired: its vote is given twice",
        ),
        _ => (Holds, "appendfsync always: node 3 comes back with its keys"),
    };
    Ok((expected, why.into()))
}

/// Kill node 3 `injections` times while a lock is held and bring it back
/// as `variant` says. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let params = cx.params;
    let (lab, world, case, strategy, variant) = cx.parts();
    let ttl = params.ttl_ms();
    let work_ms = params.ms("work_ms");
    let injections = params.injections();
    let users = usize::try_from(params.count("users")).unwrap_or(6).max(2);
    let down_ms = if variant == "delayed-restart" {
        params.ms("restart_delay")
    } else {
        0
    };
    let aof: &[&str] = if variant == "appendfsync-always" {
        &["--appendonly", "yes", "--appendfsync", "always"]
    } else {
        &[]
    };
    partitioned_redlock(lab, world, ttl, aof, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!(
        "5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work {work_ms} ms{}; {injections} rounds, node 3 killed in each and back after {down_ms} ms",
        if aof.is_empty() { "" } else { "; node 3: appendonly yes, appendfsync always" }
    ));
    for _ in 0..injections {
        let round = inject::begin(&lab.http, world, case, users, 200).await?;
        let inside = wait_inside(&service, None, Duration::from_secs(3)).await?;
        let start_ms = case.clock_ms();
        let mut window = Window {
            target: "node 3".into(),
            holder: None,
            start_ms,
            end_ms: start_ms,
            proof: None,
        };
        if inside {
            let before = run_id(&world.nodes[3]).await?;
            world.nodes[3].kill();
            pause(down_ms).await;
            world.nodes[3].restart().await?;
            let after = run_id(&world.nodes[3]).await?;
            let mut conn = world.nodes[3].conn().await?;
            let keys: i64 = redis::cmd("DBSIZE").query_async(&mut conn).await?;
            if after == before {
                case.step(format!(
                    "node 3's run_id is still {before}: it did not restart, not counted"
                ));
            } else {
                window.proof = Some(format!(
                    "node 3's INFO run_id changed ({} → {}) after {down_ms} ms down; it holds {keys} key(s) now",
                    &before[..8.min(before.len())],
                    &after[..8.min(after.len())]
                ));
            }
        } else {
            case.step("no holder was inside within 3 s: not counted");
        }
        pause(500 + work_ms).await;
        window.end_ms = case.clock_ms();
        round.end(world, case, strategy, window).await?;
    }
    let landed = case.injections.iter().filter(|i| i.proof.is_some()).count();
    if landed > 0 {
        case.proven(format!(
            "{landed} of {injections} restarts seen: node 3's run_id changed each time"
        ));
    }
    Ok(json!({
        "partition": "a: nodes 1,2,3; b: nodes 3,4,5",
        "node3_restarts": landed,
        "restart": variant,
        "down_ms": down_ms,
        "injections": injections,
        "lock_ttl_ms": ttl,
        "work_delay_ms": work_ms,
    }))
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
