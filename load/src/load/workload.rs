//! What defines one strategy's load — the same for each strategy of a
//! comparison: its [`Shape`], users, length, stock, products and retries.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The shape of the load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Shape {
    /// `users` closed-loop buyers.
    ClosedLoop,
    /// All users released together, one buyer each.
    Burst,
    /// Grabs scheduled at `per_sec`.
    Rate { per_sec: f64 },
}

/// Everything that defines one strategy's load (the same for each strategy
/// of a comparison).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Workload {
    pub shape: Shape,
    pub users: usize,
    pub increase_rate: f64,
    /// Fixed length; None = until sold out (bounded by `max_run_time`).
    /// In `report.json` as `run_time_ms` (null = until sold out).
    #[serde(
        rename = "run_time_ms",
        serialize_with = "opt_ms",
        deserialize_with = "from_opt_ms"
    )]
    pub run_time: Option<Duration>,
    #[serde(
        rename = "max_run_time_ms",
        serialize_with = "ms",
        deserialize_with = "from_ms"
    )]
    pub max_run_time: Duration,
    pub stock: u64,
    pub products: u64,
    pub hot_ratio: f64,
    pub repeat_ratio: f64,
    pub quantity_min: u32,
    pub quantity_max: u32,
    pub retry: bool,
    pub retry_ms: u64,
    #[serde(
        rename = "give_up_after_ms",
        serialize_with = "ms",
        deserialize_with = "from_ms"
    )]
    pub give_up_after: Duration,
}

/// Durations in `report.json` are whole milliseconds, like every `_ms` field.
fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[allow(
    clippy::ref_option,
    reason = "the signature serde's serialize_with calls"
)]
fn opt_ms<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ms(d, s),
        None => s.serialize_none(),
    }
}

/// A duration read back from whole milliseconds.
fn from_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    u64::deserialize(d).map(Duration::from_millis)
}

/// [`from_ms`], or null.
fn from_opt_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
}
