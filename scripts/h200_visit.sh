#!/usr/bin/env bash
# One visit to the H200 machine: configure and build (ninja, all cores) into
# $BUILD (../build/h200-visit beside the export: a warm machine keeps it
# between calls, so a second call rebuilds what changed), run the GPU tests, then whatever is asked for, and copy the CSV
# and JSON results and the logs into $OUT/visit.tar.gz. The last thing printed is a short
# table. Usage: scripts/h200_visit.sh [tests] [ladder] [bench] [probes] [sass]
# [cpu] [bench_llm] [fp4] [splitk] [alignment] [sanitize] [gemm] [gemm_quick]
# [gemm_compare] [attention] [attention_quick] [train] [train_compare] [emulate]
# [ncu_gemm] [train_full] [gemm_bench] [emulate_vendor] [blockscaled] [dist_one] [ncu_attention] [emulate_fp8]
# [train_det] [ncu_train] [ncu_time] [ncu_rungs] [sass_edit] [env_variants] [gemm_runs] [rungs_paired]
# [dist_node] [fleet] [ncu_rungs_sol] [train_dgelu] [ncu_sustained]
# (default: tests ladder probes sass). Reads nothing outside the checkout; needs
# .deps/ (scripts/stage_deps.sh) for the headers that machine lacks.
set -uo pipefail
self=$(realpath "$0")
# Every timeout below also kills what outlives its signal by 20 s: rigel's first SIGINT only asks it to
# stop after the measurement in progress, which a kernel that hangs never reaches, and a step that
# never ends would take the call's whole limit and the archive with it.
timeout() { command timeout -k 20 "$@"; }
cd "$(dirname "$0")/.."
# NVLink multicast stays off on the H200 machines (NCCL's NVLS can take a shared host's GPUs out of
# service): kept off here too, whatever the environment says, for every rank `rigel launch` starts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The device machine's copy of .git holds no history, so the commit comes with
# the tree: scripts/stage_visit.sh exports the committed HEAD into .visit/ (with
# its commit id in .visit/COMMIT, which the build embeds in the binary); this
# script builds that export when present.
if [ -f .visit/COMMIT ]; then
  cd .visit
fi
# Everything goes to a staging folder and comes back as one archive (the
# device tool returns at most 8 files).
FINAL=${OUT:-$PWD/out/h200}
OUT=$(mktemp -d /tmp/rigel_visit.XXXXXX)
mkdir -p "$FINAL"
# Checkpoints (1.5 GB each for GPT-2) never travel: an archive with them is
# over the size that comes back, and the whole visit's results are lost.
pack() { tar czf "$FINAL/visit.tar.gz" --exclude='*.ckpt' -C "$OUT" . ; }
trap pack EXIT
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests ladder probes sass)
# A misspelt step would be skipped in silence after the machine's start: refused before anything runs.
known_steps=$(grep -oE '\bhas [a-z_0-9]+' "$self" | awk '{print $2}' | sort -u)
for s in "${steps[@]}"; do
  grep -qx -- "$s" <<< "$known_steps" || { echo "h200_visit: no step named '$s'" >&2; exit 2; }
