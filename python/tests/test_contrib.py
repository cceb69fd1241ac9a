"""The logits processors: llama-cpp-python's calling convention driven by
a seeded random "model" (always), the real llama.cpp on SmolLM2 (when
llama-cpp-python and the model are present), and transformers' generate on
a tiny random model (when torch and transformers are importable)."""

import json
import os

import numpy as np
import pytest

import zapspec
from zapspec.contrib.llama_cpp import LogitsProcessor as LlamaCppProcessor

from conftest import GGUF

SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}, "tag": {"type": "string", "maxLength": 5}},
    "required": ["ok", "n", "tag"],
    "additionalProperties": False,
}


def valid(doc):
    return (
        isinstance(doc, dict)
        and set(doc) == {"ok", "n", "tag"}
        and isinstance(doc["ok"], bool)
        and doc["n"] in (1, 2, 3)
        and isinstance(doc["tag"], str)
        and len(doc["tag"]) <= 5
    )


@pytest.mark.parametrize("seed", range(5))
def test_llama_cpp_processor_protocol(info, compiler, seed):
    """input_ids = prompt + generated so far, scores = next logits: every
    sampled output is a valid instance that ends with a stop token."""
    rng = np.random.default_rng(seed)
    proc = LlamaCppProcessor(compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":")))
    ids = [1, 2, 3]
    for _ in range(200):
        scores = rng.normal(size=info.vocab_size).astype(np.float32)
        out = proc(np.array(ids, dtype=np.intc), scores)
        assert out is scores
        t = int(np.argmax(out))
        ids.append(t)
        if t in info.stop_token_ids:
            break
    assert ids[-1] in info.stop_token_ids, "no stop token within 200 steps"
    text = info.decode(ids[3:-1]).decode()
    assert valid(json.loads(text)), text
    proc(np.array(ids, dtype=np.intc), np.zeros(info.vocab_size, dtype=np.float32))
    assert proc.matcher.is_terminated()


def test_llama_cpp_real_model(info):
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    if not GGUF.exists():
        pytest.skip("SmolLM2 is not fetched (scripts/fetch-smollm2.sh)")
    import llama_cpp.llama_cpp as C

    orig = C.llama_model_default_params

    def no_extra_bufts():  # llama.cpp's AMX buffers crash on these VMs
        p = orig()
        p.use_extra_bufts = False
        return p

    C.llama_model_default_params = no_extra_bufts
    llama_cpp.llama_model_default_params = no_extra_bufts
    llm = llama_cpp.Llama(model_path=str(GGUF), n_ctx=512, n_threads=1, verbose=False, seed=0)
    info = zapspec.TokenizerInfo.from_gguf(str(GGUF), vocab_size=llm.n_vocab())
    compiled = zapspec.GrammarCompiler(info).compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    prompt = (
        "<|im_start|>user\nGive a JSON object with a boolean ok, a number n and a short tag.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    out = llm.create_completion(
        prompt,
        max_tokens=64,
        temperature=0.0,
        logits_processor=llama_cpp.LogitsProcessorList([LlamaCppProcessor(compiled)]),
    )
    text = out["choices"][0]["text"]
    assert out["choices"][0]["finish_reason"] == "stop", text
    assert valid(json.loads(text)), text


def test_transformers_generate():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed")
    from zapspec.contrib.hf import LogitsProcessor as HfProcessor

    bpe = tokenizers.ByteLevelBPETokenizer()
    corpus = ['{"ok":true,"n":1,"tag":"abc"}', '{"ok":false,"n":3,"tag":""}', "hello world"] * 50
    bpe.train_from_iterator(corpus, vocab_size=300, special_tokens=["<eos>", "<pad>"])
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>", pad_token="<pad>")
    vocab_size = len(tok) + 13  # the model's embedding is padded
    info = zapspec.TokenizerInfo.from_huggingface(tok, vocab_size=vocab_size)
    assert info.stop_token_ids == [tok.eos_token_id]
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    model = transformers.LlamaForCausalLM(cfg).eval()
    compiled = zapspec.GrammarCompiler(info).compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    inputs = tok(["hello", "hello world"], return_tensors="pt", padding=True)
    out = model.generate(
        **inputs, max_new_tokens=40, do_sample=True, logits_processor=[HfProcessor(compiled)],
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    for row in out[:, inputs["input_ids"].shape[1]:].tolist():
        assert tok.eos_token_id in row, row
        text = tok.decode(row[: row.index(tok.eos_token_id)])
        assert valid(json.loads(text)), text


def test_vllm_plugin_imports_without_vllm_and_is_off_by_default(monkeypatch):
    # the entry point runs in every vLLM process; off unless ZAPSPEC_VLLM=1
    import zapspec.contrib.vllm as zv

    monkeypatch.delenv(zv.SWITCH, raising=False)
    assert not zv.enabled()
    zv.register()
    assert not zv._installed
    monkeypatch.setenv(zv.SWITCH, "1")
    assert zv.enabled()
