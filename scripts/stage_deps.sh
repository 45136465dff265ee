#!/usr/bin/env bash
# Stages the header-only and source dependencies that the H200 machine lacks
# (it has no package registry) into .deps/, which scripts/h200_visit.sh uses
# through the h200 preset: CLI11 headers, the cblas headers, GoogleTest source,
# cudnn-frontend headers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what this script stages is replaced: a staged toolchain (.deps/toolchain) stays.
rm -rf .deps/include .deps/googletest && mkdir -p .deps/include
cp -r /usr/include/CLI .deps/include/
for h in cblas.h openblas_config.h; do
  src=$(find /usr/include -name "$h" -path "*openblas-pthread*" | head -1)
  [ -n "$src" ] && cp "$src" .deps/include/
done
[ -f /usr/include/x86_64-linux-gnu/cblas.h ] || true
cp -r /usr/src/googletest .deps/googletest
# cudnn-frontend's headers (header-only, for the cuDNN attention baseline) from
# its PyPI wheel: the include/ folder only, no Python module.
wheels=$(mktemp -d)
if pip download --quiet --no-deps --dest "$wheels" "nvidia-cudnn-frontend==1.32.0"; then
  python3 -m zipfile -e "$wheels"/nvidia_cudnn_frontend-*.whl "$wheels/x"
  cp -r "$wheels/x/include/." .deps/include/
else
  echo "stage_deps: cudnn-frontend not staged (no package registry?); the cuDNN baseline will be off" >&2
fi
rm -rf "$wheels"
du -sh .deps
