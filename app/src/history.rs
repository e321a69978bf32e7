//! The mutual-exclusion history: every critical section reports its entry
//! and its exit to one arbiter shared by all replicas, so two holders at
//! once — on one replica or across several — are *counted*, not inferred
//! from the audit.
//!
//! The arbiter is a Redis server of its own (`SECKILL_HISTORY_URL`; by
//! default the service's Redis), never one the scenarios break: the scenario
//! runner starts a dedicated `redis-server` for it. Each entry and exit is
//! one Lua script (`history_enter.lua`, `history_exit.lua`) stamped with
//! the arbiter's own clock (`TIME`), so replicas whose clocks disagree still
//! agree on the order of events.
//!
//! **Where a section begins and ends.** For a lock around the section
//! (`grab_with_lock`): it begins once the lock is granted, before the stock
//! is read, and ends after the commit (or the rollback) — *before* the
//! release, so a correct lock can never show a false overlap: the exit is
//! recorded before the next holder can be granted. A section whose lock's
//! last check refuses it (a lease lost, Redlock's validity run out) ends at
//! that check, before the rollback of a transaction that has only read:
//! from there on it writes nothing. With the
//! `unlock_before_commit` fault the release comes first, so the commit
//! after it is (correctly) inside. For a lock inside the transaction
//! (`pg-for-update`, `pg-advisory`) the section begins when the row or
//! advisory lock is granted and ends just before the commit that releases
//! it. Strategies that are not locks (`pg-optimistic`, `pg-atomic`,
//! `redis-lua-stock`) have no section and record nothing.
//!
//! **Overlap** = a section that began while another section of the same
//! product was inside. **max_holders** = the most sections inside at once.
//! A replica killed inside a section never reports its exit: whoever killed
//! it calls `POST /admin/history/forget` with its instance id.
//!
//! **What is recorded, per run.** Counts per strategy (`entries`,
//! `overlaps`, `max_holders`), the first 20 overlaps (who entered, who was
//! inside), the sections inside now (member → entry time and strategy), and
//! every finished section: on exit, `history_exit.lua` appends its record —
//! replica, member, strategy, product, entry and exit time on the arbiter's
//! clock, and whether it overlapped — to a list that keeps the most recent
//! [`SECTIONS_KEPT`] (older ones are dropped and counted). A section
//! *overlapped* when another of its product was inside at some moment of
//! it: the entry script marks both sides (the one entering and every one
//! inside) in a per-run set, which the exit reads. `GET
//! /admin/history/sections` serves the list ([`History::sections`]). Entry
//! and exit stay one script call each: the grab path pays no more round
//! trips for the record.
//!
//! **The stale bound** (`SECKILL_HISTORY_STALE_MS`, default 60 s). An exit
//! that never reached the arbiter leaves its member inside, and every later
//! entry of the product would count an overlap with that ghost — a false
//! overlap for a lock that held. So the entry script drops the members
//! inside for longer than the bound, counts them as `stale` (per run, on the
//! arbiter; `stale` in `GET /admin/history`), and does not count them as
//! holders. The price: a section that really lasts longer than the bound (a
//! holder frozen for minutes) is dropped too, and an overlap with it after
//! that is missed — so the bound must exceed the longest section to judge;
//! when such a section's own exit then finds itself dropped, its replica
//! counts an error. A replica whose exit failed also retries it once,
//! [`EXIT_RETRY_AFTER`] later, as a *late* exit: the ghost leaves at once
//! (no record: its true exit time is unknown); a failed entry is retried
//! the same way, in case it reached the arbiter after all.
//!
//! **Switched on per run** (`PUT /admin/history {"enabled": true}` starts a
//! new run id on the arbiter; every replica follows within
//! `SECKILL_CONTROL_REFRESH_MS`). Off, it costs one relaxed atomic load per
//! grab; on, two arbiter round trips inside the critical section (measured
//! in the README). An arbiter call that fails is counted
//! (`seckill_history_errors_total`, and `errors` in `GET /admin/history`)
//! so an incomplete history never passes for a clean one. **`errors` is per
//! run and per replica**: it starts from zero when the replica sees a new
//! run id (its own `switch`, or a refresh), and counts this replica's
//! failed entries and exits of that run, its exits that found their section
//! dropped, and its failed refreshes of the run id while a run is on (a
//! replica that cannot read the run id may record a finished run while a
//! new one misses its sections). A replica whose refreshes failed and that
//! then finds a *new* run starts that run at one error: it may have missed
//! the run's first sections.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock, RwLockWriteGuard};
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::Script;

