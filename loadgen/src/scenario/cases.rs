//! The scenarios themselves: what each starts, how it breaks it, and what
//! each strategy is expected to do under it.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::buyers::{self, Buyers, Tally, Targets};
use super::{
    judge, pause, CaseResult, Expected, Guarantee, Observed, ScenarioInfo, ScenarioReport,
};
use crate::expect::{kind, Kind};
use crate::procs::{self, Clockshift, RedisNode, Replica};
use crate::service::Service;
use seckill_proxy::Proxy;

/// Settings of a scenario run (from the command line).
#[derive(Debug, Clone)]
pub struct Options {
    /// Strategies to run instead of each scenario's defaults.
    pub strategies: Vec<String>,
    /// Report folder.
    pub out: PathBuf,
    /// PostgreSQL server (a fresh database is created on it per run).
    pub database_url: String,
    /// The `seckill-app` binary.
    pub app_bin: Option<PathBuf>,
    /// Shorter runs (CI).
    pub quick: bool,
    /// No per-step lines.
    pub quiet: bool,
    /// MariaDB for `mysql-get-lock`.
    pub mysql_url: String,
}

const TOKEN: &str = "seckill-scenario-admin";

fn guarantee(kind: Kind) -> Guarantee {
    if crate::expect::guards_data_only(kind) {
        Guarantee::Data
    } else {
        Guarantee::Exclusion
    }
}

/// What `strategy` should do under `scenario`/`variant`; `Err` = the
/// scenario does not apply to it.
fn expect(scenario: &str, variant: &str, strategy: &str) -> Result<(Expected, String), String> {
    use Expected::{Breaks, Holds};
    let k = kind(strategy);
    if matches!(k, Kind::NoLock | Kind::ProcessLocal) {
        return Ok((Breaks, "no lock shared by the two replicas".into()));
    }
    let r = |e: Expected, why: &str| Ok((e, why.to_owned()));
    match scenario {
        "gc-pause" => match k {
            Kind::Ttl | Kind::Validity | Kind::LockTable => {
                r(Breaks, "the frozen holder outlives its TTL; another enters")
            }
            Kind::Lease => r(Breaks, "SIGSTOP freezes the renewal task too: the lease runs out"),
            Kind::Fenced => r(Holds, "the next holder's larger token makes the database refuse the frozen one"),
            Kind::NoExpiry => r(Holds, "nothing expires: the others wait"),
            Kind::InTransaction => r(Holds, "the row lock lives as long as the transaction"),
            Kind::Session => r(Holds, "the frozen holder's connection stays open: the server keeps its lock"),
            _ => r(Holds, "no lock to outlive"),
        },
        "slow-network" => match k {
            Kind::Ttl => r(Breaks, "the grant arrives after the key expired; the holder enters anyway"),
            Kind::Lease => r(Holds, "a grant that arrives after the lease deadline is given back"),
            Kind::Validity => r(Holds, "per-node timeouts, and validity = TTL - elapsed refuses a late quorum"),
            Kind::Fenced => r(Holds, "late holders are refused by the database"),
            Kind::NoExpiry | Kind::LockTable | Kind::InTransaction | Kind::NotALock | Kind::Session => {
                r(Holds, "no TTL on the slow link to run out")
            }
            _ => unreachable_kind(),
        },
        "clock-jump" | "redlock-restart" if k != Kind::Validity => {
            Err("this scenario breaks Redlock's nodes; run it with redlock".into())
        }
        "clock-jump" => match variant {
            "partition" => r(Holds, "node 3 is shared by both majorities: one holder at a time"),
            _ => r(Breaks, "node 3's key expires early, so both sides reach a majority"),
        },
        "redlock-restart" => match variant {
            "restart" => r(Breaks, "node 3 comes back empty: its vote is given twice"),
            "delayed-restart" => r(Holds, "node 3 stays down longer than the TTL; every lock it knew has expired"),
            _ => r(Holds, "appendfsync always: node 3 comes back with its keys"),
        },
        "failover" if matches!(strategy, "etcd-lease" | "zk-ephemeral-seq") => {
            Err("this scenario fails over the service's one Redis; etcd and ZooKeeper replicate by consensus".into())
        }
        "failover" => match (k, variant) {
            (Kind::Validity | Kind::LockTable | Kind::InTransaction | Kind::NotALock | Kind::Session, _) => {
                Err("this scenario fails over the service's one Redis; it applies to the single-instance Redis locks".into())
            }
            (Kind::Fenced, _) => r(Holds, "the promoted replica's older counter yields stale tokens the database refuses"),
            (_, "no-wait") => r(Breaks, "the lock key had not reached the replica when it was promoted"),
            (_, _) if matches!(strategy, "set-nx-px" | "set-nx-px-check-del" | "set-nx-px-token") => {
                r(Holds, "WAIT 1: the holder enters only once the replica has the key")
            }
            _ => r(Breaks, "this lock's writes do not WAIT for the replica"),
        },
        "crash-holder" => match k {
            Kind::NoExpiry => r(Breaks, "nothing ever deletes the dead holder's key"),
            Kind::Ttl if strategy == "setnx-expire" => {
                r(Breaks, "killed between SETNX and EXPIRE: a key without a TTL")
            }
            Kind::LockTable => r(Holds, "blocked until a waiter sweeps the row (one TTL)"),
            _ => r(Holds, "the TTL, lease or session ends with the holder"),
        },
        "clock-skew" => match strategy {
            "setnx-getset" => r(Breaks, "a replica whose clock runs ahead takes over a live lock"),
            _ => r(Holds, "expiry is decided by the server's clock, not the replica's"),
        },
        "unlock-before-commit" => match k {
            Kind::Fenced => r(Holds, "the next holder's fence registration waits for the row the committing one still locks"),
            Kind::InTransaction => r(Holds, "the lock is the transaction's: it cannot be released before the commit"),
            Kind::NotALock => r(Holds, "no lock to release"),
            _ => r(Breaks, "the next holder reads before the previous one committed"),
        },
        "dependency-loss" => match strategy {
            "redis-lua-stock" => Err("its stock lives in Redis: a Redis without persistence loses it (documented in its header)".into()),
            _ => r(Holds, "a dead dependency answers 503 and rolls back; nothing half-written"),
        },
        _ => Err(format!("unknown scenario {scenario}")),
    }
}

