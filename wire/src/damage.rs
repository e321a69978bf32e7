//! What a broken lock leaves in the data, the four counts every report of
//! damage carries: the audit (`GET /admin/audit`), the status page
//! (`GET /api/v1/status`), the load generator's report and verdicts, the
//! scenarios' rounds and the console's readings. One type, flattened into
//! each (`#[serde(flatten)]`): the JSON keeps the four names at the top
//! level of its object, as the contract writes them.
//!
//! `T` is what one count is: `i64` where it was read, `Option<i64>` where
//! a reading may have failed (the console's), a column of those for a
//! series (the console's charts).

use serde::{Deserialize, Serialize};

/// The four counts of damage. (The OpenAPI document describes the `i64`
/// one, the only one the service sends.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Damage<T = i64> {
    /// Units ordered beyond the initial stock: `max(0, ordered_units −
    /// initial_stock)`.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub oversold: T,
    /// Ordered units the stock column never saw: `max(0, ordered_units −
    /// (initial_stock − stock))`. Never negative: a product's lost updates
    /// cannot cancel against another's missing stock.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub lost_updates: T,
    /// Units gone from the stock column that no order took: `max(0,
    /// (initial_stock − stock) − ordered_units)` (a decrement whose order
    /// was rolled back without giving the stock back).
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub undersold: T,
    /// Users holding more than one order for the product.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub duplicates: T,
}

impl<T: Clone> Damage<T> {
    /// `value` for each count (an empty column, an unknown reading).
    pub fn each(value: T) -> Self {
        Damage {
            oversold: value.clone(),
            lost_updates: value.clone(),
            undersold: value.clone(),
            duplicates: value,
        }
    }
}

impl<T> Damage<T> {
    /// Each count through `f`.
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> Damage<U> {
        Damage {
            oversold: f(self.oversold),
            lost_updates: f(self.lost_updates),
            undersold: f(self.undersold),
            duplicates: f(self.duplicates),
        }
    }
}

impl Damage {
    /// The audit's four counts of `ordered_units` against a product's
    /// `initial_stock` and its `stock` column now (`duplicates` counted
    /// apart, by user).
    pub fn of_product(initial_stock: i64, stock: i64, ordered_units: i64, duplicates: i64) -> Self {
        let taken = initial_stock - stock;
        Self {
            oversold: (ordered_units - initial_stock).max(0),
            lost_updates: (ordered_units - taken).max(0),
            undersold: (taken - ordered_units).max(0),
            duplicates,
        }
    }

    /// Summed, each count on its own (one product's lost updates never
    /// hide behind another's undersold units).
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Damage>) -> Damage {
        all.into_iter().fold(Damage::default(), |a, d| Damage {
            oversold: a.oversold + d.oversold,
            lost_updates: a.lost_updates + d.lost_updates.max(0),
            undersold: a.undersold + d.undersold.max(0),
            duplicates: a.duplicates + d.duplicates,
        })
    }
}

impl<T> From<Option<Damage<T>>> for Damage<Option<T>> {
    /// Each count known, or each unknown (a reading that failed).
    fn from(damage: Option<Damage<T>>) -> Self {
        match damage {
            Some(d) => d.map(Some),
            None => Damage {
                oversold: None,
                lost_updates: None,
                undersold: None,
                duplicates: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Damage;

    #[test]
    fn a_products_counts_follow_the_audits_formulas() {
        // 10 in stock, 7 taken from the column, 9 ordered: 2 the column
        // never saw, none beyond the stock.
        let d = Damage::of_product(10, 3, 9, 1);
        assert_eq!(
            (d.oversold, d.lost_updates, d.undersold, d.duplicates),
            (0, 2, 0, 1)
        );
        // 12 ordered of 10, the column at 0: 2 oversold, 2 lost.
        let d = Damage::of_product(10, 0, 12, 0);
        assert_eq!((d.oversold, d.lost_updates, d.undersold), (2, 2, 0));
        // 5 gone from the column, 4 ordered: 1 undersold.
        let d = Damage::of_product(10, 5, 4, 0);
        assert_eq!((d.oversold, d.lost_updates, d.undersold), (0, 0, 1));
        assert_eq!(Damage::of_product(10, 6, 4, 0), Damage::default());
    }

    #[test]
    fn sums_keep_each_count_apart_and_flatten_keeps_the_names() {
        let lost = Damage::of_product(10, 3, 9, 0);
        let under = Damage::of_product(10, 5, 4, 0);
        let sum = Damage::sum([&lost, &under]);
        assert_eq!((sum.lost_updates, sum.undersold), (2, 1));

        #[derive(serde::Serialize)]
        struct Row {
            product_id: i64,
            #[serde(flatten)]
            damage: Damage,
        }
        let json = serde_json::to_value(Row {
            product_id: 1,
            damage: sum,
        })
        .expect("serialises");
        assert_eq!(json["lost_updates"], 2);
        assert_eq!(json["undersold"], 1);
        assert_eq!(json["product_id"], 1);
        let unknown: Damage<Option<i64>> = None::<Damage>.into();
        assert_eq!(
            serde_json::to_value(unknown).expect("serialises")["oversold"],
            serde_json::Value::Null
        );
    }
}
