//! `seckill-loadgen` — drives concurrent grabs at one or more seckill-app
//! replicas with [goose], one strategy after another, and reports what each
//! lock did: throughput, latency, outcomes, lock figures and the database's
//! verdict on oversells, lost updates and duplicate orders.
//!
//! For each strategy: reset the products, switch the strategy and wait until
//! every replica reports it, scrape `/metrics`, run the goose attack, read
//! `/admin/audit`, scrape again. See `--help` for the workloads and the
//! README for the JSON schema.
//!
//! Exit codes: 0 all good · 1 a strategy classed safe showed a violation ·
//! 2 bad usage (unknown strategy or product, wrong admin token) · 3 the
//! service is unreachable or failed mid-run.

pub mod cli;
pub mod expect;
pub mod procs;
pub mod prom;
pub mod report;
pub mod scenario;
pub mod service;
pub mod workload;

pub use cli::main;
