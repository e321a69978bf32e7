//! The mutual-exclusion history: `GET /admin/history` ([`HistoryReport`]),
//! `GET /admin/history/sections` ([`SectionsBody`]), `PUT /admin/history`
//! ([`HistorySwitch`] in, [`HistorySwitched`] out) and `POST
//! /admin/history/forget` ([`ForgetBody`] in, [`Forgotten`] out).

use serde::{Deserialize, Serialize};

/// Per strategy figures of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategyHistory {
    /// Strategy name.
    pub strategy: String,
    /// Sections recorded.
    pub entries: u64,
    /// Sections that began while another was inside.
    pub overlaps: u64,
    /// Most sections inside at once.
    pub max_holders: u64,
}

/// A section inside right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Inside {
    /// `{instance}:{n}`.
    pub member: String,
    /// Replica.
    pub instance: String,
    /// Product.
    pub product: i64,
    /// Entry time on the arbiter's clock, microseconds since the epoch.
    pub since_us: i64,
}

/// One overlap as the arbiter saw it: a section entered while others of
/// the same product were inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OverlapEvent {
    /// When, on the arbiter's clock, microseconds since the epoch.
    pub at_us: i64,
    /// Strategy of the section that entered.
    pub strategy: String,
    /// Product.
    pub product: i64,
    /// The member (`{instance}:{n}`) that entered.
    pub entered: String,
    /// The members that were inside already.
    pub inside: Vec<String>,
}

/// `GET /admin/history`: the current run as the arbiter has it, plus this
/// replica's own view (`run`, `instance`, `errors`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryReport {
    /// Whether a run is being recorded.
    pub enabled: bool,
    /// The run id, when enabled (`null` when off; always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub run: Option<String>,
    /// This replica's instance id (`SECKILL_INSTANCE_ID`).
    pub instance: String,
    /// Arbiter calls of *this replica* that failed during the current run
    /// (counted from zero when a run starts): any error makes the run's
    /// history incomplete, and its verdict `inconclusive`.
    pub errors: u64,
    /// Sections left inside by an exit that never reached the arbiter,
    /// found older than the stale bound and dropped (counted, not taken
    /// for overlaps).
    pub stale: u64,
    /// Figures per strategy.
    pub strategies: Vec<StrategyHistory>,
    /// Sections inside right now.
    pub inside: Vec<Inside>,
    /// The first overlaps of the run (at most 20), oldest first.
    pub first_overlaps: Vec<OverlapEvent>,
}

impl HistoryReport {
    /// The figures of `strategy` (zero when it recorded nothing).
    pub fn of(&self, strategy: &str) -> StrategyHistory {
        self.strategies
            .iter()
            .find(|s| s.strategy == strategy)
            .cloned()
            .unwrap_or_else(|| StrategyHistory {
                strategy: strategy.to_owned(),
                ..StrategyHistory::default()
            })
    }
}

/// One critical section of the current run, as the arbiter saw it (times
/// on the arbiter's clock): what the timelines of `report.html`,
/// `scenarios.html` and the console draw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Section {
    /// Replica (instance id).
    pub instance: String,
    /// `{instance}:{n}`.
    pub member: String,
    /// Strategy.
    pub strategy: String,
    /// Product.
    pub product: i64,
    /// Entry, microseconds since the epoch.
    pub entered_us: i64,
    /// Exit, microseconds since the epoch; `null` while inside (always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub exited_us: Option<i64>,
    /// Whether another section of the product was inside at some moment
    /// of this one (it entered during another, or another entered during it).
    pub overlap: bool,
}

/// `GET /admin/history/sections`: the current run's sections, oldest
/// first (the finished ones, then those inside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SectionsBody {
    /// The run id (`null` when the history is off; always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub run: Option<String>,
    /// The sections kept (the arbiter keeps the most recent ones).
    pub sections: Vec<Section>,
    /// Finished sections the arbiter no longer keeps (oldest dropped first).
    pub dropped: u64,
}

/// `PUT /admin/history` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = HistoryBody))]
#[serde(deny_unknown_fields)]
pub struct HistorySwitch {
    /// `true`: start a new run (history on, counts from zero); `false`: off.
    pub enabled: bool,
}

/// `PUT /admin/history` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistorySwitched {
    /// Whether a run is recorded now.
    pub enabled: bool,
    /// Its id (`null` when off; always sent).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub run: Option<String>,
}

/// `POST /admin/history/forget` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ForgetBody {
    /// Instance id of a replica that died inside a section (not blank).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, pattern = r"\S"))]
    pub instance: String,
}

/// `POST /admin/history/forget` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Forgotten {
    /// The replica.
    pub instance: String,
    /// Sections of it that were inside and are dropped now.
    pub removed: u64,
}
