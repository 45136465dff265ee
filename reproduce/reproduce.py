#!/usr/bin/env python3
"""Regenerate every table, figure and finding rigel publishes from the committed CSVs alone.

Reads results/<machine>/*.csv (checked first against results/MANIFEST.sha256),
writes docs/ladder.md, the tables between the generated-table markers in
README.md, FINDINGS.md (findings.py) and docs/figures/*.png (matplotlib; one
module of reproduce/figures/ per figure, in one style).
Needs no GPU and no build. A file whose content would not change is not
rewritten, so a second run leaves the tree as it was.

    python3 reproduce/reproduce.py                  # check the manifest, regenerate
    python3 reproduce/reproduce.py --update-manifest  # after committing new results
    python3 reproduce/reproduce.py --no-figures     # tables and findings only
"""
import argparse
import csv
import hashlib
import json
import math
import re
import sys
from collections import OrderedDict
from pathlib import Path

sys.dont_write_bytecode = True  # regenerating leaves no __pycache__ in the tree
import attention_report  # noqa: E402
import findings  # noqa: E402
import gemm_report  # noqa: E402
import timing_report  # noqa: E402
import train_report  # noqa: E402
import gates_report  # noqa: E402
import allreduce_report  # noqa: E402
import fleet_report  # noqa: E402
import scaling_report  # noqa: E402
import mmasim_report  # noqa: E402
import operand_layout_report  # noqa: E402
import glance  # noqa: E402
from figures import accumulator, climb, fused_gain, roofline, speed_ratios, style, wins  # noqa: E402
from verdicts import meets_ratio  # noqa: E402

NAIVE = "k01_cpu_naive"


def set_root(root):
    """The tree to read and write: the checkout, or another with the same
    layout (the tests use a temporary copy)."""
    global ROOT, RESULTS, MANIFEST, FINDINGS_RESULTS
    ROOT = Path(root).resolve()
    RESULTS = ROOT / "results"
    MANIFEST = RESULTS / "MANIFEST.sha256"
    # The results FINDINGS.md is rendered from.
    FINDINGS_RESULTS = [RESULTS / "h200"]


set_root(Path(__file__).resolve().parent.parent)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def result_files():
    """Every committed result: results/<machine>/*, and results/<machine>/experiments/*
    (runs of code that was measured and then taken out; no report reads them,
    the documents that cite them name them)."""
    found = list(RESULTS.glob("*/*")) + list(RESULTS.glob("*/experiments/*"))
    return sorted(p for p in found if p.suffix in (".csv", ".json"))


def update_manifest():
    lines = [f"{sha256(p)}  {p.relative_to(RESULTS)}" for p in result_files()]
    MANIFEST.write_text("\n".join(lines) + ("\n" if lines else ""))
    print(f"reproduce: manifest lists {len(lines)} files")


def check_manifest():
    if not MANIFEST.exists():
        sys.exit("reproduce: results/MANIFEST.sha256 is missing (run with --update-manifest)")
    listed = {}
    for line in MANIFEST.read_text().splitlines():
        if line.strip():
            digest, name = line.split(None, 1)
            listed[name.strip()] = digest
    problems = []
    for name, digest in listed.items():
        p = RESULTS / name
        if not p.exists():
            problems.append(f"missing: {name}")
        elif sha256(p) != digest:
            problems.append(f"changed since the manifest: {name}")
    for p in result_files():
        if str(p.relative_to(RESULTS)) not in listed:
            problems.append(f"not in the manifest: {p.relative_to(RESULTS)}")
    if problems:
        sys.exit("reproduce: " + "; ".join(problems))


# The machine the README, docs/ladder.md and FINDINGS.md speak for; results of any other machine
# (results/<machine>/) go to docs/machines/<machine>.md, never into those tables.
MAIN_MACHINE = "h200"
NOT_A_MACHINE = ("toolchain",)


def read_rows(kind, machine=None):
    """All rows of every *_<kind>.csv (of one machine's folder, if named), each with its machine and sidecar."""
    rows = []
    files = []
    for p in RESULTS.glob(f"{machine or '*'}/*_{kind}*.csv"):
        side = p.with_suffix(".json")
        meta = json.loads(side.read_text()) if side.exists() else {}
        files.append((meta.get("run_id", "") or first_run_id(p), p, meta))
    # Oldest run first (run ids start with the UTC time), so "latest" means latest.
    for _, p, meta in sorted(files, key=lambda f: (f[0], f[1].name)):
        with p.open(newline="") as f:
            for r in csv.DictReader(f):
                r["_machine"] = p.parent.name
                r["_file"] = p.name
                r["_commit"] = meta.get("git_commit", "")[:7]
                r["_gpu"] = meta.get("environment", {}).get("gpu_name", "")
                # Older ladder CSVs: `gflops`; newer: `rate` in `rate_unit`
                # (Gop/s for integer products).
                r["_rate"] = fnum(r["rate"] if "rate" in r else r.get("gflops"))
                r["_ops"] = r["rate_unit"] == "Gop/s" if "rate_unit" in r else r["dtype"] == "i8"
                rows.append(r)
    return rows


