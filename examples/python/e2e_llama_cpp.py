#!/usr/bin/env python3
"""End-to-end race on llama-cpp-python: SmolLM2-135M-Instruct (GGUF, CPU)
generating JSON for MaskBench schemas, with five ways of decoding:

- ``unconstrained``: no constraint;
- ``llama_grammar``: llama.cpp's own grammar sampler
  (``LlamaGrammar.from_json_schema`` -> GBNF, passed as ``grammar=``);
- ``zapspec``: ``zapspec.contrib.llama_cpp.LogitsProcessor``;
- ``llguidance``: a logits processor over ``llguidance.LLMatcher``;
- ``xgrammar``: a logits processor over ``xgrammar.GrammarMatcher``.

(``noop_processor``, a processor that returns the logits unchanged, can be
added with ``--engines`` to measure what llama-cpp-python's logits-processor
hook costs by itself.)

Every engine runs on the same loaded ``Llama`` object, the engines one after
the other for each schema (interleaved, so that background load hits them
alike), each generation with a fresh KV cache (the prompt's prefill counts in
the time to first token of every engine), the same prompt, temperature and
seed.

The run is supervised: a worker process does the work and appends one JSON
line per (schema, engine) to a checkpoint; if it dies (a crash inside
llama.cpp, say), the supervisor records the crash against the (schema,
engine) in flight and starts a new worker, which goes on from there.

Usage (from the repository root)::

    python examples/python/e2e_llama_cpp.py --schemas 50 --max-tokens 128 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
ALL_ENGINES = ["unconstrained", "llama_grammar", "zapspec", "llguidance", "xgrammar", "noop_processor"]
DEFAULT_ENGINES = "unconstrained,llama_grammar,zapspec,llguidance,xgrammar"
PROCESSOR_ENGINES = {"zapspec", "llguidance", "xgrammar", "noop_processor"}
STOP_TOKENS = [0, 2]  # SmolLM2: <|endoftext|>, <|im_end|> (both end-of-generation in llama.cpp)
SCHEMA_PROMPT_CHARS = 2000
LLAMA_GRAMMAR_MAX_BYTES = 500_000
SYSTEM_PROMPT = "You are a helpful assistant. You answer with JSON only."
USER_PREFIX = "Generate a JSON object valid under this JSON Schema:\n"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemas", type=int, default=50, help="number of MaskBench schemas (default 50)")
    ap.add_argument("--max-tokens", type=int, default=128, help="generation limit per output (default 128)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (decode and batch), grammar compiler threads (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="schema shuffle and sampling seed (default 0)")
    ap.add_argument("--temperature", type=float, default=0.0, help="sampling temperature; 0 = greedy (default)")
    ap.add_argument("--data", default=str((REPO / ".." / "shared" / "data" / "maskbench").resolve()), help="MaskBench folder")
    ap.add_argument("--out", default=str(REPO / "examples" / "results" / "python"), help="output folder")
    ap.add_argument("--engines", default=DEFAULT_ENGINES, help=f"comma list out of {','.join(ALL_ENGINES)}")
    ap.add_argument("--model", default=str(MODEL), help="GGUF model")
    ap.add_argument("--resume", action="store_true", help="go on from the checkpoint in --out instead of starting over")
    ap.add_argument("--no-supervise", action="store_true", help="run in this process (a crash ends the run)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md/.png from the .json in --out (no run)")
    ap.add_argument("--notes", default=None, help="a Markdown file appended to the report as its notes")
    ap.add_argument("--compile-timeout", type=float, default=180.0, help="seconds one compile may take before the worker is killed and the engine counted as refused")
    ap.add_argument("--generate-timeout", type=float, default=300.0, help="seconds one generation may take before the worker is killed")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.engine_list = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in args.engine_list:
        if e not in ALL_ENGINES:
            ap.error(f"unknown engine {e!r}; known: {', '.join(ALL_ENGINES)}")
    return args


# ----------------------------------------------------------------------------------------------
# schemas and validation


def pick_schemas(data: Path, n: int, seed: int) -> List[Path]:
    files = sorted(p for p in data.glob("*.json"))
    random.Random(seed).shuffle(files)
    return files[:n]


def validate(schema: Any, instance: Any, formats: bool) -> Dict[str, Any]:
    """{"valid": True/False/None (n/a), "error": str}"""
    import jsonschema
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER) if formats else cls(schema)
    except Exception as e:  # noqa: BLE001 - anything jsonschema can't take is n/a
        return {"valid": None, "error": f"n/a (jsonschema can't use the schema: {type(e).__name__}: {str(e)[:200]})"}
    try:
        err = next(iter(v.iter_errors(instance)), None)
    except Exception as e:  # noqa: BLE001 - unresolvable $ref, bad regex, ...
        return {"valid": None, "error": f"n/a (jsonschema failed: {type(e).__name__}: {str(e)[:200]})"}
    if err is None:
        return {"valid": True, "error": ""}
    return {"valid": False, "error": f"{err.message[:200]} at {'/'.join(map(str, err.absolute_path))}"}


# ----------------------------------------------------------------------------------------------
# logits processors (llama-cpp-python calls processor(input_ids, scores) -> scores once per
# sampled token; input_ids are the prompt and the tokens so far, scores the next token's logits
# as a float32 view with a stride of 12 bytes into llama.cpp's candidate array; what the
# processor returns is copied back into that array)


class LLGuidanceProcessor:
    """llguidance through the logits-processor interface (numpy)."""

    def __init__(self, matcher: Any, vocab_size: int) -> None:
        import llguidance.numpy as lln

        self._lln = lln
        self.matcher = matcher
        self._bitmask = lln.allocate_token_bitmask(1, vocab_size)  # once per generation
        self._seen: Optional[int] = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        n = len(input_ids)
        if self._seen is None:
            self._seen = n  # the prompt
        else:
            for t in input_ids[self._seen : n]:
                if not self.matcher.consume_token(int(t)):
                    raise RuntimeError(f"llguidance refused token {int(t)}: {self.matcher.get_error()}")
            self._seen = n
        self._lln.fill_next_token_bitmask(self.matcher, self._bitmask, 0)
        self._lln.apply_token_bitmask_inplace(scores, self._bitmask)
        return scores


class XGrammarProcessor:
    """xgrammar through the logits-processor interface. xgrammar's CPU kernel
    takes a torch tensor and, for a 1-D tensor, ignores the element stride
    (it masks the wrong floats of a strided view), so the logits are copied
    into a contiguous buffer (allocated once), masked there, and returned."""

    def __init__(self, compiled: Any, vocab_size: int) -> None:
        import numpy as np
        import torch
        import xgrammar as xgr

        self._xgr = xgr
        self.matcher = xgr.GrammarMatcher(compiled)
        self._bitmask = xgr.allocate_token_bitmask(1, vocab_size)  # torch int32, once per generation
        self._buf = np.empty(vocab_size, dtype=np.float32)
        self._tbuf = torch.from_numpy(self._buf).view(1, -1)  # shares memory with _buf
        self._seen: Optional[int] = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        n = len(input_ids)
        if self._seen is None:
            self._seen = n
        else:
            for t in input_ids[self._seen : n]:
                if not self.matcher.accept_token(int(t)):
                    raise RuntimeError(f"xgrammar refused token {int(t)}")
            self._seen = n
        if self.matcher.is_terminated():
            return scores
        self.matcher.fill_next_token_bitmask(self._bitmask)
        self._buf[:] = scores
        self._xgr.apply_token_bitmask_inplace(self._tbuf, self._bitmask)
        return self._buf


class NoopProcessor:
    def __call__(self, input_ids: Any, scores: Any) -> Any:
        return scores


class Timed:
    """Times each call of the inner processor. An exception raised inside a
    llama-cpp-python logits processor is swallowed by the ctypes callback
    (the logits then pass unmasked), so it is caught and recorded here."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: List[float] = []
        self.error: Optional[str] = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        t0 = time.perf_counter()
        try:
            out = self.inner(input_ids, scores)
        except Exception as e:  # noqa: BLE001
            if self.error is None:
                self.error = f"{type(e).__name__}: {e}"
            out = scores
        self.calls.append(time.perf_counter() - t0)
        return out


