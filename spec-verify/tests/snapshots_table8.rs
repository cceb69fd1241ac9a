//! Snapshot of Table 8 (budget language L_{n,K}, exact): the rendered
//! Markdown without the timing column, computed by the one implementation
//! of the budget language (`zapspec_phi::exact::budget`). Its TV(μ^proj, μ*)
//! column is the paper's Table 8 to three decimals. A brute-force
//! enumeration of all `2^n` strings checks the grouped TVs independently.

use zapspec_phi::exact::budget::{closed_form_log_phi, summarize, BudgetLanguage, TABLE8_SETTINGS};

/// A Markdown table: header, separator, one line per row.
fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let sep = vec!["---"; header.len()].join("|");
    let mut s = format!("| {} |\n|{sep}|\n", header.join(" | "));
    rows.iter()
        .for_each(|r| s.push_str(&format!("| {} |\n", r.join(" | "))));
    s
}

#[test]
fn table8_snapshot() {
    let header = [
        "setting",
        "valid strings",
        "DFA states",
        "TV(μproj,μ*)",
        "TV(μΦ,μ*) < 1e-13",
        "root P(1) Φ",
    ];
    let mut rows = Vec::new();
    for (n, k, p1) in TABLE8_SETTINGS {
        let r = summarize(BudgetLanguage::new(n, k).unwrap(), p1).unwrap();
        rows.push(vec![
            format!("n={n}, K={k}, p1={p1}"),
            r.valid_strings
                .map_or_else(|| "> 2^128".to_string(), |v| v.to_string()),
            r.dfa_states.to_string(),
            format!("{:.3}", r.tv_proj_star),
            (r.tv_phi_star < 1e-13).to_string(),
            format!("{:.3}", r.root_p1_phi),
        ]);
    }
    insta::assert_snapshot!(markdown(&header, &rows));
}

/// Brute force over all 2^n strings: (members, TV(μ^proj, μ*), TV(μ^Φ, μ*)),
/// with Φ from the closed form `Pr[Bin(n−t, p₁) ≤ K−c]`.
fn brute(n: usize, k: usize, p1: f64) -> (usize, f64, f64) {
    let lang = BudgetLanguage::new(n, k).unwrap();
    let phi = |t: usize, c: usize| closed_form_log_phi(lang, p1, t, c);
    let mut z = 0.0;
    for x in 0u32..(1 << n) {
        if x.count_ones() as usize <= k {
            z += p1.powi(x.count_ones() as i32)
                * (1.0 - p1).powi((n - x.count_ones() as usize) as i32);
        }
    }
    let (mut count, mut tvp, mut tvf) = (0, 0.0, 0.0);
    for x in 0u32..(1 << n) {
        let ones = x.count_ones() as usize;
        if ones > k {
            continue;
        }
        count += 1;
        let p = p1.powi(ones as i32) * (1.0 - p1).powi((n - ones) as i32);
        let (mut proj, mut doob, mut c) = (1.0, 1.0, 0usize);
        for t in 0..n {
            let bit = (x >> t) & 1 == 1;
            let pb = if bit { p1 } else { 1.0 - p1 };
            // local mask: 1 allowed iff c < K
            proj *= if c < k {
                pb
            } else if bit {
                0.0
            } else {
                1.0
            };
            let nc = c + usize::from(bit);
            doob *= pb * (phi(t + 1, nc) - phi(t, c)).exp();
            c = nc;
        }
        tvp += (proj - p / z).abs();
        tvf += (doob - p / z).abs();
    }
    (count, 0.5 * tvp, 0.5 * tvf)
}

#[test]
fn grouped_tv_matches_brute_force() {
    for &(n, k, p1) in &[
        (10, 5, 0.62),
        (12, 3, 0.7),
        (9, 9, 0.5),
        (11, 0, 0.3),
        (13, 6, 0.2),
    ] {
        let r = summarize(BudgetLanguage::new(n, k).unwrap(), p1).unwrap();
        let (count, tvp, tvf) = brute(n, k, p1);
        assert_eq!(r.valid_strings, Some(count as u128));
        assert!(
            (r.tv_proj_star - tvp).abs() < 1e-12,
            "n={n} K={k}: {} vs {tvp}",
            r.tv_proj_star
        );
        assert!(r.tv_phi_star < 1e-12 && tvf < 1e-12);
        assert!(r.doob_residual < 1e-12);
    }
}

#[test]
fn table8_first_row_counts() {
    let r = summarize(BudgetLanguage::new(20, 10).unwrap(), 0.62).unwrap();
    assert_eq!(r.valid_strings, Some(616_666));
    assert_eq!(r.dfa_states, 231);
    assert!(BudgetLanguage::new(5, 6).is_err());
    assert!(summarize(BudgetLanguage::new(5, 2).unwrap(), 1.0).is_err());
}
