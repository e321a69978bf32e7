//! `zk-ephemeral-seq` — ZooKeeper's lock recipe: an ephemeral sequential
//! node per contender, the lowest sequence holds, each waiter watches only
//! its predecessor.
//!
//! **Seed step:** 002 ("ZooKeeper:强一致,顺序节点") and 003's
//! "基于Zookeeper实现分布式锁": the recipe the seeds name, and the consensus
//! answer to the Redlock debate they retell.
//!
//! - Session: one ZooKeeper session per process, its timeout
//!   `SECKILL_LOCK_TTL_MS` (the server bounds it to its own min/max,
//!   by default 2–20 ticks). The client library pings while connected.
//! - Acquire: create `/seckill/locks/product-{id}/lock-{token}-<seq>`
//!   (`EPHEMERAL_SEQUENTIAL`; the token finds our node again after a lost
//!   reply), list the children: lowest sequence = ours. Otherwise watch
//!   *only the node just before ours* (no herd: one deletion wakes one
//!   waiter) and look again when it goes; give up (delete our node) when
//!   `SECKILL_LOCK_WAIT_MS` runs out.
//! - Hold: a background task checks our node every session/3: each answer
//!   that still shows it, owned by our session, moves the guard's deadline
//!   to send time + session timeout − drift. A node gone, a session that
//!   expires, closes or *disconnects* marks the guard lost (a disconnected
//!   client cannot tell whether its session survives). The section checks
//!   before it commits and aborts.
//! - Release: delete our node (explicit async call); the watcher of its
//!   successor fires. A guard dropped without release leaves the node until
//!   the session ends — no I/O in `Drop`.
//! - A delete that fails (release, or a waiter giving up) while the link is
//!   down is retried in the background until it succeeds or the session
//!   ends, as Curator's *guaranteed* delete does: a short cut does not end
//!   the session, so its ephemeral node would otherwise block every later
//!   contender for as long as the process lives (found by
//!   `dependency-loss`'s repeated outages: after the first, no grab ever
//!   sold again).
//! - Fencing: the sequence number grows with every contender of a product;
//!   it is kept in the guard (`revision`, sequence + 1, logged) and checked
//!   by the database only when the `check_revision` switch is on (off by
//!   default, so the pause failure stays visible).
//!
//! **Guarantee:** mutual exclusion while the holder's session lives; a
//! crashed holder's node vanishes when its session expires; the ensemble
//! (Zab) keeps the lock through the loss of a minority of servers.
//!
//! **How it fails:** a holder paused longer than its session timeout (GC,
//! `SIGSTOP`: the pings stop) has its session expired by the server, its
//! node deleted, and the next waiter enters while the first still works.
//! The deadline check catches a holder that wakes before its commit; a
//! pause between the check and the commit's arrival at PostgreSQL writes
//! as a stale holder. Only a token checked by the database stops it: turn
//! `check_revision` on and the sequence fences the stale write.

use seckill_wire::strategies::StrategyName;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;
use tokio::time::{sleep, timeout, Instant};
use zookeeper_client as zk;

use crate::error::{unavailable, Dependency, GrabError};
use crate::locking::{
    lease_deadline, new_token, DistributedLock, Held, Lease, LeaseStatus, LockGuard, Released,
    Renewal, Renewer,
};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `zk-ephemeral-seq`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::ZkEphemeralSeq,
    seed: "002 / 003 ZooKeeper: ephemeral sequential node, watch the predecessor",
    guarantee: "safe while the session lives; a pause past the session timeout loses it",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Lease,
};

/// Bound of connecting and of single requests.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Parent node of a product's contenders.
pub fn lock_dir(product_id: i64) -> String {
    format!("/seckill/locks/product-{product_id}")
}

/// The ZooKeeper lock. The session is opened on first use and replaced
/// when it has expired or closed.
#[derive(Debug)]
pub struct ZkEphemeralSeq {
    connect: Option<String>,
    client: tokio::sync::Mutex<Option<zk::Client>>,
}

fn zk_error(e: &zk::Error) -> GrabError {
    unavailable(Dependency::Zookeeper, e)
}

/// The sequence number of a child named `lock-<token>-<seq>`.
fn sequence_of(child: &str) -> Option<i64> {
    let (_, seq) = child.strip_prefix("lock-")?.rsplit_once('-')?;
    seq.parse().ok()
}

impl ZkEphemeralSeq {
    /// A lock on the ensemble at `connect` (`host:port[,host:port]`; `None`:
    /// the strategy is unavailable).
    pub fn new(connect: Option<&str>) -> Self {
        Self {
            connect: connect.map(str::to_owned),
            client: tokio::sync::Mutex::new(None),
        }
    }

