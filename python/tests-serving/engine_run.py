"""Runs one in-process vLLM engine (``vllm.LLM``) on SmolLM2 over the fixed
cases of ``cases.py`` and writes what it generated as JSON: the tests start
it as a subprocess once per configuration (a vLLM engine per process).

    python engine_run.py --backend zapspec|xgrammar [--spec ngram] --out FILE

``--backend zapspec`` turns the plugin on the way a user does
(``ZAPSPEC_VLLM=1``: the ``vllm.general_plugins`` entry point installs it);
``xgrammar`` is vLLM's own backend, the reference."""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import MODEL, cases  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=["zapspec", "xgrammar"], required=True)
    ap.add_argument("--spec", choices=["none", "ngram"], default="none")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    if args.backend == "zapspec":
        os.environ["ZAPSPEC_VLLM"] = "1"
    else:
        os.environ.pop("ZAPSPEC_VLLM", None)

    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    kw = {}
    if args.spec == "ngram":
        kw["speculative_config"] = {
            "method": "ngram",
            "num_speculative_tokens": 4,
            "prompt_lookup_max": 4,
            "prompt_lookup_min": 2,
        }
    t0 = time.time()
    llm = LLM(
        str(MODEL),
        enforce_eager=True,
        kv_cache_memory_bytes=1 << 30,
        max_model_len=2048,
        dtype="bfloat16",
        seed=args.seed,
        structured_outputs_config={"backend": "xgrammar"},
        **kw,
    )
    startup = time.time() - t0
    tok = llm.get_tokenizer()
    cs = cases()
    prompts, params = [], []
    for c in cs:
        prompts.append(tok.apply_chat_template([{"role": "user", "content": c["prompt"]}], tokenize=False, add_generation_prompt=True))
        so = None if c["kind"] == "none" else StructuredOutputsParams(**{c["kind"]: c["spec"]})
        params.append(SamplingParams(max_tokens=c.get("max_tokens", 96), temperature=0, structured_outputs=so))
    t0 = time.time()
    outs = llm.generate(prompts, params, use_tqdm=False)
    gen = time.time() - t0
    manager = llm.llm_engine.engine_core.engine_core.structured_output_manager
    result = {
        "backend": args.backend,
        "spec": args.spec,
        "backend_class": type(manager.backend).__name__ if manager.backend is not None else None,
        "startup_s": startup,
        "generate_s": gen,
        "outputs": {
            c["id"]: {
                "text": o.outputs[0].text,
                "token_ids": list(o.outputs[0].token_ids),
                "finish_reason": o.outputs[0].finish_reason,
            }
            for c, o in zip(cs, outs)
        },
    }
    # a refused constraint is a clean error from the front end
    errors = {}
    for rid, spec in [("bad-type", {"type": "object", "properties": {"a": {"type": "strin"}}})]:
        try:
            llm.generate(["x"], SamplingParams(max_tokens=4, structured_outputs=StructuredOutputsParams(json=spec)), use_tqdm=False)
            errors[rid] = None
        except Exception as e:  # what the user sees
            errors[rid] = {"type": type(e).__name__, "mro": [k.__name__ for k in type(e).__mro__], "message": str(e)}
    result["errors"] = errors
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