def first_run_id(path):
    """The run id in a CSV's first row (its `run_id` column), "" without one."""
    with path.open(newline="") as f:
        return next(csv.DictReader(f), {}).get("run_id", "") or ""


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def rate(gflops, ops=False):
    """Auto-scaled rate; integer products count operations, not flops."""
    if math.isnan(gflops):
        return "-"
    big, small = ("Tops", "Gops") if ops else ("Tflop/s", "Gflop/s")
    return f"{gflops / 1000:.1f} {big}" if gflops >= 1000 else f"{gflops:.2f} {small}"


def shape_of(r):
    return f"{r['m']}x{r['n']}x{r['k']}"


def latest_per_key(rows, key):
    """Keep the last row (files are sorted by date) for each key."""
    out = OrderedDict()
    for r in rows:
        out[key(r)] = r
    return list(out.values())


def stem_age(folder, stem):
    """How late the run of a date_commit stem is: the first run id of its
    probes or ladder CSVs (the UTC time it starts with), then the stem."""
    ids = []
    for p in sorted(folder.glob(stem + "_*.csv")):
        if p.name.endswith("_sass.csv") or p.name.endswith("_sass_kernels.csv"):
            continue
        with p.open(newline="") as f:
            row = next(csv.DictReader(f), None)
        if row and row.get("run_id"):
            ids.append(row["run_id"])
    return (min(ids) if ids else "", stem)


def sass_opcodes():
    """Matrix opcodes in each rung's machine code, per SASS record:
    {(machine, date_commit stem, object): "HGMMA"...}, and under
    (machine, None, object) every record of that object as (age, opcodes,
    stem), for rows whose own run recorded no SASS."""
    out = {}
    for p in sorted(RESULTS.glob("*/*_sass.csv")):
        stem = findings.result_stem(p.name)
        age = stem_age(p.parent, stem)
        with p.open(newline="") as f:
            for r in csv.DictReader(f):
                found = [op.upper() for op in ("qgmma", "hgmma", "hmma", "imma", "dmma", "ffma")
                         if int(r.get(op, "0") or 0) > 0]
                ops = "+".join(found[:2]) if found else "-"
                out[(p.parent.name, stem, r["object"])] = ops
                out.setdefault((p.parent.name, None, r["object"]), []).append((age, ops, stem))
    return out


def sass_text(r, sass):
    """The SASS cell of a ladder row: the opcodes of its rung in the SASS
    record of its own run's stem; else in the newest record made before its
    run, naming the commit whose build that was; "library" for a vendor row,
    "-" for the CPU, "no SASS record" for an own GPU rung no earlier record
    holds."""
    if r["backend"] == "cpu":
        return "-"
    if r["vendor"] == "1":
        return "library"
    own = sass.get((r["_machine"], findings.result_stem(r["_file"]), r["rung"]))
    if own is not None:
        return own
    before = [rec for rec in sass.get((r["_machine"], None, r["rung"]), [])
              if rec[0][0] and rec[0][0] < r.get("run_id", "")]
    if not before:
        return "no SASS record"
    _, ops, stem = max(before)
    return f"{ops} ({stem.split('_', 1)[-1]}'s build)"


def paired_of(r):
    """(median, p10, p90, vendor rung) of a ladder row's per-pair ratios
    against a vendor row (`rigel ladder --paired`), None without them."""
    median = fnum(r.get("paired_ratio_median", ""))
    if not r.get("paired_vendor") or not math.isfinite(median) or median <= 0:
        return None
    return median, fnum(r.get("paired_ratio_p10", "")), fnum(r.get("paired_ratio_p90", "")), r["paired_vendor"]


def spread_text(median, p10, p90, digits):
    """"1.052x [0.978, 1.059]"; the brackets left out where p10 or p90 is missing."""
    spread = f" [{p10:.{digits}f}, {p90:.{digits}f}]" if math.isfinite(p10) and math.isfinite(p90) else ""
    return f"{median:.{digits}f}x{spread}"


def pct_text(r):
    """The "% of vendor" cell: the row's rate over the vendor row's, two
    medians timed apart; where the row was also timed in alternating pairs
    against a vendor row, that paired ratio beside it, which is the one to
    read."""
    pct = fnum(r["pct_of_vendor"])
    text = "-" if math.isnan(pct) else f"{pct:.1f}%"
    p = paired_of(r)
    if p is None:
        return text
    paired = f"{spread_text(p[0], p[1], p[2], 3)} paired vs {p[3].replace('vendor_', '')}"
    return paired if math.isnan(pct) else f"{text} unpaired; {paired}"


def ladder_table(rows, size):
    """The ladder at one cube size: every verified rung, naive CPU to the top."""
    shape = f"{size}x{size}x{size}"
    sel = [r for r in rows if shape_of(r) == shape and r["status"] == "PASS" and r["_rate"] > 0]
    sel = latest_per_key(sel, lambda r: (r["_machine"], r["rung"], r["dtype"], r["threads"]))
    naive = [r for r in sel if r["rung"] == NAIVE and r["dtype"] == "f32"]
    base = naive[-1]["_rate"] if naive else math.nan
    sass = sass_opcodes()
    out = ["| rung | backend | type | threads | rate | x naive CPU f32 | % of vendor | max scaled error | SASS | source |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sel:
        g = r["_rate"]
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["rung"], r["backend"], r["dtype"], r["threads"], rate(g, r["_ops"]),
            "-" if math.isnan(base) else f"{g / base:,.0f}x" if g / base >= 10 else f"{g / base:.1f}x",
            pct_text(r), f"{fnum(r['err_max_scaled']):.1e}", sass_text(r, sass),
            f"{r['_machine']}/{r['_file']}"))
    return "\n".join(out), len(sel)


