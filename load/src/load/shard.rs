//! One process's share of a load run from many (`run --shard K/N`): the
//! whole load is described once (`--users`, `--burst`, `--rate` are the
//! totals), and shard K of N takes its part of it —
//! - **buyers**: ⌊users / N⌋, one more for the first `users mod N` shards
//!   (a burst's buyers likewise; each shard's gate opens on its own);
//! - **rate**: `rate / N` grabs per second, each shard on its own schedule;
//! - **user ids**: its s-th fresh buyer is `(s − 1)·N + K`, so no two shards
//!   ever use one id (a repeat buyer is one the same shard had before);
//! - **replicas**: its buyers start on the replica K − 1 places further round
//!   the list, so N small shards do not all pile onto the first one.
//!
//! `1/1` is the whole load, one process: every mapping is the identity.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::workload::{Shape, Workload};

/// Shard `index` of `of` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub of: u32,
}

impl Shard {
    /// The whole load in one process.
    pub const WHOLE: Shard = Shard { index: 1, of: 1 };

    /// This shard's part of `total` buyers.
    pub fn share(&self, total: usize) -> usize {
        let (of, index) = (self.of as usize, self.index as usize);
        total / of + usize::from(index <= total % of)
    }

    /// The global id of this shard's `local`-th buyer (from 1).
    pub fn user_id(&self, local: u64) -> u64 {
        (local - 1) * u64::from(self.of) + u64::from(self.index)
    }

    /// How far round the replica list this shard's first buyer starts.
    pub fn replica_offset(&self) -> usize {
        self.index as usize - 1
    }

    /// This shard's part of `whole`: its buyers, its rate, the ramp-up
    /// scaled with them; stock, products and everything else unchanged.
    pub fn workload(&self, whole: &Workload) -> Workload {
        let users = self.share(whole.users);
        let part = users as f64 / whole.users as f64;
        let shape = match whole.shape {
            Shape::Rate { per_sec } => Shape::Rate {
                per_sec: per_sec / f64::from(self.of),
            },
            other => other,
        };
        Workload {
            shape,
            users,
            increase_rate: (whole.increase_rate * part).max(1.0),
            ..whole.clone()
        }
    }

    /// `shard-K-of-N`, the name of its files.
    pub fn file_stem(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.of)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a shard like 1/4 (K of N, 1 ≤ K ≤ N)");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let of: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > of {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::time::Duration;

    fn whole(shape: Shape, users: usize) -> Workload {
        Workload {
            shape,
            users,
            increase_rate: users as f64 * 20.0,
            run_time: None,
            max_run_time: Duration::from_secs(60),
            stock: 100,
            products: 1,
            hot_ratio: 0.8,
            repeat_ratio: 0.0,
            quantity_min: 1,
            quantity_max: 1,
            retry: true,
            retry_ms: 5,
            give_up_after: Duration::from_secs(30),
        }
    }

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, of: 3 }));
        assert_eq!(Shard { index: 2, of: 3 }.to_string(), "2/3");
        for bad in ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shares_add_up_to_the_whole_and_ids_never_collide() {
        for of in 1..=5u32 {
            let shards: Vec<Shard> = (1..=of).map(|index| Shard { index, of }).collect();
            for total in [1usize, 7, 50, 101] {
                let sum: usize = shards.iter().map(|s| s.share(total)).sum();
                assert_eq!(sum, total, "{total} buyers over {of}");
            }
            let mut ids = HashSet::new();
            for shard in &shards {
                for local in 1..=100 {
                    assert!(ids.insert(shard.user_id(local)), "{shard} reuses an id");
                }
            }
            // Together they hand out exactly 1 ..= 100·N, as one process would.
            assert_eq!(ids.len(), 100 * of as usize);
            assert_eq!(ids.iter().max(), Some(&(100 * u64::from(of))));
        }
        assert_eq!(Shard::WHOLE.user_id(7), 7);
    }

    #[test]
    fn a_shard_takes_its_part_of_the_buyers_and_the_rate() {
        let rate = whole(Shape::Rate { per_sec: 300.0 }, 51);
        let first = Shard { index: 1, of: 2 }.workload(&rate);
        let second = Shard { index: 2, of: 2 }.workload(&rate);
        assert_eq!((first.users, second.users), (26, 25));
        assert_eq!(first.shape, Shape::Rate { per_sec: 150.0 });
        assert_eq!(first.stock, 100);
        let burst = whole(Shape::Burst, 10);
        assert_eq!(Shard { index: 3, of: 4 }.workload(&burst).users, 2);
        assert_eq!(Shard::WHOLE.workload(&burst).users, 10);
    }
}
