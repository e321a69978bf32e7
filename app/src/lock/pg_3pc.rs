//! `pg-3pc` — three-phase commit over `pg-2pc`'s two databases, each
//! fronted by a participant with its own timeout.
//!
//! **Seed step:** 001's distributed transactions: *3PC*, taught as the fix
//! for 2PC's blocking — a *CanCommit* vote that locks nothing, a
//! *PreCommit* round that prepares, a *DoCommit*; and timeouts at the
//! participants, so that one which hears nothing more decides alone.
//!
//! The databases are `pg-2pc`'s: the stock side `SECKILL_STOCK_DATABASE_URL`
//! (table `stock`), the order side the service's own (its `orders`, so the
//! audit reads them as every other strategy's; the `products.stock`
//! column is the stock side written behind, as under `pg-2pc`). A
//! PostgreSQL prepared transaction never times out, so each database is
//! fronted by a participant ([`super::participant`]): the one that holds
//! the timeout. A grab, the coordinator's steps:
//! 1. **can-commit** to both: the stock side reads the stock, the order
//!    side looks for the buyer's order. Any no ends the grab (`sold_out`,
//!    `already_purchased`); nothing was locked.
//! 2. **pre-commit** to the stock side (decrement, `PREPARE TRANSACTION`:
//!    the row stays locked), then to the order side (the order,
//!    prepared). A no, or no answer, and the coordinator sends **abort**
//!    to both.
//! 3. **do-commit** to the order side, then to the stock side. Both acked
//!    the pre-commit, so the grab is `201` even when a do-commit gets no
//!    answer: that participant commits at its timeout.
//!
//! **Guarantee:** it does not block on a dead coordinator. Killed after
//! the pre-commits (`pause_at: before-commit`), it leaves both sides
//! prepared; each participant commits at its timeout
//! (`SECKILL_THREE_PC_TIMEOUT_MS`), the stock row is free again and the
//! other replicas sell on — where `pg-2pc` waits for its coordinator to
//! come back (the `coordinator-crash` scenario, both strategies).
//!
//! **How it fails:** the same timeout splits a grab whose coordinator
//! cannot reach its participants. Cut off after the stock side's
//! pre-commit (`pause_at: before-write`), the coordinator gets no answer
//! from the order side and decides abort — which the stock side, cut off
//! too, never hears: it commits at its timeout, the order side (which
//! never pre-committed) aborts at its own. The unit is gone with no order
//! (undersold): the `partition-precommit` scenario, the textbook reason 3PC
//! is rarely used. A participant that fronts a database in the replica's
//! own process (the default, without `SECKILL_THREE_PC_*_PARTICIPANT`)
//! dies with its coordinator, and then blocks like 2PC until the replica
//! starts again (and commits at its timeout from there). It is slower than
//! 2PC: three round trips to each side, and the same two prepares and two
//! commits.

use seckill_wire::strategies::StrategyName;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::participant::{self, ask, AskError, Message, Refusal, Reply, Side, GID_PREFIX};
use super::pg_2pc::{pause_at, Pg2pc};
use crate::configuration::Settings;
use crate::error::{Dependency, GrabError};
use crate::faults::PauseAt;
use crate::section::simulated_work;
use crate::strategy::{
    Deps, GrabContext, GrabRequest, Kind, Order, Safety, Strategy, StrategyInfo,
};

/// Name, seed and guarantee of `pg-3pc`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::Pg3pc,
    seed: "001 3PC: can-commit, pre-commit, do-commit over the stock and the order databases, each fronted by a participant that commits at its own timeout",
    guarantee: "does not block on a dead coordinator; a partition during pre-commit splits the two databases",
    safety: Safety::Unsafe,
    kind: Kind::NotALock,
};

/// The coordinator.
#[derive(Debug, Clone)]
pub struct Pg3pc {
    /// `pg-2pc`'s stock side: its pool, its loading and its copy into the
    /// column.
    two_pc: Arc<Pg2pc>,
    /// The participants' addresses (stock, order); `None` without a stock
    /// database.
    participants: Option<(String, String)>,
    instance: String,
    timeout: Duration,
    lock_wait: Duration,
}

impl Pg3pc {
    /// The coordinator of `settings`: its participants' addresses, or
    /// both started in this process. Must run inside the tokio runtime.
    pub fn new(settings: &Settings, two_pc: Arc<Pg2pc>) -> anyhow::Result<Self> {
        let participants = match settings.three_pc_participants() {
            Some((stock, order)) => Some((stock.to_owned(), order.to_owned())),
            None => {
                let stock = participant::spawn_local(settings, Side::Stock)?;
                let order = match &stock {
                    Some(_) => participant::spawn_local(settings, Side::Order)?,
                    None => None,
                };
                stock.zip(order)
            }
        };
        Ok(Self {
            two_pc,
            participants,
            instance: settings.instance(),
            timeout: settings.three_pc_timeout_ms.ms(),
            lock_wait: settings.lock_wait_ms.ms(),
        })
    }