# The climb, one row per step: (label, rung, type, cube size, threads or None).
CLIMB = [
    ("naive CPU loop", "k01_cpu_naive", "f32", 2048, "1"),
    ("CPU: i-k-j order", "k02_cpu_ikj", "f32", 2048, "1"),
    ("CPU: cache blocking", "k03_cpu_blocked", "f32", 2048, "1"),
    ("CPU: packed panels + AVX-512 microkernel", "k04_cpu_packed_simd", "f32", 2048, "1"),
    ("CPU: all cores", "k05_cpu_threads", "f32", 2048, None),
    ("GPU: naive kernel", "k10_naive", "f32", 4096, None),
    ("GPU: coalesced", "k11_coalesced", "f32", 4096, None),
    ("GPU: 32x32 shared-memory tiles", "k12_smem_tiled", "f32", 4096, None),
    ("GPU: 2D register blocking", "k14_regblock_2d", "f32", 4096, None),
    ("GPU: warp tiling (best SIMT fp32)", "k16_warptiled", "f32", 4096, None),
    ("GPU: tiled kernel in fp16", "k17_tiled_half", "f16", 4096, None),
    ("tensor cores: WMMA", "k20_wmma", "f16", 4096, None),
    ("tensor cores: mma.sync + cp.async pipeline", "k21_mma_sync", "bf16", 4096, None),
    ("Hopper: wgmma + TMA", "k30_wgmma_tma", "bf16", 4096, None),
    ("Hopper: warp-specialized, persistent", "k32_wgmma_persistent", "bf16", 4096, None),
    ("Hopper: clusters, multicast, TMA-store epilogue", "k35_wgmma_cluster_multicast", "bf16", 8192, None),
    ("Hopper: the same in fp8 e4m3", "k35_wgmma_cluster_multicast", "e4m3", 8192, None),
]


def climb_data(rows):
    """The steps of the climb that were measured: [(label, row)], the naive
    loop's row first; [] when the naive loop was not measured."""
    ok = [r for r in rows if r["status"] == "PASS" and r["_rate"] > 0]
    latest = {}
    for r in ok:
        latest[(r["rung"], r["dtype"], shape_of(r), r["threads"])] = r
    def find(rung, dtype, size, threads):
        shape = f"{size}x{size}x{size}"
        hits = [r for k, r in latest.items() if k[0] == rung and k[1] == dtype and k[2] == shape
                and (threads is None or k[3] == threads)]
        return hits[-1] if hits else None
    if not find("k01_cpu_naive", "f32", 2048, "1"):
        return []
    steps = []
    for label, rung, dtype, size, threads in CLIMB:
        r = find(rung, dtype, size, threads)
        if r:
            steps.append((label, r))
    return steps


def climb_table(rows):
    """From the naive CPU loop to the top, with the factor over the naive loop."""
    steps = climb_data(rows)
    if not steps:
        return "", 0
    base = steps[0][1]["_rate"]
    out = ["| step | rung | type | size | threads | rate | x naive | % of vendor (same run) | source |",
           "|---|---|---|---|---|---|---|---|---|"]
    for label, r in steps:
        g = r["_rate"]
        out.append(f"| {label} | {r['rung']} | {r['dtype']} | {r['m']}^3 | {r['threads']} | {rate(g, r['_ops'])} | "
                   f"{g / base:,.0f}x | {pct_text(r)} | {r['_machine']}/{r['_file']} |")
    return "\n".join(out), len(steps)


def promotes(rung):
    """Whether an own rung promotes its fp8 sums out of the tensor core (k34,
    k36, and k38 with its block scales): the ladder's Rung::promotes, read from
    the rung's name, since the CSVs do not carry it."""
    return any(word in rung for word in ("promoted", "block_scaled"))


def baseline_for(rung, vendor_rows):
    """The vendor row an own rung is judged against: fp8 rungs that accumulate
    in the tensor core alone face cuBLASLt's fast accumulation, promoted ones
    (k34, k36, and k38, which promotes with its block scales) and every other
    type the library's default."""
    primary = next((v for v in vendor_rows if "fastacc" not in v["rung"]), None)
    fast = next((v for v in vendor_rows if "fastacc" in v["rung"]), None)
    if fast and not promotes(rung):
        return fast
    return primary


