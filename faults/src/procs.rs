//! The processes a scenario owns: `redis-server`s, `seckill-app`
//! replicas, an etcd and a ZooKeeper on free loopback ports, started from
//! the installed/built binaries, frozen (`SIGSTOP`/`SIGCONT`), killed
//! (`SIGKILL`) and restarted on purpose — and always stopped when the
//! scenario ends, fails or is interrupted (every handle kills its process
//! group on drop).
//!
//! Starting, readiness, signals and the port race are `seckill-launch`'s
//! (its async waits, so the runtime keeps serving a scenario's load while a
//! node restarts); what stays here is what a scenario names: which server,
//! with which flags, under which name in its report.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};
use seckill_launch::{servers, start_on_free_ports_async, Ready, Service};

/// A free TCP port on 127.0.0.1 (bound once, then released).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(seckill_launch::free_port()?)
}

/// `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    seckill_launch::local(port)
}

/// Send `signal` (`STOP`, `CONT`, `KILL`, as `kill(1)` names them) to `pid`.
pub fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    Ok(seckill_launch::send_signal(pid, signal)?)
}

/// A preload library built with the machine's C compiler, or the one an
/// environment variable names (the lab image ships them prebuilt and
/// carries no compiler).
fn build_preload(
    dir: &Path,
    stem: &str,
    source_text: &str,
    prebuilt_var: &str,
) -> anyhow::Result<PathBuf> {
    if let Some(library) = std::env::var_os(prebuilt_var) {
        let library = PathBuf::from(library);
        if !library.is_file() {
            bail!(
                "{prebuilt_var} names {}, which is not a file",
                library.display()
            );
        }
        return Ok(library);
    }
    let source = dir.join(format!("{stem}.c"));
    std::fs::write(&source, source_text)?;
    let library = dir.join(format!("{stem}.so"));
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .context(
            "run cc (the clock and crash scenarios build small preload libraries; install gcc)",
        )?;
    if !status.success() {
        bail!("cc could not build {}", source.display());
    }
    Ok(library)
}

/// The clock-shifting preload (`clockshift.c`), built once per run, or the
/// one `SECKILL_CLOCKSHIFT_LIB` names.
#[derive(Debug, Clone)]
pub struct Clockshift {
    library: PathBuf,
}

impl Clockshift {
    /// Compile `clockshift.c` into `dir`, unless `SECKILL_CLOCKSHIFT_LIB`
    /// names a built one.
    pub fn build(dir: &Path) -> anyhow::Result<Self> {
        let library = build_preload(
            dir,
            "clockshift",
            include_str!("../clockshift/clockshift.c"),
            "SECKILL_CLOCKSHIFT_LIB",
        )?;
        Ok(Self { library })
    }

    /// Environment that makes a process read its clock offset from `file`.
    pub fn env(&self, file: &Path) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            ("CLOCKSHIFT_FILE".into(), file.display().to_string()),
        ]
    }

    /// Environment that makes a process's monotonic clocks run at
    /// 1 + `ppm` / 10^6 of real time (negative: slow); its wall clock is
    /// left alone.
    pub fn rate_env(&self, ppm: i64) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            ("CLOCKSHIFT_RATE_PPM".into(), ppm.to_string()),
        ]
    }

    /// The rate a process under [`Clockshift::rate_env`]`(ppm)` sees its
    /// monotonic clock run at, against the real one (`CLOCK_MONOTONIC_RAW`,
    /// which the preload leaves alone), over `window`: Python's
    /// `time.clock_gettime` read under the same preload.
    pub async fn read_rate(&self, ppm: i64, window: Duration) -> anyhow::Result<f64> {
        let script = format!(
            "import time\nm,r=time.CLOCK_MONOTONIC,time.CLOCK_MONOTONIC_RAW\na,b=time.clock_gettime(m),time.clock_gettime(r)\ntime.sleep({})\nprint((time.clock_gettime(m)-a)/(time.clock_gettime(r)-b))",
            window.as_secs_f64()
        );
        printed_under(self.rate_env(ppm), "python3", &["-c", &script]).await
    }

    /// How far ahead of ours (ms) a process under this preload reading
    /// `file` finds the wall clock: `date +%s%3N` run under it, the
    /// midpoint of our clock before and after taken as ours.
    pub async fn read_ahead_ms(&self, file: &Path) -> anyhow::Result<i64> {
        let before = now_ms();
        let theirs = self.clock_ms(file).await?;
        let after = now_ms();
        Ok(theirs - (before + after) / 2)
    }

    /// The wall clock (ms since the epoch) a process under this preload
    /// reading `file` sees: `date +%s%3N` run under it.
    pub async fn clock_ms(&self, file: &Path) -> anyhow::Result<i64> {
        printed_under(self.env(file), "date", &["+%s%3N"]).await
    }
}