done
has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
log() { echo "== $*" >&2; }
# Outside .visit, which each call replaces; a cache from another source folder
# is dropped and the build starts afresh.
BUILD=$(realpath -m "${VISIT_BUILD:-$PWD/../build/h200-visit}")  # as CMake writes it, for pkill below
[ -f .visit/COMMIT ] || [ -f COMMIT ] || BUILD=${VISIT_BUILD:-build/h200}
RIGEL=$BUILD/src/rigel
summary=()
# VISIT_BUDGET_S: the seconds this visit may take (the call's limit less a
# margin); a step that would not finish inside it is skipped and says so,
# so that the archive is always written.
visit_start=$(date +%s)
budget=${VISIT_BUDGET_S:-100000}
seconds_left() { echo $(( budget - ($(date +%s) - visit_start) )); }
fits() {  # fits SECONDS NAME: room for a step of about SECONDS?
  local left; left=$(seconds_left)
  if [ "$left" -lt "$1" ]; then summary+=("$2: skipped, ${left} s left of the visit's budget"); return 1; fi
}
# capped SECONDS: SECONDS, or what is left of the budget if less (at least 1),
# for a step's own timeout, so that a step that fits() cannot outlast the call.
capped() { local left; left=$(seconds_left); [ "$left" -lt "$1" ] && echo $(( left > 1 ? left : 1 )) || echo "$1"; }
# train_log NAME DIR: the GPT-2 training log `rigel train run --out DIR` wrote (CSV and sidecar, which
# names the CSV) into $OUT as <date>_<commit>_NAME_gpt2_cuda.*, and DIR removed.
train_log() {
  local f
  for f in "$2"/*_train_gpt2_cuda.*; do
    [ -f "$f" ] || continue
    sed -i "s/_train_gpt2_cuda\.csv/_${1}_gpt2_cuda.csv/" "$f"
    mv "$f" "$OUT/$(basename "${f/_train_gpt2_cuda/_${1}_gpt2_cuda}")"
  done
  rm -rf "$2"
}

log "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv 2>&1 | tee "$OUT/nvidia_smi.txt"
# The run as rigel names its files (<UTC date>_<commit>), for scripts/file_results.py to file the logs
# of a visit that wrote no CSV (tests alone), whose card it reads from nvidia_smi.txt.
visit_commit=$(cat COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)
echo "$(date -u +%F)_${visit_commit:0:7}" > "$OUT/RUN"

log "configure and build"
start=$(date +%s)
# VISIT_PREBUILT=1: the binary scripts/stage_prebuilt.sh built on the development machine from the same
# commit (rigel.xz in the export, or rigel.gz from an older stage) instead of a build here; steps that
# need more than the binary (tests) still need a build. xz -d where the machine has it, else Python's lzma.
if [ "${VISIT_PREBUILT:-0}" = 1 ] && { [ -f rigel.xz ] || [ -f rigel.gz ]; }; then
  mkdir -p "$BUILD/src"
  if [ -f rigel.xz ]; then
    xz -dc rigel.xz > "$RIGEL" 2>/dev/null ||
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open("rigel.xz"), sys.stdout.buffer)' > "$RIGEL"
  else
    gunzip -c rigel.gz > "$RIGEL"
  fi
  chmod +x "$RIGEL"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ! "$RIGEL" --help > /dev/null 2>&1; then
    ldd "$RIGEL" | grep -i "not found"
    echo "PREBUILT BINARY DOES NOT RUN"
    exit 1
  fi
  summary+=("build: none, the development machine's binary of $(cat COMMIT 2>/dev/null)")
else
  # The h200 preset's settings, with make where that machine's ninja does not run.
  gen="Ninja"; ninja --version >/dev/null 2>&1 || gen="Unix Makefiles"
  configure() {
    cmake -S . -B "$BUILD" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DRIGEL_DEPS_DIR="$PWD/.deps" > "$OUT/build.log" 2>&1
  }
  configure || { rm -rf "$BUILD"; configure; }
  if ! { [ -f "$BUILD/CMakeCache.txt" ] && cmake --build "$BUILD" -j "$(nproc)" >> "$OUT/build.log" 2>&1; }; then
    grep -E "error|Error" "$OUT/build.log" | head -40
    echo "BUILD FAILED (see build.log)"
    exit 1
  fi
  summary+=("build: ok in $(( $(date +%s) - start )) s")
  # Each object's compile time (ninja's log: start and end in ms), the slowest first, for the build's critical path.
  [ -f "$BUILD/.ninja_log" ] && awk 'NR > 1 { printf "%.1f %s\n", ($2 - $1) / 1000, $4 }' "$BUILD/.ninja_log" |
    sort -rn > "$OUT/build_times.txt"
fi

if has sass && [ "${VISIT_PREBUILT:-0}" = 1 ]; then
  summary+=("sass: skipped, the prebuilt binary comes without the build's objects")
elif has sass; then
  log "sass"
  # Matrix opcodes per compiled rung file: which unit each path reaches.
  {
    echo "object,hgmma,qgmma,igmma,hmma,imma,dmma,ffma,hfma2,dfma"
    for o in $(find "$BUILD"/src/CMakeFiles/rigel_cuda.dir -name "*.o" | sort); do
      s=$(cuobjdump --dump-sass "$o" 2>/dev/null)
      printf "%s" "$(basename "$o" .cu.o)"
      for op in HGMMA QGMMA IGMMA HMMA IMMA DMMA FFMA HFMA2 DFMA; do
        printf ",%d" "$(grep -cE "[[:space:]]$op[. ;]" <<<"$s")"
      done
      echo
    done
  } > "$OUT/sass_opcodes.csv"
  # The same counts per kernel for the probes and the Hopper rungs: a path's
  # verdict rests on the instructions of the kernel that measured it.
  {
    echo "object,kernel,hgmma,qgmma,igmma,hmma,imma,dmma,ffma,hfma2,dfma,f2fp"
    for o in $(find "$BUILD"/src/CMakeFiles/rigel_cuda.dir \( -path "*probes*" -o -path "*hopper*" \) -name "*.o" | sort); do
      cuobjdump --dump-sass "$o" 2>/dev/null | awk -v obj="$(basename "$o" .cu.o)" '
        function flush() { if (fn != "") { printf "%s,%s", obj, fn; for (i = 1; i <= 10; ++i) printf ",%d", n[i]; print "" } }
        BEGIN { split("HGMMA QGMMA IGMMA HMMA IMMA DMMA FFMA HFMA2 DFMA F2FP", ops, " ") }
        /Function :/ { flush(); fn = $3; for (i = 1; i <= 10; ++i) n[i] = 0; next }
        { for (i = 1; i <= 10; ++i) if ($0 ~ ("[[:space:]]" ops[i] "[. ;]")) n[i]++ }
        END { flush() }'
    done
  } > "$OUT/sass_kernels.csv"
  # Local-memory instructions per kernel of every object: ptxas's spill line
  # does not count a by-value parameter copied to local memory or an array
  # indexed at run time, and both once cost the GEMM library's epilogue half
  # its speed (docs/gemm.md). The kernels with the most come first.
  {
    echo "object,kernel,ldl,stl"
    for o in $(find "$BUILD"/src/CMakeFiles/rigel_cuda.dir -name "*.o" | sort); do
      cuobjdump --dump-sass "$o" 2>/dev/null | awk -v obj="$(basename "$o" .cu.o)" '
        function flush() { if (fn != "") printf "%s,%s,%d,%d\n", obj, fn, l, s }
        /Function :/ { flush(); fn = $3; l = 0; s = 0; next }
        /[[:space:]]LDL[. ]/ { l++ } /[[:space:]]STL[. ]/ { s++ }
        END { flush() }'
    done
  } > "$OUT/sass_local.csv"
  summary+=("sass: $(awk -F, 'NR > 1 && $3 + $4 > 0' "$OUT/sass_local.csv" | wc -l) kernel(s) with local memory; most: $(sort -t, -k3,3nr "$OUT/sass_local.csv" | head -1)")
fi

if has tests && [ "${VISIT_PREBUILT:-0}" = 1 ] && [ ! -f gpu_tests.json ]; then
  summary+=("tests: skipped, the prebuilt binary came without gpu_tests.json (an older stage)")
elif has tests && [ "${VISIT_PREBUILT:-0}" = 1 ]; then
  log "GPU tests (the staged binaries)"
  # The GPU tests are rigel commands: run as ctest describes them, against the staged binary, each under
  # its own limit, the whole under TESTS_TIMEOUT_S as below.
  timeout -k 10 "$(capped "${TESTS_TIMEOUT_S:-400}")" python3 scripts/run_gpu_tests.py gpu_tests.json \
    --build "$BUILD" -j 4 ${TESTS_REGEX:+--regex "$TESTS_REGEX"} --log "$OUT/tests.log"
  rc=$?
  [ $rc -ge 124 ] && { pkill -KILL -f -- "$BUILD/" ; echo "tests: stopped after ${TESTS_TIMEOUT_S:-400} s" >> "$OUT/tests.log"; }
  summary+=("tests: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1) (rc $rc)")
  grep -E "^==== .*: (failed|timeout|not run)" "$OUT/tests.log" | head -20
elif has tests; then
  log "GPU tests"
  # TESTS_REGEX picks a subset (ctest -R); all GPU tests by default.
  # TESTS_TIMEOUT_S (default 400) bounds the whole run, so that a kernel that
  # hangs costs that much of the visit and not the call (the GPU tests' own
  # limits reach 900 s); whatever it leaves running is stopped after it.
  timeout -k 10 "$(capped "${TESTS_TIMEOUT_S:-400}")" ctest --test-dir "$BUILD" --output-on-failure -j 4 \
    ${TESTS_REGEX:+-R "$TESTS_REGEX"} > "$OUT/tests.log" 2>&1
  rc=$?
  [ $rc -ge 124 ] && { pkill -KILL -f -- "$BUILD/" ; echo "tests: stopped after ${TESTS_TIMEOUT_S:-400} s" >> "$OUT/tests.log"; }
  summary+=("tests: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1) (rc $rc)")
  grep -E "FAIL|Failed|\*\*\*" "$OUT/tests.log" | head -20
fi

if has probes; then
  log "probes"
  # PROBES names some (e.g. "accumulation throughput"); all by default.
  for probe in ${PROBES:-all}; do
    $RIGEL probe "$probe" --out "$OUT" >> "$OUT/probes.txt" 2>> "$OUT/probes.err"
    summary+=("probe $probe: rc $?")
  done
fi

# compute-sanitizer over every CUDA rung (verify only, on shapes that are
# multiples of no tile) and every probe (--quick): one run per tool and target,
# the eight at once (each its own process and context), each cut at 300 s.
# sanitizer.csv keeps each run's error count; the logs keep the reports. The
# probes provoke API refusals on purpose (the TMA encoder on the maps the
# alignment probe sweeps, the PTX JIT on a cvt without .satfinite), so their
# memcheck reports memory errors and leaks but not API errors; the ladder's
# reports everything.
sanitize_one() {  # tool target
  local tool=$1 target=$2 args extra=() log="$OUT/sanitize_$1_$2.log"
  if [ "$target" = ladder ]; then
    args=(ladder --backend cuda --verify-only --dtype all --sizes 129x257x264 17x33x520)
  else
    args=(probe all --quick --avoid-faults --out "$OUT/sanitize_probes_$tool")
  fi
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  [ "$tool" = memcheck ] && [ "$target" = probes ] && extra+=(--report-api-errors no)
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  timeout "$(capped 300)" compute-sanitizer --tool "$tool" "${extra[@]}" --print-limit 200 "$RIGEL" "${args[@]}" > "$log" 2>&1
  echo $? > "$log.rc"
  echo "compute-sanitizer --tool $tool ${extra[*]} rigel ${args[*]}" > "$log.cmd"
}
if has sanitize; then
  log "compute-sanitizer"
  tools=(memcheck racecheck synccheck initcheck)
  for tool in "${tools[@]}"; do
    for target in ladder probes; do sanitize_one "$tool" "$target" & done
  done
  wait
  echo "tool,target,command,rc,errors,summary" > "$OUT/sanitizer.csv"
  for tool in "${tools[@]}"; do
    for target in ladder probes; do
      log_file="$OUT/sanitize_${tool}_${target}.log"
      rc=$(cat "$log_file.rc"); cmd=$(cat "$log_file.cmd"); rm -f "$log_file.rc" "$log_file.cmd"
      # memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors"; racecheck:
      # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
      line=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log_file" | tail -1)
      errors=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/p; s/.*\(([0-9]+) errors?,.*/\1/p' <<<"$line" | tail -1)
      [ "$rc" = 124 ] && line="timed out after 300 s"
      echo "$tool,$target,\"$cmd\",$rc,${errors:-},\"${line//\"/\'}\"" >> "$OUT/sanitizer.csv"
      rm -rf "$OUT/sanitize_probes_$tool"
      summary+=("sanitize $tool $target: rc $rc ${line:-no summary line}")
    done
  done
fi

# The alignment probe alone (seconds).
if has alignment; then
  log "alignment probe"
  $RIGEL probe alignment --out "$OUT" > "$OUT/alignment.txt" 2> "$OUT/alignment.err"
  summary+=("alignment: rc $?")
fi

# The ladder steps run rigel's named suites (`rigel ladder --list-suites` shows
# what each runs); each CSV and sidecar comes back named for its suite.
suite() {  # suite STEP_FILE SUITE: append the run's table and log to STEP_FILE.txt/.err
  # LADDER_PAIRED=1: each rung also against its vendor in paired samples (rigel ladder --paired).
  $RIGEL ladder --suite "$2" ${LADDER_PAIRED:+--paired} --out "$OUT" >> "$OUT/$1.txt" 2>> "$OUT/$1.err"
  summary+=("$1 (suite $2): rc $?")
}

if has cpu; then
  log "cpu ladder"
  lscpu > "$OUT/lscpu.txt" 2>&1
  suite cpu cpu
  suite cpu cpu_f64
fi

# The FP4 emulation against the f16 mma.sync rung it is built on.
if has fp4; then
  log "fp4 emulation"
  suite fp4 fp4
fi

# Split K on the skinny shapes where whole-tile rungs leave SMs idle.
if has splitk; then
  log "split-K"
  suite splitk splitk
fi

if has ladder; then
  log "ladder"
  suite ladder gpu_ladder
fi

# Some rungs by name, verified on shapes that are multiples of no tile (bf16 and f16; those their
# plans re-tile among them), then timed against their vendor rung in paired samples, into one CSV.
# RUNGS (default: k40 and k42, whose narrow tails the sizes exercise: 104 wide at 2500 x 2100 and 4096,
# 64 wide at 3001^2 and 3072^2), RUNG_SIZES, RUNG_DTYPE.
if has rungs_paired; then
  log "rungs, verified and paired"
  rungs=${RUNGS:-k40_wgmma_narrow_tail k42_wgmma_tail_fit}
  timeout "$(capped 150)" $RIGEL ladder --backend cuda --verify-only --rungs $rungs --dtype bf16 f16 \
    --sizes 3001x3001x296 2500x2100x136 4096x4096x200 8192x8192x136 6144x6144x64 3072x3072x136 2900x3176x200 \
    > "$OUT/rungs_verify.txt" 2>&1
  summary+=("rungs verified: rc $? ($(grep -c -i 'fail' "$OUT/rungs_verify.txt") lines naming a failure)")
  timeout "$(capped 330)" $RIGEL ladder --backend cuda --rungs $rungs vendor --dtype "${RUNG_DTYPE:-bf16}" \
    --sizes ${RUNG_SIZES:-4096 8192 6144 3072 2048} --paired --out "$OUT" > "$OUT/rungs_paired.txt" 2>&1
  summary+=("rungs paired: rc $?")
fi

# The shape sweep of the Hopper rungs against cuBLAS, in two parts that each fit
# one device call: square sizes, then 16384^3 and LLM shapes.
if has bench; then
  log "bench (square sizes)"
  suite bench bench
fi

if has bench_llm; then
  log "bench (16384^3 and LLM shapes)"
  suite bench_llm bench_llm
fi

# The GEMM library: every combination verified against float64, then rigel
# against cuBLASLt, cuBLAS and its decomposed path in paired samples, every
# timed suite (gemm), or the fused and small suites alone (gemm_quick, for a
# short visit).
# Each command under a time limit (SIGINT: rigel keeps the rows it has), so
# that a kernel that hangs costs minutes, not the visit.
# VERIFY_CASES: only the verify suite's cases whose names contain one of
# these comma-separated texts (a short visit; the report leaves such runs out).
# VERIFY_LIMIT_S (default 300): the verify run's limit; the whole suite takes
# about 330 s on the H200 machine.
if has gemm || has gemm_quick; then
  log "gemm verify"
  verify_cases=(); [ -n "${VERIFY_CASES:-}" ] && verify_cases=(--cases "$VERIFY_CASES")
  timeout -s INT "$(capped "${VERIFY_LIMIT_S:-300}")" $RIGEL gemm verify "${verify_cases[@]}" --out "$OUT" > "$OUT/gemm_verify.txt" 2> "$OUT/gemm_verify.err"
  summary+=("gemm verify: rc $?")
  # QUICK_SUITES: gemm_quick's suites where they differ from gemm_bench's GEMM_SUITES (none: verify alone).
  if has gemm; then gemm_suites=(all); else read -r -a gemm_suites <<< "${QUICK_SUITES:-${GEMM_SUITES:-fused small}}"; fi
  for s in "${gemm_suites[@]}"; do
    [ "$s" = none ] && continue  # GEMM_SUITES=none: the verify run alone
    log "gemm bench $s"
    timeout -s INT "$(capped 360)" $RIGEL gemm bench --suite "$s" --out "$OUT" >> "$OUT/gemm_bench.txt" 2>> "$OUT/gemm_bench.err"
    summary+=("gemm bench (suite $s): rc $?")
  done
fi
# gemm_compare: the GPT-2, fused and small suites again with every case on
# the cooperative 128 x 256 kernel (k32's tile) instead of the dispatcher's
# choice, in the same visit (shorter samples); files named ..._128x256_gemm.csv.
# fp8 with DeepSeek-V3's block scales (k38's kernel) against float64, both
# fp8 types, each problem also timed in paired samples against k34 (no
# scales) and cuBLASLt's default fp8; then k38 beside k34 (unit scales) and
# cuBLASLt in the ladder, each rung paired with cuBLASLt's default.
if has blockscaled; then
  # BLOCKSCALED_TYPES and BLOCKSCALED_SHAPES narrow it for a short visit.
  for t in ${BLOCKSCALED_TYPES:-e4m3 e5m2}; do
    log "gemm blockscaled $t"
    timeout -s INT "$(capped 240)" $RIGEL gemm blockscaled --type "$t" --shapes "${BLOCKSCALED_SHAPES:-1000x1030x1104,129x300x272,4096,8192}" \
      --time --min-time 0.5 --out "$OUT" >> "$OUT/blockscaled.txt" 2>&1
    summary+=("gemm blockscaled $t: rc $?")
  done
  log "ladder k34 k38 fp8"
  timeout -s INT "$(capped 300)" $RIGEL ladder --backend cuda --rungs k34_wgmma_fp8_promoted k38_wgmma_fp8_block_scaled vendor \
    --dtype e4m3 --sizes 4096 8192 --paired --out "$OUT" > "$OUT/ladder_blockscaled.txt" 2>&1
  summary+=("ladder k34/k38 e4m3: rc $?")
fi

# sass_edit: the binary with one kernel's FFMA scheduling bits edited (scripts/sass_ffma_yield.py,
# SASS_EDIT_KERNEL, default k38's block-scaled kernels; SASS_EDIT_MODES, default chain and reused;
# chain:N is mode chain with --chain-length N),
# each edited binary's block-scaled checks against float64 (odd shapes, real scales), then the
# ladder's k34, k38 and cuBLASLt pairs on the built and the edited binaries in turn, twice
# (built, edits..., built, edits...), each call into sass_edit_<binary>_<round>/. The listing is
# sass_edit_listing.txt in the export where the development machine staged it (the kernels' SASS,
# `cuobjdump -sass -fun`), else this machine's cuobjdump of the whole binary.
if has sass_edit; then
  read -r -a edit_modes <<< "${SASS_EDIT_MODES:-chain reused}"
  listing=(); [ -f sass_edit_listing.txt ] && listing=(--listing sass_edit_listing.txt)
  edited=()
  for spec in "${edit_modes[@]}"; do
    # A mode, or chain:N (mode chain with --chain-length N); the copy is named by it (chain4).
    mode=${spec%%:*}; length=0; [ "$spec" != "$mode" ] && length=${spec#*:}
    [ "$length" != 0 ] && mode_name="$mode$length" || mode_name=$mode
    log "sass edit $spec"
    if python3 scripts/sass_ffma_yield.py "$RIGEL" "$BUILD/rigel.$mode_name" --kernel "${SASS_EDIT_KERNEL:-AccumulationE2}" \
        --mode "$mode" --chain-length "$length" "${listing[@]}" >> "$OUT/sass_edit.txt" 2>&1; then
      mode=$mode_name
      edited+=("$mode")
      fits 120 "sass edit $mode checks" || continue
      timeout -s INT "$(capped 200)" "$BUILD/rigel.$mode" gemm blockscaled --type e4m3 --shapes 1000x1030x1104,129x300x272,4096 \
        --out "$OUT/sass_edit_${mode}_checks" >> "$OUT/sass_edit.txt" 2>&1
      summary+=("sass edit $mode: block-scaled checks rc $?")
    else
      summary+=("sass edit $mode: the edit failed (sass_edit.txt)")
    fi
  done
  for round in 1 2; do
    for v in built "${edited[@]}"; do
      bin="$BUILD/rigel.$v"; [ "$v" = built ] && bin=$RIGEL
      fits 150 "sass edit ladder $v $round" || continue
      log "sass edit ladder $v $round"
      timeout -s INT "$(capped 240)" "$bin" ladder --backend cuda --rungs k34_wgmma_fp8_promoted k38_wgmma_fp8_block_scaled vendor \
        --dtype e4m3 --sizes 4096 8192 --paired --out "$OUT/sass_edit_${v}_$round" >> "$OUT/sass_edit_ladder.txt" 2>&1
      summary+=("sass edit ladder $v $round: rc $?")
    done
  done
  [ -f "$OUT/sass_edit_ladder.txt" ] && grep -E "k38|k34" "$OUT/sass_edit_ladder.txt" | tail -24
fi

# env_variants: the same ladder call under each setting of ENV_VARIANTS (space-separated; each
# "none" or comma-separated VAR=VALUE pairs, for builds that choose a variant at run time), in
# turn, ENV_ROUNDS times (default 2), each call into env_<n>_<round>/ (n: the setting's place in
# the list); ENV_LADDER holds the ladder's arguments (default k34, k38 and cuBLASLt, e4m3, 4096^3
# and 8192^3, paired). Before the timed calls each setting runs `rigel gemm blockscaled` on
# ENV_CHECK_SHAPES (default two odd shapes; "none" skips it), its checks against float64.
if has env_variants; then
  read -r -a env_settings <<< "${ENV_VARIANTS:-none}"
  read -r -a env_ladder <<< "${ENV_LADDER:---rungs k34_wgmma_fp8_promoted k38_wgmma_fp8_block_scaled vendor --dtype e4m3 --sizes 4096 8192 --paired}"
  with_env() {  # with_env SETTING CMD...: CMD with SETTING's variables set
    local setting=$1; shift
    if [ "$setting" = none ]; then "$@"; else env ${setting//,/ } "$@"; fi
  }
  if [ "${ENV_CHECK_SHAPES:-}" != none ]; then
    for i in "${!env_settings[@]}"; do
      fits 90 "env checks ${env_settings[$i]}" || continue
      log "env checks ${env_settings[$i]}"
      echo "== ${env_settings[$i]}" >> "$OUT/env_checks.txt"
      with_env "${env_settings[$i]}" timeout -s INT "$(capped 150)" $RIGEL gemm blockscaled --type e4m3 \
        --shapes "${ENV_CHECK_SHAPES:-1000x1030x1104,129x300x272}" --out "$OUT/env_${i}_checks" >> "$OUT/env_checks.txt" 2>&1
      summary+=("env checks ${env_settings[$i]}: rc $?")
    done
  fi
  for round in $(seq 1 "${ENV_ROUNDS:-2}"); do
    for i in "${!env_settings[@]}"; do
      fits 120 "env ladder ${env_settings[$i]} $round" || continue
      log "env ladder ${env_settings[$i]} $round"
      echo "== ${env_settings[$i]} round $round" >> "$OUT/env_ladder.txt"
      with_env "${env_settings[$i]}" timeout -s INT "$(capped 240)" $RIGEL ladder --backend cuda "${env_ladder[@]}" \
        --out "$OUT/env_${i}_$round" >> "$OUT/env_ladder.txt" 2>&1
      summary+=("env ladder ${env_settings[$i]} $round: rc $?")
    done
  done
  [ -f "$OUT/env_ladder.txt" ] && grep -E "^== |paired with" "$OUT/env_ladder.txt" | sed 's/^rigel: \[[^]]*\] //' | tail -40
fi

# set_timing_args TIMING: the gemm options of one GEMM_TIMINGS entry into timing_args: paired
# (--min-time GEMM_MIN_TIME, default 1), blocks:S (--blocks S with 4 pairs of blocks: --min-time 8 S), or
# pause:S (paired, the device idle S seconds before each sample: --pause S --min-time GEMM_MIN_TIME).
set_timing_args() {
  timing_args=(--min-time "${GEMM_MIN_TIME:-1}")
  case "$1" in
    paired) ;;
    blocks:*)
      local block=${1#blocks:}
      timing_args=(--blocks "$block" --min-time "$(awk -v b="$block" 'BEGIN { print 8 * b }')") ;;
    pause:*) timing_args+=(--pause "${1#pause:}") ;;
    *) echo "h200_visit: GEMM_TIMINGS entry '$1' is not paired, blocks:S or pause:S" >&2; return 1 ;;
  esac
}

