#!/usr/bin/env python3
"""MaskBench from Python: zapspec beside llguidance and xgrammar.

Same tokenizer, same schemas, same token ids, one compile thread per engine,
each engine in its own child process (run one after the other), so that the
peak RSS of each engine is its own.

Usage (from the repository root, in /work/venv)::

    python examples/python/maskbench.py --every 10
    python examples/python/maskbench.py --every 20 --tokenizer smollm2
    python examples/python/maskbench.py --every 50 --engines zapspec,xgrammar --name quick

Options: ``--data DIR`` (MaskBench JSON files: ``{"schema", "tests": [{"valid",
"data"}]}``), ``--every K`` (every K-th file in sorted order), ``--limit N``,
``--engines``, ``--tokenizer o200k|smollm2``, ``--seed`` (which disagreements
are diagnosed in detail), ``--timeout-ms`` (per schema: compile and all walks;
a child past it is killed and restarted at the next schema), ``--out``,
``--name`` (stem of ``<name>.md``, ``<name>.json``, ``<name>.png``).

Protocol, per schema and engine:

* **TTFM**: compile the schema (``separators=(",", ":")``, no whitespace,
  ``strict_mode=False`` = JSON Schema's open objects), create a matcher and
  fill the first mask into a preallocated ``int32`` bitmask. The engine's
  tokenizer / compiler construction is done once before, reported apart.
* For each test instance: compact JSON (``json.dumps(inst, separators=(",",
  ":"), ensure_ascii=False)``), tokenized once by the parent (o200k: tiktoken
  ``encode_ordinary``, checked against ``zapspec.TokenizerInfo.encode``;
  SmolLM2: ``zapspec.TokenizerInfo.from_gguf(...).encode``). Then for each
  token: fill the mask (**TBM**, ``perf_counter_ns`` around the engine's fill
  call only), check the token's bit, accept it; after the last token one more
  mask (also a TBM), whose stop-token bit must be set, and the stop token must
  be accepted.
* Object keys: all three engines emit declared ``properties`` in schema order.
  An instance (valid or invalid) that is rejected is walked again with its
  keys reordered to the schema's ``properties`` order (recursively, through
  local ``$ref``, ``allOf`` parts and the ``anyOf``/``oneOf`` branch the value
  is valid under, ``items``), then with the parts' and branch's keys before
  the schema's own (xgrammar's order), when that changes its text. A valid
  instance accepted only then is a *key-order* rejection, not a false
  rejection; an invalid instance accepted whole in any of these orders is
  *wrongly accepted* (a soundness issue, or an unenforced keyword).
* Masks are also compared across engines: at every step, a CRC32 and the
  popcount of the mask restricted to ordinary token ids (special / stop ids
  and ids past the tokenizer excluded). Steps where two engines walked the
  same prefix but hold different masks are counted, and a few are diagnosed
  in the parent (the token sets that differ, decoded).
"""

from __future__ import annotations

import argparse
import collections
import gc
import glob
import json
import os
import pickle
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

ENGINES = ("zapspec", "llguidance", "xgrammar")
SMOLLM2_GGUF = "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------
# tokenizers


def tiktoken_encoding(name: str = "o200k_base"):
    """tiktoken's encoding; without network, from a local ``.tiktoken`` file
    (``$TIKTOKEN_FILE`` or the copy that the tiktoken-rs crate ships in the
    cargo registry), with tiktoken's own pattern and special tokens."""
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except Exception:
        pass
    import tiktoken.load
    from tiktoken_ext import openai_public

    path = os.environ.get("TIKTOKEN_FILE")
    if not path:
        cands = sorted(glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/tiktoken-rs-*/assets/{name}.tiktoken")))
        if not cands:
            raise RuntimeError(f"no network and no local {name}.tiktoken (set TIKTOKEN_FILE)")
        path = cands[-1]
    load = tiktoken.load.load_tiktoken_bpe
    saved = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda _url, expected_hash=None: load(path)
    try:
        return tiktoken.Encoding(**getattr(openai_public, name)())
    finally:
        openai_public.load_tiktoken_bpe = saved


def tokenizer_spec(kind: str) -> Dict[str, Any]:
    """The shared view of the tokenizer: bytes per id (special ids empty),
    stop ids, special ids, sizes. Built from zapspec's TokenizerInfo and,
    for o200k, checked against tiktoken's bytes."""
    import zapspec

    if kind == "o200k":
        info = zapspec.TokenizerInfo.from_tiktoken("o200k_base")
        enc = tiktoken_encoding("o200k_base")
        vocab = list(info.decoded_vocab)
        special = set(info.special_token_ids)
        bad = 0
        for i in range(enc.n_vocab):
            if i in special:
                continue
            if enc.decode_single_token_bytes(i) != vocab[i]:
                bad += 1
        if bad:
            raise RuntimeError(f"zapspec and tiktoken disagree on {bad} o200k token byte strings")
    elif kind == "smollm2":
        info = zapspec.TokenizerInfo.from_gguf(os.path.join(REPO, SMOLLM2_GGUF))
        vocab = list(info.decoded_vocab)
    else:
        raise ValueError(kind)
    return {
        "kind": kind,
        "vocab": vocab,
        "vocab_size": info.vocab_size,
        "tokenizer_vocab_size": info.tokenizer_vocab_size,
        "stop_ids": list(info.stop_token_ids),
        "special_ids": sorted(set(info.special_token_ids)),
    }


class _SmolWrapper:
    """Duck type for ``llguidance.TokenizerWrapper`` over zapspec's GGUF tokenizer."""

    def __init__(self, spec: Dict[str, Any]):
        import zapspec

        self._info = zapspec.TokenizerInfo.from_gguf(os.path.join(REPO, SMOLLM2_GGUF))
        self.tokens = [b if b else f"<|special_{i}|>".encode() for i, b in enumerate(spec["vocab"])]
        self.eos_token_id = spec["stop_ids"][-1]
        self.bos_token_id = None
        self.special_token_ids = list(spec["special_ids"])

    def __call__(self, s):
        if isinstance(s, bytes):
            s = s.decode("utf-8", errors="replace")
        return list(self._info.encode(s))


# --------------------------------------------------------------------------
# engines: compile / matcher / fill / accept behind one small interface


class CompileError(Exception):
    def __init__(self, cls: str, msg: str):
        super().__init__(msg)
        self.cls = cls
        self.msg = msg


class Engine:
    name = "?"

    def compile(self, schema_text: str) -> Any: ...
    def matcher(self, compiled: Any) -> Any: ...
    def fill(self, m: Any, bm: np.ndarray) -> None: ...
    def accept(self, m: Any, tid: int) -> bool: ...
    def accept_stop(self, m: Any, stop: int) -> bool: ...


class ZapspecEngine(Engine):
    name = "zapspec"

    def __init__(self, spec: Dict[str, Any]):
        import zapspec

        self.z = zapspec
        t0 = time.perf_counter()
        if spec["kind"] == "o200k":
            self.info = zapspec.TokenizerInfo.from_tiktoken("o200k_base")
        else:
            self.info = zapspec.TokenizerInfo.from_gguf(os.path.join(REPO, SMOLLM2_GGUF))
        t1 = time.perf_counter()
        self.compiler = zapspec.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        t2 = time.perf_counter()
        self.init = {"tokenizer_s": t1 - t0, "compiler_s": t2 - t1}
        self.version = zapspec.__version__

    def compile(self, schema_text):
        try:
            return self.z.GrammarMatcher(
                self.compiler.compile_json_schema(schema_text, any_whitespace=False, separators=(",", ":"), strict_mode=False, one_of="require_disjoint")
            )
        except self.z.ZapspecError as e:
            kind = getattr(e, "kind", None)
            raise CompileError(type(e).__name__ + (f": {kind}" if kind else ""), str(e)) from None

    def matcher(self, m0):
        return m0.fork()

    def fill(self, m, bm):
        m.fill_next_token_bitmask(bm)

    def accept(self, m, tid):
        return m.accept_token(tid)

    def accept_stop(self, m, stop):
        return m.accept_token(stop)


class LlguidanceEngine(Engine):
    name = "llguidance"

    def __init__(self, spec: Dict[str, Any]):
        import llguidance
        import llguidance.numpy

        self.llg = llguidance
        self.fill_np = llguidance.numpy.fill_next_token_bitmask
        t0 = time.perf_counter()
        if spec["kind"] == "o200k":
            import llguidance.tiktoken

            enc = tiktoken_encoding("o200k_base")
            t0 = time.perf_counter()  # the BPE file's loading is tiktoken's, not llguidance's
            self.tok = llguidance.tiktoken.lltokenizer_from_encoding(enc)
        else:
            w = llguidance.TokenizerWrapper(_SmolWrapper(spec))
            t0 = time.perf_counter()
            self.tok = llguidance.LLTokenizer(w, n_vocab=spec["vocab_size"], eos_token=spec["stop_ids"])
        t1 = time.perf_counter()
        self.init = {"tokenizer_s": t1 - t0, "compiler_s": 0.0}
        self.opts = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}
        self.version = llguidance.get_version() if hasattr(llguidance, "get_version") else "?"

    def compile(self, schema_text):
        try:
            g = self.llg.LLMatcher.grammar_from_json_schema(schema_text, defaults=self.opts)
        except Exception as e:  # noqa: BLE001 - any refusal is a compile error
            raise CompileError(type(e).__name__, str(e)) from None
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise CompileError("LLMatcher error", m.get_error())
        return m

    def matcher(self, m0):
        return m0.deep_copy()

    def fill(self, m, bm):
        self.fill_np(m, bm, 0)

    def accept(self, m, tid):
        return m.consume_token(tid)

    def accept_stop(self, m, stop):
        return m.is_accepting() and m.consume_token(stop)


