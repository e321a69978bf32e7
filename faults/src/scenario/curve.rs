//! The curve of a sweep, drawn with plotters as SVG text: each outcome's
//! k / n at every point, its Wilson 95 % interval as an error bar, and the
//! decision line a prediction is judged against.

use plotters::prelude::*;

use super::case::Sweep;
use super::rate::{Rate, DECISION_RATE};

/// A curve to draw: each point's value and both outcomes' rates, the
/// model's predicted flips (vertical lines) and the measured brackets
/// (shaded).
#[derive(Debug, Clone, Default)]
pub struct Curve {
    /// The dial, as the x axis names it.
    pub key: String,
    /// Each point: its value (ms for a duration), exclusion broken, data
    /// damaged.
    pub points: Vec<(f64, Option<Rate>, Option<Rate>)>,
    /// Where the model predicts the outcome flips.
    pub model_flips: Vec<f64>,
    /// The measured brackets, `(below, above)`.
    pub brackets: Vec<(f64, f64)>,
}

/// The SVG of `sweep` (empty when it has no measured point).
pub fn svg(sweep: &Sweep) -> String {
    curve_svg(&Curve::of(sweep))
}

impl Curve {
    /// `sweep`'s points (a point without a size at its index), no flip, no
    /// bracket.
    pub fn of(sweep: &Sweep) -> Self {
        Curve {
            key: sweep.key.clone(),
            points: sweep
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    (
                        p.resolved.unwrap_or(i as f64),
                        p.exclusion_broken,
                        p.data_damaged,
                    )
                })
                .collect(),
            model_flips: Vec::new(),
            brackets: Vec::new(),
        }
    }
}

/// The SVG of `curve` (empty when it has no measured point).
pub fn curve_svg(curve: &Curve) -> String {
    if curve
        .points
        .iter()
        .all(|(_, e, d)| e.is_none() && d.is_none())
    {
        return String::new();
    }
    let mut points = curve.points.clone();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = String::new();
    if draw(&mut out, curve, &points).is_err() {
        return String::new();
    }
    out
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// One point: its value and both outcomes' rates.
type Point = (f64, Option<Rate>, Option<Rate>);

/// One outcome's series: its name, its colour, its rate at a point.
type Series = (&'static str, RGBColor, fn(&Point) -> Option<Rate>);

fn draw(out: &mut String, curve: &Curve, points: &[Point]) -> Drawn {
    let (lo, hi) = points
        .iter()
        .map(|p| p.0)
        .chain(curve.model_flips.iter().copied())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let pad = ((hi - lo) * 0.08).max(1.0);
    let root = SVGBackend::with_string(out, (640, 300)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc(format!("{} (ms for a duration)", curve.key))
        .y_desc("share of injections")
        .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
        .draw()?;
    for (below, above) in &curve.brackets {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(*below, 0.0), (*above, 1.0)],
            RGBColor(120, 144, 156).mix(0.18).filled(),
        )))?;
    }
    for (i, x) in curve.model_flips.iter().enumerate() {
        let line = chart.draw_series(LineSeries::new(
            [(*x, 0.0), (*x, 1.0)],
            RGBColor(21, 101, 192).stroke_width(2),
        ))?;
        if i == 0 {
            line.label("the model's boundary").legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], RGBColor(21, 101, 192))
            });
        }
    }
    chart
        .draw_series(LineSeries::new(
            [(lo - pad, DECISION_RATE), (hi + pad, DECISION_RATE)],
            RGBColor(150, 150, 150).stroke_width(1),
        ))?
        .label(format!("decision line ({:.0} %)", DECISION_RATE * 100.0))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RGBColor(150, 150, 150)));
    let series: [Series; 2] = [
        ("exclusion broken", RGBColor(198, 40, 40), |p| p.1),
        ("data damaged", RGBColor(245, 124, 0), |p| p.2),
    ];
    for (i, (name, colour, rate)) in series.into_iter().enumerate() {
        // The two outcomes side by side at each point, so their bars
        // never hide each other.
        let shift = (if i == 0 { -1.0 } else { 1.0 }) * pad * 0.15;
        let measured: Vec<(f64, Rate)> = points
            .iter()
            .filter_map(|p| rate(p).map(|r| (p.0 + shift, r)))
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
