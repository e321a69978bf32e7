//! `seckill-loadgen` — drives concurrent grabs at one or more seckill-app
//! replicas with [goose], one strategy after another, and reports what each
//! lock did: throughput, latency, outcomes, lock figures and the database's
//! verdict on oversells, lost updates, undersold units, duplicate orders
//! and negative stock — and, with the history, overlapping sections.
//!
//! # A tour, top-down (every import points down this list)
//! - [`cli`] — the command line (clap only): flags checked, handed on.
//! - [`compare`] — `run`/`compare`: each strategy's run ([`compare`]'s
//!   `run.rs`), the loop, the exit status; one run sent from many
//!   processes (`prepare`, `run --shard K/N`, `merge`: `shard.rs`).
//! - [`scenario`] — `scenario`: the fault scenarios, one file each, the
//!   lab that owns their processes, their report.
//! - [`console`] — `console`: the room's control room, a web page over
//!   the same service client, with a paced load and a live timeline.
//! - [`debate`] — `debate`: the Redlock debate's claims against a
//!   scenarios report.
//! - [`atlas`] — `atlas`: every strategy under every fault, each pair
//!   located along the fault's size, drawn as a map.
//! - [`report`] — the side-by-side report: text tables, HTML, SVG charts.
//! - [`judge`] — the one judge: audit + history → breaches → verdict, for
//!   every command alike.
//! - [`expect`] — what a strategy should do under the faults in force,
//!   from its kind and class as the service states them.
//! - [`load`] — every grab built and counted one way ([`load::Grab`] into
//!   one [`load::Live`] tally), sent by goose's attack (`run`, `compare`) or
//!   by the [`load::Driver`] (the scenarios' buyers, the console's load:
//!   closed loop or paced, adjustable while it runs); the workload, the
//!   [`load::Outcome`] of each grab, and `probe`.
//! - [`api`] — the service client: every answer decoded into its typed
//!   shape; `/metrics` parsed.
//! - [`token`] — `admin-token`: one admin token per docker-compose stack.
//! - [`procs`] — the processes a scenario owns (replicas, Redis nodes,
//!   etcd, ZooKeeper), on the workspace's launcher.
//!
//! Exit codes: 0 all good · 1 a strategy classed safe showed a violation
//! (`scenario`: a verdict UNEXPECTED) · 2 bad usage (unknown strategy or
//! product, wrong admin token) · 3 the service is unreachable or failed
//! mid-run · 4 a run or case could not be judged (`inconclusive`: the
//! history had errors, the orders could not be read, a fault was not
//! proven) · 130 interrupted.

pub mod api;
pub mod atlas;
pub mod cli;
pub mod compare;
pub mod console;
pub mod debate;
pub mod expect;
pub mod judge;
pub mod load;
pub mod procs;
pub mod progress;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod token;

pub use cli::main;