fn unreachable_kind() -> Result<(Expected, String), String> {
    Err("not applicable".into())
}

/// The variants a scenario runs for each strategy.
fn variants(scenario: &str) -> &'static [&'static str] {
    match scenario {
        "clock-jump" => &["partition", "partition+jump"],
        "redlock-restart" => &["restart", "delayed-restart", "appendfsync-always"],
        "failover" => &["no-wait", "wait-1"],
        _ => &[""],
    }
}

/// What one run owns for its whole length.
struct Lab {
    dir: PathBuf,
    app_bin: PathBuf,
    admin_db: String,
    db_url: String,
    arbiter: RedisNode,
    clockshift: Option<Clockshift>,
    http: reqwest::Client,
    options: Options,
    etcd: Option<procs::Daemon>,
    zookeeper: Option<procs::Daemon>,
}

impl Lab {
    async fn new(options: &Options) -> anyhow::Result<Self> {
        let app_bin = procs::find_app_binary(options.app_bin.as_deref())?;
        let dir = std::env::temp_dir().join(format!("seckill-scenarios-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let db_name = run_database_name();
        let admin_db = options.database_url.clone();
        let mut db_url = reqwest::Url::parse(&admin_db).context("--database-url")?;
        {
            use sqlx::Connection as _;
            let mut conn = sqlx::PgConnection::connect(&admin_db)
                .await
                .with_context(|| format!("connect to PostgreSQL at {admin_db} (--database-url)"))?;
            sqlx::query(&format!("DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"))
                .execute(&mut conn)
                .await?;
            sqlx::query(&format!("CREATE DATABASE {db_name}"))
                .execute(&mut conn)
                .await?;
        }
        db_url.set_path(&format!("/{db_name}"));
        let arbiter = RedisNode::start(&dir, "arbiter", &[], Vec::new()).await?;
        Ok(Self {
            dir,
            app_bin,
            admin_db,
            db_url: db_url.to_string(),
            arbiter,
            clockshift: None,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .pool_max_idle_per_host(64)
                .build()?,
            options: options.clone(),
            etcd: None,
            zookeeper: None,
        })
    }

    /// Start the coordination servers the chosen strategies need.
    async fn start_coordination(&mut self, strategies: &[String]) -> anyhow::Result<()> {
        if self.etcd.is_none() && strategies.iter().any(|s| s == "etcd-lease") {
            self.etcd = Some(procs::Daemon::etcd(&self.dir).await?);
        }
        if self.zookeeper.is_none() && strategies.iter().any(|s| s == "zk-ephemeral-seq") {
            self.zookeeper = Some(procs::Daemon::zookeeper(&self.dir).await?);
        }
        Ok(())
    }

    /// Where `strategy`'s coordination server listens, if it has one.
    fn coordination_addr(&self, strategy: &str) -> anyhow::Result<Option<std::net::SocketAddr>> {
        Ok(match strategy {
            "etcd-lease" => self.etcd.as_ref().map(|d| procs::local(d.port)),
            "zk-ephemeral-seq" => self.zookeeper.as_ref().map(|d| procs::local(d.port)),
            "mysql-get-lock" => Some(host_port(&self.options.mysql_url, 3306)?),
            _ => None,
        })
    }

    /// The replica settings that point `strategy` at its server, at `addr`
    /// (the server itself, or a proxy in front of it).
    fn coordination_env(
        &self,
        strategy: &str,
        addr: std::net::SocketAddr,
    ) -> anyhow::Result<Vec<(String, String)>> {
        Ok(match strategy {
            "etcd-lease" => vec![("SECKILL_ETCD_URLS".into(), format!("http://{addr}"))],
            "zk-ephemeral-seq" => vec![("SECKILL_ZOOKEEPER_URL".into(), addr.to_string())],
            "mysql-get-lock" => {
                let mut url =
                    reqwest::Url::parse(&self.options.mysql_url).context("--mysql-url")?;
                url.set_host(Some(&addr.ip().to_string()))
                    .context("--mysql-url host")?;
                url.set_port(Some(addr.port()))
                    .map_err(|()| anyhow::anyhow!("--mysql-url port"))?;
                vec![("SECKILL_MYSQL_URL".into(), url.to_string())]
            }
            _ => Vec::new(),
        })
    }

    /// [`Lab::coordination_env`] for the server itself.
    fn coordination(&self, strategy: &str) -> anyhow::Result<Vec<(String, String)>> {
        match self.coordination_addr(strategy)? {
            Some(addr) => self.coordination_env(strategy, addr),
            None => Ok(Vec::new()),
        }
    }

    fn clockshift(&mut self) -> anyhow::Result<Clockshift> {
        if self.clockshift.is_none() {
            self.clockshift = Some(Clockshift::build(&self.dir)?);
        }
        self.clockshift.clone().context("clockshift")
    }

    async fn drop_database(&self) {
        use sqlx::Connection as _;
        let name = self
            .db_url
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        if let Ok(mut conn) = sqlx::PgConnection::connect(&self.admin_db).await {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn)
                .await;
        }
    }

    /// The environment of one replica.
    fn env(&self, setup: &Setup) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = vec![
            (
                "SECKILL_DATABASE_URL".into(),
                setup
                    .database_url
                    .clone()
                    .unwrap_or_else(|| self.db_url.clone()),
            ),
            ("SECKILL_REDIS_URL".into(), setup.redis_url.clone()),
            ("SECKILL_HISTORY_URL".into(), self.arbiter.url()),
            ("SECKILL_ADMIN_TOKEN".into(), TOKEN.into()),
            ("SECKILL_LOCK_TTL_MS".into(), setup.ttl_ms.to_string()),
            ("SECKILL_LOCK_WAIT_MS".into(), "3000".into()),
            ("SECKILL_SEED_PRODUCTS".into(), "1:100".into()),
            ("SECKILL_CONTROL_REFRESH_MS".into(), "100".into()),
            ("SECKILL_SYNCHRONOUS_COMMIT".into(), "off".into()),
            ("SECKILL_DATABASE_MAX_CONNECTIONS".into(), "12".into()),
            ("SECKILL_DATABASE_ACQUIRE_TIMEOUT_MS".into(), "1000".into()),
        ];
        if !setup.redlock_urls.is_empty() {
            env.push(("SECKILL_REDLOCK_URLS".into(), setup.redlock_urls.join(",")));
        }
        env.extend(setup.extra.iter().cloned());
        env
    }
}

