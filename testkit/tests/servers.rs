//! The harness's servers against the real programs: a `redis-server` that
//! is crashed, restarted and frozen; an etcd and a ZooKeeper that answer
//! and whose whole process group is gone once dropped.

use std::time::{Duration, Instant};

use seckill_testkit::{signal_process, EtcdServer, RedisServer, ZkServer};

/// The state letter in `/proc/<pid>/stat`, None once the process is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// Poll `check` for up to 5 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ping(redis: &RedisServer) -> redis::RedisResult<String> {
    let mut conn = redis::Client::open(redis.url())?.get_connection()?;
    redis::cmd("PING").query(&mut conn)
}

#[test]
fn redis_crashes_restarts_on_its_port_and_freezes() {
    let mut redis = RedisServer::start();
    assert_eq!(ping(&redis).expect("ping"), "PONG");
    let first = redis.pid();
    redis.stop();
    assert_eq!(state(first), None, "stop reaps the crashed server");
    assert!(ping(&redis).is_err(), "nothing answers after the crash");
    redis.restart();
    assert_eq!(ping(&redis).expect("ping after restart"), "PONG");
    let pid = redis.pid();
    redis.freeze();
    eventually("frozen (T)", || state(pid) == Some('T'));
    redis.thaw();
    eventually("running again", || state(pid) != Some('T'));
    signal_process(pid, "-STOP");
    eventually("stopped by pid (T)", || state(pid) == Some('T'));
    signal_process(pid, "CONT");
    assert_eq!(ping(&redis).expect("ping after CONT"), "PONG");
    drop(redis);
    assert_eq!(state(pid), None, "drop reaps the server");
}

#[test]
fn etcd_serves_restarts_and_dies_with_its_handle() {
    let mut etcd = EtcdServer::start();
    let pid = etcd.pid();
    etcd.stop();
    assert_eq!(state(pid), None);
    etcd.restart();
    let pid = etcd.pid();
    assert!(state(pid).is_some());
    drop(etcd);
    assert_eq!(state(pid), None, "drop reaps etcd");
}

#[test]
fn zookeeper_serves_and_its_jvm_dies_with_its_handle() {
    let zk = ZkServer::start();
    let pid = zk.pid();
    assert!(zk.url().ends_with(&zk.port.to_string()));
    drop(zk);
    assert_eq!(state(pid), None, "drop reaps the JVM");
}
