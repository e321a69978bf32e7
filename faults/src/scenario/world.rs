//! One case's world and the moves every scenario makes with it: what the
//! case started ([`World`], all of
//! it stopped when dropped), the case's clock and log ([`Case`]), and the
//! shared steps — start two replicas, arm the strategy and a new history
//! run, wait until a holder is inside, drive buyers — and the probes a
//! scenario proves its fault landed with (a Redis `PING` timed through a
//! link, a link's state, a node's `TIME`, a replica's HTTP `Date`, the
//! faults each replica reads back).

use seckill_load::api::StrategyName;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::buyers::{self, Buyers, Targets};
use super::lab::{Lab, Setup, TOKEN};
use crate::procs::{self, RedisNode, Replica};
use seckill_load::api::Variant;
use seckill_load::api::{Faults, FaultsPatch, Service};
use seckill_load::load::Live;
use seckill_proxy::Proxy;

/// One case in progress: its clock, its log of steps, its load.
#[derive(Debug)]
pub struct Case {
    pub started: Instant,
    /// When it started, Unix epoch ms (the fault bands' clock).
    pub started_unix_ms: u64,
    pub steps: Vec<String>,
    pub quiet: bool,
    pub tally: Arc<Live>,
    pub next_user: Arc<AtomicU64>,
    /// Whether the fault was *proven* to land: `false` until the scenario
    /// has seen it (a stopped process, a clock ahead, a delay measured, a
    /// node restarted, …) and written the proof into its steps. A case
    /// without it is `inconclusive`.
    pub fault_landed: bool,
    pub crashed_at: Option<Instant>,
    /// Put before every step: `[trial k/N] ` with `--trials N` > 1.
    pub label: String,
    /// Put before every printed step only (not the report's): `[case k] `
    /// when cases run at once (`--jobs` > 1), so their lines can be told
    /// apart.
    pub tag: String,
    /// The faults injected, each judged on its own.
    pub injections: Vec<super::record::Injection>,
    /// What each injection's round left (summed into the case's figures).
    pub rounds: Vec<super::record::Observed>,
}

impl Case {
    pub fn new(quiet: bool, label: String) -> Self {
        Self {
            started: Instant::now(),
            started_unix_ms: seckill_load::clock::unix_ms(),
            steps: Vec::new(),
            quiet,
            tally: Arc::default(),
            next_user: Arc::new(AtomicU64::new(1)),
            fault_landed: false,
            crashed_at: None,
            label,
            tag: String::new(),
            injections: Vec::new(),
            rounds: Vec::new(),
        }
    }

    /// Now, ms on the case's clock (the clock of its steps).
    pub fn clock_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The case's proof from its injections: when any landed, `proof` of
    /// how many says how (a step, as [`Case::proven`]). How many landed.
    pub fn proven_by_injections(&mut self, proof: impl FnOnce(usize) -> String) -> usize {
        let landed = self.injections.iter().filter(|i| i.proof.is_some()).count();
        if landed > 0 {
            self.proven(proof(landed));
        }
        landed
    }

    /// The fault is proven to have landed: `proof` says how (a step).
    pub fn proven(&mut self, proof: impl Into<String>) {
        self.fault_landed = true;
        self.step(format!("proof: {}", proof.into()));
    }

