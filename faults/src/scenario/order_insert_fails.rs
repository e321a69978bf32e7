//! `order-insert-fails` — PostgreSQL refuses one order `INSERT` per
//! injection, after the grab took its stock. The seckill demos decrement
//! the stock in Redis (`DECR`) and then insert the order; when the insert
//! fails nothing gives the unit back, and it stays taken with no order —
//! an undersell their readers keep asking about. A lock strategy whose
//! decrement and insert are one transaction rolls the decrement back with
//! the refused insert; `redis-lua-stock` gives the unit back with its
//! cancel (the order surely does not exist: PostgreSQL answered an
//! error). The `compensate=off` dial switches that cancel off (the
//! service's `skip_cancel` fault): the bug the `miaosha-decr` replay
//! shows.
//!
//! The fault is PostgreSQL's own: a `BEFORE INSERT … FOR EACH STATEMENT`
//! trigger on `orders` raises an exception on the first `refused`
//! statements (1) after a sequence was restarted, and lets every later
//! one through (a sequence, because `nextval` is not rolled back with the
//! statement it refused). Each injection is a round of its own ([`super::inject`]):
//! fresh stock, buyers on both replicas, 100 ms of load, the sequence
//! restarted, and the round runs on for `window_ms`.
//!
//! The proof an injection landed: the sequence counted at least
//! `refused` calls after its restart, so that many `INSERT` statements
//! reached the trigger and were refused.

use sqlx::Connection as _;

