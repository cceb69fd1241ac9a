//! GGUF loading without the real model: a tiny random Llama written as a
//! GGUF file (Q/K rows permuted as llama.cpp's converter does) must give the
//! logits of the same weights loaded the Hugging Face way; broken files are
//! errors, never panics.

use std::path::{Path, PathBuf};

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use zapspec_backend::config::ModelConfig;
use zapspec_backend::weights::{random_weights, Weights};
use zapspec_backend::{load_gguf, CausalLm, GgufOptions, GgufWeights, Transformer};
use zapspec_core::{LanguageModel, ModelError};

fn tiny() -> ModelConfig {
    ModelConfig {
        vocab_size: 96,
        hidden_size: 64,
        intermediate_size: 128,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: Some(2),
        rope_theta: 100_000.0,
        rms_norm_eps: 1e-5,
        max_position_embeddings: 128,
        tie_word_embeddings: true,
        ..Default::default()
    }
}

/// llama.cpp's `convert_hf_to_gguf.py` permutation of q/k rows: within each
/// head, row `j·hd/2 + i` (Hugging Face halves) goes to `2i + j` (pairs).
fn permute_rows(w: &Tensor, heads: usize) -> Tensor {
    let (rows, cols) = w.dims2().unwrap();
    let hd = rows / heads;
    w.reshape((heads, 2, hd / 2, cols))
        .unwrap()
        .transpose(1, 2)
        .unwrap()
        .contiguous()
        .unwrap()
        .reshape((rows, cols))
        .unwrap()
}

fn write_gguf(path: &Path, cfg: &ModelConfig, w: &Weights, dtype: GgmlDType, arch: &str) {
    use gguf_file::Value as V;
    let md: Vec<(String, V)> = vec![
        ("general.architecture".into(), V::String(arch.into())),
        (
            "llama.block_count".into(),
            V::U32(cfg.num_hidden_layers as u32),
        ),
        (
            "llama.context_length".into(),
            V::U32(cfg.max_position_embeddings as u32),
        ),
        (
            "llama.embedding_length".into(),
            V::U32(cfg.hidden_size as u32),
        ),
        (
            "llama.feed_forward_length".into(),
            V::U32(cfg.intermediate_size as u32),
        ),
        (
            "llama.attention.head_count".into(),
            V::U32(cfg.num_attention_heads as u32),
        ),
        (
            "llama.attention.head_count_kv".into(),
            V::U32(cfg.kv_heads() as u32),
        ),
        ("llama.rope.freq_base".into(), V::F32(cfg.rope_theta as f32)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            V::F32(cfg.rms_norm_eps as f32),
        ),
        ("llama.vocab_size".into(), V::U32(cfg.vocab_size as u32)),
    ];
    let mut tensors: Vec<(String, QTensor)> = Vec::new();
    let q = |t: &Tensor, dt: GgmlDType| QTensor::quantize(t, dt).unwrap();
    tensors.push((
        "token_embd.weight".into(),
        q(&w["model.embed_tokens.weight"], dtype),
    ));
    tensors.push((
        "output_norm.weight".into(),
        q(&w["model.norm.weight"], GgmlDType::F32),
    ));
    for l in 0..cfg.num_hidden_layers {
        let hf = |n: &str| &w[&format!("model.layers.{l}.{n}.weight")];
        let g = |n: &str| format!("blk.{l}.{n}.weight");
        tensors.push((g("attn_norm"), q(hf("input_layernorm"), GgmlDType::F32)));
        tensors.push((
            g("ffn_norm"),
            q(hf("post_attention_layernorm"), GgmlDType::F32),
        ));
        tensors.push((
            g("attn_q"),
            q(
                &permute_rows(hf("self_attn.q_proj"), cfg.num_attention_heads),
                dtype,
            ),
        ));
        tensors.push((
            g("attn_k"),
            q(&permute_rows(hf("self_attn.k_proj"), cfg.kv_heads()), dtype),
        ));
        tensors.push((g("attn_v"), q(hf("self_attn.v_proj"), dtype)));
        tensors.push((g("attn_output"), q(hf("self_attn.o_proj"), dtype)));
        tensors.push((g("ffn_gate"), q(hf("mlp.gate_proj"), dtype)));
        tensors.push((g("ffn_up"), q(hf("mlp.up_proj"), dtype)));
        tensors.push((g("ffn_down"), q(hf("mlp.down_proj"), dtype)));
    }
    let mdr: Vec<(&str, &V)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tr: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::fs::File::create(path).unwrap();
    gguf_file::write(&mut f, &mdr, &tr).unwrap();
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zapspec-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn hf_model(cfg: &ModelConfig, w: &Weights) -> CausalLm {
    let m = Transformer::from_weights(cfg.clone(), w.clone(), &Device::Cpu).unwrap();
    CausalLm::new(std::sync::Arc::new(m)).with_bos(None)
}

fn opts(weights: GgufWeights) -> GgufOptions {
    GgufOptions {
        weights,
        max_context: None,
        ..GgufOptions::default()
    }
}

fn max_diff(a: &ndarray::Array2<f32>, b: &ndarray::Array2<f32>) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

const TOKENS: [u32; 12] = [5, 17, 90, 3, 3, 64, 1, 0, 42, 77, 12, 95];

#[test]
fn f32_gguf_equals_the_hugging_face_layout() {
    let cfg = tiny();
    let w = random_weights(&cfg, 7, DType::F32, &Device::Cpu).unwrap();
    let path = tmp("f32.gguf");
    write_gguf(&path, &cfg, &w, GgmlDType::F32, "llama");
    let want = hf_model(&cfg, &w).prefill(&TOKENS).unwrap();
    let scale = want.iter().map(|x| x.abs()).fold(0.0, f32::max);
    for mode in [GgufWeights::Dequantized, GgufWeights::Quantized] {
        let mut lm = load_gguf(&path, &Device::Cpu, &opts(mode)).unwrap();
        assert!(lm.config().rope_interleaved);
        let got = lm.prefill(&TOKENS).unwrap();
        let d = max_diff(&got, &want);
        // The quantised path re-blocks f32 matrices to Q8_0 and quantises
        // activations to 8 bits: close, not exact.
        let tol = match mode {
            GgufWeights::Dequantized => 1e-4,
            GgufWeights::Quantized => 0.05 * scale,
        };
        assert!(d < tol, "{mode:?}: max |Δlogit| {d}");
        // Incremental decoding over the KV cache gives the same rows.
        lm.truncate(0);
        lm.prefill(&TOKENS[..5]).unwrap();
        let rest = lm.prefill(&TOKENS[5..]).unwrap();
        let d = rest
            .rows()
            .into_iter()
            .zip(want.rows().into_iter().skip(5))
            .flat_map(|(a, b)| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| (x - y).abs())
                    .collect::<Vec<_>>()
            })
            .fold(0.0, f32::max);
        assert!(d < tol, "{mode:?} incremental: {d}");
    }
}

