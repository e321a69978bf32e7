//! The run the console's charts draw: every grab of the load (a
//! [`GrabLog`] row each), the product's figures sampled four times a
//! second, and the bands — each fault from the moment a replica reported it
//! on to the moment it reported it off, each strategy from its switch to the
//! next — whoever set them (the page, `PUT /admin/faults`, a script).
//!
//! A recording begins with a load and stays, for the charts and "Download
//! this run", until the next load begins. A figure the console could not
//! read is `null` in the series, a gap on the chart, never 0.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;

use seckill_load::api::{Damage, FaultInForce, Service, StatusBody};
use seckill_load::load::{lock, GrabLog, GrabRow, Outcome};

/// How often the watcher reads the service.
const EVERY: Duration = Duration::from_millis(250);

/// What a band marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BandKind {
    Fault,
    Strategy,
}

/// A stretch of the run under one fault, or one strategy.
#[derive(Debug, Clone, Serialize)]
pub struct Band {
    pub kind: BandKind,
    /// The fault's key (`unlock_before_commit`, `pause_ms`), or
    /// `strategy` (the contract's `data-name`).
    pub name: String,
    /// `unlock_before_commit`, `pause_ms=2000` (as the banner names them;
    /// the work delay is not a fault), or the strategy's name.
    pub label: String,
    /// Seconds since the recording began.
    pub from_s: f64,
    /// `None` while it lasts.
    pub to_s: Option<f64>,
    /// The same start and end as Unix milliseconds (the contract's
    /// `data-start-ms` / `data-end-ms`).
    pub start_ms: u64,
    pub end_ms: Option<u64>,
}

/// One reading of the product's figures (`None`: could not be read).
#[derive(Debug, Clone, Serialize)]
pub struct Reading {
    pub t_s: f64,
    pub orders: Option<i64>,
    /// The four counts of damage, each `None` when not read.
    #[serde(flatten)]
    pub damage: Damage<Option<i64>>,
    pub overlaps: Option<u64>,
}

/// One load's recording.
#[derive(Debug)]
pub struct Recording {
    pub log: Arc<GrabLog>,
    /// Wall-clock start, Unix milliseconds (the download's time origin).
    pub began_unix_ms: u64,
    readings: Mutex<Vec<Reading>>,
    bands: Mutex<Vec<Band>>,
    watcher: Mutex<Option<JoinHandle<()>>>,
    /// When the load stopped, seconds since it began.
    ended_s: Mutex<Option<f64>>,
}

impl Recording {
    /// Begin recording now and watch `service` until [`Recording::finish`].
    pub fn begin(service: Service, product: u64) -> Arc<Self> {
        let recording = Arc::new(Recording {
            log: Arc::new(GrabLog::new()),
            began_unix_ms: seckill_load::clock::unix_ms(),
            readings: Mutex::new(Vec::new()),
            bands: Mutex::new(Vec::new()),
            watcher: Mutex::new(None),
            ended_s: Mutex::new(None),
        });
        let watcher = tokio::spawn(watch(Arc::downgrade(&recording), service, product));
        *lock(&recording.watcher) = Some(watcher);
        recording
    }

    /// Seconds since it began.
    fn now_s(&self) -> f64 {
        self.log.began().elapsed().as_secs_f64()
    }

    /// Stop watching (the load stopped); the bands still open stay open,
    /// and the charts end here.
    pub fn finish(&self) {
        if let Some(watcher) = lock(&self.watcher).take() {
            watcher.abort();
        }
        lock(&self.ended_s).get_or_insert(self.now_s());
    }

