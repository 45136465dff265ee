"""rigel's GEMM library in the report, from the CSVs of `rigel gemm bench`
(*_gemm.csv) and `rigel gemm verify` (*_gemm_verify.csv) and their sidecars.

- README blocks (reproduce.py): `gemm-verify` (how many library combinations
  passed against float64), `gemm-targets` (issue 10's targets as verdicts) and
  `gemm-library` (every suite's products against cuBLASLt/cuBLAS, with the
  geometric mean and the lowest ratio).
- FINDINGS.md (findings.py): fused bias + GELU against the decomposed path,
  measured for every n beside RIGEL's statement and the gain the bytes that
  fusion saves predict.
- docs/figures/fused_gain.png (figures/fused_gain.py) draws fused_gain_data.

Each suite is reported from the newest bench CSV that has it (run ids start
with the UTC time). While no CSV is committed every block says so. Numbers
come from typed columns only; a ratio is the median of per-pair ratios
(candidate rate / baseline rate, timed in alternating samples), p10 and p90 its
spread.
"""
import math
import re
import statistics
from dataclasses import dataclass

import findings  # findings imports this module too; neither uses the other at import time
from verdicts import meets_ratio

BENCH_SUFFIX = "_gemm.csv"
VERIFY_SUFFIX = "_gemm_verify.csv"
BENCH_COLUMNS = ["run_id", "host", "device", "suite", "case", "m", "n", "k", "layout", "a_type", "b_type", "d_type",
                 "epilogue", "candidate", "baseline", "kernel", "pairs", "candidate_tflops", "baseline_tflops",
                 "ratio_median", "ratio_p10", "ratio_p90", "sm_clock_mhz", "power_w", "temp_c"]
# Written by blocked timing's runs (`rigel gemm bench --blocks`); optional.
SIDE_COLUMNS = ["candidate_sm_clock_mhz", "baseline_sm_clock_mhz", "candidate_power_w", "baseline_power_w"]
VERIFY_COLUMNS = ["run_id", "host", "device", "case", "m", "n", "k", "layout", "a_type", "b_type", "d_type",
                  "epilogue", "lda", "ldb", "ldd", "kernel", "pass", "err_max_scaled", "tolerance", "reason"]
# The sidecar's "what" of each kind, when it has one.
WHAT = {"bench": "gemm_bench", "verify": "gemm_verify"}
PASS_WORDS = {"1": True, "true": True, "pass": True, "0": False, "false": False, "fail": False}

SUITE_ORDER = ["gpt2", "gpt2_dw", "llama7b", "fused", "layouts", "small"]
SUITE_TEXT = {
    "gpt2": "every GEMM of one GPT-2 124M training step at 16,384 tokens, forward and backward in their real layouts",
    "gpt2_dw": ("GPT-2's weight gradients as rigel's trainer runs them, fp32 dW accumulated in place; rigel with "
                "atomics allowed (its sums' order varies from run to run), cuBLASLt in its default, deterministic mode"),
    "llama7b": "a 7B-class model's MLP and QKV products at 4,096 tokens, forward and backward",
    "fused": "bias + GELU fused into the store, square n = 512 ... 16384",
    "layouts": "4096^3 in every storage order of A and B, no epilogue",
    "small": "small squares, where tiles leave SMs idle and launch cost shows, no epilogue",
}
VENDORS = ("cublaslt", "cublas")
SHOWN_NAME = {"cublaslt": "cuBLASLt", "cublas": "cuBLAS", "rigel": "rigel", "rigel_decomposed": "rigel decomposed"}
FUSED_EPILOGUE = "bias_gelu"
DECOMPOSED = "rigel_decomposed"
# Issue 10's thresholds.
SUITE_GEOMEAN_TARGET = 1.00
SUITE_FLOOR_TARGET = 0.90
FUSED_TARGET = 1.00
FUSED_TARGET_SIZES = (4096, 8192)
SMALL_TARGET = 0.90
SMALL_TARGET_SIZES = (512, 1024)
LAYOUT_SIZE = 4096
LAYOUT_REFERENCE = "NT"  # the layout of the ladder's Hopper rungs (A stored M x K, B stored N x K)
LAYOUTS = ("NN", "NT", "TN", "TT")  # every storage order of A and B: the layout target needs all four
LAYOUT_TOLERANCE = 0.03
# The RIGEL study: a fused GEMM + bias + GELU beat the decomposed path by 6.5-12.9 % on its hardware.
RIGEL_GAIN = (0.065, 0.129)
# The decomposed path writes D, then its elementwise kernel reads D back and writes it again: two
# passes over M x N elements that the fused store does not make.
EXTRA_PASSES = 2
OUT_BYTES = {"f32": 4, "bf16": 2, "f16": 2}
# Below this predicted gain the bytes fusion saves are drowned by the GEMM's work.
DROWNED_GAIN = 0.01
MIB = 1 << 20


