//! A `pg-3pc` participant: one PostgreSQL database fronted by a process
//! with its own timeout — what three-phase commit asks of a participant,
//! and what a database alone does not do (a prepared transaction waits
//! for its coordinator forever).
//!
//! The messages are the textbook's, one line of JSON each way per TCP
//! connection ([`Message`], [`Reply`]):
//! - **can-commit**: could this grab commit here? The stock side reads
//!   the stock, the order side looks for the buyer's order; nothing is
//!   locked. A yes puts the participant in *waiting*: it waits
//!   `three_pc_timeout_ms + lock_wait_ms` for the pre-commit and then
//!   aborts (a later pre-commit is refused).
//! - **pre-commit**: do the work and `PREPARE TRANSACTION` (the stock
//!   row stays locked). Acked, the participant is *pre-committed*: with
//!   no word from the coordinator within `three_pc_timeout_ms` it
//!   **commits on its own** — 3PC's rule, which keeps a crashed
//!   coordinator from blocking the row, and which commits one side of a
//!   grab whose coordinator, cut off, decided to abort (the
//!   `partition-precommit` scenario).
//! - **do-commit** / **abort**: `COMMIT PREPARED` / `ROLLBACK PREPARED`.
//!
//! A participant that starts finds the transactions of its side still
//! prepared (`seckill3pc:…:<side>` in `pg_prepared_xacts`) and treats them
//! as pre-committed: their timeout runs from its start.
//!
//! Run one as a process: `seckill-app participant --side stock --listen
//! 127.0.0.1:7001` (the same `SECKILL_*` settings: the stock side uses
//! `SECKILL_STOCK_DATABASE_URL`, the order side `SECKILL_DATABASE_URL`).
//! Without `SECKILL_THREE_PC_*_PARTICIPANT`, each replica runs both in its
//! own process ([`spawn_local`]).

use std::collections::HashMap;
use std::str::FromStr as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seckill_wire::strategies::StrategyName;
use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::pg_2pc::{decrement, finish_prepared, in_prepared, settle_later};
use crate::configuration::Settings;
use crate::db::acquire_or_starved;
use crate::error::GrabError;
use crate::section::{insert_order, refuse_repeat_buyer};
use crate::strategy::{GrabRequest, Order};

/// Every gid `pg-3pc` prepares starts so.
pub const GID_PREFIX: &str = "seckill3pc:";

/// How long a participant remembers a transaction it committed on its
/// own (to tell a late abort so).
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// Which database a participant fronts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// `SECKILL_STOCK_DATABASE_URL`'s `stock` table.
    Stock,
    /// `SECKILL_DATABASE_URL`'s `orders`.
    Order,
}

impl Side {
    /// As in a gid's last part.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Stock => "stock",
            Side::Order => "order",
        }
    }
}

/// A grab as sent to a participant.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Grab {
    /// Product.
    pub product_id: i64,
    /// Buyer.
    pub user_id: i64,
    /// Units.
    pub quantity: i32,
}

impl From<GrabRequest> for Grab {
    fn from(r: GrabRequest) -> Self {
        Self {
            product_id: r.product_id,
            user_id: r.user_id,
            quantity: r.quantity,
        }
    }
}

impl From<Grab> for GrabRequest {
    fn from(g: Grab) -> Self {
        Self {
            product_id: g.product_id,
            user_id: g.user_id,
            quantity: g.quantity,
        }
    }
}

/// The coordinator's messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "message", rename_all = "kebab-case")]
pub enum Message {
    /// Phase one: the vote, nothing locked.
    CanCommit {
        /// The side's gid.
        gid: String,
        /// The grab.
        grab: Grab,
    },
    /// Phase two: work and prepare.
    PreCommit {
        /// The side's gid.
        gid: String,
        /// The grab.
        grab: Grab,
    },
    /// Phase three: commit.
    DoCommit {
        /// The side's gid.
        gid: String,
    },
    /// Roll back (or forget a vote).
    Abort {
        /// The side's gid.
        gid: String,
    },
}

/// Why a participant said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// Not enough stock.
    SoldOut,
    /// The buyer has an order for the product.
    AlreadyPurchased,
    /// The stock row stayed locked past the lock wait, or every pooled
    /// connection was taken by grabs waiting for it.
    Busy,
    /// The stock side has no row for the product.
    NotFound,
    /// Pre-commit after the waiting state's timeout: aborted already.
    TimedOut,
    /// The database failed.
    Failed,
}

