//! `dependency-loss` — Redis killed and restarted empty, then PostgreSQL
//! (and the strategy's own etcd, ZooKeeper or MariaDB) cut and restored,
//! mid-run. Grabs answer 503 while a dependency is gone; no order is ever
//! half-written.
//!
//! Each of `injections` rounds is one outage of both (Redis, then
//! PostgreSQL), judged on its data: a half-written order is a committed
//! stale write (k of n).
//!
//! The proof the outage landed: while killed, Redis's port refuses
//! connections; while cut, PostgreSQL's link (and the strategy's own
//! server's) drops new connections at once — each probed at the time —
//! and some grab of the round failed while they were down.

use super::case::Expectation;
use super::dials::{self, dials, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::Setup;
use super::params::Spec;
use super::world::{
    arm, link_state, pause, redlock_nodes, start_replicas, work, Case, CaseRun, LinkState, World,
};
use crate::procs::{self, RedisNode};
use seckill_load::api::Variant;
use seckill_load::api::{StrategyEntry, StrategyName};
use seckill_load::judge::Expected::Holds;
use seckill_load::load::Outcome;
use seckill_proxy::Proxy;

dials! {
    /// dependency-loss's dials.
    pub struct DependencyLossDials {
        ttl_ms: u64 = dials::ttl("2000"),
        work_ms: u64 = dials::work("10"),
        outage_ms: u64 = Shape::ms(
            "500",
            "how long Redis stays killed, and PostgreSQL (with the lock's own server) cut",
        ),
        injections: u64 = dials::injections("12"),
        users: usize = dials::users("8"),
        lock_wait_ms: u64 = dials::lock_wait("1000"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = DependencyLossDials::SPECS;

/// `--quick`: shorter outages (the lock's own server is still cut for
/// the last 100 ms of PostgreSQL's).
pub const QUICK: &[(&str, &str)] = &[("outage_ms", "300")];

/// The replicas' database acquire timeout, ms (below the quick outage).
const ACQUIRE_TIMEOUT_MS: u64 = 200;

/// Load before, between and after the steps of an outage: half an outage,
/// so the buyers buy again before the next dependency goes.
fn between_ms(outage: u64) -> u64 {
    outage / 2
}

/// Every strategy holds, but one whose stock lives in Redis alone.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>) -> Expectation {
    match strategy.name {
        StrategyName::RedisLuaStock => Err("its stock lives in Redis: a Redis without persistence loses it (documented in its header)".into()),
        _ => Ok((Holds, "a dead dependency answers 503 and rolls back; nothing half-written".into())),
    }
}

/// Kill Redis, then cut PostgreSQL (and the lock server: Redlock's nodes) under load. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = DependencyLossDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let (ttl, work_ms, outage) = (d.ttl_ms, d.work_ms, d.outage_ms);
    let users = d.users.max(2);
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    let (pg, db) = lab.database_proxy().await?;
    let (coordination_proxy, mut coordination, redlock) =
        lock_servers(lab, world, strategy).await?;
    // A grab waits this long for a database connection: shorter than an
    // outage, so a cut is felt (a 503) instead of waited out inside the
    // pool's default second.
    coordination.push((
        "SECKILL_DATABASE_ACQUIRE_TIMEOUT_MS".to_owned(),
        ACQUIRE_TIMEOUT_MS.to_string(),
    ));
    start_replicas(
        lab,
        world,
        [
            (
                "a",
                Setup::new(&redis_url, ttl)
                    .database(&db)
                    .redlock(redlock.clone())
                    .extra(coordination.clone()),
            ),
            (
                "b",
                Setup::new(&redis_url, ttl)
                    .database(&db)
                    .redlock(redlock)
                    .extra(coordination),
            ),
        ],
    )
    .await?;
    let pg_index = world.proxies.len();
    world.proxies.push(pg);
    world.proxies.extend(coordination_proxy);
    arm(&world.service(), strategy, work(work_ms)).await?;
    let injections = d.injections;
    case.step(format!("replicas a, b up (TTL {ttl} ms, work {work_ms} ms); PostgreSQL reached through a proxy; {injections} injections: {users} buyers, Redis killed then PostgreSQL cut, {outage} ms each"));
    for _ in 0..injections {
        recovered(world).await?;
        let round = inject::begin(&lab.http, world, case, users, between_ms(outage)).await?;
        let window = outage_once(world, case, strategy, pg_index, outage).await?;
        pause(between_ms(outage)).await;
        round.end(world, case, strategy, window).await?;
    }
    case.proven_by_injections(|landed| {
        format!("{landed} of {injections} outages landed: Redis refused, PostgreSQL's link dropped, and grabs failed meanwhile")
    });
    Ok(dials::record(
        &d,
        Facts {
            redis: Some("killed".to_owned()),
            postgres: Some("cut".to_owned()),
            ..Facts::default()
        },
    ))
}

/// The strategy's own servers, each behind a proxy of its own that is cut
/// with PostgreSQL: etcd, ZooKeeper or MariaDB (their settings), or
/// Redlock's three nodes (their URLs; without them `redlock` could not run
/// here: the atlas's lost-dependency cell was `undecided`, every case
/// failing on `strategy_unavailable`). The nodes join the world after its
/// Redis.
async fn lock_servers(
    lab: &super::lab::Lab,
    world: &mut World,
    strategy: StrategyName,
) -> anyhow::Result<(Vec<Proxy>, Vec<(String, String)>, Vec<String>)> {
    if let Some(addr) = lab.coordination_addr(strategy)? {
        let proxy = Proxy::start(addr).await?;
        let env = lab.coordination_env(strategy, procs::local(proxy.port))?;
        return Ok((vec![proxy], env, Vec::new()));
    }
    if strategy != StrategyName::Redlock.as_str() {
        return Ok((Vec::new(), Vec::new(), Vec::new()));
    }
    let (mut proxies, mut urls) = (Vec::new(), Vec::new());
    for node in redlock_nodes(lab).await? {
        let proxy = Proxy::start(procs::local(node.port)).await?;
        urls.push(format!("redis://127.0.0.1:{}", proxy.port));
        proxies.push(proxy);
        world.nodes.push(node);
    }
    Ok((proxies, Vec::new(), urls))
}

/// Wait (up to 5 s) until a reset goes through on every replica: the
/// pools replace the connections the last cut dropped, and a reset that
/// answers 503 has changed nothing.
async fn recovered(world: &World) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match world.service().reset(1, 1000).await {
            Ok(()) => return Ok(()),
            Err(_) if tokio::time::Instant::now() < deadline => pause(50).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// One outage under the round's load: Redis killed and started again
/// empty, then PostgreSQL cut (and, two thirds of the outage later, the
/// strategy's own server) and restored. Its window, proven when every link was seen down
/// and some grab failed meanwhile.
async fn outage_once(
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    pg_index: usize,
    outage: u64,
) -> anyhow::Result<Window> {
    let failed = |case: &Case| case.tally.outcome(Outcome::Error);
    let failed_before = failed(case);
    let mut window = Window::starting(case, "Redis, then PostgreSQL", None);
    world.nodes[0].kill();
    let redis_down = link_state(world.nodes[0].port).await;
    pause(outage).await;
    world.nodes[0].restart().await?;
    pause(between_ms(outage)).await;
    // PostgreSQL first: a holder inside its section feels it. Cut together,
    // a lock server whose client rides out short cuts (ZooKeeper) could
    // hold every buyer in the lock queue for the whole cut, and the pool
    // replaces the dropped connections before anyone notices.
    world.proxies[pg_index].set_cut(true);
    let pg_down = link_state(world.proxies[pg_index].port).await;
    let also = world.proxies.len() > pg_index + 1;
    let lead = if also { outage * 2 / 3 } else { outage };
    pause(lead).await;
    for proxy in &world.proxies[pg_index + 1..] {
        proxy.set_cut(true);
    }
    pause(outage - lead).await;
    let mut others_down = true;
    for proxy in &world.proxies[pg_index + 1..] {
        others_down &= link_state(proxy.port).await != LinkState::Open;
    }
    for proxy in &world.proxies {
        proxy.set_cut(false);
    }
    window.end_ms = case.clock_ms();
    let felt = failed(case) - failed_before;
    let line = format!(
        "Redis's port {} while killed; PostgreSQL's link {}{} while cut; {felt} grabs failed",
        redis_down.as_str(),
        pg_down.as_str(),
        if also {
            format!(
                ", {strategy}'s server's {}",
                if others_down { "down too" } else { "OPEN" }
            )
        } else {
            String::new()
        }
    );
    if redis_down == LinkState::Refused && pg_down != LinkState::Open && others_down && felt > 0 {
        window.proof = Some(line);
    } else {
        case.step(format!("not proven: {line}: not counted"));
    }
    Ok(window)
}