def vendor_sweep_data(rows):
    """Own Hopper rungs against cuBLAS/cuBLASLt across shapes (the bench runs):
    one entry per (type, shape), each rung's latest measurement as a ratio to
    its baseline measured in the same run: the paired ratio (`rigel ladder
    --paired`) where the run took one against that baseline, else the ratio of
    the two single-sided rates. Returns (own rung ids, entries); each entry is
    a dict with dtype, shape, ratios {rung: ratio}, paired {rungs whose ratio
    is paired}, spread {paired rung: (p10, p90)}, best (ratio, rung, baseline
    rung) or None, vendors (the latest run's vendor rows) and files, ordered
    by type, then volume."""
    ok = [r for r in rows if r["backend"] == "cuda" and r["status"] == "PASS" and r["_rate"] > 0
          and r["group"] in ("hopper", "vendor")]
    vendors_of_run = {}
    for r in ok:
        if r["vendor"] == "1":
            vendors_of_run.setdefault((r["run_id"], r["dtype"], shape_of(r)), []).append(r)
    # Latest own row per (rung, type, shape) among runs that also measured the vendor.
    own = latest_per_key([r for r in ok if r["vendor"] != "1"
                          and (r["run_id"], r["dtype"], shape_of(r)) in vendors_of_run],
                         lambda r: (r["rung"], r["dtype"], shape_of(r)))
    lines = OrderedDict()
    for r in own:
        lines.setdefault((r["dtype"], shape_of(r)), []).append(r)
    own_ids = sorted({r["rung"] for r in own})
    def volume(key):
        m, n, k = (int(x) for x in key[1].split("x"))
        return (key[0], m * n * k, key[1])
    entries = []
    for key in sorted(lines, key=volume):
        rs = lines[key]
        ratios, paired, spread, rates, runs, best, files = {}, set(), {}, {}, {}, None, []
        for rid in own_ids:
            r = next((x for x in rs if x["rung"] == rid), None)
            base = baseline_for(rid, vendors_of_run[(r["run_id"], key[0], key[1])]) if r else None
            if not r or not base:
                continue
            ratio = r["_rate"] / base["_rate"]
            p = paired_of(r)
            if p is not None and p[3] == base["rung"]:
                ratio = p[0]
                paired.add(rid)
                spread[rid] = (p[1], p[2])
            ratios[rid] = ratio
            rates[rid] = r["_rate"]
            runs[rid] = r["run_id"]
            if r["_file"] not in files:
                files.append(r["_file"])
            if best is None or ratio > best[0]:
                best = (ratio, rid, base["rung"])
        latest_run = max(rs, key=lambda x: x["run_id"])["run_id"]
        entries.append({"dtype": key[0], "shape": key[1], "ratios": ratios, "paired": paired, "spread": spread,
                        "rates": rates,
                        "runs": runs, "best": best,
                        "vendors": vendors_of_run[(latest_run, key[0], key[1])], "files": files,
                        "machine": rs[0]["_machine"]})
    return own_ids, entries


def wgmma_ceilings(probes):
    """{type: Tflop/s} the throughput probe's newest run measured for wgmma (the
    highest over its N), and that file's name; ({}, None) without one."""
    f = findings.latest_ceiling_run(probes)
    if not f:
        return {}, None
    t, best = f.table, {}
    for i in range(len(t.rows)):
        if (findings.is_ceiling_row(t, i) and t.cell(i, "verified") == "1"
                and t.cell(i, "path").lower().startswith("wgmma")):
            v = findings.rate_tflops(t, i)
            if v is not None and v > best.get(t.cell(i, "dtype"), 0.0):
                best[t.cell(i, "dtype")] = v
    return best, f.name


def sweep_ratio_text(e, rid, digits, more=""):
    """A rung's ratio in the sweep: "1.052x [0.978, 1.059] (paired)" where the
    run paired it with its baseline, else "0.960x (unpaired)" (two medians
    timed apart); `more` goes inside the parentheses."""
    ratio = e["ratios"][rid]
    if rid in e["paired"]:
        p10, p90 = e["spread"].get(rid, (math.nan, math.nan))
        return f"{spread_text(ratio, p10, p90, digits)} (paired{more})"
    return f"{ratio:.{digits}f}x (unpaired{more})"


def vendor_sweep_table(rows, ceilings=None):
    """The sweep as a table, so that where rigel loses is as visible as where it wins.
    `ceilings` ({type: Tflop/s}, wgmma_ceilings): each cell also says what share
    of the probe-measured wgmma ceiling of its type the rung reached."""
    ceilings = ceilings or {}
    own_ids, entries = vendor_sweep_data(rows)
    out = ["| type | shape (MxNxK) | vendor (latest run) | " + " | ".join(own_ids) + " | best own / vendor | sources |",
           "|---|---|---|" + "---|" * len(own_ids) + "---|---|"]
    for e in entries:
        ceiling = ceilings.get(e["dtype"])
        cells = [(sweep_ratio_text(e, rid, 2)
                  + (f", {e['rates'][rid] / (ceiling * 1000):.0%}" if ceiling else "")) if rid in e["ratios"]
                 else "-" for rid in own_ids]
        vtext = ", ".join(f"{v['rung'].replace('vendor_', '')} {rate(v['_rate'], v['_ops'])}"
                          + (f" ({v['_rate'] / (ceiling * 1000):.0%})" if ceiling else "") for v in e["vendors"])
        best = e["best"]
        btext = sweep_ratio_text(e, best[1], 2, f", {best[1]} / {best[2].replace('vendor_', '')}") if best else "-"
        out.append(f"| {e['dtype']} | {e['shape']} | {vtext} | " + " | ".join(cells) + f" | {btext} | "
                   + ", ".join(f"{e['machine']}/{f}" for f in e["files"]) + " |")
    return "\n".join(out), len(entries)


