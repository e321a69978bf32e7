//! `etcd-lease` — etcd's own lock: a key attached to a lease, ordered by
//! create revision; the lease is kept alive while the lock is held.
//!
//! **Seed step:** 000's "分布式键值存储系统比如 … Etcd", and the answer to
//! the Redlock debate the seeds retell: a consensus store (Raft) instead of
//! independent Redis nodes, with a lease instead of a TTL guessed per key.
//!
//! - Acquire: grant a lease of `SECKILL_LOCK_TTL_MS` rounded up to whole
//!   seconds (etcd may raise it to its minimum), start keeping it alive,
//!   then call etcd's Lock API (`v3lock`: put `lock:product:{id}/<lease>`
//!   under the lease, wait until every key of that prefix with a smaller
//!   create revision is deleted — each waiter watches only its predecessor).
//!   The wait is bounded by `SECKILL_LOCK_WAIT_MS`; a waiter that gives up
//!   revokes its lease, which deletes its queued key.
//! - Hold: a background task sends a keep-alive every lease/3. Each answer
//!   moves the guard's deadline to send time + lease − drift; an answer
//!   with TTL 0 (the lease expired) marks the guard lost; when etcd cannot
//!   be reached the deadline simply passes. The section checks both before
//!   it commits
//!   ([`LockGuard::check_still_held`](crate::locking::LockGuard::check_still_held))
//!   and aborts.
//! - Release: stop the keep-alive and revoke the lease (one call: the key
//!   goes with it, and the next waiter is woken by etcd).
//! - Fencing: the store revision at which the lock was granted grows with
//!   every new holder. It is kept in the guard (`revision`, logged) and
//!   checked by the database only when the `check_revision` switch is on
//!   (off by default, so the pause failure below stays visible).
//!
//! **Guarantee:** mutual exclusion while the holder keeps its lease alive;
//! etcd's Raft log makes the lock survive the loss of a minority of etcd
//! members (unlike one Redis), and a crashed holder's lock goes when its
//! lease expires.
//!
//! **How it fails:** a holder paused longer than the lease (GC, VM freeze,
//! `SIGSTOP`: the keep-alive task freezes too) loses its key to the next
//! waiter while it still works. If it wakes before its commit, the deadline
//! check aborts it; if the pause falls between that check and the commit's
//! arrival at PostgreSQL, it writes as a stale holder. The revision fences
//! it when the database checks it (`check_revision` on).

use seckill_wire::strategies::StrategyName;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Client, ConnectOptions, LockOptions};
use tokio::sync::{oneshot, OnceCell};
use tokio::time::{timeout, Instant};

use crate::error::{unavailable, Dependency, GrabError};
use crate::locking::{
    lease_deadline, lock_key, DistributedLock, Held, Lease, LeaseStatus, LockGuard, Released,
    Renewal, Renewer,
};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `etcd-lease`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::EtcdLease,
    seed: "000 etcd / the consensus answer to Redlock: lease + create-revision lock",
    guarantee: "safe while the lease is kept alive; a pause past the lease loses it",
    safety: Safety::SafeWithinTtl,
    kind: Kind::Lease,
};

/// Bound of the calls that are not waits (grant, keep-alive, revoke).
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// The etcd lock. The client connects on first use.
pub struct EtcdLease {
    endpoints: Vec<String>,
    client: OnceCell<Client>,
}

impl std::fmt::Debug for EtcdLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdLease")
            .field("endpoints", &self.endpoints)
            .field("connected", &self.client.initialized())
            .finish()
    }
}

impl EtcdLease {
    /// A lock on the etcd cluster at `endpoints` (`http://host:port` or
    /// `host:port`; empty: the strategy is unavailable).
    pub fn new(endpoints: &[String]) -> Self {
        Self {
            endpoints: endpoints
                .iter()
                .map(|e| {
                    if e.contains("://") {
                        e.clone()
                    } else {
                        format!("http://{e}")
                    }
                })
                .collect(),
            client: OnceCell::new(),
        }
    }

    async fn client(&self) -> Result<Client, GrabError> {
        if self.endpoints.is_empty() {
            return Err(GrabError::Unavailable {
                dependency: Dependency::Etcd,
                detail: "etcd-lease is not configured (SECKILL_ETCD_URLS is empty)".into(),
            });
        }
        self.client
            .get_or_try_init(|| async {
                let options = ConnectOptions::new()
                    .with_connect_timeout(Duration::from_secs(1))
                    .with_keep_alive(Duration::from_secs(1), Duration::from_secs(1));
                Client::connect(&self.endpoints, Some(options))
                    .await
                    .map_err(|e| unavailable(Dependency::Etcd, &e))
            })
            .await
            .cloned()
    }

