//! Spiffy draft blocks (§4.3, Fig. 3, Appendix A.2) against separate
//! forwards: a draft block scored together with the true sequence must give
//! the marginals of that block scored on its own — exactly for the
//! blockwise-causal variant and for the bidirectional variant with dual
//! caches; approximately (exact for one layer) for plain bidirectional.

use std::sync::Arc;

use zapspec_backend::diffusion::{generate_blockwise, DiffusionGenerateOptions};
use zapspec_backend::{
    DType, Device, DiffusionAttention, DiffusionCache, DiffusionLm, ModelConfig, Transformer,
};
use zapspec_core::{DiffusionModel, Logits, ModelError, TokenId};

const M: TokenId = 39; // mask token of tiny_diffusion

fn model(attention: DiffusionAttention, layers: usize, seed: u64) -> Arc<Transformer> {
    let cfg = ModelConfig {
        num_hidden_layers: layers,
        ..ModelConfig::tiny_diffusion(attention, 4)
    };
    Arc::new(Transformer::random(cfg, seed, DType::F32, &Device::Cpu).unwrap())
}

fn max_diff(a: &Logits, b: &Logits) -> f32 {
    assert_eq!(a.dim(), b.dim());
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// prompt (4) | block 4..8 partly unmasked | suffix block 8..12 masked
fn setup() -> (Vec<TokenId>, std::ops::Range<usize>, Vec<Vec<TokenId>>) {
    let seq = vec![1, 2, 3, 4, 5, M, M, 6, M, M, M, M];
    let drafts = vec![vec![5, 7, M, 6], vec![5, 7, 8, 6], vec![9, M, M, 6]];
    (seq, 4..8, drafts)
}

fn with_draft(seq: &[TokenId], block: &std::ops::Range<usize>, d: &[TokenId]) -> Vec<TokenId> {
    let mut s = seq.to_vec();
    s[block.clone()].copy_from_slice(d);
    s
}

#[test]
fn block_causal_drafts_are_exact_with_and_without_prefix_cache() {
    let (seq, block, drafts) = setup();
    let m = model(DiffusionAttention::BlockCausal, 3, 1);
    for cache in [
        DiffusionCache::None,
        DiffusionCache::Prefix,
        DiffusionCache::Dual,
    ] {
        let mut lm = DiffusionLm::new(m.clone()).unwrap().with_cache(cache);
        let both = lm.denoise(&seq, block.clone(), &drafts).unwrap();
        assert_eq!(both.drafts.len(), 3);
        for (i, d) in drafts.iter().enumerate() {
            let mut fresh = DiffusionLm::new(m.clone()).unwrap();
            let alone = fresh
                .denoise(&with_draft(&seq, &block, d), block.clone(), &[])
                .unwrap();
            let diff = max_diff(&both.drafts[i], &alone.main);
            assert!(diff < 1e-5, "{cache:?} draft {i}: {diff}");
        }
        // the suffix is invisible to a blockwise-causal block
        let mut other = seq.clone();
        other[9] = 17;
        let changed = lm.denoise(&other, block.clone(), &[]).unwrap();
        assert!(max_diff(&changed.main, &both.main) < 1e-5);
        assert_eq!(lm.nfe(), 2);
    }
    // the cached prefix is exact: same marginals as the uncached model
    let mut a = DiffusionLm::new(m.clone())
        .unwrap()
        .with_cache(DiffusionCache::Prefix);
    let mut b = DiffusionLm::new(m.clone()).unwrap();
    for blk in [0..4, 4..8, 8..12] {
        let x = a
            .denoise(
                &seq,
                blk.clone(),
                &drafts[..1]
                    .iter()
                    .map(|d| d[..blk.len()].to_vec())
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        let y = b
            .denoise(
                &seq,
                blk.clone(),
                &drafts[..1]
                    .iter()
                    .map(|d| d[..blk.len()].to_vec())
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        assert!(max_diff(&x.main, &y.main) < 1e-5);
        assert!(max_diff(&x.drafts[0], &y.drafts[0]) < 1e-5);
    }
    // the prefix cache is extended block by block, not recomputed
    assert!(a.forwards() <= 3 + 2, "forwards {}", a.forwards());
    // a block straddling two aligned blocks is refused
    let err = a.denoise(&seq, 2..6, &[]).unwrap_err().to_string();
    assert!(err.contains("aligned block"), "{err}");
}

#[test]
fn bidirectional_dual_cache_drafts_are_exact() {
    let (seq, block, drafts) = setup();
    let m = model(DiffusionAttention::Bidirectional, 3, 2);
    let mut lm = DiffusionLm::new(m.clone())
        .unwrap()
        .with_cache(DiffusionCache::Dual);
    // the filling call (full forward) …
    let first = lm.denoise(&seq, block.clone(), &drafts).unwrap();
    assert_eq!(lm.forwards(), 1);
    // … agrees with a cached call on the same state
    let cached = lm.denoise(&seq, block.clone(), &drafts).unwrap();
    assert_eq!(lm.forwards(), 2, "prefix and suffix unchanged: cache hit");
    assert!(max_diff(&first.main, &cached.main) < 1e-5);
    for (i, d) in drafts.iter().enumerate() {
        assert!(max_diff(&first.drafts[i], &cached.drafts[i]) < 1e-5);
        // the draft block scored on its own with the same dual cache
        let alone = lm
            .denoise(&with_draft(&seq, &block, d), block.clone(), &[])
            .unwrap();
        let diff = max_diff(&first.drafts[i], &alone.main);
        assert!(diff < 1e-5, "draft {i}: {diff}");
    }
    assert_eq!(
        lm.forwards(),
        2 + drafts.len(),
        "block contents changed, cache kept"
    );
    // changing the suffix refreshes the cache
    let mut other = seq.clone();
    other[10] = 3;
    lm.denoise(&other, block.clone(), &[]).unwrap();
    assert_eq!(lm.forwards(), 3 + drafts.len());
}

#[test]
fn bidirectional_without_dual_cache_leaks_past_one_layer() {
    let (seq, block, drafts) = setup();
    for (layers, exact) in [(1usize, true), (3, false)] {
        let m = model(DiffusionAttention::Bidirectional, layers, 3);
        let mut lm = DiffusionLm::new(m.clone()).unwrap();
        let both = lm.denoise(&seq, block.clone(), &drafts).unwrap();
        // the true sequence never sees the drafts
        let plain = lm.denoise(&seq, block.clone(), &[]).unwrap();
        assert!(max_diff(&both.main, &plain.main) < 1e-5);
        let alone = lm
            .denoise(&with_draft(&seq, &block, &drafts[1]), block.clone(), &[])
            .unwrap();
        let diff = max_diff(&both.drafts[1], &alone.main);
        if exact {
            assert!(
                diff < 1e-5,
                "one layer: the other blocks' keys depend on embeddings only ({diff})"
            );
        } else {
            assert!(
                diff > 1e-5,
                "from layer 2 on the other blocks carry the current block (A.2)"
            );
        }
        // prefix caching: the filling call equals the uncached one
        let mut p = DiffusionLm::new(m.clone())
            .unwrap()
            .with_cache(DiffusionCache::Prefix);
        let a = p.denoise(&seq, block.clone(), &drafts).unwrap();
        let b = p.denoise(&seq, block.clone(), &drafts).unwrap();
        assert!(max_diff(&a.main, &both.main) < 1e-5 && max_diff(&b.main, &both.main) < 1e-5);
        assert!(max_diff(&b.drafts[2], &both.drafts[2]) < 1e-5);
    }
}

#[test]
fn positions_matter_so_drafts_reuse_the_block_positions() {
    // The same draft scored for a different block gives different marginals:
    // the draft's position ids are those of the block it drafts.
    let m = model(DiffusionAttention::Bidirectional, 1, 4);
    let mut lm = DiffusionLm::new(m).unwrap();
    let seq = vec![M; 12];
    let d = vec![vec![5, 6, 7, 8]];
    let a = lm.denoise(&seq, 0..4, &d).unwrap();
    let b = lm.denoise(&seq, 4..8, &d).unwrap();
    assert!(max_diff(&a.drafts[0], &b.drafts[0]) > 1e-4);
}

#[test]
fn bad_calls_and_generation() {
    let m = model(DiffusionAttention::Bidirectional, 2, 5);
    let mut lm = DiffusionLm::new(m.clone()).unwrap();
    let seq = vec![1, 2, M, M];
    assert!(matches!(
        lm.denoise(&seq, 2..6, &[]),
        Err(ModelError::BadBlock { .. })
    ));
    assert!(matches!(
        lm.denoise(&seq, 2..4, &[vec![1]]),
        Err(ModelError::DraftLength { .. })
    ));
    assert!(matches!(
        lm.denoise(&[40], 0..1, &[]),
        Err(ModelError::TokenOutOfRange { .. })
    ));
    let long = vec![M; 513];
    assert!(matches!(
        lm.denoise(&long, 0..4, &[]),
        Err(ModelError::ContextOverflow { .. })
    ));
    let empty = lm.denoise(&seq, 1..1, &[vec![]]).unwrap();
    assert_eq!((empty.main.nrows(), empty.drafts.len()), (0, 1));
    assert_eq!(lm.nfe(), 0);
    assert!(DiffusionLm::new(Arc::new(
        Transformer::random(ModelConfig::default(), 1, DType::F32, &Device::Cpu).unwrap()
    ))
    .is_err());

    for (attention, cache) in [
        (DiffusionAttention::Bidirectional, DiffusionCache::Dual),
        (DiffusionAttention::BlockCausal, DiffusionCache::Prefix),
    ] {
        let mut g = DiffusionLm::new(model(attention, 2, 6))
            .unwrap()
            .with_cache(cache);
        let opts = DiffusionGenerateOptions {
            gen_len: 10,
            block_len: 4,
            tokens_per_step: 2,
        };
        let (out, nfe) = generate_blockwise(&mut g, &[1, 2, 3, 4], &opts).unwrap();
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|&t| t != M), "{out:?}");
        // blocks 4..8 and 8..12 take 2 steps each, 12..14 one
        assert_eq!(nfe, 5);
    }
}
