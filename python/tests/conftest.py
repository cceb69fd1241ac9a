"""Shared fixtures: the tokenizer under test is SmolLM2's GGUF vocabulary
when ``scripts/fetch-smollm2.sh`` has fetched it, else tiktoken's o200k
(built into the package); the MaskBench sample is ``../shared/data/maskbench``
beside the checkout (tests that need it skip with a message without it)."""

import glob
import json
import os
import pathlib

import pytest

import zapspec

ROOT = pathlib.Path(__file__).resolve().parents[2]
GGUF = ROOT / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MASKBENCH = ROOT.parent / "shared" / "data" / "maskbench"


@pytest.fixture(scope="session")
def info() -> zapspec.TokenizerInfo:
    if GGUF.exists():
        return zapspec.TokenizerInfo.from_gguf(str(GGUF))
    print("SmolLM2 is not fetched (scripts/fetch-smollm2.sh): testing over tiktoken o200k")
    return zapspec.TokenizerInfo.from_tiktoken("o200k_base")


@pytest.fixture(scope="session")
def compiler(info: zapspec.TokenizerInfo) -> zapspec.GrammarCompiler:
    return zapspec.GrammarCompiler(info)


def maskbench_sample(every: int):
    """Every ``every``-th MaskBench file (sorted), as (name, schema, valid
    instances, invalid instances); skips the test without the data."""
    files = sorted(glob.glob(str(MASKBENCH / "*.json")))
    if not files:
        pytest.skip(f"MaskBench data not found at {MASKBENCH}")
    out = []
    for f in files[::every]:
        with open(f) as fh:
            d = json.load(fh)
        valid = [t["data"] for t in d["tests"] if t["valid"]]
        invalid = [t["data"] for t in d["tests"] if not t["valid"]]
        out.append((os.path.basename(f), d["schema"], valid, invalid))
    return out


def compact(instance) -> str:
    return json.dumps(instance, separators=(",", ":"), ensure_ascii=False)
