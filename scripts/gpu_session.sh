#!/usr/bin/env bash
# The whole GPU job of one short lease, in one call: every chapter at FULL=1 at once
# (python -m booktools.full_run, cut at DEADLINE seconds), then the device tests. On a GPU image
# without a network the runner's wheels come in .whl/ (not in git: bash
# scripts/gpu_wheels.sh .whl on a machine with a network, then copy it over); with a
# network, pip install -r requirements.txt instead. Results go to $OUT (default _build/gpu):
#   full_run.tsv (chapter, seconds, peak GPU memory, checks), full_run/ (every check, the
#   executed notebooks), gpu.txt (the card), device_tests.txt.
#   OUT=/some/dir DEADLINE=480 JOBS=10 bash scripts/gpu_session.sh
set -uo pipefail
out=${OUT:-_build/gpu}
deadline=${DEADLINE:-480}
jobs=${JOBS:-10}
mkdir -p "$out"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
  >> "$out/gpu.txt"
python3 -m booktools.full_run --jobs "$jobs" --deadline "$deadline" --out "$out/full_run.tsv" \
  2>&1 | tee "$out/full_run.log"
timeout 90 python3 -m pytest -o addopts="" -q tests/test_device.py > "$out/device_tests.txt" 2>&1
tail -3 "$out/device_tests.txt"