    /// The process's session, opened (again) when needed.
    async fn client(&self, session_timeout: Duration) -> Result<zk::Client, GrabError> {
        let Some(connect) = &self.connect else {
            return Err(GrabError::Unavailable {
                dependency: Dependency::Zookeeper,
                detail: "zk-ephemeral-seq is not configured (SECKILL_ZOOKEEPER_URL is unset)"
                    .into(),
            });
        };
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            if !client.state().is_terminated() {
                return Ok(client.clone());
            }
            tracing::warn!("zookeeper session ended; opening a new one");
        }
        let connecting = zk::Client::connector()
            .with_session_timeout(session_timeout)
            .with_connection_timeout(CALL_TIMEOUT)
            .connect(connect);
        let client = match timeout(CALL_TIMEOUT * 2, connecting).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(zk_error(&e)),
            Err(_) => {
                return Err(unavailable(
                    Dependency::Zookeeper,
                    &format!("no session with {connect} within {:?}", CALL_TIMEOUT * 2),
                ))
            }
        };
        tracing::debug!(
            session_timeout = ?client.session_timeout(),
            "zookeeper session opened"
        );
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Create our node, then wait up to `budget` to be the lowest.
    async fn lock_within(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
        budget: Duration,
    ) -> Result<Option<LockGuard>, GrabError> {
        let deadline = Instant::now() + budget;
        let client = self.client(cx.deps.lock_ttl).await?;
        let dir = lock_dir(product_id);
        let token = new_token();
        let prefix = format!("{dir}/lock-{token}-");
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let created = match client.create(&prefix, b"", &options).await {
            Err(zk::Error::NoNode) => {
                let parent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
                client
                    .mkdir(&dir, &parent)
                    .await
                    .map_err(|e| zk_error(&e))?;
                client.create(&prefix, b"", &options).await
            }
            other => other,
        };
        let sequence = match created {
            Ok((_, sequence)) => sequence,
            Err(e) => {
                // The node may exist although the reply was lost: find it
                // by its token and delete it, so it cannot block others.
                self.delete_by_token(&client, &dir, &token).await;
                return Err(zk_error(&e));
            }
        };
        let ours = format!("{dir}/lock-{token}-{sequence}");
        match self.wait_to_be_lowest(&client, &dir, &ours, deadline).await {
            Ok(Some(checked)) => {
                let session = client.session_timeout();
                let status = LeaseStatus::new(lease_deadline(checked, session));
                let (stop, stop_rx) = oneshot::channel();
                let renewer = Renewer::new(
                    INFO.name.as_str(),
                    ours.clone(),
                    session,
                    cx.deps.metrics.clone(),
                    status.clone(),
                );
                tokio::spawn(watch_session(
                    client.clone(),
                    renewer,
                    ours.clone(),
                    stop_rx,
                ));
                let mut guard = LockGuard::remote(ours, token);
                // + 1: the first node's sequence is 0, the fence column's start.
                guard.held = Held::Lease {
                    lease: Lease::new(status, stop),
                    revision: Some(sequence.into_i64() + 1),
                };
                Ok(Some(guard))
            }
            other => {
                if let Err(e) = client.delete(&ours, None).await {
                    if !matches!(e, zk::Error::NoNode) {
                        delete_in_background(client.clone(), ours, &e);
                    }
                }
                other.map(|_| None)
            }
        }
    }

    /// `Some(send time of the listing that showed us first)` once our node
    /// is the lowest; `None` when `deadline` passed first.
    async fn wait_to_be_lowest(
        &self,
        client: &zk::Client,
        dir: &str,
        ours: &str,
        deadline: Instant,
    ) -> Result<Option<Instant>, GrabError> {
        let name = ours.rsplit('/').next().unwrap_or(ours);
        let our_sequence = sequence_of(name)
            .ok_or_else(|| GrabError::Internal(format!("zookeeper node `{ours}`")))?;
        loop {
            let listed = Instant::now();
            let children = client.list_children(dir).await.map_err(|e| zk_error(&e))?;
            let mut contenders: Vec<(i64, String)> = children
                .into_iter()
                .filter_map(|child| sequence_of(&child).map(|seq| (seq, child)))
                .collect();
            contenders.sort_unstable();
            let Some(position) = contenders.iter().position(|(seq, _)| *seq == our_sequence) else {
                // Our ephemeral node is gone: the session expired meanwhile.
                return Err(unavailable(
                    Dependency::Zookeeper,
                    &"our lock node vanished while waiting (session expired)",
                ));
            };
            if position == 0 {
                return Ok(Some(listed));
            }
            let predecessor = format!("{dir}/{}", contenders[position - 1].1);
            let (stat, watcher) = client
                .check_and_watch_stat(&predecessor)
                .await
                .map_err(|e| zk_error(&e))?;
            if stat.is_none() {
                continue; // it went between our listing and the watch
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || timeout(left, watcher.changed()).await.is_err() {
                return Ok(None);
            }
        }
    }

    async fn delete_by_token(&self, client: &zk::Client, dir: &str, token: &str) {
        let Ok(Ok(children)) = timeout(CALL_TIMEOUT, client.list_children(dir)).await else {
            return;
        };
        for child in children.iter().filter(|c| c.contains(token)) {
            let _ = timeout(CALL_TIMEOUT, client.delete(&format!("{dir}/{child}"), None)).await;
        }
    }
}

