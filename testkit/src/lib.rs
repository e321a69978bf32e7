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
//!
//! - `servers`: the processes, started, signalled and killed through
//!   `seckill-launch` (process groups, readiness, the port race);
//! - `database`: PostgreSQL and MariaDB;
//! - `browser`: headless Chromium and its screenshots;
//! - `skip`: a test whose prerequisite is missing, skipped loudly (failed in CI);
//! - `eventually`: poll for a state, instead of sleeping for it (async, or
//!   blocking for a plain `#[test]`).

mod browser;
mod database;
mod eventually;
mod servers;
mod skip;

pub use browser::{chromium, Image};
pub use database::{admin_database_url, fresh_database, mysql_test_url};
pub use eventually::{eventually, eventually_blocking};
pub use servers::{
    free_port, signal_process, workspace_binary, AppProcess, Etcd, EtcdServer, Redis, RedisServer,
    Server, ServerKind, ZkServer, ZooKeeper, ZK_JAR,
};
pub use skip::skip_unless_required;