#[test]
fn q8_gguf_is_close_and_both_modes_agree() {
    let cfg = tiny();
    let w = random_weights(&cfg, 11, DType::F32, &Device::Cpu).unwrap();
    let path = tmp("q8.gguf");
    write_gguf(&path, &cfg, &w, GgmlDType::Q8_0, "llama");
    let want = hf_model(&cfg, &w).prefill(&TOKENS).unwrap();
    let deq = load_gguf(&path, &Device::Cpu, &opts(GgufWeights::Dequantized))
        .unwrap()
        .prefill(&TOKENS)
        .unwrap();
    let qua = load_gguf(&path, &Device::Cpu, &opts(GgufWeights::Quantized))
        .unwrap()
        .prefill(&TOKENS)
        .unwrap();
    let scale = want.iter().map(|x| x.abs()).fold(0.0, f32::max);
    assert!(
        max_diff(&deq, &want) < 0.05 * scale,
        "deq {}",
        max_diff(&deq, &want)
    );
    assert!(
        max_diff(&qua, &deq) < 0.05 * scale,
        "quant {}",
        max_diff(&qua, &deq)
    );
}

fn expect_checkpoint_error(r: Result<CausalLm, ModelError>, needle: &str) {
    match r {
        Err(ModelError::Checkpoint { reason, .. }) => {
            assert!(reason.contains(needle), "{reason:?} lacks {needle:?}")
        }
        Err(e) => panic!("wrong error kind: {e}"),
        Ok(_) => panic!("loaded a broken file"),
    }
}

