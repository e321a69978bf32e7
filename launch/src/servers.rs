//! The servers this workspace runs, as [`Launch`]es on given ports: a
//! `redis-server`, a single-node etcd, a standalone ZooKeeper and the
//! `seckill-app` binary. Callers add their own flags and environment
//! (a Redis replica's `--replicaof`, etcd's short heartbeats, a replica's
//! settings), pair the launch with its [`crate::Ready`] in a
//! [`crate::Service`], and usually start it with
//! [`crate::start_on_free_ports`].

use std::path::Path;

use crate::error::LaunchError;
use crate::process::Launch;

/// Debian's ZooKeeper jar (its manifest names every dependency).
pub const ZK_JAR: &str = "/usr/share/java/zookeeper.jar";

/// What the servers below share with `docker-compose.yml`, where the same
/// servers run from their images: written once here, used by every launch
/// below, and held against the compose file by `make check-stack`
/// (`seckill-lab check-stack`).
pub mod shared {
    /// Every Redis of the lab keeps nothing on disk (the Redlock nodes,
    /// the shared Redis).
    pub const REDIS_FLAGS: [&str; 4] = ["--save", "", "--appendonly", "no"];
    /// ZooKeeper's tick, ms: sessions may be as short as 2 ticks, and the
    /// lock's TTL is the session timeout.
    pub const ZK_TICK_MS: u32 = 100;
    /// The four-letter commands ZooKeeper answers (its health checks).
    pub const ZK_4LW: &str = "ruok,srvr";
    /// etcd's log level.
    pub const ETCD_LOG_LEVEL: &str = "warn";
    /// Prometheus' flags beyond its addresses and paths.
    pub const PROMETHEUS_FLAGS: [&str; 2] =
        ["--storage.tsdb.retention.time=2d", "--web.enable-lifecycle"];
}