# ----------------------------------------------------------------------------------------------
# the worker


def patch_llama_cpp() -> None:
    """This VM's llama.cpp crashes on the first decode with its AMX (extra)
    buffer types; Llama(...) ignores use_extra_bufts as a keyword, so patch the
    default model parameters it starts from (llama.py calls
    llama_cpp.llama_cpp.llama_model_default_params() by module attribute)."""
    import llama_cpp
    import llama_cpp.llama_cpp as C

    orig = C.llama_model_default_params

    def patched():  # type: ignore[no-untyped-def]
        p = orig()
        p.use_extra_bufts = False
        return p

    C.llama_model_default_params = patched
    llama_cpp.llama_model_default_params = patched


def zapspec_build() -> str:
    """zapspec is under development in this checkout: name the build the run used."""
    import hashlib

    import zapspec

    pkg = Path(zapspec.__file__).parent
    parts = []
    for name in ("_zapspec.abi3.so", "bitmask.py", "contrib/llama_cpp.py"):
        f = pkg / name
        if f.exists():
            st = f.stat()
            h = hashlib.sha256(f.read_bytes()).hexdigest()[:10]
            parts.append(f"{name} {time.strftime('%H:%M:%S', time.gmtime(st.st_mtime))} UTC sha256 {h}")
    return " (" + "; ".join(parts) + ")" if parts else ""