    /// Over 80 lines on purpose: the three phases and every way out of
    /// them read in one place, as the protocol is taught.
    async fn coordinate(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        let (stock, order) = self
            .participants
            .as_ref()
            .ok_or_else(|| GrabError::Unavailable {
                dependency: Dependency::Postgres,
                detail: "no stock database (SECKILL_STOCK_DATABASE_URL)".into(),
            })?;
        let base = format!(
            "{GID_PREFIX}{}:{}",
            self.instance,
            uuid::Uuid::new_v4().simple()
        );
        let gids = [format!("{base}:stock"), format!("{base}:order")];
        let sides = [stock.as_str(), order.as_str()];
        let grab = participant::Grab::from(req);

        // Phase one: can-commit, both sides (a stock side that never saw
        // the product is loaded, and asked again).
        pause_at(cx, PauseAt::BeforeRead).await;
        for (addr, gid) in sides.iter().zip(&gids) {
            let vote = Message::CanCommit {
                gid: gid.clone(),
                grab,
            };
            let mut reply = self.ask(addr, &vote, self.timeout).await?;
            if matches!(
                reply,
                Reply::No {
                    refusal: Refusal::NotFound,
                    ..
                }
            ) && *addr == stock.as_str()
            {
                self.two_pc
                    .load_stock(&cx.deps.pool, Some(req.product_id))
                    .await?;
                reply = self.ask(addr, &vote, self.timeout).await?;
            }
            if let Reply::No { refusal, detail } = reply {
                return Err(refused(refusal, &detail, self.lock_wait));
            }
        }

        // Phase two: pre-commit, the stock side first (the row lock), then
        // the order side. Any no, or silence: abort both.
        let mut prepared = None;
        for (i, (addr, gid)) in sides.iter().zip(&gids).enumerate() {
            if i == 1 {
                pause_at(cx, PauseAt::BeforeWrite).await;
            }
            let message = Message::PreCommit {
                gid: gid.clone(),
                grab,
            };
            let answer = self
                .ask(addr, &message, self.timeout + self.lock_wait)
                .await;
            match answer {
                Ok(Reply::Yes { order }) => prepared = prepared.or(order),
                other => {
                    self.abort_all(&sides, &gids).await;
                    return Err(match other {
                        Ok(Reply::No { refusal, detail }) => {
                            refused(refusal, &detail, self.lock_wait)
                        }
                        Err(e) => e,
                        Ok(Reply::Done) => GrabError::Internal(
                            "a participant answered a pre-commit with done".into(),
                        ),
                        Ok(Reply::Yes { .. }) => unreachable!("matched above"),
                    });
                }
            }
        }
        let order_written = prepared.ok_or_else(|| {
            GrabError::Internal("the order side pre-committed without an order".into())
        })?;
        pause_at(cx, PauseAt::BeforeCommit).await;

        // Phase three: do-commit, the order side first (as pg-2pc). Both
        // pre-committed: the outcome is commit whatever happens now, a
        // participant that does not hear it commits at its timeout.
        for (i, (addr, gid)) in [(order, &gids[1]), (stock, &gids[0])]
            .into_iter()
            .enumerate()
        {
            if i == 1 {
                pause_at(cx, PauseAt::BetweenCommits).await;
            }
            let done = self
                .ask(addr, &Message::DoCommit { gid: gid.clone() }, self.timeout)
                .await;
            if !matches!(done, Ok(Reply::Done)) {
                tracing::warn!(gid, answer = ?done, "pg-3pc: do-commit not acked; the participant commits at its timeout");
            }
        }
        self.two_pc.write_behind(&cx.deps.pool);
        Ok(order_written)
    }

    async fn ask(
        &self,
        addr: &str,
        message: &Message,
        within: Duration,
    ) -> Result<Reply, GrabError> {
        ask(addr, message, within)
            .await
            .map_err(|e| unreachable_participant(&e))
    }

    /// Abort both sides, as far as they can be reached (one that cannot
    /// and had pre-committed commits at its timeout: the split).
    async fn abort_all(&self, sides: &[&str; 2], gids: &[String; 2]) {
        for (addr, gid) in sides.iter().zip(gids) {
            let answer = ask(addr, &Message::Abort { gid: gid.clone() }, self.timeout).await;
            if !matches!(answer, Ok(Reply::Done)) {
                tracing::warn!(gid, answer = ?answer, "pg-3pc: abort not acked; a side that pre-committed commits at its timeout");
            }
        }
    }
}

/// A participant's no, as the grab's answer.
fn refused(refusal: Refusal, detail: &str, lock_wait: Duration) -> GrabError {
    match refusal {
        Refusal::SoldOut => GrabError::SoldOut,
        Refusal::AlreadyPurchased => GrabError::AlreadyPurchased,
        Refusal::Busy => GrabError::Busy(lock_wait),
        Refusal::NotFound => GrabError::NotFound,
        Refusal::TimedOut | Refusal::Failed => GrabError::Unavailable {
            dependency: Dependency::Postgres,
            detail: format!("pg-3pc participant: {detail}"),
        },
    }
}

fn unreachable_participant(e: &AskError) -> GrabError {
    GrabError::Unavailable {
        dependency: Dependency::Postgres,
        detail: format!("pg-3pc participant: {e}"),
    }
}

#[async_trait]
impl Strategy for Pg3pc {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        simulated_work(cx).await;
        self.coordinate(cx, req).await
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        self.two_pc.unavailable_reason()
    }

    async fn activate(&self, deps: &Deps) -> Result<(), GrabError> {
        self.two_pc.load_stock(&deps.pool, None).await
    }
}