/// Delete `node` again every 100 ms until it is gone or the session that
/// owns it has ended (its ephemeral nodes went with it): a delete lost to
/// a cut link must not leave the node blocking every later contender.
fn delete_in_background(client: zk::Client, node: String, first: &zk::Error) {
    tracing::warn!(%node, error = %first, "zookeeper: delete failed; retrying in the background until it succeeds or the session ends");
    tokio::spawn(async move {
        loop {
            sleep(Duration::from_millis(100)).await;
            match timeout(CALL_TIMEOUT, client.delete(&node, None)).await {
                Ok(Ok(())) | Ok(Err(zk::Error::NoNode)) => {
                    tracing::info!(%node, "zookeeper: node deleted in the background");
                    return;
                }
                Ok(Err(zk::Error::SessionExpired | zk::Error::ClientClosed)) => return,
                _ => {}
            }
        }
    });
}

/// Check our node every session/3 until `stop` ([`Renewer`] keeps the
/// books); extend the deadline on each sighting, mark the lease lost when
/// the node or the session is gone or the connection drops.
async fn watch_session(
    client: zk::Client,
    renewer: Renewer,
    node: String,
    mut stop: oneshot::Receiver<()>,
) {
    let session_id = client.session_id().0;
    let mut states = client.state_watcher();
    let connected = |state: zk::SessionState| {
        matches!(
            state,
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly
        )
    };
    if !connected(states.state()) {
        let _ = renewer.settle(Instant::now(), Renewal::Lost("not connected".into()));
        return;
    }
    loop {
        tokio::select! {
            _ = &mut stop => return,
            state = states.changed() => {
                if !connected(state) {
                    let _ = renewer.settle(Instant::now(), Renewal::Lost(format!("session {state:?}")));
                    return;
                }
                continue;
            }
            () = sleep(renewer.period()) => {}
        }
        let sent = Instant::now();
        let checked = tokio::select! {
            _ = &mut stop => return,
            checked = timeout(renewer.lease(), client.check_stat(&node)) => checked,
        };
        let renewal = match checked {
            Ok(Ok(Some(stat))) if stat.ephemeral_owner == session_id => Renewal::Renewed,
            Ok(Ok(_)) => Renewal::Lost("the node is gone".into()),
            Ok(Err(e)) => Renewal::Failed(e.to_string()),
            Err(_) => Renewal::Failed("no answer within the session timeout".into()),
        };
        if renewer.settle(sent, renewal).is_break() {
            return;
        }
    }
}

#[async_trait]
impl DistributedLock for ZkEphemeralSeq {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        self.connect
            .is_none()
            .then_some("no ZooKeeper configured: set SECKILL_ZOOKEEPER_URL")
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        self.lock_within(cx, product_id, Duration::ZERO).await
    }

    /// One node, then wait for the predecessor's deletion (no polling).
    async fn acquire(&self, cx: GrabContext<'_>, product_id: i64) -> Result<LockGuard, GrabError> {
        cx.deps
            .metrics
            .lock_attempts
            .with_label_values(&[INFO.name.as_str()])
            .inc();
        self.lock_within(cx, product_id, cx.deps.lock_wait)
            .await?
            .ok_or(GrabError::Busy(cx.deps.lock_wait))
    }

    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        let lost = guard.lease().is_some_and(|lease| {
            lease.stop_renewing();
            lease.status().is_lost()
        });
        let client = self.client(cx.deps.lock_ttl).await?;
        match timeout(CALL_TIMEOUT, client.delete(&guard.key, None)).await {
            Ok(Ok(())) if !lost => Ok(Released::Released),
            Ok(Ok(())) | Ok(Err(zk::Error::NoNode)) => Ok(Released::NotOwner),
            Ok(Err(e)) => {
                delete_in_background(client, guard.key, &e);
                Err(zk_error(&e))
            }
            Err(_) => {
                let e = zk::Error::Timeout;
                delete_in_background(client, guard.key, &e);
                Err(unavailable(Dependency::Zookeeper, &"delete timed out"))
            }
        }
    }
}
