//! `coordinator-crash` — `pg-2pc`'s coordinator (replica a) is `kill -9`ed
//! with a grab's transactions prepared and not yet committed (seed 001:
//! 2PC is blocking, its coordinator a single point of failure). The
//! prepared stock side keeps its row lock with no session behind it: every
//! grab of the product on replica b waits out its lock timeout and answers
//! `busy`. Replica a is started again under the same instance id and
//! recovers its in-doubt transactions from its decision log.
//!
//! Variants: where it dies, and whether it logged its decision.
//! - `decision-log`: between the phases (both sides prepared, the decision
//!   logged): recovery commits both sides. Holds.
//! - `decision-log-mid-commit`: inside phase two (the order side committed,
//!   the stock side still prepared): recovery commits the stock side. Holds.
//! - `no-decision-log`: between the phases, without the log
//!   (`SECKILL_TWO_PC_DECISION_LOG=false`): recovery finds no decision and
//!   rolls both back (presumed abort) — right, since nothing had committed.
//!   Holds.
//! - `no-decision-log-mid-commit`: inside phase two, without the log:
//!   presumed abort rolls back a stock side whose order side committed — an
//!   order whose unit was never taken (a lost update). Breaks.
//!
//! The proof the crash landed: the in-doubt sides of replica a's grab are
//! seen in `pg_prepared_xacts` after its process is gone, and replica b's
//! grabs answered `busy` while they were.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::buyers::{self, Tally};
use super::case::Expectation;
use super::lab::Setup;
use super::params::{self, Spec, Unit};
use super::world::{arm, pause, start_buyers, start_replicas, work, CaseRun};
use crate::api::{FaultsPatch, PauseAt, StrategyEntry, StrategyName};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs::{self, RedisNode, Replica};

/// The variants: where the coordinator dies, and whether it logs.
pub const VARIANTS: &[&str] = &[
    "decision-log",
    "decision-log-mid-commit",
    "no-decision-log",
    "no-decision-log-mid-commit",
];

/// Its dials (one crash per trial: its outcome is the whole case's).
pub const PARAMS: &[Spec] = &[
    params::work("5"),
    Spec {
        name: "down_ms",
        unit: Unit::Ms,
        default: "1500",
        meaning: "how long the coordinator stays dead before it is started again",
    },
    params::lock_wait("300"),
];

/// What `strategy` should do when its coordinator dies in `variant`.
pub fn expect(strategy: &StrategyEntry, variant: &str) -> Expectation {
    if !strategy.is(StrategyName::Pg2pc) {
        return Err("only pg-2pc has a coordinator".into());
    }
    Ok(match variant {
        "no-decision-log-mid-commit" => (
            Breaks,
            "no decision logged: recovery rolls back the stock side of an order that committed"
                .into(),
        ),
        "no-decision-log" => (
            Holds,
            "no decision logged: recovery rolls both sides back, and nothing had committed".into(),
        ),
        _ => (
            Holds,
            "recovery commits the in-doubt sides from the decision log".into(),
        ),
    })
}

