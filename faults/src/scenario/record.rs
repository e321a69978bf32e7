//! What a case records, with no behaviour of its own: what was observed
//! ([`Observed`]), each injection of the fault ([`Injection`], its
//! [`Window`]) and the rates they add up to ([`Outcomes`]). The modules
//! that run a case ([`super::world`], [`super::inject`],
//! [`super::observe`]) and the one that judges it ([`super::case`]) all
//! read these; none of them is read back here.

use serde::{Deserialize, Serialize};

use super::rate::Rate;
use seckill_load::api::Damage;
use seckill_load::judge::{Evidence, Guarantee};
use seckill_load::load::Accounting;

/// What was observed in one case.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Observed {
    /// Critical sections that began while another was inside (arbiter).
    pub overlaps: u64,
    /// Most sections inside at once.
    pub max_holders: u64,
    /// Audit: oversold units, lost updates, undersold units, duplicates.
    #[serde(flatten)]
    pub damage: Damage,
    /// Audit: the stock column went below zero.
    pub negative_stock: bool,
    /// `409 rejected` answers (lost lease, validity, stale fence).
    pub rejected: u64,
    /// `429 busy` answers.
    pub busy: u64,
    /// Orders in the database.
    pub orders: i64,
    /// `503` answers.
    pub unavailable: u64,
    /// Other failed requests (refused connections to a killed replica, …).
    pub errors: u64,
    /// Sections the arbiter recorded.
    pub entries: u64,
    /// Arbiter calls of this case's run that failed, over every replica
    /// (any makes the history incomplete, and the case `inconclusive`).
    pub history_errors: u64,
    /// Sections a failed exit left inside, dropped after the stale bound.
    pub stale: u64,
    /// The acknowledgement check (`acknowledged`, `acknowledged_missing`,
    /// `unacknowledged_present`, `indeterminate`, `bounds`); `None` when the
    /// orders could not be read.
    #[serde(flatten)]
    pub accounting: Option<Accounting>,
    /// Failed lock attempts (`seckill_lock_retries_total`).
    pub lock_retries: u64,
    /// Mean wait for the lock, ms.
    pub mean_wait_ms: f64,
    /// Whether the run showed contention at all.
    pub contended: bool,
    /// `crash-holder`: ms from the kill to the next order, if any came.
    pub recovered_after_ms: Option<u64>,
}

impl Observed {
    /// The audit's and the arbiter's figures, as the one judge reads them.
    pub fn evidence(&self) -> Evidence {
        Evidence {
            damage: self.damage,
            negative_stock: self.negative_stock,
            overlaps: Some(self.overlaps),
            max_holders: Some(self.max_holders),
            accounting: self.accounting,
        }
    }
}

/// One injection, as `scenarios.json` writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Injection {
    /// What was faulted (`replica a`, `node 3`, `a's links`).
    pub target: String,
    /// The instance whose sections are the faulted holder's (`a`): an
    /// overlap counts as broken exclusion only when it involves them
    /// (absent where the fault touches no one holder, as a node's crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// When the fault began, ms on the case's clock (its steps' clock).
    pub start_ms: u64,
    /// When it was undone.
    pub end_ms: u64,
    /// When the fault began, Unix epoch ms (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ms: Option<u64>,
    /// When it was undone, Unix epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_unix_ms: Option<u64>,
    /// How it was seen to land (`null`: not proven, not counted).
    pub proof: Option<String>,
    /// An overlap involved the faulted holder.
    pub exclusion_broken: bool,
    /// A committed stale write (what, in `damage`).
    pub data_damaged: bool,
    /// The breaches of the data, in words (empty: exact).
    pub damage: String,
    /// Overlaps of the round (all of them, the target's or not).
    pub overlaps: u64,
    /// Orders the round wrote.
    pub orders: i64,
    /// A crash scenario's liveness: nobody bought again within the watch
    /// after the holder died (absent where the scenario does not kill a
    /// holder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<bool>,
    /// A fenced run's: the database's fence refused a newer holder (its
    /// token not above the one an older holder registered: the token did
    /// not grow). Absent where no token is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<bool>,
    /// What an injection that broke exclusion or damaged the data left
    /// behind, read as its round ended: a counterexample to any claim that
    /// this never happens (absent where the injection broke nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