/// This run's database (one per `seckill-loadgen` process).
fn run_database_name() -> String {
    format!("seckill_scenarios_{}", std::process::id())
}

/// Drop this run's database (at the end, or after Ctrl-C).
pub async fn drop_run_database(admin_url: &str) {
    use sqlx::Connection as _;
    if let Ok(mut conn) = sqlx::PgConnection::connect(admin_url).await {
        let sql = format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            run_database_name()
        );
        let _ = sqlx::query(&sql).execute(&mut conn).await;
    }
}

/// How one replica of a case is wired.
struct Setup {
    redis_url: String,
    redlock_urls: Vec<String>,
    database_url: Option<String>,
    ttl_ms: u64,
    extra: Vec<(String, String)>,
}

impl Setup {
    /// Service Redis at `redis_url`, locks of `ttl_ms`.
    fn new(redis_url: &str, ttl_ms: u64) -> Self {
        Self {
            redis_url: redis_url.to_owned(),
            redlock_urls: Vec::new(),
            database_url: None,
            ttl_ms,
            extra: Vec::new(),
        }
    }

    /// Redlock nodes.
    fn redlock(mut self, urls: Vec<String>) -> Self {
        self.redlock_urls = urls;
        self
    }

    /// A database URL other than the lab's (a proxy in front of it).
    fn database(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_owned());
        self
    }

    /// More environment.
    fn extra(mut self, env: Vec<(String, String)>) -> Self {
        self.extra = env;
        self
    }
}

/// One case in progress: its clock, its log of steps, its load.
struct Case {
    started: Instant,
    steps: Vec<String>,
    quiet: bool,
    tally: Arc<Tally>,
    next_user: Arc<AtomicU64>,
    fault_landed: bool,
    crashed_at: Option<Instant>,
}

