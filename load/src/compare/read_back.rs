//! What a run left, read back after its attack and settled: the audit, the
//! acknowledged-order check against the ledger, the history and its sections,
//! and whatever could not be read (the gaps that make a run inconclusive).

use std::collections::BTreeMap;

use super::settings::Settings;
use crate::api::{
    AuditBody, AuditRow, HistoryReport, OrderRow, Section, SectionsBody, Service, ServiceError,
};
use crate::load::{Accounting, Ledger, Live, Workload};

/// What a run left, read back after the attack; `gaps` names whatever
/// could not be read (the run is then inconclusive).
pub(super) struct ReadBack {
    pub(super) rows: Vec<AuditRow>,
    pub(super) accounting: Option<Accounting>,
    pub(super) history: Option<HistoryReport>,
    pub(super) sections: Vec<Section>,
    pub(super) gaps: Vec<String>,
}

/// What the service answered after the attack, each read on its own:
/// one that failed does not stop the others.
pub(super) struct Reads {
    audit: Result<AuditBody, ServiceError>,
    orders: Result<BTreeMap<u64, Vec<OrderRow>>, ServiceError>,
    /// `None`: the run recorded no history.
    history: Option<Result<HistoryReport, ServiceError>>,
    /// `None`: the run recorded no history.
    sections: Option<Result<SectionsBody, ServiceError>>,
}

/// The audit of the run's products, its orders, the history and its
/// critical sections, read back.
pub(super) async fn read_back(
    service: &Service,
    settings: &Settings,
    live: &Live,
    workload: &Workload,
) -> Reads {
    Reads {
        audit: service.audit().await,
        orders: orders_of(service, live, workload.products).await,
        history: match settings.history {
            true => Some(service.history_all().await),
            false => None,
        },
        sections: match settings.history {
            true => Some(service.sections().await),
            false => None,
        },
    }
}

/// The reads settled into the run's figures: the audit rows of products
/// 1 ..= `products`, the acknowledged-order check against `ledger`, the
/// history and its sections. What makes the run impossible to judge — an
/// audit, orders, history or sections that could not be read, a history
/// with gaps — goes into `gaps`, never into a value (no rows is not "no
/// breach", no sections is not "no overlap").
pub(super) fn settle(reads: Reads, ledger: &Ledger, products: u64) -> ReadBack {
    let mut gaps = Vec::new();
    let rows: Option<Vec<AuditRow>> = match reads.audit {
        Ok(audit) => Some(
            audit
                .products
                .into_iter()
                .filter(|r| r.product_id >= 1 && (r.product_id as u64) <= products)
                .collect(),
        ),
        Err(e) => {
            gaps.push(format!("the audit could not be read ({e})"));
            None
        }
    };
    let accounting = match (reads.orders, &rows) {
        (Ok(orders), Some(rows)) => Some(ledger.account(&orders, rows)),
        (Ok(_), None) => None,
        (Err(e), _) => {
            gaps.push(format!("the orders could not be read ({e})"));
            None
        }
    };
    let history = match reads.history {
        None => None,
        Some(Ok(h)) => {
            if h.errors > 0 {
                gaps.push(format!(
                    "{} arbiter calls failed during the run: the history is incomplete",
                    h.errors
                ));
            }
            Some(h)
        }
        Some(Err(e)) => {
            gaps.push(format!("the history could not be read ({e})"));
            None
        }
    };
    let sections = match reads.sections {
        None => Vec::new(),
        Some(Ok(body)) => body.sections,
        Some(Err(e)) => {
            gaps.push(format!("the critical sections could not be read ({e})"));
            Vec::new()
        }
    };
    ReadBack {
        rows: rows.unwrap_or_default(),
        accounting,
        history,
        sections,
        gaps,
    }
}