use crate::error::GrabError;
use crate::metrics::Metrics;

/// Arbiter key holding the current run id (absent: history off).
pub const RUN_KEY: &str = "seckill:history:run";
/// How long a run's keys stay on the arbiter.
const RUN_KEYS_TTL: Duration = Duration::from_secs(24 * 3600);
/// How many finished sections the arbiter keeps per run (the most recent;
/// older ones are dropped and counted in `dropped`).
pub const SECTIONS_KEPT: u64 = 20_000;
/// When a failed exit (or entry) is tried again, once, as a late exit.
pub const EXIT_RETRY_AFTER: Duration = Duration::from_secs(5);
/// The stale bound when none is set (`SECKILL_HISTORY_STALE_MS`).
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(60);

/// `history_enter.lua`: a section begins (stale members dropped, counts,
/// overlaps marked, first events).
static ENTER_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("history_enter.lua")));

/// `history_exit.lua`: a section ends (its record appended).
static EXIT_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("history_exit.lua")));

/// `history_forget.lua`: drop the sections a dead replica left inside.
static FORGET_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("history_forget.lua")));

/// One replica's handle on the arbiter.
#[derive(Debug, Clone)]
pub struct History {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: ConnectionManager,
    instance: String,
    view: RwLock<RunView>,
    seq: AtomicU64,
    /// Failed calls of any run, to thin out the warnings.
    failures: AtomicU64,
    /// The stale bound, in µs.
    stale_us: AtomicU64,
    /// Bumped by [`History::switch`] before it writes the run id and again
    /// when it applies it, so a refresh that read the run id meanwhile
    /// does not put the old one back.
    switches: AtomicU64,
    /// A refresh failed since the last one that succeeded.
    refresh_failed: AtomicBool,
    metrics: Metrics,
}

/// The run this replica records, and its errors in that run.
#[derive(Debug, Default)]
struct RunView {
    /// The run recorded now (`None`: off).
    run: Option<String>,
    /// The run `errors` counts for: the last run seen (kept while off, so
    /// a report read after the run stopped still has its errors).
    counted: Option<String>,
    /// Failed arbiter calls of `counted` on this replica.
    errors: u64,
}

/// A section that is inside, to be reported out by [`History::exit`].
#[derive(Debug)]
pub struct Entered {
    run: String,
    product: i64,
    member: String,
}

/// What `GET /admin/history` and `GET /admin/history/sections` answer:
/// wire types, shared with the load generator.
pub use seckill_wire::history::{
    HistoryReport, Inside, OverlapEvent, Section, SectionsBody, StrategyHistory,
};

/// The arbiter keys of one run.
struct RunKeys {
    /// Hash of counts: `{strategy}|entries`, `|overlaps`, `|max_holders`,
    /// and `stale`, `sections_dropped`.
    stats: String,
    /// List of the first overlaps (JSON).
    first: String,
    /// Set of the products that saw an entry.
    products: String,
    /// Set of the members that overlapped (removed at their exit).
    overlapping: String,
    /// List of the finished sections (JSON of [`Section`]), oldest exit first.
    sections: String,
}

