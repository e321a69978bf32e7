//! Section `redlock`: Redlock on five nodes against one node, each beside
//! the same cycle in bare commands on the same nodes (the quorum floor),
//! measured in the same rounds; then against node-redlock 5.0 on the same
//! nodes, on this bench's 2-worker runtime, and over 1 ms links through
//! user-space proxies.

use std::process::Command;
use std::time::Duration;

use redis::aio::ConnectionManager;
use seckill_app::lock::redlock::Redlock;
use seckill_app::redis_client::connection as redis_connection;
use seckill_proxy::Proxy;

use crate::floor::raw_quorum_cycle_us;
use crate::harness::{cycle_us, deps, NODE_TIMEOUT};
use crate::stats::quantile;
use crate::table::{line, ratio_rows, Goal};

/// Rounds of the Redlock rows on the current-thread runtime (the goals)
/// and on the multi-thread one (info), and the cycles each of the four
/// clients runs per round (≈ 0.5 s a round here).
const REDLOCK_ROUNDS: usize = 21;
const MT_ROUNDS: usize = 9;
const REDLOCK_CYCLES: usize = 1_000;
/// The one-way latency the proxies add to every node's link (tokio's
/// timers tick in milliseconds: 1–2 ms one way), and the rounds and
/// cycles of the row measured over them.
const LINK_DELAY: Duration = Duration::from_millis(1);
const LINK_ROUNDS: usize = 7;
const LINK_CYCLES: usize = 50;
/// Rounds of node-redlock's own five/one loop (its one event loop).
const NODE_ROUNDS: usize = 9;

/// Redlock on five nodes vs one node: the goal on one current-thread
/// runtime, the shape of an actix worker (the handler and the tasks of the
/// connections it opened on one thread); then the same clients on this
/// bench's 2-worker runtime, printed beside it.
pub async fn redlock_rows(urls: &[String]) {
    let ct = on_current_thread(urls, REDLOCK_ROUNDS, REDLOCK_CYCLES);
    let (ours_5_1, bare_5_1) = (ct.ours_five / ct.ours_one, ct.bare_five / ct.bare_one);
    #[rustfmt::skip]
    ratio_rows(&[
        ("redlock 5 nodes vs bare SET/DEL quorum (ct rt)", ct.ours_five, ct.bare_five, 1, "µs/op", ct.over_bare, Goal::AtMost(1.3)),
        ("  5/1 nodes: redlock vs bare (same rounds)", ours_5_1, bare_5_1, 2, "x", ct.scaling, Goal::AtMost(1.15)),
        ("  1 node: redlock vs bare SET/DEL (info)", ct.ours_one, ct.bare_one, 1, "µs/op", ct.ours_one / ct.bare_one, Goal::Info),
    ]);
    match node_redlock(urls, NODE_ROUNDS, REDLOCK_CYCLES) {
        #[rustfmt::skip]
        Ok([five, _one, node_5_1]) => ratio_rows(&[
            ("redlock 5 nodes vs node-redlock 5.0", ct.ours_five, five, 1, "µs/op", ct.ours_five / five, Goal::AtMost(1.0)),
            ("  5/1 nodes: redlock vs node-redlock (info)", ours_5_1, node_5_1, 2, "x", ours_5_1 / node_5_1, Goal::Info),
        ]),
        Err(why) => line(
            &format!("redlock vs node-redlock 5.0: skipped, {why}"),
            "",
            "",
            "",
            "",
            "",
            "",
        ),
    }
    let mt = redlock_five_vs_one(urls, MT_ROUNDS, REDLOCK_CYCLES).await;
    ratio_rows(&[(
        "  5/1 on 2 workers: redlock vs bare (info)",
        mt.ours_five / mt.ours_one,
        mt.bare_five / mt.bare_one,
        2,
        "x",
        mt.scaling,
        Goal::Info,
    )]);

    // The same nodes behind user-space proxies that delay each direction
    // by LINK_DELAY: a network's latency, where the quorum waits for the
    // third-fastest answer and the five servers' CPU hides under it.
    let proxies = futures::future::try_join_all(urls.iter().map(|url| {
        let target = url
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .parse()
            .expect("a node's host:port");
        Proxy::start(target)
    }))
    .await
    .expect("proxies");
    for proxy in &proxies {
        proxy.set_delay(LINK_DELAY);
    }
    let linked: Vec<String> = proxies
        .iter()
        .map(|p| format!("redis://127.0.0.1:{}", p.port))
        .collect();
    let net = on_current_thread(&linked, LINK_ROUNDS, LINK_CYCLES);
    #[rustfmt::skip]
    ratio_rows(&[
        ("redlock 5/1 nodes, 1 ms links (proxy, ct rt)", net.ours_five, net.ours_one, 1, "µs/op", net.five_over_one, Goal::AtMost(1.3)),
        ("  bare SET/DEL quorum 5/1, same links (info)", net.bare_five, net.bare_one, 1, "µs/op", net.bare_five_over_one, Goal::Info),
    ]);
}

