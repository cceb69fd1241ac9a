//! The models shipped under `models/` load quickly and generate. Skips (with
//! a message) when `models/` is absent.

use std::time::Instant;

use zapspec_backend::causal::{generate, GenerateOptions};
use zapspec_backend::diffusion::{generate_blockwise, DiffusionGenerateOptions};
use zapspec_backend::{shipped_models_dir, Device, DiffusionCache};
use zapspec_core::{DiffusionModel, LanguageModel, TokenId};

fn present(name: &str) -> Option<std::path::PathBuf> {
    let d = shipped_models_dir().join(name);
    if d.join("model.safetensors").exists() {
        Some(d)
    } else {
        eprintln!("skipping: {} not found", d.display());
        None
    }
}

#[test]
fn shipped_causal_model_loads_fast_and_generates() {
    let Some(dir) = present("causal-bytes") else {
        return;
    };
    let t = Instant::now();
    let mut lm = zapspec_backend::load_causal(&dir, &Device::Cpu).unwrap();
    let load = t.elapsed().as_secs_f64();
    assert!(load < 1.0, "load took {load:.2} s");
    assert_eq!(lm.vocab_size(), 257);
    let prompt: Vec<TokenId> = br#"{"name": ""#.iter().map(|&b| TokenId::from(b)).collect();
    let out = generate(
        &mut lm,
        &prompt,
        &GenerateOptions {
            max_new_tokens: 24,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!out.is_empty() && out.len() <= 24);
    // a trained model prefers a JSON-ish next byte after `{"` over a control byte
    let mut lm2 = zapspec_backend::load_causal(&dir, &Device::Cpu).unwrap();
    let l = lm2.logits_for(&[b'{' as TokenId, b'"' as TokenId]).unwrap();
    assert!(
        l[b'a' as usize] > l[0x01],
        "trained: letters beat control bytes after {{\""
    );
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let (bpb, uni) = (
        m["heldout"]["bits_per_byte"].as_f64().unwrap(),
        m["heldout"]["unigram_bits_per_byte"].as_f64().unwrap(),
    );
    assert!(bpb < uni, "held-out {bpb} vs unigram {uni}");
}

#[test]
fn shipped_diffusion_model_loads_fast_and_generates() {
    let Some(dir) = present("diffusion-bytes") else {
        return;
    };
    let t = Instant::now();
    let lm = zapspec_backend::load_diffusion(&dir, &Device::Cpu).unwrap();
    let load = t.elapsed().as_secs_f64();
    assert!(load < 1.0, "load took {load:.2} s");
    let mut lm = lm.with_cache(DiffusionCache::Dual);
    let prompt: Vec<TokenId> = br#"{"id": "#.iter().map(|&b| TokenId::from(b)).collect();
    let opts = DiffusionGenerateOptions {
        gen_len: 16,
        block_len: 8,
        tokens_per_step: 2,
    };
    let (out, nfe) = generate_blockwise(&mut lm, &prompt, &opts).unwrap();
    assert_eq!(out.len(), 16);
    assert!(out.iter().all(|&t| t != lm.mask_token()));
    assert!((8..=16).contains(&nfe), "{nfe}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let (bound, uni) = (
        m["heldout"]["bits_per_byte"].as_f64().unwrap(),
        m["heldout"]["unigram_bits_per_byte"].as_f64().unwrap(),
    );
    assert!(bound < uni, "variational bound {bound} vs unigram {uni}");
}
