//! `seckill-loadgen` — the command: the load generator (`seckill-load`)
//! and the fault lab (`seckill-faults`) behind one command line, and the
//! room's console. Its library re-exports both crates' modules under
//! their old paths (`seckill_loadgen::scenario`, `seckill_loadgen::api`,
//! …) for the tests and any caller that used them.
//!
//! # A tour, top-down (every import points down this list)
//! - [`cli`] — the command line (clap only): flags checked, handed on.
//! - [`console`] — `console`: the room's control room, a web page over
//!   the same service client, with a paced load and a live timeline.
//! - the fault lab, [`seckill_faults`]: [`atlas`], [`debate`],
//!   [`replay`], [`scenario`], [`procs`].
//! - the load generator, [`seckill_load`]: [`compare`], [`report`],
//!   [`judge`], [`expect`], [`load`], [`api`], [`token`], [`progress`].
//!
//! Exit codes: 0 all good · 1 a strategy classed safe showed a violation
//! (`scenario`: a verdict UNEXPECTED) · 2 bad usage (unknown strategy or
//! product, wrong admin token) · 3 the service is unreachable or failed
//! mid-run · 4 a run or case could not be judged (`inconclusive`: the
//! history had errors, the orders could not be read, a fault was not
//! proven) · 130 interrupted.

pub mod cli;
pub mod console;

pub use seckill_faults::{atlas, debate, procs, replay, scenario};
pub use seckill_load::{api, clock, compare, expect, judge, load, progress, report, token};

pub use cli::main;
