//! The processes a scenario owns: `redis-server`s and `seckill-app`
//! replicas on free loopback ports, started from the installed/built
//! binaries, frozen (`SIGSTOP`/`SIGCONT`), killed (`SIGKILL`) and restarted
//! on purpose — and always stopped when the scenario ends, fails or is
//! interrupted (every handle kills its process on drop).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};
use tokio::time::{sleep, Instant};

/// A free TCP port on 127.0.0.1 (bound once, then released).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("bind a free port")?;
    Ok(listener.local_addr()?.port())
}

/// `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Send `signal` (`STOP`, `CONT`, `KILL`) to `pid` through kill(1).
pub fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .context("run kill(1)")?;
    if !status.success() {
        bail!("kill -{signal} {pid} failed");
    }
    Ok(())
}

/// The clock-shifting preload (`clockshift.c`), built once per run with
/// the machine's C compiler, or the one `SECKILL_CLOCKSHIFT_LIB` names
/// (the lab image ships it prebuilt and carries no compiler).
#[derive(Debug, Clone)]
pub struct Clockshift {
    library: PathBuf,
}

impl Clockshift {
    /// Compile `clockshift.c` into `dir`, unless `SECKILL_CLOCKSHIFT_LIB`
    /// names a built one.
    pub fn build(dir: &Path) -> anyhow::Result<Self> {
        if let Some(library) = std::env::var_os("SECKILL_CLOCKSHIFT_LIB") {
            let library = PathBuf::from(library);
            if !library.is_file() {
                bail!(
                    "SECKILL_CLOCKSHIFT_LIB names {}, which is not a file",
                    library.display()
                );
            }
            return Ok(Self { library });
        }
        let source = dir.join("clockshift.c");
        std::fs::write(&source, include_str!("../clockshift/clockshift.c"))?;
        let library = dir.join("clockshift.so");
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&library)
            .arg(&source)
            .status()
            .context("run cc (the clock scenarios build a small preload library; install gcc)")?;
        if !status.success() {
            bail!("cc could not build {}", source.display());
        }
        Ok(Self { library })
    }

    /// Environment that makes a process read its clock offset from `file`.
    pub fn env(&self, file: &Path) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            ("CLOCKSHIFT_FILE".into(), file.display().to_string()),
        ]
    }
}

/// Write a clock offset (milliseconds) for a process started with [`Clockshift::env`].
pub fn set_clock_offset(file: &Path, offset_ms: i64) -> anyhow::Result<()> {
    std::fs::write(file, format!("{offset_ms:+}\n")).context("write clock offset")
}

/// A `redis-server` this run started.
#[derive(Debug)]
pub struct RedisNode {
    /// Name in logs and reports.
    pub name: String,
    /// Its port.
    pub port: u16,
    args: Vec<String>,
    env: Vec<(String, String)>,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisNode {
    /// Start `redis-server` on a free port, without persistence unless
    /// `args` say otherwise, with its files in `dir/name`.
    pub async fn start(
        dir: &Path,
        name: &str,
        args: &[&str],
        env: Vec<(String, String)>,
    ) -> anyhow::Result<Self> {
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir)?;
        let mut node = Self {
            name: name.to_owned(),
            port: free_port()?,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env,
            dir,
            child: None,
        };
        node.spawn().await?;
        Ok(node)
    }

    /// `redis://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log"])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command
            .spawn()
            .context("start redis-server (Debian package redis-server)")?;
        self.child = Some(child);
        wait_for_redis(&self.url(), Duration::from_secs(5))
            .await
            .with_context(|| format!("redis node {} did not start", self.name))
    }

    /// `kill -9`: no shutdown, no save — a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start again on the same port (after [`RedisNode::kill`]).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.spawn().await
    }

    /// A connection for commands the scenario sends itself.
    pub async fn conn(&self) -> anyhow::Result<redis::aio::MultiplexedConnection> {
        Ok(redis::Client::open(self.url())?
            .get_multiplexed_async_connection()
            .await?)
    }
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn wait_for_redis(url: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    let client = redis::Client::open(url)?;
    loop {
        let ping = async {
            let mut conn = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async::<String>(&mut conn).await
        };
        match tokio::time::timeout(Duration::from_millis(500), ping).await {
            Ok(Ok(_)) => return Ok(()),
            _ if Instant::now() > deadline => bail!("no PONG from {url}"),
            _ => sleep(Duration::from_millis(20)).await,
        }
    }
}

/// A `seckill-app` replica this run started.
#[derive(Debug)]
pub struct Replica {
    /// Instance id (`SECKILL_INSTANCE_ID`), e.g. `a`.
    pub name: String,
    /// HTTP port.
    pub port: u16,
    env: Vec<(String, String)>,
    binary: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    frozen: bool,
}

