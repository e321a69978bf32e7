//! The console's paced load: the crate's one [`Driver`], paced — grabs at
//! a set average rate (a Poisson process), long enough to watch, spread
//! round-robin over the replicas, with a share of buyers who come back (so
//! `already_purchased` — and under a broken lock, duplicate orders — can
//! appear). Busy and rejected grabs are counted, not retried: the room
//! sees them. The room turns the rate and the buyers up and down while it
//! runs ([`Pacer::adjust`], `POST /api/load/adjust`).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use seckill_load::api::Service;
use seckill_load::load::{targets, Driver, GrabLog, Live, Outcome, Pace, Plan, Users};

/// What the room asked for (`POST /api/load/start`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSettings {
    /// Grabs started per second (0.1 to 5000).
    pub rate: f64,
    /// Grabs in flight at most (1 to 1000).
    pub buyers: usize,
    /// The product is reset to this stock when the load starts (1 to 10⁹).
    pub stock: u64,
    /// Share of grabs by a buyer who already tried (0 to 1).
    pub repeat_ratio: f64,
    /// The simulated work inside the critical section, set on every
    /// replica when the load starts (the `work_delay_ms` of
    /// `/admin/faults`); absent: left as it is. Sections long beside the
    /// gap between grabs are what lets a broken lock show its overlaps at
    /// a rate a room can watch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_delay_ms: Option<u64>,
}

impl Default for LoadSettings {
    fn default() -> Self {
        Self {
            rate: 30.0,
            buyers: 20,
            stock: 1000,
            repeat_ratio: 0.1,
            work_delay_ms: Some(20),
        }
    }
}

/// A change of a running load (`POST /api/load/adjust`): either or both.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadAdjust {
    /// Grabs started per second (0.1 to 5000).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Grabs in flight at most (1 to 1000).
    #[serde(default)]
    pub buyers: Option<usize>,
}

impl LoadAdjust {
    /// The change, or what is wrong with it (a 400 for the page).
    pub fn check(&self) -> Result<(), String> {
        if self.rate.is_none() && self.buyers.is_none() {
            return Err("give rate, buyers or both".into());
        }
        self.rate.map_or(Ok(()), check_rate)?;
        self.buyers.map_or(Ok(()), check_buyers)
    }
}

fn check_rate(rate: f64) -> Result<(), String> {
    if (0.1..=5000.0).contains(&rate) {
        Ok(())
    } else {
        Err("rate must be between 0.1 and 5000 grabs per second".into())
    }
}

fn check_buyers(buyers: usize) -> Result<(), String> {
    if (1..=1000).contains(&buyers) {
        Ok(())
    } else {
        Err("buyers must be between 1 and 1000".into())
    }
}

impl LoadSettings {
    /// The settings, or what is wrong with them (a 400 for the page).
    pub fn check(&self) -> Result<(), String> {
        check_rate(self.rate)?;
        check_buyers(self.buyers)?;
        if !(1..=1_000_000_000).contains(&self.stock) {
            return Err("stock must be between 1 and 1000000000".into());
        }
        if !(0.0..=1.0).contains(&self.repeat_ratio) {
            return Err("repeat_ratio must be between 0 and 1".into());
        }
        if self.work_delay_ms.is_some_and(|ms| ms > 10_000) {
            return Err("work_delay_ms must be at most 10000".into());
        }
        Ok(())
    }
}

/// A snapshot of a load's answers for the page.
#[derive(Debug, Clone, Serialize)]
pub struct CountsView {
    /// Grabs sent.
    pub sent: u64,
    /// Answers by outcome name (`ordered`, `sold_out`, … `error`).
    pub outcomes: std::collections::BTreeMap<&'static str, u64>,
}

/// A load that runs until stopped (or dropped).
#[derive(Debug)]
pub struct Pacer {
    /// What it was started with (its rate and buyers may have changed
    /// since: [`Pacer::settings`]).
    started_with: LoadSettings,
    driver: Driver,
}

impl Pacer {
    /// Start grabbing `product` through `service` at `settings`' pace.
    pub fn start(
        service: &Service,
        product: u64,
        settings: LoadSettings,
        log: Arc<GrabLog>,
    ) -> Self {
        let plan = Plan {
            http: service.http().clone(),
            targets: targets(service.urls.clone()),
            product,
            users: Users {
                next: Arc::new(AtomicU64::new(1)),
                repeat_ratio: settings.repeat_ratio,
            },
            pace: Pace::Rate {
                per_sec: settings.rate,
            },
            buyers: settings.buyers,
            log: Some(log),
        };
        Self {
            started_with: settings,
            driver: Driver::start(plan, &Arc::new(Live::default())),
        }
    }

    /// Its settings now: the rate and buyers as last adjusted.
    pub fn settings(&self) -> LoadSettings {
        LoadSettings {
            rate: self.driver.rate().unwrap_or(self.started_with.rate),
            buyers: self.driver.buyers(),
            ..self.started_with
        }
    }

    /// Change its rate and buyers while it runs (checked first).
    pub fn adjust(&self, change: LoadAdjust) {
        self.driver.adjust(change.rate, change.buyers);
    }

    /// What was counted until now.
    pub fn counts(&self) -> CountsView {
        let live = self.driver.live();
        CountsView {
            sent: live.sent(),
            outcomes: Outcome::ALL
                .iter()
                .map(|o| (o.as_str(), live.outcome(*o)))
                .collect(),
        }
    }

    /// Seconds since it started.
    pub fn seconds(&self) -> f64 {
        self.driver.seconds()
    }

    /// Whether a stop was asked for (its grabs in flight may still be
    /// answered).
    pub fn stopping(&self) -> bool {
        self.driver.stopping()
    }

    /// Stop: the grabs in flight are answered and counted first
    /// ([`Driver::stop`]).
    pub async fn stop(&self) {
        self.driver.stop().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_are_refused_with_the_field_named() {
        let ok = LoadSettings::default();
        assert_eq!(ok.check(), Ok(()));
        for (bad, field) in [
            (LoadSettings { rate: 0.0, ..ok }, "rate"),
            (LoadSettings { buyers: 0, ..ok }, "buyers"),
            (LoadSettings { stock: 0, ..ok }, "stock"),
            (
                LoadSettings {
                    work_delay_ms: Some(60_000),
                    ..ok
                },
                "work_delay_ms",
            ),
            (
                LoadSettings {
                    repeat_ratio: 1.5,
                    ..ok
                },
                "repeat_ratio",
            ),
        ] {
            let message = bad.check().expect_err("refused");
            assert!(message.starts_with(field), "{message}");
        }
    }

    #[test]
    fn an_adjustment_out_of_range_or_empty_is_refused() {
        let ok = LoadAdjust {
            rate: Some(50.0),
            buyers: None,
        };
        assert_eq!(ok.check(), Ok(()));
        for (bad, start) in [
            (
                LoadAdjust {
                    rate: Some(0.0),
                    buyers: None,
                },
                "rate",
            ),
            (
                LoadAdjust {
                    rate: None,
                    buyers: Some(0),
                },
                "buyers",
            ),
            (
                LoadAdjust {
                    rate: None,
                    buyers: None,
                },
                "give",
            ),
        ] {
            let message = bad.check().expect_err("refused");
            assert!(message.starts_with(start), "{message}");
        }
    }
}
