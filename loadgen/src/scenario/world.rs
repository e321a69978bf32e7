//! One case's world and the moves every scenario makes with it: what the
//! case started ([`World`], all of
//! it stopped when dropped), the case's clock and log ([`Case`]), and the
//! shared steps — start two replicas, arm the strategy and a new history
//! run, wait until a holder is inside, drive buyers.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::time::Instant;

use super::buyers::{self, Buyers, Tally, Targets};
use super::lab::{Lab, Setup, TOKEN};
use crate::api::{FaultsPatch, Service};
use crate::procs::{self, RedisNode, Replica};
use seckill_proxy::Proxy;

/// One case in progress: its clock, its log of steps, its load.
#[derive(Debug)]
pub struct Case {
    pub started: Instant,
    pub steps: Vec<String>,
    pub quiet: bool,
    pub tally: Arc<Tally>,
    pub next_user: Arc<AtomicU64>,
    pub fault_landed: bool,
    pub crashed_at: Option<Instant>,
}

impl Case {
    pub fn new(quiet: bool) -> Self {
        Self {
            started: Instant::now(),
            steps: Vec::new(),
            quiet,
            tally: Arc::default(),
            next_user: Arc::new(AtomicU64::new(1)),
            fault_landed: true,
            crashed_at: None,
        }
    }

    pub fn step(&mut self, text: impl Into<String>) {
        let line = format!(
            "+{:6.2}s  {}",
            self.started.elapsed().as_secs_f64(),
            text.into()
        );
        if !self.quiet {
            println!("    {line}");
        }
        self.steps.push(line);
    }
}

/// One case being run, as each scenario's `run` takes it: the lab, the
/// case's world and log, the strategy and the variant of the fault.
#[derive(Debug)]
pub struct CaseRun<'a> {
    /// What the whole run owns.
    pub lab: &'a mut Lab,
    /// What this case starts.
    pub world: &'a mut World,
    /// Its clock, steps and load.
    pub case: &'a mut Case,
    /// The strategy under test.
    pub strategy: &'a str,
    /// The variant of the fault (`""`: the scenario has one).
    pub variant: &'a str,
}

impl<'a> CaseRun<'a> {
    /// Its parts, to be named at the top of a scenario's `run`.
    pub fn parts(self) -> (&'a mut Lab, &'a mut World, &'a mut Case, &'a str, &'a str) {
        (self.lab, self.world, self.case, self.strategy, self.variant)
    }
}

/// What a case's world consists of; dropped (everything stopped) at its end.
#[derive(Debug, Default)]
pub struct World {
    pub nodes: Vec<RedisNode>,
    pub proxies: Vec<Proxy>,
    pub replicas: Vec<Replica>,
}

impl World {
    pub fn urls(&self) -> Vec<String> {
        self.replicas
            .iter()
            .filter(|r| r.running())
            .map(Replica::url)
            .collect()
    }

    pub fn service(&self) -> Service {
        Service::new(self.urls(), TOKEN.into())
    }

    pub fn replica(&mut self, name: &str) -> anyhow::Result<&mut Replica> {
        self.replicas
            .iter_mut()
            .find(|r| r.name == name)
            .with_context(|| format!("no replica {name}"))
    }
}

pub async fn start_replicas(
    lab: &Lab,
    world: &mut World,
    setups: [(&str, Setup); 2],
) -> anyhow::Result<()> {
    for (name, setup) in setups {
        let env = lab.env(&setup);
        world
            .replicas
            .push(Replica::start(&lab.app_bin, &lab.dir, name, env).await?);
    }
    Ok(())
}

/// Two replicas `a` and `b` on one Redis (and three Redlock nodes).
pub async fn two_replicas(
    lab: &Lab,
    world: &mut World,
    strategy: &str,
    ttl_ms: u64,
    extra_a: Vec<(String, String)>,
) -> anyhow::Result<()> {
    let coordination = lab.coordination(strategy)?;
    let mut extra_a = extra_a;
    extra_a.extend(coordination.iter().cloned());
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let mut redlock = Vec::new();
    for i in 1..=3 {
        redlock.push(RedisNode::start(&lab.dir, &format!("node{i}"), &[], Vec::new()).await?);
    }
    let redis_url = redis.url();
    let redlock_urls: Vec<String> = redlock.iter().map(RedisNode::url).collect();
    world.nodes.push(redis);
    world.nodes.extend(redlock);
    start_replicas(
        lab,
        world,
        [
            (
                "a",
                Setup::new(&redis_url, ttl_ms)
                    .redlock(redlock_urls.clone())
                    .extra(extra_a),
            ),
            (
                "b",
                Setup::new(&redis_url, ttl_ms)
                    .redlock(redlock_urls)
                    .extra(coordination),
            ),
        ],
    )
    .await
}