# gemm_runs: single `rigel gemm run` cases (verified, then timed against cuBLASLt and cuBLAS), each in
# every timing of GEMM_TIMINGS (paired, blocks:S, pause:S). GEMM_RUNS: square size and D's type,
# space-separated (default 4096:f32 4096:bf16); a third field names the kernel (4096:f32:128x256), the
# dispatcher's choice where it is empty or auto; a fourth the layout (NT where there is none), a fifth the
# epilogue (none), a sixth beta (0; not 0: C is read), a seventh the ping-pong kernels' tile order (--group-m;
# none where empty): 16384:bf16:fixed_wide:TT, 9216:bf16::NT:bias_gelu, 16384:bf16:fixed_tma_c:NT:bias_gelu:1:4.
# Whether a loss under sustained load is the power cap's clock or the kernel's cycles: GEMM_RUNS=16384:bf16
# GEMM_TIMINGS="paired pause:0.02 pause:0.1" (with a 0.1 s pause every launch starts on an idle device).
if has gemm_runs; then
  for spec in ${GEMM_RUNS:-4096:f32 4096:bf16}; do
    IFS=: read -r size out_type run_kernel run_layout run_epilogue run_beta run_group <<< "$spec"
    run_kernel=${run_kernel:-auto}
    run_order=(); [ -n "$run_group" ] && run_order=(--group-m "$run_group")
    for timing in ${GEMM_TIMINGS:-paired}; do
      fits 60 "gemm run $spec ($timing)" || continue
      log "gemm run $spec ($timing)"
      set_timing_args "$timing" || continue
      timeout -s INT "$(capped 120)" $RIGEL gemm run --m "$size" --n "$size" --k "$size" --layout "${run_layout:-NT}" \
        --out-type "$out_type" --epilogue "${run_epilogue:-none}" --beta "${run_beta:-0}" "${run_order[@]}" \
        --kernel "$run_kernel" "${timing_args[@]}" --out "$OUT" >> "$OUT/gemm_runs.txt" 2>&1
      summary+=("gemm run $spec ($timing): rc $?")
    done
  done
  [ -f "$OUT/gemm_runs.txt" ] && grep -E "^run " "$OUT/gemm_runs.txt" | tail -20
