//! E5 (future-validity paper §6.3 / App. H.6, Figure 3): depth and length
//! bias on Dyck D_{3,16}. The maximum nesting depth and the length of a
//! string, under μ^proj, μ*, the OneStep-Cheap Doob law and the exact-Φ law
//! (exact, by enumeration), and under N samples of the Leviathan loop and
//! the exact-Φ FVO-Spec loop. Writes PNG histograms with plotters.
//!
//! `cargo run --release -p examples --bin fvo_e5 -- [--out DIR] [--quick] [--seed N]`

use examples::fvo::{exp, f4, progress};
use examples::report::{write_json, CommonArgs, MarkdownTable};
use plotters::prelude::*;
use zapspec_core::prob::{kl, seeded_rng};
use zapspec_core::TokenId;
use zapspec_phi::{Exact, ExactConfig, OneStepCheap};
use zapspec_phi::{Frozen, WithModel};
use zapspec_testkit::bytelm::NoisyLm;
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec};
use zapspec_verify::{
    ForcedTokens, MemoLm, PrefixTree, SpecConfig, SpeculativeDecoder, TreePhi, VerifierKind,
};

fn max_depth(s: &[TokenId]) -> usize {
    let (mut d, mut m) = (0i64, 0i64);
    for &t in s {
        d += if t == 0 { 1 } else { -1 };
        m = m.max(d);
    }
    m as usize
}

/// Histogram of a statistic under a law over the members.
fn hist(
    members: &[Vec<TokenId>],
    law: &[f64],
    f: impl Fn(&[TokenId]) -> usize,
    bins: usize,
) -> Vec<f64> {
    let mut h = vec![0.0; bins];
    for (m, &p) in members.iter().zip(law) {
        h[f(m).min(bins - 1)] += p;
    }
    h
}

fn mean(h: &[f64]) -> f64 {
    h.iter().enumerate().map(|(i, p)| i as f64 * p).sum()
}

fn plot(
    path: &std::path::Path,
    title: &str,
    xlabel: &str,
    series: &[(&str, Vec<f64>)],
) -> anyhow::Result<()> {
    let bins = series[0].1.len();
    let ymax = series
        .iter()
        .flat_map(|(_, h)| h.iter().copied())
        .fold(0.0, f64::max)
        * 1.1;
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(-0.5f64..bins as f64 - 0.5, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc(xlabel)
        .y_desc("probability")
        .disable_x_mesh()
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    let w = 0.8 / series.len() as f64;
    for (k, (name, h)) in series.iter().enumerate() {
        let color = colors[k % colors.len()];
        chart
            .draw_series(h.iter().enumerate().map(|(i, &p)| {
                let x0 = i as f64 - 0.4 + k as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w, p)], color.mix(0.7).filled())
            }))?
            .label(*name)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.mix(0.7).filled())
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// `--help` text of this binary.
const ABOUT: &str = "E5: depth and length bias on Dyck D_(3,16). `--seed` (default 1): seed of the toy bigram target LM.";