impl RunKeys {
    fn of(run: &str) -> Self {
        Self {
            stats: format!("seckill:history:{run}:stats"),
            first: format!("seckill:history:{run}:first"),
            products: format!("seckill:history:{run}:products"),
            overlapping: format!("seckill:history:{run}:overlapping"),
            sections: format!("seckill:history:{run}:sections"),
        }
    }
}

fn inside_key(run: &str, product: i64) -> String {
    format!("seckill:history:{run}:inside:{product}")
}

/// The replica of a member `{instance}:{n}`.
fn instance_of(member: &str) -> &str {
    member.rsplit_once(':').map_or(member, |(i, _)| i)
}

/// An inside hash's value: `{entry µs}|{strategy}` (a bare entry time, as
/// an older build wrote it, has no strategy). An entry time that is not a
/// number is an error naming the value, never a section entered at 0.
fn parse_inside(value: &str) -> Result<(i64, &str), GrabError> {
    let (since, strategy) = value.split_once('|').unwrap_or((value, ""));
    let since = since.parse().map_err(|e| {
        GrabError::Internal(format!("history: unreadable inside record {value:?}: {e}"))
    })?;
    Ok((since, strategy))
}

/// A run's stats hash, read whole and typed: the fields
/// `history_enter.lua` and `history_exit.lua` write. A field this build
/// does not know is an error, never a 0: a counter renamed in the Lua
/// must fail the read (and the run's verdict with it), not read as no
/// overlaps.
#[derive(Debug, Default, PartialEq, Eq)]
struct RunStats {
    /// `stale`: sections found older than the stale bound and dropped.
    stale: u64,
    /// `sections_dropped`: finished sections the arbiter no longer keeps.
    sections_dropped: u64,
    /// `<strategy>|entries`, `|overlaps` and `|max_holders`, by strategy in
    /// the order first seen.
    strategies: Vec<StrategyHistory>,
}

impl RunStats {
    /// Every field of the hash, each into its place.
    fn parse(fields: &[(String, u64)]) -> Result<Self, String> {
        let mut stats = Self::default();
        for (field, value) in fields {
            let slot = match field.rsplit_once('|') {
                None => match field.as_str() {
                    "stale" => &mut stats.stale,
                    "sections_dropped" => &mut stats.sections_dropped,
                    other => return Err(format!("history: unknown run field {other:?}")),
                },
                Some((strategy, counter)) => {
                    let entry = stats.strategy(strategy);
                    match counter {
                        "entries" => &mut entry.entries,
                        "overlaps" => &mut entry.overlaps,
                        "max_holders" => &mut entry.max_holders,
                        other => {
                            return Err(format!("history: unknown counter {other:?} in {field:?}"))
                        }
                    }
                }
            };
            *slot = *value;
        }
        Ok(stats)
    }

    /// The figures of `strategy`, added when first seen.
    fn strategy(&mut self, strategy: &str) -> &mut StrategyHistory {
        let at = match self.strategies.iter().position(|s| s.strategy == strategy) {
            Some(at) => at,
            None => {
                self.strategies.push(StrategyHistory {
                    strategy: strategy.to_owned(),
                    ..StrategyHistory::default()
                });
                self.strategies.len() - 1
            }
        };
        &mut self.strategies[at]
    }

    /// The stats hash of `run`, one `HGETALL`.
    async fn read(conn: &mut ConnectionManager, run: &str) -> Result<Self, GrabError> {
        let fields: Vec<(String, u64)> = redis::cmd("HGETALL")
            .arg(RunKeys::of(run).stats)
            .query_async(conn)
            .await?;
        Self::parse(&fields).map_err(GrabError::Internal)
    }
}

