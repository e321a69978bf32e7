//! `partition-precommit` — the coordinator (replica a) is cut off from
//! both databases' sides after the stock side has pre-committed a grab
//! and before the order side has (seed 001: the textbook reason 3PC is
//! rarely used).
//!
//! - `pg-3pc`: the coordinator hears nothing from the order side and
//!   decides abort, which the stock side — cut off too — never hears. Its
//!   participant, pre-committed, commits at its timeout; the order side's,
//!   which never pre-committed, aborts at its own. A unit is gone with no
//!   order (undersold). Breaks, by design of the protocol: the two
//!   databases disagree, and nobody blocked.
//! - `pg-2pc`: the stock side stays prepared (its row locked) until the
//!   coordinator reaches it again and rolls it back. Nothing disagrees,
//!   but replica b's grabs of the product wait out the partition (the
//!   stall, k of n). Holds.
//!
//! Replica a reaches the two sides through proxies (for `pg-3pc` its two
//! participants, processes of the case's own; for `pg-2pc` the two
//! databases); replica b reaches them directly. Each of `injections`
//! rounds: buyers on both, then on a only with the pause armed where the
//! stock side is prepared and the order side not yet (`pause_at:
//! before-write`, held `hold_ms`); once that is seen in
//! `pg_prepared_xacts`, the pause is disarmed, the buyers move to b, and
//! a's links are cut for `cut_ms`, then let through again. The round is
//! judged on its data, and on whether b was stalled during the cut.
//!
//! The proof the partition landed: one grab of a's had its stock side
//! prepared and no order side, before and just after the cut.

use std::time::Duration;

