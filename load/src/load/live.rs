//! The one outcome tally of every load: outcomes, latency histograms
//! (hdrhistogram), the ledger, when orders happened, the burst gate and
//! the run's clock. Shared by a load's buyers (goose's users, or a
//! [`super::Driver`]'s), read live by the progress line, the scenarios'
//! observers and the console, and by the report after.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::ledger::Entries;
use super::outcome::Outcome;

/// What one load counted, in a form that travels (a shard's record) and
/// adds up (`merge`): the counts, the four latency histograms whole (so a
/// merged quantile is the quantile of every grab, not an average of
/// quantiles) and the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    pub sent: u64,
    pub outcomes: Vec<(Outcome, u64)>,
    pub unavailable: u64,
    pub ordered_units: u64,
    /// Every grab request's latency, µs: an HdrHistogram in its V2 format,
    /// deflated, base64 (as HdrHistogram's own logs write them).
    pub latency: String,
    pub buyer: String,
    pub lock_wait: String,
    pub batch_wait: String,
    pub ledger: Entries,
}

/// Counters shared by every goose user of one run, read live by the
/// progress bar and at the end by the report.
#[derive(Debug)]
pub struct Live {
    /// Grabs sent (answered or not yet).
    sent: AtomicU64,
    outcomes: [AtomicU64; 6],
    /// The `error` answers that were a `503` (a dependency down).
    unavailable: AtomicU64,
    /// When each order was acknowledged.
    order_times: Mutex<Vec<Instant>>,
    ordered_units: AtomicU64,
    /// Every grab request.
    latency: Latencies,
    /// Every buyer, first send to final answer.
    buyer: Latencies,
    /// The lock wait of every grab that waited for a lock, exact, as the
    /// service answers it (`Server-Timing: lock;dur=<ms>`).
    pub(super) lock_wait: Latencies,
    /// How long each batched order waited for its batch to start, exact,
    /// as the service answers it (`Server-Timing: batch;dur=<ms>`).
    pub(super) batch_wait: Latencies,
    pub(super) next_user: AtomicU64,
    pub(super) slot: AtomicU64,
    pub(super) sold_out: Mutex<HashSet<u64>>,
    pub(super) gate_arrived: AtomicU64,
    pub(super) gate_open: AtomicBool,
    pub(super) gate: Notify,
    pub(super) started: Mutex<Option<Instant>>,
    finished: Mutex<Option<Instant>>,
    /// Every acknowledged and indeterminate grab, checked after the run.
    pub ledger: super::ledger::Ledger,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            sent: AtomicU64::new(0),
            outcomes: Default::default(),
            unavailable: AtomicU64::new(0),
            order_times: Mutex::new(Vec::new()),
            ordered_units: AtomicU64::new(0),
            latency: Latencies::default(),
            buyer: Latencies::default(),
            lock_wait: Latencies::default(),
            batch_wait: Latencies::default(),
            next_user: AtomicU64::new(1),
            slot: AtomicU64::new(0),
            sold_out: Mutex::new(HashSet::new()),
            gate_arrived: AtomicU64::new(0),
            gate_open: AtomicBool::new(false),
            gate: Notify::new(),
            started: Mutex::new(None),
            finished: Mutex::new(None),
            ledger: super::ledger::Ledger::default(),
        }
    }
}