impl History {
    /// A handle on the arbiter at `url`, for replica `instance`, with the
    /// default stale bound ([`History::set_stale_after`] changes it).
    pub fn new(url: &str, instance: String, metrics: Metrics) -> anyhow::Result<Self> {
        let conn = crate::redis_client::connection(url)?;
        Ok(Self {
            inner: Arc::new(Inner {
                conn,
                instance,
                view: RwLock::new(RunView::default()),
                seq: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                stale_us: AtomicU64::new(duration_us(DEFAULT_STALE_AFTER)),
                switches: AtomicU64::new(0),
                refresh_failed: AtomicBool::new(false),
                metrics,
            }),
        })
    }

    /// Members inside for longer than `bound` are dropped as stale by the
    /// next entry of their product (`SECKILL_HISTORY_STALE_MS`).
    pub fn set_stale_after(&self, bound: Duration) {
        self.inner
            .stale_us
            .store(duration_us(bound).max(1), Ordering::Relaxed);
    }

    /// This replica's instance id.
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    fn view_mut(&self) -> RwLockWriteGuard<'_, RunView> {
        self.inner
            .view
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn run(&self) -> Option<String> {
        self.inner
            .view
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .run
            .clone()
    }

    /// Record `run` from now on; a run other than the one `errors` counts
    /// for starts its count at `carried`.
    fn set_run(view: &mut RunView, run: Option<String>, carried: u64) {
        if run.is_some() && run != view.counted {
            view.counted.clone_from(&run);
            view.errors = carried;
        }
        view.run = run;
    }

    /// A failed arbiter call of `run`: counted in `errors` while `run` is
    /// still the counted one (a call of a finished run is not this run's
    /// error); `section` calls (an entry or an exit) also in the metric.
    fn failed(&self, run: &str, what: &str, error: &dyn std::fmt::Display, section: bool) {
        {
            let mut view = self.view_mut();
            if view.counted.as_deref() == Some(run) {
                view.errors += 1;
            }
        }
        if section {
            self.inner.metrics.history_errors.inc();
        }
        let n = self.inner.failures.fetch_add(1, Ordering::Relaxed);
        if n == 0 || n.is_power_of_two() {
            tracing::warn!(error = %error, "history: {what} failed (counted in errors)");
        }
    }

    /// Record the start of a section, when a run is on.
    pub async fn enter(&self, strategy: &str, product: i64) -> Option<Entered> {
        let run = self.run()?;
        let n = self.inner.seq.fetch_add(1, Ordering::Relaxed);
        let member = format!("{}:{n}", self.inner.instance);
        let keys = RunKeys::of(&run);
        let mut conn = self.inner.conn.clone();
        let result: Result<i64, _> = ENTER_SCRIPT
            .key(inside_key(&run, product))
            .key(keys.stats)
            .key(keys.first)
            .key(keys.products)
            .key(keys.overlapping)
            .arg(&member)
            .arg(strategy)
            .arg(product)
            .arg(RUN_KEYS_TTL.as_secs())
            .arg(self.inner.stale_us.load(Ordering::Relaxed))
            .invoke_async(&mut conn)
            .await;
        let entered = Entered {
            run,
            product,
            member,
        };
        match result {
            Ok(_) => Some(entered),
            Err(e) => {
                self.failed(&entered.run, "a section's entry", &e, true);
                // It may have reached the arbiter all the same (an answer
                // lost on the way back): take it out later.
                self.exit_later(entered);
                None
            }
        }
    }

    /// One call of `history_exit.lua`: whether the member was inside.
    async fn call_exit(&self, entered: &Entered, late: bool) -> Result<bool, redis::RedisError> {
        let keys = RunKeys::of(&entered.run);
        let mut conn = self.inner.conn.clone();
        let was_inside: i64 = EXIT_SCRIPT
            .key(inside_key(&entered.run, entered.product))
            .key(keys.stats)
            .key(keys.sections)
            .key(keys.overlapping)
            .arg(&entered.member)
            .arg(entered.product)
            .arg(RUN_KEYS_TTL.as_secs())
            .arg(SECTIONS_KEPT)
            .arg(if late { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?;
        Ok(was_inside == 1)
    }

    /// Take `entered` out, once, [`EXIT_RETRY_AFTER`] from now, as a late
    /// exit (no record, no error counted: its failure was counted).
    fn exit_later(&self, entered: Entered) {
        let history = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(EXIT_RETRY_AFTER).await;
            match history.call_exit(&entered, true).await {
                Ok(true) => {
                    tracing::info!(member = %entered.member, "history: a lost exit, retried late: the section left");
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::debug!(member = %entered.member, error = %e, "history: the late exit failed too (the stale bound will drop it)");
                }
            }
        });
    }