/// The evidence of one violation: the overlapping critical sections the
/// arbiter recorded in the injection's round, the round's first overlaps
/// (who entered while whom was inside), and the writes — the audit of the
/// product and the orders the round wrote.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trace {
    /// The round's sections that overlapped another (at most
    /// [`Trace::KEPT`]), entry and exit in microseconds since the epoch.
    pub sections: Vec<seckill_load::api::Section>,
    /// Overlapping sections beyond those kept.
    pub sections_left_out: usize,
    /// The arbiter's first overlaps of the round.
    pub first_overlaps: Vec<seckill_load::api::OverlapEvent>,
    /// The product's audit row as the round ended (`None`: unreadable).
    pub audit: Option<seckill_load::api::AuditRow>,
    /// The orders the round wrote (at most [`Trace::KEPT`]; `None`:
    /// unreadable).
    pub orders: Option<Vec<seckill_load::api::OrderRow>>,
}

impl Trace {
    /// How many sections and orders a trace keeps.
    pub const KEPT: usize = 40;
}

/// The window of one injection, as the scenario saw it.
#[derive(Debug, Clone)]
pub struct Window {
    /// What was faulted.
    pub target: String,
    /// The instance id whose sections are the faulted holder's (`a`).
    pub holder: Option<String>,
    /// Start, ms on the case's clock.
    pub start_ms: u64,
    /// End, ms on the case's clock.
    pub end_ms: u64,
    /// The proof it landed, or `None`.
    pub proof: Option<String>,
    /// A crash scenario's liveness: whether the watch after the crash saw
    /// no order (`None`: not a crash scenario).
    pub stalled: Option<bool>,
    /// A fenced run's: whether the fence refused a newer holder (`None`:
    /// no token checked).
    pub refused: Option<bool>,
}

/// `outcomes` of a case: k of n injections for each.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outcomes {
    /// An overlap involving the faulted holder.
    pub exclusion_broken: Rate,
    /// A committed stale write.
    pub data_damaged: Rate,
    /// A crash scenario's third outcome: nobody bought again within the
    /// watch after the holder (or coordinator) died.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Rate>,
    /// A fenced run's: the database refused a newer holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Rate>,
}

impl Outcomes {
    /// Counted over the injections that landed.
    pub fn of(injections: &[Injection]) -> Self {
        let landed: Vec<&Injection> = injections.iter().filter(|i| i.proof.is_some()).collect();
        let n = landed.len() as u64;
        let count = |f: fn(&Injection) -> bool| landed.iter().filter(|i| f(i)).count() as u64;
        let watched = landed.iter().any(|i| i.stalled.is_some());
        let fenced = landed.iter().any(|i| i.refused.is_some());
        Self {
            exclusion_broken: Rate::of(count(|i| i.exclusion_broken), n),
            data_damaged: Rate::of(count(|i| i.data_damaged), n),
            stalled: watched.then(|| Rate::of(count(|i| i.stalled == Some(true)), n)),
            refused: fenced.then(|| Rate::of(count(|i| i.refused == Some(true)), n)),
        }
    }

    /// The outcome a case is judged on, and its rate: liveness where the
    /// scenario kills a lock's holder and watches (`stalled`), the fence's
    /// refusals of a newer holder where a run checks a token that may go
    /// backwards (`refused`), else exclusion for a lock that promises it,
    /// the data for a fence or a non-lock.
    pub fn judged(&self, guarantee: Guarantee) -> (Outcome, Rate) {
        match (self.stalled, self.refused, guarantee) {
            // A commit protocol (2PC, 3PC) promises its data: its stall
            // is measured beside it, not judged.
            (Some(_), _, Guarantee::Data) => (Outcome::DataDamaged, self.data_damaged),
            (Some(stalled), _, _) => (Outcome::Stalled, stalled),
            (None, Some(refused), _) => (Outcome::Refused, refused),
            (None, None, Guarantee::Exclusion) => (Outcome::ExclusionBroken, self.exclusion_broken),
            (None, None, Guarantee::Data) => (Outcome::DataDamaged, self.data_damaged),
        }
    }
}

