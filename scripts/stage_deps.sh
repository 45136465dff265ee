#!/usr/bin/env bash
# Stages the header-only and source dependencies that the H200 machine lacks
# (it has no package registry) into .deps/, which scripts/h200_visit.sh uses
# through the h200 preset: CLI11 headers, the cblas headers, GoogleTest source.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/include
cp -r /usr/include/CLI .deps/include/
for h in cblas.h openblas_config.h; do
  src=$(find /usr/include -name "$h" -path "*openblas-pthread*" | head -1)
  [ -n "$src" ] && cp "$src" .deps/include/
done
[ -f /usr/include/x86_64-linux-gnu/cblas.h ] || true
cp -r /usr/src/googletest .deps/googletest
du -sh .deps