@dataclass
class BenchRow:
    suite: str
    case: str
    m: int
    n: int
    k: int
    layout: str
    a_type: str
    b_type: str
    d_type: str
    epilogue: str
    candidate: str
    baseline: str
    kernel: str
    pairs: int
    candidate_tflops: float
    baseline_tflops: float
    ratio: float
    p10: float
    p90: float
    sm_clock_mhz: float
    power_w: float
    file: object  # findings.ResultFile
    # Blocked timing (--blocks) alone, NaN otherwise: each side's own clock and mean power.
    sides: tuple = (math.nan, math.nan, math.nan, math.nan)  # candidate MHz, baseline MHz, candidate W, baseline W

    @property
    def shape(self):
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def square(self):
        return self.m if self.m == self.n == self.k else None

    @property
    def measured(self):
        return math.isfinite(self.ratio) and self.ratio > 0


# ---- reading -----------------------------------------------------------------------


# A run whose name was taken in its output folder writes <base>_<run id>.csv or
# <base>_<run id>_<n>.csv instead (claim_stem, src/harness/report_io.cpp); run
# ids look like 20261201T084944Z-d2bf30.
CLAIMED_TAIL = re.compile(r"_\d{8}T\d{6}Z-[0-9a-f]+(_\d+)?\.csv$")


def kind_of(name):
    """"bench", "verify" or None, from a result file's name."""
    name = CLAIMED_TAIL.sub(".csv", name)
    if name.endswith(VERIFY_SUFFIX):
        return "verify"
    if name.endswith(BENCH_SUFFIX):
        return "bench"
    return None


def check_file(rf, kind, where):
    """Refuses, with one line naming the file, a CSV without the columns the
    report reads, a sidecar that says it holds something else, a size or a
    pass cell that is not what the writer writes."""
    what = "a GEMM bench CSV" if kind == "bench" else "a GEMM verify CSV"
    for col in BENCH_COLUMNS if kind == "bench" else VERIFY_COLUMNS:
        if not rf.table.has(col):
            raise findings.FindingsError(f"{findings.shown_path(where)}: not {what} (no column '{col}')")
    said = rf.side("what")
    if said and said != WHAT[kind]:
        raise findings.FindingsError(f"{findings.shown_path(where)}: the sidecar says it holds "
                                     f"'{findings.excerpt(said)}', not {WHAT[kind]}")
    t = rf.table
    for i in range(len(t.rows)):
        for col in ("m", "n", "k"):
            if not re.fullmatch(r"[1-9]\d*", t.cell(i, col)):
                raise findings.FindingsError(f"{findings.shown_path(where)}: row {i + 2}: {col} "
                                             f"'{findings.excerpt(t.cell(i, col))}' is not a positive integer")
        if kind == "verify" and t.cell(i, "pass").lower() not in PASS_WORDS:
            raise findings.FindingsError(f"{findings.shown_path(where)}: row {i + 2}: pass "
                                         f"'{findings.excerpt(t.cell(i, 'pass'))}' is not 1 or 0")


def bench_rows(f):
    t = f.table
    def num(i, col):
        return findings.typed(t, i, col)
    return [BenchRow(suite=t.cell(i, "suite"), case=t.cell(i, "case"), m=int(t.cell(i, "m")), n=int(t.cell(i, "n")),
                     k=int(t.cell(i, "k")), layout=t.cell(i, "layout"), a_type=t.cell(i, "a_type"),
                     b_type=t.cell(i, "b_type"), d_type=t.cell(i, "d_type"), epilogue=t.cell(i, "epilogue"),
                     candidate=t.cell(i, "candidate"), baseline=t.cell(i, "baseline"), kernel=t.cell(i, "kernel"),
                     pairs=findings.parse_int(t.cell(i, "pairs")), candidate_tflops=num(i, "candidate_tflops"),
                     baseline_tflops=num(i, "baseline_tflops"), ratio=num(i, "ratio_median"), p10=num(i, "ratio_p10"),
                     p90=num(i, "ratio_p90"), sm_clock_mhz=num(i, "sm_clock_mhz"), power_w=num(i, "power_w"), file=f,
                     sides=tuple(num(i, c) for c in SIDE_COLUMNS))
            for i in range(len(t.rows))]


def whole_run(f):
    """Whether a file holds its suites whole: `--cases` runs a few of them (its
    sidecar names the filter, its file name says _subset_), and a run stopped
    by its time limit or a signal holds the cases it reached (its sidecar says
    complete false); the README's blocks come from whole runs."""
    return not f.side("cases_filter") and f.side("complete") != "false"


def block_seconds(f):
    """The sidecar's block_s: `rigel gemm bench --blocks SECONDS`, 0 for paired timing."""
    return findings.parse_number(f.side("block_s")) or 0


def pause_seconds(f):
    """The sidecar's pause_s: `rigel gemm bench --pause SECONDS`, 0 for samples back to back."""
    return findings.parse_number(f.side("pause_s")) or 0


def back_to_back(f):
    """Whether a bench file's samples ran back to back: neither blocked (`--blocks`) nor paused (`--pause`)."""
    return not block_seconds(f) > 0 and not pause_seconds(f) > 0


def dispatcher_run(f):
    """Whether a bench file timed the dispatcher's choices on whole suites in
    paired samples: `rigel gemm bench --kernel NAME` forces one kernel for
    comparison, `--blocks SECONDS` times in blocks instead of pairs, and
    `--pause SECONDS` idles the device before each sample, each saying so in
    its sidecar; the README's tables and targets come from the dispatcher's
    back-to-back paired runs."""
    return f.side("kernel") in ("", "auto") and back_to_back(f) and whole_run(f)


