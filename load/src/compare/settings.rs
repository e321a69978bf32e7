//! What `run`/`compare` were asked to do, and what every run of one
//! comparison ran under.

use std::path::PathBuf;

use crate::api::{Faults, StrategyName};
use crate::load::Workload;
use crate::report::threshold::Threshold;

/// What `run`/`compare` were asked to do (from the command line).
#[derive(Debug, Clone)]
pub struct Settings {
    /// App replica base URLs; users are spread over them round-robin.
    pub urls: Vec<String>,
    /// Bearer token of the admin endpoints.
    pub admin_token: String,
    /// The load of each strategy.
    pub workload: Workload,
    /// Set the service's `work_delay_ms` fault first (put back after).
    pub work_delay_ms: Option<u64>,
    /// Report folder.
    pub out: PathBuf,
    /// More report files (format by extension).
    pub report_files: Vec<PathBuf>,
    /// Also class these strategies safe.
    pub treat_as_safe: Vec<StrategyName>,
    /// Class these strategies expected-unsafe.
    pub expect_unsafe: Vec<StrategyName>,
    /// No progress bar.
    pub quiet: bool,
    /// Count overlapping sections through the history arbiter.
    pub history: bool,
    /// Limits on what each run measured (`--threshold`).
    pub thresholds: Vec<Threshold>,
}

/// What every run of one comparison ran under.
#[derive(Debug, Clone)]
pub struct Conditions {
    /// The faults in force (`GET /admin/faults`), or why they could not
    /// be read: then no run is judged as if there were none.
    pub faults: Result<Faults, String>,
    /// The service's lock TTL.
    pub ttl_ms: u64,
    /// How many replicas share the load.
    pub replicas: usize,
}
