#!/usr/bin/env bash
# `make run`: the main job on what this machine has. The CPU ladder's default
# always; when rigel finds a usable CUDA device, the GPU ladder's short default
# too: the best SIMT rung in f32, then mma.sync, the persistent wgmma kernel and
# the cluster-multicast kernel in bf16, each beside cuBLAS, at 2048^3 and
# 4096^3 (a couple of minutes on the H200 machine). Each run ends in its table
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
"$rigel" ladder --backend cuda \
  --rungs k16_warptiled k21_mma_sync k32_wgmma_persistent k35_wgmma_cluster_multicast vendor \
  --dtype f32 bf16 --sizes 2048 4096 --out "$out"