def rows_by_suite(f):
    """{suite: its rows} of one bench file, in the file's order."""
    by_suite = {}
    for r in bench_rows(f):
        by_suite.setdefault(r.suite, []).append(r)
    return by_suite


def newest_per_suite(bench_files):
    """{suite: rows of that suite from the newest bench file that has it}, in
    SUITE_ORDER, then any other suite by name."""
    newest = {}
    for f in sorted(bench_files, key=findings.run_age):
        if not dispatcher_run(f):
            continue
        newest.update(rows_by_suite(f))
    order = [s for s in SUITE_ORDER if s in newest] + sorted(s for s in newest if s not in SUITE_ORDER)
    return {s: newest[s] for s in order}


def vendor_rows(rows):
    """rigel against a vendor library, in the CSV's order."""
    return [r for r in rows if r.candidate == "rigel" and r.baseline in VENDORS]


# ---- numbers and words ----------------------------------------------------------------


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def ratio_spread(r, digits=2):
    if not r.measured:
        return "-"
    spread = f" [{r.p10:.{digits}f}, {r.p90:.{digits}f}]" if math.isfinite(r.p10) and math.isfinite(r.p90) else ""
    return f"{r.ratio:.{digits}f}x{spread}"


def tflops(v):
    return f"{v:.1f}" if math.isfinite(v) and v > 0 else "-"


def products(count):
    return f"{count} product" + ("" if count == 1 else "s")


def gain_text(ratio):
    return "%+.1f %%" % (100 * (ratio - 1)) if math.isfinite(ratio) else "-"


def run_date(f):
    """YYYY-MM-DD of a run: its run id's leading UTC date, else the file name's."""
    m = re.match(r"(\d{4})(\d{2})(\d{2})T", f.side("run_id") or f.table.cell(0, "run_id"))
    if m:
        return "-".join(m.groups())
    m = re.match(r"\d{4}-\d{2}-\d{2}", f.name)
    return m.group(0) if m else "?"


def device_of(f):
    return f.table.cell(0, "device") or f.env("gpu_name") or "?"


def provenance(f):
    """"h200/<file> (run <id>, commit <c>, <device>)", the way the README's
    other blocks name a row's source."""
    run = f.side("run_id") or f.table.cell(0, "run_id")
    return (f"{f.machine}/{findings.md_cell(f.name)} (run {findings.md_cell(run)}, commit "
            f"{findings.md_cell(findings.short_commit(f))}, {findings.md_cell(device_of(f))})")


def clock_power(rows):
    clocks = [r.sm_clock_mhz for r in rows if math.isfinite(r.sm_clock_mhz) and r.sm_clock_mhz > 0]
    powers = [r.power_w for r in rows if math.isfinite(r.power_w) and r.power_w > 0]
    parts = []
    if clocks:
        lo, hi = min(clocks), max(clocks)
        parts.append(f"SM clock {lo:.0f} MHz" if lo == hi else f"SM clock {lo:.0f}-{hi:.0f} MHz")
    if powers:
        parts.append(f"power up to {max(powers):.0f} W")
    return ", ".join(parts)


def pairs_text(rows):
    pairs = sorted({r.pairs for r in rows if r.pairs > 0})
    if not pairs:
        return ""
    return f"{pairs[0]} pairs per ratio" if len(pairs) == 1 else f"{pairs[0]}-{pairs[-1]} pairs per ratio"


# ---- README: the suites against the vendor libraries ------------------------------------


@dataclass
class SuiteSummary:
    geomean: float
    lowest: object  # the BenchRow with the lowest median ratio, or None
    measured: int
    total: int
    faster: int


def summarize(rows):
    got = [r for r in rows if r.measured]
    return SuiteSummary(geomean=geomean([r.ratio for r in got]),
                        lowest=min(got, key=lambda r: r.ratio) if got else None,
                        measured=len(got), total=len(rows), faster=sum(r.ratio > 1 for r in got))


