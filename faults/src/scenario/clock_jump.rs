//! `clock-jump` — Kleppmann's clock jump on a Redlock node: five nodes,
//! replica a reaching nodes 1,2,3 and replica b nodes 3,4,5 (the other
//! links cut by proxies), so node 3 alone decides which side has a
//! majority. Node 3's wall clock (the clock Redis expires keys by) jumps
//! forward by `jump` while a lock is held. A key set x ms before the jump
//! then expires TTL − x − jump ms after it, and the other side can build a
//! majority on node 3 while the holder is still inside: that happens when
//! the jump is longer than what is left of the TTL beyond the section's
//! end, jump > TTL − work (roughly: x is small, the jump lands soon after
//! the holder enters). The `partition` variant is the control run, the
//! same rounds without a jump.
//!
//! Each injection is a round ([`super::inject`]): fresh stock, a new
//! history run, buyers pinned half to each replica; once the arbiter shows a holder inside, node 3's
//! clock jumps; the round is judged when that section and the next are
//! done. A jump counts only when it is proven to have landed: node 3's own
//! `TIME` moved forward by it. Either variant counts only when the
//! partition is seen in force first (the cut links drop new connections,
//! both sides' links to node 3 answer a `PING`).

use std::time::Duration;

use super::case::Expectation;
use super::dials::{self, dials, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::params::{Params, Spec};
use super::world::{
    arm, clock_ahead_ms, partition_in_force, partitioned_redlock, pause, wait_inside, work, CaseRun,
};
use crate::procs;
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry};
use seckill_load::judge::Expected::{self, Breaks, Holds};

/// The runs of each strategy: the control, then the jumps.
pub const VARIANTS: &[Variant] = &[Variant::Partition, Variant::PartitionJump];

dials! {
    /// clock-jump's dials.
    pub struct ClockJumpDials {
        ttl_ms: u64 = dials::ttl("1000"),
        work_ms: u64 = dials::work("300"),
        injections: u64 = dials::injections("12"),
        jump: u64 = Shape::ms(
            "1.5ttl",
            "how far node 3's wall clock jumps forward while a lock is held (partition+jump)",
        ),
        users: usize = dials::users("6"),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = ClockJumpDials::SPECS;

/// `--quick`: a shorter TTL and work (the jump, 1.5× the TTL, shrinks).
pub const QUICK: &[(&str, &str)] = &[("ttl_ms", "600"), ("work_ms", "180")];

/// Whether node 3's key expires while the holder is inside: jump > TTL −
/// work (the jump lands soon after the holder enters).
pub fn predicts(d: &ClockJumpDials) -> Expected {
    if d.jump + d.work_ms > d.ttl_ms {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

/// Redlock only: what it should do with and without node 3's jump.
pub fn expect(strategy: &StrategyEntry, variant: Option<Variant>, params: &Params) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario breaks Redlock's nodes; run it with redlock".into());
    }
    let d = ClockJumpDials::of(params);
    let (ttl, work, jump) = (d.ttl_ms, d.work_ms, d.jump);
    Ok(match variant {
        Some(Variant::Partition) => (
            Holds,
            "node 3 is shared by both majorities: one holder at a time".into(),
        ),
        _ if predicts(&d) == Breaks => (
            Breaks,
            format!("jump {jump} ms > TTL − work ({} ms): node 3's key expires while the holder is inside, so both sides reach a majority", ttl.saturating_sub(work)),
        ),
        _ => (
            Holds,
            format!("jump {jump} ms < TTL − work ({} ms): node 3's key outlives the section", ttl - work),
        ),
    })
}

/// `injections` rounds; in each, node 3's clock jumps while a lock is
/// held (the `partition` variant: no jump, the control run). The faults,
/// as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = ClockJumpDials::of(cx.params);
    let (lab, world, case, strategy, variant) = cx.parts();
    let (ttl, work_ms, injections) = (d.ttl_ms, d.work_ms, d.injections);
    let jump = if variant == Some(Variant::Partition) {
        0
    } else {
        d.jump
    };
    let users = d.users.max(2);
    let shift = lab.clockshift()?;
    let offset_file = lab.dir.join("node3.clock");
    procs::set_clock_offset(&offset_file, 0)?;
    partitioned_redlock(lab, world, ttl, &[], shift.env(&offset_file)).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!("5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work {work_ms} ms; node 3 runs under clockshift; {injections} rounds, {}", if jump == 0 { "no jump (control)".to_owned() } else { format!("each a jump of {jump} ms") }));
    let partitioned = partition_in_force(world, case).await;
    let mut offset: i64 = 0;
    for _ in 0..injections {
        let round = inject::begin_pinned(&lab.http, world, case, users, 100).await?;
        let mut window = Window::starting(case, "node 3's clock", None);
        if !wait_inside(&service, None, Duration::from_secs(2)).await? {
            case.step("no holder inside within 2 s: not counted");
        } else if jump == 0 {
            window.start_ms = case.clock_ms();
            if partitioned {
                window.proof = Some("the partition in force; no jump (control)".into());
            }
        } else {
            window.start_ms = case.clock_ms();
            offset += i64::try_from(jump).unwrap_or(i64::MAX);
            procs::set_clock_offset(&offset_file, offset)?;
            // The preload reads the offset at most once a millisecond.
            let mut ahead = clock_ahead_ms(&world.nodes[3]).await?;
            for _ in 0..10 {
                if ahead + 250 >= offset {
                    break;
                }
                pause(2).await;
                ahead = clock_ahead_ms(&world.nodes[3]).await?;
            }
            if !partitioned {
                case.step("the partition was not seen in force: not counted");
            } else if ahead + 250 < offset {
                case.step(format!(
                    "node 3's clock was set to +{offset} ms but reads only {ahead:+} ms: not counted"
                ));
            } else {
                window.proof = Some(format!(
                    "node 3's own TIME reads {ahead:+} ms (set to +{offset} ms) while a lock is held"
                ));
            }
        }
        inject::settle(work_ms).await;
        window.end_ms = case.clock_ms();
        round.end(world, case, strategy, window).await?;
    }
    let proven = case.proven_by_injections(|proven| {
        if jump == 0 {
            format!("the partition was in force for {proven} rounds (no jump: the control run)")
        } else {
            format!("the partition was in force, and node 3's own TIME read ahead by the jump {proven} time(s)")
        }
    });
    // The control (`partition`) jumps nothing: its record says so.
    Ok(dials::record(
        &d,
        Facts {
            partition: Some("a: nodes 1,2,3; b: nodes 3,4,5".to_owned()),
            clock_jumps: Some(if jump == 0 { 0 } else { proven }),
            jump: Some(jump),
            ..Facts::default()
        },
    ))
}