# Issue 11's targets, read off the sweep (vendor_sweep_data): each the best own rung's ratio to the
# baseline it is judged by, paired where the run took pairs.
ISSUE11_SQUARES = (2048, 4096, 8192, 16384)


def issue11_targets(rows):
    """[(target, measured, met)] for issue 11; met None where nothing measured it."""
    _, entries = vendor_sweep_data(rows)
    by = {(e["dtype"], e["shape"]): e for e in entries}

    def cube(n):
        return f"{n}x{n}x{n}"

    def best(dtype, n, keep=lambda rid: True):
        e = by.get((dtype, cube(n)))
        got = [(ratio, rid) for rid, ratio in (e["ratios"].items() if e else []) if keep(rid)]
        return (max(got), e) if got else (None, e)

    def said(found, goal=None):
        # Decimals enough that a ratio just short of its goal does not print as the goal (1.0497x, not 1.050x).
        (ratio, rid), e = found
        digits = findings.verdict_digits(ratio, goal, 3) if goal else 3
        return f"{sweep_ratio_text(e, rid, digits)}, {rid}"

    out = []
    for n, goal in ((4096, 1.05), (8192, 1.03)):
        f = best("bf16", n)
        out.append((f"bf16 {n}^3 >= {goal:.2f}x cuBLAS", said(f, goal) if f[0] else "-",
                    meets_ratio(f[0][0], goal) if f[0] else None))
    f = best("e4m3", 8192, lambda rid: not promotes(rid))
    out.append(("e4m3 8192^3 without promotion >= 1.02x cuBLASLt FAST_ACCUM", said(f) if f[0] else "-",
                meets_ratio(f[0][0], 1.02) if f[0] else None))
    promoted = [best("e4m3", n, lambda rid: promotes(rid) and "block_scaled" not in rid) for n in (4096, 8192)]
    out.append(("e4m3 with promotion >= 0.95x cuBLASLt's default at 4096^3 and 8192^3",
                "; ".join(f"{n}^3 {said(f)}" for n, f in zip((4096, 8192), promoted) if f[0]) or "-",
                all(meets_ratio(f[0][0], 0.95) for f in promoted) if all(f[0] for f in promoted) else None))
    scaled = []
    for n in (4096, 8192):
        e = by.get(("e4m3", cube(n)))
        r = e["ratios"] if e else {}
        a, b = "k38_wgmma_fp8_block_scaled", "k34_wgmma_fp8_promoted"
        if a in r and b in r and e["runs"][a] == e["runs"][b]:
            scaled.append((n, r[a] / r[b]))
    out.append(("block-scaled fp8 (k38) within 5 % of promoted fp8 (k34), same run",
                "; ".join(f"{n}^3 {q:.3f}x k34" for n, q in scaled) or "-",
                all(meets_ratio(q, 0.95) for _, q in scaled) if len(scaled) == 2 else None))
    # The powers of two must be measured; any other bf16 square of the range the sweep holds counts too
    # (the target is every square from 2048^3 to 16384^3, not only those four).
    others = sorted({int(shape.split("x")[0]) for dtype, shape in by if dtype == "bf16"
                     and len(set(shape.split("x"))) == 1 and 2048 <= int(shape.split("x")[0]) <= 16384}
                    - set(ISSUE11_SQUARES))
    squares = [(n, best("bf16", n)) for n in sorted(set(ISSUE11_SQUARES) | set(others))]
    have = [(n, f) for n, f in squares if f[0]]
    low = min(have, key=lambda x: x[1][0][0]) if have else None
    missing = [str(n) for n, f in squares if not f[0]]
    out.append(("no bf16 square from 2048^3 to 16384^3 below 1.00x cuBLAS",
                (f"lowest {low[0]}^3: {said(low[1])}" if low else "-")
                + (f"; {', '.join(missing)} not measured" if missing else ""),
                (meets_ratio(low[1][0][0], 1.0) if not missing
                 else (False if low and not meets_ratio(low[1][0][0], 1.0) else None))
                if low else None))
    return out


def issue11_block(rows):
    ts = issue11_targets(rows)
    met = sum(m is True for _, _, m in ts)
    lines = [f"Issue 11's targets on the H200 machine (the best own rung of the sweep above against the baseline "
             f"it is judged by): **{met} of {len(ts)} met**.", "", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {t} | {m} | {'not measured' if ok is None else ('met' if ok else '**not met**')} |"
              for t, m, ok in ts]
    return "\n".join(lines)


def other_machines():
    """The results folders of machines other than MAIN_MACHINE that hold result CSVs."""
    return sorted(d.name for d in RESULTS.iterdir()
                  if d.is_dir() and d.name != MAIN_MACHINE and d.name not in NOT_A_MACHINE and any(d.glob("*.csv")))