    /// Note what one read of the service said (or that it failed) at `t_s`.
    fn observe(&self, t_s: f64, status: Option<&StatusBody>) {
        lock(&self.readings).push(Reading {
            t_s,
            orders: status.map(|s| s.orders),
            damage: status.map(|s| s.damage).into(),
            overlaps: status.and_then(|s| s.overlaps),
        });
        // Unread: the bands stay as they were (no fault is taken as off).
        let Some(status) = status else { return };
        let mut on: Vec<(BandKind, String)> = faults_on(&status.faults)
            .into_iter()
            .map(|label| (BandKind::Fault, label))
            .collect();
        on.push((BandKind::Strategy, status.strategy.to_string()));
        let unix_ms = |t_s: f64| self.began_unix_ms + (t_s * 1000.0).round() as u64;
        let mut bands = lock(&self.bands);
        for band in bands.iter_mut().filter(|b| b.to_s.is_none()) {
            if !on.iter().any(|(k, l)| *k == band.kind && *l == band.label) {
                band.to_s = Some(t_s);
                band.end_ms = Some(unix_ms(t_s));
            }
        }
        for (kind, label) in on {
            if !bands
                .iter()
                .any(|b| b.to_s.is_none() && b.kind == kind && b.label == label)
            {
                let name = match kind {
                    BandKind::Fault => label.split('=').next().unwrap_or_default().to_owned(),
                    BandKind::Strategy => "strategy".to_owned(),
                };
                bands.push(Band {
                    kind,
                    name,
                    label,
                    from_s: t_s,
                    to_s: None,
                    start_ms: unix_ms(t_s),
                    end_ms: None,
                });
            }
        }
    }

    /// The bands so far.
    pub fn bands(&self) -> Vec<Band> {
        lock(&self.bands).clone()
    }

    /// The charts' series: one point a second.
    pub fn series(&self) -> Series {
        // While the load runs, whole seconds only: the one under way
        // would draw as a fall.
        let until_s = lock(&self.ended_s).unwrap_or_else(|| self.now_s().floor());
        let bands = self.bands();
        self.log
            .with_rows(|rows| Series::of(rows, &lock(&self.readings), bands, until_s))
    }

    /// Every grab as CSV, one row each: `t_s,replica,outcome,latency_ms,faults`
    /// (`faults`: the fault bands in force when it was sent, `;`-separated).
    pub fn csv(&self) -> String {
        let bands = self.bands();
        let mut out = String::from("t_s,replica,outcome,latency_ms,faults\n");
        for row in self.log.rows() {
            let faults: Vec<&str> = bands
                .iter()
                .filter(|b| b.kind == BandKind::Fault && covers(b, row.t_s))
                .map(|b| b.label.as_str())
                .collect();
            out.push_str(&format!(
                "{:.4},{},{},{:.3},{}\n",
                row.t_s,
                row.replica,
                row.outcome.as_str(),
                row.latency_ms,
                faults.join(";")
            ));
        }
        out
    }

    /// Every grab, reading and band as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "began_unix_ms": self.began_unix_ms,
            "grabs": self.log.rows(),
            "grabs_not_kept": self.log.dropped(),
            "readings": *lock(&self.readings),
            "bands": self.bands(),
        })
    }
}

/// The faults in force as the banner and the bands name them, from the
/// faults the service itself lists as in force (`StatusBody::faults`:
/// every field away from a fresh deployment's value — the status page's
/// banner reads the same list): a switch by its name, any other value as
/// `name=value`. The work delay is the section's simulated work, shown
/// beside the banner, never listed as a fault.
pub fn faults_on(in_force: &[FaultInForce]) -> Vec<String> {
    in_force
        .iter()
        .filter(|fault| fault.name != "work_delay_ms")
        .map(|fault| match fault.value.as_str() {
            "true" => fault.name.clone(),
            value => format!("{}={value}", fault.name),
        })
        .collect()
}

fn covers(band: &Band, t_s: f64) -> bool {
    band.from_s <= t_s && band.to_s.is_none_or(|to| t_s < to)
}

/// Read the service every [`EVERY`] while the recording lives.
async fn watch(recording: std::sync::Weak<Recording>, service: Service, product: u64) {
    loop {
        let Some(recording) = recording.upgrade() else {
            return;
        };
        let mut status = None;
        for base in &service.urls {
            if let Ok(s) = service.status_of(base, product).await {
                status = Some(s);
                break;
            }
        }
        // Stamped when the answer came: what it reports was surely in
        // force by then (a band never starts before its fault landed).
        recording.observe(recording.now_s(), status.as_ref());
        drop(recording);
        tokio::time::sleep(EVERY).await;
    }
}