def suite_table(suite, rows):
    """The suite's products against the vendor libraries, and for each library
    a line with the geometric mean and the lowest ratio; "" when the suite has
    no such rows."""
    vs = vendor_rows(rows)
    if not vs:
        return ""
    f = vs[0].file
    baselines = ", ".join(SHOWN_NAME.get(b, b) for b in dict.fromkeys(r.baseline for r in vs))
    notes = ", ".join(x for x in (pairs_text(vs), clock_power(vs)) if x)
    out = [f"**{findings.md_cell(suite)}**: {SUITE_TEXT.get(suite, 'suite ' + findings.md_cell(suite))}; rigel against "
           f"{baselines}. From {provenance(f)}" + (f"; {notes}" if notes else "") + ".", "",
           "| case | m x n x k | layout | types (A, B -> D) | epilogue | rigel Tflop/s | baseline | baseline Tflop/s | "
           "rigel / baseline, median [p10, p90] | kernel |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in vs:
        types = f"{r.a_type}, {r.b_type} -> {r.d_type}"
        out.append(f"| {findings.md_cell(r.case)} | {r.m} x {r.n} x {r.k} | {findings.md_cell(r.layout)} | "
                   f"{findings.md_cell(types)} | {findings.md_cell(r.epilogue)} | {tflops(r.candidate_tflops)} | "
                   f"{SHOWN_NAME.get(r.baseline, r.baseline)} | {tflops(r.baseline_tflops)} | {ratio_spread(r)} | "
                   f"{findings.md_cell(r.kernel)} |")
    for b in dict.fromkeys(r.baseline for r in vs):
        s = summarize([r for r in vs if r.baseline == b])
        out.append("")
        if not s.lowest:
            out.append(f"rigel / {SHOWN_NAME.get(b, b)}: no product has a measured ratio.")
            continue
        missing = f" ({s.total - s.measured} not measured)" if s.measured < s.total else ""
        low = s.lowest
        out.append(f"rigel / {SHOWN_NAME.get(b, b)}: geometric mean of the median ratios **{s.geomean:.2f}x** over "
                   f"{products(s.measured)}{missing}; lowest **{low.ratio:.2f}x** ({findings.md_cell(low.case)}, "
                   f"{findings.md_cell(low.layout)}); rigel faster in {s.faster} of {s.measured}.")
    if suite != "fused":  # the fused suite's own finding is in FINDINGS.md
        out += decomposed_lines(rows, {r.case for r in vs})
    return "\n".join(out)


def decomposed_lines(rows, vendor_cases):
    """rigel's fused epilogues against its decomposed path in the same run, and
    the products that have no vendor row at all (the library refused them)."""
    dec = [r for r in rows if r.candidate == "rigel" and r.baseline == DECOMPOSED and r.measured]
    if not dec:
        return []
    parts = []
    for r in dec:
        alone = "" if r.case in vendor_cases else ", no vendor baseline"
        parts.append(f"{findings.md_cell(r.case)} ({findings.md_cell(r.epilogue)}{alone}) {ratio_spread(r)}")
    return ["", "rigel's fused epilogue / its decomposed path (the same GEMM, then an elementwise kernel), same run: "
            + "; ".join(parts) + "."]


def newest_rows(bench_files):
    """[rows] of newest_per_suite, except that `rigel gemm run`'s single cases (suite "run", one case a
    file) keep the newest row of every case, candidate and baseline, not only the newest file's: each row
    names its own file, for the tables that cite a source per row."""
    out = []
    for suite, rows in newest_per_suite(bench_files).items():
        if suite != "run":
            out += rows
            continue
        newest = {}
        for f in sorted(bench_files, key=findings.run_age):
            if dispatcher_run(f):
                for r in rows_by_suite(f).get("run", []):
                    newest[(r.case, r.candidate, r.baseline)] = r
        out += list(newest.values())
    return out


def library_block(bench_files):
    if not bench_files:
        return ("No committed GEMM bench CSV yet (`results/h200/*_gemm.csv`, written by `rigel gemm bench`): the "
                "library has not been measured on the H200 machine.")
    suites = newest_per_suite(bench_files)
    parts = [suite_table(s, rows) for s, rows in suites.items()]
    parts = [p for p in parts if p]
    if fused_rows(suites):
        parts.append("![Fused bias + GELU over the decomposed path against n, measured and predicted]"
                     "(docs/figures/fused_gain.png)\n\nFused bias + GELU against rigel's decomposed path (the GEMM, "
                     "then an elementwise kernel), drawn by `make reproduce`; the numbers and the model are in "
                     "[FINDINGS.md](FINDINGS.md#fused-bias--gelu-against-the-decomposed-path).")
    if not parts:
        return "The committed GEMM bench CSVs hold no row of rigel against a vendor library."
    return "\n\n".join(parts)


# ---- README: issue 10's targets -----------------------------------------------------------


@dataclass
class Target:
    target: str
    measured: str = "-"
    met: object = None  # True, False, or None (not measured)

    @property
    def verdict(self):
        return "not measured" if self.met is None else ("met" if self.met else "**not met**")


def find_row(rows, size, baseline, epilogue):
    for r in rows or []:
        if r.square == size and r.candidate == "rigel" and r.baseline == baseline and r.epilogue == epilogue:
            return r
    return None


def ratio_target(text, row, threshold):
    if row is None or not row.measured:
        return Target(text)
    return Target(text, ratio_spread(row, 3), meets_ratio(row.ratio, threshold))  # 0.988x, not "0.99x" beside "not met"


def suite_targets(label, rows, baseline):
    vs = [r for r in vendor_rows(rows or []) if r.baseline == baseline]
    s = summarize(vs)
    mean = Target(f"{label} suite: geometric mean >= {SUITE_GEOMEAN_TARGET:.2f}x {SHOWN_NAME[baseline]}")
    floor = Target(f"{label} suite: no product below {SUITE_FLOOR_TARGET:.2f}x {SHOWN_NAME[baseline]}")
    if s.lowest:
        # Three decimals: a geometric mean of 0.9967 would read "1.00x" beside "not met" at two. A mean
        # over some of the suite's products is not the suite's: not met while any product is unmeasured.
        # Beside it, the geometric means of the products' p10 and p90: how far the pairs' spread reaches
        # (a mean at 1.000x whose bracket straddles 1.00 is a tie, not a win).
        got = [r for r in vs if r.measured]
        spread = ""
        if got and all(math.isfinite(r.p10) and math.isfinite(r.p90) and r.p10 > 0 for r in got):
            spread = f" [{geomean([r.p10 for r in got]):.3f}, {geomean([r.p90 for r in got]):.3f}]"
        mean.measured = (f"{s.geomean:.3f}x{spread} over {products(s.measured)}"
                         + (f"; {s.total - s.measured} not measured" if s.measured < s.total else ""))
        mean.met = meets_ratio(s.geomean, SUITE_GEOMEAN_TARGET) and s.measured == s.total
        below = [r for r in vs if r.measured and not meets_ratio(r.ratio, SUITE_FLOOR_TARGET)]
        floor.measured = (f"lowest {s.lowest.ratio:.2f}x ({findings.md_cell(s.lowest.case)}); "
                          + (f"{len(below)} below" if below else "none below")
                          + (f"; {s.total - s.measured} not measured" if s.measured < s.total else ""))
        floor.met = not below and s.measured == s.total
    return [mean, floor]


def layout_target(rows):
    """Every layout's rigel rate at LAYOUT_SIZE^3 within LAYOUT_TOLERANCE of the
    reference layout's, same run, same types and epilogue (rates of different
    cases, so not paired: the clock may differ between them). Met only when
    all four layouts (LAYOUTS) were measured for each types and epilogue."""
    t = Target(f"every layout within {100 * LAYOUT_TOLERANCE:.0f} % of layout {LAYOUT_REFERENCE} at {LAYOUT_SIZE}^3 "
               "(rigel's rates, same run)")
    rates = {}  # (types, epilogue) -> {layout: [rate]}
    for r in rows or []:
        if r.square == LAYOUT_SIZE and r.candidate == "rigel" and math.isfinite(r.candidate_tflops) \
                and r.candidate_tflops > 0:
            key = (r.a_type, r.b_type, r.d_type, r.epilogue)
            rates.setdefault(key, {}).setdefault(r.layout, []).append(r.candidate_tflops)
    worst = None  # (rate / reference rate, layout, reference rate)
    for by_layout in rates.values():
        ref = by_layout.get(LAYOUT_REFERENCE)
        if not ref:
            continue
        ref_rate = statistics.median(ref)
        for layout, rs in by_layout.items():
            if layout != LAYOUT_REFERENCE:
                q = statistics.median(rs) / ref_rate
                if worst is None or q < worst[0]:
                    worst = (q, layout, ref_rate)
    missing = sorted({layout for by_layout in rates.values() for layout in LAYOUTS if layout not in by_layout})
    if worst:
        t.measured = (f"lowest {findings.md_cell(worst[1])}: {worst[0]:.3f}x {LAYOUT_REFERENCE}'s "
                      f"{worst[2]:.1f} Tflop/s (unpaired rates)"
                      + (f"; {', '.join(missing)} not measured" if missing else ""))
        t.met = meets_ratio(worst[0], 1 - LAYOUT_TOLERANCE) and not missing
    elif rates:
        t.measured = ", ".join(missing) + " not measured"
    return t


def targets(bench_files):
    suites = newest_per_suite(bench_files)
    out = [ratio_target(f"fused bias + GELU >= {FUSED_TARGET:.2f}x cuBLASLt GELU_BIAS at {n}^3",
                        find_row(suites.get("fused"), n, "cublaslt", FUSED_EPILOGUE), FUSED_TARGET)
           for n in FUSED_TARGET_SIZES]
    out += suite_targets("GPT-2", suites.get("gpt2"), "cublaslt")
    out += suite_targets("7B-class", suites.get("llama7b"), "cublaslt")
    out += [ratio_target(f"{n}^3 >= {SMALL_TARGET:.2f}x cuBLAS", find_row(suites.get("small"), n, "cublas", "none"),
                         SMALL_TARGET) for n in SMALL_TARGET_SIZES]
    out.append(layout_target(suites.get("layouts")))
    return out


def targets_block(bench_files):
    ts = targets(bench_files)
    met = sum(t.met is True for t in ts)
    measured = sum(t.met is not None for t in ts)
    head = (f"Issue 10's targets on the H200 machine (bf16 in and out, paired ratios from the newest bench CSV of each "
            f"suite, [p10, p90] of the pairs; a suite's geometric mean with those of its products' p10 and p90): "
            f"**{met} of {len(ts)} met**" + (f", {len(ts) - measured} not measured." if measured < len(ts)
                                                   else "."))
    if not bench_files:
        head = ("Issue 10's targets; no committed GEMM bench CSV yet (`results/h200/*_gemm.csv`), so none is measured.")
    lines = [head, "", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {t.target} | {t.measured} | {t.verdict} |" for t in ts]
    return "\n".join(lines)


# ---- README: verification --------------------------------------------------------------------

MAX_FAILURES_LISTED = 10


def case_names(f):
    return {f.table.cell(i, "case") for i in range(len(f.table.rows))}


def completing_runs(f, verify_files):
    """The runs that complete `f`, a run of the whole suite that its time limit stopped (no cases filter,
    sidecar complete false, its suite's case count in the sidecar's "cases"): runs of `--cases` at the same
    commit on the same card that verify the cases it had not reached, in run order, each adding cases not
    yet verified; None where no such runs make up the suite. rigel looks for a stop between cases, never
    inside one, so every case a stopped run holds is whole."""
    if f.side("cases_filter") or f.side("complete") != "false":
        return None
    want = findings.parse_number(f.side("cases"))
    if not want or not f.side("git_commit"):
        return None
    seen, runs = case_names(f), []
    for g in sorted(verify_files, key=findings.run_age):
        if (g is f or not g.side("cases_filter") or g.side("complete") == "false" or
                g.side("git_commit") != f.side("git_commit") or device_of(g) != device_of(f)):
            continue
        new = case_names(g) - seen
        if new:
            runs.append(g)
            seen |= new
    return runs if len(seen) >= want else None


def verify_block(verify_files):
    if not verify_files:
        return ("No committed GEMM verify CSV yet (`results/h200/*_gemm_verify.csv`, written by `rigel gemm verify`): "
                "the library's combinations have not been verified on the H200 machine.")
    # A whole run, or a stopped one that runs of the cases it had not reached complete.
    whole = {f.name: [] for f in verify_files if whole_run(f)}
    for f in verify_files:
        rest = completing_runs(f, verify_files)
        if rest:
            whole[f.name] = rest
    if not whole:
        return ("No committed GEMM verify CSV of a whole suite yet (`results/h200/*_gemm_verify.csv`; runs of "
                "`--cases` leave cases out): the library's combinations have not been verified on the H200 machine.")
    f = max((g for g in verify_files if g.name in whole), key=findings.run_age)
    rest = whole[f.name]
    # Rows: the run's own, then each completing run's for the cases not verified before it.
    rows = [(f.table, i) for i in range(len(f.table.rows))]
    seen = case_names(f)
    for g in rest:
        rows += [(g.table, i) for i in range(len(g.table.rows)) if g.table.cell(i, "case") not in seen]
        seen |= case_names(g)
    failing = [(t, i) for t, i in rows if not PASS_WORDS[t.cell(i, "pass").lower()]]
    total = len(rows)
    files = f"{f.machine}/{findings.md_cell(f.name)}"
    if rest:
        files += (", stopped by its time limit, and " +
                  ", ".join(f"{g.machine}/{findings.md_cell(g.name)}" for g in rest) +
                  ", the cases it had not reached")
    text = (f"**{total - len(failing)}/{total} library combinations verified against float64 on the "
            f"{findings.md_cell(device_of(f).replace('NVIDIA ', ''))}** (`rigel gemm verify`, commit "
            f"{findings.md_cell(findings.short_commit(f))}, {run_date(f)}; {files}).")
    if failing:
        def what(ti):
            t, i = ti
            c = lambda col: findings.md_cell(t.cell(i, col))
            return (f"{c('case')} ({c('m')}x{c('n')}x{c('k')} {c('layout')} {c('a_type')} -> {c('d_type')} "
                    f"{c('epilogue')}): {c('reason') or 'no reason given'}")
        text += " Not passing: " + "; ".join(what(i) for i in failing[:MAX_FAILURES_LISTED])
        text += f"; and {len(failing) - MAX_FAILURES_LISTED} more." if len(failing) > MAX_FAILURES_LISTED else "."
    return text


def readme_blocks(fin):
    """{marker name: generated Markdown} for README.md."""
    return {"gemm-verify": verify_block(fin.gemm_verify),
            "gemm-targets": targets_block(fin.gemm_bench),
            "gemm-library": library_block(fin.gemm_bench)}


# ---- FINDINGS.md: fused bias + GELU against the decomposed path --------------------------------


def fused_rows(suites):
    """The fused suite's rigel (fused) against rigel_decomposed rows with a
    measured ratio, one per square n (the last), by n."""
    by_n = {}
    for r in suites.get("fused", []):
        if r.candidate == "rigel" and r.baseline == DECOMPOSED and r.epilogue == FUSED_EPILOGUE and r.measured \
                and r.square:
            by_n[r.square] = r
    return [by_n[n] for n in sorted(by_n)]


def copy_bandwidth(probes):
    """(TB/s, path, file) of the bandwidth the decomposed pass's traffic moves
    at: in the latest probes file that measured one, the device-to-device copy
    (a read and a write per byte, like the elementwise pass) when measured, else
    the highest verified bandwidth; None when no committed file has one."""
    latest = None
    for f in probes:
        t = f.table
        rows = [i for i in range(len(t.rows)) if t.cell(i, "probe") == "bandwidth"
                and t.cell(i, "quantity") == "sustained memory bandwidth" and t.cell(i, "verified") == "1"
                and t.cell(i, "unit") == "TB/s" and findings.parse_number(t.cell(i, "value")) is not None]
        if rows and (latest is None or findings.run_age(f) >= findings.run_age(latest[0])):
            latest = (f, rows)
    if latest is None:
        return None
    f, rows = latest
    copies = [i for i in rows if f.table.cell(i, "path").startswith("cudaMemcpy")]
    best = max(copies or rows, key=lambda i: findings.typed(f.table, i, "value"))
    return findings.typed(f.table, best, "value"), f.table.cell(best, "path"), f


def l2_bytes(bench_file, probes):
    """The L2 size the bench run's sidecar recorded, else the latest probes
    run's; None when neither did."""
    for f in [bench_file] + sorted(probes, key=findings.run_age, reverse=True):
        v = findings.parse_number(f.env("gpu_l2_bytes")) if f is not None else None
        if v:
            return v
    return None


@dataclass
class GainPoint:
    n: int
    gain: float       # median ratio - 1
    p10: float
    p90: float
    predicted: float  # NaN without a bandwidth
    d_bytes: int      # M x N x output bytes
    in_l2: object     # True, False, or None (L2 size unknown)
    row: BenchRow


@dataclass
class FusedGain:
    points: list
    bandwidth: object  # (TB/s, path, probes file) or None
    l2: float          # bytes, or None
    source: object     # the bench ResultFile


def predicted_gain(r, tbs):
    """(EXTRA_PASSES x M x N x bytes / bandwidth) / GEMM time, the GEMM time
    from the fused path's measured rate: out_bytes x passes x R / (2 K B)."""
    if not tbs or not (math.isfinite(r.candidate_tflops) and r.candidate_tflops > 0):
        return math.nan
    extra_s = EXTRA_PASSES * r.m * r.n * OUT_BYTES.get(r.d_type, 2) / (tbs * 1e12)
    gemm_s = 2.0 * r.m * r.n * r.k / (r.candidate_tflops * 1e12)
    return extra_s / gemm_s


def pass_bandwidth(r):
    """TB/s at which the decomposed path's extra passes ran: their bytes over
    the time the decomposed path takes beyond the fused one; NaN where it is
    not slower or a rate is missing."""
    if not all(math.isfinite(x) and x > 0 for x in (r.candidate_tflops, r.baseline_tflops)):
        return math.nan
    flops = 2.0 * r.m * r.n * r.k
    extra_s = flops / (r.baseline_tflops * 1e12) - flops / (r.candidate_tflops * 1e12)
    if extra_s <= 0:
        return math.nan
    return EXTRA_PASSES * r.m * r.n * OUT_BYTES.get(r.d_type, 2) / extra_s / 1e12


def fused_gain_data(fin):
    """FusedGain from the newest bench file with the fused suite, or None."""
    rows = fused_rows(newest_per_suite(fin.gemm_bench))
    if not rows:
        return None
    bw = copy_bandwidth(fin.probes)
    l2 = l2_bytes(rows[0].file, fin.probes)
    points = []
    for r in rows:
        d = r.m * r.n * OUT_BYTES.get(r.d_type, 2)
        points.append(GainPoint(n=r.n, gain=r.ratio - 1, p10=r.p10 - 1, p90=r.p90 - 1,
                                predicted=predicted_gain(r, bw[0] if bw else None), d_bytes=d,
                                in_l2=(d <= l2) if l2 else None, row=r))
    return FusedGain(points, bw, l2, rows[0].file)


def in_range(gain):
    return RIGEL_GAIN[0] - 1e-9 <= gain <= RIGEL_GAIN[1] + 1e-9


def rigel_side(gain):
    return "inside" if in_range(gain) else ("below" if gain < RIGEL_GAIN[0] else "above")


def fused_relation(points):
    """(relation, sentence): what the H200 says of RIGEL's statement. At each n
    the fused path is faster (p10 of the pairs above 1), slower (p90 below 1)
    or neither (the gain is within the pairs' spread)."""
    faster = [p for p in points if p.p10 > 0]
    slower = [p for p in points if p.p90 < 0]
    unresolved = [p for p in points if p not in faster and p not in slower]
    inside = [p for p in points if in_range(p.gain)]
    ns = lambda ps: ", ".join(str(p.n) for p in ps)
    lo, hi = min(p.gain for p in points), max(p.gain for p in points)
    rigel = f"RIGEL's {100 * RIGEL_GAIN[0]:.1f}-{100 * RIGEL_GAIN[1]:.1f} %"
    size = (f"the measured gains run from {100 * lo:+.1f} % to {100 * hi:+.1f} %"
            + (f", inside {rigel} at n = {ns(inside)}" if inside else f", never inside {rigel}"))
    if not faster:
        return "contradicts", ((f"the decomposed path is faster at n = {ns(slower)} (p90 of the pairs below 1.00); "
                                if slower else "") + f"at no n is the fused path faster beyond the pairs' spread; {size}.")
    if slower or unresolved:
        return "confirms in part", (f"the fused path is faster at n = {ns(faster)}"
                                    + (f"; the decomposed path is faster at n = {ns(slower)} (p90 of the pairs below "
                                       "1.00)" if slower else "")
                                    + (f"; at n = {ns(unresolved)} the gain is within the pairs' spread" if unresolved
                                       else "") + f"; {size}.")
    if inside:
        return "confirms", f"the fused path is faster at every n (p10 of the pairs above 1.00); {size}."
    return ("confirms that fusion wins, not by how much",
            f"the fused path is faster at every n (p10 of the pairs above 1.00), but {size}.")


def model_comparison(points):
    """Where the measured gain's spread misses the predicted gain, in words."""
    above = [p for p in points if math.isfinite(p.predicted) and p.p10 > p.predicted]
    below = [p for p in points if math.isfinite(p.predicted) and p.p90 < p.predicted]
    def ns(ps):
        return ", ".join(f"{p.n}" + (" (D in L2)" if p.in_l2 else "") for p in ps)
    text = ""
    if above:
        text += (f" The measured gain exceeds the prediction at n = {ns(above)}: more than the extra bytes separates "
                 "the paths there (the model leaves out the second kernel's launch).")
    if below:
        text += (f" It falls short of the prediction at n = {ns(below)}: the extra passes cost less than the bytes at "
                 "the probe's bandwidth.")
    if not above and not below and any(math.isfinite(p.predicted) for p in points):
        text += " At every n the prediction lies within the pairs' spread."
    return text


def render_finding(fin):
    """The FINDINGS.md section; it says so when no bench CSV has the fused suite."""
    md = ("\n## Fused bias + GELU against the decomposed path\n\n"
          f"RIGEL's statement: a fused GEMM + bias + GELU beat the decomposed path by {100 * RIGEL_GAIN[0]:.1f}-"
          f"{100 * RIGEL_GAIN[1]:.1f} % on its hardware. The H200 measurement: the `fused` suite of "
          "`rigel gemm bench`, "
          "rigel's Plan::run (bias + GELU in the GEMM's store) against Plan::run_decomposed (the same GEMM writing D, "
          "then an elementwise kernel that reads D, applies bias + GELU and writes D again), square n, timed in "
          "alternating pairs; gain = the median of the per-pair ratios - 1, with the pairs' p10 and p90.\n")
    data = fused_gain_data(fin)
    if data is None:
        return md + ("\nNot measured yet: no committed `*_gemm.csv` has the fused suite's rigel against "
                     "rigel_decomposed rows.\n")
    bw, l2 = data.bandwidth, data.l2
    if bw:
        bw_text = (f"B = {bw[0]:.2f} TB/s, the bandwidth probe's {findings.md_cell(bw[1])} "
                   f"({findings.md_cell(bw[2].name)} @ {findings.md_cell(findings.short_commit(bw[2]))})")
    else:
        bw_text = "B, the bandwidth probe's measurement (none committed, so no gain is predicted)"
    md += ("\nWhy the gain shrinks as n grows: the decomposed path moves D twice more than the fused one, "
           f"{EXTRA_PASSES} x M x N x 2 bytes (read back, written again), an O(n^2) cost, while the GEMM's work "
           f"grows as O(n^3). Predicted gain = ({EXTRA_PASSES} x M x N x 2 bytes / B) / GEMM time, with {bw_text} "
           "and the GEMM time 2MNK over the fused path's measured rate at that n; for a square n that is "
           "2R / (n B). The model leaves out the elementwise kernel's launch, which weighs most at the smallest n, "
           "and the L2: ")
    if l2:
        edge = int(math.isqrt(int(l2 // 2)))
        md += (f"while D (n^2 x 2 bytes) fits in the {l2 / MIB:.0f} MiB L2 (up to n = {edge:,}), the elementwise pass "
               "can read D from L2 rather than device memory, so there the traffic costs less than predicted.\n")
    else:
        md += "no committed sidecar records the L2 size, so where D stops fitting in it is not shown.\n"
    md += ("\n| n | D = n^2 x 2 bytes | D fits in L2 | fused Tflop/s | decomposed Tflop/s | gain, median [p10, p90] | "
           f"predicted gain | the extra passes' bandwidth | against RIGEL's {100 * RIGEL_GAIN[0]:.1f}-"
           f"{100 * RIGEL_GAIN[1]:.1f} % |\n"
           "|---|---|---|---|---|---|---|---|---|\n")
    for p in data.points:
        r = p.row
        fits = "-" if p.in_l2 is None else ("yes" if p.in_l2 else "no")
        pred = "-" if not math.isfinite(p.predicted) else "%+.1f %%" % (100 * p.predicted)
        pass_bw = pass_bandwidth(r)
        md += (f"| {p.n} | {p.d_bytes / MIB:,.1f} MiB | {fits} | {tflops(r.candidate_tflops)} | "
               f"{tflops(r.baseline_tflops)} | {gain_text(r.ratio)} [{gain_text(r.p10)}, {gain_text(r.p90)}] | "
               f"{pred} | {'-' if not math.isfinite(pass_bw) else '%.2f TB/s' % pass_bw} | "
               f"{rigel_side(p.gain)} |\n")
    md += ("\nThe extra passes' bandwidth: the bytes the decomposed path moves more than the fused one "
           f"({EXTRA_PASSES} x M x N x 2) over the time it takes more (2MNK over each path's median rate). Where it "
           "falls well below B, the decomposed path's elementwise kernel, not the bytes, sets the gain, and the "
           "gain overstates what fusion saves against a pass at the card's bandwidth.\n")
    relation, why = fused_relation(data.points)
    md += f"\n**Relation to RIGEL's statement: {relation}.** The H200: {why}"
    top = data.points[-1]
    if bw and math.isfinite(top.predicted):
        drown = 2 * top.row.candidate_tflops / (DROWNED_GAIN * bw[0])
        md += (f" The O(n^3) compute drowns the O(n^2) traffic: at the largest n's rate "
               f"({top.row.candidate_tflops:.1f} Tflop/s) the predicted gain 2R / (n B) falls below "
               f"{100 * DROWNED_GAIN:.0f} % beyond n = {drown:,.0f}.")
    md += model_comparison(data.points)
    src = data.source
    md += (f"\n\nSource: {findings.md_cell(src.name)} ({findings.md_cell(findings.short_commit(src))}); "
           "drawn in [docs/figures/fused_gain.png](docs/figures/fused_gain.png).\n")
    return md