impl Replica {
    /// Start `binary` with `env` (plus its listen address and instance id)
    /// and wait until it answers `/health/live`.
    pub async fn start(
        binary: &Path,
        dir: &Path,
        name: &str,
        env: Vec<(String, String)>,
    ) -> anyhow::Result<Self> {
        let mut replica = Self {
            name: name.to_owned(),
            port: free_port()?,
            env,
            binary: binary.to_owned(),
            log: dir.join(format!("replica-{name}.log")),
            child: None,
            frozen: false,
        };
        replica.spawn().await?;
        Ok(replica)
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(&self.binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .env("SECKILL_LISTEN", format!("127.0.0.1:{}", self.port))
            .env("SECKILL_INSTANCE_ID", &self.name)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", self.binary.display()))?;
        self.child = Some(child);
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let live = http
                .get(format!("{}/health/live", self.url()))
                .timeout(Duration::from_millis(500))
                .send()
                .await;
            if matches!(&live, Ok(r) if r.status().is_success()) {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    bail!(
                        "replica {} exited at start ({status}); see {}",
                        self.name,
                        self.log.display()
                    );
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "replica {} not live after 30 s; see {}",
                    self.name,
                    self.log.display()
                );
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    fn pid(&self) -> anyhow::Result<u32> {
        self.child
            .as_ref()
            .map(Child::id)
            .context("replica is not running")
    }

    /// `SIGSTOP`: every thread stops — request handlers, lease renewals,
    /// validity timers — as in a stop-the-world GC or a frozen VM.
    pub fn freeze(&mut self) -> anyhow::Result<()> {
        signal(self.pid()?, "STOP")?;
        self.frozen = true;
        Ok(())
    }

    /// `SIGCONT`: it carries on where it stopped, unaware of the gap.
    pub fn thaw(&mut self) -> anyhow::Result<()> {
        if self.frozen {
            signal(self.pid()?, "CONT")?;
            self.frozen = false;
        }
        Ok(())
    }

    /// `kill -9` mid-whatever: no release, no rollback from the process
    /// (PostgreSQL rolls back its open transaction when the socket closes).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.frozen = false;
    }

    /// Whether it is running (not killed).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `seckill-app` binary: `--app-bin`, else beside this executable
/// (`target/{debug,release}/`), else on `PATH`.
pub fn find_app_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        if path.is_file() {
            return Ok(path.to_owned());
        }
        bail!("--app-bin {} does not exist", path.display());
    }
    if let Ok(me) = std::env::current_exe() {
        if let Some(dir) = me.parent() {
            for candidate in [dir.join("seckill-app"), dir.join("../seckill-app")] {
                if candidate.is_file() {
                    return Ok(candidate);
                }
            }
        }
    }
    let found = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("seckill-app"))
                .find(|p| p.is_file())
        })
        .unwrap_or_default();
    found.context(
        "cannot find the seckill-app binary: build it (`cargo build -p seckill-app`) or pass --app-bin",
    )
}

/// A coordination server this run started (etcd, ZooKeeper), killed on drop.
#[derive(Debug)]
pub struct Daemon {
    /// Name in reports.
    pub name: String,
    /// Client port.
    pub port: u16,
    child: Child,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// A single-node etcd (Debian's `etcd-server`) on free ports, with
    /// short heartbeats so leases may be as short as one second.
    pub async fn etcd(dir: &Path) -> anyhow::Result<Self> {
        let dir = dir.join("etcd");
        std::fs::create_dir_all(&dir)?;
        let port = free_port()?;
        let client = format!("http://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{}", free_port()?);
        let child = Command::new("etcd")
            .args(["--name", "scenario", "--data-dir"])
            .arg(dir.join("data"))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("scenario={peer}")])
            .args(["--heartbeat-interval", "20", "--election-timeout", "200"])
            .args(["--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("etcd.log"))?)
            .spawn()
            .context("start etcd (Debian package etcd-server)")?;
        let daemon = Self {
            name: "etcd".into(),
            port,
            child,
        };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let health = http
                .get(format!("{client}/health"))
                .timeout(Duration::from_millis(500))
                .send()
                .await;
            if matches!(&health, Ok(r) if r.status().is_success()) {
                return Ok(daemon);
            }
            if Instant::now() > deadline {
                bail!("etcd not healthy after 30 s; see {}", dir.display());
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    /// A standalone ZooKeeper (Debian's `zookeeper`) on a free port, tick
    /// 100 ms so sessions may be as short as 200 ms.
    pub async fn zookeeper(dir: &Path) -> anyhow::Result<Self> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = dir.join("zookeeper");
        std::fs::create_dir_all(&dir)?;
        let port = free_port()?;
        let config = format!(
            "tickTime=100\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             minSessionTimeout=200\nmaxSessionTimeout=60000\nadmin.enableServer=false\n\
             4lw.commands.whitelist=srvr\n",
            dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), config)?;
        let child = Command::new("java")
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .args([
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                "/usr/share/java/zookeeper.jar",
            ])
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(dir.join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("zk.log"))?)
            .spawn()
            .context("start ZooKeeper (Debian packages zookeeper, default-jre-headless)")?;
        let daemon = Self {
            name: "zookeeper".into(),
            port,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let srvr = async {
                let mut stream = tokio::net::TcpStream::connect(local(port)).await?;
                stream.write_all(b"srvr").await?;
                let mut answer = String::new();
                stream.read_to_string(&mut answer).await?;
                std::io::Result::Ok(answer)
            };
            if let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(2), srvr).await {
                if answer.contains("Mode:") {
                    return Ok(daemon);
                }
            }
            if Instant::now() > deadline {
                bail!("ZooKeeper not serving after 60 s; see {}", dir.display());
            }
            sleep(Duration::from_millis(100)).await;
        }
    }
}
