//! Orders committed in groups: the write path of `redis-lua-stock`, the
//! throughput ceiling.
//!
//! With one `INSERT` per order, every grab pays a commit of its own (a WAL
//! flush with `synchronous_commit=on`) and a round trip of its own. Real
//! flash sales persist orders in batches; so does this: a grab hands its
//! order to the [`OrderBatcher`] and waits. A dispatcher takes whatever is
//! queued (up to `SECKILL_ORDER_BATCH_MAX` orders) and writes it as **one
//! autocommit multi-row `INSERT`** (one statement, one transaction, one
//! commit), with up to `SECKILL_ORDER_BATCH_COMMITS` such commits in flight.
//! Nothing waits on a timer: under light load a batch holds one order (no
//! added latency beyond a channel hop); under a rush the orders that arrive
//! while the previous commits run form the next batch, so batches grow with
//! the load and the commits per second stay about the same.
//!
//! **Bounded.** At most `SECKILL_ORDER_BATCH_QUEUE` orders wait for their
//! batch. A grab takes its place in the queue ([`OrderBatcher::reserve`])
//! *before* it reserves stock; when the queue is full it is refused at once
//! with `busy` (429, `Retry-After`), having touched nothing — a rush the
//! database cannot keep up with is pushed back to the clients instead of
//! growing memory and every grab's wait without bound.
//!
//! **What is promised.** A grab is answered only after the statement that
//! holds its order committed: nothing acknowledged is ever lost. A batch
//! that fails fails as a whole (one statement): every grab in it gets the
//! error, and the strategy settles each of them as it settles one failed
//! order (a reservation is given back only when its order surely does not
//! exist). After a commit the strategy's hook may still refuse an order it
//! had to undo (`redis-lua-stock`: a reservation swept meanwhile); that
//! grab gets the hook's answer instead of its order. The audit tally's
//! trigger runs once per row inside the batch's transaction, so the audit
//! stays exact.
//!
//! **The price.** Each grab's answer waits for its batch: the time queued
//! before its batch started is answered in `Server-Timing: batch;dur=<ms>`
//! and recorded in `seckill_order_batch_wait_seconds`; batch sizes and
//! commit times in `seckill_order_batch_size` and
//! `seckill_order_batch_commit_seconds`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::{Duration, Instant};

use futures::future::BoxFuture;

use crate::error::GrabError;
use crate::strategy::{Deps, GrabRequest, Order};

/// The batch's orders and their audit totals in one statement (one
/// autocommit transaction). `seckill.tally = 'by-statement'`, local to the
/// transaction and set in the `WHERE` before any row is produced, tells
/// the row trigger of `orders` to skip these rows (migration
/// `20261124000001`): the CTEs count them instead, once per batch —
/// per buyer in `order_users` (a buyer already holding an order becomes a
/// duplicate, as the trigger counts), then per product in this session's
/// `order_tally` shard.
const BATCH_INSERT: &str = "
WITH ins AS (
    INSERT INTO orders (product_id, user_id, quantity, strategy)
    SELECT product_id, user_id, quantity, $4
    FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::INT[]) AS t (product_id, user_id, quantity)
    WHERE set_config('seckill.tally', 'by-statement', true) IS NOT NULL
    RETURNING id, product_id, user_id, quantity
), per_user AS (
    SELECT product_id, user_id, COUNT(*) AS k FROM ins GROUP BY product_id, user_id
), counted AS (
    INSERT INTO order_users AS o (product_id, user_id, n)
    SELECT product_id, user_id, k FROM per_user ORDER BY product_id, user_id
    ON CONFLICT (product_id, user_id) DO UPDATE SET n = o.n + EXCLUDED.n
    RETURNING o.product_id, o.user_id, o.n
), per_product AS (
    SELECT c.product_id,
           SUM((c.n > 1)::INT - ((c.n - p.k) > 1)::INT) AS duplicates
    FROM counted c JOIN per_user p USING (product_id, user_id)
    GROUP BY c.product_id
), tallied AS (
    INSERT INTO order_tally AS t (product_id, shard, orders, units, duplicates)
    SELECT i.product_id, pg_backend_pid() % 32, COUNT(*), SUM(i.quantity),
           MAX(d.duplicates)
    FROM ins i JOIN per_product d USING (product_id)
    GROUP BY i.product_id ORDER BY i.product_id
    ON CONFLICT (product_id, shard) DO UPDATE
    SET orders = t.orders + EXCLUDED.orders,
        units = t.units + EXCLUDED.units,
        duplicates = t.duplicates + EXCLUDED.duplicates
)
SELECT id, product_id, user_id FROM ins";

/// One order waiting for its batch.
#[derive(Debug)]
struct Pending {
    req: GrabRequest,
    queued: Instant,
    answer: oneshot::Sender<(Result<Order, GrabError>, Duration)>,
}

/// What runs after a batch committed, before its grabs are answered, with
/// the batch's orders; the grabs are answered their orders.
pub type AfterCommit = fn(Deps, Vec<GrabRequest>) -> BoxFuture<'static, ()>;