    pub fn step(&mut self, text: impl Into<String>) {
        let line = format!(
            "{}+{:6.2}s  {}",
            self.label,
            self.started.elapsed().as_secs_f64(),
            text.into()
        );
        if !self.quiet {
            seckill_load::progress::line(format!("    {}{line}", self.tag));
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
    pub strategy: StrategyName,
    /// The variant of the fault (`None`: the scenario has one).
    pub variant: Option<Variant>,
    /// The dials in force.
    pub params: &'a super::params::Params,
}

impl<'a> CaseRun<'a> {
    /// Its parts, to be named at the top of a scenario's `run`.
    pub fn parts(
        self,
    ) -> (
        &'a mut Lab,
        &'a mut World,
        &'a mut Case,
        StrategyName,
        Option<Variant>,
    ) {
        (self.lab, self.world, self.case, self.strategy, self.variant)
    }
}

/// What a case's world consists of; dropped (everything stopped) at its end.
#[derive(Debug, Default)]
pub struct World {
    pub nodes: Vec<RedisNode>,
    pub proxies: Vec<Proxy>,
    pub replicas: Vec<Replica>,
    /// `pg-3pc`'s participants, when the case started its own.
    pub participants: Vec<procs::Participant>,
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

/// The lock store's Redis and three Redlock nodes, none joined to a
/// world yet (the caller may put proxies in front of some first).
pub async fn redis_and_nodes(lab: &Lab) -> anyhow::Result<(RedisNode, Vec<RedisNode>)> {
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    Ok((redis, redlock_nodes(lab).await?))
}

/// Three Redlock nodes (`node1`…`node3`), not joined to a world yet.
pub async fn redlock_nodes(lab: &Lab) -> anyhow::Result<Vec<RedisNode>> {
    let mut nodes = Vec::new();
    for i in 1..=3 {
        nodes.push(RedisNode::start(&lab.dir, &format!("node{i}"), &[], Vec::new()).await?);
    }
    Ok(nodes)
}

/// Two replicas `a` and `b` on one Redis (and three Redlock nodes).
pub async fn two_replicas(
    lab: &Lab,
    world: &mut World,
    strategy: StrategyName,
    ttl_ms: u64,
    extra_a: Vec<(String, String)>,
) -> anyhow::Result<()> {
    let coordination = lab.coordination(strategy)?;
    let mut extra_a = extra_a;
    extra_a.extend(coordination.iter().cloned());
    let (redis, redlock) = redis_and_nodes(lab).await?;
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

/// The partition of [`partitioned_redlock`] seen in force: each side's
/// links to the two nodes it must not reach drop every new connection,
/// and both sides' links to node 3 answer a `PING`. Written as a step;
/// whether it held.
pub async fn partition_in_force(world: &World, case: &mut Case) -> bool {
    // a's links are proxies 0..5 (nodes 1..5), b's 5..10.
    let cut = [3, 4, 5, 6];
    let mut states = Vec::new();
    for &i in &cut {
        states.push(link_state(world.proxies[i].port).await);
    }
    let all_cut = states.iter().all(|s| *s != LinkState::Open);
    let mut shared = Vec::new();
    for i in [2, 7] {
        shared.push(timed_ping(world.proxies[i].port, Duration::from_secs(2)).await);
    }
    let both_reach = shared.iter().all(Result::is_ok);
    let text = format!(
        "a's links to nodes 4,5 and b's to nodes 1,2: {}; a PING to node 3 through a's link and b's: {}",
        states
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        if both_reach { "answered" } else { "NOT answered" }
    );
    if all_cut && both_reach {
        case.step(format!("partition in force — {text}"));
        true
    } else {
        case.step(format!("partition NOT in force — {text}"));
        false
    }
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
pub async fn arm(
    service: &Service,
    strategy: StrategyName,
    faults: FaultsPatch,
) -> anyhow::Result<()> {
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

pub fn start_buyers(lab: &Lab, case: &Case, targets: &Targets, users: usize) -> Buyers {
    buyers::start(
        &lab.http,
        targets,
        users,
        Duration::ZERO,
        &case.next_user,
        &case.tally,
    )
}

/// One grab on each replica in turn, not judged, before the first round:
/// a replica's first section (its first connections, the first run of
/// each script on each node) is slower than the rest. `why` goes in the
/// step that says so.
pub async fn warm_up(lab: &Lab, world: &World, case: &mut Case, why: &str) {
    for url in world.urls() {
        let _ = super::buyers::grab_once(&lab.http, &url, &case.next_user, &case.tally).await;
    }
    case.step(format!("one grab on each replica first, not judged: {why}"));
}

/// Sleep, a readable name.
pub async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// How far `node`'s wall clock (its `TIME`, the clock it expires keys by)
/// runs ahead of this machine's, in milliseconds.
pub async fn clock_ahead_ms(node: &RedisNode) -> anyhow::Result<i64> {
    Ok(clock_reading(node).await?.ahead_ms)
}

/// One reading of a node's clock against ours, as NTP takes one: the
/// node read its clock at some moment between our request and its answer,
/// so its lead is known to within half that round trip.
#[derive(Debug, Clone, Copy)]
pub struct ClockReading {
    /// The node's `TIME` less our clock at the middle of the round trip.
    pub ahead_ms: i64,
    /// Half the round trip, rounded up: how far the lead may be off.
    pub within_ms: i64,
}

/// The best of three readings of `node`'s clock (the shortest round trip):
/// a busy machine that delays one answer does not move the lead it reads.
pub async fn clock_reading(node: &RedisNode) -> anyhow::Result<ClockReading> {
    let mut conn = node.conn().await?;
    let mut best: Option<ClockReading> = None;
    for _ in 0..3 {
        let before = procs::now_ms();
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
        let after = procs::now_ms();
        let reading = ClockReading {
            ahead_ms: secs * 1000 + micros / 1000 - (before + after) / 2,
            within_ms: (after - before + 1) / 2 + 1,
        };
        if best.is_none_or(|b| reading.within_ms < b.within_ms) {
            best = Some(reading);
        }
    }
    Ok(best.expect("three readings"))
}

/// A Redis `PING` on a new connection to `127.0.0.1:port` (a node, or a
/// proxy in front of one), timed from the request to the `+PONG`: what a
/// delayed link adds is seen here. Gives up after `within`.
pub async fn timed_ping(port: u16, within: Duration) -> anyhow::Result<Duration> {
    let ping = async {
        let mut stream = TcpStream::connect(procs::local(port)).await?;
        let _ = stream.set_nodelay(true);
        let sent = Instant::now();
        stream.write_all(b"PING\r\n").await?;
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply).await?;
        anyhow::ensure!(reply.starts_with(b"+PONG"), "not a PONG: {reply:?}");
        Ok(sent.elapsed())
    };
    tokio::time::timeout(within, ping)
        .await
        .with_context(|| format!("no PONG from port {port} within {within:?}"))?
}

/// What a TCP link to `127.0.0.1:port` does with a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Connection refused: nothing listens (a killed server).
    Refused,
    /// Accepted, then closed without a byte: a cut proxy.
    Dropped,
    /// Accepted and kept open (a server waiting for our first words).
    Open,
}

impl LinkState {
    /// As the steps say it.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Refused => "connection refused",
            LinkState::Dropped => "accepted and dropped at once",
            LinkState::Open => "open",
        }
    }
}

/// Connect to `127.0.0.1:port` and watch the connection for 300 ms.
pub async fn link_state(port: u16) -> LinkState {
    let Ok(mut stream) = TcpStream::connect(procs::local(port)).await else {
        return LinkState::Refused;
    };
    let mut byte = [0u8; 1];
    match tokio::time::timeout(Duration::from_millis(300), stream.read(&mut byte)).await {
        Ok(Ok(0) | Err(_)) => LinkState::Dropped,
        Ok(Ok(_)) | Err(_) => LinkState::Open,
    }
}

/// Each running replica's own `GET /admin/faults`, by name.
pub async fn faults_of_each(world: &World) -> anyhow::Result<Vec<(String, Faults)>> {
    let mut each = Vec::new();
    for replica in world.replicas.iter().filter(|r| r.running()) {
        let one = Service::new(vec![replica.url()], TOKEN.into());
        each.push((replica.name.clone(), one.faults().await?));
    }
    Ok(each)
}

/// The `Date` header of a replica's answer (actix writes it from the
/// process's own wall clock, to the second), as seconds since the epoch.
pub async fn http_date(http: &reqwest::Client, url: &str) -> anyhow::Result<i64> {
    let answer = http.get(format!("{url}/health/live")).send().await?;
    let date = answer
        .headers()
        .get(reqwest::header::DATE)
        .context("no Date header")?
        .to_str()?
        .to_owned();
    parse_http_date(&date).with_context(|| format!("not an HTTP date: {date}"))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110's IMF-fixdate) as seconds
/// since the epoch.
pub fn parse_http_date(date: &str) -> Option<i64> {
    let mut words = date.split_whitespace().skip(1);
    let day: i64 = words.next()?.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| Some(*m) == words.clone().next())?;
    words.next();
    let year: i64 = words.next()?.parse().ok()?;
    let mut hms = words.next()?.split(':').map(str::parse::<i64>);
    let (h, m, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let month = i64::try_from(month).ok()? + 1;
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_http_dates() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 23:59:59 GMT"),
            Some(1_835_481_599)
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }
}
