//! A local stack — the docker-compose stack's shape from local binaries,
//! for machines without Docker — behind `make demo`, `make check-panels`
//! and `make fuzz-api`: PostgreSQL (the checkout's own cluster, or
//! `SECKILL_DATABASE_URL`), Redis, five Redlock nodes, etcd, ZooKeeper,
//! MariaDB (or `SECKILL_MYSQL_URL`), the replicas, nginx in front of them
//! when installed, the console, and Prometheus on demand.
//!
//! Every server starts through `seckill-launch` on the command line of
//! `seckill_launch::servers` (the one the tests and scenarios use), as the
//! leader of a process group that outlives this program (`detach`); its
//! pid, port and log live in the state folder ([`state`]), so `stop`
//! signals exactly the groups we started (a recycled pid is left alone).

pub mod config;
pub mod postgres;
pub mod state;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use seckill_launch::{servers, Launch, Ready};
use serde::{Deserialize, Serialize};

pub use state::StateDir;

/// The documented token of a local demo (loopback only).
pub const DEMO_TOKEN: &str = "seckill-demo-admin";

/// What a stack is made of, and where its binaries are.
#[derive(Debug, Clone)]
pub struct Stack {
    pub root: PathBuf,
    pub state: StateDir,
    pub replicas: usize,
    /// nginx in front of the replicas (when installed).
    pub lb: bool,
    /// The console over the replicas.
    pub console: bool,
    /// The address the balancer, the console and Prometheus listen on
    /// (the lab image: 0.0.0.0, so that a published port reaches them).
    pub bind: String,
    pub token: String,
    pub bin_dir: PathBuf,
    /// `NAME=value` settings every replica gets (before its own
    /// `app-<i>.settings`).
    pub settings: Vec<String>,
}

/// How the replicas reach their servers, kept in `wiring.json` for a
/// restart of the replicas alone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Wiring {
    pub database_url: String,
    pub stock_database_url: String,
    pub redis_url: String,
    pub redlock_urls: Vec<String>,
    pub etcd_url: String,
    pub zookeeper_url: String,
    pub mysql_url: String,
}

/// The Redis servers of a stack: the lock store and five Redlock nodes.
pub const REDIS_NAMES: [&str; 6] = [
    "redis",
    "redlock-1",
    "redlock-2",
    "redlock-3",
    "redlock-4",
    "redlock-5",
];

impl Stack {
    /// A stack in `dir` (relative to the checkout), read from the
    /// environment: `SECKILL_ADMIN_TOKEN`, `SECKILL_BIN_DIR`
    /// (target/release), `STACK_BIND` (127.0.0.1).
    pub fn new(dir: &Path, replicas: usize) -> anyhow::Result<Self> {
        let root = std::env::current_dir().context("the current folder")?;
        let bin_dir = std::env::var("SECKILL_BIN_DIR").unwrap_or_else(|_| "target/release".into());
        Ok(Self {
            state: StateDir::new(root.join(dir))?,
            bin_dir: root.join(bin_dir),
            root,
            replicas,
            lb: true,
            console: true,
            bind: std::env::var("STACK_BIND").unwrap_or_else(|_| "127.0.0.1".into()),
            token: std::env::var("SECKILL_ADMIN_TOKEN").unwrap_or_else(|_| DEMO_TOKEN.into()),
            settings: Vec::new(),
        })
    }

    pub fn app_bin(&self) -> PathBuf {
        self.bin_dir.join("seckill-app")
    }

    pub fn loadgen_bin(&self) -> PathBuf {
        self.bin_dir.join("seckill-loadgen")
    }

    /// `seckill-loadgen compare` over the replicas with the admin token,
    /// for the caller's other flags.
    pub fn compare(&self, strategies: &str) -> std::process::Command {
        let mut command = std::process::Command::new(self.loadgen_bin());
        command
            .args(["compare", "--url", &self.replica_urls().join(",")])
            .args(["--strategies", strategies])
            .env("SECKILL_ADMIN_TOKEN", &self.token);
        command
    }