/// Kill the coordinator between the phases (or inside phase two), watch
/// the blocking, restart it, watch the recovery. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let params = cx.params;
    let (lab, world, case, strategy, variant) = cx.parts();
    let work_ms = params.ms("work_ms");
    let logged = !variant.starts_with("no-");
    let mid_commit = variant.ends_with("mid-commit");
    let (pause_at, in_doubt_sides) = if mid_commit {
        (PauseAt::BetweenCommits, 1)
    } else {
        (PauseAt::BeforeCommit, 2)
    };
    let ttl = 2000;
    let dbs = [lab.db_url.clone(), lab.stock_db_url.clone()];
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    let lock_wait = params.ms("lock_wait_ms");
    let mut a_extra = Vec::new();
    if !logged {
        a_extra.push(("SECKILL_TWO_PC_DECISION_LOG".to_owned(), "false".to_owned()));
    }
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&redis_url, ttl).extra(a_extra.clone())),
            ("b", Setup::new(&redis_url, ttl)),
        ],
    )
    .await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    let a_url = world.replica("a")?.url();
    let b_url = world.replica("b")?.url();
    let targets = buyers::targets(vec![a_url.clone(), b_url.clone()]);
    let load = start_buyers(lab, case, &targets, 3);
    case.step(format!(
        "replicas a (the coordinator{}) and b up, lock wait {lock_wait} ms; 3 buyers on both",
        if logged { "" } else { ", no decision log" }
    ));
    pause(600).await;
    // Only a buys now: the pause is every replica's fault, and b must not
    // take it.
    buyers::retarget(&targets, vec![a_url]);
    pause(100).await;
    service
        .set_faults(FaultsPatch {
            pause_ms: Some(60_000),
            pause_every: Some(1),
            pause_at: Some(pause_at),
            ..work(work_ms)
        })
        .await?;
    let where_ = if mid_commit {
        "inside phase two (order side committed, stock side prepared)"
    } else {
        "between the phases (both sides prepared)"
    };
    case.step(format!(
        "buyers on a only; pause_at {} for 60 s: a's next grab stops {where_}",
        serde_json::to_value(pause_at)?.as_str().unwrap_or("?")
    ));
    let prepared = wait_prepared(&dbs, "a", in_doubt_sides, Duration::from_secs(5)).await?;
    let pid = world.replica("a")?.pid().unwrap_or(0);
    world.replica("a")?.kill();
    case.crashed_at = Some(Instant::now());
    case.step(format!(
        "kill -9 replica a (the coordinator) {where_}: in doubt {prepared:?}"
    ));
    let gone = matches!(procs::process_state(pid), None | Some('Z' | 'X'));
    // b buys without the pause.
    let b_service = crate::api::Service::new(vec![b_url.clone()], super::lab::TOKEN.into());
    b_service.set_faults(work(work_ms)).await?;
    buyers::retarget(&targets, vec![b_url]);
    let busy_before = Tally::get(&case.tally.busy);
    let ordered_before = Tally::get(&case.tally.ordered);
    let crash_ms = params.ms("down_ms");
    pause(crash_ms).await;
    let still = in_doubt(&dbs, "a").await?;
    let busy = Tally::get(&case.tally.busy) - busy_before;
    let sold = Tally::get(&case.tally.ordered) - ordered_before;
    case.step(format!(
        "{crash_ms} ms with the coordinator dead: {busy} busy answers on b, {sold} orders; still in doubt {still:?}"
    ));
    if gone && prepared.len() == in_doubt_sides && !still.is_empty() && busy > 0 && sold == 0 {
        case.proven(format!(
            "replica a (pid {pid}) is gone, its grab's {} side(s) stayed prepared in pg_prepared_xacts, and every grab on b waited and answered busy ({busy})",
            still.len()
        ));
    } else {
        case.step(format!(
            "not proven: process gone {gone}, prepared {prepared:?}, still {still:?}, busy {busy}, sold {sold}"
        ));
    }
    // The coordinator comes back under the same instance id: recovery.
    let restart = Instant::now();
    let env = lab.env(&Setup::new(&redis_url, ttl).extra(a_extra));
    world.replicas.retain(|r| r.name != "a");
    let replica = Replica::start(&lab.app_bin, &lab.dir, "a", env).await?;
    world.replicas.push(replica);
    let left = wait_settled(&dbs, "a", Duration::from_secs(10)).await?;
    case.step(format!(
        "replica a restarted; {} in {} ms: {}",
        if left.is_empty() {
            "every in-doubt side settled"
        } else {
            "NOT settled"
        },
        restart.elapsed().as_millis(),
        if logged {
            "committed from the decision log"
        } else {
            "no decision logged: presumed abort, rolled back"
        }
    ));
    pause(800).await;
    load.stop().await;
    case.step("buyers stopped");
    Ok(json!({
        "killed": "a",
        "pause_at": pause_at,
        "decision_log": logged,
        "lock_wait_ms": lock_wait,
        "in_doubt_at_crash": prepared,
        "busy_during_crash": busy,
        "orders_during_crash": sold,
        "crash_ms": crash_ms,
    }))
}

/// The gids of `instance`'s transactions still prepared in this run's two
/// databases (`pg_prepared_xacts` lists the whole server: another run's
/// replica a is not this one).
async fn in_doubt(urls: &[String; 2], instance: &str) -> anyhow::Result<Vec<String>> {
    use sqlx::Connection as _;
    let mut all = Vec::new();
    for url in urls {
        let mut conn = sqlx::PgConnection::connect(url).await?;
        let gids: Vec<String> = sqlx::query_scalar(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE $1",
        )
        .bind(format!("seckill2pc:{instance}:%"))
        .fetch_all(&mut conn)
        .await?;
        let _ = conn.close().await;
        all.extend(gids);
    }
    all.sort();
    Ok(all)
}

async fn wait_prepared(
    url: &[String; 2],
    instance: &str,
    sides: usize,
    within: Duration,
) -> anyhow::Result<Vec<String>> {
    let deadline = Instant::now() + within;
    loop {
        let gids = in_doubt(url, instance).await?;
        // A side that is prepared for a moment between the phases of a
        // grab that is not paused yet: wait until the set stays.
        if gids.len() == sides {
            pause(150).await;
            let again = in_doubt(url, instance).await?;
            if again == gids {
                return Ok(gids);
            }
        }
        if Instant::now() > deadline {
            return Ok(gids);
        }
        pause(10).await;
    }
}

async fn wait_settled(
    url: &[String; 2],
    instance: &str,
    within: Duration,
) -> anyhow::Result<Vec<String>> {
    let deadline = Instant::now() + within;
    loop {
        let gids = in_doubt(url, instance).await?;
        if gids.is_empty() || Instant::now() > deadline {
            return Ok(gids);
        }
        pause(20).await;
    }
}
