#!/usr/bin/env bash
# Stages the compile half of the toolchain that scripts/version_gates.py asks,
# without installing CUDA: ptxas and NVRTC 13.0.88 from NVIDIA's PyPI wheels
# (nvidia-cuda-nvcc, nvidia-cuda-nvrtc; their SHA-256 checked), into
# .deps/toolchain/{bin,lib}. CI runs it before the tests; it exits non-zero,
# staging nothing, where the package registry cannot be reached, and the gates'
# test then skips. Idempotent: a staged toolchain is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.deps/toolchain
if [ -x "$dest/bin/ptxas" ] && [ -f "$dest/lib/libnvrtc.so.13" ]; then
  echo "stage_toolchain: $dest already holds ptxas and NVRTC"
  exit 0
fi
version=13.0.88
declare -A sha=(
  [nvidia_cuda_nvcc]=56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03
  [nvidia_cuda_nvrtc]=ad9b6d2ead2435f11cbb6868809d2adeeee302e9bb94bcf0539c7a40d80e8575
)
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for pkg in nvidia_cuda_nvcc nvidia_cuda_nvrtc; do
  if ! "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" \
      "${pkg//_/-}==$version" >/dev/null 2>&1; then
    echo "stage_toolchain: ${pkg//_/-}==$version could not be downloaded (no package registry?)" >&2
    exit 1
  fi
  wheel=$(ls "$work"/${pkg}-${version}-*.whl)
  got=$(sha256sum "$wheel" | cut -d' ' -f1)
  if [ "$got" != "${sha[$pkg]}" ]; then
    echo "stage_toolchain: $(basename "$wheel") has SHA-256 $got, not ${sha[$pkg]}" >&2
    exit 1
  fi
  "$PYTHON" -m zipfile -e "$wheel" "$work/x"
done
mkdir -p "$work/stage/bin" "$work/stage/lib"
cp "$work/x/nvidia/cu13/bin/ptxas" "$work/stage/bin/"
cp "$work"/x/nvidia/cu13/lib/libnvrtc.so.13 "$work"/x/nvidia/cu13/lib/libnvrtc-builtins.so.13.0 "$work/stage/lib/"
chmod +x "$work/stage/bin/ptxas"
rm -rf "$dest" && mkdir -p "$(dirname "$dest")" && mv "$work/stage" "$dest"
echo "stage_toolchain: ptxas and NVRTC $version in $dest"