use super::buyers;
use super::case::Expectation;
use super::coordinator_crash::{begin_holding_a, in_doubt, start_participants, wait_settled};
use super::dials::{self, dials, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::Window;
use super::lab::{Lab, Setup};
use super::params::Spec;
use super::world::{arm, pause, start_replicas, work, CaseRun, World};
use crate::procs::RedisNode;
use seckill_load::api::Variant;
use seckill_load::api::{PauseAt, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};
use seckill_load::load::Outcome;
use seckill_proxy::Proxy;

dials! {
    /// partition-precommit's dials.
    pub struct PartitionPrecommitDials {
        work_ms: u64 = dials::work("5"),
        cut_ms: u64 = Shape::ms(
            "2500",
            "how long replica a (the coordinator) is cut off from both sides",
        ),
        hold_ms: u64 = Shape::ms(
            "1500",
            "how long a's grab waits between the stock side's pre-commit (or prepare) and the order side's: the cut goes in inside it",
        ),
        participant_timeout_ms: u64 = Shape::ms(
            "2000",
            "pg-3pc only: a participant pre-committed this long with no word from its coordinator commits on its own",
        ),
        injections: u64 = dials::injections("16"),
        lock_wait_ms: u64 = dials::lock_wait("300"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = PartitionPrecommitDials::SPECS;

/// `--quick`: fewer rounds (still enough proven ones for 0 of n to
/// decide that 2PC holds).
pub const QUICK: &[(&str, &str)] = &[("injections", "14")];

/// What `strategy` should do when its coordinator is cut off mid-way.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>) -> Expectation {
    if strategy.is(StrategyName::Pg3pc) {
        return Ok((
            Breaks,
            "the stock side, pre-committed and cut off, commits at its timeout while the coordinator aborts: a unit gone with no order".into(),
        ));
    }
    if strategy.is(StrategyName::Pg2pc) {
        return Ok((
            Holds,
            "the stock side stays prepared until the coordinator reaches it again and rolls it back: blocked, never split".into(),
        ));
    }
    Err("only pg-2pc and pg-3pc commit in rounds a partition can split".into())
}

/// Cut the coordinator off between the two sides' pre-commits, watch b,
/// let it through again; the faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = PartitionPrecommitDials::of(cx.params);
    let (lab, world, case, strategy, _variant) = cx.parts();
    let three_pc = strategy == StrategyName::Pg3pc.as_str();
    let prefix = if three_pc { "seckill3pc" } else { "seckill2pc" };
    let dbs = [lab.db_url.clone(), lab.stock_db_url.clone()];
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    let (links, a_extra, b_extra, a_database) = if three_pc {
        wire_participants(lab, world, &redis_url, d.participant_timeout_ms).await?
    } else {
        wire_databases(lab).await?
    };
    let mut a_setup = Setup::new(&redis_url, 2000).extra(a_extra);
    if let Some(url) = &a_database {
        a_setup = a_setup.database(url);
    }
    start_replicas(
        lab,
        world,
        [
            ("a", a_setup),
            ("b", Setup::new(&redis_url, 2000).extra(b_extra)),
        ],
    )
    .await?;
    world.proxies.extend(links);
    arm(&world.service(), strategy, work(d.work_ms)).await?;
    case.step(format!(
        "replicas a (the coordinator, both sides behind proxies) and b up, lock wait {} ms{}; {} injections: 3 buyers on both, then on a only while its next grab holds {} ms between the sides; cut a off for {} ms",
        d.lock_wait_ms,
        if three_pc {
            format!("; participants timeout {} ms", d.participant_timeout_ms)
        } else {
            String::new()
        },
        d.injections,
        d.hold_ms,
        d.cut_ms
    ));
    for _ in 0..d.injections {
        one_round(lab, world, case, strategy, &d, &dbs, prefix).await?;
    }
    let injections = d.injections;
    case.proven_by_injections(|proven| {
        format!("{proven} of {injections} cuts went in with a's grab prepared on the stock side and not on the order side")
    });
    Ok(dials::record(
        &d,
        Facts {
            cut: Some("a".to_owned()),
            pause_at: Some(PauseAt::BeforeWrite),
            participants: Some(three_pc),
            ..Facts::default()
        },
    ))
}

/// How the two replicas reach the two sides: a's proxies, a's settings,
/// b's settings, and a's database URL when it goes through a proxy too.
type Wiring = (
    Vec<Proxy>,
    Vec<(String, String)>,
    Vec<(String, String)>,
    Option<String>,
);

/// The settings for `pg-3pc`: its participants, a through proxies.
async fn wire_participants(
    lab: &Lab,
    world: &mut World,
    redis_url: &str,
    timeout_ms: u64,
) -> anyhow::Result<Wiring> {
    let direct = start_participants(lab, world, redis_url, timeout_ms).await?;
    let mut proxies = Vec::new();
    let mut via = Vec::new();
    for (key, value) in &direct {
        if key.ends_with("_PARTICIPANT") {
            let proxy = Proxy::start(value.parse()?).await?;
            via.push((key.clone(), format!("127.0.0.1:{}", proxy.port)));
            proxies.push(proxy);
        } else {
            via.push((key.clone(), value.clone()));
        }
    }
    Ok((proxies, via, direct, None))
}

/// The settings for `pg-2pc`: a's two databases through proxies.
async fn wire_databases(lab: &Lab) -> anyhow::Result<Wiring> {
    let (main, main_url) = super::lab::proxy_to(&lab.db_url).await?;
    let (stock, stock_url) = super::lab::proxy_to(&lab.stock_db_url).await?;
    Ok((
        vec![main, stock],
        vec![("SECKILL_STOCK_DATABASE_URL".into(), stock_url)],
        Vec::new(),
        Some(main_url),
    ))
}

/// One round: the grab held between the sides, the cut, b watched, the
/// link back, the data judged.
async fn one_round(
    lab: &Lab,
    world: &mut World,
    case: &mut super::world::Case,
    strategy: StrategyName,
    d: &PartitionPrecommitDials,
    dbs: &[String; 2],
    prefix: &str,
) -> anyhow::Result<()> {
    let (round, targets, b_url) = begin_holding_a(
        lab,
        world,
        case,
        (d.hold_ms, PauseAt::BeforeWrite, d.work_ms),
    )
    .await?;
    // A grab a started before the pause does not take it, and may be
    // seen stock side only for a moment: let those end (the row lock's
    // wait) first. Then the stock side of one grab prepared, its order
    // side not, and staying so (the paused grab).
    pause(d.lock_wait_ms + 100).await;
    let before = held_stock_side(dbs, prefix).await?;
    // Disarm the pause (b must not take it), move the buyers to b, cut.
    world.service().set_faults(work(d.work_ms)).await?;
    buyers::retarget(&targets, vec![b_url]);
    for proxy in &world.proxies {
        proxy.set_cut(true);
    }
    let mut window = Window::starting(case, "replica a's links to both sides", Some("a"));
    let after = in_doubt(dbs, prefix).await?;
    let busy_before = case.tally.outcome(Outcome::Busy);
    let ordered_before = case.tally.outcome(Outcome::Ordered);
    pause(d.cut_ms).await;
    let busy = case.tally.outcome(Outcome::Busy) - busy_before;
    let sold = case.tally.outcome(Outcome::Ordered) - ordered_before;
    let during = in_doubt(dbs, prefix).await?;
    for proxy in &world.proxies {
        proxy.set_cut(false);
    }
    window.stalled = Some(busy > 0 && sold == 0);
    if stock_only(&before) && after == before {
        window.proof = Some(format!(
            "a's grab prepared on the stock side only ({}) before and after the cut; {} of its sides still prepared at the end of the cut; b: {busy} busy answers, {sold} orders meanwhile",
            before.join(", "),
            during.len()
        ));
    } else {
        case.step(format!(
            "not proven: prepared before the cut {before:?}, after {after:?}: not counted"
        ));
    }
    let left = wait_settled(dbs, prefix, Duration::from_secs(10)).await?;
    if !left.is_empty() {
        case.step(format!("still prepared after the link came back: {left:?}"));
    }
    window.end_ms = case.clock_ms();
    pause(150).await;
    round.end(world, case, strategy, window).await?;
    Ok(())
}

/// The gids in doubt once they stand still with one grab's stock side
/// prepared and nothing else (or whatever is there after 5 s).
async fn held_stock_side(dbs: &[String; 2], prefix: &str) -> anyhow::Result<Vec<String>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let gids = in_doubt(dbs, prefix).await?;
        if stock_only(&gids) {
            // A grab between its two commits (the order side's done) is
            // stock side only too, for a moment; the paused one stays.
            pause(200).await;
            if in_doubt(dbs, prefix).await? == gids {
                return Ok(gids);
            }
        }
        if tokio::time::Instant::now() > deadline {
            return Ok(gids);
        }
        pause(5).await;
    }
}

/// One grab's stock side, and nothing else, prepared.
fn stock_only(gids: &[String]) -> bool {
    matches!(gids, [one] if one.ends_with(":stock"))
}
