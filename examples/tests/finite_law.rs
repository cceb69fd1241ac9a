//! `finite_law` on a tiny schema with a toy vocabulary (several
//! tokenizations per text) and a toy model, against brute force: the walked
//! token tree is exactly the set of token sequences spelling a member text,
//! `trie_logits` (chunked) gives the model's own rows, and the exact laws
//! of the prefix tree served by `MemoLm::with_table` are μ* and μ^proj computed
//! sequence by sequence from the model.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use zapspec_core::prob::{log_softmax, logsumexp};
use zapspec_core::{LanguageModel, TokenId, Vocabulary};
use zapspec_testkit::toy::BigramLm;
use zapspec_verify::PrefixTree;
use zapspec_vocab::TokenVocab;

use examples::finite_law::{trie_logits, TokenTrie};
use zapspec_verify::MemoLm;

const EOS: TokenId = 259;

fn vocab() -> TokenVocab {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    tokens.push(b"\"a".to_vec()); // 256
    tokens.push(b"ab".to_vec()); // 257
    tokens.push(b"b\"".to_vec()); // 258
    tokens.push(Vec::new()); // 259: EOS
    TokenVocab::from_tokens("toy", tokens, &[], EOS).unwrap()
}

/// Every token sequence whose bytes spell one of `texts` (tokens that are
/// no substring of a text cannot occur).
fn brute_force(v: &TokenVocab, texts: &[&str]) -> HashSet<Vec<TokenId>> {
    let alphabet: Vec<TokenId> = (0..EOS)
        .filter(|&t| {
            let b = v.decode(&[t]);
            !b.is_empty()
                && texts
                    .iter()
                    .any(|s| s.as_bytes().windows(b.len()).any(|w| w == &b[..]))
        })
        .collect();
    let mut out = HashSet::new();
    let mut stack: Vec<Vec<TokenId>> = vec![Vec::new()];
    while let Some(seq) = stack.pop() {
        let text = v.decode(&seq);
        if texts.iter().any(|s| s.as_bytes() == &text[..]) {
            out.insert(seq.clone());
        }
        for &t in &alphabet {
            let mut s = seq.clone();
            s.push(t);
            let b = v.decode(&s);
            if texts.iter().any(|x| x.as_bytes().starts_with(&b)) {
                stack.push(s);
            }
        }
    }
    out
}

fn logp(lm: &mut BigramLm, ctx: &[TokenId]) -> Vec<f64> {
    log_softmax(&lm.logits_for(ctx).unwrap())
}

#[test]
fn finite_schema_language_and_laws_match_brute_force() {
    let v = Arc::new(vocab());
    let schema = serde_json::json!({"enum": ["ab", "b", "aab"]});
    let texts = ["\"ab\"", "\"b\"", "\"aab\""];
    let c = zapspec::json_schema(v.clone(), &schema).unwrap();

    // the language
    let trie = TokenTrie::walk(&c, 10_000).unwrap();
    let walked: HashSet<Vec<TokenId>> = trie.members().into_iter().collect();
    let brute = brute_force(&v, &texts);
    assert_eq!(walked, brute);
    assert!(brute.len() > texts.len(), "several tokenizations per text");
    assert_eq!(walked.len(), trie.num_members());
    assert!(matches!(
        TokenTrie::walk(&c, 3),
        Err(examples::finite_law::TrieError::TooLarge { limit: 3 })
    ));

    // the rows, in chunks smaller than the tree
    let mut lm = BigramLm::new(v.len(), 7);
    let rows = trie_logits(&mut lm, &trie, 3, |_| {}).unwrap();
    assert!(lm.context().is_empty());
    for (id, row) in rows.iter().enumerate() {
        let want = lm.logits_for(&trie.tokens(id)).unwrap();
        assert_eq!(&row[..], &want[..], "row of node {id}");
    }

    // the exact laws through the table
    let table: HashMap<Vec<TokenId>, Arc<[f32]>> = rows
        .into_iter()
        .enumerate()
        .map(|(id, r)| (trie.tokens(id), r))
        .collect();
    let mut served = MemoLm::with_table(Arc::new(table), BigramLm::new(v.len(), 999));
    let tree = PrefixTree::enumerate(&c, &mut served, 10_000).unwrap();
    let index = tree.member_index();
    assert_eq!(index.len(), brute.len());
    let star = tree.log_mu_star();
    let proj = tree.log_mu_proj();

    // brute force: sequence probabilities and the masked chain
    let prefixes: HashSet<Vec<TokenId>> = brute
        .iter()
        .flat_map(|s| (0..=s.len()).map(move |k| s[..k].to_vec()))
        .collect();
    let mut lm = BigramLm::new(v.len(), 7);
    let mut log_seq = HashMap::new();
    let mut log_proj = HashMap::new();
    for s in &brute {
        let (mut a, mut b) = (0.0, 0.0);
        for k in 0..=s.len() {
            let lp = logp(&mut lm, &s[..k]);
            let allowed: Vec<f64> = (0..v.len() as TokenId)
                .filter(|&y| {
                    if y == EOS {
                        brute.contains(&s[..k])
                    } else {
                        let mut p = s[..k].to_vec();
                        p.push(y);
                        prefixes.contains(&p)
                    }
                })
                .map(|y| lp[y as usize])
                .collect();
            let y = if k == s.len() { EOS } else { s[k] };
            a += lp[y as usize];
            b += lp[y as usize] - logsumexp(&allowed);
        }
        log_seq.insert(s.clone(), a);
        log_proj.insert(s.clone(), b);
    }
    let z = logsumexp(&log_seq.values().copied().collect::<Vec<_>>());
    for (s, &i) in &index {
        assert!((star[i] - (log_seq[s] - z)).abs() < 1e-9, "μ* of {s:?}");
        assert!((proj[i] - log_proj[s]).abs() < 1e-9, "μ^proj of {s:?}");
    }
    assert!((tree.log_z() - z).abs() < 1e-9);
}