#[test]
fn broken_files_are_clear_errors() {
    let cfg = tiny();
    let w = random_weights(&cfg, 3, DType::F32, &Device::Cpu).unwrap();
    let good = tmp("good.gguf");
    write_gguf(&good, &cfg, &w, GgmlDType::Q8_0, "llama");
    let bytes = std::fs::read(&good).unwrap();
    let load = |p: &Path| load_gguf(p, &Device::Cpu, &GgufOptions::default());

    expect_checkpoint_error(load(&tmp("missing.gguf")), "cannot open");

    let p = tmp("empty.gguf");
    std::fs::write(&p, b"").unwrap();
    expect_checkpoint_error(load(&p), "not a readable GGUF");

    let p = tmp("garbage.gguf");
    std::fs::write(
        &p,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    expect_checkpoint_error(load(&p), "not a readable GGUF");

    for cut in [bytes.len() / 2, bytes.len() - 1, 64, 24] {
        let p = tmp(&format!("cut{cut}.gguf"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        assert!(
            matches!(load(&p), Err(ModelError::Checkpoint { .. })),
            "a file cut at {cut} bytes loaded"
        );
    }

    let p = tmp("gpt2.gguf");
    write_gguf(&p, &cfg, &w, GgmlDType::Q8_0, "gpt2");
    expect_checkpoint_error(load(&p), "architecture `gpt2` is not supported");

    // Metadata that disagrees with the tensors.
    let mut big = cfg.clone();
    big.intermediate_size = 256;
    let p = tmp("shape.gguf");
    let w2 = random_weights(&cfg, 3, DType::F32, &Device::Cpu).unwrap();
    write_gguf(&p, &big, &w2, GgmlDType::Q8_0, "llama");
    expect_checkpoint_error(load(&p), "has shape");

    // Every single-byte corruption of the header is an error or a model,
    // never a panic.
    for i in (0..bytes.len().min(2048)).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0xA5;
        let p = tmp("flip.gguf");
        std::fs::write(&p, &b).unwrap();
        let _ = load(&p);
    }
}

#[test]
fn tree_scoring_and_forks_work_on_gguf_models() {
    let cfg = tiny();
    let w = random_weights(&cfg, 5, DType::F32, &Device::Cpu).unwrap();
    let path = tmp("tree.gguf");
    write_gguf(&path, &cfg, &w, GgmlDType::Q8_0, "llama");
    for mode in [GgufWeights::Dequantized, GgufWeights::Quantized] {
        let mut lm = load_gguf(&path, &Device::Cpu, &opts(mode)).unwrap();
        lm.prefill(&TOKENS[..4]).unwrap();
        let fork = lm.clone();
        // Tree: 0 → 1 → 2 and 0 → 3 (two branches).
        let parents = [None, Some(0), Some(1), Some(0)];
        let toks = [7, 8, 9, 10];
        let tree = lm.score_tree(&parents, &toks).unwrap();
        for (branch, rows) in [
            (&[7u32, 8, 9][..], [0usize, 1, 2]),
            (&[7, 10][..], [0, 3, 0]),
        ] {
            let mut f = fork.clone();
            let want = f.prefill(branch).unwrap();
            for (k, &row) in rows.iter().take(branch.len()).enumerate() {
                let d = tree
                    .row(row)
                    .iter()
                    .zip(want.row(k))
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max);
                assert!(d < 1e-3, "{mode:?}: tree row {row} vs prefix row {k}: {d}");
            }
        }
        // Committing a branch equals prefilling it.
        lm.commit_tree_path(&[0, 3]).unwrap();
        let mut f = fork.clone();
        f.prefill(&[7, 10]).unwrap();
        let (a, b) = (lm.next_logits().unwrap(), f.next_logits().unwrap());
        let d = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(d < 1e-3, "{mode:?}: commit vs prefill {d}");
        assert_eq!(lm.context(), f.context());
    }
}

/// The native forward on a tiny `Q4_1` model, over 100 tokens (two KV
/// pages): a prefill equals decoding the tokens one by one and in blocks of
/// 7 bit for bit (each row's arithmetic does not depend on its batch), 1
/// and 2 threads give the same bits, every instruction set gives the
/// scalar path's logits up to f32 summation order, and two forks of one
/// prefix each equal a fresh prefill of their own tokens (copy-on-write
/// pages).
#[test]
fn native_forward_is_batch_thread_and_isa_invariant() {
    use zapspec_backend::Isa;
    use zapspec_backend::NativeOptions;
    let cfg = tiny();
    let w = random_weights(&cfg, 13, DType::F32, &Device::Cpu).unwrap();
    let path = tmp("q41.gguf");
    write_gguf(&path, &cfg, &w, GgmlDType::Q4_1, "llama");
    let tokens: Vec<u32> = (0..100u32).map(|i| (i * 37 + 11) % 96).collect();
    let load = |threads: usize, isa: Option<Isa>| {
        let o = GgufOptions {
            native: NativeOptions { threads, isa },
            ..opts(GgufWeights::Quantized)
        };
        load_gguf(&path, &Device::Cpu, &o).unwrap()
    };
    let want = load(1, None).prefill(&tokens).unwrap();
    let mut steps = load(1, None);
    for (i, &t) in tokens.iter().enumerate() {
        let row = steps.prefill(&[t]).unwrap();
        assert_eq!(row.row(0), want.row(i), "one by one: row {i}");
    }
    let mut blocks = load(2, None);
    let mut at = 0;
    for chunk in tokens.chunks(7) {
        let rows = blocks.prefill(chunk).unwrap();
        for (k, r) in rows.rows().into_iter().enumerate() {
            assert_eq!(
                r,
                want.row(at + k),
                "blocks of 7, 2 threads: row {}",
                at + k
            );
        }
        at += chunk.len();
    }
    let scale = want.iter().map(|x| x.abs()).fold(0.0, f32::max);
    for isa in Isa::all_supported() {
        let got = load(2, Some(isa)).prefill(&tokens).unwrap();
        let d = max_diff(&got, &want);
        assert!(d <= 1e-4 * scale.max(1.0), "{isa:?}: max |Δlogit| {d}");
    }
    let mut base = load(1, None);
    base.prefill(&tokens[..70]).unwrap();
    let (mut a, mut b) = (base.clone(), base.clone());
    let la = a.prefill(&tokens[70..]).unwrap();
    let lb = b.prefill(&[1, 2, 3]).unwrap();
    for (k, r) in la.rows().into_iter().enumerate() {
        assert_eq!(r, want.row(70 + k), "fork a: row {k}");
    }
    let mut fresh = load(1, None);
    let mut other = tokens[..70].to_vec();
    other.extend([1, 2, 3]);
    let lf = fresh.prefill(&other).unwrap();
    for k in 0..3 {
        assert_eq!(lb.row(k), lf.row(70 + k), "fork b: row {k}");
    }
}
