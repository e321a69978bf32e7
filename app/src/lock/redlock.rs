//! `redlock` — the same token on N independent Redis nodes; the lock is
//! held when a majority said yes, for the time that is left of the TTL.
//!
//! **Seed step:** 000 方案七 and 003's Redlock section (the algorithm of
//! redis.io/topics/distlock), 004's closing remark on master failover:
//! one Redis master can lose a lock on failover; N independent masters
//! with a quorum tolerate a minority going away.
//!
//! 1. Take the start time (monotonic).
//! 2. `SET lock:product:{id} token NX PX ttl` on every node **in parallel**,
//!    all of them bounded by one deadline, the per-node timeout far below
//!    the TTL (`SECKILL_REDLOCK_NODE_TIMEOUT_MS`) from the start, so a dead
//!    or slow node costs at most that.
//! 3. Decide as soon as the outcome is known — a quorum `N/2 + 1` of yes, or
//!    too many no's for a quorum to remain — without waiting for the rest
//!    (rslock waits for every node; node-redlock and this one do not).
//! 4. Validity = TTL − elapsed − drift, drift = TTL × drift factor + 2 ms
//!    (`SECKILL_REDLOCK_DRIFT_FACTOR`, the docs' 0.01 by default). No quorum,
//!    or no validity left: release on **every** node (also those that said
//!    yes, and those that have not answered), then retry after a jittered
//!    pause until the wait budget ends (`busy`). When a majority of nodes
//!    *fail* (refused, errors — not "held", not merely slow), retrying
//!    cannot help: the grab answers `503` at once. Timeouts are retried.
//! 5. Release: the compare-and-delete script on every node, answered at
//!    quorum too; the late nodes' deletions are finished by a background
//!    task, so a key a slow node granted after the decision is deleted too.
//!
//! The guard carries the validity deadline; the section checks it before
//! committing and aborts with `409 rejected` when it has passed.
//!
//! Two workshop faults reproduce antirez's reply to Kleppmann ("Is Redlock
//! safe?", the `acquire-pause` scenario): `acquire_pause_ms` holds the
//! client after its `SET`s were answered and before it reads the votes (one
//! attempt in `pause_every` among those that won a quorum, on each
//! replica), for longer than the TTL if
//! you like — the start time of step 1 is taken before the `SET`s, so the
//! elapsed time includes the pause and step 4 refuses the late quorum; and
//! `skip_validity_check` drops step 4's check (the validity is then counted
//! from when the votes were read, as a client that never measured elapsed
//! time would), so the paused client enters on keys that expired while it
//! slept.
//!
//! **A fencing token, attempted.** Kleppmann's answer to the pauses is a
//! token the database checks, and he argues Redlock cannot make one:
//! "Keeping counters on several nodes would mean they would go out of
//! sync." With the `check_revision` switch on, this file builds the
//! attempt anyway: each node's vote runs `redlock_fence_lock.lua` (its
//! `SET NX PX` and, when it took the key, `INCR fence:product:{id}` on that
//! node), and the holder's token is the largest counter its majority
//! returned; the section registers it on the row as `fenced` does. Any two
//! majorities share a node, so while every node keeps its counter the
//! shared node's count grows with each holder — but the token is the
//! *largest* of its majority, which may sit on a node the next majority
//! lacks, and a node that restarts without persistence comes back at 0.
//! The token then stops growing or goes backwards, and the database
//! refuses the newer holder (the `redlock-restart` scenario's
//! `check_revision` dial measures it; a test here drives the counters to
//! 1, 2, 3 and back to 2). Attempts that fail still count on the nodes
//! that said yes, so counters under contention drift apart the other way
//! too. No seeding from the database here,
//! unlike `fenced`: that would be the consensus the argument says is
//! missing, borrowed from PostgreSQL.
//!
//! **Extending the lock** (the `redlock_extend` switch; off, the work must
//! fit in the validity). The holder extends its lock every third of the
//! TTL while it holds it, and once more just before its last check, as
//! redsync's `Extend` and node-redlock's `extend` let a client do:
//! `redlock_extend.lua` on every node — `PEXPIRE`
//! where the key still holds the token, `SET … PX` where it is missing (a
//! node that restarted empty lost it; without that, every such restart
//! takes one node from the holder's majority for good: redsync's report,
//! its PR #149). The task's first extension runs at once and, while some
//! node still lacks the key, the next 20 ms or so later (a top-up: a
//! holder granted by a bare majority that loses a node must otherwise win
//! the free one back against every contender's `SET NX`). Granted, the
//! lock is trusted until the extension's send time + TTL − drift; without
//! a quorum it stands until its deadline and the task retries, marking it
//! lost once the deadline passed. An extension asked for once that time
//! has passed is refused without asking the nodes ("Cannot extend an already-expired
//! lock", node-redlock #283): the keys may have expired and been taken
//! and given back meanwhile, so re-locking them would make a holder of a
//! client that was not one; its section ends `409 rejected`. Two faults
//! put the reported behaviours back: `extend_held_only` (redsync before
//! #149: `redlock_extend_held.lua`, the key extended only where it is
//! still ours) and `extend_expired` (redlock-rb #36: the expired lock
//! extended all the same, locked anew where the keys are free).
//!
//! **Guarantee:** mutual exclusion while a majority of nodes keep their
//! keys and the work fits in the validity time; tolerates a minority of
//! nodes down or slow.
//!
//! **How it fails:** a node that restarts *without persistence* forgets the
//! keys it held. If it was part of holder A's majority, holder B can now
//! build a majority from it and the nodes A never had: two holders. (The
//! Redis docs' answer is delayed restarts or fsync=always; Kleppmann's is
//! fencing.) Like every TTL lock, a pause longer than the validity makes a
//! holder act on a lock it no longer has. A pause *during* acquisition is
//! caught by step 4 — unless the `skip_validity_check` fault removes it.