/// A participant's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum Reply {
    /// Yes (a pre-commit of the order side carries its order).
    Yes {
        /// The order prepared, on the order side's pre-commit.
        order: Option<Order>,
    },
    /// No, and why.
    No {
        /// Why.
        refusal: Refusal,
        /// What the database said, for the log.
        detail: String,
    },
    /// Committed or rolled back.
    Done,
}

impl Reply {
    fn no(e: &GrabError) -> Self {
        let refusal = match e {
            GrabError::SoldOut => Refusal::SoldOut,
            GrabError::AlreadyPurchased => Refusal::AlreadyPurchased,
            GrabError::Busy(_) | GrabError::PoolStarved => Refusal::Busy,
            GrabError::NotFound => Refusal::NotFound,
            _ => Refusal::Failed,
        };
        Reply::No {
            refusal,
            detail: e.to_string(),
        }
    }
}

/// Where a gid stands at this participant.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Voted yes; aborts at the deadline.
    Waiting(Instant),
    /// Its pre-commit's transaction is being prepared.
    Preparing,
    /// An abort came while it was being prepared (the coordinator gave
    /// up waiting): rolled back as soon as the prepare ends.
    AbortedWhilePreparing,
    /// Prepared; commits on its own at the timeout.
    PreCommitted,
    /// Committed on its own at the timeout (kept a minute, so an abort
    /// that comes later is told so).
    CommittedAlone(Instant),
}

/// One participant.
#[derive(Debug, Clone)]
pub struct Participant {
    side: Side,
    /// Votes and prepares: its connections can all wait for the stock row.
    pool: PgPool,
    /// COMMIT / ROLLBACK PREPARED only, which never wait for a row: the
    /// prepared transaction every waiter waits for must never wait for a
    /// connection one of them holds.
    finisher: PgPool,
    timeout: Duration,
    lock_wait: Duration,
    states: Arc<Mutex<HashMap<String, State>>>,
}

impl Participant {
    /// The participant of `side` under `settings` (its pool connects
    /// lazily). `None` for the stock side without a stock database.
    pub fn new(settings: &Settings, side: Side) -> anyhow::Result<Option<Self>> {
        let url = match side {
            Side::Stock => match settings.stock_database_url() {
                Some(url) => url,
                None => return Ok(None),
            },
            Side::Order => settings.database_url.as_str(),
        };
        let options = PgConnectOptions::from_str(url)?
            .application_name(&format!("seckill-3pc-{}", side.as_str()))
            .options([
                ("lock_timeout", format!("{}ms", settings.lock_wait_ms)),
                (
                    "synchronous_commit",
                    settings.synchronous_commit.as_str().to_owned(),
                ),
            ]);
        let acquire_timeout = settings.database_acquire_timeout_ms.ms();
        let pool = PgPoolOptions::new()
            .max_connections((settings.database_max_connections.get() / 2).max(2))
            .acquire_timeout(acquire_timeout)
            .connect_lazy_with(options.clone());
        let finisher = PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(acquire_timeout)
            .connect_lazy_with(options);
        Ok(Some(Self {
            side,
            pool,
            finisher,
            timeout: settings.three_pc_timeout_ms.ms(),
            lock_wait: settings.lock_wait_ms.ms(),
            states: Arc::default(),
        }))
    }

