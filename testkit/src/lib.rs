//! Test harness shared by the service's and the load generator's tests.
//!
//! Everything here is real: [`RedisServer`] starts a `redis-server` on a free
//! port (no persistence) and can stop and restart it; [`fresh_database`]
//! creates a new database on the PostgreSQL named by
//! `SECKILL_TEST_DATABASE_URL`; [`AppProcess`] starts the `seckill-app`
//! binary itself as a separate process, the way a replica runs in the demo.
//! [`EtcdServer`] and [`ZkServer`] start a single-node etcd and ZooKeeper
//! (Debian's packages) on free ports with a data folder of their own, for the
//! coordination-service locks; [`mysql_test_url`] names the MariaDB the
//! `mysql-get-lock` tests use. The machine's own Redis is never touched.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A `redis-server` owned by one test.
#[derive(Debug)]
pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
}

impl RedisServer {
    pub fn start() -> Self {
        let mut server = Self {
            port: free_port(),
            child: None,
        };
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Start (again) on the same port and wait until it answers PING.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (run `make test`, which installs it)");
        self.child = Some(child);
        for _ in 0..200 {
            if self.ping() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server on port {} did not start", self.port);
    }

    /// Kill the server (SIGKILL: like a crash).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn ping(&self) -> bool {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(100)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
    }

