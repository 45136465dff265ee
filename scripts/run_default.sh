#!/usr/bin/env bash
# `make run`: the main job on what this machine has. The CPU ladder's default
# always; when rigel finds a usable CUDA device, the GPU ladder's short default
# too, the suite gpu_short: the best SIMT rung in f32, then mma.sync, the
# persistent wgmma kernel and the cluster-multicast kernel in bf16, each beside
# cuBLAS, at 2048^3 and 4096^3 (a couple of minutes on the H200 machine;
# `rigel ladder --list-suites` shows its options). Each run ends in its table
# and writes its CSV and JSON sidecar to OUT_DIR.
set -euo pipefail

usage="usage: scripts/run_default.sh RIGEL_BINARY OUT_DIR"
rigel=${1:?$usage}
out=${2:?$usage}

# Said first, so that the output still ends in a table.
cuda=$("$rigel" env | awk '$1 == "cuda_backend" { $1 = ""; sub(/^ +/, ""); print }')
if [ "$cuda" != "available" ]; then
  echo "run_default: the CPU ladder only; no GPU ladder: ${cuda:-rigel env names no cuda_backend}"
fi

"$rigel" ladder --backend cpu --out "$out"

[ "$cuda" = "available" ] || exit 0
"$rigel" ladder --suite gpu_short --out "$out"
