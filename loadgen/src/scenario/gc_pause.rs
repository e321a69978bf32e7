//! `gc-pause` — Kleppmann's process pause: `SIGSTOP` a replica while it is
//! inside its critical section, for 2.5× the TTL or lease, then `SIGCONT`.
//! The renewal tasks freeze with it, so a lease runs out as surely as a
//! TTL; the fence refuses the frozen holder's late write, and locks that
//! never expire (or live as long as a connection or transaction) hold.
//!
//! A freeze counts (the proof it landed) when the arbiter shows replica a
//! inside its section *and* `/proc/<pid>/stat` reads state `T`.

use std::time::Duration;

use serde_json::{json, Value};

use super::buyers;
use super::case::Expectation;
use super::lab::TOKEN;
use super::world::{
    arm, overlaps_so_far, pause, seen_stopped, start_buyers, two_replicas, wait_inside, work,
    CaseRun,
};
use crate::api::{Kind, Service, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};

/// What `strategy` should do when its holder is frozen past its TTL.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    let (expected, why) = match strategy.kind {
        Kind::Ttl | Kind::Validity | Kind::LockTable => {
            (Breaks, "the frozen holder outlives its TTL; another enters")
        }
        Kind::Lease => (
            Breaks,
            "SIGSTOP freezes the renewal task too: the lease runs out",
        ),
        Kind::Fenced => (
            Holds,
            "the next holder's larger token makes the database refuse the frozen one",
        ),
        Kind::NoExpiry => (Holds, "nothing expires: the others wait"),
        Kind::InTransaction => (Holds, "the row lock lives as long as the transaction"),
        Kind::Session => (
            Holds,
            "the frozen holder's connection stays open: the server keeps its lock",
        ),
        Kind::NotALock | Kind::NoLock | Kind::ProcessLocal => (Holds, "no lock to outlive"),
    };
    Ok((expected, why.into()))
}

/// Freeze replica a inside its section, up to four times, until the
/// history shows an overlap. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, _) = cx.parts();
    // etcd grants leases in whole seconds: its lock lives at least one.
    let ttl = if strategy == "etcd-lease" { 1000 } else { 400 };
    let freeze = ttl * 5 / 2;
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, work(40)).await?;
    case.step(format!(
        "replicas a, b up (lock TTL / lease {ttl} ms, work 40 ms); 8 buyers on both"
    ));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 8);
    pause(500).await;
    let watcher = Service::new(vec![world.replica("b")?.url()], TOKEN.into());
    // Freeze again until the history shows an overlap, at most four times:
    // on two shared cores one freeze can land just as a lease was renewed,
    // or the next holder's own lease can lag. A design that holds is frozen
    // all four times and still shows none.
    let freezes = 4;
    let mut landed = 0;
    for _ in 0..freezes {
        let mut caught = false;
        for _ in 0..20 {
            if !wait_inside(&watcher, Some("a"), Duration::from_secs(2)).await? {
                continue;
            }
            world.replica("a")?.freeze()?;
            let still = wait_inside(&watcher, Some("a"), Duration::from_millis(1)).await?;
            if still {
                caught = true;
                break;
            }
            world.replica("a")?.thaw()?;
        }
        if !caught {
            case.step("replica a was never caught inside a section");
            continue;
        }
        // The proof: the kernel reports the process stopped (`T`).
        let pid = world.replica("a")?.pid().unwrap_or(0);
        let state = seen_stopped(pid).await;
        if state != Some('T') {
            case.step(format!(
                "replica a (pid {pid}) reads state {state:?} after SIGSTOP, not T: not counted"
            ));
            world.replica("a")?.thaw()?;
            continue;
        }
        landed += 1;
        case.step(format!("SIGSTOP replica a while it is inside its critical section, for {freeze} ms (kill -STOP)"));
        case.proven(format!(
            "the arbiter shows replica a inside, and /proc/{pid}/stat reads state T (stopped)"
        ));
        pause(freeze).await;
        world.replica("a")?.thaw()?;
        case.step("SIGCONT replica a: it carries on where it stopped");
        pause(600).await;
        let overlaps = overlaps_so_far(&service, strategy).await;
        if overlaps > 0 {
            case.step(format!(
                "the history shows {overlaps} overlap(s): no more freezes"
            ));
            break;
        }
    }
    load.stop().await;
    case.step("buyers stopped; every grab answered");
    Ok(
        json!({ "sigstop_ms": freeze, "freezes": landed, "replica": "a", "lock_ttl_ms": ttl, "work_delay_ms": 40 }),
    )
}
