//! What one scenario run owns for its whole length ([`Lab`]): the
//! `seckill-app` binary, a database of its own (created at the start,
//! dropped at the end or on Ctrl-C), the history arbiter's Redis, the
//! coordination servers (etcd, ZooKeeper) the chosen strategies need, the
//! clock-shifting preload — and what the service says of each strategy.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

use crate::procs::{self, Clockshift, Powerloss, RedisNode, Replica};
use seckill_load::api::{Service, StrategiesBody, StrategyEntry, StrategyName, Variant};

/// Settings of a scenario run (from the command line).
#[derive(Debug, Clone)]
pub struct Options {
    /// Strategies to run instead of each scenario's defaults.
    pub strategies: Vec<StrategyName>,
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
    /// Runs of each case (`--trials`, at least 1): `as-expected` needs all.
    pub trials: u32,
    /// `--set NAME=VALUE`, in order (later wins).
    pub sets: Vec<(String, String)>,
    /// `--sweep NAME=v1,v2,…`: each case at each value.
    pub sweep: Option<(String, Vec<String>)>,
    /// `--variants`: only these variants of each scenario (empty: all).
    pub variants: Vec<Variant>,
    /// `--jobs`: cases run at once, each in a lane of its own (a database,
    /// an arbiter, coordination servers and a folder per lane).
    pub jobs: usize,
    /// `--locate KEY=LO..HI`: bisect one dial instead of running one point.
    pub locate: Option<super::params::Locate>,
}

impl Default for Options {
    /// One lane, one trial, quiet, every strategy and variant of each
    /// scenario at its own dials; no database named yet.
    fn default() -> Self {
        Self {
            strategies: Vec::new(),
            out: PathBuf::new(),
            database_url: String::new(),
            app_bin: None,
            quick: false,
            quiet: true,
            mysql_url: String::new(),
            trials: 1,
            sets: Vec::new(),
            sweep: None,
            variants: Vec::new(),
            jobs: 1,
            locate: None,
        }
    }
}

/// The admin token of every replica a scenario starts.
pub const TOKEN: &str = "seckill-scenario-admin";

/// What one run owns for its whole length.
#[derive(Debug)]
pub struct Lab {
    /// Which lane of the run this is (0: the first; `--jobs` lanes).
    pub lane: usize,
    pub dir: PathBuf,
    pub app_bin: PathBuf,
    pub admin_db: String,
    pub db_url: String,
    /// `pg-2pc`'s stock database (every replica is given it).
    pub stock_db_url: String,
    pub arbiter: RedisNode,
    pub clockshift: Option<Clockshift>,
    pub powerloss: Option<Powerloss>,
    pub http: reqwest::Client,
    pub options: Options,
    pub etcd: Option<procs::Daemon>,
    pub zookeeper: Option<procs::Daemon>,
    /// Every strategy as the service lists it (its kind, its class), once
    /// [`Lab::read_strategies`] has asked.
    pub listed: Option<StrategiesBody>,
    /// The running case's `lock_wait_ms` (every replica's
    /// `SECKILL_LOCK_WAIT_MS`), set before each case starts its world.
    pub lock_wait_ms: u64,
}