    /// The binaries: kept with `SECKILL_SKIP_BUILD=1` or `SECKILL_BIN_DIR`
    /// (they must exist), else a release build.
    pub fn build(&self) -> anyhow::Result<()> {
        let have = self.app_bin().is_file() && self.loadgen_bin().is_file();
        let skip = std::env::var("SECKILL_SKIP_BUILD").is_ok_and(|v| v == "1");
        if std::env::var_os("SECKILL_BIN_DIR").is_some() || (skip && have) {
            if !have {
                bail!(
                    "{} holds no seckill-app and seckill-loadgen",
                    self.bin_dir.display()
                );
            }
            crate::util::say(&format!(
                "binaries of {} (SECKILL_BIN_DIR): no release build",
                self.bin_dir.display()
            ));
            return Ok(());
        }
        if !have {
            crate::util::say("first release build: several minutes");
        }
        let started = std::time::Instant::now();
        let status = std::process::Command::new("cargo")
            .args([
                "build",
                "--release",
                "--locked",
                "-p",
                "seckill-app",
                "-p",
                "seckill-loadgen",
            ])
            .current_dir(&self.root)
            .status()
            .context("run cargo (install Rust from https://rustup.rs)")?;
        if !status.success() {
            bail!("the release build failed");
        }
        crate::util::say(&format!("release build: {} s", started.elapsed().as_secs()));
        Ok(())
    }

    fn replica_names(&self) -> Vec<String> {
        (1..=self.replicas).map(|i| format!("app-{i}")).collect()
    }

    /// The replicas' URLs, in order.
    pub fn replica_urls(&self) -> Vec<String> {
        self.replica_names()
            .iter()
            .filter_map(|n| self.state.url(n))
            .collect()
    }

    /// Every replica runs and answers ready.
    pub fn healthy(&self) -> bool {
        self.replica_names().iter().all(|name| {
            self.state.alive(name, "seckill-app").is_some()
                && self
                    .state
                    .port(name)
                    .is_some_and(|p| Ready::http(p, "/health/ready").probe_once())
        })
    }

    /// Start every server, then the replicas (the first applies the
    /// migrations and seeds; the others follow), the balancer and the
    /// console. What ran before under these names is stopped first.
    pub async fn up(&self) -> anyhow::Result<Wiring> {
        if !self.app_bin().is_file() {
            bail!(
                "{} is missing: cargo build --release -p seckill-app -p seckill-loadgen",
                self.app_bin().display()
            );
        }
        self.stop_front();
        let (database_url, stock_database_url) = self.databases().await?;
        let mut urls = Vec::new();
        for name in REDIS_NAMES {
            let port = self.state.claim(name, "redis-server")?;
            let dir = self.state.sub(name)?;
            self.state
                .start(name, servers::redis(port, &dir), &Ready::redis(port))?;
            urls.push(format!("redis://127.0.0.1:{port}"));
        }
        let redis_url = urls.remove(0);
        crate::util::say(&format!(
            "Redis: lock store {redis_url}, five Redlock nodes {}",
            urls.join(" ")
        ));
        let wiring = Wiring {
            database_url,
            stock_database_url,
            redis_url,
            redlock_urls: urls,
            etcd_url: self.etcd()?,
            zookeeper_url: self.zookeeper()?,
            mysql_url: self.mariadb()?,
        };
        crate::util::say(&format!(
            "etcd {}, ZooKeeper {}, MariaDB {}",
            wiring.etcd_url, wiring.zookeeper_url, wiring.mysql_url
        ));
        let file = self.state.path.join("wiring.json");
        std::fs::write(&file, serde_json::to_string_pretty(&wiring)?)
            .with_context(|| format!("write {}", file.display()))?;
        self.start_replicas(&wiring, &(1..=self.replicas).collect::<Vec<_>>())?;
        crate::util::say(&format!("replicas: {}", self.replica_urls().join(" ")));
        if self.lb {
            self.balancer()?;
        }
        if self.console {
            self.start_console(&wiring)?;
        }
        Ok(wiring)
    }

