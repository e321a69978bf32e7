//! `seckill-faults` — the fault lab: the scenarios that break each lock on
//! purpose, with their models of what each lock should do; the processes
//! they own; the Redlock debate's claims measured against their sources;
//! the atlas of every lock under every fault; the replays of reported
//! bugs. It builds on the load generator (`seckill-load`: the service
//! client, the grabs, the one judge) and is driven by the
//! `seckill-loadgen` command; the load generator names nothing here.
//!
//! # A tour, top-down (every import points down this list)
//! - [`atlas`] — `atlas`: every strategy under every fault, each pair
//!   located along the fault's size, drawn as a map.
//! - [`debate`] — `debate`: the Redlock debate's claims against a
//!   scenarios report.
//! - [`replay`] — `scenario replay`: reported bugs run again, the reported
//!   variant beside ours.
//! - [`scenario`] — `scenario`: the fault scenarios, one file each, the
//!   lab that owns their processes, their report.
//! - [`procs`] — the processes a scenario owns (replicas, Redis nodes,
//!   etcd, ZooKeeper), on the workspace's launcher.

pub mod atlas;
pub mod debate;
pub mod procs;
pub mod replay;
pub mod scenario;