/// What the charts draw: per second of the run (`t_s` is each second's
/// start).
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub t_s: Vec<f64>,
    pub grabs_per_s: Vec<u64>,
    pub orders_per_s: Vec<u64>,
    /// Answers per second, by outcome name.
    pub outcomes: BTreeMap<&'static str, Vec<u64>>,
    /// Per replica: p50 and p99 latency (ms) of the grabs sent in each
    /// second (`null` for a second without one).
    pub latency: BTreeMap<String, Latency>,
    /// The product's figures at each second's last reading (`null`: none
    /// read in that second, or the read failed).
    pub overlaps: Vec<Option<u64>>,
    /// The four counts of damage, a column each.
    #[serde(flatten)]
    pub damage: Damage<Vec<Option<i64>>>,
    pub bands: Vec<Band>,
}

/// One replica's latency quantiles, a point a second.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    pub p50_ms: Vec<Option<f64>>,
    pub p99_ms: Vec<Option<f64>>,
}

impl Series {
    /// Bucket `rows` and `readings` by whole seconds up to `until_s`.
    pub fn of(rows: &[GrabRow], readings: &[Reading], bands: Vec<Band>, until_s: f64) -> Series {
        let seconds = until_s.max(0.0).ceil() as usize;
        let slot = |t: f64| (t.max(0.0) as usize).min(seconds.saturating_sub(1));
        let mut grabs = vec![0u64; seconds];
        let mut orders = vec![0u64; seconds];
        let mut outcomes: BTreeMap<&'static str, Vec<u64>> = Outcome::ALL
            .iter()
            .map(|o| (o.as_str(), vec![0u64; seconds]))
            .collect();
        let mut waits: BTreeMap<&str, Vec<Vec<f64>>> = BTreeMap::new();
        for row in rows.iter().filter(|_| seconds > 0) {
            let i = slot(row.t_s);
            grabs[i] += 1;
            if row.outcome == Outcome::Ordered {
                orders[i] += 1;
            }
            if let Some(counts) = outcomes.get_mut(row.outcome.as_str()) {
                counts[i] += 1;
            }
            waits
                .entry(row.replica.as_str())
                .or_insert_with(|| vec![Vec::new(); seconds])[i]
                .push(row.latency_ms);
        }
        let latency = waits
            .into_iter()
            .map(|(replica, per_second)| {
                let mut l = Latency::default();
                for mut ms in per_second {
                    ms.sort_by(f64::total_cmp);
                    l.p50_ms.push(quantile(&ms, 0.50));
                    l.p99_ms.push(quantile(&ms, 0.99));
                }
                (replica.to_owned(), l)
            })
            .collect();
        let mut overlaps = vec![None; seconds];
        let mut damage = Damage::each(vec![None; seconds]);
        for r in readings.iter().filter(|_| seconds > 0) {
            let i = slot(r.t_s);
            overlaps[i] = r.overlaps;
            damage.oversold[i] = r.damage.oversold;
            damage.lost_updates[i] = r.damage.lost_updates;
            damage.undersold[i] = r.damage.undersold;
            damage.duplicates[i] = r.damage.duplicates;
        }
        Series {
            t_s: (0..seconds).map(|s| s as f64).collect(),
            grabs_per_s: grabs,
            orders_per_s: orders,
            outcomes,
            latency,
            overlaps,
            damage,
            bands,
        }
    }
}

