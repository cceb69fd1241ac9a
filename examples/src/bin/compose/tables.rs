//! Tables and plots of the rows.

use anyhow::Result;

use examples::report::MarkdownTable;

use crate::run::{PhiClock, Row};

/// The Φ study's table: per variant, sums over the schemas it ran on.
pub(crate) fn phi_table(rows: &[Vec<Row>]) -> String {
    let mut t = MarkdownTable::new(&[
        "variant",
        "tasks",
        "tokens",
        "target calls / token",
        "all forwards / token",
        "tokens/s",
        "ms / round",
        "Φ ms / round",
        "Φ share of time",
        "|A_t| / call",
        "constraint ops / call",
        "Φ forwards / call",
        "valid",
        "hit the cap",
    ]);
    let mut names: Vec<String> = Vec::new();
    for r in rows.iter().flatten() {
        if !names.contains(&r.variant) {
            names.push(r.variant.clone());
        }
    }
    for name in names {
        let col: Vec<&Row> = rows
            .iter()
            .flatten()
            .filter(|r| r.variant == name)
            .collect();
        let sum = |f: &dyn Fn(&Row) -> f64| col.iter().map(|r| f(r)).sum::<f64>();
        let tokens = sum(&|r| r.tokens as f64);
        let secs = sum(&|r| r.seconds);
        let rounds = sum(&|r| r.rounds as f64).max(1.0);
        let phi = |f: &dyn Fn(&PhiClock) -> f64| sum(&|r| r.phi.as_ref().map_or(0.0, f));
        let has_phi = col.iter().any(|r| r.phi.is_some());
        let calls = phi(&|c| c.calls as f64).max(1.0);
        let opt = |x: f64, digits: usize| {
            if has_phi {
                format!("{x:.digits$}")
            } else {
                "—".into()
            }
        };
        t.row(&[
            name.clone(),
            col.len().to_string(),
            format!("{tokens:.0}"),
            format!("{:.2}", sum(&|r| r.target_calls as f64) / tokens.max(1.0)),
            format!(
                "{:.2}",
                (sum(&|r| r.target_calls as f64) + phi(&|c| c.forwards as f64)) / tokens.max(1.0)
            ),
            format!("{:.1}", tokens / secs.max(1e-9)),
            format!("{:.1}", 1e3 * secs / rounds),
            opt(1e3 * phi(&|c| c.seconds) / rounds, 3),
            if has_phi {
                format!("{:.2}%", 100.0 * phi(&|c| c.seconds) / secs.max(1e-9))
            } else {
                "—".into()
            },
            opt(phi(&|c| c.candidates as f64) / calls, 0),
            opt(phi(&|c| c.constraint_ops as f64) / calls, 1),
            opt(phi(&|c| c.forwards as f64) / calls, 1),
            format!(
                "{}/{}",
                col.iter().filter(|r| r.valid == Some(true)).count(),
                col.len()
            ),
            format!("{}/{}", col.iter().filter(|r| r.capped).count(), col.len()),
        ]);
    }
    t.render()
}