use super::case::Expectation;
use super::dials::{self, dials, Choice as _, OnOff, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::Lab;
use super::params::{Params, Spec};
use super::world::{arm, pause, two_replicas, work, Case, CaseRun, World};
use seckill_load::api::Variant;
use seckill_load::api::{FaultsPatch, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};

dials! {
    /// order-insert-fails' dials.
    pub struct OrderInsertFailsDials {
        ttl_ms: u64 = dials::ttl("5000"),
        work_ms: u64 = dials::work("5"),
        injections: u64 = dials::injections("12"),
        compensate: OnOff = Shape::choice(
            OnOff::WORDS,
            "on",
            "redis-lua-stock: off gives nothing back after a failed confirm (the service's skip_cancel), as the demos that DECR in Redis and then insert do",
        ),
        refused: u64 = Shape::count(
            "1",
            "INSERT statements into orders PostgreSQL refuses in a row, per injection",
        ),
        window_ms: u64 = dials::window("300"),
        users: usize = dials::users("8"),
        lock_wait_ms: u64 = dials::lock_wait("300"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = OrderInsertFailsDials::SPECS;

/// `--quick`: windows of 150 ms and 4 buyers; the refused insert comes
/// within the first few ms after the restart under any of them, and the
/// lighter load leaves the cores to the timing-bound cases `scenario all`
/// runs beside it.
pub const QUICK: &[(&str, &str)] = &[("window_ms", "150"), ("users", "4")];

/// The sequence, function and trigger the fault installs on the run's
/// database: after a restart, `nextval` counts the statements, and the
/// first `refused` (the function's argument) are refused. Parked far
/// beyond any count until the first restart.
const INSTALL: [&str; 4] = [
    "CREATE SEQUENCE IF NOT EXISTS seckill_insert_fault",
    "SELECT setval('seckill_insert_fault', 1000000000)",
    "CREATE OR REPLACE FUNCTION seckill_insert_fault() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       IF nextval('seckill_insert_fault') <= TG_ARGV[0]::bigint THEN \
         RAISE EXCEPTION 'order insert refused (the order-insert-fails scenario)'; \
       END IF; \
       RETURN NULL; \
     END $$",
    "DROP TRIGGER IF EXISTS seckill_insert_fault ON orders",
];

/// The trigger, refusing the first `refused` statements after a restart.
fn trigger(refused: u64) -> String {
    format!(
        "CREATE TRIGGER seckill_insert_fault BEFORE INSERT ON orders \
         FOR EACH STATEMENT EXECUTE FUNCTION seckill_insert_fault('{refused}')"
    )
}

/// Everything [`INSTALL`] made, gone.
const REMOVE: [&str; 3] = [
    "DROP TRIGGER IF EXISTS seckill_insert_fault ON orders",
    "DROP FUNCTION IF EXISTS seckill_insert_fault()",
    "DROP SEQUENCE IF EXISTS seckill_insert_fault",
];

/// What `strategy` should do when PostgreSQL refuses an order's insert.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    let d = OrderInsertFailsDials::of(params);
    if strategy.is(StrategyName::RedisLuaStock) {
        return Ok(if d.compensate == OnOff::On {
            (
                Holds,
                "the unit was taken in Redis before the insert; PostgreSQL refused the insert, so the order surely does not exist and the cancel gives the unit back".into(),
            )
        } else {
            (
                Breaks,
                "skip_cancel: the unit taken in Redis is never given back and no order exists for it: undersold".into(),
            )
        });
    }
    Ok((
        Holds,
        "the stock's decrement and the order's insert commit together (one transaction, or two prepared ones): the refused insert takes the decrement back with it".into(),
    ))
}

/// `injections` rounds, each with `refused` order inserts refused by
/// PostgreSQL.
/// The fault, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = OrderInsertFailsDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    two_replicas(lab, world, strategy, d.ttl_ms, Vec::new()).await?;
    let service = world.service();
    let skip_cancel = d.compensate == OnOff::Off;
    let faults = FaultsPatch {
        skip_cancel: Some(skip_cancel),
        ..work(d.work_ms)
    };
    arm(&service, strategy, faults).await?;
    let mut pg = sqlx::PgConnection::connect(&lab.db_url).await?;
    for statement in INSTALL {
        sqlx::query(statement).execute(&mut pg).await?;
    }
    let refused = d.refused.max(1);
    sqlx::query(&trigger(refused)).execute(&mut pg).await?;
    case.step(format!(
        "PUT /admin/faults {{\"skip_cancel\": {skip_cancel}}}; a trigger on orders refuses the first {refused} INSERT statement(s) after each restart of its sequence; {} rounds of {} ms, {} buyers on replicas a, b",
        d.injections, d.window_ms, d.users
    ));
    pause(100).await;
    // The rounds; the trigger is dropped whatever they end in, so a
    // failed case leaves no refusal behind for the lane's next case.
    let rounds = async {
        for _ in 0..d.injections {
            one_round(lab, world, case, strategy, &d, &mut pg).await?;
        }
        anyhow::Ok(())
    }
    .await;
    for statement in REMOVE {
        sqlx::query(statement).execute(&mut pg).await?;
    }
    rounds?;
    case.proven_by_injections(|proven| {
        format!(
            "PostgreSQL refused {refused} INSERT statement(s) into orders in {proven} of {} rounds",
            d.injections
        )
    });
    service
        .set_faults(FaultsPatch {
            skip_cancel: Some(false),
            ..FaultsPatch::default()
        })
        .await?;
    case.step("fault undone (trigger dropped, skip_cancel off)");
    Ok(dials::record(
        &d,
        Facts { insert_refused: Some("BEFORE INSERT FOR EACH STATEMENT trigger on orders, `refused` statements per round".to_owned()), skip_cancel: Some(skip_cancel), ..Facts::default() },
    ))
}

/// One injection: fresh stock and load, the sequence restarted, the
/// round's window waited out until `refused` statements reached the
/// trigger (its proof) or `window_ms` passed (not counted).
async fn one_round(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    d: &OrderInsertFailsDials,
    pg: &mut sqlx::PgConnection,
) -> anyhow::Result<()> {
    let refused = d.refused.max(1);
    let round = inject::begin(&lab.http, world, case, d.users.max(2), 100).await?;
    sqlx::query("ALTER SEQUENCE seckill_insert_fault RESTART")
        .execute(&mut *pg)
        .await?;
    let mut window = Window::starting(case, "the next INSERT into orders", None);
    let reached = loop {
        let (last, called): (i64, bool) =
            sqlx::query_as("SELECT last_value, is_called FROM seckill_insert_fault")
                .fetch_one(&mut *pg)
                .await?;
        let reached = if called { last.unsigned_abs() } else { 0 };
        if reached >= refused || case.clock_ms() - window.start_ms >= d.window_ms {
            break reached;
        }
        pause(2).await;
    };
    window.end_ms = case.clock_ms();
    if reached >= refused {
        window.proof = Some(format!(
            "PostgreSQL refused the first {refused} INSERT statement(s) into orders, the last {} ms after the fault was armed",
            window.end_ms - window.start_ms
        ));
    } else {
        case.step(format!(
            "{reached} of {refused} INSERT statements reached the trigger within the window: not counted"
        ));
    }
    pause(
        d.window_ms
            .saturating_sub(case.clock_ms() - window.start_ms),
    )
    .await;
    round.end(world, case, strategy, window).await
}
