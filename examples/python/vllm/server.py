"""Starts vLLM's OpenAI-compatible server on 127.0.0.1 with one
structured-output backend: ``zapspec`` (vLLM's ``xgrammar`` name with
``ZAPSPEC_VLLM=1``: the plugin serves it), ``xgrammar`` or ``guidance``.
Shared by ``python/tests-serving`` and ``bench.py``."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

SERVED_NAME = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(model: str, backend: str, log_path: str, *, max_num_seqs: int = 16, extra=(), timeout: float = 600):
    """Yields the server's base URL once ``/health`` answers; stops it after."""
    if backend not in ("zapspec", "xgrammar", "guidance"):
        raise ValueError(f"unknown backend {backend!r}")
    port = free_port()
    env = dict(os.environ)
    env.pop("ZAPSPEC_VLLM", None)
    if backend == "zapspec":
        env["ZAPSPEC_VLLM"] = "1"
    so = json.dumps({"backend": "xgrammar" if backend == "zapspec" else backend})
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model, "--served-model-name", SERVED_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--enforce-eager", "--dtype", "bfloat16", "--max-model-len", "4096",
        "--kv-cache-memory-bytes", str(1 << 30), "--seed", "0",
        "--max-num-seqs", str(max_num_seqs), "--structured-outputs-config", so,
        *extra,
    ]  # fmt: skip
    log = open(log_path, "w")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            if p.poll() is not None:
                raise RuntimeError(f"the vLLM server exited ({p.returncode}):\n{_tail(log_path)}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.time() > deadline:
                raise RuntimeError(f"the vLLM server did not start in {timeout:.0f} s:\n{_tail(log_path)}")
            time.sleep(1)
        yield url
    finally:
        p.terminate()
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()


def _tail(path: str, n: int = 6000) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def post(url: str, body: dict, timeout: float = 600):
    """(status, JSON body) of a chat completion request."""
    req = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read() or b"{}"
        try:
            return e.code, json.loads(raw)
        except json.JSONDecodeError:
            return e.code, {"raw": raw.decode(errors="replace")}


def stream(url: str, body: dict, timeout: float = 600) -> dict:
    """A streamed chat completion: status, text, finish reason, completion
    tokens (usage), time to first content and total time, in seconds."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    req = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    t0 = time.perf_counter()
    out = {"status": 200, "text": "", "finish_reason": None, "tokens": 0, "ttft": None, "error": None}
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                ev = json.loads(data)
                if ev.get("error"):
                    out["error"] = ev["error"]
                for ch in ev.get("choices") or []:
                    piece = (ch.get("delta") or {}).get("content")
                    if piece:
                        if out["ttft"] is None:
                            out["ttft"] = time.perf_counter() - t0
                        out["text"] += piece
                    if ch.get("finish_reason"):
                        out["finish_reason"] = ch["finish_reason"]
                if ev.get("usage"):
                    out["tokens"] = ev["usage"].get("completion_tokens", 0)
    except urllib.error.HTTPError as e:
        out["status"] = e.code
        out["error"] = (e.read() or b"").decode(errors="replace")[:500]
    out["latency"] = time.perf_counter() - t0
    return out