use seckill_wire::strategies::StrategyName;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{FuturesUnordered, StreamExt};
use redis::aio::ConnectionManager;
use redis::Script;
use tokio::time::{timeout, Instant};

use crate::error::{Dependency, GrabError};
use crate::locking::{
    lock_key, new_token, DistributedLock, Held, Lease, LeaseStatus, LockGuard, Released,
    COMPARE_AND_DELETE,
};
use crate::metrics::Metrics;
use crate::redis_client::connection as redis_connection;
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `redlock`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::Redlock,
    seed: "000 scheme 7 / 003: Redlock over N independent nodes, quorum N/2+1",
    guarantee:
        "tolerates a minority of nodes down; unsafe when a node restarts without persistence",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Validity,
};

/// One independent node.
#[derive(Debug, Clone)]
struct Node {
    /// `host:port`, the `node` label of `seckill_redlock_node_errors_total`.
    name: String,
    conn: ConnectionManager,
}

/// The Redlock client.
#[derive(Debug)]
pub struct Redlock {
    nodes: Vec<Node>,
    node_timeout: Duration,
    /// The drift allowance, a fraction of the TTL (`redlock_drift_factor`).
    drift_factor: f64,
    /// Acquire attempts so far: which of them take `acquire_pause_ms`.
    attempts: AtomicU64,
}

/// `redlock_fence_lock.lua`: one node's `SET NX PX` and, when it took
/// the key, that node's `INCR` of its fencing counter.
static FENCE_LOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("redlock_fence_lock.lua")));

/// `redlock_extend.lua`: one node's extension — `PEXPIRE` where the key
/// holds our token, `SET … PX` where it is missing.
static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("redlock_extend.lua")));

/// `redlock_extend_held.lua`: the `extend_held_only` fault's extension,
/// only where the key still holds our token.
static EXTEND_HELD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("redlock_extend_held.lua")));

/// What one node answered to the `SET NX PX`.
enum Vote {
    /// Granted; with `check_revision`, the node's counter after its `INCR`.
    Yes(Option<i64>),
    Held,
    /// The node answered with an error or could not be reached.
    Failed(String),
}

/// The `node` label of a Redlock node: its URL without the scheme.
pub fn node_name(url: &str) -> String {
    url.trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned()
}

/// One script call, as [`on_every_node`] sends it to each node.
struct Invocation<'a> {
    script: &'static Script,
    key: &'a str,
    args: &'a [String],
}