fi

# The GEMM suites alone (no verify run first): GEMM_SUITES (default gpt2), each
# on every kernel choice of GEMM_KERNELS (default: the dispatcher's, auto) and
# every tile order of GEMM_GROUP_M (default 0, the kernel's own; "0 1" adds a
# run row by row, --group-m 1), in each timing of GEMM_TIMINGS (default paired; blocks:S times in blocks of S s),
# GEMM_MIN_TIME seconds of paired samples per comparison (default 1),
# GEMM_CASES the cases whose names contain one of its comma-separated texts: each suite gets the texts
# that name a case of its own (`rigel gemm list`), and a suite none of them names is skipped (rigel
# itself refuses a text that names no case of the suite).
if has gemm_bench; then
  for s in ${GEMM_SUITES:-gpt2}; do
    suite_texts=""
    if [ -n "${GEMM_CASES:-}" ]; then
      suite_cases=$($RIGEL gemm list --suite "$s" 2>/dev/null | awk '{print $1}')
      IFS=, read -r -a texts <<< "$GEMM_CASES"
      for t in "${texts[@]}"; do
        grep -qF -- "$t" <<< "$suite_cases" && suite_texts+="${suite_texts:+,}$t"
      done
      if [ -z "$suite_texts" ]; then
        summary+=("gemm bench (suite $s): skipped, no case named by GEMM_CASES=$GEMM_CASES")
        continue
      fi
    fi
    for kern in ${GEMM_KERNELS:-auto}; do
      # GEMM_GROUP_M: tile orders, each a run of its own (0, the default: the kernel's own; N: --group-m N).
      for group in ${GEMM_GROUP_M:-0}; do
      order=(); [ "$group" != 0 ] && order=(--group-m "$group")
      # GEMM_TIMINGS: paired (the default) and/or blocks:S (--blocks S, with 4 pairs of blocks: --min-time 8 S).
      for timing in ${GEMM_TIMINGS:-paired}; do
        fits 75 "gemm bench $s --kernel $kern ${order[*]} ($timing)" || continue
        log "gemm bench $s --kernel $kern ${order[*]} ($timing)"
        bench_cases=(); [ -n "$suite_texts" ] && bench_cases=(--cases "$suite_texts")
        set_timing_args "$timing" || continue
        timeout -s INT "$(capped 240)" $RIGEL gemm bench --suite "$s" --kernel "$kern" "${order[@]}" "${bench_cases[@]}" "${timing_args[@]}" --out "$OUT" \
          >> "$OUT/gemm_bench.txt" 2>> "$OUT/gemm_bench.err"
        summary+=("gemm bench (suite $s, kernel $kern ${order[*]}, $timing): rc $?")
      done
      done
    done
  done
fi

if has gemm_compare; then
  for s in gpt2 fused small; do
    log "gemm bench $s --kernel 128x256"
    timeout -s INT "$(capped 240)" $RIGEL gemm bench --suite "$s" --kernel 128x256 --min-time 0.5 --out "$OUT" \
      >> "$OUT/gemm_compare.txt" 2>> "$OUT/gemm_compare.err"
    summary+=("gemm bench (suite $s, kernel 128x256): rc $?")
  done
fi

# Attention: the verify suite against float64 (cuDNN's output checked beside
# rigel's), then rigel against cuDNN in paired samples: every timed suite
# (attention), or the suites of ATT_SUITES (attention_quick; default the
# targets' S = 4096 cases and GPT-2's).
if has attention || has attention_quick; then
  pack  # what the earlier steps wrote comes back even if a hung kernel outlasts the call
  # ATT_VERIFY=0 leaves the verify suite out (the bench still checks each contender of each case first);
  # ATT_VERIFY_ARGS replaces its options (default --baselines; e.g. "--kernel fa3" for rung 3 alone).
  if [ "${ATT_VERIFY:-1}" != 0 ]; then
    log "attention verify"
    read -r -a verify_args <<< "${ATT_VERIFY_ARGS:---baselines}"
    timeout -k 15 -s INT "$(capped 300)" $RIGEL attention verify "${verify_args[@]}" --out "$OUT" > "$OUT/attention_verify.txt" \
      2> "$OUT/attention_verify.err"
    summary+=("attention verify: rc $?")
  fi
  if has attention; then att_suites=(all); else read -r -a att_suites <<< "${ATT_SUITES:-targets gpt2}"; fi
  for s in "${att_suites[@]}"; do
    [ "$s" = none ] && continue  # ATT_SUITES=none: the verify run alone
    log "attention bench $s"
    # ATT_CASES: only the cases whose names contain one of its comma-separated texts (e.g. s4096_d128).
    # ATT_MIN_TIME: seconds of paired samples per comparison (the bench's default when unset).
    att_cases=(); [ -n "${ATT_CASES:-}" ] && att_cases=(--cases "$ATT_CASES")
    [ -n "${ATT_MIN_TIME:-}" ] && att_cases+=(--min-time "$ATT_MIN_TIME")
    timeout -k 15 -s INT "$(capped 400)" $RIGEL attention bench --suite "$s" "${att_cases[@]}" --out "$OUT" \
      >> "$OUT/attention_bench.txt" 2>> "$OUT/attention_bench.err"
    summary+=("attention bench (suite $s): rc $?")
  done
fi

# Nsight Compute on the GEMM library's kernel for GPT-2's K = 768 products
# (fwd_qkv, bias; fwd_lm_head, none): where its warps stall, to tell an epilogue
# that outlasts the other consumer's main loop from a main loop that starves.
# --clock-control none leaves the clocks alone. Text reports only.
# Nsight Compute (clocks left alone) on two of GPT-2's K = 768 products, on
# each kernel of NCU_KERNELS (default: the dispatcher's choice; e.g.
# "auto pingpong_cluster"); NCU_SHAPES ("M N K EPILOGUE", comma-separated)
# names other products.
# ncu_source_page NAME KERNEL_REGEX SKIP COMMAND...: Nsight Compute's source page of the launch after SKIP
# of the kernels matching KERNEL_REGEX in COMMAND, cut to the SASS lines with the most warp-state samples
# (scripts/ncu_sass_hotspots.py; the page itself is too long to bring back) in $OUT/NAME_sass.txt. A page
# the script could not read comes back compressed, to adapt the script to.
ncu_source_page() {
  local name=$1 kernel=$2 skip=$3; shift 3
  timeout -s INT "$(capped 240)" ncu --clock-control none --section SourceCounters -k "regex:$kernel" \
    --launch-skip "$skip" --launch-count 1 --csv --page source --print-source sass "$@" > "$OUT/ncu_page.csv" 2>&1
  python3 scripts/ncu_sass_hotspots.py "$OUT/ncu_page.csv" --top 80 > "$OUT/${name}_sass.txt" 2>&1
  local rc=$?
  summary+=("ncu source page $name: rc $rc")
  if [ "$rc" != 0 ]; then gzip -c "$OUT/ncu_page.csv" > "$OUT/${name}_page.csv.gz"; fi
  rm -f "$OUT/ncu_page.csv"
}

# ncu_rungs: the source page (clocks left alone) of the second launch of each ladder rung of NCU_RUNGS
# (default k34 and k38, the fp8 promotion without and with block scales) at NCU_RUNG_SIZE^3 (4096) in
# NCU_RUNG_DTYPE (e4m3), the kernel matched by NCU_RUNG_KERNEL (warp_specialized): ncu_rung_<rung>_sass.txt,
# the stall reasons over the whole kernel first. The ladder's own files of these runs are dropped (timed
# under the profiler).
if has ncu_rungs; then
  for rung in ${NCU_RUNGS:-k34_wgmma_fp8_promoted k38_wgmma_fp8_block_scaled}; do
    fits 90 "ncu source page $rung" || continue
    log "ncu source page $rung"
    ncu_source_page "ncu_rung_$rung" "${NCU_RUNG_KERNEL:-warp_specialized}" 1 $RIGEL ladder --backend cuda \
      --rungs "$rung" --dtype "${NCU_RUNG_DTYPE:-e4m3}" --sizes "${NCU_RUNG_SIZE:-4096}" --min-time 0.05 \
      --out "$OUT/ncu_rung_scratch"
    rm -rf "$OUT/ncu_rung_scratch"
  done
