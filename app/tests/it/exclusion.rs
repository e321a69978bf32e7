//! Each lock of the seeds, proven to hold or break as its file says.

use std::sync::Arc;
use std::time::Duration;

use seckill_app::error::GrabError;
use seckill_app::lock::{
    etcd_lease::EtcdLease, fenced::Fenced, mysql_get_lock::MysqlGetLock,
    pg_lock_table::PgLockTable, redlock::Redlock, set_nx_px::SetNxPx,
    set_nx_px_check_del::SetNxPxCheckDel, set_nx_px_token::SetNxPxToken, setnx::Setnx,
    setnx_expire::SetnxExpire, setnx_expire_lua::SetnxExpireLua, setnx_getset::SetnxGetset,
    watchdog::Watchdog, zk_ephemeral_seq::ZkEphemeralSeq,
};
use seckill_app::locking::{DistributedLock, Held, LockLost, Released};
use seckill_app::strategy::{Deps, GrabContext};
use seckill_testkit::{eventually, signal_process};

use crate::checker::{self, deps, no_faults};
use crate::harness::{
    fresh_database, mysql_test_url, until_lock_waiters, AppOptions, EtcdServer, RedisServer,
    TestApp, ZkServer,
};

const MS: fn(u64) -> Duration = Duration::from_millis;
const NO_DB: &str = "postgres://postgres@127.0.0.1:1/none";

/// `n` redis-servers as Redlock's nodes (node 0 is also the service's
/// Redis), the deps for `ttl` and `wait`, and Redlock on them: 50 ms per
/// node, the docs' drift factor 0.01.
fn redlock_on(n: usize, ttl: Duration, wait: Duration) -> (Vec<RedisServer>, Arc<Deps>, Redlock) {
    let nodes: Vec<RedisServer> = (0..n).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let d = deps(&nodes[0].url(), NO_DB, ttl, wait);
    let lock = Redlock::new(&urls, MS(50), 0.01).expect("redlock");
    (nodes, d, lock)
}

fn pttl(redis: &RedisServer) -> i64 {
    redis::cmd("PTTL")
        .arg("lock:product:1")
        .query(&mut redis.conn())
        .expect("pttl")
}

/// Wait until no server of `nodes` has product 1's lock key any more:
/// expired by its TTL on the server's own clock (or deleted).
async fn until_the_key_is_gone(nodes: &[RedisServer], within: Duration) {
    eventually("the lock key is gone", within, || {
        let left: Vec<usize> = nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| {
                redis::cmd("EXISTS")
                    .arg("lock:product:1")
                    .query::<i64>(&mut node.conn())
                    .expect("exists")
                    == 1
            })
            .map(|(i, _)| i)
            .collect();
        std::future::ready(if left.is_empty() {
            Ok(())
        } else {
            Err(format!("still on nodes {left:?}"))
        })
    })
    .await;
}

/// Let `span` go by while every task runs on.
///
/// A fixed wait is the point wherever this is called: the test asks what
/// a lock says once that much time has passed — a TTL, a lease or a
/// validity run out or not yet, a holder still inside, a server kept
/// frozen past a timeout. No state marks that moment; each call says why.
async fn let_pass(span: Duration) {
    tokio::time::sleep(span).await;
}