/// Five Redlock nodes; `a` reaches {1,2,3}, `b` reaches {3,4,5} (the
/// other links cut), so node 3 alone decides which side has a majority.
pub async fn partitioned_redlock(
    lab: &mut Lab,
    world: &mut World,
    ttl: u64,
    node3_args: &[&str],
    node3_env: Vec<(String, String)>,
) -> anyhow::Result<()> {
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    for i in 1..=5 {
        let (args, env) = if i == 3 {
            (node3_args, node3_env.clone())
        } else {
            (&[][..], Vec::new())
        };
        world
            .nodes
            .push(RedisNode::start(&lab.dir, &format!("node{i}"), args, env).await?);
    }
    let mut urls = [Vec::new(), Vec::new()];
    for (side, cut) in [(0, [4, 5]), (1, [1, 2])] {
        for i in 1..=5 {
            let proxy = Proxy::start(procs::local(world.nodes[i].port)).await?;
            if cut.contains(&i) {
                proxy.set_cut(true);
            }
            urls[side].push(format!("redis://127.0.0.1:{}", proxy.port));
            world.proxies.push(proxy);
        }
    }
    let [a_urls, b_urls] = urls;
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&redis_url, ttl).redlock(a_urls)),
            ("b", Setup::new(&redis_url, ttl).redlock(b_urls)),
        ],
    )
    .await
}

/// Reset, switch, faults, new history run.
/// The faults of a case: `work_delay_ms` inside the section, no pause, no
/// early unlock (a scenario adds its own: `FaultsPatch { …, ..work(ms) }`).
pub fn work(work_delay_ms: u64) -> FaultsPatch {
    FaultsPatch {
        work_delay_ms: Some(work_delay_ms),
        pause_ms: Some(0),
        unlock_before_commit: Some(false),
        ..FaultsPatch::default()
    }
}

/// Product 1 reset to 1,000 units, `strategy` on every replica, `faults`
/// set, and a new history run.
pub async fn arm(service: &Service, strategy: &str, faults: FaultsPatch) -> anyhow::Result<()> {
    service.reset(1, 1000).await?;
    service.switch(strategy, 1).await?;
    service.set_faults(faults).await?;
    service.history_start().await?;
    Ok(())
}

/// Wait until `who` (an instance, or any when `None`) is inside a critical
/// section, as the arbiter sees it. Polls through `service`.
pub async fn wait_inside(
    service: &Service,
    who: Option<&str>,
    within: Duration,
) -> anyhow::Result<bool> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let history = service.history().await?;
        if history
            .inside
            .iter()
            .any(|i| who.is_none_or(|w| i.instance == w))
        {
            return Ok(true);
        }
        pause(3).await;
    }
    Ok(false)
}

pub fn duration(lab: &Lab, full_ms: u64) -> u64 {
    if lab.options.quick {
        full_ms * 6 / 10
    } else {
        full_ms
    }
}

/// `users` closed-loop buyers on every running replica for `ms` (60 % of
/// it with `--quick`), then stopped with every grab answered.
pub async fn steady_load(lab: &Lab, world: &World, case: &mut Case, users: usize, ms: u64) {
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, users);
    pause(duration(lab, ms)).await;
    load.stop().await;
    case.step("buyers stopped");
}

pub fn start_buyers(lab: &Lab, case: &Case, targets: &Targets, users: usize) -> Buyers {
    Buyers::start(
        &lab.http,
        targets,
        users,
        Duration::ZERO,
        &case.next_user,
        &case.tally,
    )
}

/// Overlaps of `strategy` in the history so far (0 when it cannot be read).
pub async fn overlaps_so_far(service: &Service, strategy: &str) -> u64 {
    service
        .history()
        .await
        .map_or(0, |history| history.of(strategy).overlaps)
}

/// Sleep, a readable name.
pub async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
