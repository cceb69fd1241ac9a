#!/usr/bin/env python3
"""llama.cpp's side of the race (``examples/src/bin/race.rs``): SmolLM2-135M-Instruct
(GGUF, CPU) on llama-cpp-python, on the tasks the Rust binary wrote with
``--dump-tasks`` (the same prompt token ids, schemas and per-task seeds):

- ``(a) llama.cpp``: unconstrained, every task;
- ``(b) llama.cpp grammar``: llama.cpp's own grammar sampler
  (``LlamaGrammar.from_json_schema``, passed as ``grammar=``), schema tasks only.

Each generation: ``Llama.reset()`` (an empty KV cache, so the prompt's prefill
counts in its time), then ``Llama.generate`` on the prompt's token ids until an
end-of-generation token or ``--max-tokens`` output tokens; temperature 0 is
greedy, otherwise pure temperature sampling (top-k, top-p and min-p off) seeded
with the task's seed. Time: the whole loop; TTFT: to the first token the
generator yields. Forwards: ``llama_decode`` calls (one for the prompt, then one
per fed token).

The run is supervised (as ``e2e_llama_cpp.py``): a worker appends one JSON line per
(task, variant, temperature) to a checkpoint; if it dies (a crash inside
llama.cpp), the supervisor records the crash against the item in flight and
starts a new worker that goes on from there. The result, ``race_llama_cpp.json``
in ``--out``, is read by ``race --llama-json``.

Usage (from the repository root)::

    OUT=examples/results/race
    cargo run --profile release-fast -p examples --bin race -- --dump-tasks $OUT/race_tasks.json
    python examples/python/race_llama_cpp.py --tasks $OUT/race_tasks.json --out $OUT
    cargo run --profile release-fast -p examples --bin race -- --llama-json $OUT/race_llama_cpp.json --out $OUT
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_llama_cpp import Engines, cpu_name, patch_llama_cpp  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
UNCONSTRAINED = "(a) llama.cpp"
GRAMMAR = "(b) llama.cpp grammar"
ALL_VARIANTS = {"unconstrained": UNCONSTRAINED, "grammar": GRAMMAR}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", required=True, help="the task list written by `race --dump-tasks`")
    ap.add_argument("--max-tokens", type=int, default=None, help="output tokens at most (default: the task file's)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp n_threads and n_threads_batch (default: the task file's)")
    ap.add_argument("--temperature", default=None, help="comma list (default: the task file's)")
    ap.add_argument("--variants", default="unconstrained,grammar", help="comma list out of unconstrained,grammar")
    ap.add_argument("--model", default=None, help="GGUF model (default: the task file's)")
    ap.add_argument("--out", default=str(REPO / "examples" / "results" / "race"), help="output folder")
    ap.add_argument("--resume", action="store_true", help="go on from the checkpoint in --out")
    ap.add_argument("--no-supervise", action="store_true", help="run in this process (a crash ends the run)")
    ap.add_argument("--generate-timeout", type=float, default=300.0, help="seconds one item may take before the worker is killed")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    spec = json.loads(Path(args.tasks).read_text())
    args.spec = spec
    args.max_tokens = args.max_tokens if args.max_tokens is not None else spec["max_tokens"]
    args.threads = args.threads if args.threads is not None else spec["threads"]
    args.temps = [float(t) for t in args.temperature.split(",")] if args.temperature else [float(t) for t in spec["temperatures"]]
    if args.model is None:
        m = Path(spec["model"])
        args.model = str(m if m.is_absolute() else REPO / m)
    args.variant_list = []
    for v in (x.strip() for x in args.variants.split(",") if x.strip()):
        if v not in ALL_VARIANTS:
            ap.error(f"unknown variant {v!r}; known: {', '.join(ALL_VARIANTS)}")
        args.variant_list.append(v)
    args.seed = spec["seed"]  # Engines reads it
    return args


def items(args: argparse.Namespace) -> List[Dict[str, Any]]:
    """(task, variant, temperature) in run order: per task and temperature, the variants one after the other."""
    out = []
    for t in args.spec["tasks"]:
        for temp in args.temps:
            for v in args.variant_list:
                if v == "grammar" and t["family"] != "schema":
                    continue
                out.append({"task": t, "variant": ALL_VARIANTS[v], "temperature": temp})
    return out


def key(task_id: str, variant: str, temp: float) -> str:
    return f"{task_id}|{variant}|{temp}"


def generate(llm: Any, task: Dict[str, Any], temp: float, grammar: Any, args: argparse.Namespace) -> Dict[str, Any]:
    import llama_cpp

    prompt = [int(t) for t in task["prompt_tokens"]]
    vocab = llm._model.vocab
    out: List[int] = []
    eos = False
    llm.reset()  # an empty KV cache: the prefill counts
    llm.set_seed(int(task["seed"]) & 0xFFFFFFFF)
    t0 = time.perf_counter()
    first = None
    gen = llm.generate(
        prompt,
        top_k=0,
        top_p=1.0,
        min_p=0.0,
        temp=temp,
        repeat_penalty=1.0,
        grammar=grammar,
    )
    for tok in gen:
        if first is None:
            first = time.perf_counter()
        if llama_cpp.llama_vocab_is_eog(vocab, tok):
            eos = True
            break
        out.append(int(tok))
        if len(out) >= args.max_tokens:
            break
    gen.close()
    total = time.perf_counter() - t0
    n_batch = llm.n_batch
    prefill_calls = (len(prompt) + n_batch - 1) // n_batch
    # the generator feeds every yielded token back before sampling the next one; the
    # last yielded one (EOS, or the cap's) is never fed
    fed = len(out) if eos else max(len(out) - 1, 0)
    text = llm.detokenize(out, prev_tokens=prompt).decode("utf-8", errors="replace")
    return {
        "status": "ok",
        "tokens": len(out),
        "total_s": total,
        "ttft_s": (first - t0) if first is not None else None,
        "forwards": prefill_calls + fed,
        "stop": "eos" if eos else "length",
        "text": text,
        "output_tokens": out,
    }


def worker(args: argparse.Namespace) -> int:
    out = Path(args.out)
    ckpt = out / "race_llama_cpp.partial.jsonl"
    inflight = out / "race_llama_cpp.inflight.json"
    done = set()
    if ckpt.exists():
        for line in ckpt.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                if rec.get("kind") == "row":
                    done.add(key(rec["task"], rec["variant"], rec["temperature"]))

    patch_llama_cpp()
    from llama_cpp import Llama

    t0 = time.perf_counter()
    n_ctx = 4096
    llm = Llama(
        model_path=args.model,
        n_ctx=n_ctx,
        n_batch=n_ctx,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        seed=args.seed,
        verbose=False,
        logits_all=False,
    )
    load_s = time.perf_counter() - t0
    engines = Engines(llm, SimpleNamespace(engine_list=["llama_grammar"], threads=args.threads, model=args.model))
    # warm-up (not recorded): the first decode after loading is slower
    first_task = args.spec["tasks"][0] if args.spec["tasks"] else None
    if first_task is not None:
        for i, _ in enumerate(llm.generate([int(t) for t in first_task["prompt_tokens"]], temp=0.0)):
            if i >= 8:
                break
    with ckpt.open("a") as f:
        f.write(json.dumps({"kind": "worker", "pid": os.getpid(), "load_s": load_s, "versions": engines.versions, "n_ctx": n_ctx}) + "\n")

    todo = items(args)
    grammars: Dict[str, Any] = {}
    for i, it in enumerate(todo, 1):
        task, variant, temp = it["task"], it["variant"], it["temperature"]
        k = key(task["id"], variant, temp)
        if k in done:
            continue
        inflight.write_text(json.dumps({"task": task["id"], "variant": variant, "temperature": temp, "family": task["family"]}))
        rec: Dict[str, Any] = {"kind": "row", "task": task["id"], "family": task["family"], "variant": variant, "temperature": temp}
        grammar = None
        if variant == GRAMMAR:
            if task["id"] not in grammars:
                t1 = time.perf_counter()
                try:
                    grammars[task["id"]] = (engines.compile("llama_grammar", task["schema"]), None, time.perf_counter() - t1)
                except Exception as e:  # noqa: BLE001 - a refusal is a result
                    msg = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
                    grammars[task["id"]] = (None, f"{type(e).__name__}: {msg}", time.perf_counter() - t1)
            grammar, refusal, compile_s = grammars[task["id"]]
            rec["compile_s"] = compile_s
            if refusal is not None:
                rec["status"] = "refused"
                rec["reason"] = refusal
        if "status" not in rec:
            try:
                rec.update(generate(llm, task, temp, grammar, args))
            except Exception as e:  # noqa: BLE001
                rec["status"] = "error"
                rec["reason"] = f"{type(e).__name__}: {e}"[:300]
                traceback.print_exc()
        with ckpt.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        inflight.unlink(missing_ok=True)
        if rec["status"] == "ok":
            rate = rec["tokens"] / rec["total_s"] if rec["total_s"] > 0 else 0.0
            print(f"[{i}/{len(todo)}] {task['id']} {variant} T={temp}: {rec['tokens']} tokens, {rate:.1f} tok/s, {rec['stop']}", flush=True)
        else:
            print(f"[{i}/{len(todo)}] {task['id']} {variant} T={temp}: {rec['status']} {rec.get('reason', '')}", flush=True)
    return 0


def supervise(args: argparse.Namespace, argv: List[str]) -> int:
    out = Path(args.out)
    ckpt = out / "race_llama_cpp.partial.jsonl"
    inflight = out / "race_llama_cpp.inflight.json"
    if not args.resume:
        ckpt.unlink(missing_ok=True)
        inflight.unlink(missing_ok=True)
    rc = 1
    for _attempt in range(30):
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *argv, "--worker", "--resume"])
        timed_out = None
        while True:
            try:
                rc = proc.wait(timeout=2.0)
                break
            except subprocess.TimeoutExpired:
                pass
            try:
                st = inflight.stat()
            except OSError:
                continue
            if time.time() - st.st_mtime > args.generate_timeout:
                timed_out = f"timed out (> {args.generate_timeout:.0f} s; worker killed)"
                proc.kill()
                rc = proc.wait()
                break
        if rc == 0:
            return 0
        # the worker died: charge the item in flight and go on
        try:
            it = json.loads(inflight.read_text())
        except (OSError, ValueError):
            print(f"worker exited with {rc} outside an item; giving up", file=sys.stderr)
            return rc
        rec = {"kind": "row", **it, "status": "crashed", "reason": timed_out or f"worker exited with {rc}"}
        with ckpt.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        inflight.unlink(missing_ok=True)
        print(f"{it['task']} {it['variant']} T={it['temperature']}: {rec['reason']}; restarting the worker", file=sys.stderr)
    return rc


def machine_note(threads: int) -> str:
    return f"{cpu_name()}, {os.cpu_count()} logical cores, llama.cpp threads = {threads} (decode and batch)"


def write_result(args: argparse.Namespace, argv: List[str]) -> None:
    out = Path(args.out)
    ckpt = out / "race_llama_cpp.partial.jsonl"
    rows: Dict[str, Dict[str, Any]] = {}
    workers = []
    for line in ckpt.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") == "row":
            r.pop("kind")
            rows[key(r["task"], r["variant"], r["temperature"])] = r
        elif r.get("kind") == "worker":
            workers.append(r)
    ordered = [rows[k] for k in (key(i["task"]["id"], i["variant"], i["temperature"]) for i in items(args)) if k in rows]
    result = {
        "command": "python examples/python/race_llama_cpp.py " + " ".join(argv),
        "machine": machine_note(args.threads),
        "versions": workers[-1]["versions"] if workers else {},
        "config": {"max_tokens": args.max_tokens, "threads": args.threads, "temperatures": args.temps, "model": Path(args.model).name, "tasks": args.tasks},
        "workers": workers,
        "rows": ordered,
    }
    path = out / "race_llama_cpp.json"
    path.write_text(json.dumps(result, indent=1))
    ckpt.unlink(missing_ok=True)
    print(f"wrote {path} ({len(ordered)} rows)")


def main() -> int:
    argv = sys.argv[1:]
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    clean = [a for a in argv if a not in ("--resume", "--no-supervise")]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.no_supervise:
        if not args.resume:
            (Path(args.out) / "race_llama_cpp.partial.jsonl").unlink(missing_ok=True)
        rc = worker(args)
    else:
        rc = supervise(args, clean)
    if rc == 0:
        write_result(args, clean)
    return rc


if __name__ == "__main__":
    sys.exit(main())