    /// Record the end of a section.
    pub async fn exit(&self, entered: Option<Entered>) {
        let Some(entered) = entered else { return };
        match self.call_exit(&entered, false).await {
            Ok(true) => {}
            Ok(false) => self.failed(
                &entered.run,
                "a section's exit",
                &"the section had been dropped before its exit \
                  (inside longer than SECKILL_HISTORY_STALE_MS, or forgotten): \
                  overlaps with it since were not counted",
                true,
            ),
            Err(e) => {
                self.failed(&entered.run, "a section's exit", &e, true);
                self.exit_later(entered);
            }
        }
    }

    /// Start a new run (history on) or stop recording; every replica
    /// follows at its next refresh.
    pub async fn switch(&self, enabled: bool) -> Result<Option<String>, GrabError> {
        let mut conn = self.inner.conn.clone();
        self.inner.switches.fetch_add(1, Ordering::SeqCst);
        let run = if enabled {
            // A fresh run id, shaped like a lock token.
            let run = uuid::Uuid::new_v4().simple().to_string();
            redis::cmd("SET")
                .arg(RUN_KEY)
                .arg(&run)
                .query_async::<()>(&mut conn)
                .await?;
            Some(run)
        } else {
            redis::cmd("DEL")
                .arg(RUN_KEY)
                .query_async::<()>(&mut conn)
                .await?;
            None
        };
        let mut view = self.view_mut();
        self.inner.switches.fetch_add(1, Ordering::SeqCst);
        // This replica started the run itself: it missed none of it.
        self.inner.refresh_failed.store(false, Ordering::Relaxed);
        Self::set_run(&mut view, run.clone(), 0);
        Ok(run)
    }

    /// Re-read the run id from the arbiter. A failure while a run is on is
    /// counted in its errors: this replica may be recording a run that has
    /// ended while a new one misses its sections.
    pub async fn refresh(&self) -> Result<(), GrabError> {
        let switches = self.inner.switches.load(Ordering::SeqCst);
        let mut conn = self.inner.conn.clone();
        let read: Result<Option<String>, _> =
            redis::cmd("GET").arg(RUN_KEY).query_async(&mut conn).await;
        match read {
            Ok(run) => {
                let missed = self.inner.refresh_failed.swap(false, Ordering::Relaxed);
                let mut view = self.view_mut();
                // A switch on this replica since the read wins over it.
                if self.inner.switches.load(Ordering::SeqCst) == switches {
                    Self::set_run(&mut view, run, u64::from(missed));
                }
                Ok(())
            }
            Err(e) => {
                self.inner.refresh_failed.store(true, Ordering::Relaxed);
                if let Some(run) = self.run() {
                    self.failed(&run, "a refresh of the run id", &e, false);
                }
                Err(e.into())
            }
        }
    }

    /// Refresh every `interval` until `stop` fires.
    pub async fn refresh_loop(self, interval: Duration, stop: tokio::sync::watch::Receiver<bool>) {
        crate::redis_client::refresh_every("the history run id", interval, stop, move || {
            let history = self.clone();
            async move { history.refresh().await }
        })
        .await;
    }