/// What the Redlock rows measured, in µs per acquire+release cycle
/// (medians over the rounds) and the medians of each round's own ratios.
struct FiveVsOne {
    ours_five: f64,
    ours_one: f64,
    bare_five: f64,
    bare_one: f64,
    /// Our five-node cycle over the bare quorum cycle on the same nodes.
    over_bare: f64,
    /// Our five/one over the bare commands' five/one.
    scaling: f64,
    /// Our five/one.
    five_over_one: f64,
    /// The bare commands' five/one.
    bare_five_over_one: f64,
}

/// `redlock_five_vs_one` on a current-thread runtime of its own thread,
/// the shape of an actix-web worker.
fn on_current_thread(urls: &[String], rounds: usize, n: usize) -> FiveVsOne {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("current-thread runtime")
                    .block_on(redlock_five_vs_one(urls, rounds, n))
            })
            .join()
            .expect("the current-thread Redlock run")
    })
}

/// Redlock over all of `urls` and over the first node alone, beside the
/// same cycle in bare commands (`raw_quorum_cycle_us`) on all of them and
/// on the first, all four on the runtime this runs on (each client's
/// connections opened there), in `rounds` rounds of `n` sequential
/// cycles each, their order rotated every round. The ratios are taken
/// within a round — its four parts run within about half a second, so a
/// slow spell of the machine moves all of them and not the ratio — and
/// their median reported.
async fn redlock_five_vs_one(urls: &[String], rounds: usize, n: usize) -> FiveVsOne {
    let d = deps(&urls[0], Duration::from_secs(10), Duration::from_secs(5));
    let five = Redlock::new(urls, NODE_TIMEOUT, 0.01).expect("redlock");
    let one = Redlock::new(&urls[..1], NODE_TIMEOUT, 0.01).expect("redlock");
    let bare: Vec<ConnectionManager> = urls
        .iter()
        .map(|url| redis_connection(url).expect("redis"))
        .collect();
    let mut runs: [Vec<f64>; 4] = Default::default();
    let (mut over_bare, mut scaling) = (Vec::new(), Vec::new());
    let (mut five_over_one, mut bare_five_over_one) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut us = [0.0; 4];
        for k in 0..4 {
            let which = (round + k) % 4;
            us[which] = match which {
                0 => cycle_us(&five, &d, 1, n).await,
                1 => cycle_us(&one, &d, 1, n).await,
                2 => raw_quorum_cycle_us(&bare, n).await,
                _ => raw_quorum_cycle_us(&bare[..1], n).await,
            };
        }
        for (run, us) in runs.iter_mut().zip(us) {
            run.push(us);
        }
        over_bare.push(us[0] / us[2]);
        five_over_one.push(us[0] / us[1]);
        bare_five_over_one.push(us[2] / us[3]);
        scaling.push((us[0] / us[1]) / (us[2] / us[3]));
    }
    let median = |xs: &[f64]| quantile(xs, 0.5).unwrap_or(f64::NAN);
    let [ours_five, ours_one, bare_five, bare_one] = runs.map(|run| median(&run));
    FiveVsOne {
        ours_five,
        ours_one,
        bare_five,
        bare_one,
        over_bare: median(&over_bare),
        scaling: median(&scaling),
        five_over_one: median(&five_over_one),
        bare_five_over_one: median(&bare_five_over_one),
    }
}

/// node-redlock 5.0 over the same nodes, in its own process
/// (`bench/node-redlock/cycle.js`, installed by `make bench-locks`): the
/// medians of its five-node and one-node µs per cycle and of its rounds'
/// five/one ratios, or why it could not run.
fn node_redlock(urls: &[String], rounds: usize, n: usize) -> Result<[f64; 3], String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("node-redlock");
    if !dir.join("node_modules/redlock").is_dir() {
        return Err("not installed (make bench-locks runs npm ci)".into());
    }
    let out = Command::new("node")
        .arg(dir.join("cycle.js"))
        .arg(rounds.to_string())
        .arg(n.to_string())
        .args(urls)
        .output()
        .map_err(|e| format!("node: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let figures: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    figures
        .try_into()
        .map_err(|_| format!("unexpected output {text:?}"))
}