impl Case {
    fn new(quiet: bool) -> Self {
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

    fn step(&mut self, text: impl Into<String>) {
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

/// Run every chosen scenario and collect the report.
pub async fn run_all(
    chosen: &[&ScenarioInfo],
    options: &Options,
) -> anyhow::Result<ScenarioReport> {
    let started = Instant::now();
    let mut lab = Lab::new(options).await?;
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    let outcome = async {
        let all: Vec<String> = chosen
            .iter()
            .flat_map(|scenario| strategies_of(scenario, options))
            .collect();
        lab.start_coordination(&all).await?;
        for scenario in chosen {
            let strategies = strategies_of(scenario, options);
            for strategy in &strategies {
                for variant in variants(scenario.name) {
                    let (expected, why) = match expect(scenario.name, variant, strategy) {
                        Ok(e) => e,
                        Err(reason) => {
                            if variant == &variants(scenario.name)[0] {
                                skipped.push(json!({
                                    "name": scenario.name, "strategy": strategy, "reason": reason
                                }));
                            }
                            continue;
                        }
                    };
                    if !options.quiet {
                        println!(
                            "== {} · {}{} (expected: {})",
                            scenario.name,
                            strategy,
                            if variant.is_empty() {
                                String::new()
                            } else {
                                format!(" · {variant}")
                            },
                            if expected == Expected::Holds {
                                "holds"
                            } else {
                                "breaks"
                            }
                        );
                    }
                    let result =
                        run_case(&mut lab, scenario.name, strategy, variant, expected, why)
                            .await
                            .with_context(|| format!("{} / {strategy} {variant}", scenario.name))?;
                    println!(
                        "{:>20} {:<16} {:<20} {:<12} {}",
                        result.name,
                        result.strategy,
                        result.variant.as_deref().unwrap_or("-"),
                        result.verdict.as_str(),
                        result.verdict_reason
                    );
                    results.push(result);
                }
            }
        }
        anyhow::Ok(())
    }
    .await;
    lab.drop_database().await;
    if outcome.is_ok() {
        let _ = std::fs::remove_dir_all(&lab.dir);
    } else {
        eprintln!(
            "seckill-loadgen: replica logs kept in {}",
            lab.dir.display()
        );
    }
    outcome?;
    Ok(ScenarioReport {
        tool: "seckill-loadgen",
        version: env!("CARGO_PKG_VERSION"),
        quick: options.quick,
        scenarios: results,
        skipped,
        duration_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

/// The strategies a scenario runs: `--strategies`, else its defaults.
fn strategies_of(scenario: &ScenarioInfo, options: &Options) -> Vec<String> {
    if options.strategies.is_empty() {
        scenario
            .strategies
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    } else {
        options.strategies.clone()
    }
}

/// What a case's world consists of; dropped (everything stopped) at its end.
#[derive(Default)]
struct World {
    nodes: Vec<RedisNode>,
    proxies: Vec<Proxy>,
    replicas: Vec<Replica>,
}

impl World {
    fn urls(&self) -> Vec<String> {
        self.replicas
            .iter()
            .filter(|r| r.running())
            .map(Replica::url)
            .collect()
    }

    fn service(&self) -> Service {
        Service::new(self.urls(), TOKEN.into())
    }

    fn replica(&mut self, name: &str) -> anyhow::Result<&mut Replica> {
        self.replicas
            .iter_mut()
            .find(|r| r.name == name)
            .with_context(|| format!("no replica {name}"))
    }
}

async fn start_replicas(
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

/// Reset, switch, faults, new history run.
/// Product 1 reset to 1,000 units, `strategy` on every replica, the
/// faults set (`work_delay_ms`, no pause, no early unlock, plus `more`),
/// and a new history run.
async fn arm(
    service: &Service,
    strategy: &str,
    work_delay_ms: u64,
    more: Value,
) -> anyhow::Result<()> {
    service.reset(1, 1000).await?;
    service.switch(strategy, 1).await?;
    let mut faults =
        json!({ "work_delay_ms": work_delay_ms, "pause_ms": 0, "unlock_before_commit": false });
    if let (Some(all), Some(more)) = (faults.as_object_mut(), more.as_object()) {
        all.extend(more.clone());
    }
    service.set_faults(faults).await?;
    service.history_start().await?;
    Ok(())
}

/// Wait until `who` (an instance, or any when `None`) is inside a critical
/// section, as the arbiter sees it. Polls through `service`.
async fn wait_inside(
    service: &Service,
    who: Option<&str>,
    within: Duration,
) -> anyhow::Result<bool> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let history = service.history().await?;
        let inside = history["inside"].as_array().cloned().unwrap_or_default();
        if inside
            .iter()
            .any(|i| who.is_none_or(|w| i["instance"].as_str() == Some(w)))
        {
            return Ok(true);
        }
        pause(3).await;
    }
    Ok(false)
}

fn duration(lab: &Lab, full_ms: u64) -> u64 {
    if lab.options.quick {
        full_ms * 6 / 10
    } else {
        full_ms
    }
}

async fn run_case(
    lab: &mut Lab,
    scenario: &str,
    strategy: &str,
    variant: &str,
    expected: Expected,
    why: String,
) -> anyhow::Result<CaseResult> {
    let mut case = Case::new(lab.options.quiet);
    let mut world = World::default();
    let faults = match scenario {
        "gc-pause" => gc_pause(lab, &mut world, &mut case, strategy).await?,
        "slow-network" => slow_network(lab, &mut world, &mut case, strategy).await?,
        "clock-jump" => clock_jump(lab, &mut world, &mut case, strategy, variant).await?,
        "redlock-restart" => redlock_restart(lab, &mut world, &mut case, strategy, variant).await?,
        "failover" => failover(lab, &mut world, &mut case, strategy, variant).await?,
        "crash-holder" => crash_holder(lab, &mut world, &mut case, strategy).await?,
        "clock-skew" => clock_skew(lab, &mut world, &mut case, strategy).await?,
        "unlock-before-commit" => {
            unlock_before_commit(lab, &mut world, &mut case, strategy).await?
        }
        "dependency-loss" => dependency_loss(lab, &mut world, &mut case, strategy).await?,
        other => bail!("unknown scenario {other}"),
    };
    let (observed, history) = observe(&world, &case, strategy).await?;
    let (verdict, verdict_reason) = judge(
        scenario,
        guarantee(kind(strategy)),
        expected,
        case.fault_landed,
        &observed,
    );
    Ok(CaseResult {
        name: scenario.to_owned(),
        strategy: strategy.to_owned(),
        variant: (!variant.is_empty()).then(|| variant.to_owned()),
        faults,
        expected,
        why,
        guarantee: guarantee(kind(strategy)),
        observed,
        verdict,
        verdict_reason,
        steps: case.steps,
        first_overlaps: history["first_overlaps"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        duration_s: (case.started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
    })
}

/// Read the audit, the history and the lock metrics after the load; the
/// history as read is returned too (its first overlaps go in the report).
async fn observe(world: &World, case: &Case, strategy: &str) -> anyhow::Result<(Observed, Value)> {
    let service = world.service();
    let audit = service.audit().await?;
    let row = audit
        .products
        .iter()
        .find(|r| r.product_id == 1)
        .cloned()
        .unwrap_or_default();
    let history = service.history().await?;
    let mine = crate::service::strategy_history(&history, strategy).clone();
    let scrape = service.scrape().await?;
    let s = [("strategy", strategy)];
    let waits = scrape.sum("seckill_lock_acquire_duration_seconds_sum", &s);
    let waited = scrape.sum("seckill_lock_acquire_duration_seconds_count", &s);
    let mean_wait_ms = if waited > 0.0 {
        waits / waited * 1000.0
    } else {
        0.0
    };
    let lock_retries = scrape.sum("seckill_lock_retries_total", &s).round() as u64;
    let mut history_errors = 0;
    for base in &service.urls {
        if let Ok(h) = service.history_of(base).await {
            history_errors += h["errors"].as_u64().unwrap_or(0);
        }
    }
    let t = &case.tally;
    let o = Observed {
        overlaps: mine["overlaps"].as_u64().unwrap_or(0),
        max_holders: mine["max_holders"].as_u64().unwrap_or(0),
        oversold: row.oversold,
        lost_updates: row.lost(),
        duplicates: row.duplicates,
        undersold: row.under(),
        rejected: Tally::get(&t.rejected),
        busy: Tally::get(&t.busy),
        orders: row.orders,
        unavailable: Tally::get(&t.unavailable),
        errors: Tally::get(&t.error),
        entries: mine["entries"].as_u64().unwrap_or(0),
        history_errors,
        lock_retries,
        mean_wait_ms: (mean_wait_ms * 100.0).round() / 100.0,
        contended: false,
        recovered_after_ms: case
            .crashed_at
            .and_then(|at| t.first_order_after(at).map(|o| (o - at).as_millis() as u64)),
    };
    let observed = Observed {
        contended: o.lock_retries > 0
            || o.busy > 0
            || o.overlaps > 0
            || o.max_holders > 1
            || o.mean_wait_ms >= 1.0,
        ..o
    };
    Ok((observed, history))
}

/// Two replicas `a` and `b` on one Redis (and three Redlock nodes).
async fn two_replicas(
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

/// `users` closed-loop buyers on every running replica for `ms` (60 % of
/// it with `--quick`), then stopped with every grab answered.
async fn steady_load(lab: &Lab, world: &World, case: &mut Case, users: usize, ms: u64) {
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, users);
    pause(duration(lab, ms)).await;
    load.stop().await;
    case.step("buyers stopped");
}

fn start_buyers(lab: &Lab, case: &Case, targets: &Targets, users: usize) -> Buyers {
    Buyers::start(
        &lab.http,
        targets,
        users,
        Duration::ZERO,
        &case.next_user,
        &case.tally,
    )
}

async fn gc_pause(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
) -> anyhow::Result<Value> {
    // etcd grants leases in whole seconds: its lock lives at least one.
    let ttl = if strategy == "etcd-lease" { 1000 } else { 400 };
    let freeze = ttl * 5 / 2;
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, 40, json!({})).await?;
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
        landed += 1;
        case.step(format!("SIGSTOP replica a while it is inside its critical section, for {freeze} ms (kill -STOP)"));
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
    case.fault_landed = landed > 0;
    case.step("buyers stopped; every grab answered");
    Ok(
        json!({ "sigstop_ms": freeze, "freezes": landed, "replica": "a", "lock_ttl_ms": ttl, "work_delay_ms": 40 }),
    )
}

/// Overlaps of `strategy` in the history so far (0 when it cannot be read).
async fn overlaps_so_far(service: &Service, strategy: &str) -> u64 {
    let Ok(history) = service.history().await else {
        return 0;
    };
    crate::service::strategy_history(&history, strategy)["overlaps"]
        .as_u64()
        .unwrap_or(0)
}

async fn slow_network(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
) -> anyhow::Result<Value> {
    let ttl = 400;
    let delay = ttl * 3 / 2;
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let mut direct_nodes = Vec::new();
    for i in 1..=3 {
        direct_nodes.push(RedisNode::start(&lab.dir, &format!("node{i}"), &[], Vec::new()).await?);
    }
    // Replica a reaches every Redis through a proxy; b directly.
    let mut a_links = Vec::new();
    for node in std::iter::once(&redis).chain(direct_nodes.iter()) {
        a_links.push(Proxy::start(procs::local(node.port)).await?);
    }
    let a_redis = format!("redis://127.0.0.1:{}", a_links[0].port);
    let a_redlock: Vec<String> = a_links[1..]
        .iter()
        .map(|p| format!("redis://127.0.0.1:{}", p.port))
        .collect();
    let b_redis = redis.url();
    let b_redlock: Vec<String> = direct_nodes.iter().map(RedisNode::url).collect();
    world.nodes.push(redis);
    world.nodes.extend(direct_nodes);
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&a_redis, ttl).redlock(a_redlock)),
            ("b", Setup::new(&b_redis, ttl).redlock(b_redlock)),
        ],
    )
    .await?;
    world.proxies.extend(a_links);
    let service = world.service();
    arm(&service, strategy, 300, json!({})).await?;
    // a's buyers press on; b's leave the lock free most of the time, so
    // a's grants — each one late — are not all lost to b.
    let on_a = buyers::targets(vec![world.replica("a")?.url()]);
    let on_b = buyers::targets(vec![world.replica("b")?.url()]);
    let load_a = start_buyers(lab, case, &on_a, 2);
    let load_b = Buyers::start(
        &lab.http,
        &on_b,
        2,
        Duration::from_millis(800),
        &case.next_user,
        &case.tally,
    );
    case.step(format!("replicas a, b up (TTL {ttl} ms, work 300 ms); 2 buyers on a, 2 on b pausing 800 ms between grabs"));
    pause(300).await;
    for proxy in &world.proxies {
        proxy.set_delays(Duration::ZERO, Duration::from_millis(delay));
    }
    case.step(format!("every reply from Redis to replica a now arrives {delay} ms late (its requests are not delayed)"));
    pause(duration(lab, 5000)).await;
    for proxy in &world.proxies {
        proxy.set_delay(Duration::ZERO);
    }
    case.step("links restored");
    load_a.stop().await;
    load_b.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "reply_delay_ms": delay, "replica": "a", "links": "redis and every redlock node", "lock_ttl_ms": ttl }),
    )
}

