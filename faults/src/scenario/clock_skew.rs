//! `clock-skew` — one replica's wall clock runs ahead by `skew` (the
//! clock-shifting preload). `setnx-getset` (survey scheme 2) writes expiry
//! times from the client's clock, so the fast replica reads another's live
//! lock as expired once that lock is older than TTL − skew: it takes it
//! over while the holder is inside when skew > TTL − work. Locks whose
//! expiry the server decides do not care. The default TTL (3 s against
//! 60 ms of work) leaves the locks that should hold room for a starved
//! machine: with 1 s, a holder paused by a busy host outlived it.
//!
//! Each injection is a round ([`super::inject`]): fresh stock, a new
//! history run, buyers pinned half to each replica; replica a's clock is
//! set `skew` ahead for `window_ms` of load, then back. An overlap counts
//! when a section of replica a is in it.
//!
//! The proof a skew landed: `date` run under the same preload and offset
//! file reads the skew ahead of our clock (± 100 ms), and once per case,
//! for a skew of 2 s or more, the HTTP `Date` header replica a writes from
//! its own wall clock reads it ahead of replica b's (± 1 s, the header's
//! resolution).

use super::case::Expectation;
use super::dials::{self, dials, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::params::{Params, Spec};
use super::world::{arm, http_date, pause, two_replicas, work, CaseRun};
use crate::procs;
use seckill_load::api::Variant;
use seckill_load::api::{StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};

dials! {
    /// clock-skew's dials.
    pub struct ClockSkewDials {
        ttl_ms: u64 = dials::ttl("3000"),
        work_ms: u64 = dials::work("60"),
        injections: u64 = dials::injections("12"),
        skew: u64 = Shape::ms(
            "4000",
            "how far replica a's wall clock runs ahead during each injection",
        ),
        window_ms: u64 = dials::window("1000"),
        users: usize = dials::users("8"),
        lock_wait_ms: u64 = dials::lock_wait("300"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = ClockSkewDials::SPECS;

/// `--quick`: shorter windows.
pub const QUICK: &[(&str, &str)] = &[("window_ms", "400")];

/// What `strategy` should do when one replica's clock runs ahead by the
/// skew in force.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    let d = ClockSkewDials::of(params);
    let (ttl, work, skew) = (d.ttl_ms, d.work_ms, d.skew);
    // Survey scheme 2 (value = expiry time, GETSET) is the one design
    // that trusts the client's clock.
    Ok(match strategy.name {
        StrategyName::SetnxGetset if skew + work > ttl => (
            Breaks,
            format!("skew {skew} ms > TTL − work ({} ms): the fast replica reads a live lock as expired and takes it over", ttl.saturating_sub(work)),
        ),
        StrategyName::SetnxGetset => (
            Holds,
            format!("skew {skew} ms < TTL − work ({} ms): a lock is released before the fast replica reads it as expired", ttl - work),
        ),
        _ => (
            Holds,
            "expiry is decided by the server's clock, not the replica's".into(),
        ),
    })
}

/// `injections` rounds of load, replica a's clock `skew` ahead in each.
/// The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = ClockSkewDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let (ttl, work_ms, window_ms, injections) = (d.ttl_ms, d.work_ms, d.window_ms, d.injections);
    let skew = i64::try_from(d.skew).unwrap_or(i64::MAX);
    let users = d.users.max(2);
    let shift = lab.clockshift()?;
    let file = lab.dir.join("replica-a.clock");
    procs::set_clock_offset(&file, 0)?;
    two_replicas(lab, world, strategy, ttl, shift.env(&file)).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!("replicas a, b up (a under clockshift); TTL {ttl} ms, work {work_ms} ms; {injections} rounds of {window_ms} ms, {users} buyers pinned half to each, replica a's clock {skew} ms ahead in each"));
    let mut date_seen = false;
    for _ in 0..injections {
        let round = inject::begin_pinned(&lab.http, world, case, users, 100).await?;
        let mut window = Window::starting(case, "replica a's clock", Some("a"));
        procs::set_clock_offset(&file, skew)?;
        // The preload reads the offset at most once a millisecond.
        pause(5).await;
        let ahead = shift.read_ahead_ms(&file).await?;
        if (ahead - skew).abs() <= 100 {
            window.proof = Some(format!(
                "date under replica a's preload and offset file reads {ahead:+} ms (skew {skew:+} ms)"
            ));
        } else {
            case.step(format!(
                "the skew was set to {skew:+} ms but date under the preload reads {ahead:+} ms: not counted"
            ));
        }
        if !date_seen && skew >= 2000 {
            // replica a's own wall clock, as its HTTP `Date` header says
            // (1 s resolution, refreshed by actix every 500 ms).
            let a = http_date(&lab.http, &world.replica("a")?.url()).await?;
            let b = http_date(&lab.http, &world.replica("b")?.url()).await?;
            date_seen = (a - b - skew / 1000).abs() <= 1;
            case.step(format!(
                "replica a's Date header reads {:+} s from b's (skew {:+} s){}",
                a - b,
                skew / 1000,
                if date_seen {
                    ""
                } else {
                    ": the skew is not seen"
                }
            ));
        }
        pause(window_ms.saturating_sub(case.clock_ms() - window.start_ms)).await;
        procs::set_clock_offset(&file, 0)?;
        window.end_ms = case.clock_ms();
        round.end(world, case, strategy, window).await?;
    }
    case.proven_by_injections(|proven| {
        format!(
            "replica a's preload read the skew in {proven} of {injections} rounds{}",
            if date_seen {
                ", and its Date header read it ahead of replica b's"
            } else {
                ""
            }
        )
    });
    Ok(dials::record(&d, Facts::replica_a()))
}