/// What `program args` prints (a number), run under the preload `env`.
async fn printed_under<T>(
    env: Vec<(String, String)>,
    program: &str,
    args: &[&str],
) -> anyhow::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let out = tokio::process::Command::new(program)
        .args(args)
        .envs(env)
        .output()
        .await
        .with_context(|| format!("run {program} under the clock-shifting preload"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .with_context(|| format!("{program} printed no number"))
}

/// The power-loss preload (`powerloss.c`): a `redis-server` under it
/// keeps its append-only file's unsynced bytes in its own memory, so
/// `kill -9` loses them as a power cut loses the page cache. Built once
/// per run, or the one `SECKILL_POWERLOSS_LIB` names.
#[derive(Debug, Clone)]
pub struct Powerloss {
    library: PathBuf,
}

impl Powerloss {
    /// Compile `powerloss.c` into `dir`, unless `SECKILL_POWERLOSS_LIB`
    /// names a built one.
    pub fn build(dir: &Path) -> anyhow::Result<Self> {
        let library = build_preload(
            dir,
            "powerloss",
            include_str!("../clockshift/powerloss.c"),
            "SECKILL_POWERLOSS_LIB",
        )?;
        Ok(Self { library })
    }

    /// Environment that runs a process under it, its bytes held and
    /// synced reported in `report`.
    pub fn env(&self, report: &Path) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            ("POWERLOSS_REPORT".into(), report.display().to_string()),
        ]
    }

    /// What the report says now: (bytes held back, bytes synced so far).
    pub fn read(report: &Path) -> Option<(u64, u64)> {
        let text = std::fs::read_to_string(report).ok()?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let field = |name: &str| {
            words
                .iter()
                .position(|w| *w == name)
                .and_then(|i| words.get(i + 1))
                .and_then(|v| v.parse().ok())
        };
        Some((field("held")?, field("synced")?))
    }
}

pub use seckill_load::clock::{now_ms, unix_ms, unix_ms_at};

/// Write a clock offset (milliseconds) for a process started with [`Clockshift::env`].
pub fn set_clock_offset(file: &Path, offset_ms: i64) -> anyhow::Result<()> {
    // A new file renamed over the old: the preload reads the old offset or
    // the new one, never a file truncated but not yet written (which it
    // skips, keeping the old offset a millisecond longer).
    let next = file.with_extension("next");
    std::fs::write(&next, format!("{offset_ms:+}\n")).context("write clock offset")?;
    std::fs::rename(&next, file).context("move clock offset in place")
}

/// A `redis-server` this run started.
#[derive(Debug)]
pub struct RedisNode {
    /// Name in logs and reports.
    pub name: String,
    /// Its port.
    pub port: u16,
    service: Service,
}

impl RedisNode {
    /// Start `redis-server` on a free port, without persistence unless
    /// `args` say otherwise, with its files (and `redis.log`) in `dir/name`.
    pub async fn start(
        dir: &Path,
        name: &str,
        args: &[&str],
        env: Vec<(String, String)>,
    ) -> anyhow::Result<Self> {
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir)?;
        let ([port], service) = start_on_free_ports_async(|[port]| {
            let launch = servers::redis(port, &dir)
                .name(format!("redis node {name}"))
                .args(args)
                .envs(env.iter().cloned());
            Ok(Service::new(launch, Ready::redis(port)))
        })
        .await?;
        Ok(Self {
            name: name.to_owned(),
            port,
            service,
        })
    }

    /// `redis://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.service.pid()
    }

    /// `kill -9`: no shutdown, no save — a crash.
    pub fn kill(&mut self) {
        self.service.kill();
    }

    /// Start again on the same port (after [`RedisNode::kill`]).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        Ok(self.service.start_async().await?)
    }

    /// A connection for commands the scenario sends itself.
    pub async fn conn(&self) -> anyhow::Result<redis::aio::MultiplexedConnection> {
        Ok(redis::Client::open(self.url())?
            .get_multiplexed_async_connection()
            .await?)
    }

    /// The field `field` of its `INFO section` (`None`: not there).
    pub async fn info(&self, section: &str, field: &str) -> anyhow::Result<Option<String>> {
        let mut conn = self.conn().await?;
        let info: String = redis::cmd("INFO")
            .arg(section)
            .query_async(&mut conn)
            .await?;
        let prefix = format!("{field}:");
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|v| v.trim().to_owned()))
    }
}

/// A `seckill-app` replica this run started.
#[derive(Debug)]
pub struct Replica {
    /// Instance id (`SECKILL_INSTANCE_ID`), e.g. `a`.
    pub name: String,
    /// HTTP port.
    pub port: u16,
    service: Service,
}

