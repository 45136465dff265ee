#!/usr/bin/env bash
# Data-parallel training end to end on the CPU: `rigel launch --nproc 2 -- rigel train run --backend
# reference`, the ranks summing through files in the rendezvous folder (src/dist/file_sync.hpp).
# - Two ranks and one process with --accumulation 2 read the same global batch and log the same losses
#   and gradient norms (within the fp32 rounding of the ranks' sums; one process sums its micro-batches
#   in float64).
# - ZeRO stage 1 (--shard-optimizer) ends bit for bit where the replicated ranks end, checkpoint included.
# - The two ranks' checkpoint resumes in one process with --accumulation 2 and finishes the schedule.
# - Nothing is left in the temporary folder the launcher made its rendezvous in.
# Usage: data_parallel.sh RIGEL
set -euo pipefail
rigel=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/rigel_cli_dp.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mkdir "$work/tmp"
export TMPDIR=$work/tmp

fail() { echo "FAIL: $*" >&2; exit 1; }

# A token file in llm.c's format: 256 int32 of header (magic, version, count), then uint16 tokens.
python3 - "$work/tokens.bin" <<'EOF'
import random, struct, sys
rng = random.Random(7)
tokens = [rng.randrange(0, 50257) for _ in range(4096)]
header = [20240520, 1, len(tokens)] + [0] * 253
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *header) + struct.pack("<%dH" % len(tokens), *tokens))
EOF

common=(train run --backend reference --model tiny --data "$work/tokens.bin" --batch 2 --seq 16 --steps 4)
run() {  # run NAME ARGS...: the log in $work/NAME.log, the CSV in $work/NAME/
  local name=$1
  shift
  "$@" --out "$work/$name" > "$work/$name.log" 2>&1 || fail "$name: $(tail -3 "$work/$name.log")"
}
run one "$rigel" "${common[@]}" --stop-after 3 --accumulation 2 --checkpoint "$work/one.ckpt"
run two "$rigel" launch --nproc 2 -- "$rigel" "${common[@]}" --stop-after 3 --checkpoint "$work/two.ckpt"
run zero "$rigel" launch --nproc 2 -- "$rigel" "${common[@]}" --stop-after 3 --shard-optimizer \
  --checkpoint "$work/zero.ckpt"

grep -q "x 2 ranks" "$work/two.log" || fail "the launched run did not train on 2 ranks: $(head -2 "$work/two.log")"
cmp -s "$work/two.ckpt" "$work/zero.ckpt" || fail "ZeRO stage 1's checkpoint differs from the replicated ranks'"

# The logs, step by step: the same steps; losses and norms within 1e-5 relative (one process and two
# ranks), identical (replicated and sharded ranks).
python3 - "$work/one" "$work/two" "$work/zero" <<'EOF' || fail "the runs' logs disagree (above)"
import csv, glob, sys

def log(folder):
    files = glob.glob(folder + "/*.csv")
    assert len(files) == 1, f"{folder}: {files}"
    return list(csv.DictReader(open(files[0])))

one, two, zero = (log(d) for d in sys.argv[1:4])
ok = True
for name, rows in (("two ranks", two), ("ZeRO", zero)):
    if [r["step"] for r in rows] != [r["step"] for r in one] or len(one) != 3:
        print(f"{name}: steps {[r['step'] for r in rows]} against {[r['step'] for r in one]}")
        ok = False
for a, b, c in zip(one, two, zero):
    for col in ("loss", "grad_norm"):
        x, y, z = float(a[col]), float(b[col]), float(c[col])
        if abs(x - y) > 1e-5 * abs(x):
            print(f"step {a['step']} {col}: one process {x}, two ranks {y}")
            ok = False
        if y != z:
            print(f"step {a['step']} {col}: replicated {y}, ZeRO {z}")
            ok = False
sys.exit(0 if ok else 1)
EOF

# The two ranks' checkpoint, resumed in one process (the same global batch), finishes the schedule.
run resumed "$rigel" "${common[@]}" --accumulation 2 --checkpoint "$work/two.ckpt" --resume
grep -q "step     4/4" "$work/resumed.log" || fail "the resumed run did not reach step 4: $(tail -3 "$work/resumed.log")"

# The launcher removed its rendezvous folders, the ranks' sum files with them.
[ -z "$(ls -A "$work/tmp")" ] || fail "left in the temporary folder: $(ls -A "$work/tmp")"
echo "data parallel on the CPU: 2 ranks = 1 process x 2 micro-batches, ZeRO = replicated, resumed in 1 process"