    /// The stack's database and pg-2pc's stock database: on
    /// `SECKILL_DATABASE_URL` when set (they must exist), else in the
    /// checkout's cluster: `seckill` for the demo, `seckill_<folder>` for
    /// another stack (made fresh).
    async fn databases(&self) -> anyhow::Result<(String, String)> {
        if let Ok(url) = std::env::var("SECKILL_DATABASE_URL") {
            crate::util::say("PostgreSQL: SECKILL_DATABASE_URL; the database must exist");
            return Ok((
                url,
                std::env::var("SECKILL_STOCK_DATABASE_URL").unwrap_or_default(),
            ));
        }
        let admin = postgres::up(&self.root).await?;
        let demo = self.state.path == self.root.join(".demo");
        let name = if demo {
            "seckill".to_owned()
        } else {
            let folder = self
                .state
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let clean: String = folder
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("seckill_{clean}")
        };
        Ok((
            postgres::database(&admin, &name, !demo).await?,
            postgres::database(&admin, &format!("{name}_stock"), !demo).await?,
        ))
    }

    fn etcd(&self) -> anyhow::Result<String> {
        let (port, peer) = (
            self.state.claim("etcd", "etcd")?,
            self.state.pick_port("etcd-peer")?,
        );
        let dir = self.state.sub("etcd")?;
        self.state.start(
            "etcd",
            servers::etcd(port, peer, &dir),
            &Ready::http(port, "/health"),
        )?;
        Ok(format!("http://127.0.0.1:{port}"))
    }

    fn zookeeper(&self) -> anyhow::Result<String> {
        let port = self.state.claim("zookeeper", "java")?;
        let dir = self.state.sub("zookeeper")?;
        self.state.start(
            "zookeeper",
            servers::zookeeper(port, &dir)?,
            &Ready::zookeeper(port),
        )?;
        Ok(format!("127.0.0.1:{port}"))
    }

