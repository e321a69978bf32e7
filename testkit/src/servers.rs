//! The processes a test owns — a `redis-server`, a single-node etcd, a
//! standalone ZooKeeper, a `seckill-app` replica — started through
//! `seckill-launch` on free ports (a start that loses its port to another
//! test's server is tried again on new ones), each in a process group of
//! its own that is killed with everything it started when the handle is
//! dropped, or when the test binary is interrupted.
//!
//! This is the blocking face of the launcher: a start that fails panics
//! with the launcher's message (the program, and the end of its log).

use std::path::{Path, PathBuf};
use std::process::Command;

use seckill_launch::{
    kill_groups_on_interrupt, servers, start_on_free_ports, LaunchError, Output, Ready, Service,
};

pub use seckill_launch::servers::ZK_JAR;

/// The value, or a panic with the launcher's message.
fn or_panic<T>(result: Result<T, LaunchError>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// Start the service `service_on` builds on `N` free ports, with the
/// interrupt handler in place (a test binary has no Ctrl-C handling of its
/// own, so the handler costs nothing and spares orphans).
fn start<const N: usize>(
    service_on: impl FnMut([u16; N]) -> Result<Service, LaunchError>,
) -> ([u16; N], Service) {
    or_panic(kill_groups_on_interrupt());
    or_panic(start_on_free_ports(service_on))
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    or_panic(seckill_launch::free_port())
}

/// Send `signal` (`-STOP`, `-CONT`, ... as `kill(1)` names them) to one
/// process.
pub fn signal_process(pid: u32, signal: &str) {
    or_panic(seckill_launch::send_signal(pid, signal));
}

/// A private data folder under the system's temp dir, removed on drop by
/// the server that owns it.
fn private_dir(kind: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "seckill-{kind}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("create a private data dir");
    dir
}

/// A started service and its private folder: both gone on drop.
#[derive(Debug)]
struct Owned {
    service: Service,
    dir: PathBuf,
}

impl Owned {
    /// Start on free ports, its files in a new private folder `kind-…`.
    fn start<const N: usize>(
        kind: &str,
        mut service_on: impl FnMut([u16; N], &Path) -> Result<Service, LaunchError>,
    ) -> ([u16; N], Self) {
        let dir = private_dir(kind);
        let (ports, service) = start(|ports| service_on(ports, &dir));
        (ports, Self { service, dir })
    }

    fn pid(&self) -> u32 {
        self.service.pid().expect("running")
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.service.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `redis-server` owned by one test.
#[derive(Debug)]
pub struct RedisServer {
    pub port: u16,
    server: Owned,
}

impl RedisServer {
    /// Start on a free port (no persistence) and wait until it answers PING.
    pub fn start() -> Self {
        let ([port], server) = Owned::start("redis", |[port], dir| {
            Ok(Service::new(servers::redis(port, dir), Ready::redis(port)))
        });
        Self { port, server }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Start again on the same port and wait until it answers PING.
    pub fn restart(&mut self) {
        or_panic(self.server.service.start());
    }

    /// Kill the server (SIGKILL: like a crash).
    pub fn stop(&mut self) {
        self.server.service.kill();
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// `SIGSTOP`: it stops answering, its sockets stay open.
    pub fn freeze(&mut self) {
        or_panic(self.server.service.freeze());
    }

    /// `SIGCONT` after [`RedisServer::freeze`].
    pub fn thaw(&mut self) {
        or_panic(self.server.service.thaw());
    }

    /// A blocking connection for assertions and for playing "another client".
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to test redis")
    }
}

/// A single-node `etcd` owned by one test: free client and peer ports, its
/// own data dir, killed on drop.
#[derive(Debug)]
pub struct EtcdServer {
    pub port: u16,
    server: Owned,
}

impl EtcdServer {
    /// Start and wait until `/health` answers 200.
    pub fn start() -> Self {
        let ([port, _peer], server) = Owned::start("etcd", |[client, peer], dir| {
            Ok(Service::new(
                servers::etcd(client, peer, dir),
                Ready::http(client, "/health"),
            ))
        });
        Self { port, server }
    }

    /// The client URL (`SECKILL_ETCD_URLS`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Process id, to pause it (`SIGSTOP`) in a test.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// Start (again) on the same ports and data dir.
    pub fn restart(&mut self) {
        or_panic(self.server.service.start());
    }

    /// Kill the server (SIGKILL: like a crash); its data stays.
    pub fn stop(&mut self) {
        self.server.service.kill();
    }
}

/// A standalone ZooKeeper owned by one test: `ZooKeeperServerMain` on a
/// free port with its own `zoo.cfg` and data dir, killed on drop — the JVM
/// with whatever it started. The tick is 100 ms so sessions may be as short
/// as 200 ms (the server bounds every session timeout to [2, 600] ticks).
#[derive(Debug)]
pub struct ZkServer {
    pub port: u16,
    server: Owned,
}

impl ZkServer {
    /// Start and wait until it serves (`srvr` answers with a mode).
    pub fn start() -> Self {
        let ([port], server) = Owned::start("zk", |[port], dir| {
            Ok(Service::new(
                servers::zookeeper(port, dir)?,
                Ready::zookeeper(port),
            ))
        });
        Self { port, server }
    }

    /// The connect string (`SECKILL_ZOOKEEPER_URL`).
    pub fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Process id, to pause it (`SIGSTOP`) in a test.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// Start (again) on the same port and data dir.
    pub fn restart(&mut self) {
        or_panic(self.server.service.start());
    }

    /// Kill the server (SIGKILL); its data stays.
    pub fn stop(&mut self) {
        self.server.service.kill();
    }
}

/// The workspace's `target/<profile>` folder, found from the running test
/// binary (`target/<profile>/deps/<test>`).
fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("test binary under target/<profile>/deps")
        .to_path_buf()
}

/// Path of a workspace binary (`SECKILL_APP_BIN` overrides for the app);
/// built with cargo when a lone `cargo test -p …` has not built it yet.
pub fn workspace_binary(package: &str, bin: &str) -> PathBuf {
    let path = target_profile_dir().join(bin);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", package, "--bin", bin])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build -p {package} failed");
    }
    path
}

/// One replica: the real `seckill-app` binary in its own process.
#[derive(Debug)]
pub struct AppProcess {
    pub address: String,
    service: Service,
}

impl AppProcess {
    /// Start the app with these `SECKILL_*` settings (the listen address is
    /// chosen here) and wait until `/health/ready` answers 200. Its stderr
    /// is the test's.
    ///
    /// The port is probed free, then bound by the app: another test's
    /// server can take it in between (the app then exits with "Address
    /// already in use"). A start that exits is tried again on a new port,
    /// three times in all; a real start failure fails all three.
    pub fn start(env: &[(&str, String)]) -> Self {
        let bin = std::env::var_os("SECKILL_APP_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_binary("seckill-app", "seckill-app"));
        let ([port], service) = start(|[port]| {
            Ok(Service::new(
                servers::seckill_app(&bin, port)
                    .envs(env.iter().cloned())
                    .output(Output::Stderr),
                Ready::http(port, "/health/ready"),
            ))
        });
        Self {
            address: format!("http://127.0.0.1:{port}"),
            service,
        }
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.service.pid().expect("running")
    }
}
