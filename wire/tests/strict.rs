//! Decoding is strict: a field the service always sends must be there (a
//! renamed or missing field is an error, never a 0), `null` is read where
//! the service sends it, and what the service leaves out may be absent.

use serde_json::{json, Value};

use seckill_wire::audit::{AuditBody, AuditRow};
use seckill_wire::error::ErrorBody;
use seckill_wire::faults::Faults;
use seckill_wire::grab::Order;
use seckill_wire::history::HistoryReport;
use seckill_wire::strategies::{Kind, Safety, StrategiesBody, StrategyEntry};

fn without(mut body: Value, field: &str) -> Value {
    body.as_object_mut().expect("object").remove(field);
    body
}

fn order() -> Value {
    json!({
        "order_id": 7, "product_id": 1, "user_id": 42, "quantity": 1,
        "strategy": "fenced", "fence_token": null
    })
}

#[test]
fn an_order_without_a_required_field_does_not_decode() {
    let decoded: Order = serde_json::from_value(order()).expect("the full body decodes");
    assert_eq!(decoded.fence_token, None);
    assert_eq!(decoded.strategy, "fenced");
    for field in ["order_id", "quantity", "strategy", "fence_token"] {
        let error = serde_json::from_value::<Order>(without(order(), field))
            .expect_err("a missing field is an error");
        assert!(error.to_string().contains(field), "{field}: {error}");
    }
}

#[test]
fn an_audit_row_missing_a_count_is_an_error_not_a_zero() {
    let row = json!({
        "product_id": 1, "initial_stock": 100, "stock": 90, "orders": 10,
        "ordered_units": 10, "oversold": 0, "lost_updates": 0, "undersold": 0,
        "duplicates": 0, "negative_stock": false
    });
    let decoded: AuditRow = serde_json::from_value(row.clone()).expect("decodes");
    assert_eq!(decoded.stock, 90);
    let error = serde_json::from_value::<AuditRow>(without(row.clone(), "lost_updates"))
        .expect_err("missing lost_updates");
    assert!(error.to_string().contains("lost_updates"), "{error}");
    let body = json!({
        "strategy": "none", "synchronous_commit": "on", "counted_by": "tally",
        "products": [row]
    });
    let audit: AuditBody = serde_json::from_value(body).expect("the audit decodes");
    assert_eq!(audit.product(1), Some(&decoded));
}

#[test]
fn a_strategy_entry_needs_its_kind_but_not_an_unavailable_reason() {
    let entry = json!({
        "name": "redlock", "guarantee": "…", "available": true, "seed": "…",
        "safety": "safe-within-ttl", "kind": "validity"
    });
    let decoded: StrategyEntry = serde_json::from_value(entry.clone()).expect("decodes");
    assert_eq!(decoded.kind, Kind::Validity);
    assert_eq!(decoded.safety, Safety::SafeWithinTtl);
    assert_eq!(decoded.unavailable_reason, None);
    // And the service sends no `unavailable_reason` for it either.
    assert_eq!(serde_json::to_value(&decoded).expect("encodes"), entry);
    assert!(serde_json::from_value::<StrategyEntry>(without(entry.clone(), "kind")).is_err());
    let mut unknown = entry;
    unknown["kind"] = json!("quorum");
    assert!(
        serde_json::from_value::<StrategyEntry>(unknown).is_err(),
        "a kind this build does not know is an error too"
    );
}

#[test]
fn a_history_report_must_say_its_run_even_when_null() {
    let report = json!({
        "enabled": false, "run": null, "instance": "r1", "errors": 0, "stale": 0,
        "strategies": [], "inside": [], "first_overlaps": []
    });
    let decoded: HistoryReport = serde_json::from_value(report.clone()).expect("decodes");
    assert_eq!(decoded.run, None);
    assert_eq!(decoded.of("none").overlaps, 0);
    assert!(serde_json::from_value::<HistoryReport>(without(report.clone(), "run")).is_err());
    assert!(serde_json::from_value::<HistoryReport>(without(report, "first_overlaps")).is_err());
}

#[test]
fn the_faults_and_the_error_body_round_trip() {
    let faults = Faults::with_work_delay(5);
    let text = serde_json::to_value(faults).expect("encodes");
    assert_eq!(text["pause_at"], "before-read");
    assert_eq!(
        serde_json::from_value::<Faults>(text.clone()).ok(),
        Some(faults)
    );
    assert!(serde_json::from_value::<Faults>(without(text, "check_revision")).is_err());
    let error: ErrorBody =
        serde_json::from_value(json!({"error": "busy", "message": "retry"})).expect("decodes");
    assert_eq!(error.error, "busy");
    assert!(serde_json::from_value::<StrategiesBody>(json!({"active": "none"})).is_err());
}

#[test]
fn a_section_and_an_orders_page_must_send_their_nulls() {
    use seckill_wire::history::{Section, SectionsBody};
    use seckill_wire::orders::OrdersPage;

    let section = json!({
        "instance": "r1", "member": "r1:7", "strategy": "none", "product": 1,
        "entered_us": 1_795_614_330_725_800_i64, "exited_us": null, "overlap": true
    });
    let decoded: Section = serde_json::from_value(section.clone()).expect("decodes");
    assert_eq!(decoded.exited_us, None);
    assert_eq!(serde_json::to_value(&decoded).expect("encodes"), section);
    for field in ["exited_us", "overlap", "instance"] {
        assert!(
            serde_json::from_value::<Section>(without(section.clone(), field)).is_err(),
            "{field}"
        );
    }
    let body = json!({ "run": null, "sections": [section], "dropped": 0 });
    let decoded: SectionsBody = serde_json::from_value(body.clone()).expect("decodes");
    assert_eq!((decoded.run, decoded.sections.len()), (None, 1));
    assert!(serde_json::from_value::<SectionsBody>(without(body, "run")).is_err());

    let page = json!({
        "orders": [{"order_id": 3, "user_id": 9, "quantity": 2,
                    "created_at": "2026-11-25T16:32:04.000001Z"}],
        "next_after": null
    });
    let decoded: OrdersPage = serde_json::from_value(page.clone()).expect("decodes");
    assert_eq!((decoded.orders[0].order_id, decoded.next_after), (3, None));
    assert!(serde_json::from_value::<OrdersPage>(without(page, "next_after")).is_err());
}