/// Every order of the products the run touched (product 1 ..= `products`,
/// and any the ledger names), for the acknowledgement check.
async fn orders_of(
    service: &Service,
    live: &Live,
    products: u64,
) -> Result<BTreeMap<u64, Vec<OrderRow>>, crate::api::ServiceError> {
    let mut ids: Vec<u64> = (1..=products).collect();
    ids.extend(live.ledger.products());
    ids.sort_unstable();
    ids.dedup();
    let mut orders = BTreeMap::new();
    for id in ids {
        orders.insert(id, service.orders(id).await?);
    }
    Ok(orders)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::RunVerdict;

    fn down() -> ServiceError {
        ServiceError::Unreachable {
            url: "http://127.0.0.1:1".into(),
            reason: "connection refused".into(),
        }
    }

    fn audit() -> AuditBody {
        AuditBody {
            strategy: crate::api::StrategyName::SetNxPxToken,
            synchronous_commit: "on".into(),
            counted_by: "recount".into(),
            products: Vec::new(),
        }
    }

    fn history() -> HistoryReport {
        HistoryReport {
            enabled: true,
            run: Some("r".into()),
            instance: "app-1".into(),
            errors: 0,
            stale: 0,
            strategies: Vec::new(),
            inside: Vec::new(),
            first_overlaps: Vec::new(),
        }
    }

    fn sections() -> SectionsBody {
        SectionsBody {
            run: Some("r".into()),
            sections: Vec::new(),
            dropped: 0,
        }
    }

    /// Every read answered: nothing missing.
    fn answered() -> Reads {
        Reads {
            audit: Ok(audit()),
            orders: Ok(BTreeMap::new()),
            history: Some(Ok(history())),
            sections: Some(Ok(sections())),
        }
    }

    /// The verdict of a strategy classed safe with no breach, given what
    /// was read back.
    fn verdict_of(reads: Reads) -> (RunVerdict, Vec<String>) {
        let after = settle(reads, &Ledger::default(), 1);
        let verdict = RunVerdict::of(true, &[], after.gaps.is_empty());
        (verdict, after.gaps)
    }

    #[test]
    fn a_run_whose_reads_all_answered_is_judged() {
        assert_eq!(verdict_of(answered()), (RunVerdict::Safe, Vec::new()));
        let no_history = Reads {
            history: None,
            sections: None,
            ..answered()
        };
        assert_eq!(verdict_of(no_history), (RunVerdict::Safe, Vec::new()));
    }

    #[test]
    fn an_audit_that_cannot_be_read_makes_the_run_inconclusive_not_breach_free() {
        let (verdict, gaps) = verdict_of(Reads {
            audit: Err(down()),
            ..answered()
        });
        assert_eq!(verdict, RunVerdict::Inconclusive);
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert!(
            gaps[0].starts_with("the audit could not be read (cannot reach"),
            "{gaps:?}"
        );
    }

    #[test]
    fn sections_that_cannot_be_read_make_the_run_inconclusive_not_overlap_free() {
        let (verdict, gaps) = verdict_of(Reads {
            sections: Some(Err(down())),
            ..answered()
        });
        assert_eq!(verdict, RunVerdict::Inconclusive);
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert!(
            gaps[0].starts_with("the critical sections could not be read"),
            "{gaps:?}"
        );
    }

    #[test]
    fn orders_or_history_that_cannot_be_read_make_the_run_inconclusive() {
        let (verdict, gaps) = verdict_of(Reads {
            orders: Err(down()),
            ..answered()
        });
        assert_eq!(verdict, RunVerdict::Inconclusive);
        assert!(
            gaps[0].starts_with("the orders could not be read"),
            "{gaps:?}"
        );
        let (verdict, gaps) = verdict_of(Reads {
            history: Some(Err(down())),
            ..answered()
        });
        assert_eq!(verdict, RunVerdict::Inconclusive);
        assert!(
            gaps[0].starts_with("the history could not be read"),
            "{gaps:?}"
        );
        let (verdict, gaps) = verdict_of(Reads {
            history: Some(Ok(HistoryReport {
                errors: 3,
                ..history()
            })),
            ..answered()
        });
        assert_eq!(verdict, RunVerdict::Inconclusive);
        assert_eq!(
            gaps,
            ["3 arbiter calls failed during the run: the history is incomplete"]
        );
    }
}