fi

# ncu_rungs_sol: Nsight Compute's speed-of-light, memory and compute sections (clocks left alone) of the
# second launch of each ladder rung of NCU_SOL_RUNGS (default k40_wgmma_narrow_tail) and of the vendor rung
# beside it (kernels matched by NCU_SOL_VENDOR_KERNEL, default nvjet|gemm|xmma), bf16 at NCU_SOL_SIZE^3
# (4096): where the rung's time goes against cuBLAS's on the same card (tensor pipe, L2, DRAM).
if has ncu_rungs_sol; then
  sol_size=${NCU_SOL_SIZE:-4096}
  for rung in ${NCU_SOL_RUNGS:-k40_wgmma_narrow_tail} vendor_cublas_bf16; do
    fits 90 "ncu sol $rung" || continue
    log "ncu sol $rung"
    kern=${NCU_SOL_KERNEL:-pingpong|warp_specialized|cluster}
    [ "$rung" = vendor_cublas_bf16 ] && kern=${NCU_SOL_VENDOR_KERNEL:-nvjet|gemm|xmma}
    timeout -s INT "$(capped 200)" ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis --section LaunchStats -k "regex:$kern" --launch-skip 1 --launch-count 1 \
      --print-details all $RIGEL ladder --backend cuda --rungs "$rung" --dtype bf16 --sizes "$sol_size" \
      --min-time 0.05 --out "$OUT/ncu_sol_scratch" > "$OUT/ncu_sol_${rung}_${sol_size}.txt" 2>&1
    summary+=("ncu sol $rung: rc $?")
    rm -rf "$OUT/ncu_sol_scratch"
    grep -E "SM Frequency|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Pipe Tensor Cycles|L2 Hit Rate|Compute \(SM\)" \
      "$OUT/ncu_sol_${rung}_${sol_size}.txt" | sed "s/^/$rung: /" | head -12
  done
fi

if has ncu_gemm; then
  IFS=, read -r -a ncu_shapes <<< "${NCU_SHAPES:-16384 2304 768 bias,16384 50304 768 none}"
  for kern in ${NCU_KERNELS:-auto}; do
    for shape in "${ncu_shapes[@]}"; do
      # A shape is "M N K EPILOGUE [LAYOUT]" (NT unless given); NCU_METRICS adds metrics to the full set
      # (e.g. sm__cycles_active.min,sm__cycles_active.max: how evenly the SMs were kept busy).
      read -r m n k epi lay <<< "$shape"
      lay=${lay:-NT}
      extra=(); [ -n "${NCU_METRICS:-}" ] && extra=(--metrics "$NCU_METRICS")
      # The launch profiled: the third (after two of verification and warm-up) without an epilogue; the
      # first with one, since `rigel gemm run` then also verifies the decomposed path, whose GEMM (the
      # same kernel with no epilogue) would be the third launch.
      skip=2; [ "$epi" = none ] || skip=0
      # NCU_DETAILS=0 leaves out the full set's report (the source page alone).
      if [ "${NCU_DETAILS:-1}" = 1 ] && fits 90 "ncu gemm $m x $n x $k $lay $epi ($kern)"; then
      log "ncu gemm $m x $n x $k $lay $epi ($kern)"
      timeout -s INT "$(capped 240)" ncu --clock-control none --set full "${extra[@]}" -k regex:pingpong --launch-skip "$skip" \
        --launch-count 1 --print-details all --page details \
        $RIGEL gemm run --m "$m" --n "$n" --k "$k" --layout "$lay" --epilogue "$epi" --kernel "$kern" --warmup 0 \
        --min-time 0.01 > "$OUT/ncu_gemm_${m}x${n}x${k}_${lay}_${epi}_${kern}.txt" 2>&1
      summary+=("ncu gemm $m x $n x $k $lay $epi ($kern): rc $?")
      fi
      # NCU_SOURCE=1: the same launch's SASS lines with the most warp-state samples
      # (scripts/ncu_sass_hotspots.py), the page itself being too long to bring back.
      if [ "${NCU_SOURCE:-0}" = 1 ] && fits 90 "ncu gemm source page"; then
        ncu_source_page "ncu_gemm_${m}x${n}x${k}_${lay}_${epi}_${kern}" pingpong "$skip" \
          $RIGEL gemm run --m "$m" --n "$n" --k "$k" --layout "$lay" --epilogue "$epi" --kernel "$kern" --warmup 0 \
          --min-time 0.01
      fi
    done
  done
fi

# ncu_sustained: Nsight Compute on launches taken after seconds of back-to-back load, when the power
# cap holds the clock down, for rigel's ping-pong kernel and for cuBLASLt's (nvjet) in turn: `rigel gemm
# run` on NCU_SUSTAINED_SHAPE ("M N K", default 16384^3, NT, no epilogue; NCU_SUSTAINED_ARGS adds options,
# e.g. "--kernel pingpong --group-m 4") pairs the two for 12 s, and the launches after the first
# NCU_SUSTAINED_SKIP (default 250) of each are profiled: duration, SM and L2 clocks, L2 and DRAM traffic,
# the tensor pipe's share, as Nsight Compute's CSV (scripts/ncu_time_table.py makes the table). Launched
# alone, rigel's 16384^3 kernel on an H100 takes as many cycles as cuBLASLt's; back to back at the cap it
# loses more than its clock (docs/gemm.md, rule 13). A profiled launch still starts after a pause (ncu
# serializes it and flushes the caches first): on an H100 (6ff8cd3) it took cuBLASLt's cycles again, where the
# timed launches around it did not, so the step reads the load's clock and traffic, not all of its cost.
if has ncu_sustained; then
  read -r m n k <<< "${NCU_SUSTAINED_SHAPE:-16384 16384 16384}"
  metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second
  metrics+=,lts__t_bytes.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum
  metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
  for side in pingpong nvjet; do
    fits 60 "ncu sustained $m x $n x $k ($side)" || continue
    log "ncu sustained $m x $n x $k ($side)"
    # shellcheck disable=SC2086  # NCU_SUSTAINED_ARGS is a list of options
    timeout -s INT "$(capped 120)" ncu --clock-control none --csv --metrics "$metrics" -k "regex:$side" \
      --launch-skip "${NCU_SUSTAINED_SKIP:-250}" --launch-count 2 \
      $RIGEL gemm run --m "$m" --n "$n" --k "$k" ${NCU_SUSTAINED_ARGS:-} --warmup 0 --min-time 12 \
      > "$OUT/ncu_sustained_${m}x${n}x${k}_${side}.csv" 2>&1
    summary+=("ncu sustained $m x $n x $k ($side): rc $?")
  done
fi

# ncu_time: each kernel's own duration (Nsight Compute's gpu__time_duration,
# clocks left alone) for the first launches of `rigel gemm run` on each case of
# NCU_TIME_CASES ("M N K KERNEL [EPILOGUE [LAYOUT]]", comma-separated; default
# the small suite's 512^3 and 1024^3 on the dispatcher's choice and on the
# fixed kernel, no epilogue, NT), rigel's kernels and the baselines' alike:
# what a product's time is made of, beside the paired bench's per-call time.
# NCU_TIME_METRICS adds metrics (e.g. the SM clock and the tensor pipe's
# share); NCU_TIME_LAUNCHES the launches profiled (default 60).
# scripts/ncu_time_table.py sets the files out as one table, kernel by kernel.
if has ncu_time; then
  IFS=, read -r -a time_cases <<< "${NCU_TIME_CASES:-512 512 512 auto,512 512 512 fixed,1024 1024 1024 auto,1024 1024 1024 fixed}"
  for tc in "${time_cases[@]}"; do
    read -r m n k kern epi lay <<< "$tc"
    epi=${epi:-none}; lay=${lay:-NT}
    tag="${m}x${n}x${k}_${kern}"; [ "$epi" != none ] && tag+="_$epi"; [ "$lay" != NT ] && tag+="_$lay"
    fits 40 "ncu time $tag" || continue
    log "ncu time $tag"
    timeout -s INT "$(capped 150)" ncu --clock-control none --csv --launch-count "${NCU_TIME_LAUNCHES:-60}" \
      --metrics "gpu__time_duration.sum${NCU_TIME_METRICS:+,$NCU_TIME_METRICS}" \
      $RIGEL gemm run --m "$m" --n "$n" --k "$k" --layout "$lay" --epilogue "$epi" --kernel "$kern" \
      --warmup 0 --min-time 0.01 > "$OUT/ncu_time_$tag.csv" 2>&1
    summary+=("ncu time $tag: rc $?")
  done
fi

# Nsight Compute (clocks left alone) on the wgmma attention backward, its
# first launch after verification: where its warps wait (the consumers'
# meeting, the dQ reductions, the tensor pipe). NCU_ATT_SUITE and
# NCU_ATT_CASES pick the case (default GPT-2's: S 1024, D 64, causal; e.g.
# NCU_ATT_SUITE=targets NCU_ATT_CASES=s4096_d128 for the D = 128 target).
if has ncu_attention; then
  if fits 120 "ncu attention backward"; then
    ncu_suite=${NCU_ATT_SUITE:-gpt2}
    ncu_cases=(); [ -n "${NCU_ATT_CASES:-}" ] && ncu_cases=(--cases "$NCU_ATT_CASES")
    log "ncu attention backward ($ncu_suite ${NCU_ATT_CASES:-})"
    timeout -s INT "$(capped 240)" ncu --clock-control none --set full -k regex:fa3_backward_kernel --launch-skip 1 \
      --launch-count 1 --print-details all --page details \
      $RIGEL attention bench --suite "$ncu_suite" "${ncu_cases[@]}" --warmup 0 --min-time 0.01 \
      > "$OUT/ncu_attention_bwd_${ncu_suite}${NCU_ATT_CASES:+_$NCU_ATT_CASES}.txt" 2>&1
    summary+=("ncu attention backward ($ncu_suite ${NCU_ATT_CASES:-}): rc $?")
  fi
  # NCU_SOURCE=1: the same launch's SASS lines with the most warp-state samples, as ncu_gemm's.
  if [ "${NCU_SOURCE:-0}" = 1 ] && fits 90 "ncu attention backward source page"; then
    ncu_source_page "ncu_attention_bwd_${ncu_suite}${NCU_ATT_CASES:+_$NCU_ATT_CASES}" fa3_backward_kernel 1 \
      $RIGEL attention bench --suite "$ncu_suite" "${ncu_cases[@]}" --warmup 0 --min-time 0.01
  fi
