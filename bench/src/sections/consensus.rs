//! Section `consensus`: what every lock costs beside Redis, the
//! consensus-backed ones (etcd lease, ZooKeeper ephemeral sequential
//! node, MariaDB `GET_LOCK`) with the Redis ones, in a table of its own
//! without goals: uncontended acquire+release against the token
//! section's floor, then 16 tasks taking turns on one key against 16
//! tasks racing the raw commands. Starts its own etcd and ZooKeeper;
//! MariaDB is `SECKILL_TEST_MYSQL_URL`'s.

use std::sync::Arc;
use std::time::Duration;

use seckill_app::lock::etcd_lease::EtcdLease;
use seckill_app::lock::mysql_get_lock::MysqlGetLock;
use seckill_app::lock::redlock::Redlock;
use seckill_app::lock::set_nx_px_token::SetNxPxToken;
use seckill_app::lock::watchdog::Watchdog;
use seckill_app::lock::zk_ephemeral_seq::ZkEphemeralSeq;
use seckill_app::locking::DistributedLock;
use seckill_testkit::{mysql_test_url, EtcdServer, ZkServer};

use crate::floor::raw_contended_rate;
use crate::harness::{cycle_us, cycles_per_second, deps, Products, NODE_TIMEOUT};
use crate::table::{cost_header, cost_row};

/// Every lock on the five Redis nodes at `urls` (the single-node ones on
/// the third), etcd, ZooKeeper and MariaDB; `floor_set_del` is the token
/// section's floor, µs per raw `SET NX PX` + `DEL`.
pub async fn consensus_costs(urls: &[String], floor_set_del: f64) {
    let etcd = EtcdServer::start();
    let zk = ZkServer::start();
    let ttl = Duration::from_secs(10);
    let d = Arc::new(deps(&urls[2], ttl, Duration::from_secs(5)));
    let locks: Vec<(&str, Arc<dyn DistributedLock>)> = vec![
        ("set-nx-px-token", Arc::new(SetNxPxToken::new())),
        (
            "watchdog",
            Arc::new(Watchdog::new(&urls[2]).expect("watchdog")),
        ),
        (
            "redlock (5 nodes)",
            Arc::new(Redlock::new(urls, NODE_TIMEOUT, 0.01).expect("redlock")),
        ),
        ("etcd-lease", Arc::new(EtcdLease::new(&[etcd.url()]))),
        (
            "zk-ephemeral-seq",
            Arc::new(ZkEphemeralSeq::new(Some(&zk.url()))),
        ),
        (
            "mysql-get-lock",
            Arc::new(MysqlGetLock::new(Some(&mysql_test_url()), 24).expect("MariaDB pool")),
        ),
    ];
    println!(
        "\nconsensus beside Redis: uncontended acquire+release (floor: raw SET NX PX + DEL, above),\n\
         then 16 tasks taking turns on one key (floor: 16 tasks racing raw SET NX PX / DEL on one key)\n"
    );
    cost_header();
    for (name, lock) in &locks {
        let us = cycle_us(lock.as_ref(), &d, 5, 200).await;
        cost_row(
            &format!("{name}: acquire+release"),
            us,
            floor_set_del,
            "µs/op",
        );
    }
    let window = Duration::from_secs(3);
    let raw = raw_contended_rate(&d.redis, 16, window).await;
    for (name, lock) in &locks {
        let rate = cycles_per_second(lock.clone(), d.clone(), 16, window, Products::One(8)).await;
        cost_row(&format!("{name}: 16 tasks, one key"), rate, raw, "ops/s");
    }
}