/// The tree line's PNG: token-rate speed-up over no drafter and mean
/// accepted tokens per round against the draft length, one line per tree
/// width (rows as [`tree_sweep_variants`](crate::trees::tree_sweep_variants) orders them).
pub(crate) fn plot_tree_sweep(
    path: &std::path::Path,
    gammas: &[usize],
    widths: &[usize],
    rows: &[Vec<Row>],
) -> Result<()> {
    use plotters::prelude::*;
    let base = rate(rows, 0);
    let acc = |i: usize| {
        let a: f64 = rows.iter().map(|r| r[i].accepted as f64).sum();
        let n: f64 = rows.iter().map(|r| r[i].rounds as f64).sum();
        a / n.max(1.0)
    };
    let idx = |k: usize, j: usize| 1 + k * widths.len() + j;
    let root = BitMapBackend::new(path, (1100, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(550);
    let xmax = gammas.iter().copied().max().unwrap_or(1) as f64 * 1.05;
    let speed_of = |i: usize| rate(rows, i) / base;
    let metrics: [&dyn Fn(usize) -> f64; 2] = [&speed_of, &acc];
    let panels = [
        (&left, "token rate vs no drafter", "× tokens/s"),
        (&right, "accepted tokens per round", "tokens"),
    ];
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    for ((area, title, ydesc), f) in panels.into_iter().zip(metrics) {
        let lines: Vec<Vec<(f64, f64)>> = (0..widths.len())
            .map(|j| {
                gammas
                    .iter()
                    .enumerate()
                    .map(|(k, &g)| (g as f64, f(idx(k, j))))
                    .collect()
            })
            .collect();
        let ymax = lines.iter().flatten().map(|p| p.1).fold(1.0f64, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("draft length γ (tree depth)")
            .y_desc(ydesc)
            .draw()?;
        for (j, pts) in lines.iter().enumerate() {
            let color = colors[j % colors.len()];
            chart
                .draw_series(LineSeries::new(pts.clone(), color))?
                .label(format!("width {}", widths[j]))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Token rate over all tasks of row `i`.
fn rate(rows: &[Vec<Row>], i: usize) -> f64 {
    let tokens: f64 = rows.iter().map(|r| r[i].tokens as f64).sum();
    let secs: f64 = rows.iter().map(|r| r[i].seconds).sum();
    tokens / secs.max(1e-9)
}

/// The scaling line's PNG: token-rate speed-up over no drafter (left axis)
/// and mean accepted tokens per round, against the draft length.
pub(crate) fn plot_sweep(
    path: &std::path::Path,
    gammas: &[usize],
    rows: &[Vec<Row>],
) -> Result<()> {
    use plotters::prelude::*;
    let base = rate(rows, 0);
    let acc = |i: usize| {
        let a: f64 = rows.iter().map(|r| r[i].accepted as f64).sum();
        let n: f64 = rows.iter().map(|r| r[i].rounds as f64).sum();
        a / n.max(1.0)
    };
    let series = |off: usize, f: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        gammas
            .iter()
            .enumerate()
            .map(|(k, &g)| (g as f64, f(1 + 2 * k + off)))
            .collect()
    };
    let speed_pl = series(0, &|i| rate(rows, i) / base);
    let speed_copy = series(1, &|i| rate(rows, i) / base);
    let acc_pl = series(0, &acc);
    let acc_copy = series(1, &acc);
    let root = BitMapBackend::new(path, (1100, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(550);
    let xmax = gammas.iter().copied().max().unwrap_or(1) as f64 * 1.05;
    for (area, title, ydesc, a, b) in [
        (
            &left,
            "token rate vs no drafter",
            "× tokens/s",
            &speed_pl,
            &speed_copy,
        ),
        (
            &right,
            "accepted tokens per round",
            "tokens",
            &acc_pl,
            &acc_copy,
        ),
    ] {
        let ymax = a.iter().chain(b.iter()).map(|p| p.1).fold(1.0f64, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("draft length γ")
            .y_desc(ydesc)
            .draw()?;
        for (pts, color, label) in [(a, BLUE, "prompt lookup"), (b, RED, "copy drafts")] {
            chart
                .draw_series(LineSeries::new(pts.clone(), color))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Sums per variant (rows in the same order for every task).
pub(crate) fn table(rows: &[Vec<Row>]) -> String {
    let mut t = MarkdownTable::new(&[
        "variant",
        "tasks",
        "tokens",
        "target calls / token",
        "accepted / round",
        "nodes scored / round",
        "tokens/s",
        "valid",
        "hit the cap",
        "= no-drafter output (up to the cap)",
        "edit applied",
    ]);
    let n = rows.first().map_or(0, Vec::len);
    for i in 0..n {
        let col: Vec<&Row> = rows.iter().map(|r| &r[i]).collect();
        let sum = |f: &dyn Fn(&Row) -> f64| col.iter().map(|r| f(r)).sum::<f64>();
        let tokens = sum(&|r| r.tokens as f64);
        let share = |f: &dyn Fn(&Row) -> Option<bool>| {
            let known: Vec<bool> = col.iter().filter_map(|r| f(r)).collect();
            if known.is_empty() {
                "—".to_string()
            } else {
                format!("{}/{}", known.iter().filter(|&&b| b).count(), known.len())
            }
        };
        t.row(&[
            col[0].variant.clone(),
            col.len().to_string(),
            format!("{tokens:.0}"),
            format!("{:.2}", sum(&|r| r.target_calls as f64) / tokens.max(1.0)),
            format!(
                "{:.2}",
                sum(&|r| r.accepted as f64) / sum(&|r| r.rounds as f64).max(1.0)
            ),
            format!(
                "{:.2}",
                sum(&|r| r.nodes_scored as f64) / sum(&|r| r.rounds as f64).max(1.0)
            ),
            format!("{:.1}", tokens / sum(&|r| r.seconds).max(1e-9)),
            share(&|r| r.valid),
            share(&|r| Some(r.capped)),
            share(&|r| r.same_as_plain),
            share(&|r| r.edit_applied),
        ]);
    }
    t.render()
}
