//! lock-bench's printed tables, every column width in one place: the
//! figures table (a figure, ours, its floor, unit, ratio, goal, verdict)
//! and the consensus table of costs without a goal.

/// What a row's ratio must meet; `Info` rows print no verdict.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    /// A comparator: printed with goal `-` and no verdict.
    Info,
    /// The ratio must be at most this.
    AtMost(f64),
}

/// One line of the figures table, every column already formatted; an
/// info row passes an empty verdict. Trailing blanks are trimmed.
pub fn line(
    what: &str,
    ours: &str,
    floor: &str,
    unit: &str,
    ratio: &str,
    goal: &str,
    verdict: &str,
) {
    let text =
        format!("{what:<46} {ours:>10} {floor:>10} {unit:<6} {ratio:>6}  {goal:<10} {verdict}");
    println!("{}", text.trim_end());
}

/// The figures table's header.
pub fn header() {
    line("figure", "ours", "floor", "unit", "ratio", "goal", "");
}

/// A goal row: ours, its floor (one decimal), their ratio and the verdict.
pub fn row(what: &str, ours: f64, floor: f64, unit: &str, goal: &str, pass: bool) {
    let (ours, floor, ratio) = (format!("{ours:.1}"), format!("{floor:.1}"), ours / floor);
    line(
        what,
        &ours,
        &floor,
        unit,
        &format!("{ratio:.2}"),
        goal,
        verdict(pass),
    );
}

/// A row whose ratio is its own figure (a median of per-round ratios, or
/// a ratio of ratios) rather than ours / floor: what it is, ours, its
/// floor, `decimals` for both, unit, ratio and goal.
pub type RatioRow<'a> = (&'a str, f64, f64, usize, &'a str, f64, Goal);

/// Prints [`RatioRow`]s in order.
pub fn ratio_rows(rows: &[RatioRow<'_>]) {
    for &(what, ours, floor, decimals, unit, ratio, goal) in rows {
        let (goal, pass) = match goal {
            Goal::Info => ("-".to_owned(), ""),
            Goal::AtMost(bound) => (format!("<= {bound:.2}"), verdict(ratio <= bound)),
        };
        line(
            what,
            &format!("{ours:.decimals$}"),
            &format!("{floor:.decimals$}"),
            unit,
            &format!("{ratio:.2}"),
            &goal,
            pass,
        );
    }
}

/// `ok` or `MISSED`.
pub fn verdict(pass: bool) -> &'static str {
    if pass {
        "ok"
    } else {
        "MISSED"
    }
}

/// The header of the consensus table (no goal column).
pub fn cost_header() {
    println!(
        "{:<46} {:>10} {:>10} {:<6} {:>6}",
        "lock", "ours", "floor", "unit", "ratio"
    );
}

/// A figure with no goal: what it costs, beside the floor.
pub fn cost_row(what: &str, ours: f64, floor: f64, unit: &str) {
    println!(
        "{what:<46} {ours:>10.1} {floor:>10.1} {unit:<6} {:>6.2}",
        ours / floor
    );
}
