#!/usr/bin/env bash
# Builds the rigel binary here for the H200 (sm_90a, Release; this machine's
# nvcc is the H200 machine's version, 13.0) from the committed HEAD, and puts
# it xz-compressed into .visit/rigel.xz beside the export scripts/stage_visit.sh made,
# so that `VISIT_PREBUILT=1 scripts/h200_visit.sh ...` runs it there instead of
# building (about 130 s of a visit). Only the binary travels: steps that need
# other build outputs (tests, the GPU test binaries) still need a build there.
# The binary is stamped with HEAD's commit, as a build there would be; a tree
# with uncommitted changes is refused, so that the stamp says what was built.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .visit/COMMIT ] || { echo "stage_prebuilt: no .visit/COMMIT: run scripts/stage_visit.sh first" >&2; exit 1; }
[ "$(git rev-parse HEAD)" = "$(cat .visit/COMMIT)" ] ||
  { echo "stage_prebuilt: .visit holds $(cat .visit/COMMIT), HEAD is $(git rev-parse HEAD): stage again" >&2; exit 1; }
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
  { echo "stage_prebuilt: uncommitted changes: commit them, the binary is stamped with HEAD" >&2; exit 1; }
# The build globs its sources, so an untracked file under them would be built in and stamped as HEAD.
[ -z "$(git status --porcelain --untracked-files=all -- src include cmake CMakeLists.txt)" ] ||
  { echo "stage_prebuilt: untracked files among the sources: commit or remove them" >&2; exit 1; }
# This machine has the headers .deps/ stages for the H200 machine (CLI11, cudnn-frontend) installed.
BUILD=${PREBUILT_BUILD:-build/prebuilt}
# sm_90a machine code only (90a-real): the PTX beside it, about 6 MiB of the compressed binary, is never used
# on the H200 machine, and a call carries at most 64 MiB with the checkout.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real > /dev/null
# An object for which ninja holds no header dependencies ("#deps 0": five of the generated GEMM tables of
# one long-lived build had none) is never rebuilt when a header changes, and would travel stale: such
# objects are compiled afresh.
ninja -C "$BUILD" -t deps 2>/dev/null | awk '/^[^ ].*\.o: #deps 0,/ {sub(/:$/, "", $1); print $1}' |
  while read -r obj; do echo "stage_prebuilt: $obj has no recorded dependencies: rebuilding it"; rm -f "$BUILD/$obj"; done
cmake --build "$BUILD" --target rigel -j "$(nproc)"
strip -o "$BUILD/rigel.stripped" "$BUILD/src/rigel"
# xz, not gzip: 24 MB where gzip -9 made 32, which with results/ (carried as tracked files) passed the
# 64 MiB a call carries.
rm -f .visit/rigel.gz
xz -9 -T0 -c "$BUILD/rigel.stripped" > .visit/rigel.xz
# The GPU tests are rigel commands (and one example program, 21 MB compressed, which does not travel: its
# test reports "not run"): ctest's description of them, with the folder they were configured in, lets
# scripts/run_gpu_tests.py run them there against the staged binary.
ctest --test-dir "$BUILD" -L gpu --show-only=json-v1 |
  python3 -c 'import json, sys; print(json.dumps({"build_dir": sys.argv[1], "tests": json.load(sys.stdin)["tests"]}))' \
    "$(realpath "$BUILD")" > .visit/gpu_tests.json
# The staged headers and the sources are for a build on the H200 machine, which a prebuilt visit skips:
# left behind, so that the export, the binary and the checkout stay inside the 64 MiB a call carries (the
# binary alone is 24 MB compressed). PREBUILT_KEEP_SOURCES=1 keeps them, for a visit that also builds
# (the SASS steps, which read the build's objects).
if [ "${PREBUILT_KEEP_SOURCES:-0}" != 1 ]; then
  # What a prebuilt visit reads: the binaries, the GPU tests, the commit id and the scripts.
  find .visit -mindepth 1 -maxdepth 1 ! -name rigel.xz ! -name gpu_tests.json \
    ! -name COMMIT ! -name scripts -exec rm -rf {} +
fi
echo "staged the rigel binary of $(cat .visit/COMMIT) into .visit/rigel.xz ($(du -h .visit/rigel.xz | cut -f1))"
# What a call carries: the tracked files as they are here (results/ among them) and .visit. Past 64 MiB the
# call is refused before it starts, so say so here.
carried=$(( $(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s}') + $(du -sb .visit | cut -f1) ))
echo "a call carries about $((carried / 1048576)) MiB of the 64 it may"
[ "$carried" -lt $((64 * 1048576)) ] || echo "stage_prebuilt: over 64 MiB: the call will be refused" >&2