class Engines:
    """Compiles a schema for an engine; returns (ready-to-use constraint, compile ms)
    or raises (refusal)."""

    def __init__(self, llm: Any, args: argparse.Namespace) -> None:
        self.llm = llm
        self.args = args
        self.n_vocab = llm.n_vocab()
        self.versions: Dict[str, str] = {}
        self.setup_ms: Dict[str, float] = {}
        eng = set(args.engine_list)
        import llama_cpp

        self.versions["llama_cpp_python"] = llama_cpp.__version__
        if "zapspec" in eng or "xgrammar" in eng:
            import zapspec

            t0 = time.perf_counter()
            self.zinfo = zapspec.TokenizerInfo.from_gguf(args.model, vocab_size=self.n_vocab)
            self.zcompiler = zapspec.GrammarCompiler(self.zinfo, max_threads=args.threads)
            self.setup_ms["zapspec"] = (time.perf_counter() - t0) * 1e3
            self.versions["zapspec"] = zapspec.__version__ + zapspec_build()
            assert list(self.zinfo.stop_token_ids) == STOP_TOKENS, self.zinfo.stop_token_ids
        if "llguidance" in eng:
            import llguidance
            import llguidance.llamacpp

            t0 = time.perf_counter()
            self.lltok = llguidance.llamacpp.lltokenizer_from_vocab(llm._model.vocab, n_vocab=self.n_vocab, eos_token=STOP_TOKENS)
            self.setup_ms["llguidance"] = (time.perf_counter() - t0) * 1e3
            self.versions["llguidance"] = llguidance.__version__
        if "xgrammar" in eng:
            import importlib.metadata

            import torch
            import xgrammar as xgr

            torch.set_num_threads(args.threads)
            t0 = time.perf_counter()
            # the GGUF's token bytes as zapspec reads them (special tokens: empty)
            xinfo = xgr.TokenizerInfo(
                list(self.zinfo.decoded_vocab), xgr.VocabType.RAW, vocab_size=self.n_vocab, stop_token_ids=STOP_TOKENS
            )
            self.xcompiler = xgr.GrammarCompiler(xinfo, max_threads=args.threads)
            self.setup_ms["xgrammar"] = (time.perf_counter() - t0) * 1e3
            self.versions["xgrammar"] = importlib.metadata.version("xgrammar")

    def compile(self, engine: str, schema: Any) -> Any:
        text = json.dumps(schema)
        if engine == "unconstrained":
            return None
        if engine == "noop_processor":
            return Timed(NoopProcessor())
        if engine == "llama_grammar":
            import llama_cpp
            import llama_cpp.llama_cpp as C

            g = llama_cpp.LlamaGrammar.from_json_schema(text, verbose=False)
            size = len(g._grammar.encode("utf-8"))
            if size > LLAMA_GRAMMAR_MAX_BYTES:
                raise RuntimeError(
                    f"GBNF of {size} bytes > {LLAMA_GRAMMAR_MAX_BYTES} (skipped: llama.cpp's grammar parser "
                    f"expands bounded repetitions into rules; see the notes)"
                )
            # llama-cpp-python passes llama_sampler_init_grammar's result to the sampler chain
            # unchecked (NULL on a parse error would crash), so parse it once here as the check
            smp = C.llama_sampler_init_grammar(self.llm._model.vocab, g._grammar.encode("utf-8"), g._root.encode("utf-8"))
            if not smp:
                raise RuntimeError("llama.cpp's grammar parser rejected the GBNF from LlamaGrammar.from_json_schema")
            C.llama_sampler_free(smp)
            return g
        if engine == "zapspec":
            from zapspec.contrib.llama_cpp import LogitsProcessor

            compiled = self.zcompiler.compile_json_schema(text, any_whitespace=False, separators=(",", ":"), strict_mode=False, one_of="require_disjoint")
            return Timed(LogitsProcessor(compiled))
        if engine == "llguidance":
            import llguidance

            grammar = llguidance.LLMatcher.grammar_from_json_schema(text, defaults={"whitespace_flexible": False})
            m = llguidance.LLMatcher(self.lltok, grammar, log_level=0)
            if m.is_error():
                raise RuntimeError(m.get_error())
            return Timed(LLGuidanceProcessor(m, self.n_vocab))
        if engine == "xgrammar":
            compiled = self.xcompiler.compile_json_schema(text, any_whitespace=False, separators=(",", ":"), strict_mode=False)
            return Timed(XGrammarProcessor(compiled, self.n_vocab))
        raise ValueError(engine)


def build_prompt(schema: Any) -> str:
    text = json.dumps(schema)
    if len(text) > SCHEMA_PROMPT_CHARS:
        text = text[:SCHEMA_PROMPT_CHARS] + " ..."
    # SmolLM2's chat template (ChatML)
    return (
        f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n"
        f"<|im_start|>user\n{USER_PREFIX}{text}<|im_end|>\n"
        f"<|im_start|>assistant\n"
    )


def generate(llm: Any, prompt: str, args: argparse.Namespace, constraint: Any, engine: str) -> Dict[str, Any]:
    from llama_cpp import LogitsProcessorList, StoppingCriteriaList

    stamps: List[float] = []

    def stamp(input_ids: Any, logits: Any) -> bool:  # called once per sampled token (EOS included)
        stamps.append(time.perf_counter())
        return False

    kw: Dict[str, Any] = {}
    if engine == "llama_grammar":
        kw["grammar"] = constraint
    elif constraint is not None:
        kw["logits_processor"] = LogitsProcessorList([constraint])
    llm.reset()  # fresh KV cache: every engine pays the prefill
    chunks: List[str] = []
    finish = None
    first_chunk = None
    t0 = time.perf_counter()
    stream = llm.create_completion(
        prompt,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_k=40,
        top_p=0.95,
        min_p=0.05,
        repeat_penalty=1.0,
        seed=args.seed,
        stream=True,
        stop=[],
        stopping_criteria=StoppingCriteriaList([stamp]),
        **kw,
    )
    for ch in stream:
        if first_chunk is None:
            first_chunk = time.perf_counter()
        c = ch["choices"][0]
        chunks.append(c.get("text", ""))
        if c.get("finish_reason"):
            finish = c["finish_reason"]
    t_end = time.perf_counter()
    # llama-cpp-python calls the stopping criteria once per sampled token and once more after
    # its loop (create_completion), so the last stamp is no token
    n = max(len(stamps) - 1, 0)
    total = t_end - t0
    ttft = (stamps[0] - t0) if stamps else None
    decode = (total - ttft) if ttft is not None else None
    r: Dict[str, Any] = {
        "tokens": n,
        "total_s": total,
        "ttft_s": ttft,
        "first_chunk_s": (first_chunk - t0) if first_chunk else None,
        "decode_s": decode,
        "decode_tok_s": ((n - 1) / decode) if decode and n > 1 else None,
        "overall_tok_s": (n / total) if total > 0 else None,
        "finish_reason": finish,
        "text": "".join(chunks),
    }
    if isinstance(constraint, Timed):
        calls = constraint.calls
        r["processor_calls"] = len(calls)
        r["processor_s"] = sum(calls)
        r["processor_first_ms"] = calls[0] * 1e3 if calls else None
        r["processor_mean_us"] = (sum(calls[1:]) / (len(calls) - 1) * 1e6) if len(calls) > 1 else None
        r["grammar_share"] = (sum(calls[1:]) / decode) if decode and len(calls) > 1 else None
        r["processor_error"] = constraint.error
    return r


