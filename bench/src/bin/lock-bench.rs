//! `lock-bench` — every lock figure of the README, each printed beside the
//! raw Redis floor (or the rival) measured in the same run, on redis-server
//! processes this program starts on free ports. Timing goals are printed,
//! never asserted: a noisy machine changes the numbers, not the verdict of
//! a test.
//!
//! Run: `make bench-locks` (release build); `lock-bench redlock rslock`
//! runs only those sections (the token row always runs: it is every later
//! floor). The sections live in `seckill_bench::sections`, one file each.

use seckill_bench::sections::{
    consensus::consensus_costs, contended::contended_rows, many::many_keys_row,
    redlock::redlock_rows, rslock::rslock_row, token::token_row, watchdog::watchdog_rows, NAMES,
};
use seckill_bench::table::header;
use seckill_testkit::RedisServer as Server;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    if let Some(bad) = only.iter().find(|s| !NAMES.contains(&s.as_str())) {
        eprintln!(
            "lock-bench: unknown section {bad:?}; sections: {}",
            NAMES.join(" ")
        );
        std::process::exit(2);
    }
    let runs = |section: &str| only.is_empty() || only.iter().any(|s| s == section);
    let nodes: Vec<Server> = (0..5).map(|_| Server::start()).collect();
    let urls: Vec<String> = nodes.iter().map(Server::url).collect();
    println!("lock-bench: 5 local redis-server nodes, 2 tokio workers; each ratio is ours / floor from this run\n");
    header();
    let floor_set_del = token_row(&urls[0]).await;
    if runs("redlock") {
        redlock_rows(&urls).await;
    }
    if runs("rslock") {
        rslock_row(&urls).await;
    }
    if runs("watchdog") {
        watchdog_rows(&urls[0]).await;
    }
    if runs("contended") {
        contended_rows(&urls[0]).await;
    }
    if runs("many") {
        many_keys_row(&urls[1], nodes[1].port).await;
    }
    if runs("consensus") {
        consensus_costs(&urls, floor_set_del).await;
    }
    drop(nodes);
}