/// Five Redlock nodes; `a` reaches {1,2,3}, `b` reaches {3,4,5} (the
/// other links cut), so node 3 alone decides which side has a majority.
async fn partitioned_redlock(
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

async fn clock_jump(
    lab: &mut Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
    variant: &str,
) -> anyhow::Result<Value> {
    let ttl = 1500;
    let shift = lab.clockshift()?;
    let offset_file = lab.dir.join("node3.clock");
    procs::set_clock_offset(&offset_file, 0)?;
    partitioned_redlock(lab, world, ttl, &[], shift.env(&offset_file)).await?;
    let service = world.service();
    arm(&service, strategy, 300, json!({})).await?;
    case.step(format!("5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work 300 ms; node 3 runs under clockshift"));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 6);
    pause(400).await;
    let mut offset: i64 = 0;
    let jumps = if variant == "partition" {
        0
    } else if lab.options.quick {
        4
    } else {
        7
    };
    let mut landed = 0;
    for _ in 0..jumps {
        if !wait_inside(&service, None, Duration::from_secs(2)).await? {
            continue;
        }
        offset += i64::try_from(ttl).unwrap_or(0) + 500;
        procs::set_clock_offset(&offset_file, offset)?;
        landed += 1;
        case.step(format!("node 3's wall clock jumps forward to +{offset} ms while a lock is held: its key expires at once"));
        pause(400).await;
    }
    if jumps == 0 {
        pause(duration(lab, 3000)).await;
        case.step("no clock jump (control run)");
    }
    load.stop().await;
    case.fault_landed = jumps == 0 || landed > 0;
    case.step("buyers stopped");
    Ok(
        json!({ "partition": "a: nodes 1,2,3; b: nodes 3,4,5", "clock_jumps": landed, "jump_ms": ttl + 500, "lock_ttl_ms": ttl }),
    )
}

