#!/usr/bin/env bash
# The ladder's result files under two runs into one folder at once, and under
# SIGINT and SIGTERM: each run keeps every row it measured, a sidecar always
# counts the rows of the CSV beside it, and no temporary file stays behind.
# Usage: runs.sh concurrent|interrupt RIGEL
set -euo pipefail
what=$1
rigel=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/rigel_cli_runs.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
# Background jobs get their own process group and keep SIGINT (a shell
# without job control starts them with SIGINT ignored).
set -m

fail() { echo "FAIL: $*" >&2; exit 1; }
json_field() { grep -o "\"$2\": [^,]*" "$1" | head -1 | sed 's/^[^:]*: //; s/"//g'; }
data_rows() { echo $(( $(wc -l < "$1") - 1 )); }

# Every CSV in $1 agrees with its sidecar; prints the data rows of each.
check_pairs() {
  local csv json rows
  for csv in "$1"/*.csv; do
    json=${csv%.csv}.json
    [ -f "$json" ] || fail "$csv has no sidecar"
    rows=$(data_rows "$csv")
    [ "$(json_field "$json" rows)" = "$rows" ] || fail "$json says $(json_field "$json" rows) rows, $csv has $rows"
    [ "$(json_field "$json" csv)" = "$(basename "$csv")" ] || fail "$json names $(json_field "$json" csv)"
    local id; id=$(json_field "$json" run_id)
    if [ "$rows" -gt 0 ] && grep -v -q "^run_id,\|^$id," "$csv"; then fail "$csv holds rows of another run"; fi
    echo "$rows"
  done
  if compgen -G "$1/*.tmp.*" > /dev/null; then fail "temporary files left: $(ls "$1")"; fi
}

case $what in
concurrent)
  out=$work/out
  args=(ladder --backend cpu --sizes 32 48 --warmup 0 --min-time 0.02 --out "$out")
  "$rigel" "${args[@]}" > "$work/a.log" 2>&1 & a=$!
  "$rigel" "${args[@]}" > "$work/b.log" 2>&1 & b=$!
  wait $a || fail "first run exited $?: $(cat "$work/a.log")"
  wait $b || fail "second run exited $?: $(cat "$work/b.log")"
  n_csv=$(ls "$out"/*.csv | wc -l)
  n_json=$(ls "$out"/*.json | wc -l)
  [ "$n_csv" = 2 ] && [ "$n_json" = 2 ] || fail "expected two CSVs and two sidecars, got: $(ls "$out")"
  rows=($(check_pairs "$out"))
  [ "${rows[0]}" -gt 0 ] && [ "${rows[0]}" = "${rows[1]}" ] || fail "the runs kept ${rows[*]} rows"
  for json in "$out"/*.json; do
    [ "$(json_field "$json" complete)" = true ] || fail "$json: not complete"
  done
  echo "ok: two runs at once kept ${rows[*]} rows in their own files"
  ;;
interrupt)
  # $1: signal, $2: how many times, $3: expected exit status, $4: --min-time,
  # then the sizes
  run_and_stop() {
    local out=$work/$1_$2 pid rc csv
    "$rigel" ladder --backend cpu --sizes "${@:5}" --warmup 0 --min-time "$4" --out "$out" > "$work/$1.log" 2>&1 &
    pid=$!
    # One signal waits for a checkpoint with rows; two come while the first
    # measurement (the naive loop at 512^3 for 10 s) runs, the second quits
    # at once.
    for _ in $(seq 600); do
      csv=$(ls "$out"/*.csv 2>/dev/null | head -1 || true)
      if [ -n "$csv" ] && [ -s "$csv" ]; then
        [ "$2" = 2 ] && sleep 0.3 && break
        [ "$(data_rows "$csv")" -gt 0 ] && break
      fi
      sleep 0.05
    done
    [ -n "$csv" ] || fail "no CSV appeared: $(cat "$work/$1.log")"
    kill -"$1" $pid
    if [ "$2" = 2 ]; then sleep 0.2; kill -"$1" $pid; fi
    rc=0; wait $pid || rc=$?
    [ "$rc" = "$3" ] || fail "SIG$1 x$2: exit $rc, expected $3: $(tail -3 "$work/$1.log")"
    local rows; rows=$(check_pairs "$out")
    local json=${csv%.csv}.json
    [ "$(json_field "$json" complete)" = false ] || fail "SIG$1 x$2: an interrupted run says complete"
    if [ "$2" = 1 ]; then
      [ "$(json_field "$json" interrupted)" = true ] || fail "SIG$1: the sidecar does not say interrupted"
      grep -q "rigel: interrupted: kept $rows row(s) in $csv" "$work/$1.log" ||
        fail "SIG$1: stderr does not say what was kept: $(tail -3 "$work/$1.log")"
    else
      grep -q "rigel: quit at once" "$work/$1.log" || fail "SIG$1 x2: did not quit at once: $(tail -3 "$work/$1.log")"
    fi
    echo "ok: SIG$1 x$2 -> exit $rc, $rows rows kept, CSV and sidecar agree"
  }
  small=(40 48 56 64 72 80 88 96 104 112 120 128)
  run_and_stop INT 1 130 0.05 "${small[@]}"
  run_and_stop TERM 1 143 0.05 "${small[@]}"
  run_and_stop INT 2 130 10 512
  ;;
*)
  fail "unknown case $what"
  ;;
esac