fi

# ncu_train: Nsight Compute on the training step's bandwidth-bound kernels
# (LayerNorm's backward, the bias and GELU column sums, the cross-entropy,
# AdamW), the second launch of each in a 2-step run of GPT-2 at B 16 x T 1024
# on the corpus (carry data/shakespeare): their DRAM throughput against the
# copy bandwidth the probes measured, occupancy and what their warps wait on.
# NCU_TRAIN_KERNELS: the kernels, by name.
if has ncu_train; then
  data=${DATA:-../data/shakespeare}
  for kern in ${NCU_TRAIN_KERNELS:-layernorm_backward_kernel bias_backward8_kernel crossentropy_fused_kernel adamw_kernel}; do
    fits 60 "ncu train $kern" || continue
    log "ncu train $kern"
    mkdir -p "$OUT/ncu_train"
    timeout -s INT "$(capped 120)" ncu --clock-control none --set full -k "regex:$kern" --launch-skip 1 --launch-count 1 \
      --print-details all --page details \
      $RIGEL train run --model gpt2 --backend cuda --data "$data/train.bin" --batch 16 --seq 1024 --steps 2 \
      --warmup 10 --lr 6e-4 --out "$OUT/ncu_train" > "$OUT/ncu_train_$kern.txt" 2>&1
    summary+=("ncu train $kern: rc $?")
    rm -rf "$OUT/ncu_train"
  done
fi

# rigel emulate against the GEMM library, bit for bit: ten problems of about
# 1024^3 (odd shapes among them, some split by the dispatcher) per 16-bit
# path; the host's model costs about 9 ns per multiply-add and thread.
# emulate_one PATH AGAINST SHAPES BUDGET_S: one comparison, in the summary.
emulate_one() {
  local n; n=$(tr ',' '\n' <<< "$3" | wc -l)
  fits "$4" "emulate $1 against $2" || return 0
  log "emulate $1 against $2"
  timeout -s INT "$(capped 300)" $RIGEL emulate --path "$1" --shapes "$3" --against "$2" --out "$OUT" >> "$OUT/emulate.txt" 2>&1
  summary+=("emulate $1 against $2 ($n problems): rc $?")
}
# K a multiple of 8: TMA's rows of 16 bytes (the library and the wgmma rungs
# refuse others); of 16 for fp8.
shapes="1024x1024x1024,1000x1030x1104,1023x977x1032,512x512x4096,257x1100x1024,1024x1024x2048,999x1001x1000,640x1408x1152,1100x900x960,128x1024x8192"
fp8_shapes="1024x1024x1024,1000x1030x1104,1023x977x1040,512x512x4096,257x1100x1024,1024x1024x2048,999x1001x1008,640x1408x1152,1100x900x960,128x1024x8192"
# emulate_fp8: the fp8 comparisons alone.
if has emulate || has emulate_fp8; then
  has emulate && for pair in "wgmma_bf16 library" "wgmma_f16 library" "wgmma_bf16 k32_wgmma_persistent" "mma_sync_bf16 k21_mma_sync"; do
    read -r path against <<< "$pair"
    emulate_one "$path" "$against" "$shapes" 90
  done
  # The fp8 path's model (measured per instruction by the probe) at GEMM
  # scale: set against the fp8 rungs, chained (k33) and promoted every 128 of K (k34).
  for against in k33_wgmma_fp8 k34_wgmma_fp8_promoted; do emulate_one wgmma_e4m3 "$against" "$fp8_shapes" 120; done
  # e5m2 on the same rungs: the e4m3 model as a hypothesis (the probe's e5m2 paths measure it per instruction).
  for against in k33_wgmma_fp8 k34_wgmma_fp8_promoted; do emulate_one wgmma_e5m2 "$against" "$fp8_shapes" 120; done
fi

# What cuBLAS and cuBLASLt do with K, from their fp32 outputs alone (rigel
# emulate infers the split and the partials' order): ten problems of about
# 1024^3 per library, odd shapes among them; then cuBLASLt's default fp8
# GEMM, whose promotion interval shows if the fp8 model holds.
# EMULATE_VENDOR picks the comparisons (default all four).
if has emulate_vendor; then
  vendor_fp8="1024x1024x1024,512x512x4096,128x1024x8192"
  for what in ${EMULATE_VENDOR:-cublas cublaslt e4m3 fastacc}; do
    case $what in
      cublas|cublaslt) emulate_one wgmma_bf16 "$what" "$shapes" 150 ;;
      e4m3) emulate_one wgmma_e4m3 cublaslt "$vendor_fp8" 150 ;;
      # FAST_ACCUM: the rung's split of K inferred from D, as cuBLASLt's is.
      fastacc) emulate_one wgmma_e4m3 vendor_cublaslt_e4m3_fastacc "$vendor_fp8" 90 ;;
    esac
  done
fi

# rigel's own training kernels against float64.
if has train; then
  log "train check"
  timeout -s INT "$(capped 120)" $RIGEL train check --out "$OUT" > "$OUT/train_check.txt" 2> "$OUT/train_check.err"
  summary+=("train check: rc $?")
fi

