//! Hostile checkpoint files: loaders allocate nothing from a
//! count or size read from a file (context length, layer count, tensor
//! shapes, GGUF string / array lengths, dimension counts, tensor sizes)
//! before checking it against the file's length and a documented maximum.
//! Every case ends in a typed `ModelError` quickly; the time bound asserted
//! is generous (noisy CI machines), each takes milliseconds.

use std::path::PathBuf;
use zapspec_backend::config::{MAX_LAYERS, MAX_POSITION_EMBEDDINGS};
use zapspec_backend::{
    load_causal, load_gguf, DType, Device, GgufOptions, ModelConfig, Transformer,
};
use zapspec_core::ModelError;
use zapspec_testkit::hostile::timed;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zapspec-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tiny() -> ModelConfig {
    ModelConfig {
        vocab_size: 16,
        hidden_size: 8,
        intermediate_size: 16,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        num_key_value_heads: Some(1),
        max_position_embeddings: 32,
        ..ModelConfig::default()
    }
}

/// A valid tiny checkpoint in `dir`, then `config.json` replaced by `cfg`.
fn checkpoint_with_config(name: &str, cfg_json: &str) -> PathBuf {
    let d = dir(name);
    let m = Transformer::random(tiny(), 1, DType::F32, &Device::Cpu).unwrap();
    m.save(&d).unwrap();
    std::fs::write(d.join("config.json"), cfg_json).unwrap();
    d
}

fn tiny_json_with(key: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::to_value(tiny()).unwrap();
    v[key] = serde_json::from_str(value).unwrap();
    v.to_string()
}

fn expect_checkpoint_error(r: Result<impl Sized, ModelError>, has: &str) {
    match r {
        Err(ModelError::Checkpoint { reason, .. }) => {
            assert!(reason.contains(has), "{reason:?} lacks {has:?}")
        }
        Err(e) => panic!("expected a checkpoint error, got {e}"),
        Ok(_) => panic!("a hostile checkpoint loaded"),
    }
}

#[test]
fn huge_context_length_in_config() {
    for v in ["1000000000000", "1e12", "18446744073709551615"] {
        let d = checkpoint_with_config("ctx", &tiny_json_with("max_position_embeddings", v));
        let r = timed(&format!("max_position_embeddings {v}"), || {
            load_causal(&d, &Device::Cpu)
        });
        // `1e12` is a float in JSON: refused by the parser, not the bound
        let has = if v == "1e12" {
            "floating point"
        } else {
            "max_position_embeddings"
        };
        expect_checkpoint_error(r, has);
    }
    // The documented maximum itself is accepted by validation.
    let cfg = ModelConfig {
        max_position_embeddings: MAX_POSITION_EMBEDDINGS,
        ..tiny()
    };
    cfg.validate("x").unwrap();
}

#[test]
fn huge_counts_in_config() {
    for (k, v) in [
        ("num_hidden_layers", "1000000000000"),
        ("vocab_size", "4294967296000"),
        ("hidden_size", "1099511627776"),
        ("intermediate_size", "1099511627776"),
        ("num_attention_heads", "1000000000"),
    ] {
        let d = checkpoint_with_config("counts", &tiny_json_with(k, v));
        let r = timed(&format!("{k} {v}"), || load_causal(&d, &Device::Cpu));
        match r {
            Err(ModelError::Checkpoint { .. }) => {}
            Err(e) => panic!("{k}: {e}"),
            Ok(_) => panic!("{k}: loaded"),
        }
    }
    assert!(ModelConfig {
        num_hidden_layers: MAX_LAYERS + 1,
        ..tiny()
    }
    .validate("x")
    .is_err());
    // RoPE tables: positions × head_dim / 2 bounded.
    assert!(ModelConfig {
        max_position_embeddings: MAX_POSITION_EMBEDDINGS,
        hidden_size: 8192,
        num_attention_heads: 2,
        num_key_value_heads: Some(2),
        ..tiny()
    }
    .validate("x")
    .is_err());
}