    /// A blocking connection for assertions and for playing "another client".
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to test redis")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
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

/// Send `signal` (`-STOP`, `-CONT`, ...) to a process.
pub fn signal_process(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill on PATH");
    assert!(status.success(), "kill {signal} {pid}");
}

/// A single-node `etcd` owned by one test: free client and peer ports, its
/// own data dir, killed on drop.
#[derive(Debug)]
pub struct EtcdServer {
    pub port: u16,
    peer_port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl EtcdServer {
    /// Start and wait until `/health` answers 200.
    pub fn start() -> Self {
        let mut server = Self {
            port: free_port(),
            peer_port: free_port(),
            dir: private_dir("etcd"),
            child: None,
        };
        server.restart();
        server
    }

    /// The client URL (`SECKILL_ETCD_URLS`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Process id, to pause it (`SIGSTOP`) in a test.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Start (again) on the same ports and data dir.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let client = self.url();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.dir.join("etcd.log")).expect("log file");
        let child = Command::new("etcd")
            .args([
                "--name",
                "test",
                "--data-dir",
                &self.dir.join("data").to_string_lossy(),
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
                "--initial-cluster",
                &format!("test={peer}"),
                "--log-level",
                "warn",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd on PATH (run `make test`, which installs etcd-server)");
        self.child = Some(child);
        let addr = format!("127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if http_status(&addr, "/health") == Some(200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "etcd on port {} not healthy within 30 s (log: {})",
            self.port,
            self.dir.join("etcd.log").display()
        );
    }

    /// Kill the server (SIGKILL: like a crash); its data stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Debian's ZooKeeper jar (its manifest names every dependency).
pub const ZK_JAR: &str = "/usr/share/java/zookeeper.jar";

/// A standalone ZooKeeper owned by one test: `ZooKeeperServerMain` on a
/// free port with its own `zoo.cfg` and data dir, killed on drop. The tick
/// is 100 ms so sessions may be as short as 200 ms (the server bounds every
/// session timeout to [2, 600] ticks).
#[derive(Debug)]
pub struct ZkServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl ZkServer {
    /// Start and wait until it serves (`srvr` answers with a mode).
    pub fn start() -> Self {
        let dir = private_dir("zk");
        let port = free_port();
        let config = format!(
            "tickTime=100\n\
             dataDir={data}\n\
             clientPort={port}\n\
             clientPortAddress=127.0.0.1\n\
             minSessionTimeout=200\n\
             maxSessionTimeout=60000\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=ruok,srvr\n",
            data = dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), config).expect("write zoo.cfg");
        let mut server = Self {
            port,
            dir,
            child: None,
        };
        server.restart();
        server
    }

    /// The connect string (`SECKILL_ZOOKEEPER_URL`).
    pub fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Process id, to pause it (`SIGSTOP`) in a test.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Start (again) on the same port and data dir.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        assert!(
            std::path::Path::new(ZK_JAR).exists(),
            "{ZK_JAR} missing (run `make test`, which installs Debian's zookeeper)"
        );
        let log = std::fs::File::create(self.dir.join("zk.log")).expect("log file");
        let child = Command::new("java")
            .args([
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                ZK_JAR,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                &self.dir.join("zoo.cfg").to_string_lossy(),
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("java on PATH (run `make test`, which installs zookeeper)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if four_letter_word(self.port, "srvr").is_some_and(|a| a.contains("Mode:")) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "ZooKeeper on port {} not serving within 60 s (log: {})",
            self.port,
            self.dir.join("zk.log").display()
        );
    }

    /// Kill the server (SIGKILL); its data stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A ZooKeeper four-letter command's answer, or None when nothing answers.
fn four_letter_word(port: u16, word: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(word.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// URL of the MariaDB the `mysql-get-lock` tests take `GET_LOCK` on
/// (`SECKILL_TEST_MYSQL_URL`; `make test` starts the machine's when down).
pub fn mysql_test_url() -> String {
    std::env::var("SECKILL_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

/// URL of the PostgreSQL server the tests may create databases on.
pub fn admin_database_url() -> String {
    std::env::var("SECKILL_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn with_database(url: &str, name: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("url with a database path");
    format!("{base}/{name}")
}

/// Create an empty database; returns its URL.
pub async fn fresh_database() -> String {
    let admin = admin_database_url();
    // The pid lets `make test` drop only databases of finished runs.
    let name = format!(
        "seckill_test_{}_{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let pool = sqlx::PgPool::connect(&admin)
        .await
        .expect("PostgreSQL reachable at SECKILL_TEST_DATABASE_URL (run `make test`)");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .expect("create test database");
    pool.close().await;
    with_database(&admin, &name)
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
    child: Child,
}

impl AppProcess {
    /// Start the app with these `SECKILL_*` settings (the listen address is
    /// chosen here) and wait until `/health/ready` answers 200.
    ///
    /// The port is probed free, then bound by the app: another test's
    /// server can take it in between (the app then exits with "Address
    /// already in use"). A start that exits is tried again on a new port,
    /// three times in all; a real start failure fails all three.
    pub fn start(env: &[(&str, String)]) -> Self {
        let bin = std::env::var_os("SECKILL_APP_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_binary("seckill-app", "seckill-app"));
        let mut last_exit = None;
        for _ in 0..3 {
            let port = free_port();
            let mut command = Command::new(&bin);
            command
                .env("SECKILL_LISTEN", format!("127.0.0.1:{port}"))
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            for (key, value) in env {
                command.env(key, value);
            }
            let child = command.spawn().expect("start seckill-app");
            let mut app = Self {
                address: format!("http://127.0.0.1:{port}"),
                child,
            };
            match app.wait_ready() {
                Ok(()) => return app,
                Err(status) => last_exit = Some(status),
            }
        }
        panic!("seckill-app exited at start three times, last: {last_exit:?}");
    }

    /// Ready (`Ok`), or the exit status of a process that stopped first.
    fn wait_ready(&mut self) -> Result<(), std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = self.address.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(status);
            }
            if http_status(&addr, "/health/ready") == Some(200) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("seckill-app at {} not ready within 30 s", self.address);
    }
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Status code of a plain HTTP/1.1 GET, or None when nothing answers.
fn http_status(addr: &str, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Headless Chromium for the browser tests: its path, or None after a loud
/// "SKIPPED" banner naming `what` — unless `SECKILL_REQUIRE_CHROMIUM` is set
/// (CI), where a missing browser fails the test.
pub fn chromium(what: &str) -> Option<&'static str> {
    const CANDIDATES: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
    if let Some(path) = CANDIDATES
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    {
        return Some(path);
    }
    assert!(
        std::env::var_os("SECKILL_REQUIRE_CHROMIUM").is_none(),
        "SECKILL_REQUIRE_CHROMIUM is set but chromium is missing: apt-get install -y chromium"
    );
    eprintln!(
        "\n==============================================================\n\
         SKIPPED: {what} — chromium is missing.\n\
         Install it (apt-get install -y chromium, or scripts/services.sh)\n\
         or set SECKILL_REQUIRE_CHROMIUM=1 to make this a failure.\n\
         ==============================================================\n"
    );
    None
}

/// A decoded 8-bit PNG (a browser screenshot), as RGB pixels.
#[derive(Debug)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<[u8; 3]>,
}

impl Image {
    /// Decode the PNG at `path` (RGB or RGBA; alpha dropped).
    pub fn decode(path: &std::path::Path) -> Self {
        let file = std::fs::File::open(path).expect("screenshot written");
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buffer = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buffer).expect("a frame");
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => panic!("unexpected PNG colour type {other:?}"),
        };
        let rgb = buffer[..info.buffer_size()]
            .chunks_exact(channels)
            .map(|px| [px[0], px[1], px[2]])
            .collect();
        Self {
            width: info.width,
            height: info.height,
            rgb,
        }
    }

    /// How many different colours the picture has.
    pub fn distinct_colours(&self) -> usize {
        let mut seen: Vec<[u8; 3]> = self.rgb.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// Pixels whose every channel is within `max_diff` of `colour`
    /// (anti-aliasing aside).
    pub fn count_near(&self, colour: [u8; 3], max_diff: u8) -> usize {
        self.rgb
            .iter()
            .filter(|px| {
                px.iter()
                    .zip(colour)
                    .all(|(a, b)| a.abs_diff(b) <= max_diff)
            })
            .count()
    }
}
