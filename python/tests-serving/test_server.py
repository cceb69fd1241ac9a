"""vLLM's OpenAI-compatible server on 127.0.0.1 with ``ZAPSPEC_VLLM=1`` (the
engine core in its own process, as users run it): chat requests with
``response_format`` (JSON schema, ``json_object``), vLLM's
``structured_outputs`` extension (regex, grammar, choice, structural tag),
tools with ``tool_choice`` auto / required / named through the Hermes tool
parser, a refused schema as HTTP 400, and 64 mixed requests 16 at a time with
hostile constraints among them (a 1 MB enum, ``$ref`` cycles, a dozen nested
``anyOf``s, a regex of nested counted repeats)."""

import json
import re
import pathlib
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import pytest

from cases import MODEL, WEATHER, cases, check

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "vllm"))
from hostile import hostile  # noqa: E402
from server import post as _post  # noqa: E402
from server import serve  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    extra = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    with serve(str(MODEL), "zapspec", str(log), extra=extra) as url:
        yield url, log


def _chat(prompt: str, **kw) -> dict:
    return {"model": "smollm2", "messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": kw.pop("max_tokens", 160), **kw}


def test_both_processes_run_zapspec(server):
    url, log = server
    _post(url, _chat("hi", max_tokens=2, response_format={"type": "json_object"}))
    pids = {line.rsplit("pid ", 1)[1].rstrip(")\n") for line in log.read_text().splitlines() if "serves vLLM's xgrammar" in line}
    assert len(pids) >= 2, "the plugin should run in the API server and in the engine core process"


def test_response_format_json_schema(server):
    url, _ = server
    rf = {"type": "json_schema", "json_schema": {"name": "weather", "schema": WEATHER, "strict": True}}
    status, r = _post(url, _chat("What is the weather request for Rome? Answer in JSON.", response_format=rf))
    assert status == 200, r
    jsonschema.validate(json.loads(r["choices"][0]["message"]["content"]), WEATHER)


def test_response_format_json_object_is_an_object_not_whitespace(server):
    url, _ = server
    status, r = _post(url, _chat("Describe a dog as a JSON object with the keys name, breed and age.", response_format={"type": "json_object"}, max_tokens=200))
    assert status == 200, r
    text = r["choices"][0]["message"]["content"]
    # the bug this guards against: `{"type": "object"}` compiled as the empty
    # object, so the model could only write whitespace before `}`
    assert re.match(r'\{\s*"[^"]+"\s*:', text), text
    if r["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(text), dict), text


def test_a_refused_schema_is_http_400_with_zapspec_s_pointer(server):
    url, _ = server
    bad = {"type": "object", "properties": {"a": {"type": "strin"}}}
    rf = {"type": "json_schema", "json_schema": {"name": "bad", "schema": bad}}
    status, r = _post(url, _chat("x", response_format=rf))
    assert status == 400, r
    assert "zapspec refused the JSON schema at /properties/a" in json.dumps(r), r
    # the server keeps serving
    status, r = _post(url, _chat("Say hi.", max_tokens=4))
    assert status == 200, r


TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city", "parameters": WEATHER, "strict": True}},
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 40}}, "required": ["query"]},
            "strict": True,
        },
    },
]


@pytest.mark.parametrize("choice", ["auto", "required", "named"])
def test_tool_calls(server, choice):
    url, _ = server
    tc = {"type": "function", "function": {"name": "get_weather"}} if choice == "named" else choice
    status, r = _post(url, _chat("What's the weather in Berlin? Use the tools.", tools=TOOLS, tool_choice=tc, max_tokens=200))
    assert status == 200, r
    msg = r["choices"][0]["message"]
    calls = msg.get("tool_calls") or []
    if choice != "auto":
        assert calls, msg
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    for c in calls:
        assert c["function"]["name"] in params, c
        if choice == "named":
            assert c["function"]["name"] == "get_weather"
        jsonschema.validate(json.loads(c["function"]["arguments"]), params[c["function"]["name"]])


def _so_body(case: dict) -> dict:
    kind, spec = case["kind"], case["spec"]
    return _chat(case["prompt"], max_tokens=case.get("max_tokens", 96), structured_outputs={kind: spec})


def test_mixed_load_with_hostile_constraints(server):
    url, _ = server
    normal = [c for c in cases() if c["kind"] != "none"]
    bad = [{"id": n, "kind": k, "spec": s, "prompt": "Answer.", "max_tokens": 48} for n, k, s in hostile()]
    work = []
    i = 0
    while len(work) < 64:
        # hostile constraints early, among the first requests
        if i % 16 == 1 and i // 16 < len(bad):
            work.append(("hostile", bad[i // 16]))
        else:
            work.append(("normal", normal[i % len(normal)]))
        i += 1

    def one(item):
        what, case = item
        t = time.time()
        status, r = _post(url, _so_body(case))
        return what, case, status, r, time.time() - t

    with ThreadPoolExecutor(16) as ex:
        results = list(ex.map(one, work))
    lat = sorted(t for w, _, _, _, t in results if w == "normal")
    report = {c["id"]: (s, round(t, 2)) for w, c, s, _, t in results if w == "hostile"}
    print(f"normal latency p50 {lat[len(lat) // 2]:.2f}s max {lat[-1]:.2f}s; hostile (status, s): {report}")
    for what, case, status, r, _ in results:
        if what == "hostile":
            assert status in (200, 400), (case["id"], status, r)
            continue
        assert status == 200, (case["id"], r)
        ch = r["choices"][0]
        assert ch["finish_reason"] == "stop", (case["id"], ch)
        check(case, ch["message"]["content"])