impl Lab {
    /// Lane `lane` of the run: its folder, its databases (created now) and
    /// its arbiter.
    pub async fn new(options: &Options, lane: usize) -> anyhow::Result<Self> {
        let app_bin = procs::find_app_binary(options.app_bin.as_deref())?;
        let mut dir =
            std::env::temp_dir().join(format!("seckill-scenarios-{}", std::process::id()));
        if lane > 0 {
            dir.push(format!("lane{lane}"));
        }
        std::fs::create_dir_all(&dir)?;
        let db_name = lane_database_name(lane);
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
            // pg-2pc's stock side: a second database on the same server.
            let stock_name = format!("{db_name}_stock");
            sqlx::query(&format!(
                "DROP DATABASE IF EXISTS {stock_name} WITH (FORCE)"
            ))
            .execute(&mut conn)
            .await?;
            sqlx::query(&format!("CREATE DATABASE {stock_name}"))
                .execute(&mut conn)
                .await?;
        }
        let mut stock_url = db_url.clone();
        stock_url.set_path(&format!("/{db_name}_stock"));
        db_url.set_path(&format!("/{db_name}"));
        let arbiter = RedisNode::start(&dir, "arbiter", &[], Vec::new()).await?;
        Ok(Self {
            lane,
            dir,
            app_bin,
            admin_db,
            db_url: db_url.to_string(),
            stock_db_url: stock_url.to_string(),
            arbiter,
            clockshift: None,
            powerloss: None,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .pool_max_idle_per_host(64)
                .pool_idle_timeout(seckill_load::api::IDLE_BELOW_KEEP_ALIVE)
                .build()?,
            options: options.clone(),
            etcd: None,
            zookeeper: None,
            listed: None,
            lock_wait_ms: 3000,
        })
    }

    /// Ask one replica of this build what each strategy is (`GET
    /// /admin/strategies`): the one source of a strategy's kind.
    pub async fn read_strategies(&mut self) -> anyhow::Result<()> {
        let setup = Setup::new(&self.arbiter.url(), 1000);
        let env = self.env(&setup);
        let replica = Replica::start(&self.app_bin, &self.dir, "probe", env).await?;
        let listed = Service::new(vec![replica.url()], TOKEN.into())
            .strategies()
            .await
            .context("GET /admin/strategies of a replica of this build")?;
        self.listed = Some(listed);
        Ok(())
    }

    /// The service's entry of `strategy`, or an error naming the known ones.
    pub fn strategy(&self, strategy: StrategyName) -> anyhow::Result<&StrategyEntry> {
        let listed = self
            .listed
            .as_ref()
            .context("the strategies were not read yet")?;
        Ok(seckill_load::api::entry(listed, strategy.as_str())?)
    }

    /// Start the coordination servers the chosen strategies need.
    pub async fn start_coordination(&mut self, strategies: &[StrategyName]) -> anyhow::Result<()> {
        if self.etcd.is_none() && strategies.contains(&StrategyName::EtcdLease) {
            self.etcd = Some(procs::Daemon::etcd(&self.dir).await?);
        }
        if self.zookeeper.is_none() && strategies.contains(&StrategyName::ZkEphemeralSeq) {
            self.zookeeper = Some(procs::Daemon::zookeeper(&self.dir).await?);
        }
        Ok(())
    }

    /// Where `strategy`'s coordination server listens, if it has one.
    pub fn coordination_addr(
        &self,
        strategy: StrategyName,
    ) -> anyhow::Result<Option<std::net::SocketAddr>> {
        Ok(match strategy {
            StrategyName::EtcdLease => self.etcd.as_ref().map(|d| procs::local(d.port)),
            StrategyName::ZkEphemeralSeq => self.zookeeper.as_ref().map(|d| procs::local(d.port)),
            StrategyName::MysqlGetLock => Some(host_port(&self.options.mysql_url, 3306)?),
            _ => None,
        })
    }

    /// The replica settings that point `strategy` at its server, at `addr`
    /// (the server itself, or a proxy in front of it).
    pub fn coordination_env(
        &self,
        strategy: StrategyName,
        addr: std::net::SocketAddr,
    ) -> anyhow::Result<Vec<(String, String)>> {
        Ok(match strategy {
            StrategyName::EtcdLease => {
                vec![("SECKILL_ETCD_URLS".into(), format!("http://{addr}"))]
            }
            StrategyName::ZkEphemeralSeq => {
                vec![("SECKILL_ZOOKEEPER_URL".into(), addr.to_string())]
            }
            StrategyName::MysqlGetLock => {
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
    pub fn coordination(&self, strategy: StrategyName) -> anyhow::Result<Vec<(String, String)>> {
        match self.coordination_addr(strategy)? {
            Some(addr) => self.coordination_env(strategy, addr),
            None => Ok(Vec::new()),
        }
    }

    pub fn clockshift(&mut self) -> anyhow::Result<Clockshift> {
        if self.clockshift.is_none() {
            self.clockshift = Some(Clockshift::build(&self.dir)?);
        }
        self.clockshift.clone().context("clockshift")
    }

    /// The power-loss preload, built once per lane.
    pub fn powerloss(&mut self) -> anyhow::Result<Powerloss> {
        if self.powerloss.is_none() {
            self.powerloss = Some(Powerloss::build(&self.dir)?);
        }
        self.powerloss.clone().context("powerloss")
    }

    /// Another lane of the same run, for cases run at once: a database, an
    /// arbiter and a folder of its own; the strategies as this lane read
    /// them and the preloads this lane built (the C compiler runs once,
    /// before any case, not while another lane's case is timing a fault).
    pub async fn lane(&self, lane: usize) -> anyhow::Result<Self> {
        let mut other = Self::new(&self.options, lane).await?;
        other.listed.clone_from(&self.listed);
        other.clockshift.clone_from(&self.clockshift);
        other.powerloss.clone_from(&self.powerloss);
        Ok(other)
    }

    /// A proxy in front of the run's PostgreSQL, and the run database's URL
    /// through it (for a replica whose link to the database a scenario
    /// cuts or delays).
    pub async fn database_proxy(&self) -> anyhow::Result<(seckill_proxy::Proxy, String)> {
        proxy_to(&self.db_url).await
    }

    /// Drop this lane's databases.
    pub async fn drop_database(&self) {
        drop_databases(&self.admin_db, &lane_database_name(self.lane)).await;
    }

    /// The environment of one replica.
    pub fn env(&self, setup: &Setup) -> Vec<(String, String)> {
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
            // POST /admin/freeze: the runner continues what it stops.
            ("SECKILL_SCENARIO_HOOKS".into(), "true".into()),
            ("SECKILL_LOCK_TTL_MS".into(), setup.ttl_ms.to_string()),
            ("SECKILL_LOCK_WAIT_MS".into(), self.lock_wait_ms.to_string()),
            ("SECKILL_SEED_PRODUCTS".into(), "1:100".into()),
            ("SECKILL_CONTROL_REFRESH_MS".into(), "20".into()),
            ("SECKILL_SYNCHRONOUS_COMMIT".into(), "off".into()),
            ("SECKILL_DATABASE_MAX_CONNECTIONS".into(), "12".into()),
            ("SECKILL_DATABASE_ACQUIRE_TIMEOUT_MS".into(), "1000".into()),
            (
                "SECKILL_STOCK_DATABASE_URL".into(),
                self.stock_db_url.clone(),
            ),
        ];
        if !setup.redlock_urls.is_empty() {
            env.push(("SECKILL_REDLOCK_URLS".into(), setup.redlock_urls.join(",")));
        }
        env.extend(setup.extra.iter().cloned());
        env
    }
}

/// The database of lane `lane` of this run (`seckill-loadgen` process);
/// `pg-2pc`'s stock database is the same name with `_stock`.
fn lane_database_name(lane: usize) -> String {
    let run = format!("seckill_scenarios_{}", std::process::id());
    if lane == 0 {
        run
    } else {
        format!("{run}_lane{lane}")
    }
}

/// Drop every database of this run, each lane's (after Ctrl-C).
pub async fn drop_run_database(admin_url: &str) {
    use sqlx::Connection as _;
    let run = lane_database_name(0);
    let names: Vec<String> = match sqlx::PgConnection::connect(admin_url).await {
        Ok(mut conn) => sqlx::query_scalar(
            "SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $1 || '_lane')",
        )
        .bind(&run)
        .fetch_all(&mut conn)
        .await
        .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    for name in names.iter().filter(|n| !n.ends_with("_stock")) {
        drop_databases(admin_url, name).await;
    }
    if names.is_empty() {
        drop_databases(admin_url, &run).await;
    }
}

/// Drop the database `name` and its `_stock` twin, after rolling back any
/// transaction a killed `pg-2pc` coordinator left prepared in them
/// (PostgreSQL refuses to drop a database that has one).
async fn drop_databases(admin_url: &str, name: &str) {
    use sqlx::Connection as _;
    for name in [name.to_owned(), format!("{name}_stock")] {
        if let Ok(url) = reqwest::Url::parse(admin_url).map(|mut url| {
            url.set_path(&format!("/{name}"));
            url.to_string()
        }) {
            roll_back_leftovers(&url).await;
        }
        if let Ok(mut conn) = sqlx::PgConnection::connect(admin_url).await {
            let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            let _ = sqlx::query(&sql).execute(&mut conn).await;
        }
    }
}

/// A proxy in front of the PostgreSQL server of `url`, and the URL that
/// goes through it.
pub async fn proxy_to(url: &str) -> anyhow::Result<(seckill_proxy::Proxy, String)> {
    let proxy = seckill_proxy::Proxy::start(host_port(url, 5432)?).await?;
    let mut via = reqwest::Url::parse(url)?;
    via.set_port(Some(proxy.port))
        .map_err(|()| anyhow::anyhow!("cannot set the port of the database URL"))?;
    via.set_host(Some("127.0.0.1"))
        .context("database URL host")?;
    Ok((proxy, via.to_string()))
}

/// `host:port` of a URL as a socket address (the proxies need an IP).
pub fn host_port(url: &str, default_port: u16) -> anyhow::Result<std::net::SocketAddr> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("not a URL: {url}"))?;
    let host = match parsed.host_str().unwrap_or("127.0.0.1") {
        "localhost" => "127.0.0.1",
        other => other,
    };
    format!("{host}:{}", parsed.port().unwrap_or(default_port))
        .parse()
        .with_context(|| format!("the host of {url} must be an IP address"))
}

/// How one replica of a case is wired.
#[derive(Debug)]
pub struct Setup {
    pub redis_url: String,
    pub redlock_urls: Vec<String>,
    pub database_url: Option<String>,
    pub ttl_ms: u64,
    pub extra: Vec<(String, String)>,
}

impl Setup {
    /// Service Redis at `redis_url`, locks of `ttl_ms`.
    pub fn new(redis_url: &str, ttl_ms: u64) -> Self {
        Self {
            redis_url: redis_url.to_owned(),
            redlock_urls: Vec::new(),
            database_url: None,
            ttl_ms,
            extra: Vec::new(),
        }
    }

    /// Redlock nodes.
    pub fn redlock(mut self, urls: Vec<String>) -> Self {
        self.redlock_urls = urls;
        self
    }

    /// A database URL other than the lab's (a proxy in front of it).
    pub fn database(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_owned());
        self
    }

    /// More environment.
    pub fn extra(mut self, env: Vec<(String, String)>) -> Self {
        self.extra = env;
        self
    }
}

/// Roll back every `pg-2pc` transaction still prepared in the database at
/// `url` (a run that failed mid-case): a database with one cannot be
/// dropped.
pub async fn roll_back_leftovers(url: &str) {
    use sqlx::Connection as _;
    let Ok(mut conn) = sqlx::PgConnection::connect(url).await else {
        return;
    };
    let gids: Vec<String> = sqlx::query_scalar(
        "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND (gid LIKE 'seckill2pc:%' OR gid LIKE 'seckill3pc:%')",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap_or_default();
    for gid in gids {
        let _ = sqlx::query(&format!("ROLLBACK PREPARED '{gid}'"))
            .execute(&mut conn)
            .await;
    }
    let _ = conn.close().await;
}
