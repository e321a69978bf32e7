//! `rolling-restart` — the three Redlock nodes restarted one after the
//! other, without persistence, while a holder keeps its lock by extending
//! it (the service's `redlock_extend`): the maintenance a Redis fleet
//! gets, and redsync's report (its PR #149, "Improve extending").
//!
//! A node that restarts empty forgets the holder's key. The holder's next
//! extension either locks it there again (`extend=on`, the service's
//! extend-or-lock, which also tops up: while a node lacks the key it
//! tries again every 20 ms or so, not a third of the TTL) or extends only where the key is still its own
//! (`extend=held-only`, redsync before #149, the service's
//! `extend_held_only`). In the second case every restart takes one node
//! from the holder's majority for good: after node 1 and then node 2
//! restart, another client builds a majority on the two empty nodes while
//! the holder is still inside. The holder learns it at its next extension
//! (one node left: no quorum) and writes nothing, so the data stay exact:
//! exclusion is what breaks.
//!
//! Each node stays down `down_ms` before it comes back empty. Before the
//! top-up (an extension every third of the TTL only), a node back within
//! one extension period that was one of a bare majority — the holder's
//! third `SET` is not waited for — let another client in (Kleppmann's
//! restart, which the Redis docs answer with a restart delayed past the
//! TTL): the atlas measured breaks up to 235 ms down. With the top-up the
//! holder holds every node soon after its grant and `extend=on` holds at
//! every `down_ms` measured (0 to 1 TTL).
//!
//! Each injection is a round of its own ([`super::inject`]): fresh stock,
//! a new history run, buyers pinned half to each replica; once a holder is
//! inside (its work longer than the TTL, kept by extensions), node 1 goes
//! down and comes back, and `gap_ms` later node 2 does. The gap must leave
//! the holder an extension with node 1 back (a third of the TTL, plus the
//! replica's reconnection to node 1). The proof an injection landed: both
//! nodes' `INFO` `run_id` changed (new processes) while the arbiter showed
//! a holder inside.

use std::time::Duration;

