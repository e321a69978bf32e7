//! `clock-jump` — Kleppmann's clock jump on a Redlock node: five nodes,
//! replica a reaching nodes 1,2,3 and replica b nodes 3,4,5 (the other
//! links cut by proxies), so node 3 alone decides which side has a
//! majority. Node 3's wall clock (the clock Redis expires keys by) jumps
//! forward past the TTL while a lock is held: its key expires at once, and
//! both sides reach a majority. The `partition` variant is the control run
//! without a jump.
//!
//! The TTL (3 s against 300 ms of work) leaves the control run room for a
//! starved machine: a holder that waited 1.2 s for its CPU (two cores,
//! `stress-ng --cpu 2` beside the tests) outlived a 1.5 s lock.
//!
//! A jump counts only when it is proven to have landed: node 3's own
//! `TIME` moved forward by the jump. Either variant counts only when the
//! partition is seen in force first (the cut links drop new connections,
//! both sides' links to node 3 answer a `PING`). The jumps go on (up to a bound) until
//! the history shows an overlap, as `gc-pause` freezes again: on two shared
//! cores one jump can land while the other side is between attempts.

use std::time::Duration;

use serde_json::{json, Value};

use super::buyers;
use super::case::Expectation;
use super::world::{
    arm, clock_ahead_ms, duration, overlaps_so_far, partition_in_force, partitioned_redlock, pause,
    start_buyers, wait_inside, work, CaseRun,
};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs;

/// The runs of each strategy: the control, then the jumps.
pub const VARIANTS: &[&str] = &["partition", "partition+jump"];

/// Redlock only: what it should do with and without node 3's jump.
pub fn expect(strategy: &StrategyEntry, variant: &str) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario breaks Redlock's nodes; run it with redlock".into());
    }
    Ok(match variant {
        "partition" => (
            Holds,
            "node 3 is shared by both majorities: one holder at a time".into(),
        ),
        _ => (
            Breaks,
            "node 3's key expires early, so both sides reach a majority".into(),
        ),
    })
}

/// Jump node 3's clock while a lock is held (the `partition` variant:
/// no jump, the control run). The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, variant) = cx.parts();
    let ttl = 3000;
    let shift = lab.clockshift()?;
    let offset_file = lab.dir.join("node3.clock");
    procs::set_clock_offset(&offset_file, 0)?;
    partitioned_redlock(lab, world, ttl, &[], shift.env(&offset_file)).await?;
    let service = world.service();
    arm(&service, strategy, work(300)).await?;
    case.step(format!("5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work 300 ms; node 3 runs under clockshift"));
    let partitioned = partition_in_force(world, case).await;
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 6);
    pause(400).await;
    let mut offset: i64 = 0;
    let jumps = if variant == "partition" {
        0
    } else if lab.options.quick {
        8
    } else {
        12
    };
    let mut landed = 0;
    for _ in 0..jumps {
        if !wait_inside(&service, None, Duration::from_secs(2)).await? {
            continue;
        }
        offset += i64::try_from(ttl).unwrap_or(0) + 500;
        procs::set_clock_offset(&offset_file, offset)?;
        let ahead = clock_ahead_ms(&world.nodes[3]).await?;
        if ahead + 250 < offset {
            case.step(format!(
                "node 3's clock was set to +{offset} ms but reads only {ahead:+} ms: not counted"
            ));
            continue;
        }
        landed += 1;
        case.step(format!("node 3's wall clock jumps forward to +{offset} ms while a lock is held (its TIME reads {ahead:+} ms): its key expires at once"));
        pause(400).await;
        let overlaps = overlaps_so_far(&service, strategy).await;
        if overlaps > 0 {
            case.step(format!(
                "the history shows {overlaps} overlap(s): no more jumps"
            ));
            break;
        }
    }
    if jumps == 0 {
        pause(duration(lab, 3000)).await;
        case.step("no clock jump (control run)");
    }
    load.stop().await;
    case.step("buyers stopped");
    if partitioned && jumps == 0 {
        case.proven("the partition was in force (no jump: the control run)");
    } else if partitioned && landed > 0 {
        case.proven(format!(
            "the partition was in force, and node 3's own TIME read ahead by the jump {landed} time(s)"
        ));
    }
    Ok(
        json!({ "partition": "a: nodes 1,2,3; b: nodes 3,4,5", "clock_jumps": landed, "jump_ms": ttl + 500, "lock_ttl_ms": ttl }),
    )
}