class XgrammarEngine(Engine):
    name = "xgrammar"

    def __init__(self, spec: Dict[str, Any]):
        import xgrammar

        self.xgr = xgrammar
        t0 = time.perf_counter()
        self.info = xgrammar.TokenizerInfo(
            spec["vocab"],
            vocab_type=xgrammar.VocabType.RAW,
            vocab_size=spec["vocab_size"],
            stop_token_ids=spec["stop_ids"],
        )
        t1 = time.perf_counter()
        self.compiler = xgrammar.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        t2 = time.perf_counter()
        self.init = {"tokenizer_s": t1 - t0, "compiler_s": t2 - t1}
        try:
            from importlib.metadata import version

            self.version = version("xgrammar")
        except Exception:  # noqa: BLE001
            self.version = "?"

    def compile(self, schema_text):
        try:
            cg = self.compiler.compile_json_schema(
                schema_text, any_whitespace=False, separators=(",", ":"), strict_mode=False
            )
        except Exception as e:  # noqa: BLE001
            raise CompileError(type(e).__name__, str(e)) from None
        return cg

    def matcher(self, cg):
        return self.xgr.GrammarMatcher(cg)

    def fill(self, m, bm):
        m.fill_next_token_bitmask(bm)

    def accept(self, m, tid):
        return m.accept_token(tid)

    def accept_stop(self, m, stop):
        return m.accept_token(stop)


def make_engine(name: str, spec: Dict[str, Any]) -> Engine:
    return {"zapspec": ZapspecEngine, "llguidance": LlguidanceEngine, "xgrammar": XgrammarEngine}[name](spec)


# --------------------------------------------------------------------------
# instances: serialisation, key reordering