    /// Drop the sections a dead replica left inside. Returns how many.
    pub async fn forget(&self, instance: &str) -> Result<u64, GrabError> {
        let Some(run) = self.run() else { return Ok(0) };
        let keys = RunKeys::of(&run);
        let mut conn = self.inner.conn.clone();
        let removed: u64 = FORGET_SCRIPT
            .key(keys.products)
            .key(keys.overlapping)
            .arg(format!("seckill:history:{run}:inside:"))
            .arg(format!("{instance}:"))
            .invoke_async(&mut conn)
            .await?;
        Ok(removed)
    }

    /// The sections inside now, per product of the run: (product, member,
    /// entry µs, strategy).
    async fn inside_now(
        conn: &mut ConnectionManager,
        run: &str,
        products: &str,
    ) -> Result<Vec<(i64, String, i64, String)>, GrabError> {
        let product_ids: Vec<i64> = redis::cmd("SMEMBERS")
            .arg(products)
            .query_async(conn)
            .await?;
        let mut inside = Vec::new();
        for product in product_ids {
            let members: Vec<(String, String)> = redis::cmd("HGETALL")
                .arg(inside_key(run, product))
                .query_async(conn)
                .await?;
            for (member, value) in members {
                let (since_us, strategy) = parse_inside(&value)?;
                let strategy = strategy.to_owned();
                inside.push((product, member, since_us, strategy));
            }
        }
        Ok(inside)
    }

    /// The run this replica records (`None`: the history is off).
    pub fn current_run(&self) -> Option<String> {
        self.run()
    }

    /// The overlaps the arbiter counted in `run`, every strategy summed:
    /// one `HGETALL`, cheap enough for every status event.
    pub async fn overlaps(&self, run: &str) -> Result<u64, GrabError> {
        let mut conn = self.inner.conn.clone();
        let stats = RunStats::read(&mut conn, run).await?;
        Ok(stats.strategies.iter().map(|s| s.overlaps).sum())
    }

    /// The current run's figures, read from the arbiter.
    pub async fn report(&self) -> Result<HistoryReport, GrabError> {
        let (run, errors) = {
            let view = self
                .inner
                .view
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (view.run.clone(), view.errors)
        };
        let mut report = HistoryReport {
            enabled: run.is_some(),
            run: run.clone(),
            instance: self.inner.instance.clone(),
            errors,
            stale: 0,
            strategies: Vec::new(),
            inside: Vec::new(),
            first_overlaps: Vec::new(),
        };
        let Some(run) = run else { return Ok(report) };
        let keys = RunKeys::of(&run);
        let mut conn = self.inner.conn.clone();
        let stats = RunStats::read(&mut conn, &run).await?;
        report.stale = stats.stale;
        report.strategies = stats.strategies;
        for (product, member, since_us, _) in
            Self::inside_now(&mut conn, &run, &keys.products).await?
        {
            report.inside.push(Inside {
                instance: instance_of(&member).to_owned(),
                member,
                product,
                since_us,
            });
        }
        let events: Vec<String> = redis::cmd("LRANGE")
            .arg(&keys.first)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        for event in events {
            match serde_json::from_str::<OverlapEvent>(&event) {
                Ok(event) => report.first_overlaps.push(event),
                // Written by another build of `history_enter.lua`: still an
                // overlap (the counts have it), only its detail is lost.
                Err(e) => tracing::warn!(%event, error = %e, "history: unreadable overlap event"),
            }
        }
        Ok(report)
    }