/// Run `call` on every node at once and count its answers — yes when the
/// script returned 1 — until `decided(yes, no)` or the first of `within`
/// passes (a timeout leaves the count so far). The other nodes' calls are
/// finished by a task, for up to the second of `within` (the lock's TTL,
/// after which its keys are gone anyway), never dropped: redis-rs sends
/// EVALSHA and, on a node that lacks the script — restarted or flushed —
/// loads it and sends EVALSHA again, a second request a dropped future
/// never sends. The release and the extension decide this way.
async fn on_every_node(
    nodes: &[Node],
    call: Invocation<'_>,
    within: (Duration, Duration),
    decided: impl Fn(usize, usize) -> bool,
) -> (usize, usize) {
    let mut answers: FuturesUnordered<_> = nodes
        .iter()
        .map(|node| {
            let mut conn = node.conn.clone();
            let mut invocation = call.script.key(call.key);
            for arg in call.args {
                invocation.arg(arg);
            }
            let name = node.name.clone();
            async move {
                let answer = invocation.invoke_async::<i64>(&mut conn).await;
                if !matches!(answer, Ok(1)) {
                    tracing::debug!(node = %name, ?answer, "redlock script answered no");
                }
                matches!(answer, Ok(1))
            }
        })
        .collect();
    let (mut yes, mut no) = (0, 0);
    let counting = async {
        while !decided(yes, no) {
            let Some(one) = answers.next().await else {
                break;
            };
            if one {
                yes += 1;
            } else {
                no += 1;
            }
        }
    };
    let _ = timeout(within.0, counting).await;
    if !answers.is_empty() {
        tokio::spawn(timeout(within.1, async move {
            while answers.next().await.is_some() {}
        }));
    }
    (yes, no)
}

/// What one extension came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extension {
    /// A majority extended it: trusted until its send time + TTL − drift.
    /// `everywhere`: every node did (the task waited for all answers).
    Renewed { everywhere: bool },
    /// Fewer than a majority: the lock stands until its deadline.
    NoQuorum,
    /// Refused (already expired) or marked lost before.
    Lost,
}

/// What extending one held lock needs (the `redlock_extend` switch):
/// shared by its background task and the extension before the last check.
#[derive(Debug, Clone)]
struct Extender {
    nodes: Vec<Node>,
    node_timeout: Duration,
    ttl: Duration,
    drift: Duration,
    /// The `extend_held_only` fault.
    held_only: bool,
    /// The `extend_expired` fault.
    expired: bool,
    metrics: Metrics,
    key: String,
    token: String,
    status: Arc<LeaseStatus>,
}

