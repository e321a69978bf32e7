//! The raw Redis floors every lock figure is printed beside, measured in
//! the same run: the bare lock command `SET key v NX PX 10000` and its
//! release `DEL key`, sequential ([`raw_cycle_us`]), on a quorum of nodes
//! ([`raw_quorum_cycle_us`]) and raced by many tasks on one key
//! ([`raw_contended_rate`]). No token, no script, no timeout: the round
//! trips and nothing else.

use std::future::Future;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use redis::aio::ConnectionManager;
use tokio::time::Instant;

use crate::timing::{per_op_us, per_second};

/// The bare lock command: `SET key v NX PX 10000`; true when it took the
/// key.
pub async fn raw_set_nx(conn: &mut ConnectionManager, key: &str) -> bool {
    let won: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg("v")
        .arg("NX")
        .arg("PX")
        .arg(10_000)
        .query_async(conn)
        .await
        .expect("set");
    won.is_some()
}

/// Its bare release: `DEL key`.
pub async fn raw_del(conn: &mut ConnectionManager, key: &str) {
    let _: i64 = redis::cmd("DEL")
        .arg(key)
        .query_async(conn)
        .await
        .expect("del");
}

/// `SET NX PX` then `DEL` on one key, `n` times in sequence on `conn`: µs
/// per pair.
pub async fn raw_cycle_us(conn: &ConnectionManager, n: usize) -> f64 {
    per_op_us(1, n, |_| {
        let mut conn = conn.clone();
        async move {
            raw_set_nx(&mut conn, "raw:1").await;
            raw_del(&mut conn, "raw:1").await;
        }
    })
    .await
}

/// The bare floor of one Redlock cycle on `conns`: `SET key v NX PX` on
/// every node at once, on to the release as soon as a majority answered,
/// then `DEL key` on every node, again waiting for a majority only (the
/// rest run on in a task); µs per cycle over `n` cycles.
pub async fn raw_quorum_cycle_us(conns: &[ConnectionManager], n: usize) -> f64 {
    const KEY: &str = "raw:quorum";
    let quorum = conns.len() / 2 + 1;
    per_op_us(1, n, |_| async {
        let sets = until_quorum(conns, quorum, |mut c| async move {
            raw_set_nx(&mut c, KEY).await;
        })
        .await;
        drop(sets);
        let mut dels = until_quorum(conns, quorum, |mut c| async move {
            raw_del(&mut c, KEY).await;
        })
        .await;
        if !dels.is_empty() {
            tokio::spawn(async move { while dels.next().await.is_some() {} });
        }
    })
    .await
}

/// `command` sent on every one of `conns` at once, awaited until `quorum`
/// of them answered: the commands still unanswered.
async fn until_quorum<F, Fut>(
    conns: &[ConnectionManager],
    quorum: usize,
    command: F,
) -> FuturesUnordered<Fut>
where
    F: Fn(ConnectionManager) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut pending: FuturesUnordered<_> = conns.iter().map(|c| command(c.clone())).collect();
    for _ in 0..quorum {
        pending.next().await;
    }
    pending
}

/// The raw Redis floor of a contended lock: `tasks` tasks racing `SET NX
/// PX` on one key, the winner `DEL`s it; successful cycles per second.
pub async fn raw_contended_rate(conn: &ConnectionManager, tasks: usize, window: Duration) -> f64 {
    per_second(tasks, window, |_, deadline| {
        let mut conn = conn.clone();
        async move {
            let mut done = 0;
            while Instant::now() < deadline {
                if raw_set_nx(&mut conn, "raw:contended").await {
                    raw_del(&mut conn, "raw:contended").await;
                    done += 1;
                }
            }
            done
        }
    })
    .await
}
