//! The curve of a sweep, drawn with plotters as SVG text: each outcome's
//! k / n at every point, its Wilson 95 % interval as an error bar, and the
//! decision line a prediction is judged against.

use plotters::prelude::*;

use super::case::Sweep;
use super::rate::{Rate, DECISION_RATE};

/// The SVG of `sweep` (empty when it has no measured point).
pub fn svg(sweep: &Sweep) -> String {
    let points: Vec<(f64, &super::case::SweepPoint)> = sweep
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (p.resolved.unwrap_or(i as f64), p))
        .collect();
    if points.iter().all(|(_, p)| p.exclusion_broken.is_none()) {
        return String::new();
    }
    let mut out = String::new();
    if draw(&mut out, sweep, &points).is_err() {
        return String::new();
    }
    out
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// One outcome's series: its name, its colour, its rate at a point.
type Series = (
    &'static str,
    RGBColor,
    fn(&super::case::SweepPoint) -> Option<Rate>,
);

fn draw(out: &mut String, sweep: &Sweep, points: &[(f64, &super::case::SweepPoint)]) -> Drawn {
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (x, _)| {
            (lo.min(*x), hi.max(*x))
        });
    let pad = ((hi - lo) * 0.08).max(1.0);
    let root = SVGBackend::with_string(out, (640, 300)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..1f64)?;
    let unit = if points.iter().any(|(_, p)| p.resolved.is_some()) {
        format!("{} (ms or as given)", sweep.key)
    } else {
        sweep.key.clone()
    };
    chart
        .configure_mesh()
        .x_desc(unit)
        .y_desc("share of injections")
        .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(lo - pad, DECISION_RATE), (hi + pad, DECISION_RATE)],
            RGBColor(150, 150, 150).stroke_width(1),
        ))?
        .label(format!("decision line ({:.0} %)", DECISION_RATE * 100.0))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RGBColor(150, 150, 150)));
    let series: [Series; 2] = [
        ("exclusion broken", RGBColor(198, 40, 40), |p| {
            p.exclusion_broken
        }),
        ("data damaged", RGBColor(245, 124, 0), |p| p.data_damaged),
    ];
    for (i, (name, colour, rate)) in series.into_iter().enumerate() {
        // The two outcomes side by side at each point, so their bars
        // never hide each other.
        let shift = (if i == 0 { -1.0 } else { 1.0 }) * pad * 0.15;
        let measured: Vec<(f64, Rate)> = points
            .iter()
            .filter_map(|(x, p)| rate(p).map(|r| (*x + shift, r)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                measured.iter().map(|(x, r)| (*x, r.share())),
                colour.stroke_width(2),
            ))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
        chart.draw_series(measured.iter().map(|(x, r)| {
            ErrorBar::new_vertical(*x, r.ci95[0], r.share(), r.ci95[1], colour.filled(), 8)
        }))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .draw()?;
    root.present()?;
    Ok(())
}