# One training run on the whole corpus (TRAIN_FULL_STEPS steps, about three
# epochs of the Shakespeare token file by default), checkpointed and
# validated on the way, then samples from its last checkpoint on rigel's
# kernels. The checkpoint stays behind (1.5 GB); the log, the samples and
# their settings come back.
if has train_full; then
  data=${DATA:-../data/shakespeare}
  full_steps=${TRAIN_FULL_STEPS:-600}
  if fits 120 "train full"; then
    log "train full: $full_steps steps"
    rm -f "$OUT/full.ckpt"
    mkdir -p "$OUT/full"
    timeout -s INT "$(capped 400)" $RIGEL train run --model gpt2 --backend cuda --data "$data/train.bin" --val "$data/val.bin" \
      --batch 16 --seq 1024 --steps "$full_steps" --warmup 40 --lr 6e-4 --val-every 25 --val-batches 8 \
      --checkpoint "$OUT/full.ckpt" --checkpoint-every 200 --out "$OUT/full" > "$OUT/train_full.txt" 2>&1
    summary+=("train full ($full_steps steps): rc $?")
    # Named apart from the comparison's short run (..._train_full_gpt2_cuda.csv, the sidecar saying so).
    for f in "$OUT"/full/*_train_gpt2_cuda.*; do
      [ -f "$f" ] && sed -i 's/_train_gpt2_cuda\.csv/_train_full_gpt2_cuda.csv/' "$f" && mv "$f" "${f/_train_gpt2_cuda/_train_full_gpt2_cuda}"
    done
    mv "$OUT"/full/* "$OUT"/ 2>/dev/null; rm -rf "$OUT/full"
    for seed in 1 2 3; do
      echo "== sample, seed $seed, temperature 0.8, top-k 40" >> "$OUT/train_full_samples.txt"
      timeout -s INT "$(capped 60)" $RIGEL train sample --checkpoint "$OUT/full.ckpt" --backend cuda --tokens 200 \
        --temperature 0.8 --top-k 40 --seed "$seed" --tokenizer "$data/gpt2.tiktoken" \
        >> "$OUT/train_full_samples.txt" 2>&1
      summary+=("train sample seed $seed: rc $?")
    done
    rm -f "$OUT/full.ckpt"
  fi
fi

# Several GPUs on the one the H200 machine has: `rigel launch --nproc 1`
# takes the data-parallel path (the gradients through NCCL, a sum over one
# rank), so its losses must follow a plain run's from the same weights within
# the run-to-run noise of the attention backward's atomics; then NCCL's
# all-reduce probe on one rank.
if has dist_one; then
  data=${DATA:-../data/shakespeare}
  dp=(--model gpt2 --backend cuda --data "$data/train.bin" --batch 16 --seq 1024 --steps 6 --warmup 2 --lr 6e-4)
  rm -f "$OUT"/dp_*.ckpt
  log "dist: one rank under launch"
  $RIGEL train run "${dp[@]}" --init-only --checkpoint "$OUT/dp_init.ckpt" > "$OUT/dist_one.txt" 2>&1
  cp "$OUT/dp_init.ckpt" "$OUT/dp_plain.ckpt"; cp "$OUT/dp_init.ckpt" "$OUT/dp_launch.ckpt"
  mkdir -p "$OUT/dp_plain" "$OUT/dp_launch"
  timeout -s INT "$(capped 200)" $RIGEL train run "${dp[@]}" --resume --checkpoint "$OUT/dp_plain.ckpt" --out "$OUT/dp_plain" \
    >> "$OUT/dist_one.txt" 2>&1
  summary+=("dist: plain run rc $?")
  timeout -s INT "$(capped 200)" $RIGEL launch --nproc 1 -- $RIGEL train run "${dp[@]}" --resume --checkpoint "$OUT/dp_launch.ckpt" \
    --out "$OUT/dp_launch" >> "$OUT/dist_one.txt" 2>&1
  summary+=("dist: launched run rc $?")
  cp "$OUT/dp_init.ckpt" "$OUT/dp_shard.ckpt"; mkdir -p "$OUT/dp_shard"
  timeout -s INT "$(capped 200)" $RIGEL launch --nproc 1 -- $RIGEL train run "${dp[@]}" --resume --checkpoint "$OUT/dp_shard.ckpt" \
    --shard-optimizer --out "$OUT/dp_shard" >> "$OUT/dist_one.txt" 2>&1
  summary+=("dist: launched run with --shard-optimizer rc $?")
  summary+=("dist: losses plain, launched, sharded: $(paste -d, <(cut -d, -f5 "$OUT"/dp_plain/*_train_gpt2_cuda.csv) \
    <(cut -d, -f5 "$OUT"/dp_launch/*_train_gpt2_cuda.csv) <(cut -d, -f5 "$OUT"/dp_shard/*_train_gpt2_cuda.csv) |
    tail -n +2 | tr '\n' ' ')")
  timeout -s INT "$(capped 120)" $RIGEL launch --nproc 1 -- $RIGEL dist allreduce --out "$OUT" >> "$OUT/dist_one.txt" 2>&1
  summary+=("dist: allreduce rc $?")
  # The deterministic mode's data-parallel path (the micro-batches' gradients gathered and added in
  # order) on one rank against a plain deterministic run: the checkpoints must be equal byte for byte.
  cp "$OUT/dp_init.ckpt" "$OUT/dp_det_plain.ckpt"; cp "$OUT/dp_init.ckpt" "$OUT/dp_det_launch.ckpt"
  timeout -s INT "$(capped 200)" $RIGEL train run "${dp[@]}" --deterministic --resume --checkpoint "$OUT/dp_det_plain.ckpt" \
    >> "$OUT/dist_one.txt" 2>&1
  timeout -s INT "$(capped 200)" $RIGEL launch --nproc 1 -- $RIGEL train run "${dp[@]}" --deterministic --resume \
    --checkpoint "$OUT/dp_det_launch.ckpt" >> "$OUT/dist_one.txt" 2>&1
  cmp -s "$OUT/dp_det_plain.ckpt" "$OUT/dp_det_launch.ckpt" && v=identical || v=DIFFERENT
  summary+=("dist: deterministic, launched against plain: checkpoints $v")
  rm -f "$OUT"/dp_*.ckpt
fi

# Every GPU of a several-GPU machine (DIST_GPUS: how many; default all that nvidia-smi lists).
# dist_node: NCCL's all-reduce over all of them; data-parallel GPT-2 at 16,384 tokens per GPU per step on
# N = 1, 2, 4, 8 ranks (as many as there are), for tokens/s and the scaling efficiency; the same global
# batch on all GPUs and in one process accumulating as many micro-batches (the loss curves set side by
# side), replicated, with ZeRO stage 1, and in the deterministic mode, whose checkpoints must be equal byte
# for byte. Each log comes back as <date>_<commit>_dist_<what>_gpt2_cuda.csv (reproduce/scaling_report.py
# reads them by their sidecars: ranks, batch, seq, accumulation, deterministic). fleet: `rigel fleet`
# (the probes and the Hopper sweep) on every GPU at once (reproduce/fleet_report.py).
gpus=${DIST_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
dist_log() { train_log "dist_$1" "$2"; }  # dist_log WHAT DIR: the run's log into $OUT, renamed for WHAT
data=${DATA:-../data/shakespeare}
if has dist_node && [ "$gpus" -lt 1 ]; then summary+=("dist_node: skipped, no GPU listed (nvidia-smi -L)")
elif has dist_node && [ ! -f "$data/train.bin" ]; then
  summary+=("dist_node: skipped, no $data/train.bin (make data, and carry data/shakespeare)")
elif has dist_node; then
  dn=(--model gpt2 --backend cuda --data "$data/train.bin" --batch 16 --seq 1024 --warmup 2 --lr 6e-4)
  log "dist: $gpus GPUs"
  # NCCL's warnings, and what its transports have to work with, in the log: a first run on several GPUs
  # that fails should say why.
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  { nvidia-smi topo -m; df -h /dev/shm; } > "$OUT/dist_node.txt" 2>&1
  timeout -s INT "$(capped 180)" $RIGEL launch --nproc "$gpus" -- $RIGEL dist allreduce --out "$OUT" >> "$OUT/dist_node.txt" 2>&1
  summary+=("dist: allreduce over $gpus GPUs rc $?")
  pack  # each run's results come back even if a later one outlasts the call
  for n in 1 2 4 8; do
    [ "$n" -le "$gpus" ] || continue
    fits 60 "dist scaling n$n" || continue
    timeout -s INT "$(capped 150)" $RIGEL launch --nproc "$n" -- $RIGEL train run "${dn[@]}" --steps 20 \
      --out "$OUT/d_scale" >> "$OUT/dist_node.txt" 2>&1
    summary+=("dist: scaling, $n ranks rc $?")
    dist_log "scale_n$n" "$OUT/d_scale"
    pack
  done
  # The same global batch ($gpus x 16 x 1024 tokens a step): all GPUs, then one process accumulating
  # (one GPU: what dist_one compares already).
  same=(--steps 10)
  [ "$gpus" -ge 2 ] || summary+=("dist: same-batch runs skipped on one GPU (dist_one compares those)")
  for mode in replicated shard det; do
    [ "$gpus" -ge 2 ] || break
    extra=(); [ "$mode" = shard ] && extra=(--shard-optimizer); [ "$mode" = det ] && extra=(--deterministic)
    fits 90 "dist same batch $mode" || continue
    rm -f "$OUT"/dn_*.ckpt
    timeout -s INT "$(capped 200)" $RIGEL launch --nproc "$gpus" -- $RIGEL train run "${dn[@]}" "${same[@]}" "${extra[@]}" \
      --checkpoint "$OUT/dn_ranks.ckpt" --out "$OUT/d_ranks" >> "$OUT/dist_node.txt" 2>&1
    summary+=("dist: $mode, $gpus ranks rc $?")
    dist_log "same_${mode}_n$gpus" "$OUT/d_ranks"
    one=(); [ "$mode" = det ] && one=(--deterministic)
    timeout -s INT "$(capped 300)" $RIGEL train run "${dn[@]}" "${same[@]}" "${one[@]}" --accumulation "$gpus" \
      --checkpoint "$OUT/dn_one.ckpt" --out "$OUT/d_one" >> "$OUT/dist_node.txt" 2>&1
    summary+=("dist: $mode, one process accumulating $gpus rc $?")
    dist_log "same_${mode}_n1" "$OUT/d_one"
    if [ ! -f "$OUT/dn_ranks.ckpt" ] || [ ! -f "$OUT/dn_one.ckpt" ]; then v="missing (a run failed)"
    elif cmp -s "$OUT/dn_ranks.ckpt" "$OUT/dn_one.ckpt"; then v=identical
    elif [ "$mode" = det ]; then v=DIFFERENT
    else v="different (expected: atomic sums, and the ranks' sums in another order)"; fi
    summary+=("dist: $mode, checkpoints of $gpus ranks and of one process: $v")
    rm -f "$OUT"/dn_*.ckpt
    pack
  done
fi
# FLEET_SUITES: the ladder suites after the probes (default bench alone: with bench_llm too, the step
# outlasts one call).
if has fleet && fits 300 "fleet"; then
  log "fleet: $gpus GPUs"
  timeout -s INT "$(capped 560)" $RIGEL launch --nproc "$gpus" --independent -- $RIGEL fleet --out "$OUT" \
    --suites ${FLEET_SUITES:-bench} > "$OUT/fleet.txt" 2>&1
  summary+=("fleet over $gpus GPUs rc $?")
fi

# The deterministic mode (--deterministic): two runs from the same weights
# must end in checkpoints equal byte for byte, and so must a run stopped
# half-way and resumed; beside them one default run of the same length, for
# the mode's cost in tokens/s. The checkpoints stay behind; the logs and the
# verdicts come back (train_det.txt, the summary).
if has train_det; then
  data=${DATA:-../data/shakespeare}
  det=(--model gpt2 --backend cuda --data "$data/train.bin" --batch 16 --seq 1024 --steps 8 --warmup 2 --lr 6e-4)
  if fits 150 "train deterministic"; then
    log "train deterministic"
    rm -rf "$OUT"/det_* && mkdir -p "$OUT/det_a" "$OUT/det_b" "$OUT/det_r" "$OUT/det_r2" "$OUT/det_default"
    $RIGEL train run "${det[@]}" --init-only --checkpoint "$OUT/det_init.ckpt" > "$OUT/train_det.txt" 2>&1
    for r in a b r default; do cp "$OUT/det_init.ckpt" "$OUT/det_$r.ckpt"; done
    for r in a b; do
      timeout -s INT "$(capped 150)" $RIGEL train run "${det[@]}" --deterministic --resume --checkpoint "$OUT/det_$r.ckpt" \
        --out "$OUT/det_$r" >> "$OUT/train_det.txt" 2>&1
      summary+=("train deterministic run $r: rc $?")
    done
    timeout -s INT "$(capped 150)" $RIGEL train run "${det[@]}" --deterministic --resume --checkpoint "$OUT/det_r.ckpt" \
      --stop-after 4 --out "$OUT/det_r" >> "$OUT/train_det.txt" 2>&1
    timeout -s INT "$(capped 150)" $RIGEL train run "${det[@]}" --deterministic --resume --checkpoint "$OUT/det_r.ckpt" \
      --out "$OUT/det_r2" >> "$OUT/train_det.txt" 2>&1
    summary+=("train deterministic stopped at 4 and resumed: rc $?")
    timeout -s INT "$(capped 150)" $RIGEL train run "${det[@]}" --resume --checkpoint "$OUT/det_default.ckpt" \
      --out "$OUT/det_default" >> "$OUT/train_det.txt" 2>&1
    summary+=("train default (beside the deterministic runs): rc $?")
    cmp -s "$OUT/det_a.ckpt" "$OUT/det_b.ckpt" && v=identical || v=DIFFERENT
    summary+=("deterministic: two runs' checkpoints $v")
    cmp -s "$OUT/det_a.ckpt" "$OUT/det_r.ckpt" && v=identical || v=DIFFERENT
    summary+=("deterministic: stopped-and-resumed checkpoint against the straight run's: $v")
    for r in a b r r2 default; do train_log "train_det_$r" "$OUT/det_$r"; done
    rm -rf "$OUT"/det_*
  fi
fi

# GELU's backward fused into the MLP's dX product (the cuda backend's default) against its pass of
# its own (--split-dgelu): TRAIN_AB_ROUNDS rounds (default 3) of one run each, fused then split, from
# the same weights (the same seed), TRAIN_AB_STEPS steps each (default 20), so that each round's ratio
# compares runs back to back; logs named _train_dgelu_<fused|split>_<round>_gpt2_cuda.csv
# (reproduce/train_report.py, dgelu_block). Then one --profile run of each into
# train_dgelu_<fused|split>_profile.txt.
if has train_dgelu; then
  data=${DATA:-../data/shakespeare}
  ab=(--model gpt2 --backend cuda --data "$data/train.bin" --batch 16 --seq 1024 --warmup 2 --lr 6e-4)
  for round in $(seq 1 "${TRAIN_AB_ROUNDS:-3}"); do
    for form in fused split; do
      fits 40 "train dgelu $form $round" || continue
      log "train dgelu: $form, round $round"
      flag=(); [ "$form" = split ] && flag=(--split-dgelu)
      mkdir -p "$OUT/ab"
      timeout -s INT "$(capped 120)" $RIGEL train run "${ab[@]}" --steps "${TRAIN_AB_STEPS:-20}" "${flag[@]}" --out "$OUT/ab" \
        >> "$OUT/train_dgelu.txt" 2>&1
      summary+=("train dgelu $form round $round: rc $?")
      train_log "train_dgelu_${form}_${round}" "$OUT/ab"
    done
  done
  # Each log's median tokens/s over steps 2..N, for the table printed last.
  for f in "$OUT"/*_train_dgelu_*_gpt2_cuda.csv; do
    [ -f "$f" ] || continue
    med=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "step") s = i; if ($i == "tokens_per_s") t = i } next }
                   $s >= 2 { print $t }' "$f" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "none" }')
    summary+=("$(basename "$f" | sed 's/.*_train_dgelu_//; s/_gpt2_cuda.csv//'): median $med tok/s")
  done
  for form in fused split; do
    fits 40 "train dgelu profile $form" || continue
    flag=(); [ "$form" = split ] && flag=(--split-dgelu)
    timeout -s INT "$(capped 120)" $RIGEL train run "${ab[@]}" --steps 8 "${flag[@]}" --profile \
      > "$OUT/train_dgelu_${form}_profile.txt" 2>&1
    summary+=("train dgelu profile $form: rc $?")
  done
fi

# GPT-2 small on the corpus: rigel's cuda backend and PyTorch (eager, then
# torch.compile) from the same step-0 weights, the same batches and settings,
# each for TRAIN_STEPS steps (default 30) in the same call. The token files
# come with the call: carry data/shakespeare (make data writes it), which
# sits beside the export. PyTorch's logs are named as rigel names its own
# (<UTC date>_<commit>_train_gpt2_torch-<mode>.csv, with a sidecar), and each
# mode profiles one more step into torch_<mode>_profile.txt.
if has train_compare; then
  data=${DATA:-../data/shakespeare}
  steps=${TRAIN_STEPS:-30}
  # The commit rigel's binary names (.visit/COMMIT, the folder this runs in).
  commit=$(cat COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)
  stem="$(date -u +%F)_${commit:0:7}_train_gpt2"
  common=(--batch 16 --seq 1024 --steps "$steps" --warmup 10 --lr 6e-4 --val-batches 4)
  rm -f "$OUT/init.ckpt" "$OUT/rigel.ckpt"
  log "train compare: init"
  $RIGEL train run --model gpt2 --data "$data/train.bin" --init-only --checkpoint "$OUT/init.ckpt" \
    "${common[@]}" > "$OUT/train_init.txt" 2>&1
  cp "$OUT/init.ckpt" "$OUT/rigel.ckpt"
  log "train compare: rigel"
  timeout -s INT "$(capped 300)" $RIGEL train run --model gpt2 --backend cuda --data "$data/train.bin" --val "$data/val.bin" \
    --checkpoint "$OUT/rigel.ckpt" --resume "${common[@]}" --out "$OUT" > "$OUT/train_rigel.txt" 2>&1
  summary+=("train rigel: rc $?")
  # Where rigel's step spends its device time: a short run of its own with
  # --profile (a synchronization per step, so its tokens/s are not the ones
  # compared), only its phase table kept.
  # TRAIN_PROFILE=0 leaves it out.
  if [ "${TRAIN_PROFILE:-1}" = 1 ]; then
  log "train compare: rigel profile"
  mkdir -p "$OUT/profile"
  timeout -s INT "$(capped 200)" $RIGEL train run --model gpt2 --backend cuda --data "$data/train.bin" --batch 16 --seq 1024 \
    --steps 8 --warmup 10 --lr 6e-4 --profile --out "$OUT/profile" > "$OUT/train_rigel_profile.txt" 2>&1
  summary+=("train rigel profile: rc $?")
  mv "$OUT"/profile/*_profile_gpt2_cuda.* "$OUT"/ 2>/dev/null; rm -rf "$OUT/profile"
  fi
  # The same loop with cuBLASLt's matmuls and cuDNN's attention (for
  # comparison only): its timed run from the same weights, then its profile.
  # TRAIN_VENDOR=0 leaves the cuBLASLt/cuDNN run out (it depends on rigel's
  # other kernels only); TORCH_MODES picks PyTorch's modes (default both;
  # none for rigel's runs alone).
  if [ "${TRAIN_VENDOR:-1}" = 1 ]; then
  log "train compare: rigel's loop on cuBLASLt and cuDNN"
  cp "$OUT/init.ckpt" "$OUT/vendor.ckpt"
  timeout -s INT "$(capped 200)" $RIGEL train run --model gpt2 --backend cuda-vendor --data "$data/train.bin" --val "$data/val.bin" \
    --checkpoint "$OUT/vendor.ckpt" --resume "${common[@]}" --out "$OUT" > "$OUT/train_vendor.txt" 2>&1
  summary+=("train cuda-vendor: rc $?")
  mkdir -p "$OUT/profile"
  timeout -s INT "$(capped 200)" $RIGEL train run --model gpt2 --backend cuda-vendor --data "$data/train.bin" --batch 16 \
    --seq 1024 --steps 8 --warmup 10 --lr 6e-4 --profile --out "$OUT/profile" > "$OUT/train_vendor_profile.txt" 2>&1
  summary+=("train cuda-vendor profile: rc $?")
  mv "$OUT"/profile/*_profile_gpt2_cuda-vendor.* "$OUT"/ 2>/dev/null; rm -rf "$OUT/profile" "$OUT/vendor.ckpt"
  fi
  for mode in ${TORCH_MODES:-eager compile}; do
    [ "$mode" = none ] && continue  # TORCH_MODES=none: rigel's runs alone
    est=75; [ "$mode" = compile ] && est=140
    fits "$est" "train torch $mode" || continue
    pack  # rigel's runs come back even if this one outlasts the call
    log "train compare: torch $mode"
    flag=(); [ "$mode" = compile ] && flag=(--compile)
    timeout -k 10 -s INT "$(capped "${TORCH_TIMEOUT_S:-300}")" python3 scripts/gpt2_torch.py --init "$OUT/init.ckpt" --data "$data/train.bin" \
      --val "$data/val.bin" "${common[@]}" "${flag[@]}" --commit "$commit" --out "$OUT/${stem}_torch-$mode.csv" \
      --profile "$OUT/torch_${mode}_profile.txt" > "$OUT/train_torch_$mode.txt" 2>&1
    summary+=("train torch $mode: rc $?")
  done
  rm -f "$OUT/init.ckpt" "$OUT/rigel.ckpt"  # 1.5 GB each: not brought back
fi

for f in "$OUT"/*.err; do [ -f "$f" ] && tail -3 "$f"; done
[ -f "$OUT/cpu.txt" ] && tail -30 "$OUT/cpu.txt"
[ -f "$OUT/ladder.txt" ] && tail -60 "$OUT/ladder.txt"
[ -f "$OUT/bench.txt" ] && tail -40 "$OUT/bench.txt"
[ -f "$OUT/bench_llm.txt" ] && tail -40 "$OUT/bench_llm.txt"
[ -f "$OUT/probes.txt" ] && tail -40 "$OUT/probes.txt"
[ -f "$OUT/alignment.txt" ] && tail -12 "$OUT/alignment.txt"
[ -f "$OUT/fp4.txt" ] && tail -20 "$OUT/fp4.txt"
[ -f "$OUT/splitk.txt" ] && tail -45 "$OUT/splitk.txt"
[ -f "$OUT/gemm_verify.txt" ] && grep -c " pass " "$OUT/gemm_verify.txt" && grep " FAIL " "$OUT/gemm_verify.txt" | head -20
[ -f "$OUT/gemm_compare.txt" ] && tail -40 "$OUT/gemm_compare.txt"
[ -f "$OUT/gemm_bench.txt" ] && tail -50 "$OUT/gemm_bench.txt"
[ -f "$OUT/train_check.txt" ] && cat "$OUT/train_check.txt"
for f in train_rigel train_vendor train_torch_eager train_torch_compile; do [ -f "$OUT/$f.txt" ] && tail -4 "$OUT/$f.txt"; done
[ -f "$OUT/train_full.txt" ] && grep " val " "$OUT/train_full.txt" | tail -8
[ -f "$OUT/train_rigel_profile.txt" ] && grep -A40 '^phase' "$OUT/train_rigel_profile.txt"
[ -f "$OUT/attention_verify.txt" ] && grep -c " pass " "$OUT/attention_verify.txt" && grep " FAIL " "$OUT/attention_verify.txt" | head -20
[ -f "$OUT/attention_bench.txt" ] && grep -E "^(sdpa|gpt2|targets) " "$OUT/attention_bench.txt" | tail -60
printf '%s\n' "${summary[@]}"
