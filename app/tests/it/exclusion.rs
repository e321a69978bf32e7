//! Each lock of the seeds, proven to hold or break as its file says.

use std::sync::Arc;
use std::time::Duration;

use seckill_app::lock::{
    fenced::Fenced, pg_lock_table::PgLockTable, redlock::Redlock, set_nx_px::SetNxPx,
    set_nx_px_check_del::SetNxPxCheckDel, set_nx_px_token::SetNxPxToken, setnx::Setnx,
    setnx_expire::SetnxExpire, setnx_expire_lua::SetnxExpireLua, setnx_getset::SetnxGetset,
    watchdog::Watchdog, DistributedLock, GrabContext,
};

use crate::checker::{self, deps, no_faults};
use crate::harness::{fresh_database, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;
const NO_DB: &str = "postgres://postgres@127.0.0.1:1/none";

fn pttl(redis: &RedisServer) -> i64 {
    redis::cmd("PTTL")
        .arg("lock:product:1")
        .query(&mut redis.conn())
        .expect("pttl")
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
    assert!(
        lock.reenter(cx, &guard).await.expect("reenter"),
        "same owner re-enters"
    );
    let count: i64 = redis::cmd("HGET")
        .arg("lock:product:1")
        .arg(&guard.token)
        .query(&mut redis.conn())
        .expect("hget");
    assert_eq!(count, 2);
    assert_eq!(
        lock.release_one(cx, &guard).await.expect("release"),
        None,
        "still held once"
    );
    assert!(guard.check_still_held().is_ok());

    // Someone deletes the lock behind the holder's back (an operator, a
    // failover): the next renewal notices and tells the holder.
    let _: () = redis::cmd("DEL")
        .arg("lock:product:1")
        .query(&mut redis.conn())
        .expect("del");
    tokio::time::sleep(lease / 3 + MS(300)).await;
    assert!(
        guard.check_still_held().is_err(),
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
    let redis = RedisServer::start();
    let d = deps(&redis.url(), NO_DB, MS(30_000), MS(5_000));
    let lock = Arc::new(Watchdog::new(&redis.url()).expect("watchdog"));
    tokio::time::sleep(MS(100)).await; // the listener subscribes
    let cx = GrabContext {
        deps: &d,
        faults: no_faults(),
        pause: false,
    };
    let holder = lock.acquire(cx, 1).await.expect("acquire");
    let (waiter_lock, waiter_deps) = (lock.clone(), d.clone());
    let waiter = tokio::spawn(async move {
        let cx = GrabContext {
            deps: &waiter_deps,
            faults: no_faults(),
            pause: false,
        };
        let guard = waiter_lock.acquire(cx, 1).await.expect("waiter acquires");
        let woke = tokio::time::Instant::now();
        waiter_lock.release(cx, guard).await.expect("release");
        woke
    });
    tokio::time::sleep(MS(300)).await;
    let released = tokio::time::Instant::now();
    lock.release(cx, holder).await.expect("release");
    let woke = waiter.await.expect("waiter");
    let delay = woke - released;
    eprintln!("waiter woke {delay:?} after the release");
    // The quiet-wait fallback is 500 ms: a wake-up well below it came from pub/sub.
    assert!(
        delay < MS(250),
        "woken by the message, not the fallback: {delay:?}"
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

    // A holder task aborted mid-section, without releasing.
    async fn kill_holder(
        lock: Arc<dyn DistributedLock>,
        d: Arc<seckill_app::lock::Deps>,
        faults: seckill_app::control::Faults,
        kill_after: Duration,
    ) {
        let task = tokio::spawn(async move {
            let cx = GrabContext {
                deps: &d,
                faults,
                pause: false,
            };
            let guard = lock.acquire(cx, 1).await.expect("acquire");
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(guard);
        });
        tokio::time::sleep(kill_after).await;
        task.abort();
        let _ = task.await;
    }
    async fn can_acquire(lock: &dyn DistributedLock, d: &seckill_app::lock::Deps) -> bool {
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
            Err(_) => false,
        }
    }

    // v1: no expiry at all.
    kill_holder(Arc::new(Setnx), d.clone(), no_faults(), MS(50)).await;
    tokio::time::sleep(ttl * 2).await;
    assert!(!can_acquire(&Setnx, &d).await, "setnx stays locked");
    assert_eq!(pttl(&redis), -1, "no expiry on the key");
    reset();

    // v2, killed between SETNX and PEXPIRE (the gap fault widens the window).
    let mut gap = no_faults();
    gap.setnx_expire_gap_ms = 500;
    kill_holder(Arc::new(SetnxExpire), d.clone(), gap, MS(50)).await;
    tokio::time::sleep(ttl * 2).await;
    assert!(
        !can_acquire(&SetnxExpire, &d).await,
        "setnx-expire stays locked"
    );
    assert_eq!(pttl(&redis), -1, "the EXPIRE never ran");
    reset();

    // The TTL locks come back after the TTL.
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
        kill_holder(lock.clone(), d.clone(), no_faults(), MS(50)).await;
        assert!(
            !can_acquire(lock.as_ref(), &d).await,
            "{name}: locked right after the kill"
        );
        tokio::time::sleep(ttl + MS(100)).await;
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
        SetnxGetset::new(0).acquire(short_cx, 1).await.is_err(),
        "same clock: excluded"
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

    // Under contention, with skew on half the replicas: overlaps.
    let lock_pair: Vec<Arc<SetnxGetset>> = vec![
        Arc::new(SetnxGetset::new(0)),
        Arc::new(SetnxGetset::new(1_000)),
    ];
    let (a, b) = tokio::join!(
        checker::run(lock_pair[0].clone(), d.clone(), no_faults(), 2, 3, MS(100)),
        checker::run(lock_pair[1].clone(), d.clone(), no_faults(), 2, 3, MS(100)),
    );
    eprintln!("setnx-getset skewed: {a:?} {b:?}");
    // Each run only sees its own tasks' overlaps; the skewed replica's
    // takeovers show as the honest side's locks being replaced.
    assert!(
        a.overlaps + b.overlaps + a.not_owner + b.not_owner + a.freed_another() + b.freed_another()
            > 0
    );
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
        lock.acquire(cx, 1).await.is_err(),
        "and the client excludes the service"
    );
    // The watchdog's hash lock is excluded by the client's string key too.
    let watchdog = Watchdog::new(&redis.url()).expect("watchdog");
    assert!(watchdog.acquire(cx, 1).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_tolerates_a_minority_and_fails_fast_without_a_majority() {
    let mut nodes: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let d = deps(&nodes[0].url(), NO_DB, MS(1_000), MS(2_000));
    let lock = Arc::new(Redlock::new(&urls, MS(50)).expect("redlock"));

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
    assert!(result.is_err(), "3 of 5 down: no lock");
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
async fn redlock_loses_safety_when_a_node_restarts_without_persistence() {
    let mut nodes: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let d = deps(&nodes[0].url(), NO_DB, MS(10_000), MS(500));
    let lock = Redlock::new(&urls, MS(50)).expect("redlock");
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
    tokio::time::sleep(MS(200)).await; // connections re-established
    let b = lock
        .acquire(cx, 1)
        .await
        .expect("B builds a majority from 2, 3, 4");
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
