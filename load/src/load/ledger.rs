//! The buyers' side of the ground truth: every order the service
//! acknowledged (`201`, with its order id) and every answer that leaves the
//! outcome unknown (a timeout, a reset connection, a `5xx`), checked after
//! the run against the orders the database holds — Jepsen's check of
//! acknowledged writes.
//!
//! [`Ledger::account`] matches them up, product by product:
//! - each acknowledged order must be a row with its id, user and quantity;
//!   one that is not is **acknowledged_missing** — a violation under every
//!   strategy, since the service answered `201` only after its commit;
//! - each row that no acknowledgement names must be explained by an
//!   indeterminate answer of the same user and quantity (it is then
//!   **found**); a row nothing explains is **unacknowledged_present**;
//! - indeterminate answers left over are **not found** (the write never
//!   committed: fine either way);
//! - the units gone from the stock column (initial − final) must lie
//!   between the acknowledged units and those plus the indeterminate ones
//!   (**bounds**): fewer means an acknowledged sale never reached the
//!   stock, more means stock left with no request that could take it.
//!
//! A refused connection is no answer at all but not indeterminate: the
//! request never reached a replica.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::api::{AuditRow, Order, OrderRow};

/// What one grab came back with, as the ledger needs it.
#[derive(Debug, Clone, Copy)]
pub enum Answer<'a> {
    /// An HTTP answer: its status and body.
    Http(u16, &'a [u8]),
    /// No answer: `connect` when the connection was never made (the request
    /// cannot have been processed), else a timeout or a reset mid-request.
    Lost { connect: bool },
}

impl Answer<'_> {
    /// The answer of a reqwest error.
    pub fn lost(error: &reqwest::Error) -> Answer<'static> {
        Answer::Lost {
            connect: error.is_connect(),
        }
    }
}

/// A grab whose outcome is known only to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Unsure {
    product: u64,
    user_id: i64,
    quantity: i64,
}

/// An acknowledged order, as its `201` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Ack {
    product: u64,
    /// `None`: a `201` whose body was no order (matched by user instead).
    order_id: Option<i64>,
    user_id: i64,
    quantity: i64,
}

/// A ledger's entries, as a shard's record carries them to `merge`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entries {
    acked: Vec<Ack>,
    unsure: Vec<Unsure>,
}

impl Entries {
    /// Orders acknowledged (`201`).
    pub fn acknowledged(&self) -> u64 {
        self.acked.len() as u64
    }
}

/// Every acknowledged and every indeterminate grab of one run.
#[derive(Debug, Default)]
pub struct Ledger {
    entries: Mutex<Entries>,
}

/// The indeterminate answers, split by whether their order exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indeterminate {
    /// An order of that user and quantity exists: the write committed.
    pub found: u64,
    /// None exists: it did not.
    pub not_found: u64,
}

/// The units gone from the stock column against what the buyers know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// Initial − final stock, over the run's products.
    pub sold_units: i64,
    /// Units of acknowledged orders: the least that must be gone.
    pub acknowledged_units: i64,
    /// Those plus the units of indeterminate answers: the most that may be.
    pub attempted_units: i64,
    /// Products whose sold units fell outside their own bounds.
    pub products_out: u64,
}

impl Bounds {
    /// Whether every product's stock moved within its bounds.
    pub fn hold(&self) -> bool {
        self.products_out == 0
    }
}

/// The acknowledgement check of a run (`report.json` / `scenarios.json` keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    /// `201`s answered.
    pub acknowledged: u64,
    /// `201`s whose order is not in the database.
    pub acknowledged_missing: u64,
    /// Orders no `201` and no indeterminate answer explains.
    pub unacknowledged_present: u64,
    /// Timeouts, resets, `5xx`: found or not found among the orders.
    pub indeterminate: Indeterminate,
    /// Stock gone, against acknowledged and attempted units.
    pub bounds: Bounds,
}