/// What runs after a batch committed, before its grabs are answered (the
/// strategy confirms the batch's orders: `redis-lua-stock` forgets their
/// reservations), with the batch's orders; it answers, for each order in
/// the same place, what its grab is told: the order, or why it was undone.
pub type Confirm = fn(Deps, Vec<Order>) -> BoxFuture<'static, Vec<Result<Order, GrabError>>>;

/// The hook a batcher runs after each commit.
#[derive(Debug, Clone, Copy)]
enum Hook {
    /// Runs; every grab gets its order.
    AfterCommit(AfterCommit),
    /// Runs and answers each grab.
    Confirm(Confirm),
}

/// What the dispatcher writes with.
#[derive(Debug, Clone)]
struct Writer {
    deps: Deps,
    strategy: &'static str,
    hook: Hook,
}

/// Groups the orders of concurrent grabs into multi-row `INSERT`s (see the
/// module doc). One per strategy that batches; the dispatcher starts with
/// the first order.
#[derive(Debug)]
pub struct OrderBatcher {
    strategy: &'static str,
    max: usize,
    commits: usize,
    capacity: usize,
    runtime: Option<tokio::runtime::Handle>,
    hook: Hook,
    queue: OnceLock<mpsc::Sender<Pending>>,
}

/// A place in the batch queue, held from before the grab's reservation
/// until its order is queued ([`QueueSlot::insert`]); dropped unused, it
/// frees the place.
#[derive(Debug)]
pub struct QueueSlot<'a> {
    permit: mpsc::Permit<'a, Pending>,
}

tokio::task_local! {
    /// How long this grab's order waited for its batch to start; the grab
    /// route answers it as `Server-Timing: batch;dur=<ms>`.
    pub static BATCH_WAIT: std::cell::Cell<Option<Duration>>;
}

impl OrderBatcher {
    /// Batches of up to `max` orders (1 = every order its own `INSERT`, no
    /// batcher), `commits` batches in flight at once, at most the default
    /// `SECKILL_ORDER_BATCH_QUEUE` orders waiting. Built inside the runtime
    /// the dispatcher should run on (the service's main runtime).
    /// `after_commit` runs once per committed batch, before its grabs are
    /// answered their orders.
    pub fn new(
        strategy: &'static str,
        max: usize,
        commits: usize,
        after_commit: AfterCommit,
    ) -> Self {
        let capacity = crate::configuration::Settings::default().order_batch_queue;
        Self::with_hook(
            strategy,
            max,
            commits,
            capacity,
            Hook::AfterCommit(after_commit),
        )
    }

    /// Like [`OrderBatcher::new`], at most `capacity` orders waiting, and
    /// `confirm` runs once per committed batch and answers its grabs.
    pub fn confirming(
        strategy: &'static str,
        max: usize,
        commits: usize,
        capacity: usize,
        confirm: Confirm,
    ) -> Self {
        Self::with_hook(strategy, max, commits, capacity, Hook::Confirm(confirm))
    }

    fn with_hook(
        strategy: &'static str,
        max: usize,
        commits: usize,
        capacity: usize,
        hook: Hook,
    ) -> Self {
        Self {
            strategy,
            hook,
            max: max.max(1),
            commits: commits.max(1),
            capacity: capacity.max(1),
            runtime: tokio::runtime::Handle::try_current().ok(),
            queue: OnceLock::new(),
        }
    }

    /// Whether orders are grouped at all (`max` > 1).
    pub fn batching(&self) -> bool {
        self.max > 1
    }

    /// Queue `req`'s order and wait until the batch holding it committed
    /// (or failed: then the error, and nothing of the batch was written);
    /// [`GrabError::QueueFull`] at once when the queue is full.
    pub async fn insert(&self, deps: &Deps, req: GrabRequest) -> Result<Order, GrabError> {
        self.reserve(deps)?.insert(req).await
    }

    /// A place in the queue, or [`GrabError::QueueFull`] (`busy`) when
    /// `capacity` orders are waiting already. Take it before reserving
    /// anything: a refusal then has nothing to give back.
    pub fn reserve(&self, deps: &Deps) -> Result<QueueSlot<'_>, GrabError> {
        match self.queue(deps).try_reserve() {
            Ok(permit) => Ok(QueueSlot { permit }),
            Err(TrySendError::Full(())) => Err(GrabError::QueueFull),
            Err(TrySendError::Closed(())) => {
                Err(GrabError::Internal("the order batcher stopped".into()))
            }
        }
    }

    /// The queue, its dispatcher started with the first order.
    fn queue(&self, deps: &Deps) -> &mpsc::Sender<Pending> {
        self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(self.capacity);
            let writer = Writer {
                deps: deps.clone(),
                strategy: self.strategy,
                hook: self.hook,
            };
            let dispatch = dispatch(rx, writer, self.max, self.commits);
            match &self.runtime {
                Some(runtime) => drop(runtime.spawn(dispatch)),
                None => drop(tokio::spawn(dispatch)),
            }
            tx
        })
    }
}

