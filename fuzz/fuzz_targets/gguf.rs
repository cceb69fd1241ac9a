//! The GGUF loaders on any bytes: the model loader (`load_gguf`, dequantised
//! and quantised) and the tokenizer loader (`TokenVocab::from_gguf`) read
//! the input as a file. Both run `zapspec_gguf` first, so no
//! string, array, dimension count or tensor size declared by the file is
//! allocated before it is checked against the file's length.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zapspec_backend::{load_gguf, Device, GgufOptions};
use zapspec_vocab::TokenVocab;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("zapspec-fuzz-{}.gguf", std::process::id()));
    std::fs::write(&path, data).expect("write");
    let _ = zapspec_gguf::check_gguf_header(data, data.len() as u64);
    let _ = TokenVocab::from_gguf(&path);
    let _ = load_gguf(&path, &Device::Cpu, &GgufOptions::default());
});