    /// The current run's sections as the arbiter has them: the most recent
    /// `last` finished ones it keeps (at most [`SECTIONS_KEPT`]), oldest
    /// entry first, then those inside now (`exited_us` null), oldest entry
    /// first.
    pub async fn sections(&self, last: u64) -> Result<SectionsBody, GrabError> {
        let Some(run) = self.run() else {
            return Ok(SectionsBody {
                run: None,
                sections: Vec::new(),
                dropped: 0,
            });
        };
        let keys = RunKeys::of(&run);
        let mut conn = self.inner.conn.clone();
        // Inside first, the finished list after: a section that exits
        // between the two reads is found in both (and kept as finished),
        // never in neither.
        let inside = Self::inside_now(&mut conn, &run, &keys.products).await?;
        let overlapping: HashSet<String> = redis::cmd("SMEMBERS")
            .arg(&keys.overlapping)
            .query_async(&mut conn)
            .await?;
        // The list is in exit order, oldest first: its tail is the newest.
        let from = -i64::try_from(last.max(1)).unwrap_or(i64::MAX);
        let records: Vec<String> = redis::cmd("LRANGE")
            .arg(&keys.sections)
            .arg(from)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        let dropped = RunStats::read(&mut conn, &run).await?.sections_dropped;
        // A record this build cannot read fails the read (and the run's
        // verdict with it): it is never a section that did not happen.
        let mut finished = records
            .iter()
            .map(|record| {
                serde_json::from_str::<Section>(record).map_err(|e| {
                    GrabError::Internal(format!("history: unreadable section record {record}: {e}"))
                })
            })
            .collect::<Result<Vec<Section>, GrabError>>()?;
        finished.sort_by(|a, b| (a.entered_us, &a.member).cmp(&(b.entered_us, &b.member)));
        let done: HashSet<&str> = finished.iter().map(|s| s.member.as_str()).collect();
        let mut open: Vec<Section> = inside
            .into_iter()
            .filter(|(_, member, _, _)| !done.contains(member.as_str()))
            .map(|(product, member, entered_us, strategy)| Section {
                instance: instance_of(&member).to_owned(),
                overlap: overlapping.contains(&member),
                member,
                strategy,
                product,
                entered_us,
                exited_us: None,
            })
            .collect();
        open.sort_by(|a, b| (a.entered_us, &a.member).cmp(&(b.entered_us, &b.member)));
        finished.extend(open);
        Ok(SectionsBody {
            run: Some(run),
            sections: finished,
            dropped,
        })
    }
}

fn duration_us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
        pairs.iter().map(|(f, v)| ((*f).to_owned(), *v)).collect()
    }

    #[test]
    fn an_inside_record_whose_entry_time_is_not_a_number_is_an_error_not_zero() {
        assert_eq!(
            parse_inside("1700000000000000|redlock").expect("read"),
            (1_700_000_000_000_000, "redlock")
        );
        assert_eq!(parse_inside("42").expect("an older build's"), (42, ""));
        let e = parse_inside("soon|redlock").expect_err("not a number");
        assert!(
            matches!(e, GrabError::Internal(ref m) if m.contains("soon")),
            "{e:?}"
        );
    }

    #[test]
    fn each_field_is_read_into_its_place() {
        let read = RunStats::parse(&fields(&[
            ("stale", 2),
            ("sections_dropped", 7),
            ("redlock|entries", 9),
            ("redlock|overlaps", 3),
            ("redlock|max_holders", 2),
            ("set-nx-px-token|entries", 4),
        ]))
        .expect("known counters");
        assert_eq!((read.stale, read.sections_dropped), (2, 7));
        assert_eq!(
            read.strategies,
            [
                StrategyHistory {
                    strategy: "redlock".into(),
                    entries: 9,
                    overlaps: 3,
                    max_holders: 2,
                },
                StrategyHistory {
                    strategy: "set-nx-px-token".into(),
                    entries: 4,
                    ..StrategyHistory::default()
                },
            ]
        );
    }

    #[test]
    fn a_renamed_counter_fails_instead_of_reading_zero() {
        let err = RunStats::parse(&fields(&[("redlock|entries", 9), ("redlock|overlap", 3)]))
            .expect_err("an unknown counter");
        assert!(err.contains("\"overlap\""), "{err}");
        let err = RunStats::parse(&fields(&[("stale", 1), ("sections_kept_out", 3)]))
            .expect_err("an unknown run field");
        assert!(err.contains("\"sections_kept_out\""), "{err}");
    }
}
