"""The first mask of free text under a trigger set the compiler has not
seen: one structural tag per trigger set (four sets, one process), the
compile, the first mask and a second mask of a fresh matcher, in ms.

    python free_text_first_mask.py --tokenizer DIR

The first set of the process also pays what the engine builds once per
vocabulary; each later set pays only its own entries.
"""

import argparse
import time

TRIGGERS = ["<tool_call>", "<function=", "[TOOL_CALLS]", "<|python_tag|>"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer directory")
    a = ap.parse_args()
    import zapspec
    from transformers import AutoTokenizer

    info = zapspec.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(a.tokenizer))
    compiler = zapspec.GrammarCompiler(info)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size)
    print("| trigger | compile ms | first mask ms | again ms |\n|---|---|---|---|")
    for trig in TRIGGERS:
        tag = {
            "type": "structural_tag",
            "format": {
                "type": "triggered_tags",
                "triggers": [trig[:2]],
                "tags": [{"begin": trig, "content": {"type": "const_string", "value": "x"}, "end": "!"}],
            },
        }
        t0 = time.perf_counter()
        g = compiler.compile_structural_tag(tag)
        t1 = time.perf_counter()
        zapspec.GrammarMatcher(g).fill_next_token_bitmask(bm)
        t2 = time.perf_counter()
        zapspec.GrammarMatcher(g).fill_next_token_bitmask(bm)
        t3 = time.perf_counter()
        print(f"| `{trig}` | {(t1 - t0) * 1e3:.2f} | {(t2 - t1) * 1e3:.2f} | {(t3 - t2) * 1e3:.3f} |")


if __name__ == "__main__":
    main()
