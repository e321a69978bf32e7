//! Every grab of a load, one row each: when it was sent, which replica
//! answered, how, and how long it took. The console's charts and its
//! "Download this run" read it; a [`super::Driver`] given one writes a row
//! per answered grab.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::live::lock;
use super::outcome::Outcome;

/// The most rows a log keeps (about an hour at 250 grabs/s); past it, rows
/// are counted in [`GrabLog::dropped`], not kept.
pub const MOST_ROWS: usize = 1_000_000;

/// One answered grab.
#[derive(Debug, Clone, Serialize)]
pub struct GrabRow {
    /// When it was sent, seconds since the log began.
    pub t_s: f64,
    /// The replica it went to (base URL).
    pub replica: String,
    pub outcome: Outcome,
    /// From the send to the whole answer read.
    pub latency_ms: f64,
}

/// The rows of one load.
#[derive(Debug)]
pub struct GrabLog {
    began: Instant,
    rows: Mutex<Vec<GrabRow>>,
    dropped: Mutex<u64>,
}

impl GrabLog {
    /// An empty log whose clock starts now.
    pub fn new() -> Self {
        Self::starting_at(Instant::now())
    }

    /// An empty log whose clock started at `began`.
    pub fn starting_at(began: Instant) -> Self {
        Self {
            began,
            rows: Mutex::new(Vec::new()),
            dropped: Mutex::new(0),
        }
    }

    /// When its clock started.
    pub fn began(&self) -> Instant {
        self.began
    }

    /// One grab sent at `sent` to `replica`, answered `outcome` after `took`.
    pub fn push(&self, sent: Instant, replica: &str, outcome: Outcome, took: Duration) {
        let mut rows = lock(&self.rows);
        if rows.len() >= MOST_ROWS {
            *lock(&self.dropped) += 1;
            return;
        }
        rows.push(GrabRow {
            t_s: sent.saturating_duration_since(self.began).as_secs_f64(),
            replica: replica.to_owned(),
            outcome,
            latency_ms: took.as_secs_f64() * 1000.0,
        });
    }

    /// A copy of the rows so far, in the order they were answered.
    pub fn rows(&self) -> Vec<GrabRow> {
        lock(&self.rows).clone()
    }

    /// `read` over the rows so far, without copying them (the charts
    /// read the whole log every second).
    pub fn with_rows<T>(&self, read: impl FnOnce(&[GrabRow]) -> T) -> T {
        read(&lock(&self.rows))
    }

    /// Rows not kept because the log was full.
    pub fn dropped(&self) -> u64 {
        *lock(&self.dropped)
    }
}

impl Default for GrabLog {
    fn default() -> Self {
        Self::new()
    }
}