def other_machine_page(machine, main_fin, main_rows):
    """docs/machines/<machine>.md: what rigel measured on another machine, beside (never inside) the main
    machine's tables: its ladder at each cube size it ran, its GEMM library suites, and its probe files."""
    folder = RESULTS / machine
    rows = read_rows("ladder", machine)
    gpus = sorted({r["_gpu"] or r.get("device", "") for r in rows} - {""})
    fin = findings.load_results([folder], need_probes=False)
    parts = [f"# rigel on the {machine} machine\n",
             f"Generated by `make reproduce` from results/{machine}/; do not edit by hand. The README, "
             f"docs/ladder.md and FINDINGS.md speak for the {MAIN_MACHINE} machine alone; what rigel measured "
             f"here stays on this page.\n"]
    if gpus:
        parts.append(f"\nDevice: {', '.join(gpus)}.\n")
    sizes = sorted({int(r["m"]) for r in rows if r["m"] == r["n"] == r["k"] and r["status"] == "PASS"})
    for size in sizes:
        table, n = ladder_table(rows, size)
        if n:
            parts += [f"\n## Ladder, {size}x{size}x{size}\n\n", table + "\n"]
    beside = beside_main_machine(rows, fin, main_fin, main_rows)
    if beside:
        parts += [f"\n## Beside the {MAIN_MACHINE} machine\n\n", beside + "\n"]
    if fin.gemm_bench:
        parts += ["\n## The GEMM library against cuBLASLt\n\n", gemm_report.library_block(fin.gemm_bench) + "\n"]
    # Runs that forced one kernel (`rigel gemm bench --kernel NAME`), each whole, beside the dispatcher's above.
    for f in sorted((f for f in fin.gemm_bench if f.side("kernel") not in ("", "auto")), key=findings.run_age):
        for suite, srows in gemm_report.rows_by_suite(f).items():
            table = gemm_report.suite_table(suite, srows)
            if table:
                parts += [f"\n### {suite} with the kernel forced to `{f.side('kernel')}`\n\n", table + "\n"]
    # GPT-2's step with GELU's backward fused into the MLP's dX product against its pass of its own.
    if any(folder.glob("*_train_dgelu_*.csv")):
        parts += ["\n## GPT-2's step: GELU's backward fused or in a pass of its own\n\n",
                  train_report.dgelu_block(folder) + "\n"]
    # The probe sections FINDINGS.md renders for the main machine that read any machine's probe rows.
    for section in (operand_layout_report.section(fin.probes),):
        if section:
            parts += ["\n" + section.rstrip("\n") + "\n"]
    probe_files = sorted(f"`{f.name}` ({len(f.table.rows)} rows)" for f in fin.probes)
    if probe_files:
        parts += ["\n## Probe files\n\n",
                  "Committed (sections above render what they can; FINDINGS.md renders the main machine's): "
                  + ", ".join(probe_files) + ".\n"]
    return "".join(parts)


def beside_main_machine(rows, fin, main_fin, main_rows):
    """Each paired ratio measured on another machine beside the main machine's newest for the same
    comparison (ladder: rung, type and shape; GEMM library: suite, case and baseline), each with its file."""
    out = ["| what | shape | type | here, median [p10, p90] | " + MAIN_MACHINE + ", median [p10, p90] | sources |",
           "|---|---|---|---|---|---|"]
    def key(r):
        return (r["rung"], r["dtype"], shape_of(r))
    main = {key(r): r for r in main_rows if r["status"] == "PASS" and paired_of(r)}
    for r in latest_per_key([r for r in rows if r["status"] == "PASS" and paired_of(r)], key):
        m = main.get(key(r))
        here, there = paired_of(r), paired_of(m) if m else None
        out.append(f"| {r['rung']} / {here[3].replace('vendor_', '')} | {shape_of(r)} | {r['dtype']} | "
                   f"{spread_text(*here[:3], 3)} | {spread_text(*there[:3], 3) if there else '-'} | "
                   f"{r['_machine']}/{r['_file']}{', ' + m['_machine'] + '/' + m['_file'] if m else ''} |")
    main_bench = {(b.suite, b.case, b.candidate, b.baseline): b for b in gemm_report.newest_rows(main_fin.gemm_bench)}
    for b in gemm_report.newest_rows(fin.gemm_bench):
        m = main_bench.get((b.suite, b.case, b.candidate, b.baseline))
        out.append(f"| {b.suite} {b.case}: {b.candidate} / {b.baseline} | {b.m}x{b.n}x{b.k} {b.layout} | "
                   f"{b.a_type} -> {b.d_type}, {b.epilogue} | {gemm_report.ratio_spread(b, 3)} | "
                   f"{gemm_report.ratio_spread(m, 3) if m else '-'} | {b.file.machine}/{b.file.name}"
                   f"{', ' + m.file.machine + '/' + m.file.name if m else ''} |")
    return "\n".join(out) if len(out) > 2 else ""


def other_machine_pages(main_fin, main_rows):
    """{machine: its page} for every other machine, set beside the main machine's results (main_fin, the
    FindingsInput FINDINGS.md is rendered from, and its ladder rows)."""
    return {m: other_machine_page(m, main_fin, main_rows) for m in other_machines()}


