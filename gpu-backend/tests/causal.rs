//! The causal runtime against independent references: sequential decoding,
//! separate forwards per branch, a fresh model after truncation, a saved and
//! reloaded checkpoint.

use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use zapspec_backend::{CausalLm, DType, Device, ModelConfig, Transformer};
use zapspec_core::{DraftTree, LanguageModel, Logits, ModelError, TokenId};

/// A tiny Qwen2-shaped config: GQA (4 query heads, 2 KV heads), QKV bias,
/// untied head.
fn qwen_tiny() -> ModelConfig {
    ModelConfig {
        model_type: "qwen2".into(),
        vocab_size: 50,
        max_position_embeddings: 128,
        ..ModelConfig::default()
    }
}

fn lm(cfg: ModelConfig, seed: u64) -> CausalLm {
    CausalLm::new(Arc::new(
        Transformer::random(cfg, seed, DType::F32, &Device::Cpu).unwrap(),
    ))
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn rows_close(a: &Logits, b: &Logits, tol: f32) {
    assert_eq!(a.dim(), b.dim());
    for i in 0..a.nrows() {
        let d = max_diff(&a.row(i).to_vec(), &b.row(i).to_vec());
        assert!(d < tol, "row {i}: max |Δ| = {d}");
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-backend-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn prefill_equals_sequential_decoding() {
    for cfg in [
        qwen_tiny(),
        ModelConfig {
            tie_word_embeddings: true,
            bos_token_id: Some(0.into()),
            ..ModelConfig::default()
        },
    ] {
        let toks: Vec<TokenId> = (0..14).map(|i| (i * 7 + 3) % 40).collect();
        let mut a = lm(cfg.clone(), 1);
        let rows = a.prefill(&toks).unwrap();
        assert_eq!(rows.dim(), (14, cfg.vocab_size));
        let mut b = lm(cfg, 1);
        for (i, &t) in toks.iter().enumerate() {
            let r = b.prefill(&[t]).unwrap();
            let d = max_diff(&r.row(0).to_vec(), &rows.row(i).to_vec());
            assert!(d < 1e-4, "position {i}: {d}");
        }
        assert!(max_diff(&b.next_logits().unwrap(), &rows.row(13).to_vec()) < 1e-4);
        assert_eq!(a.context(), b.context());
    }
}

#[test]
fn truncate_then_refeed_gives_identical_logits() {
    let toks: Vec<TokenId> = (0..12).map(|i| (i * 5 + 1) % 50).collect();
    let mut a = lm(qwen_tiny(), 2);
    let rows = a.prefill(&toks).unwrap();
    a.truncate(5);
    assert_eq!(a.context(), &toks[..5]);
    assert_eq!(a.cache_len(), 5);
    // logits after the truncated context are recomputed, not stale
    assert!(max_diff(&a.next_logits().unwrap(), &rows.row(4).to_vec()) < 1e-5);
    let again = a.prefill(&toks[5..]).unwrap();
    rows_close(&again, &rows.slice(ndarray::s![5.., ..]).to_owned(), 1e-5);
    // a different continuation after rollback agrees with a fresh model
    a.truncate(3);
    let alt = a.prefill(&[9, 9, 9]).unwrap();
    let mut fresh = lm(qwen_tiny(), 2);
    let f = fresh
        .prefill(&[toks[0], toks[1], toks[2], 9, 9, 9])
        .unwrap();
    rows_close(&alt, &f.slice(ndarray::s![3.., ..]).to_owned(), 1e-4);
    // truncate to zero and start over
    a.truncate(0);
    assert!(a.context().is_empty());
    rows_close(&a.prefill(&toks).unwrap(), &rows, 1e-5);
}

#[test]
fn forks_are_independent() {
    let mut a = lm(qwen_tiny(), 3);
    a.prefill(&[1, 2, 3]).unwrap();
    let mut b = a.clone();
    let la = a.prefill(&[4]).unwrap();
    let lb = b.prefill(&[5]).unwrap();
    assert!(max_diff(&la.row(0).to_vec(), &lb.row(0).to_vec()) > 1e-3);
    assert_eq!(a.context(), &[1, 2, 3, 4]);
    assert_eq!(b.context(), &[1, 2, 3, 5]);
    let mut c = lm(qwen_tiny(), 3);
    let lc = c.prefill(&[1, 2, 3, 4]).unwrap();
    assert!(max_diff(&la.row(0).to_vec(), &lc.row(3).to_vec()) < 1e-4);
}

#[test]
fn tree_scoring_equals_separate_branches() {
    // root 0 ─ 1 ─ 3
    //        └ 2 ─ 4 ─ 6
    // root 5
    let parents = [None, Some(0), Some(0), Some(1), Some(2), None, Some(4)];
    let tokens: [TokenId; 7] = [7, 8, 9, 10, 11, 12, 13];
    let mut base = lm(qwen_tiny(), 4);
    base.prefill(&[30, 31, 32, 33]).unwrap();
    let tree = base.score_tree(&parents, &tokens).unwrap();
    assert_eq!(
        base.context(),
        &[30, 31, 32, 33],
        "scoring does not change the context"
    );
    for node in 0..parents.len() {
        let mut path = vec![node];
        while let Some(p) = parents[*path.last().unwrap()] {
            path.push(p);
        }
        path.reverse();
        let mut fork = base.clone();
        let branch: Vec<TokenId> = path.iter().map(|&i| tokens[i]).collect();
        let rows = fork.prefill(&branch).unwrap();
        let d = max_diff(
            &rows.row(rows.nrows() - 1).to_vec(),
            &tree.row(node).to_vec(),
        );
        assert!(d < 1e-4, "node {node}: {d}");
    }
    // committing an accepted path reuses the tree's keys and values
    let mut c = base.clone();
    c.score_tree(&parents, &tokens).unwrap();
    c.commit_tree_path(&[0, 2, 4]).unwrap();
    assert_eq!(c.context(), &[30, 31, 32, 33, 7, 9, 11]);
    assert!(max_diff(&c.next_logits().unwrap(), &tree.row(4).to_vec()) < 1e-6);
    let after = c.prefill(&[1]).unwrap();
    let mut fresh = lm(qwen_tiny(), 4);
    let f = fresh.prefill(&[30, 31, 32, 33, 7, 9, 11, 1]).unwrap();
    assert!(max_diff(&after.row(0).to_vec(), &f.row(7).to_vec()) < 1e-4);
    // a non-path is rejected
    c.score_tree(&parents, &tokens).unwrap();
    assert!(c.commit_tree_path(&[0, 4]).is_err());
    assert!(base.score_tree(&[Some(1), None], &[1, 2]).is_err());
    // a linear draft block is a chain
    let blk = base.score_block(&[7, 8, 10]).unwrap();
    rows_close(
        &blk.slice(ndarray::s![2..3, ..]).to_owned(),
        &tree.slice(ndarray::s![3..4, ..]).to_owned(),
        1e-4,
    );
}

/// The trait's path-by-path `tree_logits` over a `CausalLm` (everything
/// else forwarded).
struct PathByPath(CausalLm);

impl LanguageModel for PathByPath {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn context(&self) -> &[TokenId] {
        self.0.context()
    }
    fn prefill(&mut self, tokens: &[TokenId]) -> Result<Logits, ModelError> {
        self.0.prefill(tokens)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, ModelError> {
        self.0.next_logits()
    }
    fn truncate(&mut self, len: usize) {
        self.0.truncate(len)
    }
}

#[test]
fn tree_logits_is_one_forward_and_equals_the_default() {
    // root 0 ─ 1 ─ 3 ─ 6
    //        └ 2 ─ 4
    //            └ 5 (same token as 4's sibling path would give)
    // root 7
    let tree = DraftTree::new(
        vec![
            None,
            Some(0),
            Some(0),
            Some(1),
            Some(2),
            Some(2),
            Some(3),
            None,
        ],
        vec![7, 8, 9, 10, 11, 12, 13, 7],
    )
    .unwrap();
    let mut fast = lm(qwen_tiny(), 5);
    fast.prefill(&[30, 31, 32]).unwrap();
    let mut slow = PathByPath(fast.clone());
    let before = fast.forwards();
    let a = fast.tree_logits(&tree).unwrap();
    assert_eq!(fast.forwards(), before + 1, "one forward for the tree");
    assert_eq!(fast.context(), &[30, 31, 32]);
    let b = slow.tree_logits(&tree).unwrap();
    rows_close(&a, &b, 1e-4);
    // and each row is a separate prefill of its path
    for node in 0..tree.len() {
        let mut fork = fast.clone();
        let rows = fork.prefill(&tree.path(node).unwrap()).unwrap();
        let d = max_diff(&rows.row(rows.nrows() - 1).to_vec(), &a.row(node).to_vec());
        assert!(d < 1e-4, "node {node}: {d}");
    }
    // an empty tree: no rows
    assert_eq!(fast.tree_logits(&DraftTree::default()).unwrap().nrows(), 0);
    // the trunk (nodes on every path) stays in the context: a whole chain,
    // or a chain down to the first branching
    let chain = DraftTree::chain(vec![7, 9, 11]);
    let mut c = fast.clone();
    let rows = c.tree_logits(&chain).unwrap();
    assert_eq!(c.context(), &[30, 31, 32, 7, 9, 11]);
    assert!(max_diff(&c.next_logits().unwrap(), &rows.row(2).to_vec()) < 1e-6);
    let after = c.prefill(&[1]).unwrap();
    let mut fresh = lm(qwen_tiny(), 5);
    let f = fresh.prefill(&[30, 31, 32, 7, 9, 11, 1]).unwrap();
    assert!(max_diff(&after.row(0).to_vec(), &f.row(6).to_vec()) < 1e-4);
    let forked = DraftTree::new(vec![None, Some(0), Some(1), Some(1)], vec![7, 9, 11, 12]).unwrap();
    let mut c = fast.clone();
    c.tree_logits(&forked).unwrap();
    assert_eq!(c.context(), &[30, 31, 32, 7, 9]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Prefilling in arbitrary chunks equals one prefill.
    #[test]
    fn chunked_prefill_is_associative(toks in proptest::collection::vec(0u32..50, 1..20), cut in 0usize..20) {
        let cut = cut.min(toks.len());
        let mut a = lm(qwen_tiny(), 5);
        let whole = a.prefill(&toks).unwrap();
        let mut b = lm(qwen_tiny(), 5);
        let mut r1 = b.prefill(&toks[..cut]).unwrap();
        let r2 = b.prefill(&toks[cut..]).unwrap();
        r1.append(ndarray::Axis(0), r2.view()).unwrap();
        for i in 0..toks.len() {
            prop_assert!(max_diff(&whole.row(i).to_vec(), &r1.row(i).to_vec()) < 1e-4);
        }
    }
}

#[test]
fn save_load_round_trip() {
    for cfg in [
        qwen_tiny(),
        ModelConfig {
            tie_word_embeddings: true,
            ..ModelConfig::default()
        },
    ] {
        let m = Transformer::random(cfg, 6, DType::F32, &Device::Cpu).unwrap();
        let dir = tmpdir(&format!("roundtrip-{}", m.config().tie_word_embeddings));
        m.save(&dir).unwrap();
        let mut a = CausalLm::new(Arc::new(m));
        let mut b = zapspec_backend::load_causal(&dir, &Device::Cpu).unwrap();
        let ra = a.prefill(&[1, 2, 3, 4]).unwrap();
        let rb = b.prefill(&[1, 2, 3, 4]).unwrap();
        assert_eq!(ra, rb, "bit-identical after a round trip");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn checkpoint_reason(r: Result<CausalLm, ModelError>) -> String {
    match r {
        Err(ModelError::Checkpoint { path, reason }) => format!("{path}: {reason}"),
        Err(e) => panic!("wrong error kind: {e}"),
        Ok(_) => panic!("a broken checkpoint loaded"),
    }
}

#[test]
fn broken_checkpoints_give_clear_errors() {
    let cfg = qwen_tiny();
    let m = Transformer::random(cfg.clone(), 7, DType::F32, &Device::Cpu).unwrap();
    let dir = tmpdir("broken");
    m.save(&dir).unwrap();
    let load = |d: &PathBuf| zapspec_backend::load_causal(d, &Device::Cpu);

    // a missing directory
    let e = checkpoint_reason(load(&dir.join("nope")));
    assert!(e.contains("config.json"), "{e}");

    // a tensor missing
    let mut w: std::collections::HashMap<String, candle_core::Tensor> = m.weights().clone();
    w.remove("model.layers.1.mlp.up_proj.weight");
    candle_core::safetensors::save(&w, dir.join("model.safetensors")).unwrap();
    let e = checkpoint_reason(load(&dir));
    assert!(
        e.contains("model.layers.1.mlp.up_proj.weight") && e.contains("missing"),
        "{e}"
    );

    // a config that disagrees with the tensors
    m.save(&dir).unwrap();
    let mut wrong = cfg.clone();
    wrong.intermediate_size = 48;
    std::fs::write(dir.join("config.json"), wrong.to_json()).unwrap();
    let e = checkpoint_reason(load(&dir));
    assert!(e.contains("shape") && e.contains("gate_proj"), "{e}");

    // garbage instead of safetensors
    std::fs::write(dir.join("config.json"), cfg.to_json()).unwrap();
    std::fs::write(dir.join("model.safetensors"), b"definitely not safetensors").unwrap();
    let e = checkpoint_reason(load(&dir));
    assert!(e.contains("not a valid safetensors"), "{e}");

    // a truncated file
    m.save(&dir).unwrap();
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("model.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
    checkpoint_reason(load(&dir));

    // bad config.json: not JSON, a missing field, an inconsistent value
    for (text, want) in [
        ("{ nope", "not a valid model config"),
        ("{\"vocab_size\": 5}", "hidden_size"),
        (
            &cfg.to_json()
                .replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 3"),
            "num_attention_heads",
        ),
    ] {
        std::fs::write(dir.join("config.json"), text).unwrap();
        let e = checkpoint_reason(load(&dir));
        assert!(e.contains(want), "{want}: {e}");
    }

    // no weights at all
    std::fs::write(dir.join("config.json"), cfg.to_json()).unwrap();
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let e = checkpoint_reason(load(&dir));
    assert!(e.contains("no model.safetensors"), "{e}");

    // a diffusion checkpoint is not a causal LM
    let d = Transformer::random(
        ModelConfig::tiny_diffusion(zapspec_backend::DiffusionAttention::Bidirectional, 4),
        1,
        DType::F32,
        &Device::Cpu,
    )
    .unwrap();
    d.save(&dir).unwrap();
    assert!(checkpoint_reason(load(&dir)).contains("diffusion"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_inputs_are_errors() {
    let mut a = lm(qwen_tiny(), 8);
    assert!(matches!(
        a.prefill(&[50]),
        Err(ModelError::TokenOutOfRange { token: 50, .. })
    ));
    assert!(a.next_logits().is_err(), "no BOS: nothing to condition on");
    let long: Vec<TokenId> = vec![1; 129];
    assert!(matches!(
        a.prefill(&long),
        Err(ModelError::ContextOverflow { .. })
    ));
    assert!(
        a.context().is_empty(),
        "failed calls leave the context alone"
    );
    assert_eq!(a.prefill(&[]).unwrap().nrows(), 0);
    assert_eq!(a.max_context(), 128);
    // with a BOS the empty context has logits
    let mut b = lm(
        ModelConfig {
            bos_token_id: Some(1.into()),
            ..qwen_tiny()
        },
        8,
    );
    let first = b.next_logits().unwrap();
    let rows = b.prefill(&[4, 5]).unwrap();
    let mut c = lm(
        ModelConfig {
            bos_token_id: Some(1.into()),
            ..qwen_tiny()
        },
        8,
    );
    let r = c.prefill(&[4]).unwrap();
    assert!(max_diff(&r.row(0).to_vec(), &rows.row(0).to_vec()) < 1e-5);
    let mut d = lm(qwen_tiny(), 8).with_bos(None);
    let e = d.prefill(&[1, 4, 5]).unwrap();
    assert!(
        max_diff(&e.row(2).to_vec(), &rows.row(1).to_vec()) < 1e-4,
        "BOS is just a first token"
    );
    assert_eq!(first.len(), 50);
    assert!(
        max_diff(
            &first,
            &d.clone()
                .with_bos(None)
                .prefill(&[1])
                .unwrap()
                .row(0)
                .to_vec()
        ) < 1e-4
    );
}

/// `tree_logits_from` (a tree grown one forward per level over the shared
/// KV cache) equals a separate prefill of every node's path on a fresh
/// model, for models with and without BOS; the context and its logits are
/// untouched, and after `truncate` to the base the model decodes as if no
/// tree had been grown.
#[test]
fn tree_levels_equal_separate_paths() {
    for cfg in [
        qwen_tiny(),
        ModelConfig {
            tie_word_embeddings: true,
            bos_token_id: Some(0.into()),
            ..ModelConfig::default()
        },
    ] {
        let ctx: Vec<TokenId> = vec![3, 7, 1, 9];
        let mut m = lm(cfg.clone(), 5);
        m.prefill(&ctx).unwrap();
        let before = m.next_logits().unwrap();
        let mut f = DraftTree::default();
        // three roots, then two children of root 0 and one of root 2, then
        // a grandchild
        let levels: Vec<(Vec<Option<usize>>, Vec<TokenId>)> = vec![
            (vec![None, None, None], vec![4, 4, 11]),
            (vec![Some(0), Some(0), Some(2)], vec![5, 6, 2]),
            (vec![Some(4)], vec![8]),
        ];
        for (parents, tokens) in levels {
            let first = f.extend(&parents, &tokens).unwrap();
            let rows = m.tree_logits_from(&f, first).unwrap();
            assert_eq!(rows.nrows(), tokens.len());
            for i in 0..tokens.len() {
                let mut fresh = lm(cfg.clone(), 5);
                let mut path = ctx.clone();
                path.extend(f.path(first + i).unwrap());
                let want = fresh.logits_for(&path).unwrap();
                let d = max_diff(&rows.row(i).to_vec(), &want);
                assert!(d < 1e-4, "node {}: max |Δ| = {d}", first + i);
            }
        }
        assert_eq!(m.context(), &ctx[..]);
        assert_eq!(max_diff(&m.next_logits().unwrap(), &before), 0.0);
        // a tree out of step with the model is an error, not a panic
        let stale = DraftTree::chain(vec![1, 1]);
        assert!(m.tree_logits_from(&stale, 1).is_err());
        assert!(m.tree_logits_from(&f, f.len() + 1).is_err());
        assert!(f.clone().extend(&[Some(99)], &[1]).is_err());
        assert_eq!(m.context(), &ctx[..]);
        m.truncate(ctx.len());
        let next = m.prefill(&[12]).unwrap();
        let mut fresh = lm(cfg.clone(), 5);
        let mut path = ctx.clone();
        path.push(12);
        let want = fresh.logits_for(&path).unwrap();
        assert!(max_diff(&next.row(0).to_vec(), &want) < 1e-4);
        assert_eq!(m.cache_len(), path.len() + usize::from(cfg.bos().is_some()));
    }
}