async fn redlock_restart(
    lab: &mut Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
    variant: &str,
) -> anyhow::Result<Value> {
    let ttl = 1500;
    let aof: &[&str] = if variant == "appendfsync-always" {
        &["--appendonly", "yes", "--appendfsync", "always"]
    } else {
        &[]
    };
    partitioned_redlock(lab, world, ttl, aof, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, 300, json!({})).await?;
    case.step(format!("5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work 300 ms{}", if aof.is_empty() { "" } else { "; node 3: appendonly yes, appendfsync always" }));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 6);
    pause(400).await;
    let restarts = if lab.options.quick { 4 } else { 5 };
    let mut landed = 0;
    for _ in 0..restarts {
        if !wait_inside(&service, None, Duration::from_secs(3)).await? {
            continue;
        }
        let node = &mut world.nodes[3];
        node.kill();
        if variant == "delayed-restart" {
            case.step(format!(
                "kill -9 node 3 while a lock is held; restart it after {} ms (> TTL)",
                ttl + 300
            ));
            pause(ttl + 300).await;
        } else {
            case.step("kill -9 node 3 while a lock is held; restart it at once");
        }
        world.nodes[3].restart().await?;
        landed += 1;
        pause(500).await;
    }
    load.stop().await;
    case.fault_landed = landed > 0;
    case.step("buyers stopped");
    Ok(
        json!({ "partition": "a: nodes 1,2,3; b: nodes 3,4,5", "node3_restarts": landed, "restart": variant, "lock_ttl_ms": ttl }),
    )
}