def write_if_changed(path, data):
    """Writes text or bytes to `path` only when they differ from what is there."""
    findings.write_if_changed(path, data)


def replace_block(text, name, body):
    pat = re.compile(rf"(<!-- generated:{name}:begin -->\n).*?(<!-- generated:{name}:end -->)", re.S)
    if not pat.search(text):
        return text
    return pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def import_pyplot():
    """matplotlib's pyplot on the Agg backend, or None when it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    style.setup(matplotlib)
    return plt


def ladder_figures(rows, plt, figdir):
    for size in (2048, 4096, 8192):
        shape = f"{size}x{size}x{size}"
        sel = [r for r in rows if shape_of(r) == shape and r["status"] == "PASS" and r["_rate"] > 0]
        sel = latest_per_key(sel, lambda r: (r["_machine"], r["rung"], r["dtype"], r["threads"]))
        if not sel:
            continue
        labels = [f"{r['rung']} {r['dtype']}" + (f" x{r['threads']}" if r["threads"] != "1" else "") for r in sel]
        vals = [r["_rate"] for r in sel]
        colors = [style.CPU if r["backend"] == "cpu" else (style.VENDOR if r["vendor"] == "1" else style.OWN)
                  for r in sel]
        fig, ax = plt.subplots(figsize=(9, 0.28 * len(sel) + 1.2))
        ax.barh(range(len(sel)), vals, color=colors, zorder=2)
        ax.set_yticks(range(len(sel)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlim(min(vals) / 2, max(vals) * 1.3)
        style.rate_axis(ax.xaxis, "rate, 2MNK / median time (op/s for integer types; log scale)")
        ax.grid(axis="x", color="#eeeeee", zorder=0)
        ax.set_title(f"rigel ladder at {shape} (grey: CPU, blue: own GPU rungs, red: vendor)")
        fig.tight_layout()
        style.save(fig, figdir / f"ladder_{size}.png", write_if_changed)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update-manifest", action="store_true")
    ap.add_argument("--no-figures", action="store_true", help="skip docs/figures (no matplotlib needed)")
    ap.add_argument("--root", help="the tree to regenerate (default: this checkout)")
    args = ap.parse_args()
    if args.root:
        set_root(args.root)
    plt = None
    if not args.no_figures:
        plt = import_pyplot()
        if plt is None:
            sys.exit("reproduce: error: matplotlib is not installed, so the figures cannot be drawn "
                     "(install python3-matplotlib, or pass --no-figures)")
    if args.update_manifest:
        update_manifest()
    check_manifest()
    try:
        fin = findings.load_results(FINDINGS_RESULTS)
        findings_md = findings.render_findings(fin)
        attention_bench, _ = attention_report.load(RESULTS / "h200")
        bench_for_l2 = max(attention_bench, key=findings.run_age) if attention_bench else None
        attention_section = attention_report.finding_section(
            attention_bench, gemm_report.copy_bandwidth(fin.probes), gemm_report.l2_bytes(bench_for_l2, fin.probes))
        if attention_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + attention_section
        mmasim_section = mmasim_report.section(fin.probes)
        if mmasim_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + mmasim_section
        layout_section = operand_layout_report.section(fin.probes)
        if layout_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + layout_section
        allreduce_section = allreduce_report.section(allreduce_report.load(RESULTS / "h200"))
        if allreduce_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + allreduce_section
        scaling_runs = scaling_report.load(RESULTS / "h200")
        scaling_section = scaling_report.section(scaling_runs)
        if scaling_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + scaling_section
        fleet_section = fleet_report.section(fin.probes + fin.ladder)
        if fleet_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + fleet_section
        fleet_tables = {lid: fleet_report.csv_text(fleet_report.rows(files))
                        for lid, files in fleet_report.launches(fin.probes + fin.ladder).items()}
        gates_section = gates_report.findings_section(RESULTS / "toolchain", RESULTS / "h200")
        if gates_section:
            findings_md = findings_md.rstrip("\n") + "\n\n" + gates_section
        gates_block = gates_report.block(RESULTS / "toolchain")
        driver_block = gates_report.driver_block(RESULTS / "h200")
        offers_block = gates_report.offers_block(RESULTS / "h200")
        emulate_block = gates_report.emulate_block(RESULTS / "h200")
    except findings.FindingsError as e:
        sys.exit(f"reproduce: error: {e}")
    rows = read_rows("ladder", MAIN_MACHINE)
    docs = ROOT / "docs"
    for machine, page in other_machine_pages(fin, rows).items():
        (docs / "machines").mkdir(parents=True, exist_ok=True)
        write_if_changed(docs / "machines" / f"{machine}.md", page)
    docs.mkdir(exist_ok=True)
    for lid, text in fleet_tables.items():  # every GPU of one launch, one CSV with a GPU column
        (docs / "fleet").mkdir(exist_ok=True)
        write_if_changed(docs / "fleet" / f"{lid}.csv", text)
    parts = ["# The ladder, measured\n",
             "Generated by `make reproduce` from the committed CSVs under results/; do not edit by hand.\n"]
    readme = (ROOT / "README.md").read_text()
    table, n = climb_table(rows)
    if n:
        parts += ["\n## The climb\n", table + "\n"]
        readme = replace_block(readme, "climb", table)
    for size in (2048, 4096, 8192):
        table, n = ladder_table(rows, size)
        if n:
            parts += [f"\n## {size}x{size}x{size}\n", table + "\n"]
            readme = replace_block(readme, f"ladder-{size}", table)
    table, n = vendor_sweep_table(rows, wgmma_ceilings(fin.probes)[0])
    if n:
        parts += ["\n## Hopper rungs against cuBLAS across shapes\n", table + "\n"]
        readme = replace_block(readme, "hopper-sweep", table)
        readme = replace_block(readme, "issue11-targets", issue11_block(rows))
    for name, body in gemm_report.readme_blocks(fin).items():
        readme = replace_block(readme, name, body)
    readme = replace_block(readme, "gemm-timing", timing_report.readme_block(fin))
    readme = replace_block(readme, "emulate", emulate_block)
    if not fin.gemm_bench:
        print("reproduce: the GEMM library's README blocks say 'not measured': no committed *_gemm.csv",
              file=sys.stderr)
    try:
        attention_blocks = attention_report.blocks(RESULTS / "h200")
        train_runs = train_report.load(RESULTS / "h200")
        train_profile = train_report.profile_block(RESULTS / "h200")
    except findings.FindingsError as e:
        sys.exit(f"reproduce: error: {e}")
    training_md = (docs / "training.md").read_text() if (docs / "training.md").exists() else ""
    for name, body in (("train-runs", train_report.runs_block(train_runs)),
                       ("train-compare", train_report.compare_block(train_runs)),
                       ("train-targets", train_report.targets_block(train_runs)),
                       ("train-profile", train_profile),
                       ("train-full", train_report.full_block(RESULTS / "h200")),
                       ("train-det", train_report.det_block(RESULTS / "h200")),
                       ("train-dgelu", train_report.dgelu_block(RESULTS / "h200"))):
        readme = replace_block(readme, name, body)
        training_md = replace_block(training_md, name, body)
    if training_md:
        write_if_changed(docs / "training.md", training_md)
    readme = replace_block(readme, "glance", glance.block([
        ("GEMM kernels against cuBLAS (issue 11)", "#hopper-rungs-against-cublas-across-shapes", issue11_targets(rows)),
        ("the GEMM library against cuBLASLt (issue 10)", "#rigels-gemm-library-against-cublaslt",
         [(t.target, t.measured, t.met) for t in gemm_report.targets(fin.gemm_bench)]),
        ("fused attention against cuDNN", "#rigels-fused-attention-against-cudnn",
         attention_report.targets(attention_bench)),
        ("training GPT-2 against PyTorch", "#training-gpt-2-on-rigels-kernels", train_report.targets(train_runs)[1]),
        ("data-parallel training (issue 15)", "docs/multi_gpu.md", [scaling_report.target(scaling_runs)])]))
    attention_md = (docs / "attention.md").read_text() if (docs / "attention.md").exists() else ""
    for name, body in attention_blocks.items():
        readme = replace_block(readme, name, body)
        attention_md = replace_block(attention_md, name, body)
    if attention_md:
        write_if_changed(docs / "attention.md", attention_md)
    gates_md = (docs / "version_gates.md").read_text() if (docs / "version_gates.md").exists() else ""
    if gates_md:
        gates_md = replace_block(gates_md, "version-gates", gates_block)
        gates_md = replace_block(gates_md, "driver-gates", driver_block)
        write_if_changed(docs / "version_gates.md", replace_block(gates_md, "cublaslt-offers", offers_block))
    write_if_changed(docs / "ladder.md", "".join(parts))
    write_if_changed(ROOT / "README.md", readme)
    write_if_changed(ROOT / "FINDINGS.md", findings_md)
    if plt:
        figdir = ROOT / "docs" / "figures"
        figdir.mkdir(parents=True, exist_ok=True)
        ladder_figures(rows, plt, figdir)
        climb.draw(plt, climb_data(rows), figdir / "climb.png", write_if_changed)
        wins.draw(plt, vendor_sweep_data(rows)[1], figdir / "wins.png", write_if_changed)
        roofline.draw(plt, rows, findings, fin.probes, figdir / "roofline.png", write_if_changed)
        speed_ratios.draw(plt, findings, findings.throughput_accel_data(fin.probes),
                          findings.ladder_accel_data(fin.ladder), figdir / "speed_ratios.png", write_if_changed)
        accumulator.draw(plt, findings.accumulator_data(fin.probes), figdir / "accumulator.png", write_if_changed)
        fused_gain.draw(plt, gemm_report.fused_gain_data(fin), figdir / "fused_gain.png", write_if_changed)
        train_report.draw(plt, train_runs, figdir / "loss_curves.png", write_if_changed, style)
        train_report.draw_full(plt, RESULTS / "h200", figdir / "full_run.png", write_if_changed, style)
    print(f"reproduce: {len(rows)} ladder rows -> docs/ladder.md, README.md tables, FINDINGS.md"
          + (", docs/figures" if plt else " (figures skipped: --no-figures)"))


if __name__ == "__main__":
    main()
