#!/usr/bin/env python3
"""Converts SmolLM2-135M-Instruct's GGUF (scripts/fetch-smollm2.sh) into a
Hugging Face checkpoint (bf16 safetensors + tokenizer) in models/smollm2-hf/,
for engines without a GGUF loader (vLLM 0.32). About 30 s; needs torch,
transformers, accelerate and gguf. Idempotent: an existing checkpoint is kept.

The GGUF is dequantised by transformers (`GgufConfig(dequantize=True)`), then
the weights are copied into a fresh `LlamaForCausalLM` whose config carries no
quantization entry (vLLM would otherwise look for a GGUF quantizer)."""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gguf", default=os.path.join(ROOT, "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(ROOT, "models/smollm2-hf"))
    args = ap.parse_args()
    if os.path.exists(os.path.join(args.out, "config.json")) and os.path.exists(
        os.path.join(args.out, "tokenizer.json")
    ):
        print(f"{args.out} is present")
        return 0
    if not os.path.exists(args.gguf):
        print(f"{args.gguf} is missing: run scripts/fetch-smollm2.sh", file=sys.stderr)
        return 1
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig, LlamaForCausalLM

    d, f = os.path.split(args.gguf)
    q = AutoModelForCausalLM.from_pretrained(
        d, gguf_file=f, quantization_config=GgufConfig(gguf_file=f, dequantize=True), torch_dtype=torch.bfloat16
    )
    cfg = q.config.to_dict()
    cfg.pop("quantization_config", None)
    config = type(q.config).from_dict(cfg)
    config.torch_dtype = torch.bfloat16
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    missing, unexpected = model.load_state_dict(q.state_dict(), strict=False)
    # Tied embeddings: lm_head may be absent from the GGUF state.
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        print(f"weights do not match: missing {missing}, unexpected {unexpected}", file=sys.stderr)
        return 1
    tmp = args.out + ".part"
    model.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(d, gguf_file=f).save_pretrained(tmp)
    os.replace(tmp, args.out) if not os.path.exists(args.out) else None
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