def worker(args: argparse.Namespace) -> int:
    out = Path(args.out)
    ckpt = out / "e2e_llama_cpp.partial.jsonl"
    inflight = out / "e2e_llama_cpp.inflight.json"
    done = set()
    if ckpt.exists():
        for line in ckpt.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                if rec.get("kind") == "result":
                    done.add((rec["schema"], rec["engine"]))

    patch_llama_cpp()
    from llama_cpp import Llama

    t0 = time.perf_counter()
    llm = Llama(
        model_path=args.model,
        n_ctx=2048,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        seed=args.seed,
        verbose=False,
        logits_all=False,
    )
    load_s = time.perf_counter() - t0
    engines = Engines(llm, args)
    # warm-up (not recorded): the first decode after loading is slower
    for _ in llm.create_completion(build_prompt({"type": "object"}), max_tokens=8, temperature=0.0, stream=True):
        pass
    with ckpt.open("a") as f:
        f.write(json.dumps({"kind": "worker", "pid": os.getpid(), "load_s": load_s, "setup_ms": engines.setup_ms, "versions": engines.versions}) + "\n")

    files = pick_schemas(Path(args.data), args.schemas, args.seed)
    for i, path in enumerate(files, 1):
        doc = json.loads(path.read_text())
        schema = doc["schema"]
        prompt = build_prompt(schema)
        line = []
        for engine in args.engine_list:
            key = (path.name, engine)
            if key in done:
                continue
            inflight.write_text(json.dumps({"schema": path.name, "engine": engine, "phase": "compile"}))
            rec: Dict[str, Any] = {"kind": "result", "schema": path.name, "engine": engine, "index": i}
            t0 = time.perf_counter()
            try:
                constraint = engines.compile(engine, schema)
                rec["compile_ms"] = (time.perf_counter() - t0) * 1e3
                rec["status"] = "ok"
            except Exception as e:  # noqa: BLE001 - a refusal is a result
                rec["compile_ms"] = (time.perf_counter() - t0) * 1e3
                rec["status"] = "refused"
                rec["reason"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
                constraint = None
            if rec["status"] == "ok":
                inflight.write_text(json.dumps({"schema": path.name, "engine": engine, "phase": "generate"}))
                try:
                    rec.update(generate(llm, prompt, args, constraint, engine))
                except Exception as e:  # noqa: BLE001
                    rec["status"] = "error"
                    rec["reason"] = f"{type(e).__name__}: {e}"[:300]
                    traceback.print_exc()
                if rec["status"] == "ok":
                    txt = rec["text"]
                    try:
                        inst = json.loads(txt)
                        rec["json_valid"] = True
                    except Exception:  # noqa: BLE001
                        rec["json_valid"] = False
                    if rec["json_valid"]:
                        v = validate(schema, inst, formats=False)
                        vf = validate(schema, inst, formats=True)
                        rec["schema_valid"], rec["schema_error"] = v["valid"], v["error"]
                        rec["schema_valid_formats"], rec["schema_error_formats"] = vf["valid"], vf["error"]
                    else:
                        rec["schema_valid"] = rec["schema_valid_formats"] = False
                        na = validate(schema, None, formats=False)
                        if na["valid"] is None:  # jsonschema can't use the schema at all
                            rec["schema_valid"] = rec["schema_valid_formats"] = None
                        rec["schema_error"] = "not JSON"
                    if len(txt) > 4000:
                        rec["text"] = txt[:4000] + "...[truncated]"
            with ckpt.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            inflight.unlink(missing_ok=True)
            line.append(short(rec))
        print(f"[{i}/{len(files)}] {path.name}: " + (" | ".join(line) if line else "(done before a restart)"), flush=True)
    return 0


def short(rec: Dict[str, Any]) -> str:
    e = rec["engine"]
    if rec["status"] != "ok":
        return f"{e} {rec['status'].upper()}"
    sv = {True: "S", False: "-", None: "n/a"}[rec.get("schema_valid")]
    r = rec.get("decode_tok_s")
    if rec.get("processor_error"):
        e += " PROCESSOR-ERROR"
    return f"{e} {rec['tokens']}t {r:.1f}t/s {'J' if rec['json_valid'] else '-'}{sv} {rec['finish_reason']}" if r else f"{e} {rec['tokens']}t"


# ----------------------------------------------------------------------------------------------
# supervisor and report


def supervise(args: argparse.Namespace, argv: List[str]) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "e2e_llama_cpp.partial.jsonl"
    inflight = out / "e2e_llama_cpp.inflight.json"
    if not args.resume:
        ckpt.unlink(missing_ok=True)
        inflight.unlink(missing_ok=True)
    for attempt in range(30):
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--worker", "--resume"]
        proc = subprocess.Popen(cmd)
        timed_out = None
        while True:
            try:
                rc = proc.wait(timeout=2.0)
                break
            except subprocess.TimeoutExpired:
                pass
            try:
                st = inflight.stat()
                phase = json.loads(inflight.read_text()).get("phase")
            except (OSError, ValueError):
                continue
            limit = args.compile_timeout if phase == "compile" else args.generate_timeout
            if time.time() - st.st_mtime > limit:
                timed_out = f"timed out (> {limit:.0f} s in {phase}; worker killed)"
                proc.kill()
                rc = proc.wait()
                break
        if rc == 0:
            break
        what = json.loads(inflight.read_text()) if inflight.exists() else None
        sig = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        print(f"worker died ({sig}) in {what}", flush=True)
        if what is None:
            print("no (schema, engine) in flight: giving up", flush=True)
            return 1
        with ckpt.open("a") as f:
            f.write(
                json.dumps(
                    {
                        "kind": "result",
                        "schema": what["schema"],
                        "engine": what["engine"],
                        "status": "timeout" if timed_out else "crashed",
                        "reason": timed_out or f"the process died ({sig}) during {what['phase']}",
                    }
                )
                + "\n"
            )
        inflight.unlink(missing_ok=True)
    else:
        return 1
    return 0


def pct(xs: List[float], q: float) -> Optional[float]:
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def mean(xs: List[Optional[float]]) -> Optional[float]:
    ys = [x for x in xs if x is not None]
    return statistics.fmean(ys) if ys else None


def fmt(x: Optional[float], spec: str = ".1f", na: str = "–") -> str:
    return na if x is None else format(x, spec)


def summarize(args: argparse.Namespace, records: List[Dict[str, Any]], schemas: List[str]) -> Dict[str, Any]:
    by = {(r["schema"], r["engine"]): r for r in records}
    summary: Dict[str, Any] = {}
    unc = {s: by.get((s, "unconstrained")) for s in schemas}
    for e in args.engine_list:
        rs = [by[(s, e)] for s in schemas if (s, e) in by]
        ok = [r for r in rs if r["status"] == "ok"]
        refused = [r for r in rs if r["status"] != "ok"]
        tokens = sum(r["tokens"] for r in ok)
        dec_tok = sum(r["tokens"] - 1 for r in ok if r.get("decode_s") and r["tokens"] > 1)
        dec_s = sum(r["decode_s"] for r in ok if r.get("decode_s") and r["tokens"] > 1)
        tot_s = sum(r["total_s"] for r in ok)
        ttfts = [r["ttft_s"] * 1e3 for r in ok if r.get("ttft_s") is not None]
        if e == "llama_grammar":
            shares = []
            for r in ok:
                u = unc.get(r["schema"])
                if u and u.get("status") == "ok" and u.get("decode_tok_s") and r.get("decode_tok_s"):
                    shares.append(1 - r["decode_tok_s"] / u["decode_tok_s"])
            share = mean(shares)
        elif e == "unconstrained":
            share = 0.0
        else:
            share = mean([r.get("grammar_share") for r in ok])
        # per-schema ratio of decode rates to unconstrained (same schema, same prompt)
        ratios = []
        pe = [0, 0.0]  # paired aggregate over the schemas both generated for: tokens, seconds
        pu = [0, 0.0]
        for r in ok:
            u = unc.get(r["schema"])
            if u and u.get("status") == "ok" and u.get("decode_tok_s") and r.get("decode_tok_s"):
                ratios.append(r["decode_tok_s"] / u["decode_tok_s"])
                pe[0] += r["tokens"] - 1
                pe[1] += r["decode_s"]
                pu[0] += u["tokens"] - 1
                pu[1] += u["decode_s"]
        summary[e] = {
            "attempted": len(rs),
            "refused": len(refused),
            "refusals": {r["schema"]: f"{r['status']}: {r.get('reason', '')}" for r in refused},
            "generated": len(ok),
            "tokens": tokens,
            "decode_tok_s_mean": mean([r.get("decode_tok_s") for r in ok]),
            "decode_tok_s_aggregate": (dec_tok / dec_s) if dec_s else None,
            "overall_tok_s_aggregate": (tokens / tot_s) if tot_s else None,
            "ttft_ms_p50": pct(ttfts, 0.5),
            "ttft_ms_mean": mean(ttfts),
            "compile_ms_mean": mean([r.get("compile_ms") for r in ok]),
            "compile_ms_p50": pct([r["compile_ms"] for r in ok if r.get("compile_ms") is not None], 0.5),
            "compile_ms_max": max([r["compile_ms"] for r in ok if r.get("compile_ms") is not None], default=None),
            "grammar_share_mean": share,
            "processor_us_per_step_mean": mean([r.get("processor_mean_us") for r in ok]),
            "processor_first_ms_mean": mean([r.get("processor_first_ms") for r in ok]),
            "processor_errors": {r["schema"]: r["processor_error"] for r in ok if r.get("processor_error")},
            "ended_with_stop": sum(1 for r in ok if r.get("finish_reason") == "stop"),
            "json_valid": sum(1 for r in ok if r.get("json_valid")),
            "schema_valid": sum(1 for r in ok if r.get("schema_valid") is True),
            "schema_valid_formats": sum(1 for r in ok if r.get("schema_valid_formats") is True),
            "schema_na": sum(1 for r in ok if r.get("schema_valid") is None),
            "decode_rate_ratio_aggregate": ((pe[0] / pe[1]) / (pu[0] / pu[1])) if pe[1] and pu[1] and pu[0] else None,
            "paired_schemas": len(ratios),
            "decode_rate_ratio_per_schema_median": pct(ratios, 0.5),
        }
    return summary


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_note(args: argparse.Namespace) -> str:
    cpu = cpu_name()
    return f"{cpu}, {os.cpu_count()} logical cores (a 2-core VM), llama.cpp threads = {args.threads} (decode and batch), grammar compiler threads = {args.threads}"


def report(args: argparse.Namespace, argv: List[str]) -> None:
    out = Path(args.out)
    ckpt = out / "e2e_llama_cpp.partial.jsonl"
    if args.report_only:
        old = json.loads((out / "e2e_llama_cpp.json").read_text())
        lines = [dict(r, kind="result") for r in old["results"]] + [dict(w, kind="worker") for w in old["workers"]]
        argv = old["command"].split()[2:]
        reparsed = parse_args(argv)
        reparsed.out, reparsed.notes, reparsed.report_only = args.out, args.notes, True
        args = reparsed
    else:
        lines = [json.loads(l) for l in ckpt.read_text().splitlines() if l.strip()]
    records = {}
    workers = []
    for r in lines:
        if r.get("kind") == "result":
            records[(r["schema"], r["engine"])] = r
        elif r.get("kind") == "worker":
            workers.append(r)
    files = pick_schemas(Path(args.data), args.schemas, args.seed)
    schemas = [p.name for p in files]
    recs = [records[(s, e)] for s in schemas for e in args.engine_list if (s, e) in records]
    summary = summarize(args, recs, schemas)
    date = old["date"] if args.report_only else subprocess.run(["date"], capture_output=True, text=True).stdout.strip()
    command = "python examples/python/e2e_llama_cpp.py " + " ".join(argv) if argv else "python examples/python/e2e_llama_cpp.py"
    versions = workers[-1]["versions"] if workers else {}
    result = {
        "command": command,
        "date": date,
        "machine": machine_note(args),
        "config": {k: v for k, v in vars(args).items() if k not in ("worker", "report_only", "notes", "resume", "no_supervise")},
        "model": str(Path(args.model).name),
        "prompt": {"system": SYSTEM_PROMPT, "user_prefix": USER_PREFIX, "schema_chars_max": SCHEMA_PROMPT_CHARS},
        "versions": versions,
        "workers": workers,
        "schemas": schemas,
        "summary": summary,
        "results": recs,
    }
    (out / "e2e_llama_cpp.json").write_text(json.dumps(result, indent=1))
    plot(args, summary, out / "e2e_llama_cpp.png")
    md = markdown(args, result)
    if args.notes:
        md += "\n" + Path(args.notes).read_text()
    (out / "e2e_llama_cpp.md").write_text(md)
    ckpt.unlink(missing_ok=True)
    print(f"wrote {out / 'e2e_llama_cpp.md'}, {out / 'e2e_llama_cpp.json'}, {out / 'e2e_llama_cpp.png'}")


def table(args: argparse.Namespace, summary: Dict[str, Any], n: int) -> str:
    hdr = (
        "| engine | attempted | refused | generated | tokens | decode tok/s (mean over schemas) | decode tok/s (aggregate) "
        "| overall tok/s (aggregate) | decode rate / unconstrained (aggregate) | (per-schema median) | TTFT p50 ms | TTFT mean ms "
        "| compile mean ms | grammar share of a step | ended with stop | valid JSON | schema-valid | schema-valid (formats asserted) |"
    )
    rows = [hdr, "|" + "|".join(["---"] * (hdr.count("|") - 1)) + "|"]
    for e in args.engine_list:
        s = summary[e]
        share = s["grammar_share_mean"]
        share_s = "0" if e == "unconstrained" else (fmt(share * 100, ".2f") + "%" if share is not None else "–")
        if e == "llama_grammar" and share is not None:
            share_s += " (est.)"
        g = s["generated"]
        rows.append(
            f"| {e} | {s['attempted']} | {s['refused']} | {g} | {s['tokens']} | {fmt(s['decode_tok_s_mean'])} | {fmt(s['decode_tok_s_aggregate'])} "
            f"| {fmt(s['overall_tok_s_aggregate'])} | {fmt(s['decode_rate_ratio_aggregate'], '.3f')} | {fmt(s['decode_rate_ratio_per_schema_median'], '.3f')} "
            f"| {fmt(s['ttft_ms_p50'], '.0f')} | {fmt(s['ttft_ms_mean'], '.0f')} | {fmt(s['compile_ms_mean'], '.2f')} | {share_s} "
            f"| {s['ended_with_stop']}/{g} | {s['json_valid']}/{g} | {s['schema_valid']}/{g} | {s['schema_valid_formats']}/{g} |"
        )
    return "\n".join(rows)


def markdown(args: argparse.Namespace, result: Dict[str, Any]) -> str:
    summary = result["summary"]
    n = len(result["schemas"])
    md = [
        "# End-to-end race on llama-cpp-python: SmolLM2-135M-Instruct (Q4_1 GGUF, CPU), MaskBench schemas",
        "",
        f"Command (from the repository root): `{result['command']}`",
        "",
        f"Machine: {result['machine']}. Date: {result['date']}.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + ".",
        "",
        f"{n} MaskBench schemas (file names sorted, shuffled with seed {args.seed}, the first {n}; none skipped up front), "
        f"at most {args.max_tokens} generated tokens, temperature {args.temperature} ({'greedy' if args.temperature == 0 else 'sampled'}), seed {args.seed}. "
        "The engines run interleaved: for each schema all engines one after the other on the same loaded `Llama` "
        "(n_ctx 2048), so that the load of other processes on the machine (a compile may run beside it) hits every engine alike; "
        "timings are still noisy.",
        "",
        "## Summary",
        "",
        table(args, summary, n),
        "",
        "## What the columns mean",
        "",
        "- *attempted*: schemas given to the engine (all of them); *refused*: its compile step raised (or the process crashed), "
        "listed below with the reasons; *generated*: the outputs there are (the rest of the columns are over these).",
        "- *tokens*: sampled tokens, the end-of-generation token included (stop tokens: `<|endoftext|>` 0, `<|im_end|>` 2).",
        "- Each generation starts with an empty KV cache, so the time to first token (*TTFT*) includes the prompt's prefill "
        "(the ChatML prompt with the schema text, up to 2000 characters of it) and the first mask. TTFT is measured to the first "
        "sampled token (a `stopping_criteria` hook that llama-cpp-python calls right after each sample); the time to the first "
        "streamed chunk is in the JSON too.",
        "- *decode tok/s* = (tokens − 1) / (total generation wall time − TTFT) per output; *mean over schemas* averages "
        "those rates, *aggregate* divides the summed tokens by the summed decode times. *overall tok/s* = tokens / total wall "
        "time (prefill included). *decode rate / unconstrained*: paired, over the schemas both the engine and "
        "unconstrained generated for: the engine's aggregate decode rate there over unconstrained's aggregate decode rate "
        "there, and the median over those schemas of the per-schema ratio (same schema, same prompt). The engines generate different texts "
        "of different lengths, so the ratio also moves with the output length (later tokens attend over a longer context).",
        "- *compile*: the schema to a constraint ready for the first mask (zapspec `compile_json_schema` + the `LogitsProcessor` "
        "(matcher, bitmask); llguidance `grammar_from_json_schema` + `LLMatcher(...)`; xgrammar `compile_json_schema` + "
        "`GrammarMatcher` and bitmask; llama.cpp `LlamaGrammar.from_json_schema` (Python, JSON Schema → GBNF) + one "
        "`llama_sampler_init_grammar` parse as a check — llama-cpp-python parses the GBNF again inside the generation call, "
        "so llama.cpp pays its parse twice, once here and once in its TTFT). Tokenizer set-up per engine (once, not per schema): "
        + ", ".join(f"{k} {v:.0f} ms" for k, v in (result["workers"][-1]["setup_ms"].items() if result["workers"] else []))
        + ".",
        "- *grammar share of a step*: for the logits-processor engines, the time inside the processor's `__call__` (accept the "
        "new token, fill the bitmask, mask the logits) summed over the decode steps, over the decode time; the mean over "
        "outputs. For llama.cpp's grammar (a sampler inside llama.cpp, not timeable from Python) it is *estimated* as "
        "1 − (its decode rate / the unconstrained decode rate on the same schema), mean over schemas; it can be negative "
        "when the noise or the shorter context outweighs it.",
        "- *valid JSON*: `json.loads` accepts the text; *schema-valid*: `jsonschema` (the validator `validator_for` picks from "
        "`$schema`, Draft 2020-12 if none) finds no error, with `format` as an annotation (the JSON Schema default); "
        "*formats asserted*: the same with the validator's format checker. An output whose schema jsonschema can't use counts as "
        "not schema-valid (n/a; the count of those is in the JSON).",
        "",
        "## How each engine is driven",
        "",
        "- Prompt: `<|im_start|>system\\n" + SYSTEM_PROMPT + "<|im_end|>\\n<|im_start|>user\\n" + USER_PREFIX.replace("\n", "\\n")
        + "<schema JSON><|im_end|>\\n<|im_start|>assistant\\n` (SmolLM2's ChatML template) through `Llama.create_completion(stream=True)`.",
        "- llama.cpp: `use_extra_bufts = False` (patched into `llama_model_default_params`: this VM's AMX buffers crash on the "
        "first decode).",
        "- JSON whitespace: compact for zapspec (`separators=(\",\", \":\")`), xgrammar (`any_whitespace=False`, same "
        "separators) and llguidance (`whitespace_flexible: False`); llama.cpp's grammar is whatever its JSON Schema converter "
        "writes (it allows some whitespace). zapspec and xgrammar with `strict_mode=False` (additionalProperties defaults to "
        "true, as in JSON Schema); llguidance's defaults (also JSON Schema's semantics; unknown keywords are errors).",
        "- The logits processors: llama-cpp-python calls `processor(input_ids, scores)` once per sampled token, `scores` being "
        "a float32 view with a 12-byte stride into llama.cpp's candidate array, and copies what it returns back into that array. "
        "zapspec: `zapspec.contrib.llama_cpp.LogitsProcessor` as shipped (its Rust masking kernel wants a contiguous array, so on "
        "this strided view it takes its numpy fallback). llguidance: `llguidance.numpy.fill_next_token_bitmask` + "
        "`apply_token_bitmask_inplace` on the view, tokenizer from `llguidance.llamacpp.lltokenizer_from_vocab`. xgrammar: "
        "`TokenizerInfo(<the GGUF's token bytes as zapspec reads them>, VocabType.RAW, stop_token_ids=[0, 2])`, "
        "`fill_next_token_bitmask`, then the logits copied into a contiguous buffer and masked by `xgr.apply_token_bitmask_inplace` "
        "(its CPU kernel ignores the element stride of a 1-D tensor, so it can't mask the view in place). Each processor "
        "allocates its bitmask once per generation.",
        "- xgrammar's compiler with `max_threads` = the threads setting; zapspec's `GrammarCompiler(max_threads=...)` likewise.",
        "",
    ]
    ref = [(e, s["refusals"]) for e, s in summary.items() if s["refusals"]]
    md += ["## Refusals", ""]
    if not ref:
        md.append("None.")
    for e, rs in ref:
        md.append(f"**{e}** ({len(rs)}):")
        md.append("")
        for sch, why in rs.items():
            md.append(f"- `{sch}`: {why}")
        md.append("")
    perr = [(e, s["processor_errors"]) for e, s in summary.items() if s["processor_errors"]]
    if perr:
        md += ["", "## Errors inside processors (the logits then went unmasked)", ""]
        for e, rs in perr:
            for sch, why in rs.items():
                md.append(f"- {e}, `{sch}`: {why}")
        md.append("")
    md += ["", "## Per engine: processor cost", "", "| engine | processor µs per decode step (mean) | first call ms (mean) | compile p50 ms | compile max ms |", "|---|---|---|---|---|"]
    for e in args.engine_list:
        s = summary[e]
        md.append(
            f"| {e} | {fmt(s['processor_us_per_step_mean'], '.0f')} | {fmt(s['processor_first_ms_mean'], '.2f')} | {fmt(s['compile_ms_p50'], '.2f')} | {fmt(s['compile_ms_max'], '.1f')} |"
        )
    md += ["", "## Per schema", "", "decode tok/s / tokens, J = valid JSON, S = schema-valid, finish (stop/length); R = refused; E! = the processor raised (the logits went unmasked from then on).", ""]
    md.append("| # | schema | " + " | ".join(args.engine_list) + " |")
    md.append("|---|---|" + "---|" * len(args.engine_list))
    by = {(r["schema"], r["engine"]): r for r in result["results"]}
    for i, s in enumerate(result["schemas"], 1):
        cells = []
        for e in args.engine_list:
            r = by.get((s, e))
            if r is None:
                cells.append("")
            elif r["status"] != "ok":
                cells.append("R" if r["status"] == "refused" else r["status"])
            else:
                jv = "J" if r.get("json_valid") else "-"
                sv = {True: "S", False: "-", None: "?"}[r.get("schema_valid")]
                cells.append(f"{fmt(r.get('decode_tok_s'))} / {r['tokens']} {jv}{sv} {r.get('finish_reason')}" + (" E!" if r.get("processor_error") else ""))
        md.append(f"| {i} | `{s}` | " + " | ".join(cells) + " |")
    md.append("")
    md.append("![tokens/s ratio and validity per engine](e2e_llama_cpp.png)")
    md.append("")
    return "\n".join(md)


def plot(args: argparse.Namespace, summary: Dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = args.engine_list
    n = args.schemas
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    import numpy as np

    x = np.arange(len(engines))
    ratios = [summary[e]["decode_rate_ratio_aggregate"] or 0 for e in engines]
    med = [summary[e]["decode_rate_ratio_per_schema_median"] or 0 for e in engines]
    w2 = 0.38
    b1 = a1.bar(x - w2 / 2, ratios, w2, label="aggregate (paired schemas)", color="#57a")
    b2 = a1.bar(x + w2 / 2, med, w2, label="median of per-schema ratios", color="#9bd")
    for bars, vals in ((b1, ratios), (b2, med)):
        for b, r in zip(bars, vals):
            a1.text(b.get_x() + b.get_width() / 2, r, f"{r:.2f}", ha="center", va="bottom", fontsize=8)
    a1.axhline(1.0, color="k", lw=0.8, ls="--")
    a1.set_xticks(x, engines, rotation=20)
    a1.set_ylabel("decode tok/s ÷ unconstrained")
    a1.set_title("decode rate relative to unconstrained (same schemas)")
    a1.legend(fontsize=8, loc="lower left")
    w = 0.27
    jv = [summary[e]["json_valid"] / n for e in engines]
    sv = [summary[e]["schema_valid"] / n for e in engines]
    rf = [summary[e]["refused"] / n for e in engines]
    a2.bar(x - w, jv, w, label="valid JSON")
    a2.bar(x, sv, w, label="schema-valid")
    a2.bar(x + w, rf, w, label="refused", color="#c55")
    a2.set_xticks(x, engines, rotation=20)
    a2.set_ylim(0, 1.05)
    a2.set_ylabel(f"share of the {n} schemas")
    a2.set_title("validity (of all schemas)")
    a2.legend(fontsize=8)
    fig.suptitle(f"SmolLM2-135M Q4_1 on llama-cpp-python, {n} MaskBench schemas, ≤{args.max_tokens} tokens, T={args.temperature}, {args.threads} thread(s)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    argv = sys.argv[1:]
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    clean: List[str] = []
    skip = False
    for a in argv:  # the run's own arguments (the command the report states)
        if skip:
            skip = False
        elif a == "--notes":
            skip = True
        elif a not in ("--resume", "--no-supervise", "--report-only") and not a.startswith("--notes="):
            clean.append(a)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.report_only:
        report(args, clean)
        return 0
    if args.no_supervise:
        if not args.resume:
            (Path(args.out) / "e2e_llama_cpp.partial.jsonl").unlink(missing_ok=True)
        rc = worker(args)
    else:
        rc = supervise(args, clean)
    if rc == 0:
        report(args, clean)
    return rc


if __name__ == "__main__":
    sys.exit(main())