/// The `q` quantile of sorted `ms` (nearest rank), `None` when empty.
fn quantile(ms: &[f64], q: f64) -> Option<f64> {
    if ms.is_empty() {
        return None;
    }
    let rank = ((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len());
    Some(ms[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_s: f64, replica: &str, outcome: Outcome, latency_ms: f64) -> GrabRow {
        GrabRow {
            t_s,
            replica: replica.into(),
            outcome,
            latency_ms,
        }
    }

    #[test]
    fn the_banner_names_switches_and_values_and_never_the_work_delay() {
        assert!(faults_on(&[]).is_empty());
        let fault = |name: &str, value: &str| FaultInForce {
            name: name.into(),
            value: value.into(),
        };
        assert_eq!(
            faults_on(&[
                fault("acquire_pause_ms", "300"),
                fault("pause_at", "before-commit"),
                fault("pause_ms", "2000"),
                fault("unlock_before_commit", "true"),
                fault("work_delay_ms", "20"),
            ]),
            vec![
                "acquire_pause_ms=300".to_owned(),
                "pause_at=before-commit".to_owned(),
                "pause_ms=2000".to_owned(),
                "unlock_before_commit".to_owned(),
            ]
        );
    }

    #[test]
    fn grabs_are_counted_per_second_and_per_replica() {
        let rows = [
            row(0.1, "a", Outcome::Ordered, 10.0),
            row(0.5, "a", Outcome::Busy, 30.0),
            row(0.9, "b", Outcome::Ordered, 5.0),
            row(2.2, "a", Outcome::Error, 100.0),
        ];
        let s = Series::of(&rows, &[], Vec::new(), 2.5);
        assert_eq!(s.t_s, [0.0, 1.0, 2.0]);
        assert_eq!(s.grabs_per_s, [3, 0, 1]);
        assert_eq!(s.orders_per_s, [2, 0, 0]);
        assert_eq!(s.outcomes["busy"], [1, 0, 0]);
        assert_eq!(s.outcomes["error"], [0, 0, 1]);
        assert_eq!(s.latency["a"].p50_ms, [Some(10.0), None, Some(100.0)]);
        assert_eq!(s.latency["a"].p99_ms, [Some(30.0), None, Some(100.0)]);
        assert_eq!(s.latency["b"].p99_ms, [Some(5.0), None, None]);
    }

    #[test]
    fn a_figure_not_read_is_missing_not_zero() {
        let read = |t_s, overlaps| Reading {
            t_s,
            orders: Some(1),
            damage: Damage::default().map(Some),
            overlaps,
        };
        let failed = Reading {
            t_s: 1.5,
            orders: None,
            damage: None::<Damage>.into(),
            overlaps: None,
        };
        let s = Series::of(&[], &[read(0.2, Some(3)), failed], Vec::new(), 3.0);
        assert_eq!(s.overlaps, [Some(3), None, None]);
        assert_eq!(s.damage.lost_updates, [Some(0), None, None]);
    }

    fn status(strategy: &str, faults: &[(&str, &str)]) -> StatusBody {
        serde_json::from_value(serde_json::json!({
            "strategy": strategy, "guarantee": "", "product_id": 1, "stock": 1,
            "initial_stock": 1, "orders": 0, "ordered_units": 0, "oversold": 0,
            "lost_updates": 0, "undersold": 0, "duplicates": 0, "grabs_total": 0,
            "grabs_per_sec": 0.0, "replica": "r",
            "faults": faults.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
            "history_run": null, "overlaps": null,
        }))
        .expect("a status body")
    }

    #[test]
    fn a_fault_is_a_band_from_the_read_that_saw_it_on_to_the_one_that_saw_it_off() {
        let recording = Recording {
            log: Arc::new(GrabLog::new()),
            began_unix_ms: 0,
            readings: Mutex::new(Vec::new()),
            bands: Mutex::new(Vec::new()),
            watcher: Mutex::new(None),
            ended_s: Mutex::new(None),
        };
        recording.observe(0.0, Some(&status("none", &[])));
        recording.observe(
            5.0,
            Some(&status("none", &[("unlock_before_commit", "true")])),
        );
        recording.observe(6.0, None);
        recording.observe(
            7.0,
            Some(&status("redlock", &[("unlock_before_commit", "true")])),
        );
        recording.observe(9.0, Some(&status("redlock", &[])));
        let bands: Vec<(BandKind, String, f64, Option<f64>)> = recording
            .bands()
            .into_iter()
            .map(|b| (b.kind, b.label, b.from_s, b.to_s))
            .collect();
        assert_eq!(
            bands,
            [
                (BandKind::Strategy, "none".into(), 0.0, Some(7.0)),
                (
                    BandKind::Fault,
                    "unlock_before_commit".into(),
                    5.0,
                    Some(9.0)
                ),
                (BandKind::Strategy, "redlock".into(), 7.0, None),
            ]
        );
        recording.log.push(
            recording.log.began() + Duration::from_secs_f64(5.5),
            "http://r",
            Outcome::Ordered,
            Duration::from_millis(12),
        );
        let csv = recording.csv();
        assert_eq!(
            csv.lines().collect::<Vec<_>>(),
            [
                "t_s,replica,outcome,latency_ms,faults",
                "5.5000,http://r,ordered,12.000,unlock_before_commit"
            ]
        );
    }
}