    /// Adopt this side's transactions left prepared (their timeout starts
    /// now), then answer the coordinators on `listener` until the task is
    /// dropped.
    pub async fn serve(self, listener: TcpListener) {
        match self.adopt().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                side = self.side.as_str(),
                n,
                "3pc participant: prepared transactions adopted; each commits at its timeout"
            ),
            Err(e) => {
                tracing::warn!(side = self.side.as_str(), error = %e, "3pc participant: could not list prepared transactions")
            }
        }
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let this = self.clone();
            tokio::spawn(async move {
                if let Err(e) = this.answer(stream).await {
                    tracing::debug!(error = %e, "3pc participant: connection dropped");
                }
            });
        }
    }

    async fn adopt(&self) -> anyhow::Result<usize> {
        let gids: Vec<String> = sqlx::query_scalar(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE $1",
        )
        .bind(format!("{GID_PREFIX}%:{}", self.side.as_str()))
        .fetch_all(&self.pool)
        .await?;
        for gid in &gids {
            self.pre_committed(gid.clone());
        }
        Ok(gids.len())
    }

    async fn answer(&self, stream: TcpStream) -> anyhow::Result<()> {
        let (read, mut write) = stream.into_split();
        let mut line = String::new();
        BufReader::new(read).read_line(&mut line).await?;
        let message: Message = serde_json::from_str(&line)?;
        let reply = self.on(message).await;
        let mut out = serde_json::to_vec(&reply)?;
        out.push(b'\n');
        write.write_all(&out).await?;
        Ok(())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HashMap<String, State>> {
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One message, one answer.
    pub async fn on(&self, message: Message) -> Reply {
        match message {
            Message::CanCommit { gid, grab } => match self.vote(grab.into()).await {
                Ok(()) => {
                    let deadline = Instant::now() + self.timeout + self.lock_wait;
                    let mut states = self.state();
                    let now = Instant::now();
                    states.retain(|_, s| match s {
                        State::Waiting(d) => *d >= now,
                        State::CommittedAlone(at) => now.duration_since(*at) < FORGET_AFTER,
                        State::PreCommitted | State::Preparing | State::AbortedWhilePreparing => {
                            true
                        }
                    });
                    states.insert(gid, State::Waiting(deadline));
                    Reply::Yes { order: None }
                }
                Err(e) => Reply::no(&e),
            },
            Message::PreCommit { gid, grab } => {
                let waited = {
                    let mut states = self.state();
                    let waited = states.remove(&gid);
                    let in_time = matches!(waited, Some(State::Waiting(d)) if Instant::now() <= d);
                    if in_time {
                        states.insert(gid.clone(), State::Preparing);
                    }
                    in_time
                };
                if !waited {
                    return Reply::No {
                        refusal: Refusal::TimedOut,
                        detail: "no vote waiting for this pre-commit (timed out: aborted)".into(),
                    };
                }
                match self.prepare(&gid, grab.into()).await {
                    Ok(order) if self.pre_committed(gid.clone()) => Reply::Yes { order },
                    Ok(_) => {
                        // Aborted while it was being prepared: the
                        // coordinator answered the buyer already; roll it
                        // back (an abort that found nothing prepared yet
                        // must not let it commit at the timeout).
                        if let Err(e) = finish_prepared(&self.finisher, &gid, false).await {
                            tracing::warn!(gid, error = %e, "3pc participant: rollback after a late prepare failed; retried");
                            settle_later(self.finisher.clone(), gid, false);
                        }
                        Reply::No {
                            refusal: Refusal::TimedOut,
                            detail: "aborted while it was being prepared: rolled back".into(),
                        }
                    }
                    Err(e) => {
                        self.state().remove(&gid);
                        Reply::no(&e)
                    }
                }
            }
            Message::DoCommit { gid } => self.finish(gid, true).await,
            Message::Abort { gid } => self.finish(gid, false).await,
        }
    }

    async fn vote(&self, req: GrabRequest) -> Result<(), GrabError> {
        let mut conn = acquire_or_starved(&self.pool).await?;
        match self.side {
            Side::Order => refuse_repeat_buyer(&mut conn, req).await,
            Side::Stock => {
                let units: Option<i64> =
                    sqlx::query_scalar("SELECT stock FROM stock WHERE product_id = $1")
                        .bind(req.product_id)
                        .fetch_optional(&mut *conn)
                        .await?;
                match units {
                    None => Err(GrabError::NotFound),
                    Some(units) if units < i64::from(req.quantity) => Err(GrabError::SoldOut),
                    Some(_) => Ok(()),
                }
            }
        }
    }

    async fn prepare(&self, gid: &str, req: GrabRequest) -> Result<Option<Order>, GrabError> {
        let mut conn = acquire_or_starved(&self.pool).await?;
        match self.side {
            Side::Stock => in_prepared(&mut conn, gid, |c| Box::pin(decrement(c, req)))
                .await
                .map(|()| None),
            Side::Order => in_prepared(&mut conn, gid, |c| {
                Box::pin(async move {
                    refuse_repeat_buyer(c, req).await?;
                    insert_order(c, req, StrategyName::Pg3pc.as_str(), None).await
                })
            })
            .await
            .map(Some),
        }
    }

    /// Mark `gid` pre-committed and start its timeout: still pre-committed
    /// then, it commits. `false` (nothing marked) when an abort came while
    /// it was being prepared.
    fn pre_committed(&self, gid: String) -> bool {
        {
            let mut states = self.state();
            if matches!(states.get(&gid), Some(State::AbortedWhilePreparing)) {
                states.remove(&gid);
                return false;
            }
            states.insert(gid.clone(), State::PreCommitted);
        }
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(this.timeout).await;
            {
                let mut states = this.state();
                if !matches!(states.get(&gid), Some(State::PreCommitted)) {
                    return;
                }
                states.insert(gid.clone(), State::CommittedAlone(Instant::now()));
            }
            match finish_prepared(&this.finisher, &gid, true).await {
                Ok(()) => tracing::warn!(
                    gid,
                    "3pc participant: no word from the coordinator within the timeout: committed on its own"
                ),
                Err(e) => {
                    // Its decision stands: the commit is retried until it
                    // lands, never dropped with a prepared transaction
                    // left behind.
                    tracing::error!(gid, error = %e, "3pc participant: timeout commit failed; retried");
                    settle_later(this.finisher.clone(), gid, true);
                }
            }
        });
        true
    }

    async fn finish(&self, gid: String, commit: bool) -> Reply {
        let before = {
            let mut states = self.state();
            if !commit && matches!(states.get(&gid), Some(State::Preparing)) {
                // Rolled back by the pre-commit itself once its prepare
                // ends (nothing to roll back yet).
                states.insert(gid.clone(), State::AbortedWhilePreparing);
                return Reply::Done;
            }
            states.remove(&gid)
        };
        if let Some(State::CommittedAlone(_)) = before {
            if !commit {
                tracing::error!(
                    gid,
                    "3pc participant: the coordinator aborts a transaction this side committed at its timeout: the two sides disagree"
                );
                return Reply::No {
                    refusal: Refusal::Failed,
                    detail: "committed on its own at the timeout, before the abort came".into(),
                };
            }
            return Reply::Done;
        }
        match finish_prepared(&self.finisher, &gid, commit).await {
            Ok(()) => Reply::Done,
            Err(e) => {
                // The state is gone already, so the timeout will not
                // commit it: the decision is retried until it lands (a cut
                // link to the database left the order prepared for ever,
                // unseen, beside a stock side that committed).
                settle_later(self.finisher.clone(), gid, commit);
                Reply::No {
                    refusal: Refusal::Failed,
                    detail: format!("{e}; retried every second"),
                }
            }
        }
    }
}