    /// Grant a lease, keep it alive, and wait up to `budget` for the lock.
    async fn lock_within(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
        budget: Duration,
    ) -> Result<Option<LockGuard>, GrabError> {
        let mut client = self.client().await?;
        let deadline = Instant::now() + budget;
        let ttl_secs = cx.deps.lock_ttl.as_millis().div_ceil(1000).max(1) as i64;
        let sent = Instant::now();
        let granted = match timeout(CALL_TIMEOUT, client.lease_grant(ttl_secs, None)).await {
            Ok(Ok(granted)) => granted,
            Ok(Err(e)) => return Err(unavailable(Dependency::Etcd, &e)),
            Err(_) => return Err(unavailable(Dependency::Etcd, &"lease grant timed out")),
        };
        let lease_id = granted.id();
        let lease = Duration::from_secs(u64::try_from(granted.ttl()).unwrap_or(1).max(1));
        let status = LeaseStatus::new(lease_deadline(sent, lease));
        let (stop, stop_rx) = oneshot::channel();
        let renewer = Renewer::new(
            INFO.name.as_str(),
            format!("{lease_id:x}"),
            lease,
            cx.deps.metrics.clone(),
            status.clone(),
        );
        tokio::spawn(keep_alive_until_stopped(
            client.clone(),
            renewer,
            lease_id,
            stop_rx,
        ));
        let held = Lease::new(status, stop);

        let key = lock_key(product_id);
        let options = LockOptions::new().with_lease(lease_id);
        let wait = deadline.saturating_duration_since(Instant::now());
        let locked = timeout(wait, client.lock(key.as_str(), Some(options))).await;
        let response = match locked {
            Ok(Ok(response)) => response,
            other => {
                // Gave up or failed: the revoke deletes our queued key.
                held.stop_renewing();
                let _ = timeout(CALL_TIMEOUT, client.lease_revoke(lease_id)).await;
                return match other {
                    Ok(Err(e)) => Err(unavailable(Dependency::Etcd, &e)),
                    _ => Ok(None),
                };
            }
        };
        if held.status().is_lost() || Instant::now() >= held.status().deadline() {
            // The grant came after our lease could have expired (this
            // process was frozen while it waited, or etcd was slow): the key
            // may be gone already and the next waiter inside. Give it back.
            held.stop_renewing();
            let _ = timeout(CALL_TIMEOUT, client.lease_revoke(lease_id)).await;
            tracing::debug!(%key, "etcd lock granted after the lease deadline; given back");
            return Ok(None);
        }
        let mut guard = LockGuard::remote(
            String::from_utf8_lossy(response.key()).into_owned(),
            format!("{lease_id:x}"),
        );
        let revision = response.header().map(|h| h.revision());
        guard.held = Held::Lease {
            lease: held,
            revision,
        };
        tracing::debug!(key = %guard.key, ?revision, "etcd lock acquired");
        Ok(Some(guard))
    }
}

/// Keep lease `id` alive every lease/3 until `stop` fires or is dropped
/// ([`Renewer`] keeps the books). An answer with TTL 0 (expired) marks it
/// lost; errors are retried (the stream reopened) until the deadline has
/// passed, then it is marked lost.
async fn keep_alive_until_stopped(
    mut client: Client,
    renewer: Renewer,
    id: i64,
    mut stop: oneshot::Receiver<()>,
) {
    let mut channel = None;
    while renewer.pause(&mut stop).await {
        let sent = Instant::now();
        let answer = tokio::select! {
            _ = &mut stop => return,
            answer = timeout(CALL_TIMEOUT, async {
                if channel.is_none() {
                    channel = Some(client.lease_keep_alive(id).await?);
                }
                let Some((keeper, stream)) = channel.as_mut() else {
                    return Ok(None);
                };
                keeper.keep_alive().await?;
                stream.message().await
            }) => answer,
        };
        let renewal = match answer {
            Ok(Ok(Some(response))) if response.ttl() > 0 => Renewal::Renewed,
            Ok(Ok(Some(_))) => Renewal::Lost("the lease expired".into()),
            failed => {
                channel = None;
                Renewal::Failed(format!("{:?}", failed.map(|r| r.map(|_| ()))))
            }
        };
        if renewer.settle(sent, renewal).is_break() {
            return;
        }
    }
}

#[async_trait]
impl DistributedLock for EtcdLease {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        self.endpoints
            .is_empty()
            .then_some("no etcd configured: set SECKILL_ETCD_URLS")
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        self.lock_within(cx, product_id, cx.deps.lock_retry).await
    }

    /// One lock call that waits in etcd (woken by the predecessor's delete).
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

    async fn release(&self, _cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError> {
        let lost = guard.lease().is_some_and(|lease| {
            lease.stop_renewing();
            lease.status().is_lost()
        });
        let lease_id = i64::from_str_radix(&guard.token, 16)
            .map_err(|_| GrabError::Internal(format!("etcd lease id `{}`", guard.token)))?;
        let mut client = self.client().await?;
        match timeout(CALL_TIMEOUT, client.lease_revoke(lease_id)).await {
            Ok(Ok(_)) if !lost => Ok(Released::Released),
            Ok(Ok(_)) => Ok(Released::NotOwner),
            // "requested lease not found": it had expired — not ours any more.
            Ok(Err(etcd_client::Error::GRpcStatus(status)))
                if status.message().contains("not found") =>
            {
                Ok(Released::NotOwner)
            }
            Ok(Err(e)) => Err(unavailable(Dependency::Etcd, &e)),
            Err(_) => Err(unavailable(Dependency::Etcd, &"lease revoke timed out")),
        }
    }
}
