//! The harness's servers against the real programs: a `redis-server` that
//! is crashed, restarted and frozen; an etcd and a ZooKeeper that answer
//! and whose whole process group is gone once dropped.

use std::time::Duration;

use seckill_testkit::{eventually_blocking, signal_process, EtcdServer, RedisServer, ZkServer};

/// The state letter in `/proc/<pid>/stat`, None once the process is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// Wait up to 5 s (testkit's poll) until `pid` is stopped (state `T`),
/// or, with `stopped` false, until it is not.
fn until_state(what: &str, pid: u32, stopped: bool) {
    eventually_blocking(what, Duration::from_secs(5), || {
        let seen = state(pid);
        if (seen == Some('T')) == stopped {
            Ok(())
        } else {
            Err(seen)
        }
    });
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
    until_state("frozen (T)", pid, true);
    redis.thaw();
    until_state("running again", pid, false);
    signal_process(pid, "-STOP");
    until_state("stopped by pid (T)", pid, true);
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
