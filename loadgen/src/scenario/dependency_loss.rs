//! `dependency-loss` — Redis killed and restarted empty, then PostgreSQL
//! (and the strategy's own etcd, ZooKeeper or MariaDB) cut and restored,
//! mid-run. Grabs answer 503 while a dependency is gone; no order is ever
//! half-written.
//!
//! The proof the outage landed: while killed, Redis's port refuses
//! connections; while cut, PostgreSQL's link (and the strategy's own
//! server's) drops new connections at once — each probed at the time.

use serde_json::{json, Value};

use super::buyers;
use super::case::Expectation;
use super::lab::Setup;
use super::params::{self, Spec, Unit};
use super::world::{
    arm, duration, link_state, pause, start_buyers, start_replicas, work, CaseRun, LinkState,
};
use crate::api::{StrategyEntry, StrategyName};
use crate::judge::Expected::Holds;
use crate::procs::{self, RedisNode};
use seckill_proxy::Proxy;

/// Its dials (one outage per trial: its outcome is the whole case's).
pub const PARAMS: &[Spec] = &[
    params::ttl("2000"),
    params::work("10"),
    Spec {
        name: "outage_ms",
        unit: Unit::Ms,
        default: "1000",
        meaning: "how long Redis stays killed, and PostgreSQL (with the lock's own server) cut",
    },
    params::users("8"),
    params::lock_wait("3000"),
];

/// Every strategy holds, but one whose stock lives in Redis alone.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    match strategy.strategy() {
        Some(StrategyName::RedisLuaStock) => Err("its stock lives in Redis: a Redis without persistence loses it (documented in its header)".into()),
        _ => Ok((Holds, "a dead dependency answers 503 and rolls back; nothing half-written".into())),
    }
}

/// Kill Redis, then cut PostgreSQL (and the lock server) under load. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let params = cx.params;
    let (lab, world, case, strategy, _) = cx.parts();
    let ttl = params.ttl_ms();
    let work_ms = params.ms("work_ms");
    let outage = params.ms("outage_ms");
    let users = usize::try_from(params.count("users")).unwrap_or(8).max(2);
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    let (pg, db) = lab.database_proxy().await?;
    // The strategy's own server (etcd, ZooKeeper, MariaDB) is cut with PostgreSQL.
    let coordination_proxy = match lab.coordination_addr(strategy)? {
        Some(addr) => Some(Proxy::start(addr).await?),
        None => None,
    };
    let coordination = match &coordination_proxy {
        Some(proxy) => lab.coordination_env(strategy, procs::local(proxy.port))?,
        None => Vec::new(),
    };
    start_replicas(
        lab,
        world,
        [
            (
                "a",
                Setup::new(&redis_url, ttl)
                    .database(&db)
                    .extra(coordination.clone()),
            ),
            (
                "b",
                Setup::new(&redis_url, ttl)
                    .database(&db)
                    .extra(coordination),
            ),
        ],
    )
    .await?;
    let pg_index = world.proxies.len();
    world.proxies.push(pg);
    let also = coordination_proxy.is_some();
    world.proxies.extend(coordination_proxy);
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!("replicas a, b up (TTL {ttl} ms, work {work_ms} ms); PostgreSQL reached through a proxy; {users} buyers; outages of {outage} ms"));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, users);
    pause(800).await;
    world.nodes[0].kill();
    case.step("kill -9 Redis (no persistence)");
    let redis_down = link_state(world.nodes[0].port).await;
    case.step(format!("Redis's port: {}", redis_down.as_str()));
    pause(outage).await;
    world.nodes[0].restart().await?;
    case.step("Redis started again, empty");
    pause(800).await;
    // PostgreSQL first: a holder inside its section feels it. Cut together,
    // a lock server whose client rides out short cuts (ZooKeeper) could
    // hold every buyer in the lock queue for the whole cut, and the pool
    // replaces the dropped connections before anyone notices.
    world.proxies[pg_index].set_cut(true);
    case.step("PostgreSQL cut: connections dropped, new ones refused");
    let pg_down = link_state(world.proxies[pg_index].port).await;
    case.step(format!("PostgreSQL's link: {}", pg_down.as_str()));
    if also {
        pause(300).await;
        for proxy in &world.proxies[pg_index + 1..] {
            proxy.set_cut(true);
        }
        case.step(format!("{strategy}'s server cut too"));
        pause(outage.saturating_sub(300)).await;
    } else {
        pause(outage).await;
    }
    let mut others_down = true;
    for proxy in &world.proxies[pg_index + 1..] {
        let state = link_state(proxy.port).await;
        others_down &= state != LinkState::Open;
        case.step(format!("{strategy}'s server's link: {}", state.as_str()));
    }
    for proxy in &world.proxies {
        proxy.set_cut(false);
    }
    case.step("reachable again");
    if redis_down == LinkState::Refused && pg_down != LinkState::Open && others_down {
        case.proven(format!(
            "Redis refused connections while killed; PostgreSQL's link {}{} while cut",
            pg_down.as_str(),
            if also {
                format!(", and {strategy}'s server's too")
            } else {
                String::new()
            }
        ));
    }
    pause(duration(lab, 1500)).await;
    load.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "redis_down_ms": outage, "postgres_cut_ms": outage, "lock_ttl_ms": ttl, "work_delay_ms": work_ms }),
    )
}