impl Extender {
    /// One extension on every node at once, decided at quorum within the
    /// node timeout (`everywhere`: once every node answered, or at the
    /// node timeout, so the task knows whether a node still lacks the
    /// key). Refused without asking once the validity ran out
    /// (the lease is marked lost: the holder aborts). Without a quorum the
    /// lock still stands until its deadline (the keys set on a majority
    /// have not expired yet): [`Extension::NoQuorum`], retried by the task.
    async fn extend(&self, everywhere: bool) -> Extension {
        if self.status.is_lost() {
            return Extension::Lost;
        }
        let sent = Instant::now();
        if !self.expired && sent >= self.status.deadline() {
            self.lose("cannot extend an already-expired lock");
            return Extension::Lost;
        }
        let script: &'static Script = if self.held_only {
            &EXTEND_HELD
        } else {
            &EXTEND
        };
        let (total, quorum) = (self.nodes.len(), self.nodes.len() / 2 + 1);
        // The restarted node's extension is finished too, not dropped:
        // otherwise it would never be locked again while the others
        // answer first ([`on_every_node`]).
        let (yes, _) = on_every_node(
            &self.nodes,
            Invocation {
                script,
                key: &self.key,
                args: &[self.token.clone(), self.ttl.as_millis().to_string()],
            },
            (self.node_timeout, self.ttl),
            |yes, no| {
                if everywhere {
                    yes + no == total
                } else {
                    yes >= quorum || no > total - quorum
                }
            },
        )
        .await;
        let until = sent + self.ttl.saturating_sub(self.drift);
        if yes >= quorum && Instant::now() < until {
            self.metrics
                .lock_renewals
                .with_label_values(&[INFO.name.as_str(), "renewed"])
                .inc();
            self.status.extend_to(until);
            Extension::Renewed {
                everywhere: yes == total,
            }
        } else {
            self.metrics
                .lock_renewals
                .with_label_values(&[INFO.name.as_str(), "error"])
                .inc();
            tracing::debug!(key = %self.key, yes, total, "redlock extension without a quorum");
            Extension::NoQuorum
        }
    }

    /// Mark the lease lost (the holder aborts at its last check).
    fn lose(&self, why: &str) {
        self.metrics
            .lock_renewals
            .with_label_values(&[INFO.name.as_str(), "lost"])
            .inc();
        self.metrics
            .lock_lost
            .with_label_values(&[INFO.name.as_str()])
            .inc();
        tracing::warn!(key = %self.key, why, "redlock extension failed; the holder will abort");
        self.status.mark_lost();
    }

    /// Extend every third of the TTL until the lease's stop sender is used
    /// or dropped, or the lock is lost: refused as expired, or no quorum
    /// extended it before its deadline (a failed extension is retried
    /// every 20 ms or so until then, as the watchdog retries a failed
    /// renewal).
    ///
    /// Extend-or-lock also tops the lock up: the first extension runs at
    /// once, and while some node lacks the key (the grant is decided at a
    /// bare majority; a node was down, or restarted empty) the next runs
    /// 20 ms or so later, not a third of the TTL. A holder of two nodes of
    /// three that loses one must otherwise win the third back before its
    /// deadline, against every contender's `SET NX` there (each holds the
    /// free node from its vote to its release): CI saw a holder fail at
    /// every try for a whole TTL and another enter (redsync-149's `ours`,
    /// 1 of 3).
    async fn until_stopped(self, mut stop: tokio::sync::oneshot::Receiver<()>) {
        let period = self.ttl / 3;
        // A top-up or a failed extension's next try.
        let soon = || Instant::now() + crate::locking::jittered(Duration::from_millis(20));
        let top_up = !self.held_only;
        let mut due = if top_up {
            Instant::now()
        } else {
            self.status.deadline() - self.ttl.saturating_sub(self.drift) + period
        };
        loop {
            tokio::select! {
                _ = &mut stop => return,
                () = tokio::time::sleep_until(due) => {}
            }
            due = Instant::now() + period;
            let extension = tokio::select! {
                _ = &mut stop => return,
                extension = self.extend(top_up) => extension,
            };
            match extension {
                Extension::Renewed { everywhere: false } if top_up => due = soon(),
                Extension::Renewed { .. } => {}
                Extension::Lost => return,
                // Retried soon, until the deadline passes: then lost.
                Extension::NoQuorum if Instant::now() < self.status.deadline() => due = soon(),
                Extension::NoQuorum => {
                    self.lose("no quorum extended it before its deadline");
                    return;
                }
            }
        }
    }
}

