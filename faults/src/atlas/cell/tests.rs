//! The cells' verdicts, their texts, and their JSON read back.

use super::*;
use crate::scenario::Rate;

fn probe(value: f64, exclusion: (u64, u64), data: (u64, u64)) -> Probe {
    Probe {
        value: format!("{value}"),
        resolved: value,
        exclusion_broken: Some(Rate::of(exclusion.0, exclusion.1)),
        data_damaged: Some(Rate::of(data.0, data.1)),
        stalled: None,
        refused: None,
    }
}

#[test]
fn each_outcome_is_a_bracket_a_hold_a_break_or_undecided_and_round_trips() {
    let probes = [
        probe(100.0, (0, 10), (0, 10)),
        probe(1200.0, (10, 10), (0, 10)),
        probe(650.0, (1, 10), (0, 10)),
        probe(375.0, (0, 10), (0, 10)),
    ];
    let exclusion = Cell::of(&probes, Outcome::ExclusionBroken, 0.0);
    let Cell::Bracket {
        bracket,
        probes: points,
    } = &exclusion
    else {
        panic!("{exclusion:?}")
    };
    // First seen at 650 (1 of 10), in half or more at 1200: the
    // bracket ends where a rerun keeps both sides.
    assert_eq!(
        (bracket.below.as_str(), bracket.above.as_str()),
        ("375", "1200")
    );
    assert_eq!(
        bracket.onset,
        Some(Onset {
            value: "650".into(),
            resolved: 650.0,
            k: 1,
            n: 10
        })
    );
    assert!(!bracket.seen_below && bracket.firm);
    assert_eq!(points.len(), 4);
    assert_eq!(exclusion.breaks_at(), Some(650.0));
    let data = Cell::of(&probes, Outcome::DataDamaged, 0.0);
    assert_eq!(
        data,
        Cell::Holds {
            holds_up_to: "1200".into(),
            k: 0,
            n: 10,
            upper95: 0.278,
            probes: data.probes().to_vec(),
        }
    );
    assert_eq!(
        data.text(" ms"),
        "holds up to 1200 ms (0 of 10 there: rate < 28 % at 95 %)"
    );
    assert_eq!(
        exclusion.text(" ms"),
        "starts between 375 ms and 1200 ms (seen from 650 ms in 1 of 10, in half or more at 1200 ms)"
    );
    // Where it stops, the firm end is below; where no size on the seen
    // side reaches half, the bracket says so.
    let stops = [
        probe(100.0, (9, 10), (1, 10)),
        probe(200.0, (2, 10), (1, 10)),
        probe(300.0, (0, 10), (0, 10)),
    ];
    let Cell::Bracket { bracket: b, .. } = Cell::of(&stops, Outcome::ExclusionBroken, 0.0) else {
        panic!("a bracket")
    };
    assert_eq!((b.below.as_str(), b.above.as_str()), ("100", "300"));
    assert_eq!(b.onset.map(|o| o.value), Some("200".into()));
    assert!(b.seen_below && b.firm);
    let weak = Cell::of(&stops, Outcome::DataDamaged, 0.0);
    let Cell::Bracket { bracket: b, .. } = &weak else {
        panic!("a bracket")
    };
    assert_eq!(
        (b.below.as_str(), b.above.as_str(), b.firm),
        ("200", "300", false)
    );
    assert_eq!(
        weak.text(" ms"),
        "stops between 200 ms and 300 ms (seen there in under half the injections)"
    );
    // With a margin, the clean end is the nearest clean size that far
    // from the onset: 319, not 350, when it is first seen at 370.
    let band = [
        probe(288.0, (0, 10), (0, 10)),
        probe(319.0, (0, 10), (0, 10)),
        probe(350.0, (0, 10), (0, 10)),
        probe(370.0, (10, 10), (0, 10)),
    ];
    let Cell::Bracket { bracket: b, .. } = Cell::of(&band, Outcome::ExclusionBroken, 40.0) else {
        panic!("a bracket")
    };
    assert_eq!((b.below.as_str(), b.above.as_str()), ("319", "370"));
    // No clean probe that far: the nearest stays.
    let Cell::Bracket { bracket: b, .. } = Cell::of(&band[2..], Outcome::ExclusionBroken, 40.0)
    else {
        panic!("a bracket")
    };
    assert_eq!((b.below.as_str(), b.above.as_str()), ("350", "370"));
    // A file written before the onset was kept reads as firm.
    let old: Ends = serde_json::from_str(
        r#"{"below":"1","above":"2","below_resolved":1.0,"above_resolved":2.0,"seen_below":false}"#,
    )
    .expect("an earlier bracket");
    assert!(old.firm && old.onset.is_none());
    let all = [
        probe(100.0, (1, 10), (0, 0)),
        probe(1200.0, (9, 10), (0, 0)),
    ];
    assert!(matches!(
        Cell::of(&all, Outcome::ExclusionBroken, 0.0),
        Cell::Breaks { ref breaks_from, k: 1, n: 10, .. } if breaks_from == "100"
    ));
    assert!(matches!(
        Cell::of(&all, Outcome::DataDamaged, 0.0),
        Cell::Undecided { .. }
    ));
    for cell in [
        exclusion,
        data,
        Cell::NotApplicable {
            not_applicable: "no TTL".into(),
        },
    ] {
        let text = serde_json::to_string(&cell).expect("json");
        let back: Cell = serde_json::from_str(&text).expect("read back");
        assert_eq!(back, cell, "{text}");
    }
}
