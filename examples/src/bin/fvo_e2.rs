//! E2 (future-validity paper §6.2, Tables 2 and 6): the Φ estimator
//! hierarchy on bounded Dyck D_{3,16} (988 strings) and D_{3,12} (145) under
//! a seeded toy bigram LM. For each estimator (from the `future-validity`
//! crate) one estimate is drawn per prefix and frozen; the FVO-Spec loop
//! then samples with it. We report
//!
//! - the exact terminal-law TV(μ̂, μ*) of that frozen kernel (enumerated),
//! - the sampled TV of N loop runs with a 95% bootstrap interval,
//! - δ = max over prefixes and candidates of |Φ̂ − Φ| (and its μ^proj-visit
//!   mean), Φ̄ (μ^proj-visit mean of Φ̄_t) and the Theorem 7 bound
//!   δ/(Φ̄ − δ) with the sup δ (vacuous when δ ≥ Φ̄),
//! - cost per position: extra model forwards per scored position.
//!
//! `cargo run --release -p examples --bin fvo_e2 -- [--out DIR] [--quick] [--seed N]`

use examples::fvo::{compare, exp, f4, progress, Comparison};
use examples::report::{write_json, CommonArgs, MarkdownTable};
use serde::Serialize;
use zapspec_core::prob::{seeded_rng, tv};
use zapspec_phi::certificates::theorem7_bound;
use zapspec_phi::{
    Exact, ExactConfig, Frozen, Metered, MonteCarlo, OneStepCheap, OneStepTrue, PhiEstimator,
    Uniform, WithModel,
};
use zapspec_testkit::bytelm::NoisyLm;
use zapspec_testkit::toy::BigramLm;
use zapspec_testkit::{DyckConstraint, DyckSpec};
use zapspec_verify::{MemoLm, PrefixTree, SpecConfig, SpeculativeDecoder, TreePhi, VerifierKind};

type Est = Box<dyn PhiEstimator<DyckConstraint, BigramLm>>;

#[derive(Serialize)]
struct Row {
    grammar: String,
    estimator: String,
    tv_exact_law: f64,
    sampled: Comparison,
    delta: f64,
    delta_visit_mean: f64,
    phi_bar: f64,
    bound: Option<f64>,
    cost_per_pos: f64,
    acceptance: f64,
    tokens_per_round: f64,
    seconds: f64,
}

fn estimators(seed: u64, horizon: usize) -> Vec<Est> {
    let mut v: Vec<Est> = vec![
        Box::new(Uniform::new()),
        Box::new(OneStepCheap::new()),
        Box::new(OneStepTrue::new()),
    ];
    for k in [1, 4, 8, 16, 64] {
        v.push(Box::new(MonteCarlo::new(
            k,
            horizon,
            seed ^ (k as u64) << 8,
        )));
    }
    v.push(Box::new(Exact::new(ExactConfig::default())));
    v
}

/// `--help` text of this binary.
const ABOUT: &str = "E2: the Φ estimator hierarchy on bounded Dyck. `--seed` (default 1): seed of the toy bigram target LM (and, ×7919, of the Monte Carlo estimators).";