async fn failover(
    lab: &mut Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
    variant: &str,
) -> anyhow::Result<Value> {
    let ttl = 2000;
    let lag = 300;
    let primary = RedisNode::start(
        &lab.dir,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
        Vec::new(),
    )
    .await?;
    let link = Proxy::start(procs::local(primary.port)).await?;
    link.set_delays(Duration::ZERO, Duration::from_millis(lag));
    let replica = RedisNode::start(
        &lab.dir,
        "replica",
        &["--replicaof", "127.0.0.1", &link.port.to_string()],
        Vec::new(),
    )
    .await?;
    let front = Proxy::start(procs::local(primary.port)).await?;
    let front_url = format!("redis://127.0.0.1:{}", front.port);
    let extra = if variant == "wait-1" {
        vec![
            ("SECKILL_REDIS_WAIT_REPLICAS".to_owned(), "1".to_owned()),
            (
                "SECKILL_REDIS_WAIT_TIMEOUT_MS".to_owned(),
                "1000".to_owned(),
            ),
        ]
    } else {
        Vec::new()
    };
    let mut conn = replica.conn().await?;
    let synced = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await?;
        if info.contains("master_link_status:up") {
            break;
        }
        if Instant::now() > synced {
            bail!("the replica never synced with the primary");
        }
        pause(50).await;
    }
    let replica_port = replica.port;
    world.nodes.push(primary);
    world.nodes.push(replica);
    world.proxies.push(link);
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&front_url, ttl).extra(extra.clone())),
            ("b", Setup::new(&front_url, ttl).extra(extra)),
        ],
    )
    .await?;
    let service = world.service();
    arm(&service, strategy, 300, json!({})).await?;
    case.step(format!(
        "primary + replica (replication delayed {lag} ms by a proxy); both app replicas use the primary through a proxy; TTL {ttl} ms, work 300 ms{}",
        if variant == "wait-1" { ", WAIT 1 after each lock write" } else { "" }
    ));
    let targets = buyers::targets(world.urls());
    let warm = start_buyers(lab, case, &targets, 6);
    pause(duration(lab, 1500)).await;
    warm.stop().await;
    pause(lag + 300).await;
    case.step("contended warm-up done; the lock is free and the replica in sync");
    let holder = buyers::grab_once(
        &lab.http,
        &world.replica("a")?.url(),
        &case.next_user,
        &case.tally,
    );
    let caught = wait_inside(&service, Some("a"), Duration::from_secs(3)).await?;
    let key_on_replica: i64 = redis::cmd("EXISTS")
        .arg("lock:product:1")
        .query_async(&mut conn)
        .await?;
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut conn)
        .await?;
    front.retarget(procs::local(replica_port));
    case.step(format!(
        "one grab on a is inside; the replica {} the lock key: promote it (REPLICAOF NO ONE) and point the service's Redis link at it",
        if key_on_replica == 1 { "already has" } else { "does not have yet" }
    ));
    world.proxies.push(front);
    let rush = start_buyers(lab, case, &buyers::retargeted(world.replica("b")?.url()), 6);
    case.step("6 buyers rush replica b");
    let _ = holder.await;
    pause(duration(lab, 1500)).await;
    rush.stop().await;
    case.fault_landed = caught;
    case.step("buyers stopped");
    Ok(
        json!({ "replication_lag_ms": lag, "wait_replicas": if variant == "wait-1" { 1 } else { 0 }, "lock_ttl_ms": ttl }),
    )
}

