//! Redlock's extension (the `redlock_extend` switch), against real
//! redis-servers: a node that restarted empty is locked again by the next
//! extension, so a second restart leaves the holder its majority (and
//! without that, as redsync extended before its PR #149, it does not);
//! an extension asked for after the validity ran out is refused (and with
//! the `extend_expired` fault, granted on the free keys).

use std::sync::Arc;
use std::time::Duration;

use seckill_app::error::GrabError;
use seckill_app::lock::redlock::Redlock;
use seckill_app::locking::{DistributedLock, LockGuard, LockLost};
use seckill_app::strategy::{Deps, GrabContext};
use seckill_testkit::eventually;
use seckill_wire::faults::Faults;

use crate::checker::{deps, no_faults};
use crate::harness::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;
const NO_DB: &str = "postgres://postgres@127.0.0.1:1/none";

/// Three redis-servers as Redlock's nodes, a 600 ms TTL (an extension
/// every 200 ms), a 300 ms wait.
fn three_nodes() -> (Vec<RedisServer>, Arc<Deps>, Redlock) {
    let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let d = deps(&nodes[0].url(), NO_DB, MS(600), MS(300));
    let lock = Redlock::new(&urls, MS(100), 0.01).expect("redlock");
    (nodes, d, lock)
}

fn extending(held_only: bool, expired: bool) -> Faults {
    let mut faults = no_faults();
    faults.redlock_extend = true;
    faults.extend_held_only = held_only;
    faults.extend_expired = expired;
    faults
}

fn holds_the_key(node: &RedisServer, guard: &LockGuard) -> bool {
    let value: Option<String> = redis::cmd("GET")
        .arg(&guard.key)
        .query(&mut node.conn())
        .expect("get");
    value.as_deref() == Some(guard.token.as_str())
}

/// A holds on nodes 0, 1, 2; node 0 restarts empty; after an extension
/// period node 1 does too; then B tries. What B gets.
async fn two_restarts_then_b(held_only: bool) -> Result<LockGuard, GrabError> {
    let (mut nodes, d, lock) = three_nodes();
    let cx = GrabContext {
        deps: &d,
        faults: extending(held_only, false),
        pause: false,
    };
    let a = lock.acquire(cx, 1).await.expect("A acquires");
    nodes[0].stop();
    nodes[0].restart();
    if held_only {
        // Extensions with node 0 back: none of them gives it the key again.
        // Four counted from here (one may have begun before the restart;
        // the last one's call to node 0 may still be on its way): three
        // whole ones.
        let renewed = || {
            d.metrics
                .lock_renewals
                .with_label_values(&["redlock", "renewed"])
                .get()
        };
        let before = renewed();
        eventually("four more extensions", MS(5_000), || async {
            let now = renewed();
            if now >= before + 4 {
                Ok(())
            } else {
                Err(now - before)
            }
        })
        .await;
        assert!(!holds_the_key(&nodes[0], &a), "node 0 stays empty");
    } else {
        let node = &nodes[0];
        eventually("an extension locks node 0 again", MS(3000), || async {
            holds_the_key(node, &a).then_some(()).ok_or("not yet")
        })
        .await;
    }
    nodes[1].stop();
    nodes[1].restart();
    let b = lock.acquire(cx, 1).await;
    if !held_only {
        assert_eq!(a.check_still_held(), Ok(()), "A keeps its majority");
    }
    lock.release(cx, a).await.expect("release A");
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_locks_a_restarted_node_again_so_a_second_restart_keeps_the_majority() {
    let b = two_restarts_then_b(false).await;
    assert!(
        matches!(b, Err(GrabError::Busy(_))),
        "B is kept out (busy): {b:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extending_only_where_held_erodes_the_majority_and_a_second_restart_lets_b_in() {
    let b = two_restarts_then_b(true).await;
    assert!(
        b.is_ok(),
        "B builds a majority on the two restarted nodes: {b:?}"
    );
}

/// A's lock, its extensions stopped, left to expire; then the extension
/// before its last check, and what the check says.
async fn extend_after_expiry(expired: bool) -> (Result<(), LockLost>, Vec<RedisServer>, LockGuard) {
    let (nodes, d, lock) = three_nodes();
    let cx = GrabContext {
        deps: &d,
        faults: extending(false, expired),
        pause: false,
    };
    let a = lock.acquire(cx, 1).await.expect("A acquires");
    a.lease()
        .expect("an extended lock is a lease")
        .stop_renewing();
    // Past the 600 ms TTL the keys expire on their own (the validity ran
    // out before).
    eventually("the keys expire", MS(5_000), || {
        std::future::ready(if nodes.iter().all(|n| !holds_the_key(n, &a)) {
            Ok(())
        } else {
            Err("a node still holds A's key")
        })
    })
    .await;
    lock.before_last_check(cx, &a).await;
    (a.check_still_held(), nodes, a)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_after_the_validity_ran_out_is_refused() {
    let (check, nodes, a) = extend_after_expiry(false).await;
    assert_eq!(check, Err(LockLost::LeaseLost));
    assert!(
        nodes.iter().all(|n| !holds_the_key(n, &a)),
        "no node was asked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_extend_expired_the_expired_lock_is_locked_anew() {
    let (check, nodes, a) = extend_after_expiry(true).await;
    assert_eq!(
        check,
        Ok(()),
        "the holder goes on as if it had always held it"
    );
    // A majority holds the key anew: what the check's Ok rests on. A node
    // whose answer came after the extension's time budget (a loaded
    // machine) may be left out, as Redlock allows.
    let holding = nodes.iter().filter(|n| holds_the_key(n, &a)).count();
    assert!(holding >= 2, "{holding} of 3 nodes hold A's key anew");
}

/// A granted at a bare majority (node 2 held by another client's key for
/// 300 ms) tops its lock up: with a 30 s TTL the next extension is 10 s
/// away, but A's key is on node 2 within 3 s of the other key expiring.
/// Without the top-up a holder that then lost node 0 or 1 would have to
/// win node 2 back against every contender (CI's redsync-149 `ours`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_granted_at_a_bare_majority_locks_the_missing_node_soon() {
    let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let d = deps(&nodes[0].url(), NO_DB, MS(30_000), MS(300));
    let lock = Redlock::new(&urls, MS(100), 0.01).expect("redlock");
    let cx = GrabContext {
        deps: &d,
        faults: extending(false, false),
        pause: false,
    };
    let _: () = redis::cmd("SET")
        .arg(seckill_app::locking::lock_key(1))
        .arg("someone-else")
        .arg("PX")
        .arg(300)
        .query(&mut nodes[2].conn())
        .expect("set");
    let a = lock
        .acquire(cx, 1)
        .await
        .expect("A acquires on nodes 0 and 1");
    assert!(!holds_the_key(&nodes[2], &a), "node 2 was someone else's");
    let node = &nodes[2];
    eventually("A's key on node 2", MS(3000), || async {
        holds_the_key(node, &a).then_some(()).ok_or("not yet")
    })
    .await;
    lock.release(cx, a).await.expect("release A");
}
