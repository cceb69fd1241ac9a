//! The safetensors checkpoint loader on any bytes: the input is
//! `config.json` text, a NUL byte, then `model.safetensors` bytes (no NUL:
//! the whole input is the config and the seed corpus's tiny checkpoint
//! supplies the weights). Both are written to a scratch directory and
//! loaded with `load_causal`; the config alone goes through
//! `ModelConfig::from_json`. Never a panic, never an allocation sized by a
//! declared count that the file cannot back (`MAX_*` in the config module).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use zapspec_backend::{load_causal, Device, ModelConfig};

/// A tiny valid checkpoint's config, used when the input has no NUL.
const TINY: &str = include_str!("../seeds/tiny_config.json");

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("zapspec-fuzz-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

fuzz_target!(|data: &[u8]| {
    let (config, weights): (&[u8], &[u8]) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    };
    if let Ok(text) = std::str::from_utf8(config) {
        let _ = ModelConfig::from_json(text, "config.json");
    }
    let dir = scratch();
    let config = if weights.is_empty() {
        TINY.as_bytes()
    } else {
        config
    };
    std::fs::write(dir.join("config.json"), config).expect("write");
    std::fs::write(dir.join("model.safetensors"), weights).expect("write");
    let _ = load_causal(&dir, &Device::Cpu);
});
