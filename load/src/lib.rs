//! `seckill-load` — the load generator: drives concurrent grabs at one or
//! more seckill-app replicas with [goose], one strategy after another, and
//! reports what each lock did: throughput, latency, outcomes, lock figures
//! and the database's verdict on oversells, lost updates, undersold units,
//! duplicate orders and negative stock — and, with the history,
//! overlapping sections. The fault lab (`seckill-faults`) and the
//! `seckill-loadgen` command build on it; nothing here names them.
//!
//! # A tour, top-down (every import points down this list)
//! - [`compare`] — `run`/`compare`: each strategy's run ([`compare`]'s
//!   `run.rs`), the loop, the exit status; one run sent from many
//!   processes (`prepare`, `run --shard K/N`, `merge`: `shard.rs`).
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
//! - [`progress`] — the bar long work draws on a terminal, or a line per
//!   case.
//! - [`clock`] — this machine's wall clock as the reports write it.

pub mod api;
pub mod clock;
pub mod compare;
pub mod expect;
pub mod judge;
pub mod load;
pub mod progress;
pub mod report;
pub mod token;

/// The future of a command's entry point (`compare::main`, `scenario::main`,
/// …), boxed where it is defined. An `async fn`'s body is a closure, and
/// rustc compiles a closure again in every crate that awaits it: the
/// `seckill-loadgen` library, which only dispatches its command line, spent
/// 220 of a clean release build's seconds compiling the fault lab's and the
/// load generator's futures a second time. Behind this box a caller sees
/// one `poll` through a vtable, compiled once in the defining crate
/// (docs/performance.md, "The build").
pub type Boxed<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
