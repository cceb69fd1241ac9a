//! Snapshot of Table 8 (budget language L_{n,K}, exact): the rendered
//! Markdown without the timing column. Its TV(μ^proj, μ*) column is the
//! paper's Table 8 to three decimals.

use zapspec_verify::budget::budget_experiment;
use zapspec_verify::report::MarkdownTable;

#[test]
fn table8_snapshot() {
    let mut t = MarkdownTable::new(&[
        "setting",
        "valid strings",
        "DFA states",
        "TV(μproj,μ*)",
        "TV(μΦ,μ*) < 1e-13",
        "root P(1) Φ",
    ]);
    for (n, k, p1) in [
        (20, 10, 0.62),
        (22, 11, 0.65),
        (24, 12, 0.68),
        (24, 10, 0.65),
        (24, 8, 0.70),
        (26, 13, 0.68),
        (28, 14, 0.68),
        (30, 15, 0.70),
    ] {
        let r = budget_experiment(n, k, p1, 1).unwrap();
        t.row(&[
            format!("n={n}, K={k}, p1={p1}"),
            r.valid_strings.to_string(),
            r.dfa_states.to_string(),
            format!("{:.3}", r.tv_proj_star),
            (r.tv_phi_star < 1e-13).to_string(),
            format!("{:.3}", r.root_p1_phi),
        ]);
    }
    insta::assert_snapshot!(t.render());
}