#[test]
fn hostile_safetensors() {
    let d = dir("st");
    m_save_tiny_config(&d);
    for (name, bytes) in [
        ("header length u64::MAX", u64::MAX.to_le_bytes().to_vec()),
        ("header length beyond the file", {
            let mut v = (1u64 << 40).to_le_bytes().to_vec();
            v.extend_from_slice(b"{}");
            v
        }),
        ("shape beyond the data", {
            let h = br#"{"model.embed_tokens.weight":{"dtype":"F32","shape":[1000000000,1000000000],"data_offsets":[0,16]}}"#;
            let mut v = (h.len() as u64).to_le_bytes().to_vec();
            v.extend_from_slice(h);
            v.extend_from_slice(&[0; 16]);
            v
        }),
        ("empty", Vec::new()),
    ] {
        std::fs::write(d.join("model.safetensors"), &bytes).unwrap();
        let r = timed(name, || load_causal(&d, &Device::Cpu));
        assert!(matches!(r, Err(ModelError::Checkpoint { .. })), "{name}");
    }
}

fn m_save_tiny_config(d: &std::path::Path) {
    std::fs::write(
        d.join("config.json"),
        serde_json::to_string(&tiny()).unwrap(),
    )
    .unwrap();
}

fn gguf_header(tensors: u64, kvs: u64) -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    v.extend_from_slice(&3u32.to_le_bytes());
    v.extend_from_slice(&tensors.to_le_bytes());
    v.extend_from_slice(&kvs.to_le_bytes());
    v
}

fn gstr(v: &mut Vec<u8>, s: &str) {
    v.extend_from_slice(&(s.len() as u64).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
}

#[test]
fn hostile_gguf() {
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut v = gguf_header(0, 1);
    v.extend_from_slice(&(1u64 << 62).to_le_bytes());
    cases.push(("string length 2^62", v));
    let mut v = gguf_header(0, 1);
    gstr(&mut v, "k");
    v.extend_from_slice(&9u32.to_le_bytes());
    v.extend_from_slice(&8u32.to_le_bytes()); // array of strings
    v.extend_from_slice(&u64::MAX.to_le_bytes());
    cases.push(("array length u64::MAX", v));
    let mut v = gguf_header(0, 1);
    gstr(&mut v, "k");
    v.extend_from_slice(&9u32.to_le_bytes());
    for _ in 0..100_000 {
        v.extend_from_slice(&9u32.to_le_bytes());
        v.extend_from_slice(&1u64.to_le_bytes());
    }
    cases.push(("arrays nested 100,000 deep", v));
    let mut v = gguf_header(1, 0);
    gstr(&mut v, "token_embd.weight");
    v.extend_from_slice(&u32::MAX.to_le_bytes());
    v.extend_from_slice(&[0; 64]);
    cases.push(("tensor with 2^32-1 dimensions", v));
    let mut v = gguf_header(1, 1);
    gstr(&mut v, "general.architecture");
    v.extend_from_slice(&8u32.to_le_bytes());
    gstr(&mut v, "llama");
    gstr(&mut v, "token_embd.weight");
    v.extend_from_slice(&2u32.to_le_bytes());
    v.extend_from_slice(&(1u64 << 30).to_le_bytes());
    v.extend_from_slice(&(1u64 << 30).to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes()); // f32
    v.extend_from_slice(&0u64.to_le_bytes());
    v.extend_from_slice(&[0; 64]);
    cases.push(("tensor of 2^60 elements in a tiny file", v));
    // the gguf fuzz target's crashes: a zero dimension before two whose
    // product overflows (candle multiplies the dimensions in reverse), and
    // `general.alignment: 0` (candle divides by it)
    let mut v = gguf_header(1, 0);
    gstr(&mut v, "token_embd.weight");
    v.extend_from_slice(&3u32.to_le_bytes());
    for d in [0u64, 1 << 40, 1 << 40] {
        v.extend_from_slice(&d.to_le_bytes());
    }
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&0u64.to_le_bytes());
    v.extend_from_slice(&[0; 64]);
    cases.push(("dimensions 0 x 2^40 x 2^40", v));
    let mut v = gguf_header(0, 1);
    gstr(&mut v, "general.alignment");
    v.extend_from_slice(&4u32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    cases.push(("general.alignment 0", v));
    cases.push(("tensor count u64::MAX", gguf_header(u64::MAX, 0)));
    cases.push(("metadata count u64::MAX", gguf_header(0, u64::MAX)));
    let d = dir("gguf");
    for (name, bytes) in cases {
        let p = d.join("m.gguf");
        std::fs::write(&p, &bytes).unwrap();
        let r = timed(name, || {
            load_gguf(&p, &Device::Cpu, &GgufOptions::default())
        });
        match r {
            Err(ModelError::Checkpoint { reason, .. }) => assert!(!reason.is_empty()),
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name}: loaded"),
        }
    }
}