    /// A private MariaDB under `mariadb/` (root without a password,
    /// loopback only), unless `SECKILL_MYSQL_URL` names one.
    fn mariadb(&self) -> anyhow::Result<String> {
        if let Ok(url) = std::env::var("SECKILL_MYSQL_URL") {
            return Ok(url);
        }
        let port = self.state.claim("mariadb", "mariadbd")?;
        let dir = self.state.sub("mariadb")?;
        let me = nix::unistd::User::from_uid(nix::unistd::geteuid())?;
        let user = me.map_or_else(|| "root".to_owned(), |u| u.name);
        if !dir.join("data/mysql").is_dir() {
            let status = servers::mariadb_install(&dir, &user).spawn()?.wait();
            if !status.success() {
                bail!(
                    "mariadb-install-db failed (log {})",
                    dir.join("install.log").display()
                );
            }
        }
        let create = Ready::when(
            "CREATE DATABASE seckill through the mariadb client",
            move || {
                std::process::Command::new("mariadb")
                    .args([
                        "--connect-timeout=2",
                        "-h",
                        "127.0.0.1",
                        "-P",
                        &port.to_string(),
                        "-u",
                        "root",
                    ])
                    .args(["-e", "CREATE DATABASE IF NOT EXISTS seckill"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            },
        )
        .within(std::time::Duration::from_secs(30))
        .every(std::time::Duration::from_millis(200));
        self.state
            .start("mariadb", servers::mariadb(port, &dir, &user), &create)?;
        Ok(format!("mysql://root@127.0.0.1:{port}/seckill"))
    }

    /// Start (again) replicas `which` (1-based) with `wiring`, each with
    /// the stack's settings, then its own `app-<i>.settings` (one
    /// `NAME=value` a line), and wait until each is ready.
    pub fn start_replicas(&self, wiring: &Wiring, which: &[usize]) -> anyhow::Result<()> {
        for &i in which {
            let name = format!("app-{i}");
            let port = self.state.claim(&name, "seckill-app")?;
            let own =
                std::fs::read_to_string(self.state.file(&name, "settings")).unwrap_or_default();
            let settings = self
                .settings
                .iter()
                .map(String::as_str)
                .chain(own.lines().filter(|l| !l.trim().is_empty()));
            let launch = servers::seckill_app(&self.app_bin(), port)
                .envs(self.replica_env(wiring))
                .envs(settings.filter_map(|s| s.split_once('=')))
                .log(self.state.file(&name, "log"));
            // Not started in parallel: the first migrates and seeds.
            self.state
                .start(
                    &name,
                    launch,
                    &Ready::http(port, "/health/ready").within(std::time::Duration::from_secs(60)),
                )
                .with_context(|| {
                    format!(
                        "{name} did not become ready (log {})",
                        self.state.file(&name, "log").display()
                    )
                })?;
        }
        Ok(())
    }

    fn replica_env(&self, w: &Wiring) -> Vec<(&'static str, String)> {
        vec![
            ("SECKILL_DATABASE_URL", w.database_url.clone()),
            ("SECKILL_STOCK_DATABASE_URL", w.stock_database_url.clone()),
            ("SECKILL_REDIS_URL", w.redis_url.clone()),
            ("SECKILL_REDLOCK_URLS", w.redlock_urls.join(",")),
            ("SECKILL_ETCD_URLS", w.etcd_url.clone()),
            ("SECKILL_ZOOKEEPER_URL", w.zookeeper_url.clone()),
            ("SECKILL_MYSQL_URL", w.mysql_url.clone()),
            ("SECKILL_ADMIN_TOKEN", self.token.clone()),
            ("SECKILL_LOG_FORMAT", "text".into()),
            (
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info,sqlx=warn".into()),
            ),
        ]
    }

    /// The wiring `up` kept, for a restart of replicas alone.
    pub fn wiring(&self) -> anyhow::Result<Wiring> {
        let file = self.state.path.join("wiring.json");
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "no stack in {}: run make demo first",
                self.state.path.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("read {}", file.display()))
    }

    /// nginx over the replicas, from docker/nginx.conf; a stack without
    /// nginx goes on without a balancer.
    fn balancer(&self) -> anyhow::Result<()> {
        let Some(nginx) = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .iter()
            .map(Path::new)
            .find(|p| p.is_file())
        else {
            crate::util::say("nginx not installed: no load balancer (optional: apt-get install -y nginx-light); the replicas' URLs are enough");
            return Ok(());
        };
        let port = self.state.claim("lb", "nginx")?;
        let prefix = self.state.sub("nginx")?;
        let ports: Vec<u16> = self
            .replica_names()
            .iter()
            .filter_map(|n| self.state.port(n))
            .collect();
        let conf = prefix.join("nginx.conf");
        std::fs::write(&conf, config::nginx(&ports, &self.bind, port, &prefix)?)?;
        let launch = servers::nginx(nginx, &prefix, &conf, &self.state.file("lb", "log"));
        if let Err(e) = self.state.start(
            "lb",
            launch,
            &Ready::http(port, "/lb-health").within(std::time::Duration::from_secs(10)),
        ) {
            crate::util::say(&format!(
                "nginx did not start ({e:#}): going on without a load balancer"
            ));
        }
        Ok(())
    }

    /// The workshop's control room over the replicas, on 8089 (Locust's
    /// port) when free. Scenarios started from its page use this stack's
    /// binaries, PostgreSQL and MariaDB; their reports go to
    /// loadgen-report/console/.
    fn start_console(&self, w: &Wiring) -> anyhow::Result<()> {
        if self.state.port("console").is_none() {
            std::fs::write(self.state.file("console", "port"), "8089\n")?;
        }
        let port = self.state.claim("console", "seckill-loadgen")?;
        let launch = Launch::new("console", self.loadgen_bin())
            .args([
                "console",
                "--url",
                &self.replica_urls().join(","),
                "--bind",
                &self.bind,
            ])
            .args(["--port", &port.to_string(), "--app-bin"])
            .arg(self.app_bin())
            .arg("--scenario-out")
            .arg(self.root.join("loadgen-report/console"))
            .env("SECKILL_ADMIN_TOKEN", &self.token)
            .env("SECKILL_DATABASE_URL", &w.database_url)
            .env("SECKILL_MYSQL_URL", &w.mysql_url)
            .log(self.state.file("console", "log"));
        // Ready once it serves a file that needs no login (beyond loopback,
        // as in the lab container, /api/state asks for the token): it
        // serves only after every replica answered its start-up check.
        self.state.start(
            "console",
            launch,
            &Ready::http(port, "/assets/uPlot.min.css"),
        )?;
        crate::util::say(&format!(
            "console: http://127.0.0.1:{port}/ (the workshop's control room over {})",
            self.replica_urls().join(" ")
        ));
        Ok(())
    }

    /// Prometheus `name` scraping the replicas every `interval`, with
    /// prometheus/alerts.yml loaded, checked by promtool first. Returns its URL.
    pub fn prometheus(&self, name: &str, interval: &str) -> anyhow::Result<String> {
        let port = self.state.claim(name, "prometheus")?;
        let ports: Vec<u16> = self
            .replica_names()
            .iter()
            .filter_map(|n| self.state.port(n))
            .collect();
        let dir = self.state.sub(name)?;
        let conf = dir.join("prometheus.yml");
        std::fs::write(dir.join("alerts.yml"), config::ALERTS)?;
        std::fs::write(&conf, config::prometheus(&ports, port, interval)?)?;
        let check = std::process::Command::new("promtool")
            .args(["check", "config"])
            .arg(&conf)
            .output()
            .context("run promtool (apt-get install -y prometheus)")?;
        if !check.status.success() {
            bail!(
                "promtool rejects {}: {}",
                conf.display(),
                String::from_utf8_lossy(&check.stdout)
            );
        }
        let launch = servers::prometheus(
            &conf,
            &dir.join("data"),
            &self.bind,
            port,
            &self.state.file(name, "log"),
        );
        self.state
            .start(name, launch, &Ready::http(port, "/-/ready"))?;
        Ok(format!("http://127.0.0.1:{port}"))
    }

    /// Stop the replicas, the balancer, the console and every Prometheus
    /// (Redis and the other servers are left alone).
    pub fn stop_front(&self) -> Vec<String> {
        let mut which: Vec<(String, &str)> = vec![
            ("console".into(), "seckill-loadgen"),
            ("lb".into(), "nginx"),
        ];
        which.extend(
            self.state
                .names("prometheus")
                .into_iter()
                .map(|n| (n, "prometheus")),
        );
        which.extend(
            self.state
                .names("app-")
                .into_iter()
                .map(|n| (n, "seckill-app")),
        );
        let refs: Vec<(&str, &str)> = which.iter().map(|(n, p)| (n.as_str(), *p)).collect();
        self.state.stop(&refs)
    }

    /// Stop everything the state folder's pid files name, and the
    /// checkout's PostgreSQL cluster when nobody else uses it.
    pub async fn down(&self) -> anyhow::Result<()> {
        let mut stopped = self.stop_front();
        let mut which: Vec<(&str, &str)> =
            REDIS_NAMES.iter().map(|n| (*n, "redis-server")).collect();
        which.extend([
            ("etcd", "etcd"),
            ("zookeeper", "java"),
            ("mariadb", "mariadbd"),
        ]);
        stopped.extend(self.state.stop(&which));
        if !stopped.is_empty() {
            crate::util::say(&format!("stopped {}", stopped.join(", ")));
        }
        if std::env::var_os("SECKILL_DATABASE_URL").is_none() {
            postgres::down(&self.root).await?;
        }
        Ok(())
    }
}

/// `seckill-lab stack up|down --dir D`: a stack without balancer or
/// console (`make fuzz-api`'s one replica).
pub fn command(
    action: &str,
    dir: &Path,
    replicas: usize,
    settings: Vec<String>,
) -> anyhow::Result<()> {
    let mut stack = Stack::new(dir, replicas)?;
    stack.lb = false;
    stack.console = false;
    stack.settings = settings;
    let runtime = crate::util::runtime()?;
    if action == "down" {
        return runtime.block_on(stack.down());
    }
    stack.build()?;
    runtime.block_on(stack.up())?;
    Ok(())
}

/// `seckill-lab own-postgres`: see [`postgres::up`].
pub fn own_postgres() -> anyhow::Result<()> {
    let root = std::env::current_dir()?;
    let runtime = crate::util::runtime()?;
    let url = runtime.block_on(postgres::up(&root))?;
    println!("{url}");
    Ok(())
}
