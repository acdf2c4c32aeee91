//! `mheta experiment --plot`: predicted and actual time over the spectrum
//! as SVG, the best marked (as the paper's figures 10-11).

use super::Report;
use anyhow::Result;
use mheta_model::Dist;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Draw `r` into the SVG file `path`.
pub fn plot(r: &Report, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let n = r.rows.len();
    let ymax = r
        .rows
        .iter()
        .flat_map(|x| [x.predicted_s, x.actual_s])
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        * 1.1;
    let title = format!(
        "{} on {} ({} ranks{}): predicted vs actual, mean diff {:.1}%",
        r.app,
        r.cluster,
        r.np,
        if r.prefetch { ", prefetch" } else { "" },
        r.mean_diff_pct
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(110)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..ymax)
        .map_err(err)?;
    axes(&mut chart, r)?;
    series(&mut chart, r)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The axes: each point labelled by its name and distribution.
fn axes(chart: &mut Chart, r: &Report) -> Result<()> {
    let labels: Vec<String> = r
        .rows
        .iter()
        .map(|x| {
            let d = Dist(x.dist.clone()).to_string();
            if x.label.is_empty() {
                d
            } else {
                format!("{} {}", x.label, d)
            }
        })
        .collect();
    chart
        .configure_mesh()
        .x_labels(r.rows.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_label_style(
            ("sans-serif", 10)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .y_desc("time per iteration (s)")
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The predicted and the actual line, and the best actual point circled.
fn series(chart: &mut Chart, r: &Report) -> Result<()> {
    let pts = |f: fn(&super::Row) -> f64| -> Vec<(f64, f64)> {
        r.rows
            .iter()
            .enumerate()
            .map(|(i, x)| (i as f64, f(x)))
            .collect()
    };
    let (pred, act) = (pts(|x| x.predicted_s), pts(|x| x.actual_s));
    chart
        .draw_series(LineSeries::new(pred.clone(), BLUE.stroke_width(2)))
        .map_err(err)?
        .label("predicted (MHETA)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(pred.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(act.clone(), RED.stroke_width(2)))
        .map_err(err)?
        .label("actual (median iteration)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(act.iter().map(|&p| TriangleMarker::new(p, 5, RED.filled())))
        .map_err(err)?;
    if let Some(b) = r.rows.iter().position(|x| x.dist == r.best_actual.dist) {
        chart
            .draw_series(std::iter::once(Circle::new(
                (b as f64, r.rows[b].actual_s),
                10,
                BLACK.stroke_width(2),
            )))
            .map_err(err)?
            .label("best actual")
            .legend(|(x, y)| Circle::new((x + 10, y), 6, BLACK.stroke_width(2)));
    }
    Ok(())
}
