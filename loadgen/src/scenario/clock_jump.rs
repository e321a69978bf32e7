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
//! Each injection is a round of its own ([`super::inject`]): fresh stock
//! and history run, wait until a holder is inside, jump node 3's clock
//! forward by `jump` (cumulative: its clock only ever moves ahead), give
//! the other side 400 ms, judge the round. The control variant makes the
//! same rounds without the jump. A jump counts only when it is proven to
//! have landed: node 3's own `TIME` moved forward by the jump, and the
//! partition was seen in force (the cut links drop new connections, both
//! sides' links to node 3 answer a `PING`).

use std::time::Duration;

use serde_json::{json, Value};

use super::case::Expectation;
use super::inject::{self, Window};
use super::params::{self, Params, Spec, Unit};
use super::world::{
    arm, clock_ahead_ms, partition_in_force, partitioned_redlock, pause, wait_inside, work, CaseRun,
};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs;

/// The runs of each strategy: the control, then the jumps.
pub const VARIANTS: &[&str] = &["partition", "partition+jump"];

/// Its dials.
pub const PARAMS: &[Spec] = &[
    params::ttl("3000"),
    params::work("300"),
    params::injections("12"),
    Spec {
        name: "jump",
        unit: Unit::Ms,
        default: "1.2ttl",
        meaning: "how far node 3's wall clock jumps forward at each injection",
    },
    params::users("6"),
];

/// `--quick`: nothing shorter — a round costs its wait for a holder, 400 ms
/// and the work, not the TTL; the 3 s TTL leaves the control room for a
/// starved machine (a holder that waited 1.2 s for its CPU outlived a
/// 1.5 s lock, two cores under `stress-ng --cpu 2`).
pub const QUICK: &[(&str, &str)] = &[];

/// Redlock only: what it should do with and without node 3's jump. The
/// key node 3 holds has between TTL − work and TTL left when the jump
/// lands (a holder is inside): a jump past that expires it at once.
pub fn expect(strategy: &StrategyEntry, variant: &str, params: &Params) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario breaks Redlock's nodes; run it with redlock".into());
    }
    let (ttl, jump, work) = (params.ttl_ms(), params.ms("jump"), params.ms("work_ms"));
    Ok(match variant {
        "partition" => (
            Holds,
            "node 3 is shared by both majorities: one holder at a time".into(),
        ),
        _ if jump + work / 2 > ttl => (
            Breaks,
            "node 3's key expires at the jump, so both sides reach a majority".into(),
        ),
        _ => (
            Holds,
            "the jump is shorter than the time node 3's key has left: nothing expires early".into(),
        ),
    })
}

/// Jump node 3's clock `injections` times, each while a lock is held
/// (the `partition` variant: the same rounds, no jump). The faults, as
/// reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let params = cx.params;
    let (lab, world, case, strategy, variant) = cx.parts();
    let ttl = params.ttl_ms();
    let work_ms = params.ms("work_ms");
    let jump = i64::try_from(params.ms("jump")).unwrap_or(i64::MAX);
    let injections = params.injections();
    let users = usize::try_from(params.count("users")).unwrap_or(6).max(2);
    let shift = lab.clockshift()?;
    let offset_file = lab.dir.join("node3.clock");
    procs::set_clock_offset(&offset_file, 0)?;
    partitioned_redlock(lab, world, ttl, &[], shift.env(&offset_file)).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    let jumping = variant != "partition";
    case.step(format!(
        "5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work {work_ms} ms; node 3 runs under clockshift; {injections} rounds{}",
        if jumping { format!(", node 3's clock jumping {jump} ms in each") } else { " without a jump (the control)".to_owned() }
    ));
    let partitioned = partition_in_force(world, case).await;
    let mut offset: i64 = 0;
    for _ in 0..injections {
        let round = inject::begin(&lab.http, world, case, users, 200).await?;
        let inside = wait_inside(&service, None, Duration::from_secs(3)).await?;
        let start_ms = case.clock_ms();
        let mut window = Window {
            target: "node 3's clock".into(),
            holder: None,
            start_ms,
            end_ms: start_ms,
            proof: None,
        };
        if !inside {
            case.step("no holder was inside within 3 s: not counted");
        } else if jumping {
            offset += jump;
            procs::set_clock_offset(&offset_file, offset)?;
            let ahead = clock_ahead_ms(&world.nodes[3]).await?;
            if partitioned && ahead + 250 >= offset {
                window.proof = Some(format!(
                    "node 3's TIME reads {ahead:+} ms after the jump to +{offset} ms, with a holder inside and the partition in force"
                ));
            } else {
                case.step(format!(
                    "node 3's clock was set to +{offset} ms but reads {ahead:+} ms (partition in force: {partitioned}): not counted"
                ));
            }
        } else if partitioned {
            window.proof =
                Some("a holder inside, the partition in force, no jump (the control)".into());
        }
        pause(400 + work_ms).await;
        window.end_ms = case.clock_ms();
        round.end(world, case, strategy, window).await?;
    }
    let landed = case.injections.iter().filter(|i| i.proof.is_some()).count();
    if landed > 0 {
        case.proven(format!(
            "{landed} of {injections} rounds counted: the partition in force{}",
            if jumping {
                ", node 3's own TIME ahead by each jump"
            } else {
                ""
            }
        ));
    }
    Ok(json!({
        "partition": "a: nodes 1,2,3; b: nodes 3,4,5",
        "clock_jumps": if jumping { landed } else { 0 },
        "jump_ms": if jumping { jump } else { 0 },
        "injections": injections,
        "lock_ttl_ms": ttl,
        "work_delay_ms": work_ms,
    }))
}