impl Redlock {
    /// A client for `urls` (may be empty: the strategy is then unavailable).
    pub fn new(
        urls: &[impl AsRef<str>],
        node_timeout: Duration,
        drift_factor: f64,
    ) -> anyhow::Result<Self> {
        let nodes = urls
            .iter()
            .map(|url| {
                let url = url.as_ref();
                Ok(Node {
                    name: node_name(url),
                    conn: redis_connection(url)?,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            nodes,
            node_timeout,
            drift_factor,
            attempts: AtomicU64::new(0),
        })
    }

    /// Majority of the configured nodes.
    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Whether this winning acquire attempt takes the `acquire_pause_ms`
    /// fault: one in `pause_every`, counted by this client.
    fn pauses_now(&self, cx: &GrabContext<'_>) -> bool {
        if cx.faults.acquire_pause_ms == 0 {
            return false;
        }
        let n = self.attempts.fetch_add(1, Ordering::Relaxed);
        n.is_multiple_of(cx.faults.pause_every.max(1))
    }

    /// The `redlock_extend` switch's lease: trusted until `until`, extended
    /// by a task every third of the TTL until the lease is stopped.
    fn extended(
        &self,
        cx: GrabContext<'_>,
        guard: &LockGuard,
        until: Instant,
        revision: Option<i64>,
    ) -> Held {
        let status = LeaseStatus::new(until);
        let (stop, stop_rx) = tokio::sync::oneshot::channel();
        let extender = self.extender(cx, guard, status.clone());
        tokio::spawn(extender.until_stopped(stop_rx));
        Held::Lease {
            lease: Lease::new(status, stop),
            revision,
        }
    }

    /// What extending `guard`'s lock needs.
    fn extender(
        &self,
        cx: GrabContext<'_>,
        guard: &LockGuard,
        status: Arc<LeaseStatus>,
    ) -> Extender {
        let ttl = cx.deps.lock_ttl;
        Extender {
            nodes: self.nodes.clone(),
            node_timeout: self.node_timeout,
            ttl,
            drift: self.drift(ttl),
            held_only: cx.faults.extend_held_only,
            expired: cx.faults.extend_expired,
            metrics: cx.deps.metrics.clone(),
            key: guard.key.clone(),
            token: guard.token.clone(),
            status,
        }
    }

    /// The clocks' allowance: TTL × drift factor + 2 ms.
    fn drift(&self, ttl: Duration) -> Duration {
        ttl.mul_f64(self.drift_factor) + Duration::from_millis(2)
    }

    /// Compare-and-delete `token` on every node in parallel, deciding at
    /// quorum like the acquire: returns how many of the first `quorum`
    /// answers deleted it, waiting at most the node timeout for them. The
    /// other nodes' deletions are not waited for but never abandoned: a
    /// task drives them to the end, for up to the lock's `ttl` (after which
    /// the key is gone anyway). Neither is bounded by the node timeout: a
    /// slow node that never ran the script answers `NOSCRIPT` and needs a
    /// second request, which a dropped future would never send, leaving
    /// the key (granted late, or never released) until its TTL.
    async fn release_everywhere(&self, key: &str, token: &str, ttl: Duration) -> usize {
        let quorum = self.quorum();
        let (deleted, _) = on_every_node(
            &self.nodes,
            Invocation {
                script: &COMPARE_AND_DELETE,
                key,
                args: &[token.to_owned()],
            },
            (self.node_timeout, ttl),
            |deleted, not| deleted + not >= quorum,
        )
        .await;
        deleted
    }
}

#[async_trait]
impl DistributedLock for Redlock {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        self.nodes
            .is_empty()
            .then_some("no Redlock nodes configured: set SECKILL_REDLOCK_URLS")
    }

    /// Over 80 lines on purpose: the algorithm's steps as the Redis
    /// documentation numbers them (time, votes, quorum, validity, undo), in
    /// order, in one place.
    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        if self.nodes.is_empty() {
            return Err(GrabError::Unavailable {
                dependency: Dependency::Redis,
                detail: "redlock has no nodes (SECKILL_REDLOCK_URLS is empty)".into(),
            });
        }
        let metrics = &cx.deps.metrics;
        let ttl = cx.deps.lock_ttl;
        let key = lock_key(product_id);
        let token = new_token();
        let started = Instant::now();
        let total = self.nodes.len();
        let quorum = self.quorum();

        // One SET for every node, all sent at once; one deadline for all
        // of them, the node timeout from the start of the attempt.
        let mut set = redis::cmd("SET");
        set.arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64);
        let set = &set;
        // With `check_revision`, each node's vote also counts (the script).
        let fence = cx.faults.check_revision.then(|| {
            let mut invocation = FENCE_LOCK.key(&key);
            invocation
                .key(crate::lock::fenced::fence_key(product_id))
                .arg(&token)
                .arg(ttl.as_millis() as u64);
            invocation
        });
        let fence = &fence;
        let mut votes: FuturesUnordered<_> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(index, node)| {
                let mut conn = node.conn.clone();
                async move {
                    let vote = match fence {
                        None => match set.query_async::<Option<String>>(&mut conn).await {
                            Ok(Some(_)) => Vote::Yes(None),
                            Ok(None) => Vote::Held,
                            Err(e) => Vote::Failed(e.to_string()),
                        },
                        Some(fence) => match fence.invoke_async::<Option<i64>>(&mut conn).await {
                            Ok(Some(counter)) => Vote::Yes(Some(counter)),
                            Ok(None) => Vote::Held,
                            Err(e) => Vote::Failed(e.to_string()),
                        },
                    };
                    (index, vote)
                }
            })
            .collect();
        let deadline = tokio::time::sleep_until(started + self.node_timeout);
        tokio::pin!(deadline);

        let (mut yes, mut held, mut failed) = (0usize, 0usize, 0usize);
        // The largest counter a granting node returned (check_revision).
        let mut revision: Option<i64> = None;
        let mut answered = vec![false; total];
        let in_time = loop {
            let (index, vote) = tokio::select! {
                biased;
                next = votes.next() => match next {
                    Some(answer) => answer,
                    None => break true,
                },
                () = &mut deadline => break false,
            };
            answered[index] = true;
            match vote {
                Vote::Yes(counter) => {
                    yes += 1;
                    revision = revision.max(counter);
                }
                Vote::Held => held += 1,
                Vote::Failed(error) => {
                    failed += 1;
                    let node = &self.nodes[index].name;
                    metrics.redlock_node_errors.with_label_values(&[node]).inc();
                    tracing::debug!(%node, %error, "redlock node failed");
                }
            }
            if yes >= quorum || held + failed > total - quorum {
                break true; // the outcome is decided
            }
        };
        if !in_time {
            // Every node still silent at the deadline timed out (slow,
            // paused, or an overloaded machine): worth another attempt.
            for (node, _) in self.nodes.iter().zip(&answered).filter(|(_, a)| !**a) {
                metrics
                    .redlock_node_errors
                    .with_label_values(&[&node.name])
                    .inc();
            }
        }
        // Late answers are not waited for. A dropped request is either
        // still unsent (redis-rs then never sends it: no key) or already on
        // its node's connection, where it runs and the release, queued
        // behind it on the same connection, deletes what it set.
        drop(votes);

        // The `acquire_pause_ms` fault: the votes are read and counted,
        // and the client is held before its elapsed-time check — taken by one
        // attempt in `pause_every` among those whose votes make a quorum
        // (a pause on an attempt that lost teaches nothing). `started` was
        // taken before the SETs, so the pause counts as elapsed.
        if yes >= quorum && self.pauses_now(&cx) {
            tokio::time::sleep(Duration::from_millis(cx.faults.acquire_pause_ms)).await;
        }
        // The scenario hook's whole-process freeze at the same point.
        if yes >= quorum {
            cx.deps.freeze.at(crate::freeze::FreezeAt::DuringAcquire);
        }

        let drift = self.drift(ttl);
        let (started, elapsed) = if cx.faults.skip_validity_check {
            // The fault: a quorum of yes is trusted as if granted just now.
            (Instant::now(), Duration::ZERO)
        } else {
            (started, started.elapsed())
        };
        let validity = ttl.checked_sub(elapsed + drift);
        match validity {
            Some(validity) if yes >= quorum && !validity.is_zero() => {
                let mut guard = LockGuard::remote(key, token);
                // The validity is what is left *now*, `elapsed` after the
                // SETs were sent: the lock is trusted until TTL − drift
                // after them, the earliest the keys can expire less the
                // clocks' allowance.
                let until = started + elapsed + validity;
                guard.held = if cx.faults.redlock_extend {
                    self.extended(cx, &guard, until, revision)
                } else {
                    Held::Validity { until, revision }
                };
                Ok(Some(guard))
            }
            _ => {
                metrics.redlock_quorum_failures.inc();
                self.release_everywhere(&key, &token, ttl).await;
                if failed > total - quorum {
                    return Err(GrabError::Unavailable {
                        dependency: Dependency::Redis,
                        detail: format!(
                            "redlock: {failed} of {total} nodes failed, quorum is {quorum}"
                        ),
                    });
                }
                Ok(None)
            }
        }
    }

    /// With `redlock_extend`: one extension before the last check (the
    /// check then reads what it came to).
    async fn before_last_check(&self, cx: GrabContext<'_>, guard: &LockGuard) {
        if let (true, Some(lease)) = (cx.faults.redlock_extend, guard.lease()) {
            self.extender(cx, guard, lease.shared_status())
                .extend(false)
                .await;
        }
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        if let Some(lease) = guard.lease() {
            lease.stop_renewing();
        }
        let ttl = cx.deps.lock_ttl;
        Ok(
            if self.release_everywhere(&guard.key, &guard.token, ttl).await > 0 {
                Released::Released
            } else {
                Released::NotOwner
            },
        )
    }
}