fn lock(entries: &Mutex<Entries>) -> std::sync::MutexGuard<'_, Entries> {
    entries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Ledger {
    /// Note one grab of `quantity` units of `product` by `user_id`.
    pub fn record(&self, product: u64, user_id: i64, quantity: i64, answer: Answer<'_>) {
        match answer {
            Answer::Http(201, body) => {
                let order = serde_json::from_slice::<Order>(body).ok();
                lock(&self.entries).acked.push(Ack {
                    product,
                    order_id: order.as_ref().map(|o| o.order_id),
                    user_id: order.as_ref().map_or(user_id, |o| o.user_id),
                    quantity: order.as_ref().map_or(quantity, |o| i64::from(o.quantity)),
                });
            }
            Answer::Http(status, _) if status >= 500 => lock(&self.entries).unsure.push(Unsure {
                product,
                user_id,
                quantity,
            }),
            Answer::Lost { connect: false } => lock(&self.entries).unsure.push(Unsure {
                product,
                user_id,
                quantity,
            }),
            Answer::Http(..) | Answer::Lost { connect: true } => {}
        }
    }

    /// A copy of every entry so far.
    pub fn entries(&self) -> Entries {
        lock(&self.entries).clone()
    }

    /// Add another ledger's entries (another shard's): the check then runs
    /// over the union.
    pub fn absorb(&self, other: &Entries) {
        let mut entries = lock(&self.entries);
        entries.acked.extend_from_slice(&other.acked);
        entries.unsure.extend_from_slice(&other.unsure);
    }

    /// The products the run touched with an acknowledged or unsure grab.
    pub fn products(&self) -> Vec<u64> {
        let entries = lock(&self.entries);
        let mut products: Vec<u64> = entries
            .acked
            .iter()
            .map(|a| a.product)
            .chain(entries.unsure.iter().map(|u| u.product))
            .collect();
        products.sort_unstable();
        products.dedup();
        products
    }

    /// Match the acknowledgements against `orders` (every row of each
    /// product since its reset) and the stock against `audit`.
    ///
    /// Over 80 lines on purpose: the acknowledged-order check's matching, each
    /// rule beside the case it decides.
    pub fn account(&self, orders: &BTreeMap<u64, Vec<OrderRow>>, audit: &[AuditRow]) -> Accounting {
        let entries = lock(&self.entries);
        let mut out = Accounting {
            acknowledged: entries.acked.len() as u64,
            ..Accounting::default()
        };
        // Rows by id, per product; an acknowledgement takes its row away.
        let mut rows: BTreeMap<u64, HashMap<i64, &OrderRow>> = orders
            .iter()
            .map(|(p, rows)| (*p, rows.iter().map(|r| (r.order_id, r)).collect()))
            .collect();
        let mut unmatched_acks = Vec::new();
        for ack in &entries.acked {
            let Some(id) = ack.order_id else {
                unmatched_acks.push(*ack);
                continue;
            };
            let of_product = rows.entry(ack.product).or_default();
            let same = of_product
                .get(&id)
                .is_some_and(|r| r.user_id == ack.user_id && i64::from(r.quantity) == ack.quantity);
            if same {
                of_product.remove(&id);
            } else {
                out.acknowledged_missing += 1;
            }
        }
        // A 201 without an order body: matched by user and quantity.
        for ack in unmatched_acks {
            let of_product = rows.entry(ack.product).or_default();
            let id = of_product
                .values()
                .find(|r| r.user_id == ack.user_id && i64::from(r.quantity) == ack.quantity)
                .map(|r| r.order_id);
            match id {
                Some(id) => {
                    of_product.remove(&id);
                }
                None => out.acknowledged_missing += 1,
            }
        }
        // What is left must be explained by an indeterminate answer.
        let mut unsure: Vec<Option<Unsure>> = entries.unsure.iter().copied().map(Some).collect();
        for (product, left) in &rows {
            let mut left: Vec<&&OrderRow> = left.values().collect();
            left.sort_by_key(|r| r.order_id);
            for row in left {
                let explains = unsure.iter_mut().find(|u| {
                    u.is_some_and(|u| {
                        u.product == *product
                            && u.user_id == row.user_id
                            && u.quantity == i64::from(row.quantity)
                    })
                });
                match explains {
                    Some(slot) => {
                        *slot = None;
                        out.indeterminate.found += 1;
                    }
                    None => out.unacknowledged_present += 1,
                }
            }
        }
        out.indeterminate.not_found = unsure.iter().filter(|u| u.is_some()).count() as u64;
        // Bounds, product by product.
        for row in audit {
            let product = row.product_id as u64;
            let units = |product_of: u64, q: i64| if product_of == product { q } else { 0 };
            let low: i64 = entries
                .acked
                .iter()
                .map(|a| units(a.product, a.quantity))
                .sum();
            let extra: i64 = entries
                .unsure
                .iter()
                .map(|u| units(u.product, u.quantity))
                .sum();
            let sold = row.initial_stock - row.stock;
            out.bounds.sold_units += sold;
            out.bounds.acknowledged_units += low;
            out.bounds.attempted_units += low + extra;
            if sold < low || sold > low + extra {
                out.bounds.products_out += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: i64, user: i64, quantity: i32) -> Vec<u8> {
        serde_json::to_vec(&Order {
            order_id: id,
            product_id: 1,
            user_id: user,
            quantity,
            strategy: "x".into(),
            fence_token: None,
        })
        .expect("encodes")
    }

    fn row(id: i64, user: i64, quantity: i32) -> OrderRow {
        OrderRow {
            order_id: id,
            user_id: user,
            quantity,
            created_at: String::new(),
        }
    }

    fn audit(initial: i64, stock: i64) -> Vec<AuditRow> {
        vec![AuditRow {
            product_id: 1,
            initial_stock: initial,
            stock,
            orders: 0,
            ordered_units: 0,
            damage: crate::api::Damage::default(),
            negative_stock: false,
        }]
    }

    #[test]
    fn every_acknowledged_order_is_looked_for_and_every_row_explained() {
        let ledger = Ledger::default();
        ledger.record(1, 10, 1, Answer::Http(201, &order(1, 10, 1)));
        ledger.record(1, 11, 2, Answer::Http(201, &order(2, 11, 2)));
        ledger.record(1, 12, 1, Answer::Http(201, &order(3, 12, 1)));
        ledger.record(1, 13, 1, Answer::Http(503, b"{}"));
        ledger.record(1, 14, 1, Answer::Lost { connect: false });
        ledger.record(1, 15, 1, Answer::Lost { connect: true });
        ledger.record(1, 16, 1, Answer::Http(409, b"{}"));
        // Order 3 vanished; user 13's 503 committed; user 14's timeout did
        // not; order 9 of user 99 nobody asked for.
        let rows = BTreeMap::from([(
            1,
            vec![row(1, 10, 1), row(2, 11, 2), row(7, 13, 1), row(9, 99, 1)],
        )]);
        let got = ledger.account(&rows, &audit(10, 5));
        assert_eq!(got.acknowledged, 3);
        assert_eq!(got.acknowledged_missing, 1);
        assert_eq!(got.unacknowledged_present, 1);
        assert_eq!(
            got.indeterminate,
            Indeterminate {
                found: 1,
                not_found: 1
            }
        );
        // 4 acknowledged units, 2 more unsure: 5 sold is within bounds.
        assert_eq!(got.bounds.acknowledged_units, 4);
        assert_eq!(got.bounds.attempted_units, 6);
        assert!(got.bounds.hold());
        assert!(!ledger.account(&rows, &audit(10, 7)).bounds.hold());
        assert!(!ledger.account(&rows, &audit(10, 3)).bounds.hold());
    }

    #[test]
    fn a_row_with_another_user_or_quantity_is_not_the_acknowledged_order() {
        let ledger = Ledger::default();
        ledger.record(1, 10, 1, Answer::Http(201, &order(1, 10, 1)));
        let rows = BTreeMap::from([(1, vec![row(1, 11, 1)])]);
        let got = ledger.account(&rows, &audit(10, 9));
        assert_eq!(got.acknowledged_missing, 1);
        assert_eq!(got.unacknowledged_present, 1);
    }

    #[test]
    fn a_clean_run_accounts_for_everything() {
        let ledger = Ledger::default();
        for i in 1..=5 {
            ledger.record(1, i, 1, Answer::Http(201, &order(i, i, 1)));
        }
        let rows = BTreeMap::from([(1, (1..=5).map(|i| row(i, i, 1)).collect())]);
        let got = ledger.account(&rows, &audit(5, 0));
        assert_eq!(
            (got.acknowledged_missing, got.unacknowledged_present),
            (0, 0)
        );
        assert!(got.bounds.hold());
        assert_eq!(ledger.products(), vec![1]);
    }
}
