//! `pg-3pc`: three-phase commit over the same two real PostgreSQL
//! databases as `pg-2pc`, each behind a participant with its own timeout
//! (here the replica's own, in-process). Exclusion under concurrent buyers
//! on two replicas; and the rule that makes 3PC non-blocking: a coordinator
//! silent after the pre-commits, its participants commit on their own and
//! the product sells on; and a participant whose do-commit fails on a cut
//! link retries it until the order commits, never leaving it prepared.
//! Skipped like pg-2pc's where the server refuses prepared transactions.

use std::time::Duration;

use serde_json::json;

use crate::harness::{hammer, RedisServer, TestApp};
use crate::pg_2pc::{in_doubt, settings, stock_side, two_databases};

/// Wait until neither database holds a prepared transaction.
async fn until_nothing_in_doubt(main: &str, stock: &str, within: Duration) {
    seckill_testkit::eventually("nothing left in doubt", within, || async {
        let gids = in_doubt(main, stock).await;
        if gids.is_empty() {
            Ok(())
        } else {
            Err(gids)
        }
    })
    .await;
}

fn three_pc(
    main: &str,
    stock: &str,
    redis: &str,
    instance: &str,
    timeout_ms: u64,
) -> seckill_app::configuration::Settings {
    let mut s = settings(main, stock, redis, instance);
    s.strategy = seckill_wire::strategies::StrategyName::Pg3pc;
    s.three_pc_timeout_ms = seckill_app::configuration::Positive::new(timeout_ms);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_3pc_sells_exactly_the_stock_across_two_replicas() {
    let Some((main, stock)) = two_databases().await else {
        return;
    };
    let redis = RedisServer::start();
    let a = TestApp::start(three_pc(&main, &stock, &redis.url(), "a", 2000)).await;
    let b = TestApp::start(three_pc(&main, &stock, &redis.url(), "b", 2000)).await;
    a.switch("pg-3pc").await;
    a.reset(1, 60).await;
    a.set_faults(json!({ "work_delay_ms": 1 })).await;
    // A hundred buyers at once: more than each participant's pool holds
    // (four connections here). A grab that finds every one taken by grabs
    // waiting for the stock row answers busy, never 503: the databases
    // are up.
    let outcomes = hammer(&[&a, &b], 1, 1, 100).await;
    eprintln!("pg-3pc: {outcomes:?}");
    assert!(
        !outcomes.keys().any(|k| k.starts_with("503")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes.get("201").copied(), Some(60), "{outcomes:?}");
    let (status, body) = a.grab(1, 1, 1).await;
    assert!(status == 409, "a repeat buyer is refused: {status} {body}");
    // A side whose do-commit was not heard commits at its timeout: wait
    // until nothing is left in doubt before the audit reads both sides.
    until_nothing_in_doubt(&main, &stock, Duration::from_secs(5)).await;
    let audit = a.audit(1).await;
    eprintln!("{audit}");
    assert_eq!(audit["orders"], 60, "{audit}");
    for field in ["oversold", "lost_updates", "undersold", "duplicates"] {
        assert_eq!(audit[field], 0, "{field}: {audit}");
    }
    assert_eq!(stock_side(&stock).await, 0);
    assert!(in_doubt(&main, &stock).await.is_empty());
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_3pc_participants_commit_at_their_timeout_while_the_coordinator_is_silent() {
    let Some((main, stock)) = two_databases().await else {
        return;
    };
    let redis = RedisServer::start();
    let a = TestApp::start(three_pc(&main, &stock, &redis.url(), "a", 400)).await;
    let b = TestApp::start(three_pc(&main, &stock, &redis.url(), "b", 400)).await;
    a.switch("pg-3pc").await;
    a.reset(1, 10).await;
    // The coordinator stops after both pre-commits, for a minute.
    a.set_faults(json!({ "pause_ms": 60_000, "pause_every": 1, "pause_at": "before-commit" }))
        .await;
    let stuck = a.grab_in_background(1, 2, 1);
    // Both sides prepared for a moment (until the participants' 400 ms
    // timeout), then committed by the participants alone: nothing is left
    // in doubt while the coordinator still sleeps.
    seckill_testkit::eventually(
        "both sides are pre-committed",
        Duration::from_secs(10),
        || async {
            let gids = in_doubt(&main, &stock).await;
            if gids.len() == 2 {
                Ok(())
            } else {
                Err(gids)
            }
        },
    )
    .await;
    until_nothing_in_doubt(&main, &stock, Duration::from_secs(10)).await;
    assert!(!stuck.is_finished(), "the coordinator is still silent");
    assert_eq!(stock_side(&stock).await, 9, "the stock side committed");
    // Nobody is blocked: the other replica sells at once.
    b.set_faults(json!({ "pause_ms": 0 })).await;
    let (status, body) = b.grab(1, 3, 1).await;
    assert_eq!(status, 201, "the stock row is free again: {body}");
    let audit = b.audit(1).await;
    eprintln!("{audit}");
    assert_eq!(
        audit["orders"], 2,
        "the silent coordinator's grab committed: {audit}"
    );
    for field in ["oversold", "lost_updates", "undersold", "duplicates"] {
        assert_eq!(audit[field], 0, "{field}: {audit}");
    }
    stuck.abort();
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_do_commit_that_fails_on_a_cut_link_is_retried_until_the_order_commits() {
    use seckill_app::lock::participant::{Grab, Message, Participant, Reply, Side};
    use std::str::FromStr as _;
    let Some((main, stock)) = two_databases().await else {
        return;
    };
    let redis = RedisServer::start();
    // A replica only to make the product (its own participants stay idle).
    let a = TestApp::start(three_pc(&main, &stock, &redis.url(), "a", 60_000)).await;
    a.switch("pg-3pc").await;
    a.reset(1, 10).await;
    // The order side's participant of this test, its database behind a
    // proxy, its own timeout a minute away: only a retry can commit.
    let options = sqlx::postgres::PgConnectOptions::from_str(&main).expect("url");
    let target = format!("{}:{}", options.get_host(), options.get_port())
        .parse()
        .or_else(|_| format!("127.0.0.1:{}", options.get_port()).parse())
        .expect("address");
    let proxy = seckill_proxy::Proxy::start(target).await.expect("proxy");
    let database = options.get_database().expect("database name");
    let behind = format!("postgres://postgres@127.0.0.1:{}/{database}", proxy.port);
    let participant = Participant::new(
        &three_pc(&behind, &stock, &redis.url(), "t", 60_000),
        Side::Order,
    )
    .expect("participant")
    .expect("the order side");
    let gid = "seckill3pc:test-retry:order".to_owned();
    let grab = Grab {
        product_id: 1,
        user_id: 7,
        quantity: 1,
    };
    let vote = participant
        .on(Message::CanCommit {
            gid: gid.clone(),
            grab,
        })
        .await;
    assert!(matches!(vote, Reply::Yes { .. }), "{vote:?}");
    let prepared = participant
        .on(Message::PreCommit {
            gid: gid.clone(),
            grab,
        })
        .await;
    assert!(matches!(prepared, Reply::Yes { .. }), "{prepared:?}");
    assert_eq!(in_doubt(&main, &stock).await, vec![gid.clone()]);
    // The link to the order database is cut as the do-commit comes.
    proxy.set_cut(true);
    let done = participant.on(Message::DoCommit { gid: gid.clone() }).await;
    assert!(
        matches!(done, Reply::No { .. }),
        "the commit failed: {done:?}"
    );
    proxy.set_cut(false);
    until_nothing_in_doubt(&main, &stock, Duration::from_secs(10)).await;
    let audit = a.audit(1).await;
    assert_eq!(audit["orders"], 1, "the retried commit's order: {audit}");
    a.stop().await;
}