fn main() -> anyhow::Result<()> {
    let args = CommonArgs::parse_with_about(ABOUT);
    let n = if args.quick { 2_000 } else { 10_000 };
    let lm_seed = args.seed_or(1);
    let t0 = std::time::Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let mut tables = String::new();
    let mut seed_rows = Vec::new();
    let mut mc_rows = Vec::new();
    for (gname, spec) in [
        (
            "D_{3,16}",
            DyckSpec {
                kinds: 1,
                max_depth: 3,
                max_len: 16,
            },
        ),
        (
            "D_{3,12}",
            DyckSpec {
                kinds: 1,
                max_depth: 3,
                max_len: 12,
            },
        ),
    ] {
        let c = DyckConstraint::new(spec);
        let mut p = MemoLm::new(BigramLm::new(3, lm_seed));
        let tree = PrefixTree::enumerate(&c, &mut p, 1_000_000)?;
        let index = tree.member_index();
        let star = exp(&tree.log_mu_star());
        let phi_bar = tree.mean_phi_bar();
        let mut t = MarkdownTable::new(&[
            "estimator",
            "TV(μ̂,μ*) exact law",
            "TV sampled [bias-corrected 95% CI]",
            "δ (sup)",
            "δ̄ (visit mean)",
            "bound δ/(Φ̄−δ)",
            "cost/pos (forwards)",
            "accept",
            "tok/round",
        ]);
        for (i, est) in estimators(lm_seed * 7919, spec.max_len + 1)
            .into_iter()
            .enumerate()
        {
            let t1 = std::time::Instant::now();
            let name = est.name();
            let mut frozen =
                Frozen::new(WithModel::new(Metered::new(est), BigramLm::new(3, lm_seed)));
            let law = exp(&tree.log_mu_phi(&mut frozen)?);
            // δ against the exact Φ of every prefix
            let mut delta: f64 = 0.0;
            // and its mean over positions, weighted by μ^proj visits (as Φ̄)
            let mut reach = vec![0.0; tree.nodes().len()];
            reach[0] = 1.0;
            let (mut dsum, mut rsum) = (0.0, 0.0);
            for id in 0..tree.nodes().len() {
                let node = &tree.nodes()[id];
                for &(t, ch) in &node.children {
                    reach[ch] = reach[id] * (node.logp[t as usize] - node.log_zp).exp();
                }
                let mut d_here: f64 = 0.0;
                let prefix = tree.tokens(id);
                let hat = frozen.get(&prefix).unwrap_or(&[]);
                for &(y, lh) in hat {
                    let exact = if y == tree.eos() {
                        0.0
                    } else {
                        node.children
                            .iter()
                            .find(|&&(t, _)| t == y)
                            .map_or(f64::NEG_INFINITY, |&(_, ch)| tree.nodes()[ch].log_phi)
                    };
                    d_here = d_here.max((lh.exp() - exact.exp()).abs());
                }
                delta = delta.max(d_here);
                dsum += reach[id] * d_here;
                rsum += reach[id];
            }
            let delta_mean = dsum / rsum;
            let cost = frozen.inner().estimator.cost();
            let cfg = SpecConfig {
                gamma: 4,
                verifier: VerifierKind::FvoSpec,
                ..SpecConfig::default()
            };
            let draft = MemoLm::new(NoisyLm::new(BigramLm::new(3, lm_seed), 0.5, 99));
            let mut dec = SpeculativeDecoder::new(
                MemoLm::new(BigramLm::new(3, lm_seed)),
                draft,
                frozen,
                cfg,
            )?;
            let mut rng = seeded_rng(1000 + i as u64);
            let pb = progress(n, format!("{gname} {name}"));
            let (counts, stats) = dec.sample_counts(&c, &index, n, &mut rng, |_| pb.inc(1))?;
            pb.finish_and_clear();
            let cmp = compare(&mut seeded_rng(77 + i as u64), &counts, &star, 200, 20);
            let bound = theorem7_bound(delta, phi_bar);
            t.row(&[
                name.clone(),
                f4(tv(&law, &star)),
                format!("{} [{}, {}]", f4(cmp.tv), f4(cmp.ci_lo), f4(cmp.ci_hi)),
                f4(delta),
                f4(delta_mean),
                bound.map_or("vacuous (δ ≥ Φ̄)".to_string(), f4),
                format!("{:.1}", cost.forwards_per_call()),
                format!("{:.3}", stats.acceptance_rate()),
                format!("{:.2}", stats.tokens_per_round()),
            ]);
            rows.push(Row {
                grammar: gname.into(),
                estimator: name,
                tv_exact_law: tv(&law, &star),
                sampled: cmp,
                delta,
                delta_visit_mean: delta_mean,
                phi_bar,
                bound,
                cost_per_pos: cost.forwards_per_call(),
                acceptance: stats.acceptance_rate(),
                tokens_per_round: stats.tokens_per_round(),
                seconds: t1.elapsed().as_secs_f64(),
            });
        }
        // MC is one randomized draw per prefix: repeat the exact-law TV over
        // estimator seeds to separate the k-trend from draw-to-draw noise
        let mut mc_t =
            MarkdownTable::new(&["MC k", "exact-law TV mean ± sd (8 draws)", "min", "max"]);
        for k in [1usize, 4, 8, 16, 64] {
            let tvs: Vec<f64> = (0..8u64)
                .map(|s| {
                    let est = MonteCarlo::new(k, spec.max_len + 1, 0xABC0 + s);
                    let mut f = Frozen::new(WithModel::new(est, BigramLm::new(3, lm_seed)));
                    tree.log_mu_phi(&mut f).map(|l| tv(&exp(&l), &star))
                })
                .collect::<Result<_, _>>()?;
            let (m, sd) = zapspec_phi::metrics::mean_sd(&tvs);
            mc_t.row(&[
                k.to_string(),
                format!("{} ± {}", f4(m), f4(sd)),
                f4(tvs.iter().copied().fold(f64::INFINITY, f64::min)),
                f4(tvs.iter().copied().fold(0.0, f64::max)),
            ]);
            mc_rows.push(
                serde_json::json!({"grammar": gname, "k": k, "tvs": tvs, "mean": m, "sd": sd}),
            );
        }
        let floor = zapspec_phi::metrics::noise_floor(&mut seeded_rng(5), &star, n, 20).0;
        tables.push_str(&format!(
            "### Dyck {gname}: |L| = {}, Φ̄ = {}, TV(μproj, μ*) = {}, noise floor of an exact sampler at N = {n}: {}\n\n{}\n",
            tree.num_members(),
            f4(phi_bar),
            f4(tv(&exp(&tree.log_mu_proj()), &star)),
            f4(floor),
            t.render()
        ));
        tables.push_str(&format!(
            "MC over estimator seeds on {gname}:\n\n{}\n",
            mc_t.render()
        ));
        // robustness over LM seeds: exact-law TV of Uniform (μ^proj) vs Exact
        for s in 1..=10u64 {
            let mut p = MemoLm::new(BigramLm::new(3, s));
            let tr = PrefixTree::enumerate(&c, &mut p, 1_000_000)?;
            let st = exp(&tr.log_mu_star());
            let mut one = WithModel::new(OneStepCheap::new(), BigramLm::new(3, s));
            seed_rows.push(serde_json::json!({
                "grammar": gname, "lm_seed": s,
                "tv_uniform": tv(&exp(&tr.log_mu_proj()), &st),
                "tv_onestep_cheap": tv(&exp(&tr.log_mu_phi(&mut one)?), &st),
                "tv_exact": tv(&exp(&tr.log_mu_phi(&mut tr.exact_phi())?), &st),
                "phi_bar": tr.mean_phi_bar(),
            }));
        }
    }
    println!("## E2: Φ estimator hierarchy on bounded Dyck (toy bigram LM seed {lm_seed}, FVO-Spec loop γ = 4, N = {n})\n");
    println!("{tables}");
    let mut t = MarkdownTable::new(&[
        "grammar",
        "LM seed",
        "Φ̄",
        "Uniform TV",
        "OneStep-Cheap TV",
        "Exact TV",
    ]);
    for r in &seed_rows {
        t.row(&[
            r["grammar"].as_str().unwrap_or("").to_string(),
            r["lm_seed"].to_string(),
            f4(r["phi_bar"].as_f64().unwrap_or(f64::NAN)),
            f4(r["tv_uniform"].as_f64().unwrap_or(f64::NAN)),
            f4(r["tv_onestep_cheap"].as_f64().unwrap_or(f64::NAN)),
            format!("{:.1e}", r["tv_exact"].as_f64().unwrap_or(f64::NAN)),
        ]);
    }
    println!(
        "### Exact terminal-law TV to μ* over 10 LM seeds (no sampling)\n\n{}",
        t.render()
    );
    // the ordering found (by exact-law TV) per grammar
    for g in ["D_{3,16}", "D_{3,12}"] {
        let mut v: Vec<&Row> = rows.iter().filter(|r| r.grammar == g).collect();
        v.sort_by(|a, b| b.tv_exact_law.total_cmp(&a.tv_exact_law));
        let order: Vec<String> = v
            .iter()
            .map(|r| format!("{} ({})", r.estimator, f4(r.tv_exact_law)))
            .collect();
        println!(
            "ordering on {g}, worst to best exact-law TV: {}",
            order.join(" > ")
        );
    }
    println!("total {:.1}s", t0.elapsed().as_secs_f64());
    let path = write_json(
        &args.out,
        "fvo_e2",
        &serde_json::json!({ "experiment": "E2 estimator hierarchy", "n": n, "lm_seed": lm_seed, "rows": rows,
            "seeds": seed_rows, "mc_draws": mc_rows, "seconds": t0.elapsed().as_secs_f64() }),
    )?;
    println!("wrote {}", path.display());
    Ok(())
}