def compact(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _resolve(s: Any, root: Any, depth: int = 0) -> Any:
    while isinstance(s, dict) and isinstance(s.get("$ref"), str) and s["$ref"].startswith("#") and depth < 32:
        node = root
        for part in s["$ref"][1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return {}
        s = node
        depth += 1
    return s if isinstance(s, dict) else {}


def _valid(inst: Any, sub: Any, root: Any) -> bool:
    """Whether `inst` is valid under the subschema `sub` of `root` (python
    `jsonschema`, the root's `definitions` / `$defs` carried along so that
    local references resolve); False when it cannot tell."""
    try:
        import jsonschema

        if not isinstance(sub, dict):
            return sub is True
        cls = jsonschema.validators.validator_for(root if isinstance(root, dict) else {})
        full = dict(sub)
        for k in ("definitions", "$defs"):
            if isinstance(root, dict) and k in root and k not in full:
                full[k] = root[k]
        return cls(full).is_valid(inst)
    except Exception:  # noqa: BLE001 - unresolvable references, bad schemas
        return False


def _views(s: Any, inst: Any, root: Any, depth: int = 0) -> List[Dict[str, Any]]:
    """The schemas that apply to `inst` at `s`: `s` itself, its `allOf`
    parts, and of its `anyOf` / `oneOf` the first branch `inst` is valid
    under (every branch when none is), recursively, `$ref` resolved."""
    s = _resolve(s, root)
    out = [s]
    if depth > 16:
        return out
    for b in s.get("allOf") or []:
        out += _views(b, inst, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        bs = s.get(key) or []
        if bs:
            ok = [x for x in bs if _valid(inst, _resolve(x, root), root)]
            for x in ok[:1] or bs:
                out += _views(x, inst, root, depth + 1)
    return out


def reorder(inst: Any, schema: Any, root: Any, branches_first: bool = False, depth: int = 0) -> Any:
    """``inst`` with object keys in the schema's ``properties`` order
    (declared keys first: a schema's own, then those of its ``allOf`` parts
    and of the ``anyOf`` / ``oneOf`` branch the value is valid under, or
    those parts' first with ``branches_first``; other keys after, in their
    own order), recursively through properties and items."""
    if depth > 64 or not isinstance(inst, (dict, list)):
        return inst
    views = _views(schema, inst, root)
    if branches_first:
        views = views[1:] + views[:1]
    if isinstance(inst, dict):
        props: "collections.OrderedDict[str, Any]" = collections.OrderedDict()
        addl: Any = {}
        for v in views:
            if isinstance(v.get("properties"), dict):
                for k, sub in v["properties"].items():
                    props.setdefault(k, sub)
            if isinstance(v.get("additionalProperties"), dict) and not addl:
                addl = v["additionalProperties"]
        keys = [k for k in props if k in inst] + [k for k in inst if k not in props]
        return {k: reorder(inst[k], props.get(k, addl), root, branches_first, depth + 1) for k in keys}
    prefix, items = None, None
    for v in views:
        if prefix is None and isinstance(v.get("prefixItems"), list):
            prefix = v["prefixItems"]
        if isinstance(v.get("items"), list) and prefix is None:
            prefix, items = v["items"], v.get("additionalItems")
        elif isinstance(v.get("items"), dict) and items is None:
            items = v["items"]
    out = []
    for i, x in enumerate(inst):
        sub = prefix[i] if prefix is not None and i < len(prefix) else (items if isinstance(items, dict) else {})
        out.append(reorder(x, sub, root, branches_first, depth + 1))
    return out


# --------------------------------------------------------------------------
# the parent's preparation: files, tokens


def list_files(data: str, every: int, limit: Optional[int]) -> List[str]:
    files = sorted(f for f in os.listdir(data) if f.endswith(".json"))
    files = files[:: max(1, every)]
    return files[:limit] if limit else files


def prepare(args, spec: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """Reads the schema files, serialises and tokenizes every instance (and
    its reordered form when different). Returns the cases and token stats."""
    import zapspec

    if spec["kind"] == "o200k":
        info = zapspec.TokenizerInfo.from_tiktoken("o200k_base")
        enc = tiktoken_encoding("o200k_base")
        primary = enc.encode_ordinary
    else:
        info = zapspec.TokenizerInfo.from_gguf(os.path.join(REPO, SMOLLM2_GGUF))
        enc = None
        primary = lambda s: list(info.encode(s))  # noqa: E731
    stats = {"texts": 0, "tokens": 0, "tiktoken_vs_zapspec_mismatch": 0, "mismatch_examples": []}

    def tok(text: str) -> List[int]:
        ids = list(primary(text))
        stats["texts"] += 1
        stats["tokens"] += len(ids)
        if enc is not None:
            z = list(info.encode(text))
            if z != ids:
                stats["tiktoken_vs_zapspec_mismatch"] += 1
                if len(stats["mismatch_examples"]) < 5:
                    stats["mismatch_examples"].append(text[:200])
        return ids

    cases = []
    for f in list_files(args.data, args.every, args.limit):
        d = json.load(open(os.path.join(args.data, f), encoding="utf-8"))
        schema = d.get("schema", {})
        tests = []
        for ti, t in enumerate(d.get("tests", [])):
            data = t.get("data")
            text = compact(data)
            alts, seen = [], {text}
            for variant, bf in (("reordered", False), ("reordered, branches first", True)):
                try:
                    alt = compact(reorder(data, schema, schema, branches_first=bf))
                except Exception:  # noqa: BLE001 - reordering is best effort
                    continue
                if alt not in seen:
                    seen.add(alt)
                    alts.append({"variant": variant, "text": alt, "toks": tok(alt)})
            tests.append(
                {
                    "i": ti,
                    "valid": bool(t.get("valid", True)),
                    "why": (t.get("python_error") or t.get("rust_error") or "").split("\n")[0][:160],
                    "text": text,
                    "toks": tok(text),
                    "alts": alts,
                }
            )
        cases.append({"file": f, "schema_text": json.dumps(schema, ensure_ascii=False), "tests": tests})
    return cases, stats


# --------------------------------------------------------------------------
# the child: one engine over the cases from index `start`


def ordinary_mask(spec: Dict[str, Any], words: int) -> np.ndarray:
    """int32 words with the bits of ordinary token ids set (no special, stop
    or padding ids)."""
    bits = np.zeros(words * 32, dtype=bool)
    n = spec["tokenizer_vocab_size"]
    bits[:n] = [len(b) > 0 for b in spec["vocab"][:n]]
    bits[list(spec["special_ids"])] = False
    bits[list(spec["stop_ids"])] = False
    return np.packbits(bits, bitorder="little").view(np.int32).copy()


def rss_kib(field: str = "VmRSS") -> int:
    """This process's resident set (`VmRSS`) or its peak (`VmHWM`), KiB.
    (Not `getrusage`'s `ru_maxrss`: on Linux that keeps the peak of the
    parent's memory from before `exec`, i.e. the parent's RSS at the fork.)"""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def walk(eng: Engine, m: Any, toks: List[int], bm: np.ndarray, norm: np.ndarray, stop_ids: List[int], tbm: List[int],
         vocab: List[bytes]):
    """One instance through one matcher: per step mask (timed), check, accept."""
    row = bm[0]
    pcs, crcs = [], []
    rej = None
    incons = None
    allowed: Optional[List[int]] = None
    stop_mask = False
    n = len(toks)
    for k in range(n + 1):
        t0 = time.perf_counter_ns()
        eng.fill(m, bm)
        t1 = time.perf_counter_ns()
        tbm.append(t1 - t0)
        masked = row & norm
        pcs.append(int(np.bitwise_count(masked).sum()))
        crcs.append(zlib.crc32(masked.tobytes()))
        if k == n:
            stop_mask = any((int(row[s >> 5]) >> (s & 31)) & 1 for s in stop_ids)
            break
        tid = toks[k]
        if not (int(row[tid >> 5]) >> (tid & 31)) & 1:
            rej = k
            allowed = np.nonzero(np.unpackbits(row.view(np.uint8), bitorder="little"))[0].tolist()
            break
        if not eng.accept(m, tid):
            incons = f"token {tid} at {k} in the mask but refused by accept"
            rej = k
            break
    stop_ok = False
    if rej is None:
        stop_ok = bool(eng.accept_stop(m, stop_ids[0]))
        if stop_ok != stop_mask:
            incons = f"stop bit in the final mask {stop_mask} but accept(stop) {stop_ok}"
    w = {"ok": rej is None and stop_ok and stop_mask, "rej": rej, "n": n, "pc": pcs, "crc": crcs, "incons": incons}
    if allowed is not None:  # the refused step: how many tokens were allowed, and the shortest few
        w["n_allowed"] = len(allowed)
        w["allowed"] = sorted(allowed, key=lambda i: (len(vocab[i]) if i < len(vocab) else 99, i))[:8]
    elif rej is None and not w["ok"]:
        w["stop_refused"] = True
    return w


def child(args) -> None:
    with open(args.cases, "rb") as fh:
        blob = pickle.load(fh)
    spec, cases = blob["spec"], blob["cases"]
    out = open(args.child_out, "a", encoding="utf-8")

    def emit(rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    rss0 = rss_kib()
    t0 = time.perf_counter()
    __import__(args.engine)  # xgrammar imports torch: its RSS is in this step
    import_s = time.perf_counter() - t0
    rss_import = rss_kib()
    eng = make_engine(args.engine, spec)
    words = (spec["vocab_size"] + 31) // 32
    bm = np.full((1, words), -1, dtype=np.int32)
    norm = ordinary_mask(spec, words)
    stop_ids = spec["stop_ids"]
    emit({"ev": "init", **eng.init, "import_s": import_s, "rss_before_kib": rss0, "rss_after_import_kib": rss_import,
          "rss_after_init_kib": rss_kib(), "version": eng.version})
    for ci in range(args.start, len(cases)):
        c = cases[ci]
        emit({"ev": "start", "ci": ci})
        gc.collect()
        gc.disable()
        rec: Dict[str, Any] = {"ev": "result", "ci": ci, "file": c["file"]}
        t0 = time.perf_counter_ns()
        try:
            compiled = eng.compile(c["schema_text"])
            t1 = time.perf_counter_ns()
            m0 = eng.matcher(compiled)
            t2 = time.perf_counter_ns()
            eng.fill(m0, bm)
            t3 = time.perf_counter_ns()
        except CompileError as e:
            gc.enable()
            rec.update(status="compile_error", err_cls=e.cls, err=e.msg[:300], compile_ns=time.perf_counter_ns() - t0)
            emit(rec)
            continue
        rec.update(status="ok", ttfm_ns=t3 - t0, compile_ns=t1 - t0, matcher_ns=t2 - t1, first_mask_ns=t3 - t2)
        tbm: List[int] = []
        walks = []
        for t in c["tests"]:
            w = walk(eng, eng.matcher(compiled), t["toks"], bm, norm, stop_ids, tbm, spec["vocab"])
            w.update(i=t["i"], variant="file")
            walks.append(w)
            for alt in t["alts"]:
                if w["ok"]:
                    break
                w = walk(eng, eng.matcher(compiled), alt["toks"], bm, norm, stop_ids, tbm, spec["vocab"])
                w.update(i=t["i"], variant=alt["variant"])
                walks.append(w)
        gc.enable()
        rec.update(tbm_ns=tbm, walks=walks)
        emit(rec)
    emit({"ev": "done", "maxrss_kib": rss_kib("VmHWM")})
    out.close()


# --------------------------------------------------------------------------
# the parent: run each engine's child under a watchdog


def run_engine(args, engine: str, cases_path: str, n_cases: int, tmp: str) -> Dict[str, Any]:
    """Runs `engine`'s child from case 0; a child past --timeout-ms on one
    schema is killed (timeout), a dead child is a crash; either restarts at
    the next schema."""
    results: Dict[int, Dict[str, Any]] = {}
    inits, rss_peaks, restarts = [], [], 0
    start = 0
    t_engine = time.monotonic()
    while start < n_cases:
        path = os.path.join(tmp, f"{engine}.{start}.jsonl")
        errlog = open(os.path.join(tmp, f"{engine}.{start}.stderr"), "w")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--engine", engine, "--cases", cases_path,
               "--child-out", path, "--start", str(start)]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog)
        open(path, "a").close()
        fh = open(path, encoding="utf-8")
        buf, cur, since, done, killed = "", None, None, False, False
        while True:
            rc = p.poll()
            chunk = fh.read()
            if chunk:
                buf += chunk
                *lines, buf = buf.split("\n")
                for line in lines:
                    ev = json.loads(line)
                    if ev["ev"] == "init":
                        inits.append(ev)
                    elif ev["ev"] == "start":
                        cur, since = ev["ci"], time.monotonic()
                    elif ev["ev"] == "result":
                        results[ev["ci"]] = ev
                        cur = None
                        if len(results) % 50 == 0:
                            print(f"  {engine}: {len(results)}/{n_cases} schemas", file=sys.stderr, flush=True)
                    elif ev["ev"] == "done":
                        rss_peaks.append(ev["maxrss_kib"])
                        done = True
            if rc is not None and not chunk:
                break
            if cur is not None and args.timeout_ms and (time.monotonic() - since) * 1000 > args.timeout_ms:
                p.kill()
                p.wait()
                killed = True
                break
            time.sleep(0.02)
        fh.close()
        errlog.close()
        if done:
            break
        restarts += 1
        if cur is None:  # died between schemas (e.g. at init)
            err = open(os.path.join(tmp, f"{engine}.{start}.stderr")).read()[-2000:]
            raise RuntimeError(f"{engine} child died outside a schema (rc={p.returncode}): {err}")
        results[cur] = {"ev": "result", "ci": cur, "status": "timeout" if killed else "crash", "rc": p.returncode}
        print(f"  {engine}: schema {cur} {'timed out' if killed else f'crashed rc={p.returncode}'}; restarting",
              file=sys.stderr, flush=True)
        start = cur + 1
    return {"results": results, "inits": inits, "rss_peaks_kib": rss_peaks, "restarts": restarts,
            "wall_s": time.monotonic() - t_engine}


# --------------------------------------------------------------------------
# statistics and analysis


def pct(xs: np.ndarray, q: float) -> float:
    return float(np.percentile(xs, q)) if len(xs) else float("nan")


def dist(xs_ns: List[int]) -> Dict[str, float]:
    a = np.asarray(xs_ns, dtype=np.float64) / 1000.0  # µs
    if not len(a):
        return {"n": 0}
    return {"n": int(len(a)), "p50": pct(a, 50), "p90": pct(a, 90), "p99": pct(a, 99), "p99.9": pct(a, 99.9),
            "max": float(a.max()), "mean": float(a.mean())}


def fmt_us(v: float) -> str:
    if v != v:
        return "–"
    if v >= 1000:
        return f"{v / 1000:.3g} ms"
    return f"{v:.3g} µs"


def outcome_of(walks: List[Dict[str, Any]], i: int) -> Dict[str, Any]:
    ws = [w for w in walks if w["i"] == i]
    f = next(w for w in ws if w["variant"] == "file")
    alts = [w for w in ws if w["variant"] != "file"]
    r = next((w for w in alts if w["ok"]), alts[-1] if alts else None)
    if f["ok"]:
        cat = "accepted"
    elif r is not None and r["ok"]:
        cat = "accepted_after_reorder"
    else:
        cat = "rejected"
    last = r if r is not None else f
    return {"cat": cat, "rej": last["rej"], "variant": last["variant"], "n": last["n"],
            "n_allowed": last.get("n_allowed"), "allowed": last.get("allowed"),
            "stop_refused": last.get("stop_refused", False),
            "incons": [w["incons"] for w in ws if w["incons"]]}


def toks_of(t: Dict[str, Any], variant: str) -> List[int]:
    return t["toks"] if variant == "file" else next(a["toks"] for a in t["alts"] if a["variant"] == variant)


def rejection_context(o: Dict[str, Any], t: Dict[str, Any], vocab: List[bytes]) -> Dict[str, Any]:
    """Where a walk stopped: the text before, the refused token, what was allowed."""
    toks = toks_of(t, o["variant"])
    dec = lambda i: vocab[i].decode("utf-8", "replace")  # noqa: E731
    if o["rej"] is None:
        return {"pos": o["n"], "before": b"".join(vocab[i] for i in toks).decode("utf-8", "replace")[-60:],
                "refused": "<stop>", "n_allowed": None, "allowed": []}
    return {"pos": o["rej"], "before": b"".join(vocab[i] for i in toks[: o["rej"]]).decode("utf-8", "replace")[-60:],
            "refused": dec(toks[o["rej"]]), "n_allowed": o["n_allowed"], "allowed": [dec(i) for i in o["allowed"] or []]}


def error_class(engine: str, rec: Dict[str, Any]) -> str:
    """A short class for a compile error: zapspec's exception class and
    `kind`; llguidance's and xgrammar's first message line, made generic."""
    import re

    if engine == "zapspec":
        return rec.get("err_cls", "?")
    msg = (rec.get("err") or "").strip().split("\n")[0]
    msg = re.sub(r"^\[[0-9:]+\] \S+:\d+: ", "", msg)  # xgrammar's "[time] file.cc:line: "
    msg = re.sub(r"Unknown format: .*", "Unknown format: …", msg)
    msg = re.sub(r"json-schema:///#\S*", "…", msg)
    return f"{rec.get('err_cls', '?')}: {msg[:100]}"


def analyse(args, cases, runs: Dict[str, Dict[str, Any]], spec) -> Dict[str, Any]:
    engines = list(runs)
    summary: Dict[str, Any] = {}
    outcomes: Dict[str, Dict[Tuple[int, int], Dict[str, Any]]] = {e: {} for e in engines}
    for e in engines:
        res = runs[e]["results"]
        st = collections.Counter(r["status"] for r in res.values())
        errs = collections.Counter(error_class(e, r) for r in res.values() if r["status"] == "compile_error")
        ttfm = [r["ttfm_ns"] for r in res.values() if r["status"] == "ok"]
        tbm = [x for r in res.values() if r["status"] == "ok" for x in r["tbm_ns"]]
        v = collections.Counter()
        inv = collections.Counter()
        incons = []
        false_rej, wrong_acc = [], []
        for ci, r in res.items():
            if r["status"] != "ok":
                continue
            for t in cases[ci]["tests"]:
                o = outcome_of(r["walks"], t["i"])
                outcomes[e][(ci, t["i"])] = o
                incons += [(cases[ci]["file"], t["i"], x) for x in o["incons"]]
                if t["valid"]:
                    v[o["cat"]] += 1
                    if o["cat"] == "rejected":
                        ctx = rejection_context(o, t, spec["vocab"])
                        false_rej.append({"file": cases[ci]["file"], "test": t["i"], "variant": o["variant"],
                                          "n": o["n"], **ctx, "text": t["text"][:300]})
                else:
                    inv["wrongly_accepted" if o["cat"] != "rejected" else "rejected"] += 1
                    if o["cat"] != "rejected":
                        wrong_acc.append({"file": cases[ci]["file"], "test": t["i"], "how": o["cat"],
                                          "why_invalid": t.get("why", ""), "text": t["text"][:300]})
        init = runs[e]["inits"][0] if runs[e]["inits"] else {}
        summary[e] = {
            "version": init.get("version"),
            "init": {k: init.get(k) for k in ("tokenizer_s", "compiler_s")},
            "rss_after_init_mib": init.get("rss_after_init_kib", 0) / 1024,
            "rss_before_init_mib": init.get("rss_before_kib", 0) / 1024,
            "rss_after_import_mib": init.get("rss_after_import_kib", 0) / 1024,
            "import_s": init.get("import_s"),
            "peak_rss_mib": max(runs[e]["rss_peaks_kib"] or [0]) / 1024,
            "restarts": runs[e]["restarts"],
            "wall_s": runs[e]["wall_s"],
            "status": dict(st),
            "compile_errors": dict(errs.most_common()),
            "valid": dict(v),
            "invalid": dict(inv),
            "inconsistencies": incons[:20],
            "false_rejections": false_rej,
            "wrongly_accepted": wrong_acc,
            "n_inconsistencies": len(incons),
            "ttfm_us": dist(ttfm),
            "compile_us": dist([r["compile_ns"] for r in res.values() if r["status"] == "ok"]),
            "first_mask_us": dist([r["first_mask_ns"] for r in res.values() if r["status"] == "ok"]),
            "tbm_us": dist(tbm),
        }
    # TTFM on the schemas every engine compiled
    common = [ci for ci in range(len(cases)) if all(runs[e]["results"].get(ci, {}).get("status") == "ok" for e in engines)]
    for e in engines:
        summary[e]["ttfm_common_us"] = dist([runs[e]["results"][ci]["ttfm_ns"] for ci in common])
        summary[e]["tbm_sum_common_ms"] = sum(sum(runs[e]["results"][ci]["tbm_ns"]) for ci in common) / 1e6
    # outcome disagreements
    dis = []
    for ci in common:
        for t in cases[ci]["tests"]:
            os_ = {e: outcomes[e][(ci, t["i"])] for e in engines}
            acc = {e: o["cat"] != "rejected" for e, o in os_.items()}
            if len(set(acc.values())) > 1:
                dis.append({"file": cases[ci]["file"], "test": t["i"], "valid": t["valid"],
                            "outcomes": {e: {"cat": o["cat"], "rej": o["rej"], "variant": o["variant"], "n": o["n"],
                                             **({"ctx": rejection_context(o, t, spec["vocab"])} if o["cat"] == "rejected" else {})}
                                         for e, o in os_.items()}})
    # per-step mask comparison on the same walks
    pair_stats = {}
    mask_examples = collections.defaultdict(list)
    for a_i in range(len(engines)):
        for b_i in range(a_i + 1, len(engines)):
            a, b = engines[a_i], engines[b_i]
            steps = diff = walks_diff = 0
            for ci in common:
                wa = {(w["i"], w["variant"]): w for w in runs[a]["results"][ci]["walks"]}
                wb = {(w["i"], w["variant"]): w for w in runs[b]["results"][ci]["walks"]}
                for key in wa.keys() & wb.keys():
                    x, y = wa[key], wb[key]
                    n = min(len(x["crc"]), len(y["crc"]))
                    steps += n
                    first = None
                    for k in range(n):
                        if x["crc"][k] != y["crc"][k]:
                            diff += 1
                            if first is None:
                                first = k
                    if first is not None:
                        walks_diff += 1
                        mask_examples[(a, b)].append({"ci": ci, "file": cases[ci]["file"], "test": key[0],
                                                      "variant": key[1], "step": first,
                                                      "pc": {a: x["pc"][first], b: y["pc"][first]}})
            pair_stats[f"{a}|{b}"] = {"steps_compared": steps, "steps_differing": diff, "walks_with_a_difference": walks_diff}
    return {"summary": summary, "common_schemas": len(common), "disagreements": dis, "mask_pairs": pair_stats,
            "mask_examples": {f"{a}|{b}": v for (a, b), v in mask_examples.items()}}


def diagnose(args, cases, spec, analysis, engines: List[str]) -> List[Dict[str, Any]]:
    """Recomputes, in this process, the masks at a few first differing steps
    and lists the tokens one engine allows and the other does not."""
    rng = random.Random(args.seed)
    todo = []
    for pair, exs in analysis["mask_examples"].items():
        # prefer one example per schema
        by_file = {}
        for ex in exs:
            by_file.setdefault(ex["file"], ex)
        picks = list(by_file.values())
        rng.shuffle(picks)
        todo += [(pair, ex) for ex in picks[: args.diagnose]]
    if not todo:
        return []
    engs = {e: make_engine(e, spec) for e in engines}
    compiled: Dict[Tuple[str, int], Any] = {}
    words = (spec["vocab_size"] + 31) // 32
    norm = ordinary_mask(spec, words)
    vocab = spec["vocab"]
    out = []
    for pair, ex in todo:
        a, b = pair.split("|")
        c = cases[ex["ci"]]
        t = next(t for t in c["tests"] if t["i"] == ex["test"])
        toks = toks_of(t, ex["variant"])
        masks = {}
        for e in (a, b):
            eng = engs[e]
            if (e, ex["ci"]) not in compiled:
                compiled[(e, ex["ci"])] = eng.compile(c["schema_text"])
            m = eng.matcher(compiled[(e, ex["ci"])])
            for tid in toks[: ex["step"]]:
                assert eng.accept(m, tid)
            bm = np.full((1, words), -1, dtype=np.int32)
            eng.fill(m, bm)
            bits = np.unpackbits((bm[0] & norm).view(np.uint8), bitorder="little")
            masks[e] = set(np.nonzero(bits)[0].tolist())
        only_a = sorted(masks[a] - masks[b])
        only_b = sorted(masks[b] - masks[a])
        prefix = b"".join(vocab[x] for x in toks[: ex["step"]]).decode("utf-8", errors="replace")
        rest = b"".join(vocab[x] for x in toks[ex["step"]:])
        diff_bytes = [vocab[x] for x in only_a + only_b]
        if diff_bytes and all(b"\\" in x for x in diff_bytes):
            kind = "string escapes"
        elif not only_b and all(rest.startswith(vocab[x]) for x in only_a) or not only_a and all(rest.startswith(vocab[x]) for x in only_b):
            kind = "prefixes of the text that follows (one engine: canonical tokens of forced text only)"
        else:
            kind = "other"
        out.append({"pair": pair, "kind": kind, "file": c["file"], "test": ex["test"], "valid": t["valid"], "variant": ex["variant"],
                    "step": ex["step"], "prefix_tail": prefix[-80:],
                    "next_token": vocab[toks[ex["step"]]].decode("utf-8", "replace") if ex["step"] < len(toks) else "<stop>",
                    f"n_only_{a}": len(only_a), f"n_only_{b}": len(only_b),
                    f"only_{a}": [vocab[x].decode("utf-8", "replace") for x in only_a[:12]],
                    f"only_{b}": [vocab[x].decode("utf-8", "replace") for x in only_b[:12]]})
    return out


# --------------------------------------------------------------------------
# report


INVALID_REASONS = (
    ("does not match any of the regexes", "patternProperties / additionalProperties"),
    ("Additional properties are not allowed", "additionalProperties"),
    ("is not of type", "type"),
    ("does not match", "pattern"),
    ("should be non-empty", "minItems / minLength (non-empty)"),
    ("is not one of", "enum"),
    ("is a required property", "required"),
    ("is not a '", "format"),
    ("is not valid under any of the given schemas", "anyOf / oneOf"),
    ("is valid under each of", "oneOf (several match)"),
    ("non-unique", "uniqueItems"),
    ("minimum", "minimum / exclusiveMinimum"),
    ("maximum", "maximum / exclusiveMaximum"),
    ("is too long", "maxLength / maxItems"),
    ("is too short", "minLength / minItems"),
    ("too many properties", "maxProperties"),
    ("not have enough properties", "minProperties"),
    ("multiple of", "multipleOf"),
    ("was expected", "const"),
    ("should not be valid under", "not"),
)


def invalid_reason(why: str) -> str:
    """The keyword an invalid instance breaks, from the dataset's python_error."""
    for needle, name in INVALID_REASONS:
        if needle in why:
            return name
    return "other"


def zapspec_build() -> str:
    """The zapspec extension in use: file, modification time, sha256 prefix
    (the package is an editable install that may be rebuilt between runs)."""
    import hashlib

    import zapspec

    so = [f for f in os.listdir(os.path.dirname(zapspec.__file__)) if f.endswith(".so")]
    if not so:
        return "?"
    path = os.path.join(os.path.dirname(zapspec.__file__), so[0])
    h = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
    return f"{so[0]} built {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(os.path.getmtime(path)))} UTC, sha256 {h}…"


def machine_note() -> Dict[str, Any]:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__}


def plot(path: str, runs, engines: List[str], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for e in engines:
        res = runs[e]["results"].values()
        tbm = np.sort(np.asarray([x for r in res if r["status"] == "ok" for x in r["tbm_ns"]], dtype=float) / 1e3)
        ttfm = np.sort(np.asarray([r["ttfm_ns"] for r in res if r["status"] == "ok"], dtype=float) / 1e6)
        if len(tbm):
            axes[0].plot(tbm, np.arange(1, len(tbm) + 1) / len(tbm), label=f"{e} (n={len(tbm)})")
        if len(ttfm):
            axes[1].plot(ttfm, np.arange(1, len(ttfm) + 1) / len(ttfm), label=f"{e} (n={len(ttfm)})")
    axes[0].set(xscale="log", xlabel="TBM (µs, fill_next_token_bitmask from Python)", ylabel="CDF", title="time between masks")
    axes[1].set(xscale="log", xlabel="TTFM (ms: compile + matcher + first mask)", ylabel="CDF", title="time to first mask")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(args, cmd: str, spec, cases, tokstats, runs, analysis, diag, meta) -> None:
    engines = list(runs)
    S = analysis["summary"]
    n_valid = sum(t["valid"] for c in cases for t in c["tests"])
    n_invalid = sum(not t["valid"] for c in cases for t in c["tests"])
    L = []
    L.append(f"# MaskBench from Python: {', '.join(engines)} ({args.tokenizer})\n")
    L.append(f"Command: `{cmd}`\n")
    L.append(
        f"{len(cases)} schema files of `{args.data}` (every {args.every}th in sorted order), {n_valid} valid and "
        f"{n_invalid} invalid test instances, {tokstats['tokens']} tokens in {tokstats['texts']} serialised instances "
        f"(file order, plus the reordered forms where they differ: schema order, and the `allOf`/`oneOf` parts' keys first). Tokenizer `{args.tokenizer}` (vocab_size {spec['vocab_size']}, stop ids "
        f"{spec['stop_ids']}), the same ids for every engine"
        + (f"; tiktoken `encode_ordinary` and `zapspec.TokenizerInfo.encode` disagree on "
           f"{tokstats['tiktoken_vs_zapspec_mismatch']} of {tokstats['texts']} texts" if args.tokenizer == "o200k" else
           " (zapspec's GGUF tokenizer)") + ".\n")
    L.append(
        f"Machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores, shared with other jobs (load average "
        f"{meta['load_before']} before, {meta['load_after']} after): absolute times are noisy; engines ran one after "
        f"the other, each in its own child process, one compile thread each, GC disabled while a schema is walked. "
        f"Python {meta['machine']['python']}, numpy {meta['machine']['numpy']}; "
        + ", ".join(f"{e} {S[e]['version']}" for e in engines)
        + f" (`{meta.get('zapspec_build', '?')}`). Timeout per schema: {args.timeout_ms} ms (compile and every walk). Started {meta['started']}, "
        f"total {meta['total_s']:.0f} s for the engines' runs.\n")
    L.append("Options: compact separators `(',', ':')`, no whitespace, `strict_mode=False` (open objects as JSON "
             "Schema says) for zapspec and xgrammar; llguidance `whitespace_flexible: false`, same separators, not "
             "lenient. TTFM = compile + matcher + first `fill` into a preallocated bitmask; TBM = one `fill` call from "
             "Python (zapspec `fill_next_token_bitmask(bm)`, xgrammar `fill_next_token_bitmask(bm)` on the numpy "
             "array via DLPack, llguidance `llguidance.numpy.fill_next_token_bitmask(m, bm, 0)`), including each "
             "binding's own per-call overhead. Later instances of a schema reuse the compiled grammar (zapspec "
             "`fork`, llguidance `deep_copy` of the first matcher, xgrammar a new `GrammarMatcher`).\n")

    L.append("## Engine construction (once, before the schemas)\n")
    L.append("| engine | import | tokenizer | compiler / index | RSS: start → after import → after construction | peak RSS (child process) | peak − start | child restarts | wall |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in engines:
        s = S[e]
        imp = f"{s['import_s'] * 1000:.0f} ms" if s.get("import_s") is not None else "–"
        L.append(f"| {e} | {imp} | {s['init']['tokenizer_s'] * 1000:.0f} ms | {s['init']['compiler_s'] * 1000:.0f} ms | "
                 f"{s['rss_before_init_mib']:.0f} → {s['rss_after_import_mib']:.0f} → {s['rss_after_init_mib']:.0f} MiB | "
                 f"{s['peak_rss_mib']:.0f} MiB | {s['peak_rss_mib'] - s['rss_before_init_mib']:.0f} MiB | "
                 f"{s['restarts']} | {s['wall_s']:.0f} s |")
    L.append("\nRSS includes the Python interpreter, numpy and the pickled cases (the same for every child), and "
             "each engine's import (xgrammar imports torch); "
             "peak = the child's `VmHWM`; the peak of a child that was killed or crashed is lost (the largest of the "
             "finished children is shown).\n")
    if args.tokenizer == "smollm2":
        L.append("llguidance's SmolLM2 tokenizer is a `TokenizerWrapper` over zapspec's GGUF vocabulary (bytes per id, "
                 "special ids named `<|special_N|>`), with zapspec's encoder for the rare llguidance-side tokenizing; "
                 "its child also holds that zapspec TokenizerInfo.\n")

    L.append("## Schemas\n")
    L.append("| engine | compiled | compile errors | timeouts | crashes |")
    L.append("|---|---:|---:|---:|---:|")
    for e in engines:
        st = S[e]["status"]
        L.append(f"| {e} | {st.get('ok', 0)} | {st.get('compile_error', 0)} | {st.get('timeout', 0)} | {st.get('crash', 0)} |")
    L.append(f"\nCompiled by every engine: {analysis['common_schemas']} of {len(cases)}.\n")
    L.append("Compile errors by class (top 8 per engine):\n")
    for e in engines:
        errs = S[e]["compile_errors"]
        if errs:
            items = "; ".join(f"{k[:90]}: {v}" for k, v in list(errs.items())[:8])
            L.append(f"- **{e}**: {items}")
    L.append("")

    L.append("## Test instances (on each engine's compiled schemas)\n")
    L.append("| engine | valid walked | accepted | accepted after key reorder | **false rejections** | invalid walked | rejected | **wrongly accepted** | mask/accept inconsistencies |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in engines:
        v, iv = S[e]["valid"], S[e]["invalid"]
        L.append(f"| {e} | {sum(v.values())} | {v.get('accepted', 0)} | {v.get('accepted_after_reorder', 0)} | "
                 f"{v.get('rejected', 0)} | {sum(iv.values())} | {iv.get('rejected', 0)} | {iv.get('wrongly_accepted', 0)} | "
                 f"{S[e]['n_inconsistencies']} |")
    L.append("\n\"Wrongly accepted\": an instance the dataset marks invalid, accepted whole (in file order or one of the reordered forms). "
             "It is a soundness gap of the engine (a keyword not enforced, or enforced loosely): see the table of "
             "keywords below.\n")

    L.append("### False rejections: valid instances refused in every key order tried\n")
    L.append("Signature = the refused token, then the shortest tokens the engine allowed at that step "
             "(`<stop>`: all tokens accepted but the stop token refused).\n")
    for e in engines:
        fr = S[e]["false_rejections"]
        if not fr:
            L.append(f"- **{e}**: none")
            continue
        sig = collections.Counter(f"{x['refused']!r} / allowed {x['n_allowed']}: {x['allowed'][:4]!r}" for x in fr)
        L.append(f"- **{e}** ({len(fr)}), top signatures: " + "; ".join(f"`{k}` ×{v}" for k, v in sig.most_common(6)))
        for x in fr[:4]:
            L.append(f"  - `{x['file']}` test {x['test']} ({x['variant']} order), token {x['pos']}/{x['n']}: after "
                     f"`…{x['before'][-50:]}` refused `{x['refused']}`; allowed {x['n_allowed']} e.g. "
                     f"{json.dumps(x['allowed'][:6], ensure_ascii=False)}")
    L.append("\n### Invalid instances accepted whole\n")
    L.append("By the keyword the dataset's validator (python `jsonschema`) reports:\n")
    reasons = sorted({invalid_reason(x["why_invalid"]) for e in engines for x in S[e]["wrongly_accepted"]})
    if reasons:
        L.append("| reason | " + " | ".join(engines) + " |")
        L.append("|---|" + "---:|" * len(engines))
        for r in reasons:
            L.append(f"| {r} | " + " | ".join(str(sum(invalid_reason(x['why_invalid']) == r for x in S[e]['wrongly_accepted']))
                                              for e in engines) + " |")
        L.append("")
    for e in engines:
        for x in S[e]["wrongly_accepted"][:3]:
            L.append(f"- {e}: `{x['file']}` test {x['test']} ({x['how']}): `{x['text'][:120]}` — dataset: "
                     f"{x['why_invalid'][:120]}")
    L.append("")

    L.append("## TTFM and TBM\n")
    L.append("| engine | metric | n | p50 | p90 | p99 | p99.9 | max | mean |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for key, label in (("ttfm_us", "TTFM (own compiled schemas)"), ("ttfm_common_us", "TTFM (schemas all compiled)"),
                       ("compile_us", "compile alone"), ("first_mask_us", "first mask alone"), ("tbm_us", "TBM")):
        for e in engines:
            d = S[e][key]
            if not d.get("n"):
                continue
            L.append(f"| {e} | {label} | {d['n']} | {fmt_us(d['p50'])} | {fmt_us(d['p90'])} | {fmt_us(d['p99'])} | "
                     f"{fmt_us(d['p99.9'])} | {fmt_us(d['max'])} | {fmt_us(d['mean'])} |")
    L.append("\nSum of TBM over the schemas every engine compiled: "
             + ", ".join(f"{e} {S[e]['tbm_sum_common_ms']:.0f} ms" for e in engines)
             + ". TBM counts every mask of every walk (valid, invalid, reordered retries), so engines that reject "
               "earlier walk fewer tokens.\n")
    L.append(f"![CDF]({args.name}.png)\n")

    L.append("## Disagreements between engines\n")
    dis = analysis["disagreements"]
    L.append(f"Instances (on schemas every engine compiled) where the engines do not all agree on accept vs reject: "
             f"{len(dis)} ({sum(d['valid'] for d in dis)} valid, {sum(not d['valid'] for d in dis)} invalid). "
             f"By pattern (engines that accept):\n")
    pat = collections.Counter(
        ("valid" if d["valid"] else "invalid") + ": accepted by " + "+".join(e for e in engines if d["outcomes"][e]["cat"] != "rejected")
        for d in dis)
    for k, v in pat.most_common():
        L.append(f"- {k}: {v}")
    L.append("\nExamples (token position = index of the first refused token; `n` = tokens in the instance):\n")
    shown = collections.Counter()
    for d in dis:
        k = ("valid" if d["valid"] else "invalid") + "+".join(e for e in engines if d["outcomes"][e]["cat"] != "rejected")
        if shown[k] >= 3:
            continue
        shown[k] += 1
        c = next(c for c in cases if c["file"] == d["file"])
        t = next(t for t in c["tests"] if t["i"] == d["test"])
        outs = "; ".join(f"{e}: {o['cat']}" + (f" at token {o['ctx']['pos']}/{o['n']} ({o['variant']} order; after "
                                                   f"`…{o['ctx']['before'][-30:]}` refused `{o['ctx']['refused']}`, allowed "
                                                   f"{o['ctx']['n_allowed']} e.g. {json.dumps(o['ctx']['allowed'][:3], ensure_ascii=False)})"
                                                   if o["cat"] == "rejected" else "")
                         for e, o in d["outcomes"].items())
        L.append(f"- `{d['file']}` test {d['test']} ({'valid' if d['valid'] else 'invalid'}): {outs}. Instance: "
                 f"`{t['text'][:160]}{'…' if len(t['text']) > 160 else ''}`")
    L.append("\n### Masks compared step by step\n")
    L.append("At every step both engines computed (same schema, same instance, same prefix), CRC32 of the mask over "
             "ordinary token ids:\n")
    L.append("| pair | steps compared | steps with different masks | walks with a difference |")
    L.append("|---|---:|---:|---:|")
    for pair, s in analysis["mask_pairs"].items():
        L.append(f"| {pair.replace('|', ' vs ')} | {s['steps_compared']} | {s['steps_differing']} | {s['walks_with_a_difference']} |")
    if diag:
        L.append(f"\nDiagnosed first differing steps: {args.diagnose} walks per pair drawn at random (seed {args.seed}, one per "
                 "schema), the two masks recomputed in the parent; kinds:\n")
        kinds = collections.Counter((d["pair"].replace("|", " vs "), d["kind"]) for d in diag)
        for (pair, kind), v in sorted(kinds.items()):
            L.append(f"- {pair}: {kind}: {v}")
        L.append("\nThe examples (tokens decoded, at most 12 shown):\n")
        for d in diag:
            a, b = d["pair"].split("|")
            L.append(f"- {a} vs {b} [{d['kind'].split(' (')[0]}], `{d['file']}` test {d['test']} ({'valid' if d['valid'] else 'invalid'}, {d['variant']}), "
                     f"step {d['step']}, after `…{d['prefix_tail']}` (next token `{d['next_token']}`): "
                     f"only {a} {d[f'n_only_{a}']} {json.dumps(d[f'only_{a}'], ensure_ascii=False)}; "
                     f"only {b} {d[f'n_only_{b}']} {json.dumps(d[f'only_{b}'], ensure_ascii=False)}")
    incons = [(e, x) for e in engines for x in S[e]["inconsistencies"]]
    if incons:
        L.append("\n### Mask vs accept inconsistencies\n")
        for e, (f, i, x) in incons[:20]:
            L.append(f"- {e}: `{f}` test {i}: {x}")
    L.append("")
    with open(os.path.join(args.out, args.name + ".md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(L))


# --------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="/work/shared/data/maskbench")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--limit", type=int, default=None, help="at most N files (after --every)")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--tokenizer", choices=("o200k", "smollm2"), default="o200k")
    p.add_argument("--seed", type=int, default=0, help="which mask differences are diagnosed")
    p.add_argument("--timeout-ms", type=int, default=120000, help="per schema (0: none)")
    p.add_argument("--diagnose", type=int, default=10, help="diagnosed mask differences per engine pair")
    p.add_argument("--out", default=os.path.join(REPO, "examples/results/python"))
    p.add_argument("--name", default=None)
    p.add_argument("--keep-tmp", action="store_true", help="keep the children's outputs (for --reanalyse)")
    p.add_argument("--reanalyse", metavar="TMPDIR", help="write the report again from a kept run's outputs")
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--engine", help=argparse.SUPPRESS)
    p.add_argument("--cases", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.child:
        child(args)
        return
    random.seed(args.seed)
    if args.reanalyse:
        # the report again from a kept run (--keep-tmp): same data, new analysis
        with open(os.path.join(args.reanalyse, "cases.pkl"), "rb") as fh:
            blob = pickle.load(fh)
        with open(os.path.join(args.reanalyse, "state.pkl"), "rb") as fh:
            st = pickle.load(fh)
        spec, cases = blob["spec"], blob["cases"]
        for k in ("data", "every", "limit", "tokenizer", "timeout_ms", "engines"):
            setattr(args, k, st["args"][k])
        args.name = args.name or st["args"]["name"]
        os.makedirs(args.out, exist_ok=True)
        cmd, tokstats, runs, started, load_before, build, run_s = (
            st["cmd"], st["tokstats"], st["runs"], st["started"], st["load_before"], st["build"], st["run_s"])
        engines = list(runs)
        tmp = args.reanalyse
        load_after = st["load_after"]
    else:
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
        for e in engines:
            if e not in ENGINES:
                sys.exit(f"unknown engine {e!r} (choose from {ENGINES})")
        args.name = args.name or f"maskbench_every{args.every}_{args.tokenizer}"
        os.makedirs(args.out, exist_ok=True)
        cmd = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(os.path.abspath(__file__), REPO)] + (sys.argv[1:] if argv is None else argv))
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        t_all = time.monotonic()
        load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        build = zapspec_build()

        print("preparing tokens ...", file=sys.stderr, flush=True)
        spec = tokenizer_spec(args.tokenizer)
        cases, tokstats = prepare(args, spec)
        print(f"{len(cases)} schemas, {tokstats['tokens']} tokens; tiktoken/zapspec mismatches: "
              f"{tokstats['tiktoken_vs_zapspec_mismatch']}", file=sys.stderr, flush=True)
        tmp = tempfile.mkdtemp(prefix="maskbench_py_")
        cases_path = os.path.join(tmp, "cases.pkl")
        with open(cases_path, "wb") as fh:
            pickle.dump({"spec": spec, "cases": cases}, fh)
        runs = {}
        for e in engines:
            print(f"running {e} ...", file=sys.stderr, flush=True)
            runs[e] = run_engine(args, e, cases_path, len(cases), tmp)
            print(f"  {e}: {runs[e]['wall_s']:.1f} s", file=sys.stderr, flush=True)
        run_s = time.monotonic() - t_all
        load_after = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        if args.keep_tmp:
            with open(os.path.join(tmp, "state.pkl"), "wb") as fh:
                pickle.dump({"args": vars(args), "cmd": cmd, "tokstats": tokstats, "runs": runs, "started": started,
                             "load_before": load_before, "load_after": load_after, "build": build, "run_s": run_s}, fh)
    print("analysing ...", file=sys.stderr, flush=True)
    analysis = analyse(args, cases, runs, spec)
    t_diag = time.monotonic()
    diag = diagnose(args, cases, spec, analysis, engines) if len(engines) > 1 and args.diagnose else []
    print(f"  diagnosis: {time.monotonic() - t_diag:.1f} s", file=sys.stderr, flush=True)
    meta = {"machine": machine_note(), "load_before": load_before, "load_after": load_after, "started": started,
            "zapspec_build": build, "total_s": run_s}
    write_report(args, cmd, spec, cases, tokstats, runs, analysis, diag, meta)
    plot(os.path.join(args.out, args.name + ".png"), runs, engines,
         f"MaskBench ({len(cases)} schemas, every {args.every}th, {args.tokenizer}), from Python")
    per_schema = []
    for ci, c in enumerate(cases):
        row = {"file": c["file"]}
        for e in engines:
            r = runs[e]["results"].get(ci, {})
            row[e] = {"status": r.get("status"), "err_cls": r.get("err_cls"), "err": r.get("err"),
                      "ttfm_us": r.get("ttfm_ns", 0) / 1e3 if "ttfm_ns" in r else None,
                      "n_masks": len(r.get("tbm_ns", [])),
                      "tbm_sum_us": sum(r.get("tbm_ns", [])) / 1e3, "tbm_max_us": max(r.get("tbm_ns") or [0]) / 1e3}
        per_schema.append(row)
    out = {"command": cmd, "args": {k: v for k, v in vars(args).items() if k not in ("child", "engine", "cases", "child_out", "start")},
           "meta": meta, "tokenizer": {k: spec[k] for k in ("kind", "vocab_size", "tokenizer_vocab_size", "stop_ids")},
           "token_stats": tokstats, "summary": analysis["summary"], "common_schemas": analysis["common_schemas"],
           "disagreements": analysis["disagreements"], "mask_pairs": analysis["mask_pairs"],
           "mask_examples": {k: v[:50] for k, v in analysis["mask_examples"].items()},
           "diagnosed": diag, "per_schema": per_schema}
    with open(os.path.join(args.out, args.name + ".json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1, ensure_ascii=False)
    if not args.keep_tmp and not args.reanalyse:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    elif not args.reanalyse:
        print(f"kept {tmp} (report again: --reanalyse {tmp})", file=sys.stderr)
    print(open(os.path.join(args.out, args.name + ".md"), encoding="utf-8").read())


if __name__ == "__main__":
    main()
