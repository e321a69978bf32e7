//! The processes a test owns — a `redis-server`, a single-node etcd, a
//! standalone ZooKeeper, a `seckill-app` replica — started through
//! `seckill-launch` on free ports (a start that loses its port to another
//! test's server is tried again on new ones), each in a process group of
//! its own that is killed with everything it started when the handle is
//! dropped, or when the test binary is interrupted.
//!
//! The three servers are one generic [`Server`], told apart by a
//! [`ServerKind`] (command line, readiness, URL); [`RedisServer`],
//! [`EtcdServer`] and [`ZkServer`] name them. This is the blocking face of
//! the launcher: a start that fails panics with the launcher's message (the
//! program, and the end of its log).

use std::marker::PhantomData;
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

/// What tells one server of a test from another: its command line and
/// readiness on a port, and how clients name it. Implemented by [`Redis`],
/// [`Etcd`] and [`ZooKeeper`].
pub trait ServerKind {
    /// Its private folder's prefix, e.g. `redis`.
    const KIND: &'static str;
    /// The service on `port`, its files in `dir`.
    fn service(port: u16, dir: &Path) -> Result<Service, LaunchError>;
    /// What a client connects to, e.g. `redis://127.0.0.1:6379`.
    fn url(port: u16) -> String;
}

/// A server owned by one test: on a free port (a start that loses it to
/// another test's server is tried again on a new one), its files in a
/// private folder, killed — with whatever it started — and its folder
/// removed on drop. Named through [`RedisServer`], [`EtcdServer`] and
/// [`ZkServer`].
#[derive(Debug)]
pub struct Server<K> {
    pub port: u16,
    service: Service,
    dir: PathBuf,
    kind: PhantomData<K>,
}

impl<K: ServerKind> Server<K> {
    /// Start and wait until it serves.
    pub fn start() -> Self {
        let dir = private_dir(K::KIND);
        let ([port], service) = start(|[port]| K::service(port, &dir));
        Self {
            port,
            service,
            dir,
            kind: PhantomData,
        }
    }

    /// What a client connects to (`SECKILL_REDIS_URL`, `SECKILL_ETCD_URLS`,
    /// `SECKILL_ZOOKEEPER_URL`).
    pub fn url(&self) -> String {
        K::url(self.port)
    }

    /// Start again on the same port and data, and wait until it serves.
    pub fn restart(&mut self) {
        or_panic(self.service.start());
    }

    /// Kill the server (SIGKILL to its process group: like a crash); its
    /// data stays.
    pub fn stop(&mut self) {
        self.service.kill();
    }

    /// Process id of the server (its group's leader).
    pub fn pid(&self) -> u32 {
        self.service.pid().expect("running")
    }

    /// `SIGSTOP` to its process group: it stops answering, its sockets
    /// stay open.
    pub fn freeze(&mut self) {
        or_panic(self.service.freeze());
    }

    /// `SIGCONT` after [`Server::freeze`].
    pub fn thaw(&mut self) {
        or_panic(self.service.thaw());
    }
}

impl<K> Drop for Server<K> {
    fn drop(&mut self) {
        self.service.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `redis-server` owned by one test, without persistence; ready once it
/// answers `PING`.
pub type RedisServer = Server<Redis>;

/// A single-node `etcd` owned by one test: free client and peer ports, its
/// own data dir; ready once `/health` answers 200.
pub type EtcdServer = Server<Etcd>;

/// A standalone ZooKeeper owned by one test: `ZooKeeperServerMain` on a
/// free port with its own `zoo.cfg` and data dir, the JVM killed with
/// whatever it started. The tick is 100 ms so sessions may be as short as
/// 200 ms (the server bounds every session timeout to [2, 600] ticks);
/// ready once `srvr` answers with a mode.
pub type ZkServer = Server<ZooKeeper>;

/// [`RedisServer`]'s kind.
#[derive(Debug)]
pub enum Redis {}

impl ServerKind for Redis {
    const KIND: &'static str = "redis";

    fn service(port: u16, dir: &Path) -> Result<Service, LaunchError> {
        Ok(Service::new(servers::redis(port, dir), Ready::redis(port)))
    }

    fn url(port: u16) -> String {
        format!("redis://127.0.0.1:{port}")
    }
}

impl Server<Redis> {
    /// A blocking connection for assertions and for playing "another client".
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to test redis")
    }
}

/// [`EtcdServer`]'s kind.
#[derive(Debug)]
pub enum Etcd {}

impl ServerKind for Etcd {
    const KIND: &'static str = "etcd";

    fn service(port: u16, dir: &Path) -> Result<Service, LaunchError> {
        let peer = seckill_launch::free_port()?;
        Ok(Service::new(
            servers::etcd(port, peer, dir),
            Ready::http(port, "/health"),
        ))
    }

    fn url(port: u16) -> String {
        format!("http://127.0.0.1:{port}")
    }
}

/// [`ZkServer`]'s kind.
#[derive(Debug)]
pub enum ZooKeeper {}

impl ServerKind for ZooKeeper {
    const KIND: &'static str = "zk";

    fn service(port: u16, dir: &Path) -> Result<Service, LaunchError> {
        Ok(Service::new(
            servers::zookeeper(port, dir)?,
            Ready::zookeeper(port),
        ))
    }

    fn url(port: u16) -> String {
        format!("127.0.0.1:{port}")
    }
}

/// The workspace's `target/<profile>` folder, where cargo puts the
/// binaries: the profile is read off the running test binary
/// (`<dir>/<profile>/deps/<test>`), the folder is `CARGO_TARGET_DIR` or the
/// workspace's `target/`. Not the test binary's own folder: with a
/// separate `build.build-dir` (CI's cache) tests run from there, and the
/// binaries are not beside them.
fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .expect("test binary under <dir>/<profile>/deps");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("testkit sits in the workspace")
                .join("target")
        },
        PathBuf::from,
    );
    target.join(profile)
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