/// Freeze this whole process for `span`: this runtime's only thread
/// blocks, as under `SIGSTOP` or a stop-the-world pause, so no task (no
/// renewal, no keep-alive) runs meanwhile.
///
/// A fixed wait is the point: the freeze is the fault these tests inject,
/// and it must outlast a lease that the servers keep on their own clocks.
fn freeze_this_process(span: Duration) {
    std::thread::sleep(span);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_longer_than_the_ttl() {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(100), MS(5_000));

    // v3: plain DEL — overlaps, and frees the next holder's lock.
    let report = checker::run(Arc::new(SetNxPx), d.clone(), no_faults(), 4, 3, MS(250)).await;
    eprintln!("set-nx-px: {report:?}");
    assert!(report.overlaps > 0, "set-nx-px overlaps: {report:?}");
    assert!(
        report.freed_another() > 0,
        "set-nx-px frees another's lock: {report:?}"
    );

    // v5: the compare-and-delete never frees another's lock, but the
    // overlap itself still happens; the late releases find NotOwner.
    let report = checker::run(
        Arc::new(SetNxPxToken::new()),
        d.clone(),
        no_faults(),
        4,
        3,
        MS(250),
    )
    .await;
    eprintln!("set-nx-px-token: {report:?}");
    assert!(
        report.overlaps > 0,
        "token lock still overlaps past its TTL: {report:?}"
    );
    assert_eq!(
        report.freed_another(),
        0,
        "token lock never frees another's: {report:?}"
    );
    assert!(
        report.not_owner > 0,
        "late releases are refused: {report:?}"
    );

    // The control: work well inside the TTL, no overlap.
    let roomy = deps(&redis.url(), NO_DB, MS(1_000), MS(5_000));
    let report = checker::run(
        Arc::new(SetNxPxToken::new()),
        roomy,
        no_faults(),
        4,
        3,
        MS(20),
    )
    .await;
    assert_eq!(report.overlaps, 0, "{report:?}");
    assert_eq!(report.entries, 12, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_then_delete_frees_another_holders_lock() {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(100), MS(5_000));
    // Work fits in the TTL, but the key expires between GET and DEL.
    let mut faults = no_faults();
    faults.release_gap_ms = 60;
    let report = checker::run(Arc::new(SetNxPxCheckDel), d.clone(), faults, 4, 3, MS(80)).await;
    eprintln!("set-nx-px-check-del: {report:?}");
    assert!(
        report.freed_another() > 0,
        "v4 frees another's lock: {report:?}"
    );
    assert!(
        report.overlaps > 0,
        "and so two holders overlap: {report:?}"
    );
    // The atomic release with the same work and gap (and a TTL with room
    // for a loaded machine's hiccups): nothing freed, no overlap.
    let roomy = deps(&redis.url(), NO_DB, MS(400), MS(5_000));
    let report = checker::run(Arc::new(SetNxPxToken::new()), roomy, faults, 4, 3, MS(80)).await;
    assert_eq!(report.freed_another(), 0, "{report:?}");
    assert_eq!(report.overlaps, 0, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_the_lock_through_three_leases() {
    let redis = RedisServer::start();
    let lease = MS(450);
    let d = deps(&redis.url(), NO_DB, lease, MS(10_000));
    let lock = Arc::new(Watchdog::new(&redis.url()).expect("watchdog"));
    let report = checker::run(lock, d.clone(), no_faults(), 3, 1, lease * 3).await;
    eprintln!("watchdog: {report:?}");
    assert_eq!(report.entries, 3, "{report:?}");
    assert_eq!(report.overlaps, 0, "{report:?}");
    let renewed = d
        .metrics
        .lock_renewals
        .with_label_values(&["watchdog", "renewed"])
        .get();
    // 3 holders × 1.35 s of work, renewed every 150 ms.
    assert!(renewed >= 3 * 6, "renewals: {renewed}");
    assert_eq!(
        d.metrics.lock_lost.with_label_values(&["watchdog"]).get(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_signals_a_lost_lease_and_is_reentrant() {
    let redis = RedisServer::start();
    let lease = MS(300);
    let d = deps(&redis.url(), NO_DB, lease, MS(1_000));
    let lock = Watchdog::new(&redis.url()).expect("watchdog");
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };

    let guard = lock.acquire(cx, 1).await.expect("acquire");
    let inner = lock
        .reenter(cx, &guard)
        .await
        .expect("reenter")
        .expect("same owner re-enters");
    let count: i64 = redis::cmd("HGET")
        .arg("lock:product:1")
        .arg(&guard.token)
        .query(&mut redis.conn())
        .expect("hget");
    assert_eq!(count, 2);
    assert_eq!(
        lock.release(cx, inner).await.expect("release"),
        Released::Released,
        "one entry given back"
    );
    let count: i64 = redis::cmd("HGET")
        .arg("lock:product:1")
        .arg(&guard.token)
        .query(&mut redis.conn())
        .expect("hget");
    assert_eq!(count, 1, "still held once");
    assert!(guard.check_still_held().is_ok());

    // Someone deletes the lock behind the holder's back (an operator, a
    // failover): the next renewal notices and tells the holder.
    let _: () = redis::cmd("DEL")
        .arg("lock:product:1")
        .query(&mut redis.conn())
        .expect("del");
    eventually("a renewal finds the lock gone", MS(5_000), || {
        std::future::ready(match guard.check_still_held() {
            Err(LockLost::LeaseLost) => Ok(()),
            other => Err(other),
        })
    })
    .await;
    assert_eq!(
        guard.check_still_held(),
        Err(LockLost::LeaseLost),
        "holder is told its lease is lost"
    );
    assert_eq!(
        d.metrics.lock_lost.with_label_values(&["watchdog"]).get(),
        1
    );
    lock.release(cx, guard).await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_wakes_on_the_release_message_not_by_polling() {
    // Two handles are two processes, each with its own pub/sub listener:
    // the waiter's process learns of the release only from the message.
    waiter_wakes_at_the_release(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_in_the_holders_process_wakes_at_the_release() {
    // One handle: its listener skips its own releases, so a prompt wake-up
    // came from the release itself, not from the message or polling.
    waiter_wakes_at_the_release(true).await;
}

/// A waiter blocks on product 1; the holder releases 650 ms later. The
/// waiter polls on its own only every 500 ms (the quiet-wait fallback:
/// at about 0, 500 and 1,000 ms), so without a wake-up it would enter about
/// 350 ms after the release; a wake-up well below that came from the
/// release, not from polling.
async fn waiter_wakes_at_the_release(same_process: bool) {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(30_000), MS(5_000));
    let lock = Arc::new(Watchdog::new(&redis.url()).expect("watchdog"));
    let other = if same_process {
        lock.clone()
    } else {
        Arc::new(Watchdog::new(&redis.url()).expect("watchdog"))
    };
    // Wait until every listener has subscribed, read from the server, not
    // guessed with a sleep. Not `PUBSUB NUMPAT`: since Redis 7 it counts
    // unique patterns, so two listeners on one pattern read 1; each
    // subscribed client shows `psub=1` in `CLIENT LIST TYPE pubsub`.
    let listeners = if same_process { 1 } else { 2 };
    let mut conn = redis.conn();
    let what = format!("{listeners} watchdog listener(s) subscribed");
    eventually(&what, Duration::from_secs(10), || {
        let clients: String = redis::cmd("CLIENT")
            .arg("LIST")
            .arg("TYPE")
            .arg("pubsub")
            .query(&mut conn)
            .expect("CLIENT LIST");
        let subscribed = clients.lines().filter(|l| l.contains(" psub=1 ")).count();
        std::future::ready(if subscribed >= listeners {
            Ok(())
        } else {
            Err(format!("{subscribed} subscribed"))
        })
    })
    .await;
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let holder = lock.acquire(cx, 1).await.expect("acquire");
    let waiter_deps = d.clone();
    let waiter = tokio::spawn(async move {
        let cx = GrabContext {
            deps: &waiter_deps,
            faults: no_faults(),
            pause: false,
        };
        let guard = other.acquire(cx, 1).await.expect("waiter acquires");
        let woke = tokio::time::Instant::now();
        other.release(cx, guard).await.expect("release");
        woke
    });
    // A fixed wait is the point: the release comes between the waiter's
    // own polls at 500 and 1,000 ms.
    let_pass(MS(650)).await;
    let released = tokio::time::Instant::now();
    lock.release(cx, holder).await.expect("release");
    let woke = waiter.await.expect("waiter");
    let delay = woke - released;
    eprintln!("waiter (same process: {same_process}) woke {delay:?} after the release");
    assert!(
        delay < MS(200),
        "woken by the release, not the fallback: {delay:?}"
    );
    let attempts = d
        .metrics
        .lock_attempts
        .with_label_values(&["watchdog"])
        .get();
    assert!(attempts <= 4, "waiting is not polling: {attempts} attempts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_locks_setnx_forever_and_ttl_locks_recover() {
    let redis = RedisServer::start();
    // Generous against a loaded machine: the "still locked" checks must
    // finish well inside the TTL.
    let ttl = MS(500);
    let d = deps(&redis.url(), NO_DB, ttl, MS(100));
    let reset = || {
        let _: () = redis::cmd("DEL")
            .arg("lock:product:1")
            .query(&mut redis.conn())
            .expect("del");
    };

    /// When a killed holder dies: once its acquire returned, or already
    /// once the lock's key is set (an acquire inside its SETNX-to-PEXPIRE
    /// gap, which does not return before the gap ends).
    enum Kill {
        Holding,
        KeySet,
    }

    // A holder task aborted mid-section, without releasing.
    async fn kill_holder(
        lock: Arc<dyn DistributedLock>,
        d: Arc<seckill_app::strategy::Deps>,
        faults: seckill_app::faults::Faults,
        redis: &RedisServer,
        when: Kill,
    ) {
        let (acquired, holding) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let cx = GrabContext {
                deps: &d,
                faults,
                pause: false,
            };
            let guard = lock.acquire(cx, 1).await.expect("acquire");
            let _ = acquired.send(());
            // Inside until killed.
            std::future::pending::<()>().await;
            drop(guard);
        });
        match when {
            Kill::Holding => holding.await.expect("the holder acquires"),
            Kill::KeySet => {
                let mut conn = redis.conn();
                eventually("the holder's SETNX set the key", MS(5_000), || {
                    let set: bool = redis::cmd("EXISTS")
                        .arg("lock:product:1")
                        .query(&mut conn)
                        .expect("exists");
                    std::future::ready(if set { Ok(()) } else { Err("no key yet") })
                })
                .await;
            }
        }
        task.abort();
        let _ = task.await;
    }
    async fn can_acquire(lock: &dyn DistributedLock, d: &seckill_app::strategy::Deps) -> bool {
        let cx = GrabContext {
            deps: d,
            faults: no_faults(),
            pause: false,
        };
        match lock.acquire(cx, 1).await {
            Ok(guard) => {
                lock.release(cx, guard).await.expect("release");
                true
            }
            Err(GrabError::Busy(_)) => false,
            Err(e) => panic!("acquire failed with something else than busy: {e}"),
        }
    }

    // v1: no expiry at all.
    kill_holder(
        Arc::new(Setnx),
        d.clone(),
        no_faults(),
        &redis,
        Kill::Holding,
    )
    .await;
    // A fixed wait is the point: still locked twice its TTL later.
    let_pass(ttl * 2).await;
    assert!(!can_acquire(&Setnx, &d).await, "setnx stays locked");
    assert_eq!(pttl(&redis), -1, "no expiry on the key");
    reset();

    // v2, killed between SETNX and PEXPIRE (the gap fault widens the window).
    let mut gap = no_faults();
    gap.setnx_expire_gap_ms = 500;
    kill_holder(Arc::new(SetnxExpire), d.clone(), gap, &redis, Kill::KeySet).await;
    // A fixed wait is the point: still locked twice its TTL later.
    let_pass(ttl * 2).await;
    assert!(
        !can_acquire(&SetnxExpire, &d).await,
        "setnx-expire stays locked"
    );
    assert_eq!(pttl(&redis), -1, "the EXPIRE never ran");
    reset();

    // The TTL locks come back after the TTL. (The fencing counter exists,
    // so `fenced` needs no database to seed it.)
    let _: () = redis::cmd("SET")
        .arg("fence:product:1")
        .arg(0)
        .query(&mut redis.conn())
        .expect("set");
    let ttl_locks: Vec<(&str, Arc<dyn DistributedLock>)> = vec![
        ("setnx-expire", Arc::new(SetnxExpire)),
        ("setnx-expire-lua", Arc::new(SetnxExpireLua::new())),
        ("set-nx-px", Arc::new(SetNxPx)),
        ("set-nx-px-check-del", Arc::new(SetNxPxCheckDel)),
        ("set-nx-px-token", Arc::new(SetNxPxToken::new())),
        ("fenced", Arc::new(Fenced::new())),
        (
            "watchdog",
            Arc::new(Watchdog::new(&redis.url()).expect("watchdog")),
        ),
    ];
    for (name, lock) in ttl_locks {
        kill_holder(lock.clone(), d.clone(), no_faults(), &redis, Kill::Holding).await;
        assert!(
            !can_acquire(lock.as_ref(), &d).await,
            "{name}: locked right after the kill"
        );
        until_the_key_is_gone(std::slice::from_ref(&redis), ttl * 10).await;
        assert!(
            can_acquire(lock.as_ref(), &d).await,
            "{name}: recovers after the TTL"
        );
        reset();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_lock_table_holds_and_a_dead_holder_blocks_until_the_sweep() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    // The migrations create the lock table.
    let pool = sqlx::PgPool::connect(&db).await.expect("db");
    seckill_app::db::migrate(&pool).await.expect("migrate");
    let d = deps(&redis.url(), &db, MS(400), MS(5_000));
    let report = checker::run(Arc::new(PgLockTable), d.clone(), no_faults(), 4, 3, MS(20)).await;
    assert_eq!(report.overlaps, 0, "{report:?}");
    assert_eq!(report.entries, 12, "{report:?}");

    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let abandoned = PgLockTable.acquire(cx, 1).await.expect("acquire");
    drop(abandoned); // the holder dies: its row stays
    let started = tokio::time::Instant::now();
    let guard = PgLockTable
        .acquire(cx, 1)
        .await
        .expect("acquired after the sweep");
    let waited = started.elapsed();
    assert!(
        waited >= MS(300),
        "blocked until the row aged past the TTL: {waited:?}"
    );
    PgLockTable.release(cx, guard).await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_skew_gives_setnx_getset_two_holders() {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(300), MS(2_000));
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    // Same clocks: the second replica waits.
    let honest = SetnxGetset::new(0);
    let held = honest.acquire(cx, 1).await.expect("acquire");
    let mut short = (*d).clone();
    short.lock_wait = MS(100);
    let short_cx = GrabContext {
        deps: &short,
        faults: no_faults(),
        pause: false,
    };
    assert!(
        matches!(
            SetnxGetset::new(0).acquire(short_cx, 1).await,
            Err(GrabError::Busy(_))
        ),
        "same clock: excluded (busy)"
    );
    // A replica whose clock runs 1 s ahead sees the live lock as expired.
    let ahead = SetnxGetset::new(1_000);
    let second = ahead
        .acquire(short_cx, 1)
        .await
        .expect("skewed replica takes over");
    eprintln!("two holders at once: {} and {}", held.token, second.token);
    honest.release(cx, held).await.expect("release");
    ahead.release(cx, second).await.expect("release");

    // Under contention, with skew on half the replicas, on one timeline:
    // two holders inside at once.
    let report = checker::run_mixed(
        vec![
            Arc::new(SetnxGetset::new(0)),
            Arc::new(SetnxGetset::new(1_000)),
        ],
        d.clone(),
        no_faults(),
        // Enough rounds that a skewed task tries while an honest one
        // holds, even when a loaded machine serialises the tasks.
        6,
        6,
        MS(100),
    )
    .await;
    eprintln!("setnx-getset skewed: {report:?}");
    assert!(report.overlaps > 0, "skew gives overlaps: {report:?}");
    assert!(report.max_inside >= 2, "two holders at once: {report:?}");

    // The control: the same run with agreeing clocks has none.
    let report = checker::run_mixed(
        vec![Arc::new(SetnxGetset::new(0)), Arc::new(SetnxGetset::new(0))],
        d.clone(),
        no_faults(),
        4,
        3,
        MS(20),
    )
    .await;
    assert_eq!(report.overlaps, 0, "same clocks: {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_lock_excludes_a_standard_client() {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(10_000), MS(1_000));
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let lock = SetNxPxToken::new();
    let guard = lock.acquire(cx, 1).await.expect("acquire");
    let port = redis.port.to_string();
    let redis_cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &port])
            .args(args)
            .output()
            .expect("redis-cli on PATH");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(
        redis_cli(&["SET", "lock:product:1", "cli", "NX", "PX", "10000"]),
        "",
        "nil: excluded"
    );
    lock.release(cx, guard).await.expect("release");
    assert_eq!(
        redis_cli(&["SET", "lock:product:1", "cli", "NX", "PX", "10000"]),
        "OK"
    );
    assert!(
        matches!(lock.acquire(cx, 1).await, Err(GrabError::Busy(_))),
        "and the client excludes the service"
    );
    // The watchdog's hash lock is excluded by the client's string key too.
    let watchdog = Watchdog::new(&redis.url()).expect("watchdog");
    assert!(matches!(
        watchdog.acquire(cx, 1).await,
        Err(GrabError::Busy(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_tolerates_a_minority_and_fails_fast_without_a_majority() {
    let (mut nodes, d, lock) = redlock_on(5, MS(1_000), MS(2_000));
    let lock = Arc::new(lock);

    nodes[3].stop();
    nodes[4].stop();
    let report = checker::run(lock.clone(), d.clone(), no_faults(), 4, 3, MS(20)).await;
    eprintln!("redlock, 2 of 5 down: {report:?}");
    assert_eq!(report.entries, 12, "acquires with 3 of 5: {report:?}");
    assert_eq!(report.overlaps, 0, "{report:?}");

    nodes[2].stop();
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let started = tokio::time::Instant::now();
    let result = lock.acquire(cx, 1).await;
    let took = started.elapsed();
    assert!(
        matches!(
            result,
            Err(GrabError::Unavailable { .. } | GrabError::Busy(_))
        ),
        "3 of 5 down: no lock (503, or busy when the refusals look like timeouts): {result:?}"
    );
    // Refused connections answer 503 at once; on a loaded machine they
    // may show up as timeouts instead, which are retried until the budget.
    assert!(
        took < d.lock_wait + MS(250),
        "answers within its wait budget: {took:?}"
    );
    eprintln!("redlock, 3 of 5 down: failed in {took:?}");
    assert!(d.metrics.redlock_quorum_failures.get() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_holder_past_its_validity_fails_the_check() {
    let ttl = MS(300);
    let (nodes, d, lock) = redlock_on(3, ttl, MS(500));
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let guard = lock.acquire(cx, 1).await.expect("acquire");
    assert_eq!(guard.check_still_held(), Ok(()));
    // Redlock renews nothing: the validity (TTL − elapsed − drift) runs out
    // before the keys expire, at the latest once they are gone.
    until_the_key_is_gone(&nodes, ttl * 10).await;
    assert_eq!(guard.check_still_held(), Err(LockLost::ValidityExpired));
    assert_eq!(
        lock.release(cx, guard).await.expect("release"),
        Released::NotOwner,
        "the keys expired with the validity"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_during_redlock_acquisition_is_counted_once_in_its_validity() {
    let ttl = MS(1000);
    let (nodes, d, lock) = redlock_on(3, ttl, MS(500));
    let mut faults = no_faults();
    faults.acquire_pause_ms = 400;
    let cx = GrabContext {
        deps: &d,
        faults,
        pause: false,
    };
    let guard = lock.acquire(cx, 1).await.expect("acquire");
    // 400 ms of the TTL went in the pause: the lock is trusted until
    // TTL − drift (988 ms) after the SETs, so 300 ms more is inside it;
    // counting the pause twice would have ended it at 588 ms. A fixed wait
    // is the point: the check at that moment.
    let_pass(MS(300)).await;
    assert_eq!(guard.check_still_held(), Ok(()));
    // The validity ends before the keys expire (1,000 ms after the SETs).
    until_the_key_is_gone(&nodes, ttl * 10).await;
    assert_eq!(guard.check_still_held(), Err(LockLost::ValidityExpired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_loses_safety_when_a_node_restarts_without_persistence() {
    let (mut nodes, d, lock) = redlock_on(5, MS(10_000), MS(500));
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };

    // A holds nodes 0, 1, 2 (3 and 4 are unreachable at that moment).
    nodes[3].stop();
    nodes[4].stop();
    let a = lock.acquire(cx, 1).await.expect("A acquires on 0,1,2");
    // 3 and 4 come back; node 2 crashes and restarts empty (no persistence).
    nodes[3].restart();
    nodes[4].restart();
    nodes[2].stop();
    nodes[2].restart();
    // B is asked again until the client's connections to the restarted
    // nodes are re-established (each reconnects at its next command).
    let b = eventually("B builds a majority from 2, 3, 4", MS(5_000), || {
        lock.acquire(cx, 1)
    })
    .await;
    assert!(
        a.check_still_held().is_ok() && b.check_still_held().is_ok(),
        "two holders at once"
    );
    eprintln!(
        "redlock after a restart without persistence: A={} B={} both valid",
        a.token, b.token
    );
    lock.release(cx, a).await.expect("release");
    lock.release(cx, b).await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlocks_majority_counter_grows_while_a_node_keeps_it_and_goes_back_when_it_loses_it() {
    let (nodes, d, _) = redlock_on(5, MS(10_000), MS(500));
    // A node that answers after its per-node timeout counts as no grant but
    // has counted (INCR) all the same, and the retry counts again: a second
    // per node (not the 50 ms of `redlock_on`) keeps every vote in time.
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let lock = Redlock::new(&urls, MS(1_000), 0.01).expect("redlock");
    let mut faults = no_faults();
    faults.check_revision = true;
    let cx = GrabContext {
        deps: &d,
        faults,
        pause: false,
    };
    // Which nodes grant: another client's key on the others (they answer
    // "held", and a node that does not grant does not count).
    let held_by_another = |on: &[usize]| {
        for (i, node) in nodes.iter().enumerate() {
            let mut conn = node.conn();
            if on.contains(&i) {
                let _: () = redis::cmd("SET")
                    .arg("lock:product:1")
                    .arg("another")
                    .query(&mut conn)
                    .expect("set");
            } else {
                let _: () = redis::cmd("DEL")
                    .arg("lock:product:1")
                    .query(&mut conn)
                    .expect("del");
            }
        }
    };
    // The release decides at the quorum and finishes the other nodes'
    // deletions in the background; a node that lacks the compare-and-delete
    // script (new, or flushed) needs a second request, sent after the next
    // attempt's vote on the same connection. That vote would find our own
    // key, the attempt would fail and its retry count again (CI saw tokens
    // 1 then 3). So each take waits until no node keeps its key.
    let take = async || {
        let guard = lock.acquire(cx, 1).await.expect("a majority grants");
        let token = guard.fence(faults).expect("a token");
        let ours = guard.token.clone();
        lock.release(cx, guard).await.expect("release");
        eventually("no node keeps our key", MS(5_000), || {
            let kept: Vec<usize> = nodes
                .iter()
                .enumerate()
                .filter(|(_, node)| {
                    let value: Option<String> = redis::cmd("GET")
                        .arg("lock:product:1")
                        .query(&mut node.conn())
                        .expect("get");
                    value.as_deref() == Some(ours.as_str())
                })
                .map(|(i, _)| i)
                .collect();
            std::future::ready(if kept.is_empty() {
                Ok(())
            } else {
                Err(format!("kept on nodes {kept:?}"))
            })
        })
        .await;
        token
    };
    // Two holders on nodes 0, 1, 2: tokens 1 and 2.
    held_by_another(&[3, 4]);
    let tokens = [take().await, take().await];
    assert_eq!(tokens, [1, 2]);
    // Nodes 2, 3, 4: node 2 shares both majorities and kept its count, so
    // the token still grows.
    held_by_another(&[0, 1]);
    let grown = take().await;
    assert_eq!(grown, 3, "node 2's count (3) is the largest of 2, 3, 4");
    // Node 2 loses its data, as a restart without persistence would
    // (FLUSHALL: the same empty node, its connections kept): the same
    // majority's largest count is now below the token already handed out.
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut nodes[2].conn())
        .expect("flushall");
    let back = take().await;
    eprintln!("redlock's majority counter: {tokens:?}, then {grown}, then {back} after node 2 lost its data");
    assert_eq!(back, 2, "nodes 3 and 4 count 2, node 2 counts 1 again");
    assert!(back < grown, "the token went backwards");
    // Without the switch Redlock hands out no token at all.
    let plain = GrabContext {
        faults: no_faults(),
        ..cx
    };
    let guard = lock.acquire(plain, 1).await.expect("acquire");
    assert_eq!(guard.fence(no_faults()), None);
    lock.release(plain, guard).await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_deletes_a_key_a_slow_node_grants_after_the_decision() {
    let (nodes, d, lock) = redlock_on(5, MS(10_000), MS(2_000));
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    // Connect to every node first (a paused node could not be dialled).
    let warm = lock.acquire(cx, 2).await.expect("warm-up");
    lock.release(cx, warm).await.expect("release");
    // Node 4 is frozen: the SET NX PX of the next acquire reaches its socket
    // but is answered only after the decision (at quorum, from 0–3), and so
    // is the compare-and-delete of the release, which this node, never
    // having run the script, answers NOSCRIPT: the script must be loaded
    // and sent again, or the late key outlives the release.
    let pid = nodes[4].pid();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut nodes[4].conn())
        .expect("script flush");
    signal_process(pid, "-STOP");
    let guard = lock.acquire(cx, 1).await;
    let released = match guard {
        Ok(guard) => lock.release(cx, guard).await,
        Err(e) => {
            signal_process(pid, "-CONT");
            panic!("4 of 5 nodes answer: the lock is taken ({e:?})");
        }
    };
    // A fixed wait is the point: node 4 stays frozen longer than the node
    // timeout, so its late answers come past the decision.
    let_pass(MS(300)).await;
    signal_process(pid, "-CONT");
    assert!(
        matches!(released, Ok(Released::Released)),
        "released at quorum: {released:?}"
    );
    // Gone well inside its 10 s TTL: deleted after the release, not expired.
    until_the_key_is_gone(&nodes, MS(3_000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_holder_whose_renewal_is_stuck_fails_the_check_at_its_deadline() {
    let redis = RedisServer::start();
    let lease = MS(300);
    let d = deps(&redis.url(), NO_DB, lease, MS(1_000));
    let lock = Watchdog::new(&redis.url()).expect("watchdog");
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let guard = lock.acquire(cx, 1).await.expect("acquire");
    assert!(guard.check_still_held().is_ok());
    // Redis stops answering (frozen, like a server stuck on a slow command
    // or a link that drops everything): the next renewal is sent and hangs.
    let pid = redis.pid();
    signal_process(pid, "-STOP");
    // A fixed wait is the point: the holder works on past its lease's
    // deadline while the renewal hangs.
    let_pass(lease + MS(100)).await;
    let lost = guard.lease().expect("lease").status().is_lost();
    let check = guard.check_still_held();
    signal_process(pid, "-CONT");
    assert!(
        !lost,
        "no renewal has answered: nobody marked the lease lost"
    );
    assert!(
        matches!(check, Err(LockLost::LeaseExpired)),
        "past its deadline the holder must not commit: {check:?}"
    );
    // The key did expire meanwhile (Redis expires by its own clock).
    lock.release(cx, guard).await.expect("release");
}

#[tokio::test(flavor = "current_thread")]
async fn a_frozen_watchdog_holder_fails_the_check_after_its_deadline() {
    let redis = RedisServer::start();
    let lease = MS(200);
    let d = deps(&redis.url(), NO_DB, lease, MS(1_000));
    let lock = Watchdog::new(&redis.url()).expect("watchdog");
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let guard = lock.acquire(cx, 1).await.expect("acquire");
    assert!(guard.check_still_held().is_ok());
    // The whole process freezes (this runtime's only thread blocks, as under
    // SIGSTOP or a stop-the-world pause): the renewal task cannot run.
    freeze_this_process(lease + MS(150));
    assert!(
        !guard.lease().expect("lease").status().is_lost(),
        "no renewal ran: nobody marked the lease lost"
    );
    assert_eq!(
        guard.check_still_held(),
        Err(LockLost::LeaseExpired),
        "woken past its deadline, the holder must not commit"
    );
    assert_eq!(pttl(&redis), -2, "and indeed the key expired in Redis");
    let _: () = redis::cmd("SET")
        .arg("lock:product:1")
        .arg("someone-else")
        .arg("PX")
        .arg(10_000)
        .query(&mut redis.conn())
        .expect("another holder enters");
    assert_eq!(
        lock.release(cx, guard).await.expect("release"),
        Released::NotOwner
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentered_watchdog_lock_stays_renewed_when_the_outer_guard_is_released_first() {
    let redis = RedisServer::start();
    let lease = MS(300);
    let d = deps(&redis.url(), NO_DB, lease, MS(1_000));
    let lock = Watchdog::new(&redis.url()).expect("watchdog");
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let count = |token: &str| -> Option<i64> {
        redis::cmd("HGET")
            .arg("lock:product:1")
            .arg(token)
            .query(&mut redis.conn())
            .expect("hget")
    };
    let renewed = || {
        d.metrics
            .lock_renewals
            .with_label_values(&["watchdog", "renewed"])
            .get()
    };
    let outer = lock.acquire(cx, 1).await.expect("acquire");
    let token = outer.token.clone();
    let first = lock
        .reenter(cx, &outer)
        .await
        .expect("reenter")
        .expect("re-entered");
    let second = lock
        .reenter(cx, &first)
        .await
        .expect("reenter")
        .expect("re-entered");
    assert_eq!(count(&token), Some(3));

    // The outer entry goes first; the inner ones still hold the lock.
    lock.release(cx, outer).await.expect("release outer");
    assert_eq!(count(&token), Some(2));
    let before = renewed();
    // A fixed wait is the point: the key must outlive three leases.
    let_pass(lease * 3).await;
    assert_eq!(count(&token), Some(2), "the key outlived three leases");
    assert!(pttl(&redis) > 0, "and has a lease");
    assert!(
        renewed() >= before + 4,
        "renewed meanwhile: {} renewals",
        renewed() - before
    );
    assert!(first.check_still_held().is_ok());
    assert!(second.check_still_held().is_ok());

    // The last release stops the renewals and frees the lock.
    lock.release(cx, first).await.expect("release");
    assert_eq!(
        lock.release(cx, second).await.expect("release"),
        Released::Released
    );
    assert_eq!(pttl(&redis), -2, "gone at count 0");
    let after = renewed();
    // A fixed wait is the point: a whole lease in which no renewal may come.
    let_pass(lease).await;
    assert_eq!(renewed(), after, "no renewal after the count reached 0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_reseeds_a_lost_counter_from_the_database() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url()).strategy("fenced")).await;
    app.reset(1, 10).await;
    let (status, body) = app.grab(1, 1, 1).await;
    assert_eq!(status, 201, "{body}");
    // Earlier holders registered tokens up to 40; then Redis lost the
    // counter (a restart without persistence).
    let pool = sqlx::PgPool::connect(&db).await.expect("db");
    sqlx::query("UPDATE products SET fence_token = 40 WHERE id = 1")
        .execute(&pool)
        .await
        .expect("update");
    let _: () = redis::cmd("DEL")
        .arg("fence:product:1")
        .query(&mut redis.conn())
        .expect("del");

    let (status, body) = app.grab(1, 2, 1).await;
    assert_eq!(status, 201, "the next grab is not rejected: {body}");
    let token = body["fence_token"].as_i64().expect("fence_token");
    assert!(token > 40, "token {token} above the database's 40");
    let (status, body) = app.grab(1, 3, 1).await;
    assert_eq!(status, 201, "{body}");
    assert!(body["fence_token"].as_i64().expect("fence_token") > token);
    let audit = app.audit(1).await;
    assert_eq!(audit["orders"], 3, "{audit}");
    assert_eq!(audit["lost_updates"], 0, "{audit}");
    assert_eq!(
        app.state
            .deps
            .metrics
            .fence_rejections
            .with_label_values(&["fenced"])
            .get(),
        0
    );
    app.stop().await;
}

// The coordination-service locks (issue 16): each against a real server.

fn coordination_cx(d: &seckill_app::strategy::Deps) -> GrabContext<'_> {
    GrabContext {
        deps: d,
        faults: no_faults(),
        pause: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_get_lock_excludes_and_a_dead_session_frees_it_at_once() {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(10_000), MS(5_000));
    let lock = Arc::new(MysqlGetLock::new(Some(&mysql_test_url()), 8).expect("pool"));
    let report = checker::run(lock.clone(), d.clone(), no_faults(), 4, 3, MS(20)).await;
    eprintln!("mysql-get-lock: {report:?}");
    assert_eq!(report.overlaps, 0, "{report:?}");
    assert_eq!(report.entries, 12, "{report:?}");
    assert_eq!(report.released, 12, "{report:?}");

    // A product of its own: MariaDB's lock names are server-wide.
    let product = 16_001;
    let cx = coordination_cx(&d);
    let mut short = (*d).clone();
    short.lock_wait = MS(200);
    let short_cx = coordination_cx(&short);
    let held = lock.acquire(cx, product).await.expect("acquire");
    assert!(
        matches!(
            lock.acquire(short_cx, product).await,
            Err(GrabError::Busy(_))
        ),
        "held by a live session: busy"
    );
    // The holder dies without releasing: its connection closes (it is
    // never pooled again) and the server frees the lock — no TTL to wait.
    drop(held);
    let started = tokio::time::Instant::now();
    let next = lock
        .acquire(cx, product)
        .await
        .expect("freed by the session's end");
    let waited = started.elapsed();
    eprintln!("mysql-get-lock: next holder after a dead session in {waited:?}");
    assert!(
        waited < MS(2_000),
        "freed at once, not after a TTL: {waited:?}"
    );
    assert_eq!(
        lock.release(cx, next).await.expect("release"),
        Released::Released
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_lease_excludes_under_contention_and_hands_out_growing_revisions() {
    let redis = RedisServer::start();
    let etcd = EtcdServer::start();
    let d = deps(&redis.url(), NO_DB, MS(2_000), MS(5_000));
    let lock = Arc::new(EtcdLease::new(&[etcd.url()]));
    let report = checker::run(lock.clone(), d.clone(), no_faults(), 4, 3, MS(20)).await;
    eprintln!("etcd-lease: {report:?}");
    assert_eq!(report.overlaps, 0, "{report:?}");
    assert_eq!(report.entries, 12, "{report:?}");
    assert_eq!(report.released, 12, "{report:?}");

    let cx = coordination_cx(&d);
    let first = lock.acquire(cx, 1).await.expect("acquire");
    let first_revision = first.revision().expect("a revision");
    lock.release(cx, first).await.expect("release");
    let second = lock.acquire(cx, 1).await.expect("acquire");
    assert!(
        second.revision().expect("a revision") > first_revision,
        "the next holder's revision is larger: a fencing token"
    );
    assert!(
        !matches!(second.held, Held::Fenced(_)),
        "not used as the database fence"
    );
    lock.release(cx, second).await.expect("release");
}

#[tokio::test(flavor = "current_thread")]
async fn a_frozen_etcd_holder_loses_its_lease_while_it_still_works() {
    let etcd = EtcdServer::start();
    // 1 s asked; etcd grants at least its minimum (2 s on one node).
    let a_release = frozen_holder_is_overtaken(
        &EtcdLease::new(&[etcd.url()]),
        &EtcdLease::new(&[etcd.url()]), // another replica
        MS(1_000),
        MS(3_500),
    )
    .await;
    assert_eq!(a_release.expect("release"), Released::NotOwner);
}

/// A acquires product 1 through `a_lock`; then its whole process freezes
/// for `freeze` (this runtime's only thread blocks, as under `SIGSTOP` or a
/// stop-the-world pause): no renewal is sent and the server lets A's lease
/// go. Woken, A must not trust its lock; B (`b_lock`, another replica)
/// acquires it with a higher revision — a fence that would stop A's stale
/// write, if the database checked it — and releases it. Returns how A's
/// release went.
async fn frozen_holder_is_overtaken(
    a_lock: &dyn DistributedLock,
    b_lock: &dyn DistributedLock,
    ttl: Duration,
    freeze: Duration,
) -> Result<Released, GrabError> {
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, ttl, MS(5_000));
    let cx = coordination_cx(&d);
    let a = a_lock.acquire(cx, 1).await.expect("A acquires");
    assert!(a.check_still_held().is_ok());
    freeze_this_process(freeze);
    assert_eq!(
        a.check_still_held(),
        Err(LockLost::LeaseExpired),
        "woken past its lease (no renewal could run), A must not commit"
    );
    let b = b_lock
        .acquire(cx, 1)
        .await
        .expect("B acquires: the server let A's lease go");
    eprintln!(
        "{} after a pause: A (revision {:?}) still working, B (revision {:?}) holds",
        a_lock.name(),
        a.revision(),
        b.revision()
    );
    assert!(b.revision() > a.revision(), "B's revision fences A's");
    let a_release = a_lock.release(cx, a).await;
    assert_eq!(
        b_lock.release(cx, b).await.expect("release"),
        Released::Released
    );
    a_release
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_ephemeral_seq_excludes_under_contention_and_withdraws_on_timeout() {
    let redis = RedisServer::start();
    let zk = ZkServer::start();
    let d = deps(&redis.url(), NO_DB, MS(2_000), MS(5_000));
    let lock = Arc::new(ZkEphemeralSeq::new(Some(&zk.url())));
    let report = checker::run(lock.clone(), d.clone(), no_faults(), 4, 3, MS(20)).await;
    eprintln!("zk-ephemeral-seq: {report:?}");
    assert_eq!(report.overlaps, 0, "{report:?}");
    assert_eq!(report.entries, 12, "{report:?}");
    assert_eq!(report.released, 12, "{report:?}");

    let cx = coordination_cx(&d);
    let held = lock.acquire(cx, 1).await.expect("acquire");
    let mut short = (*d).clone();
    short.lock_wait = MS(200);
    assert!(
        matches!(
            lock.acquire(coordination_cx(&short), 1).await,
            Err(GrabError::Busy(_))
        ),
        "held: busy"
    );
    lock.release(cx, held).await.expect("release");
    // The waiter that gave up withdrew its node: the next one enters.
    let next = lock.acquire(cx, 1).await.expect("acquire");
    assert!(next.revision().is_some());
    assert_eq!(
        lock.release(cx, next).await.expect("release"),
        Released::Released
    );
}

/// The session timeout of the ZooKeeper tests that freeze a holder (the
/// test server allows 200 ms – 60 s). The client calls a connection lost
/// when an answer takes 2/5 of it; on a loaded CI machine ZooKeeper once
/// took more than 160 ms (a 400 ms session) and once more than 400 ms (1 s):
/// 4 s gives it 1.6 s.
const ZK_SESSION: Duration = Duration::from_millis(4_000);
/// A freeze that outlasts the session (the server expires it, with its
/// ephemeral node, within a tick of the timeout).
const ZK_FREEZE: Duration = Duration::from_millis(5_500);

#[tokio::test(flavor = "current_thread")]
async fn a_frozen_zk_holder_loses_its_session_while_it_still_works() {
    let zk = ZkServer::start();
    // No pings while frozen: the server expires A's session and its node.
    let a_release = frozen_holder_is_overtaken(
        &ZkEphemeralSeq::new(Some(&zk.url())),
        &ZkEphemeralSeq::new(Some(&zk.url())), // another replica
        ZK_SESSION,
        ZK_FREEZE,
    )
    .await;
    assert!(
        !matches!(a_release, Ok(Released::Released)),
        "A's node is gone"
    );
}

/// A holds the lock, has written inside its open transaction and passed the
/// deadline check; then its whole process freezes past the lease (between
/// the check and the commit: the one window the check cannot close). B
/// acquires and runs its section while A is frozen, A's commit lands, B
/// commits. Returns the stock left of 10 and the orders written.
async fn stale_holder_against_the_database(
    a_lock: Arc<dyn DistributedLock>,
    b_lock: Arc<dyn DistributedLock>,
    ttl: Duration,
    freeze: Duration,
    checked: bool,
) -> (i64, i64) {
    use seckill_app::section::{self, SectionSpec};
    use seckill_app::strategy::GrabRequest;

    let redis = RedisServer::start();
    let db = fresh_database().await;
    let pool = sqlx::PgPool::connect(&db).await.expect("db");
    seckill_app::db::migrate(&pool).await.expect("migrate");
    seckill_app::db::reset_product(&pool, 1, 10)
        .await
        .expect("reset");
    let d = deps(&redis.url(), &db, ttl, MS(8_000));
    let mut faults = no_faults();
    // The lock's own check: a revision (etcd, ZooKeeper) or, for a lock
    // with only a random value, antirez's check-and-set on it.
    faults.check_revision = checked;
    faults.check_token = checked;
    let name = a_lock.name();
    let grab = |user_id| GrabRequest {
        product_id: 1,
        user_id,
        quantity: 1,
    };

    let cx = GrabContext {
        deps: &d,
        faults,
        pause: false,
    };
    let a = a_lock.acquire(cx, 1).await.expect("A acquires");
    let spec = SectionSpec::plain(name)
        .with_fence(a.fence(faults))
        .with_check_value(a.check_value(faults));
    let a_prepared = section::prepare(cx, grab(1), spec)
        .await
        .expect("A's section")
        .expect("A writes");
    assert!(a.check_still_held().is_ok(), "A passes the check…");
    // …and freezes (this runtime's only thread blocks, as under SIGSTOP).
    freeze_this_process(freeze);

    let b_deps = d.clone();
    let b = tokio::spawn(async move {
        let cx = GrabContext {
            deps: &b_deps,
            faults,
            pause: false,
        };
        let b = b_lock
            .acquire(cx, 1)
            .await
            .expect("B acquires A's lost lock");
        let spec = SectionSpec::plain(b_lock.name())
            .with_fence(b.fence(faults))
            .with_check_value(b.check_value(faults));
        let outcome = match section::prepare(cx, grab(2), spec).await {
            Ok(Some(prepared)) => prepared.commit().await.map(|_| "committed"),
            Ok(None) => Ok("fenced"),
            Err(e) => Err(e),
        };
        b_lock.release(cx, b).await.expect("B releases");
        outcome
    });
    // A wakes and commits once B is inside, waiting on A's row lock (read
    // from PostgreSQL, not guessed from a sleep: on a loaded machine B's
    // connect and acquire can take a while).
    until_lock_waiters(&pool, MS(15_000)).await;
    a_prepared.commit().await.expect("A's stale commit lands");
    let b_outcome = b.await.expect("B's task").expect("B's section");
    assert_eq!(b_outcome, "committed");
    let _ = a_lock.release(cx, a).await;
    let row = seckill_app::db::product(&pool, 1)
        .await
        .expect("read")
        .expect("product 1");
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE product_id = 1")
        .fetch_one(&pool)
        .await
        .expect("count");
    (row.stock, orders)
}

#[tokio::test(flavor = "current_thread")]
async fn a_stale_token_holder_loses_an_update_unless_the_database_checks_its_random_value() {
    let locks = || -> (Arc<dyn DistributedLock>, Arc<dyn DistributedLock>) {
        (Arc::new(SetNxPxToken::new()), Arc::new(SetNxPxToken::new()))
    };
    let (a, b) = locks();
    let (stock, orders) = stale_holder_against_the_database(a, b, MS(300), MS(600), false).await;
    assert_eq!(
        (stock, orders),
        (9, 2),
        "no check: two orders, one unit taken — a lost update"
    );
    // antirez's check-and-set: B's claim of its random value waits for
    // A's row lock; A commits, B reads A's committed stock.
    let (a, b) = locks();
    let (stock, orders) = stale_holder_against_the_database(a, b, MS(300), MS(600), true).await;
    assert_eq!(
        (stock, orders),
        (8, 2),
        "the random value checked by the database: exact"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_stale_etcd_holder_loses_an_update_unless_the_database_checks_the_revision() {
    let etcd = EtcdServer::start();
    let locks = || -> (Arc<dyn DistributedLock>, Arc<dyn DistributedLock>) {
        (
            Arc::new(EtcdLease::new(&[etcd.url()])),
            Arc::new(EtcdLease::new(&[etcd.url()])),
        )
    };
    // 1 s asked; etcd grants at least its minimum (2 s on one node).
    let (a, b) = locks();
    let (stock, orders) =
        stale_holder_against_the_database(a, b, MS(1_000), MS(3_500), false).await;
    assert_eq!(
        (stock, orders),
        (9, 2),
        "unchecked revision: two orders, one unit taken — a lost update"
    );
    let (a, b) = locks();
    let (stock, orders) = stale_holder_against_the_database(a, b, MS(1_000), MS(3_500), true).await;
    assert_eq!(
        (stock, orders),
        (8, 2),
        "revision checked by the database: B's read waits for A's commit; exact"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_stale_zk_holder_loses_an_update_unless_the_database_checks_the_sequence() {
    let zk = ZkServer::start();
    let locks = || -> (Arc<dyn DistributedLock>, Arc<dyn DistributedLock>) {
        (
            Arc::new(ZkEphemeralSeq::new(Some(&zk.url()))),
            Arc::new(ZkEphemeralSeq::new(Some(&zk.url()))),
        )
    };
    // The freeze outlasts the session (see ZK_SESSION).
    let (a, b) = locks();
    let (stock, orders) =
        stale_holder_against_the_database(a, b, ZK_SESSION, ZK_FREEZE, false).await;
    assert_eq!((stock, orders), (9, 2), "unchecked sequence: a lost update");
    let (a, b) = locks();
    let (stock, orders) =
        stale_holder_against_the_database(a, b, ZK_SESSION, ZK_FREEZE, true).await;
    assert_eq!(
        (stock, orders),
        (8, 2),
        "sequence checked by the database: exact"
    );
}