async fn crash_holder(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
) -> anyhow::Result<Value> {
    let ttl = 800;
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    let gap = if strategy == "setnx-expire" { 1500 } else { 0 };
    arm(
        &service,
        strategy,
        50,
        json!({ "setnx_expire_gap_ms": gap }),
    )
    .await?;
    let a_url = world.replica("a")?.url();
    let b_url = world.replica("b")?.url();
    let targets = buyers::targets(vec![a_url]);
    let load = start_buyers(lab, case, &targets, 3);
    case.step(format!(
        "replicas a, b up (TTL {ttl} ms, work 50 ms); 3 buyers on a only{}",
        if gap > 0 {
            format!("; {gap} ms between SETNX and EXPIRE")
        } else {
            String::new()
        }
    ));
    let watcher = Service::new(vec![b_url.clone()], TOKEN.into());
    let redis_port = world.nodes[0].port;
    let caught = if gap > 0 {
        // Inside the gap there is no section yet: watch the key itself.
        let mut conn = world.nodes[0].conn().await?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = false;
        while Instant::now() < deadline {
            let pttl: i64 = redis::cmd("PTTL")
                .arg("lock:product:1")
                .query_async(&mut conn)
                .await?;
            if pttl == -1 {
                seen = true;
                break;
            }
            pause(2).await;
        }
        seen
    } else {
        wait_inside(&watcher, Some("a"), Duration::from_secs(5)).await?
    };
    world.replica("a")?.kill();
    case.crashed_at = Some(Instant::now());
    case.fault_landed = caught;
    case.step(if gap > 0 {
        "kill -9 replica a between its SETNX and its EXPIRE (the key has no TTL)"
    } else {
        "kill -9 replica a while it holds the lock"
    });
    watcher.forget("a").await?;
    buyers::retarget(&targets, vec![b_url]);
    let window = 2 * ttl + 1500;
    case.step(format!("buyers move to replica b; watching {window} ms for the next order (redis on port {redis_port})"));
    pause(window).await;
    load.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "killed": "a", "lock_ttl_ms": ttl, "setnx_expire_gap_ms": gap, "watched_ms": window }),
    )
}

async fn clock_skew(
    lab: &mut Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
) -> anyhow::Result<Value> {
    let ttl = 1000;
    let skew: i64 = 1500;
    let shift = lab.clockshift()?;
    let file = lab.dir.join("replica-a.clock");
    procs::set_clock_offset(&file, skew)?;
    let env: Vec<(String, String)> = shift.env(&file);
    two_replicas(lab, world, strategy, ttl, env).await?;
    let service = world.service();
    arm(&service, strategy, 60, json!({})).await?;
    case.step(format!("replica a's wall clock runs {skew} ms ahead (clockshift); TTL {ttl} ms, work 60 ms; 8 buyers on both"));
    steady_load(lab, world, case, 8, 3000).await;
    Ok(json!({ "clock_skew_ms": skew, "replica": "a", "lock_ttl_ms": ttl }))
}

async fn unlock_before_commit(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
) -> anyhow::Result<Value> {
    let ttl = 5000;
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    arm(
        &service,
        strategy,
        5,
        json!({ "unlock_before_commit": true }),
    )
    .await?;
    case.step("PUT /admin/faults {\"unlock_before_commit\": true}; 12 buyers on replicas a, b");
    steady_load(lab, world, case, 12, 3000).await;
    service
        .set_faults(json!({ "unlock_before_commit": false }))
        .await?;
    case.step("fault undone");
    Ok(json!({ "unlock_before_commit": true, "work_delay_ms": 5 }))
}

async fn dependency_loss(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: &str,
) -> anyhow::Result<Value> {
    let ttl = 2000;
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    let pg_addr = pg_address(&lab.db_url)?;
    let pg = Proxy::start(pg_addr).await?;
    let mut via_proxy = reqwest::Url::parse(&lab.db_url)?;
    via_proxy
        .set_port(Some(pg.port))
        .map_err(|()| anyhow::anyhow!("cannot set the port of the database URL"))?;
    via_proxy
        .set_host(Some("127.0.0.1"))
        .context("database URL host")?;
    let db = via_proxy.to_string();
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
    arm(&service, strategy, 10, json!({})).await?;
    case.step("replicas a, b up; PostgreSQL reached through a proxy; 8 buyers");
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 8);
    pause(800).await;
    world.nodes[0].kill();
    case.step("kill -9 Redis (no persistence)");
    pause(1000).await;
    world.nodes[0].restart().await?;
    case.step("Redis started again, empty");
    pause(800).await;
    // PostgreSQL first: a holder inside its section feels it. Cut together,
    // a lock server whose client rides out short cuts (ZooKeeper) could
    // hold every buyer in the lock queue for the whole cut, and the pool
    // replaces the dropped connections before anyone notices.
    world.proxies[pg_index].set_cut(true);
    case.step("PostgreSQL cut: connections dropped, new ones refused");
    if also {
        pause(300).await;
        for proxy in &world.proxies[pg_index + 1..] {
            proxy.set_cut(true);
        }
        case.step(format!("{strategy}'s server cut too"));
        pause(700).await;
    } else {
        pause(1000).await;
    }
    for proxy in &world.proxies {
        proxy.set_cut(false);
    }
    case.step("reachable again");
    pause(duration(lab, 1500)).await;
    load.stop().await;
    case.step("buyers stopped");
    Ok(json!({ "redis_down_ms": 1000, "postgres_cut_ms": 1000, "lock_ttl_ms": ttl }))
}

fn pg_address(url: &str) -> anyhow::Result<std::net::SocketAddr> {
    host_port(url, 5432)
}

/// `host:port` of a URL as a socket address (the proxies need an IP).
fn host_port(url: &str, default_port: u16) -> anyhow::Result<std::net::SocketAddr> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("not a URL: {url}"))?;
    let host = match parsed.host_str().unwrap_or("127.0.0.1") {
        "localhost" => "127.0.0.1",
        other => other,
    };
    format!("{host}:{}", parsed.port().unwrap_or(default_port))
        .parse()
        .with_context(|| format!("the host of {url} must be an IP address"))
}
