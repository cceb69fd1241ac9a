//! The context-288 diffusion models shipped for Spiffy (`models/
//! diffusion-bytes-288*` and the GPU-trained `models/diffusion-bytes-3m*`)
//! load, beat unigram on held-out text, fit a 32-byte prompt plus a
//! 256-byte generation, and decode losslessly with Spiffy in their exact
//! cache settings (one block, so this stays fast in a debug build); on the
//! 3M-parameter models threshold unmasking at τ = 0.9 fires (fewer calls
//! than positions). Skips (with a message) when a model is absent.

use zapspec_backend::{shipped_models_dir, Device, DiffusionAttention, DiffusionCache};
use zapspec_core::TokenId;
use zapspec_spiffy::calibrate::{calibrate, record_trajectory, CalibrationConfig};
use zapspec_spiffy::{generate, generate_spiffy, DecodeConfig, SpiffyConfig, Unmasking};

fn check(name: &str, attention: DiffusionAttention, cache: DiffusionCache, tau_fires: bool) {
    let dir = shipped_models_dir().join(name);
    if !dir.join("model.safetensors").exists() {
        eprintln!("skipping: {} not found", dir.display());
        return;
    }
    let base = zapspec_backend::load_diffusion(&dir, &Device::Cpu).unwrap();
    assert_eq!(base.attention(), attention);
    let cfg = base.model().config().clone();
    assert!(cfg.max_position_embeddings >= 32 + 256);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let (bound, uni) = (
        m["heldout"]["bits_per_byte"].as_f64().unwrap(),
        m["heldout"]["unigram_bits_per_byte"].as_f64().unwrap(),
    );
    assert!(bound < uni - 0.5, "held-out bound {bound} vs unigram {uni}");
    assert!(
        std::fs::metadata(dir.join("model.safetensors"))
            .unwrap()
            .len()
            <= 20_000_000
    );

    // 32-byte prompt (block aligned), one block of 32, τ = 0.9.
    let mut prompt: Vec<TokenId> = vec![256];
    prompt.extend(
        br#"{"name": "widget", "tags": ["a""#
            .iter()
            .take(31)
            .map(|&b| TokenId::from(b)),
    );
    assert_eq!(prompt.len(), 32);
    let dc = DecodeConfig {
        gen_len: 32,
        block_len: 32,
        unmasking: Unmasking::Threshold { tau: 0.9 },
        temperature: 0.0,
        seed: 0,
    };
    let mut m = base.clone().with_cache(cache);
    let traj = record_trajectory(&mut m, &prompt, &dc, 4).unwrap();
    let cal = calibrate(
        &traj.records,
        &CalibrationConfig {
            lookahead: 4,
            ..CalibrationConfig::default()
        },
    )
    .unwrap();
    let mut m = base.clone().with_cache(cache);
    let vanilla = generate(&mut m, &prompt, &dc).unwrap();
    let mut m = base.clone().with_cache(cache);
    let sp = generate_spiffy(
        &mut m,
        &prompt,
        &cal.graph,
        &SpiffyConfig {
            decode: dc,
            draft_budget: 3,
            record_chains: false,
            timing: false,
        },
    )
    .unwrap();
    assert_eq!(sp.output.tokens, vanilla.tokens, "{name}: Spiffy ≠ vanilla");
    assert!(sp.output.nfe <= vanilla.nfe);
    if tau_fires {
        assert!(
            vanilla.nfe < 32,
            "{name}: τ = 0.9 never fired ({} calls for 32 positions)",
            vanilla.nfe
        );
    }
}

#[test]
fn bidirectional_288_dual_cache_is_lossless() {
    check(
        "diffusion-bytes-288",
        DiffusionAttention::Bidirectional,
        DiffusionCache::Dual,
        false,
    );
}

#[test]
fn blockwise_causal_288_prefix_cache_is_lossless() {
    check(
        "diffusion-bytes-288-blockcausal",
        DiffusionAttention::BlockCausal,
        DiffusionCache::Prefix,
        false,
    );
}

#[test]
fn bidirectional_3m_dual_cache_is_lossless() {
    check(
        "diffusion-bytes-3m",
        DiffusionAttention::Bidirectional,
        DiffusionCache::Dual,
        true,
    );
}

#[test]
fn blockwise_causal_3m_prefix_cache_is_lossless() {
    check(
        "diffusion-bytes-3m-blockcausal",
        DiffusionAttention::BlockCausal,
        DiffusionCache::Prefix,
        true,
    );
}