use super::case::Expectation;
use super::dials::{self, choice, dials, Choice as _, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::TOKEN;
use super::params::{Params, Spec};
use super::redlock_restart::run_id;
use super::world::{arm, pause, two_replicas, wait_inside, warm_up, work, CaseRun};
use seckill_load::api::Variant;
use seckill_load::api::{FaultsPatch, Service, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};

choice! {
    /// How the holder extends its lock.
    pub enum Extension {
        /// Extend where the key is ours, lock again where it is missing.
        On = "on",
        /// Extend only where the key is still ours (redsync before #149).
        HeldOnly = "held-only",
    }
}

dials! {
    /// rolling-restart's dials.
    pub struct RollingRestartDials {
        ttl_ms: u64 = dials::ttl("1000"),
        work_ms: u64 = dials::work("3ttl"),
        injections: u64 = dials::injections("12"),
        down_ms: u64 = Shape::ms(
            "0.5ttl",
            "how long each node stays down before it comes back empty",
        ),
        gap_ms: u64 = Shape::ms(
            "1ttl",
            "how long after node 1 is back node 2 goes down",
        ),
        extend: Extension = Shape::choice(
            Extension::WORDS,
            "on",
            "how the holder extends its lock: on, extend or lock again where a node lost the key; held-only, only where the key is still its own (redsync before its PR #149)",
        ),
        users: usize = dials::users("4"),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = RollingRestartDials::SPECS;

/// `--quick`: each node down a whole TTL (three extension periods, not
/// one and a half): the quick suite runs lanes side by side on a busy
/// machine, where a holder starved for half a second missed the one
/// extension that lands while the node is down (1 of 12 in CI).
pub const QUICK: &[(&str, &str)] = &[("down_ms", "1ttl")];

/// What `strategy` should do when the nodes restart one by one under a
/// holder that extends its lock.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    if !strategy.is(StrategyName::Redlock) {
        return Err(
            "the holder's extension across node restarts: redlock only (the service's redlock_extend)"
                .into(),
        );
    }
    let d = RollingRestartDials::of(params);
    Ok(match d.extend {
        Extension::On => (
            Holds,
            "the holder tops its lock up (an extension at once, then every 20 ms or so while a node lacks the key): it holds every node soon after its grant, and a restarted node is locked again within tens of milliseconds of coming back, so when the second node restarts the holder still has two of three, however long each was down".into(),
        ),
        Extension::HeldOnly => (
            Breaks,
            "the restarted nodes are never locked again: after the second restart another client builds a majority on the two empty nodes beside the holder".into(),
        ),
    })
}

/// `injections` rounds, each restarting node 1 and, `gap_ms` later,
/// node 2 under a holder. The fault, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = RollingRestartDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    two_replicas(lab, world, strategy, d.ttl_ms, Vec::new()).await?;
    let service = world.service();
    let held_only = d.extend == Extension::HeldOnly;
    let faults = FaultsPatch {
        redlock_extend: Some(true),
        extend_held_only: Some(held_only),
        ..work(d.work_ms)
    };
    arm(&service, strategy, faults).await?;
    let watcher = Service::new(vec![world.replica("b")?.url()], TOKEN.into());
    let users = d.users.max(2);
    case.step(format!(
        "replicas a, b up on three Redlock nodes (TTL {} ms, work {} ms, extended every third of the TTL{}); {users} buyers pinned to both; {} injections: once a holder is inside, node 1 goes down for {} ms and comes back empty, and {} ms later node 2 does the same",
        d.ttl_ms,
        d.work_ms,
        if held_only { ", only where the key is still the holder's" } else { "" },
        d.injections,
        d.down_ms,
        d.gap_ms
    ));
    // Node 3 never restarts: without this its first extension script runs
    // in round 1 (NOSCRIPT, then the script sent), with node 1 down; on a
    // loaded CI machine the holder's extensions missed their quorum until
    // its lock had expired, and another entered (1 round of 12, round 1).
    warm_up(
        lab,
        world,
        case,
        "each replica's first extension loads the script on every node",
    )
    .await;
    for _ in 0..d.injections {
        restart_two(lab, world, case, strategy, (&d, &watcher, users)).await?;
    }
    case.proven_by_injections(|landed| {
        format!(
            "{landed} of {} rounds: nodes 1 and 2 restarted empty under a holder",
            d.injections
        )
    });
    service
        .set_faults(FaultsPatch {
            redlock_extend: Some(false),
            extend_held_only: Some(false),
            ..FaultsPatch::default()
        })
        .await?;
    Ok(dials::record(
        &d,
        Facts {
            restarted: Some(vec!["node1".to_owned(), "node2".to_owned()]),
            persistence: Some("none".to_owned()),
            ..Facts::default()
        },
    ))
}

/// One injection: buyers pinned to both replicas; once a holder is inside,
/// node 1 and then node 2 restarted empty; the round judged.
async fn restart_two(
    lab: &super::lab::Lab,
    world: &mut super::world::World,
    case: &mut super::world::Case,
    strategy: StrategyName,
    (d, watcher, users): (&RollingRestartDials, &Service, usize),
) -> anyhow::Result<()> {
    let round = inject::begin_pinned(&lab.http, world, case, users, 100).await?;
    let mut window = Window::starting(case, "Redlock nodes 1 and 2", None);
    let inside = wait_inside(watcher, None, Duration::from_millis(d.ttl_ms)).await?;
    let before = (
        run_id(&world.nodes[1]).await?,
        run_id(&world.nodes[2]).await?,
    );
    window.start_ms = case.clock_ms();
    for (node, gap) in [(1, d.gap_ms), (2, 0)] {
        world.nodes[node].kill();
        pause(d.down_ms).await;
        world.nodes[node].restart().await?;
        pause(gap).await;
    }
    window.end_ms = case.clock_ms();
    let after = (
        run_id(&world.nodes[1]).await?,
        run_id(&world.nodes[2]).await?,
    );
    if inside && after.0 != before.0 && after.1 != before.1 {
        window.proof = Some(format!(
            "node 1 and node 2 came back as new processes (INFO run_id), each down {} ms, {} ms apart, a holder inside",
            d.down_ms, d.gap_ms
        ));
    } else {
        case.step("no holder was seen inside, or a node kept its run_id: not counted");
    }
    // The rest of the holder's section, and a second holder's chance on
    // two empty nodes while the first is still inside.
    inject::settle(d.ttl_ms).await;
    round.end(world, case, strategy, window).await
}