fn main() -> anyhow::Result<()> {
    let args = CommonArgs::parse_with_about(ABOUT);
    let n = if args.quick { 2_000 } else { 10_000 };
    let lm_seed = args.seed_or(1);
    let t0 = std::time::Instant::now();
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 16,
    };
    let c = DyckConstraint::new(spec);
    let mut p = MemoLm::new(BigramLm::new(3, lm_seed));
    let tree = PrefixTree::enumerate(&c, &mut p, 1_000_000)?;
    let members = tree.members();
    let index = tree.member_index();
    let star = exp(&tree.log_mu_star());
    let proj = exp(&tree.log_mu_proj());
    let one = exp(&tree.log_mu_phi(&mut WithModel::new(
        OneStepCheap::new(),
        BigramLm::new(3, lm_seed),
    ))?);
    let exact = exp(&tree.log_mu_phi(&mut WithModel::new(
        Exact::new(ExactConfig::default()),
        BigramLm::new(3, lm_seed),
    ))?);
    // sampled: Leviathan (LMS) and FVO-Spec with exact Φ
    let mut sampled = Vec::new();
    for (k, kind) in [VerifierKind::Leviathan, VerifierKind::FvoSpec]
        .into_iter()
        .enumerate()
    {
        let cfg = SpecConfig {
            gamma: 4,
            verifier: kind,
            // no grammar-forced tokens: keeps the published figures comparable
            forced_tokens: ForcedTokens::off(),
            ..SpecConfig::default()
        };
        let draft = MemoLm::new(NoisyLm::new(BigramLm::new(3, lm_seed), 0.5, 55));
        let pb = progress(n, format!("D_(3,16) {}", kind.name()));
        let counts = if kind == VerifierKind::Leviathan {
            let mut dec = SpeculativeDecoder::new(
                MemoLm::new(BigramLm::new(3, lm_seed)),
                draft,
                zapspec_phi::Uniform,
                cfg,
            )?;
            dec.sample_counts(&c, &index, n, &mut seeded_rng(500 + k as u64), |_| {
                pb.inc(1)
            })?
            .0
        } else {
            let phi = Frozen::new(WithModel::new(
                Exact::new(ExactConfig::default()),
                BigramLm::new(3, lm_seed),
            ));
            let mut dec =
                SpeculativeDecoder::new(MemoLm::new(BigramLm::new(3, lm_seed)), draft, phi, cfg)?;
            dec.sample_counts(&c, &index, n, &mut seeded_rng(500 + k as u64), |_| {
                pb.inc(1)
            })?
            .0
        };
        pb.finish_and_clear();
        sampled.push(
            counts
                .iter()
                .map(|&x| x as f64 / n as f64)
                .collect::<Vec<f64>>(),
        );
    }
    let laws: Vec<(&str, &Vec<f64>)> = vec![
        ("μproj (exact)", &proj),
        ("μ* (exact)", &star),
        ("OneStep-Cheap Doob law (exact)", &one),
        ("exact-Φ Doob law (exact)", &exact),
        ("Leviathan loop (sampled)", &sampled[0]),
        ("FVO-Spec loop, exact Φ (sampled)", &sampled[1]),
    ];
    let depth = |s: &[TokenId]| max_depth(s);
    let len = |s: &[TokenId]| s.len();
    let hd_star = hist(&members, &star, depth, spec.max_depth + 1);
    let hl_star = hist(&members, &star, len, spec.max_len + 1);
    let mut t = MarkdownTable::new(&[
        "law",
        "mean depth",
        "KL(depth ‖ μ*)",
        "mean length",
        "KL(length ‖ μ*)",
    ]);
    let mut out = Vec::new();
    let (mut dseries, mut lseries) = (Vec::new(), Vec::new());
    for (name, law) in &laws {
        let hd = hist(&members, law, depth, spec.max_depth + 1);
        let hl = hist(&members, law, len, spec.max_len + 1);
        t.row(&[
            name.to_string(),
            f4(mean(&hd)),
            f4(kl(&hd, &hd_star)),
            f4(mean(&hl)),
            f4(kl(&hl, &hl_star)),
        ]);
        out.push(serde_json::json!({"law": name, "depth_hist": hd, "length_hist": hl, "mean_depth": mean(&hd),
            "mean_length": mean(&hl), "kl_depth_to_star": kl(&hd, &hd_star), "kl_length_to_star": kl(&hl, &hl_star)}));
        if !name.contains("exact-Φ Doob") {
            dseries.push((*name, hd));
            lseries.push((*name, hl));
        }
    }
    println!("## E5: depth and length bias on Dyck D_(3,16) (toy bigram LM seed {lm_seed}, N = {n} for sampled rows)\n");
    println!("{}", t.render());
    std::fs::create_dir_all(&args.out)?;
    match examples::host::register_font() {
        Ok(()) => {
            let dp = args.out.join("fvo_e5_depth.png");
            let lp = args.out.join("fvo_e5_length.png");
            plot(&dp, "Max nesting depth on D(3,16)", "max depth", &dseries)?;
            plot(&lp, "String length on D(3,16)", "length (tokens)", &lseries)?;
            println!("wrote {} and {}", dp.display(), lp.display());
        }
        Err(e) => println!("{e}: PNG plots skipped (the JSON has the histograms)"),
    }
    println!("total {:.1}s", t0.elapsed().as_secs_f64());
    let path = write_json(
        &args.out,
        "fvo_e5",
        &serde_json::json!({ "experiment": "E5 depth and length bias", "n": n, "lm_seed": lm_seed, "laws": out,
            "seconds": t0.elapsed().as_secs_f64() }),
    )?;
    println!("wrote {}", path.display());
    Ok(())
}
