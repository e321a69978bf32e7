//! The loads: every grab built and counted one way ([`Grab`], into one
//! [`Live`] tally), sent by one of two drivers —
//! - goose's attack ([`run`]), one strategy's measured load of `run` and
//!   `compare`;
//! - [`Driver`], a load that runs until stopped, closed loop or paced, whose
//!   rate and buyers change while it runs: the scenarios' buyers and the
//!   console's load.
//!
//! The attack has three shapes:
//! - **closed loop** — `--users` buyers, started at `--increase-rate` per
//!   second, each grabbing again as soon as it has an answer, for
//!   `--run-time` or until every product is sold out;
//! - **burst** — `--burst N`: N buyers wait at a gate until all N are
//!   started, then grab at the same instant (the flash-sale moment), once
//!   each;
//! - **open rate** — `--rate R`: grabs are *scheduled* at R per second and
//!   each latency is measured from its scheduled time, not from when a user
//!   got round to sending it, so a slow service cannot hide its queueing
//!   (coordinated omission). `--users` is then the concurrency available to
//!   keep up with the schedule.
//!
//! A buyer answered `busy` (429) or `rejected` (409, the fence refused a
//! stale holder) tries again after `--retry-ms`, as a real shop client
//! would, until a final answer or `--give-up-after`; every attempt counts in
//! grabs/s and in the outcome counts.
//!
//! Every acknowledged order and every indeterminate answer goes in the
//! run's [`Ledger`], checked against the database's orders afterwards.

mod attack;
pub mod driver;
pub mod grab;
pub mod ledger;
pub mod live;
pub mod log;
pub mod outcome;
pub mod probe;
pub mod shard;
mod workload;

pub use attack::run;
pub use driver::{retarget, targets, Driver, Pace, Plan, Targets, Users};
pub use grab::{Answered, Grab};
pub use ledger::{Accounting, Answer, Ledger};
pub use live::{lock, Live, Tally};
pub use log::{GrabLog, GrabRow};
pub use outcome::Outcome;
pub use shard::Shard;
pub use workload::{Shape, Workload};