/// Why the coordinator got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Nothing within the wait.
    #[error("no answer from {0} within {1:?}")]
    TimedOut(String, Duration),
    /// The connection failed, or the answer was not one.
    #[error("{0}: {1}")]
    Io(String, String),
}

/// Send `message` to the participant at `addr`; its answer within
/// `within`.
pub async fn ask(addr: &str, message: &Message, within: Duration) -> Result<Reply, AskError> {
    let exchange = async {
        let stream = TcpStream::connect(addr).await?;
        let (read, mut write) = stream.into_split();
        let mut out = serde_json::to_vec(message)?;
        out.push(b'\n');
        write.write_all(&out).await?;
        let mut line = String::new();
        BufReader::new(read).read_line(&mut line).await?;
        Ok::<Reply, anyhow::Error>(serde_json::from_str(&line)?)
    };
    match tokio::time::timeout(within, exchange).await {
        Err(_) => Err(AskError::TimedOut(addr.to_owned(), within)),
        Ok(Err(e)) => Err(AskError::Io(addr.to_owned(), e.to_string())),
        Ok(Ok(reply)) => Ok(reply),
    }
}

/// Start `side`'s participant in this process on a loopback port; its
/// address. `None` for the stock side without a stock database.
pub fn spawn_local(settings: &Settings, side: Side) -> anyhow::Result<Option<String>> {
    let Some(participant) = Participant::new(settings, side)? else {
        return Ok(None);
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?.to_string();
    let listener = TcpListener::from_std(listener)?;
    tokio::spawn(participant.serve(listener));
    Ok(Some(addr))
}