impl Live {
    /// Requests answered so far.
    pub fn grabs(&self) -> u64 {
        self.outcomes
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// Count of one outcome.
    pub fn outcome(&self, outcome: Outcome) -> u64 {
        self.outcomes[outcome.index()].load(Ordering::Relaxed)
    }

    /// Grabs sent, answered or not yet.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// The `error` answers that were a `503` (a dependency down).
    pub fn unavailable(&self) -> u64 {
        self.unavailable.load(Ordering::Relaxed)
    }

    /// The first order acknowledged after `since` (on tokio's clock, the
    /// scenarios').
    pub fn first_order_after(&self, since: tokio::time::Instant) -> Option<tokio::time::Instant> {
        let since = since.into_std();
        lock(&self.order_times)
            .iter()
            .copied()
            .filter(|t| *t > since)
            .min()
            .map(tokio::time::Instant::from_std)
    }

    /// Units the service said it sold.
    pub fn ordered_units(&self) -> u64 {
        self.ordered_units.load(Ordering::Relaxed)
    }

    /// Seconds since the first grab was sent.
    pub fn elapsed(&self) -> Duration {
        let start = *lock(&self.started);
        let end = *lock(&self.finished);
        match (start, end) {
            (Some(s), Some(e)) => e.duration_since(s),
            (Some(s), None) => s.elapsed(),
            _ => Duration::ZERO,
        }
    }

    /// Latency quantile (0..1) of every grab request, in milliseconds.
    pub fn latency_ms(&self, q: f64) -> f64 {
        self.latency.quantile_ms(q)
    }

    /// Quantile (0..1) of a buyer's whole wait, from the first (scheduled)
    /// send to the final answer, busy/rejected retries included, in ms.
    pub fn buyer_latency_ms(&self, q: f64) -> f64 {
        self.buyer.quantile_ms(q)
    }

    /// Quantile (0..1) of the lock waits the service reported, in ms;
    /// `None` when no grab reported one (no lock, or an older service).
    pub fn lock_wait_ms(&self, q: f64) -> Option<f64> {
        let empty = lock(&self.lock_wait.0).is_empty();
        (!empty).then(|| self.lock_wait.quantile_ms(q))
    }

    /// Quantile (0..1) of the batch waits the service reported, in ms;
    /// `None` when no grab reported one (the strategy does not batch).
    pub fn batch_wait_ms(&self, q: f64) -> Option<f64> {
        let empty = lock(&self.batch_wait.0).is_empty();
        (!empty).then(|| self.batch_wait.quantile_ms(q))
    }

    pub(super) fn record_buyer(&self, took: Duration) {
        self.buyer.record(took);
    }

    /// Slowest grab request, in milliseconds.
    pub fn latency_max_ms(&self) -> f64 {
        self.latency.max_ms()
    }

    /// One grab sent.
    pub fn record_sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// One answer: its outcome and HTTP status (0: none), the units it
    /// asked for and how long it took.
    pub(super) fn record(&self, outcome: Outcome, status: u16, units: u64, took: Duration) {
        self.outcomes[outcome.index()].fetch_add(1, Ordering::Relaxed);
        if outcome == Outcome::Ordered {
            self.ordered_units.fetch_add(units, Ordering::Relaxed);
            lock(&self.order_times).push(Instant::now());
        }
        if outcome == Outcome::Error && status == 503 {
            self.unavailable.fetch_add(1, Ordering::Relaxed);
        }
        self.latency.record(took);
        *lock(&self.finished) = Some(Instant::now());
    }

    pub(super) fn mark_started(&self) {
        lock(&self.started).get_or_insert_with(Instant::now);
    }

    /// When the first grab was sent and the last answer came, if any.
    pub fn span(&self) -> (Option<Instant>, Option<Instant>) {
        (*lock(&self.started), *lock(&self.finished))
    }

    /// Make [`Self::elapsed`] read `length` (a merged load's wall-clock span).
    pub fn set_span(&self, length: Duration) {
        let start = Instant::now();
        *lock(&self.started) = Some(start);
        *lock(&self.finished) = Some(start + length);
    }

    /// Everything counted so far, to travel.
    pub fn tally(&self) -> Tally {
        Tally {
            sent: self.sent(),
            outcomes: Outcome::ALL
                .iter()
                .map(|o| (*o, self.outcome(*o)))
                .collect(),
            unavailable: self.unavailable(),
            ordered_units: self.ordered_units(),
            latency: self.latency.export(),
            buyer: self.buyer.export(),
            lock_wait: self.lock_wait.export(),
            batch_wait: self.batch_wait.export(),
            ledger: self.ledger.entries(),
        }
    }

    /// Add another load's tally (another shard's) to this one: all of it,
    /// or — when a histogram does not read — nothing.
    pub fn absorb(&self, other: &Tally) -> Result<(), String> {
        let mut histograms = Vec::new();
        for (mine, theirs, name) in [
            (&self.latency, &other.latency, "latency"),
            (&self.buyer, &other.buyer, "buyer"),
            (&self.lock_wait, &other.lock_wait, "lock_wait"),
            (&self.batch_wait, &other.batch_wait, "batch_wait"),
        ] {
            let decoded = decode(theirs).map_err(|e| format!("the {name} histogram: {e}"))?;
            histograms.push((mine, decoded, name));
        }
        for (mine, theirs, name) in histograms {
            lock(&mine.0)
                .add(&theirs)
                .map_err(|e| format!("the {name} histogram does not add up ({e:?})"))?;
        }
        self.sent.fetch_add(other.sent, Ordering::Relaxed);
        for (outcome, n) in &other.outcomes {
            self.outcomes[outcome.index()].fetch_add(*n, Ordering::Relaxed);
        }
        self.unavailable
            .fetch_add(other.unavailable, Ordering::Relaxed);
        self.ordered_units
            .fetch_add(other.ordered_units, Ordering::Relaxed);
        self.ledger.absorb(&other.ledger);
        Ok(())
    }
}

/// A latency histogram in µs (1 µs .. 120 s, 3 significant digits),
/// shared by the users of one run.
#[derive(Debug)]
pub(super) struct Latencies(Mutex<Histogram<u64>>);

impl Default for Latencies {
    fn default() -> Self {
        Self(Mutex::new(
            Histogram::new_with_bounds(1, MAX_US, 3).expect("histogram bounds"),
        ))
    }
}

const MAX_US: u64 = 120_000_000;

impl Latencies {
    pub(super) fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_US);
        let _ = lock(&self.0).record(us);
    }

    /// Quantile (0..1) in milliseconds; 0 when nothing was recorded.
    fn quantile_ms(&self, q: f64) -> f64 {
        let h = lock(&self.0);
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / 1000.0
        }
    }

    fn max_ms(&self) -> f64 {
        lock(&self.0).max() as f64 / 1000.0
    }

    /// The histogram as HdrHistogram's V2 format, deflated, in base64.
    fn export(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&lock(&self.0), &mut bytes)
            .expect("a histogram serialises into memory");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// A histogram [`Latencies::export`] wrote.
fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("not base64 ({e})"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram ({e:?})"))
}

/// A mutex, poisoned or not (a panicked task loses nothing): the runs'
/// counters here, the console's load and scenario state.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_of(latencies_ms: &[u64]) -> Live {
        let live = Live::default();
        for ms in latencies_ms {
            live.record(Outcome::Ordered, 201, 1, Duration::from_millis(*ms));
        }
        live
    }

    #[test]
    fn a_tally_travels_whole_and_adds_up_as_every_grab_would() {
        let fast = load_of(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let slow = load_of(&[100, 200, 300]);
        let tally = fast.tally();
        let text = serde_json::to_string(&tally).expect("encodes");
        let back: Tally = serde_json::from_str(&text).expect("decodes");
        assert_eq!(back, tally);

        let merged = Live::default();
        merged.absorb(&back).expect("adds");
        merged.absorb(&slow.tally()).expect("adds");
        let all = load_of(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 200, 300]);
        assert_eq!(merged.grabs(), 13);
        assert_eq!(merged.outcome(Outcome::Ordered), 13);
        for q in [0.5, 0.75, 0.99] {
            assert_eq!(merged.latency_ms(q), all.latency_ms(q), "q {q}");
        }
        // Not an average of the two p50s (5 and 200 ms): the 7th of 13 grabs.
        assert!(
            (merged.latency_ms(0.5) - 7.0).abs() < 0.01,
            "{}",
            merged.latency_ms(0.5)
        );
        assert!(merged
            .absorb(&Tally {
                latency: "not base64!".into(),
                ..slow.tally()
            })
            .is_err());
    }
}