impl QueueSlot<'_> {
    /// Queue `req`'s order in this place and wait until the batch holding
    /// it committed (or failed: then the error, and nothing of the batch
    /// was written).
    pub async fn insert(self, req: GrabRequest) -> Result<Order, GrabError> {
        let (answer, answered) = oneshot::channel();
        self.permit.send(Pending {
            req,
            queued: Instant::now(),
            answer,
        });
        let (result, waited) = answered
            .await
            .map_err(|_| GrabError::Internal("the order batcher dropped an order".into()))?;
        let _ = BATCH_WAIT.try_with(|w| w.set(Some(waited)));
        result
    }
}

/// Take what is queued, up to `max`, whenever one of `commits` slots is
/// free; write each batch in a task of its own.
async fn dispatch(mut queue: mpsc::Receiver<Pending>, writer: Writer, max: usize, commits: usize) {
    let slots = Arc::new(Semaphore::new(commits));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = queue.recv().await else {
            return;
        };
        let mut batch = Vec::with_capacity(max.min(1024));
        batch.push(first);
        while batch.len() < max {
            match queue.try_recv() {
                Ok(pending) => batch.push(pending),
                Err(_) => break,
            }
        }
        let writer = writer.clone();
        tokio::spawn(async move {
            writer.commit(batch).await;
            drop(slot);
        });
    }
}

impl Writer {
    /// One multi-row `INSERT` (autocommit: one statement, one commit), then
    /// every grab of the batch gets its order or the batch's error.
    async fn commit(&self, batch: Vec<Pending>) {
        let started = Instant::now();
        let size = batch.len();
        let result = self.insert_all(&batch).await;
        let labels = [self.strategy];
        let m = &self.deps.metrics;
        m.order_batch_size
            .with_label_values(&labels)
            .observe(size as f64);
        m.order_batch_commit
            .with_label_values(&labels)
            .observe(started.elapsed().as_secs_f64());
        let mut ids = match result {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(strategy = self.strategy, orders = size, error = %e,
                    "an order batch failed: none of its orders was written");
                for p in batch {
                    let waited = started.saturating_duration_since(p.queued);
                    let _ = p.answer.send((Err(e.clone()), waited));
                }
                return;
            }
        };
        let mut answers: Vec<Result<Order, GrabError>> = batch
            .iter()
            .map(|p| {
                let id = ids
                    .get_mut(&(p.req.product_id, p.req.user_id))
                    .and_then(Vec::pop);
                match id {
                    Some(order_id) => Ok(Order {
                        order_id,
                        product_id: p.req.product_id,
                        user_id: p.req.user_id,
                        quantity: p.req.quantity,
                        strategy: self.strategy.into(),
                        fence_token: None,
                    }),
                    None => Err(GrabError::Internal(
                        "an order batch did not return every order's id".into(),
                    )),
                }
            })
            .collect();
        match self.hook {
            Hook::AfterCommit(after_commit) => {
                after_commit(self.deps.clone(), batch.iter().map(|p| p.req).collect()).await;
            }
            Hook::Confirm(confirm) => {
                // It sees the committed orders and answers each in its place.
                let (places, committed): (Vec<usize>, Vec<Order>) = answers
                    .iter()
                    .enumerate()
                    .filter_map(|(i, a)| a.as_ref().ok().map(|order| (i, order.clone())))
                    .unzip();
                let settled = confirm(self.deps.clone(), committed).await;
                for (i, answer) in places.into_iter().zip(settled) {
                    answers[i] = answer;
                }
            }
        }
        for (p, answer) in batch.into_iter().zip(answers) {
            let waited = started.saturating_duration_since(p.queued);
            m.order_batch_wait
                .with_label_values(&labels)
                .observe(waited.as_secs_f64());
            // A grab whose task is gone (the process stops) cannot be told.
            let _ = p.answer.send((answer, waited));
        }
    }

    /// The batch's orders in one statement; their ids by (product, buyer).
    async fn insert_all(
        &self,
        batch: &[Pending],
    ) -> Result<HashMap<(i64, i64), Vec<i64>>, GrabError> {
        let products: Vec<i64> = batch.iter().map(|p| p.req.product_id).collect();
        let users: Vec<i64> = batch.iter().map(|p| p.req.user_id).collect();
        let quantities: Vec<i32> = batch.iter().map(|p| p.req.quantity).collect();
        let rows: Vec<(i64, i64, i64)> = sqlx::query_as(BATCH_INSERT)
            .bind(&products)
            .bind(&users)
            .bind(&quantities)
            .bind(self.strategy)
            .fetch_all(&self.deps.pool)
            .await?;
        let mut ids: HashMap<(i64, i64), Vec<i64>> = HashMap::with_capacity(rows.len());
        // Popped from the back: the lowest id first for a (product, buyer)
        // that occurs twice (the Redis buyer set never lets it happen).
        for (id, product_id, user_id) in rows.into_iter().rev() {
            ids.entry((product_id, user_id)).or_default().push(id);
        }
        Ok(ids)
    }
}