impl Replica {
    /// Start `binary` with `env` only (plus `PATH`, its listen address and
    /// instance id), its output in `dir/replica-<name>.log`, and wait until
    /// it answers `/health/live`.
    pub async fn start(
        binary: &Path,
        dir: &Path,
        name: &str,
        env: Vec<(String, String)>,
    ) -> anyhow::Result<Self> {
        let path = std::env::var("PATH").unwrap_or_default();
        let ([port], service) = start_on_free_ports_async(|[port]| {
            let launch = servers::seckill_app(binary, port)
                .name(format!("replica {name}"))
                .clean_env()
                .env("PATH", &path)
                .env("SECKILL_INSTANCE_ID", name)
                .envs(env.iter().cloned())
                .log(dir.join(format!("replica-{name}.log")));
            Ok(Service::new(launch, Ready::http(port, "/health/live")))
        })
        .await?;
        Ok(Self {
            name: name.to_owned(),
            port,
            service,
        })
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `SIGSTOP`: every thread stops — request handlers, lease renewals,
    /// validity timers — as in a stop-the-world GC or a frozen VM.
    pub fn freeze(&mut self) -> anyhow::Result<()> {
        Ok(self.service.freeze()?)
    }

    /// `SIGCONT`: it carries on where it stopped, unaware of the gap.
    pub fn thaw(&mut self) -> anyhow::Result<()> {
        Ok(self.service.thaw()?)
    }

    /// `kill -9` mid-whatever: no release, no rollback from the process
    /// (PostgreSQL rolls back its open transaction when the socket closes).
    pub fn kill(&mut self) {
        self.service.kill();
    }

    /// Start it again on the same port, with the same environment (after
    /// [`Replica::kill`]): the same instance id, as a restarted pod. Before
    /// it answers, it reads the strategy and faults in force from Redis,
    /// where the other replicas published them: no switch is needed.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        Ok(self.service.start_async().await?)
    }

    /// Whether it is running (not killed).
    pub fn running(&self) -> bool {
        self.service.is_running()
    }

    /// The process id, while running (not killed).
    pub fn pid(&self) -> Option<u32> {
        self.service.pid()
    }
}

/// A `pg-3pc` participant this run started (`seckill-app participant`):
/// one database behind a process with its own timeout.
#[derive(Debug)]
pub struct Participant {
    /// `stock` or `order`.
    pub side: &'static str,
    /// Its port.
    pub port: u16,
    service: Service,
}

impl Participant {
    /// Start `binary participant --side side` with `env` only (plus
    /// `PATH`), its output in `dir/participant-<side>.log`, and wait until
    /// its port answers.
    pub async fn start(
        binary: &Path,
        dir: &Path,
        side: &'static str,
        env: Vec<(String, String)>,
    ) -> anyhow::Result<Self> {
        let path = std::env::var("PATH").unwrap_or_default();
        let ([port], service) = start_on_free_ports_async(|[port]| {
            let launch = servers::seckill_app(binary, port)
                .name(format!("{side} participant"))
                .clean_env()
                .env("PATH", &path)
                .envs(env.iter().cloned())
                .env("RUST_LOG", "warn,seckill_app=info")
                .args(["participant", "--side", side])
                .arg("--listen")
                .arg(format!("127.0.0.1:{port}"))
                .log(dir.join(format!("participant-{side}.log")));
            Ok(Service::new(launch, Ready::port(local(port))))
        })
        .await?;
        Ok(Self {
            side,
            port,
            service,
        })
    }

    /// `127.0.0.1:port`, as `SECKILL_THREE_PC_*_PARTICIPANT` takes it.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.service.pid()
    }
}

/// The state letter of process `pid` as the kernel reports it (the third
/// field of `/proc/<pid>/stat`: `R`, `S`, `T` for stopped, `Z`, …), or
/// `None` when there is no such process (it was killed and reaped).
pub fn process_state(pid: u32) -> Option<char> {
    seckill_launch::process::stat_fields(&pid.to_string())?
        .first()?
        .chars()
        .next()
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
    service: Service,
}

impl Daemon {
    /// A single-node etcd (Debian's `etcd-server`) on free ports, with
    /// short heartbeats so leases may be as short as one second; its data
    /// and log in `dir/etcd`.
    pub async fn etcd(dir: &Path) -> anyhow::Result<Self> {
        let dir = dir.join("etcd");
        std::fs::create_dir_all(&dir)?;
        let ([port, _peer], service) = start_on_free_ports_async(|[client, peer]| {
            let launch = servers::etcd(client, peer, &dir)
                .args(["--heartbeat-interval", "20"])
                .args(["--election-timeout", "200"]);
            Ok(Service::new(launch, Ready::http(client, "/health")))
        })
        .await?;
        Ok(Self {
            name: "etcd".into(),
            port,
            service,
        })
    }

    /// A standalone ZooKeeper (Debian's `zookeeper`) on a free port, tick
    /// 100 ms so sessions may be as short as 200 ms; its files in
    /// `dir/zookeeper`.
    pub async fn zookeeper(dir: &Path) -> anyhow::Result<Self> {
        let dir = dir.join("zookeeper");
        std::fs::create_dir_all(&dir)?;
        let ([port], service) = start_on_free_ports_async(|[port]| {
            Ok(Service::new(
                servers::zookeeper(port, &dir)?,
                Ready::zookeeper(port),
            ))
        })
        .await?;
        Ok(Self {
            name: "zookeeper".into(),
            port,
            service,
        })
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.service.pid()
    }
}