/// `redis-server` on `127.0.0.1:port` without persistence, working in
/// `dir` (which must exist), its log in `dir/redis.log`. Ready with
/// [`crate::Ready::redis`].
pub fn redis(port: u16, dir: &Path) -> Launch {
    Launch::new("redis-server", "redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(shared::REDIS_FLAGS)
        .arg("--dir")
        .arg(dir)
        .log(dir.join("redis.log"))
        .hint("install Debian's redis-server (`make test` does)")
}

/// A single-node etcd (Debian's `etcd-server`) serving clients on
/// `127.0.0.1:client_port`, its log in `dir/etcd.log`. Ready with
/// [`crate::Ready::http`] on `/health`.
///
/// Its data lives in `dir/data-<client_port>`: a restart on the same ports
/// finds its data again, while a start tried again on new ports (see
/// [`crate::start_on_free_ports`]) does not find a member the failed start
/// recorded with other peer URLs.
pub fn etcd(client_port: u16, peer_port: u16, dir: &Path) -> Launch {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    Launch::new("etcd", "etcd")
        .args(["--name", "seckill", "--data-dir"])
        .arg(dir.join(format!("data-{client_port}")))
        .args(["--listen-client-urls", &client])
        .args(["--advertise-client-urls", &client])
        .args(["--listen-peer-urls", &peer])
        .args(["--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", &format!("seckill={peer}")])
        .args(["--log-level", shared::ETCD_LOG_LEVEL])
        .log(dir.join("etcd.log"))
        .hint("install Debian's etcd-server (`make test` does)")
}

/// A standalone ZooKeeper (`ZooKeeperServerMain` from Debian's `zookeeper`)
/// on `127.0.0.1:port`, its `zoo.cfg`, data and log (`zk.log`) in `dir`.
/// The tick is 100 ms so that sessions may be as short as 200 ms (the
/// server bounds every session timeout to [2, 600] ticks). Ready with
/// [`crate::Ready::zookeeper`].
pub fn zookeeper(port: u16, dir: &Path) -> Result<Launch, LaunchError> {
    let hint = "install Debian's zookeeper and default-jre-headless (`make test` does)";
    if !Path::new(ZK_JAR).exists() {
        return Err(LaunchError::Missing {
            name: "ZooKeeper".into(),
            path: ZK_JAR.into(),
            hint: format!("; {hint}"),
        });
    }
    let config = format!(
        "tickTime={tick}\n\
         dataDir={data}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         minSessionTimeout={min}\n\
         maxSessionTimeout=60000\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist={four}\n",
        tick = shared::ZK_TICK_MS,
        min = 2 * shared::ZK_TICK_MS,
        four = shared::ZK_4LW,
        data = dir.join("data").display()
    );
    let config_path = dir.join("zoo.cfg");
    std::fs::write(&config_path, config)
        .map_err(LaunchError::io(format!("write {}", config_path.display())))?;
    Ok(Launch::new("ZooKeeper", "java")
        .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .args(["-Dzookeeper.admin.enableServer=false", "-cp", ZK_JAR])
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(config_path)
        .log(dir.join("zk.log"))
        .hint(hint))
}

/// The `seckill-app` binary listening on `127.0.0.1:port`, logging at
/// `warn` (or at `SECKILL_APP_RUST_LOG`, when set: a filter to read why a
/// case broke, e.g. `warn,seckill_app::lock::redlock=debug`); the caller
/// adds its `SECKILL_*` settings and where its output goes. Ready with [`crate::Ready::http`] on `/health/ready` (or
/// `/health/live`, before its dependencies answer).
pub fn seckill_app(binary: &Path, port: u16) -> Launch {
    Launch::new("seckill-app", binary)
        .env("SECKILL_LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "RUST_LOG",
            std::env::var("SECKILL_APP_RUST_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .hint("build it: cargo build -p seckill-app")
}

/// A private MariaDB (`mariadbd` from Debian's mariadb-server) on
/// `127.0.0.1:port`, its data in `dir/data` (made by
/// [`mariadb_install`] first), its socket and error log in `dir`. Runs as
/// the current user. Ready once a client connects (the caller's probe).
pub fn mariadb(port: u16, dir: &Path, user: &str) -> Launch {
    Launch::new("MariaDB", "/usr/sbin/mariadbd")
        .args([
            "--no-defaults",
            &format!("--user={user}"),
            &format!("--port={port}"),
        ])
        .arg(format!("--datadir={}", dir.join("data").display()))
        .args([
            "--bind-address=127.0.0.1",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=32M",
        ])
        .arg(format!("--socket={}", dir.join("mariadb.sock").display()))
        .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
        .log(dir.join("mariadb.log"))
        .hint("install Debian's mariadb-server")
}

/// `mariadb-install-db` for [`mariadb`]'s `dir/data`: root without a
/// password, no test database.
pub fn mariadb_install(dir: &Path, user: &str) -> Launch {
    Launch::new("mariadb-install-db", "mariadb-install-db")
        .args(["--no-defaults", &format!("--user={user}")])
        .arg(format!("--datadir={}", dir.join("data").display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .log(dir.join("install.log"))
        .hint("install Debian's mariadb-server")
}

/// Prometheus on `bind:port` with the config `config` (see the lab's
/// `stack::config`), its data in `data`, two days kept. Ready with
/// [`crate::Ready::http`] on `/-/ready`.
pub fn prometheus(config: &Path, data: &Path, bind: &str, port: u16, log: &Path) -> Launch {
    Launch::new("Prometheus", "prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .args(shared::PROMETHEUS_FLAGS)
        .arg(format!("--web.listen-address={bind}:{port}"))
        .log(log)
        .hint("install Debian's prometheus")
}

/// nginx in the foreground (`daemon off`: its master is the group leader)
/// with the config `config`, its prefix (temp folders) `prefix`. Ready with
/// [`crate::Ready::http`] on `/lb-health`.
pub fn nginx(program: &Path, prefix: &Path, config: &Path, log: &Path) -> Launch {
    Launch::new("nginx", program)
        .arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(config)
        .args(["-e", "stderr", "-g", "daemon off;"])
        .log(log)
        .hint("install Debian's nginx-light (optional: the replicas' URLs are enough)")
}
