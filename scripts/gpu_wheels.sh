#!/usr/bin/env bash
# Download the wheels of scripts/gpu_wheels.txt for a Linux x86_64 GPU machine with
# Python 3.12 into DIR (default .whl), on a machine with a network:
#   bash scripts/gpu_wheels.sh [DIR]
set -euo pipefail
dir=${1:-.whl}
here=$(cd "$(dirname "$0")" && pwd)
grep -v '^#' "$here/gpu_wheels.txt" | grep . | while read -r req; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 --platform any -d "$dir" "$req"
done
du -sh "$dir"