/// One of the outcomes an injection is judged for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An overlap involving the faulted holder.
    ExclusionBroken,
    /// A committed stale write.
    DataDamaged,
    /// Nobody bought again within the watch after a crash.
    Stalled,
    /// The database's fence refused a newer holder (its token did not grow).
    Refused,
}

impl Outcome {
    /// Its name in the verdict line.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::ExclusionBroken => "exclusion broken",
            Outcome::DataDamaged => "data damaged",
            Outcome::Stalled => "stalled",
            Outcome::Refused => "newer holder refused",
        }
    }

    /// Its rate in `outcomes` (`None`: a stall where none was watched).
    pub fn of(self, outcomes: &Outcomes) -> Option<Rate> {
        match self {
            Outcome::ExclusionBroken => Some(outcomes.exclusion_broken),
            Outcome::DataDamaged => Some(outcomes.data_damaged),
            Outcome::Stalled => outcomes.stalled,
            Outcome::Refused => outcomes.refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injection(landed: bool, broken: bool, stalled: Option<bool>) -> Injection {
        Injection {
            target: "replica a".into(),
            holder: Some("a".into()),
            start_ms: 0,
            end_ms: 1,
            start_unix_ms: None,
            end_unix_ms: None,
            proof: landed.then(|| "seen".to_owned()),
            exclusion_broken: broken,
            data_damaged: false,
            damage: String::new(),
            overlaps: u64::from(broken),
            orders: 1,
            stalled,
            refused: None,
            trace: None,
        }
    }

    #[test]
    fn a_fenced_run_is_judged_on_its_refusals_and_keeps_both_other_outcomes() {
        let refused = |landed, broken, refused| Injection {
            refused: Some(refused),
            ..injection(landed, broken, None)
        };
        let rounds = [
            refused(true, true, true),
            refused(true, false, false),
            refused(true, true, true),
            // Not landed: left out of k of n.
            refused(false, true, true),
        ];
        let outcomes = Outcomes::of(&rounds);
        assert_eq!(outcomes.refused, Some(Rate::of(2, 3)));
        assert_eq!(outcomes.exclusion_broken, Rate::of(2, 3));
        assert_eq!(outcomes.stalled, None);
        assert_eq!(
            outcomes.judged(Guarantee::Exclusion),
            (Outcome::Refused, Rate::of(2, 3))
        );
        assert_eq!(Outcome::Refused.of(&outcomes), Some(Rate::of(2, 3)));
        // A run that checks no token says nothing of refusals.
        let plain = Outcomes::of(&[injection(true, true, None)]);
        assert_eq!(plain.refused, None);
        assert_eq!(Outcome::Refused.of(&plain), None);
    }

    #[test]
    fn a_crash_scenario_is_judged_on_its_stalls_and_the_rest_on_their_guarantee() {
        let kills = [
            injection(true, false, Some(true)),
            injection(true, false, Some(true)),
            injection(true, true, Some(false)),
            // Not landed: kept in the record, left out of k of n.
            injection(false, false, Some(true)),
        ];
        let outcomes = Outcomes::of(&kills);
        assert_eq!(outcomes.stalled, Some(Rate::of(2, 3)));
        assert_eq!(
            outcomes.judged(Guarantee::Exclusion),
            (Outcome::Stalled, Rate::of(2, 3))
        );
        let pauses = [injection(true, true, None), injection(true, false, None)];
        let outcomes = Outcomes::of(&pauses);
        assert_eq!(outcomes.stalled, None);
        assert_eq!(
            outcomes.judged(Guarantee::Exclusion),
            (Outcome::ExclusionBroken, Rate::of(1, 2))
        );
        assert_eq!(
            outcomes.judged(Guarantee::Data),
            (Outcome::DataDamaged, Rate::of(0, 2))
        );
        // A report without the field (written before it existed) reads as
        // no stall measured.
        let old = r#"{"exclusion_broken":{"k":0,"n":1,"ci95":[0.0,0.79]},"data_damaged":{"k":0,"n":1,"ci95":[0.0,0.79]}}"#;
        let read: Outcomes = serde_json::from_str(old).expect("reads");
        assert_eq!(read.stalled, None);
    }
}
