"""rigel's fused attention, from its committed results: the blocks that
README.md and docs/attention.md show between their generated markers.

Reads every results/h200/*_attention.csv (`rigel attention bench`) and
*_attention_verify.csv (`rigel attention verify`) with its sidecar. Only runs
of rigel's default kernel speak for rigel (a `--kernel` run that forced
another says so in its sidecar and is left out). For each (suite, case,
direction) the newest such run that measured that case speaks, all its
baselines from that one file: a run of some cases (`--cases`, or one stopped
before its end) speaks for the cases it holds and for no other. Each line
names its file. The verification block names the newest verify run. Nothing
is typed in by hand: a number that no committed CSV holds is written as "not
measured".
"""
import math
import os

import findings
from verdicts import meets_ratio

BENCH_SUFFIX = "_attention.csv"
VERIFY_SUFFIX = "_attention_verify.csv"
BENCH_COLUMNS = ("run_id", "suite", "case", "batch", "heads", "seq", "head_dim", "causal", "candidate",
                 "baseline", "kernel", "pairs", "candidate_tflops", "baseline_tflops", "ratio_median", "ratio_p10",
                 "ratio_p90")
VERIFY_COLUMNS = ("run_id", "case", "contender", "kernel", "pass", "err_max_scaled", "reason")
# Runs before the backward pass existed have no "direction" column: they timed
# and checked the forward pass only.
DIRECTION_BEFORE_IT_EXISTED = "forward"
SUITE_ORDER = ("targets", "gpt2", "sdpa")
# `rigel attention bench --kernel`'s default (src/cli/attention_commands.cpp): the kernel rigel's
# numbers and targets are about.
DEFAULT_KERNEL = "fa3"


def kind_of(name):
    if name.endswith(VERIFY_SUFFIX):
        return "verify"
    if name.endswith(BENCH_SUFFIX):
        return "bench"
    return None


def load(folder):
    """(bench files, verify files) in `folder`, each checked for the columns read here."""
    bench, verify = [], []
    if not os.path.isdir(folder):
        return bench, verify
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        kind = kind_of(entry.name)
        if not entry.is_file() or kind is None:
            continue
        rf = findings.read_result_file(entry.path)
        for col in BENCH_COLUMNS if kind == "bench" else VERIFY_COLUMNS:
            if not rf.table.has(col):
                raise findings.FindingsError(f"{findings.shown_path(entry.path)}: not an attention {kind} CSV "
                                             f"(no column '{col}')")
        (bench if kind == "bench" else verify).append(rf)
    return bench, verify


def number(text):
    """A cell's finite number, else NaN (findings.parse_number's rule)."""
    v = findings.parse_number(text)
    return math.nan if v is None else v


def default_kernel_run(f):
    """Whether a bench file timed rigel's default kernel: its sidecar names no
    kernel or the default; a run with another forced (`--kernel fa2`) measured
    that kernel, not rigel's default."""
    return f.side("kernel") in ("", DEFAULT_KERNEL)


def newest_rows(bench_files):
    """{(suite, case, direction, baseline): (row dict, file)}: for each (suite,
    case, direction), every baseline's row from the one newest run of rigel's
    default kernel that measured that case in that direction, so that a line
    never mixes runs. A newer run that lacks the case (a subset, or one
    stopped before reaching it) leaves the older run's rows in place."""
    newest = {}  # (suite, case, direction) -> (file, {baseline: row})
    for f in sorted((f for f in bench_files if default_kernel_run(f)), key=findings.run_age):
        t = f.table
        got = {}
        for i in range(len(t.rows)):
            row = {c: t.cell(i, c) for c in BENCH_COLUMNS + ("sm_clock_mhz", "power_w", "candidate_ms", "baseline_ms")}
            row["direction"] = direction(t, i)
            got.setdefault((row["suite"], row["case"], row["direction"]), {})[row["baseline"]] = row
        for key, by_baseline in got.items():
            newest[key] = (f, by_baseline)
    return {key + (baseline,): (row, f) for key, (f, by_baseline) in newest.items()
            for baseline, row in by_baseline.items()}


def direction(t, i):
    return t.cell(i, "direction") if t.has("direction") else DIRECTION_BEFORE_IT_EXISTED


def ratio_text(row, digits=2):
    r, lo, hi = number(row["ratio_median"]), number(row["ratio_p10"]), number(row["ratio_p90"])
    if math.isnan(r):
        return "-"
    if math.isnan(lo) or math.isnan(hi):
        return f"{r:.{digits}f}x"
    return f"{r:.{digits}f}x [{lo:.{digits}f}, {hi:.{digits}f}]"


def shape(row):
    causal = ", causal" if row["causal"] == "1" else ""
    return f"B {row['batch']} x H {row['heads']} x S {row['seq']} x D {row['head_dim']}{causal}"


def source(f):
    """The file a number came from, with its commit; a run of some cases or one
    stopped before its end says so."""
    notes = [f"commit {findings.md_cell(findings.short_commit(f))}"]
    if f.side("cases_filter"):
        notes.append(f"cases '{findings.md_cell(f.side('cases_filter'))}'")
    if f.side("complete") == "false":
        notes.append("incomplete run")
    return f"{findings.md_cell(f.name)} ({', '.join(notes)})"


def results_block(bench_files):
    if not bench_files:
        return "Not measured yet: no committed `results/h200/*_attention.csv` (`rigel attention bench`)."
    rows = newest_rows(bench_files)
    lines = ["| suite | case | direction | rigel | rigel Tflop/s | cuDNN Tflop/s | rigel / cuDNN [p10, p90] | "
             "rigel / fa2 | rigel / decomposed | atomic dQ / deterministic | source |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(s, c, d) for (s, c, d, _) in rows},
                  key=lambda k: (SUITE_ORDER.index(k[0]) if k[0] in SUITE_ORDER else len(SUITE_ORDER), k[0],
                                 int(rows_any(rows, k)["head_dim"]), int(rows_any(rows, k)["seq"]),
                                 rows_any(rows, k)["causal"], k[2] != "forward"))
    for suite, case, direction in keys:
        vs_cudnn = rows.get((suite, case, direction, "cudnn"))
        vs_fa2 = rows.get((suite, case, direction, "rigel_fa2"))
        vs_dec = rows.get((suite, case, direction, "rigel_decomposed"))
        vs_det = rows.get((suite, case, direction, "rigel_deterministic"))
        alone = rows.get((suite, case, direction, "none"))
        main = vs_cudnn or vs_fa2 or vs_dec or vs_det or alone
        row, f = main
        cudnn_tf = number(vs_cudnn[0]["baseline_tflops"]) if vs_cudnn else math.nan
        lines.append(f"| {findings.md_cell(suite)} | {findings.md_cell(case)} ({shape(row)}) | {direction} | "
                     f"{findings.md_cell(row['kernel'])} | {number(row['candidate_tflops']):.1f} | "
                     f"{'-' if math.isnan(cudnn_tf) else f'{cudnn_tf:.1f}'} | "
                     f"{ratio_text(vs_cudnn[0]) if vs_cudnn else '-'} | {ratio_text(vs_fa2[0]) if vs_fa2 else '-'} | "
                     f"{ratio_text(vs_dec[0]) if vs_dec else '-'} | {ratio_text(vs_det[0]) if vs_det else '-'} | "
                     f"{source(f)} |")
    return "\n".join(lines)


def rows_any(rows, key):
    for baseline in ("cudnn", "rigel_fa2", "rigel_decomposed", "rigel_deterministic", "none"):
        if (key + (baseline,)) in rows:
            return rows[key + (baseline,)][0]
    raise KeyError(key)


# The targets (the H200, same run, paired, bf16): (label, case, direction, baseline, threshold).
TARGETS = (
    ("forward, D 128, S 4096 >= 0.95x cuDNN", "s4096_d128", "forward", "cudnn", 0.95),
    ("forward, D 128, S 4096, causal >= 0.95x cuDNN", "s4096_d128_causal", "forward", "cudnn", 0.95),
    ("forward, D 64, S 4096 >= 0.90x cuDNN", "s4096_d64", "forward", "cudnn", 0.90),
    ("forward, D 64, S 4096, causal >= 0.90x cuDNN", "s4096_d64_causal", "forward", "cudnn", 0.90),
    ("backward, D 128, S 4096 >= 0.85x cuDNN", "s4096_d128", "backward", "cudnn", 0.85),
    ("wgmma rung (fa3) >= 1.8x the mma.sync rung (fa2), S 4096, D 128", "s4096_d128", "forward", "rigel_fa2", 1.8),
    ("fused (fa3) >= 5x the decomposed rung, S 4096, D 128", "s4096_d128", "forward", "rigel_decomposed", 5.0),
)


def targets(bench_files):
    """[(target, measured, met)]: met None where the newest run did not measure it."""
    rows = newest_rows(bench_files)
    out = []
    for label, case, direction, baseline, threshold in TARGETS:
        # The newest default-kernel run that measured the case (whichever suite ran it: targets repeats
        # sdpa's S = 4096), and its row against the target's baseline.
        runs = [v for (s, c, d, b), v in rows.items() if c == case and d == direction]
        if not runs:
            out.append((label, "not measured", None))
            continue
        newest = max(runs, key=lambda v: findings.run_age(v[1]))[1]
        found = [v for (s, c, d, b), v in rows.items()
                 if c == case and d == direction and b == baseline and v[1] is newest]
        if not found:
            out.append((label, f"not measured against {findings.md_cell(baseline)} in the newest run of the "
                               f"case, {source(newest)}", None))
            continue
        row, f = found[0]
        out.append((label, f"{ratio_text(row, 3)} ({source(f)})", meets_ratio(number(row["ratio_median"]), threshold)))
    return out


def targets_block(bench_files):
    lines = ["| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {label} | {measured} | {'open' if met is None else ('met' if met else 'not met')} |"
              for label, measured, met in targets(bench_files)]
    return "\n".join(lines)


def verify_line(f):
    """One verify run: its checks, the command that ran them (from its sidecar and rows), per contender."""
    t = f.table
    total = len(t.rows)
    passed = [i for i in range(total) if t.cell(i, "pass") == "1"]

    def count(contender, which):
        sel = [i for i in range(total) if t.cell(i, "contender") == contender and direction(t, i) == which]
        ok = [i for i in sel if t.cell(i, "pass") == "1"]
        worst = max((number(t.cell(i, "err_max_scaled")) for i in ok), default=math.nan)
        return f"{len(ok)}/{len(sel)}" + ("" if math.isnan(worst) else f" (largest error {worst:.2f} of the allowance)")

    kernel = f.side("kernel")
    cudnn = any(t.cell(i, "contender") == "cudnn" for i in range(total))
    command = ("rigel attention verify" + ("" if kernel in ("", "all") else f" --kernel {kernel}") +
               (" --baselines" if cudnn else ""))
    parts = [f"rigel forward {count('rigel', 'forward')}", f"rigel backward {count('rigel', 'backward')}"]
    if cudnn:
        parts += [f"cuDNN forward {count('cudnn', 'forward')}", f"cuDNN backward {count('cudnn', 'backward')}"]
    text = (f"**{len(passed)}/{total} checks passed against float64** (`{command}`, {source(f)}): "
            f"{', '.join(parts)}.")
    failing = [i for i in range(total) if t.cell(i, "pass") != "1"]
    if failing:
        text += " Not passing: " + "; ".join(
            f"{findings.md_cell(t.cell(i, 'case'))} {findings.md_cell(t.cell(i, 'contender'))} "
            f"{direction(t, i)}: {findings.md_cell(t.cell(i, 'reason'))}" for i in failing[:10])
    return text


def verify_block(verify_files):
    """The newest verify run; where it checked one kernel alone, the newest run over every kernel beside it."""
    if not verify_files:
        return "Not verified yet: no committed `results/h200/*_attention_verify.csv` (`rigel attention verify`)."
    newest = max(verify_files, key=findings.run_age)
    text = verify_line(newest)
    every = [f for f in verify_files if f.side("kernel") in ("", "all")]
    if newest.side("kernel") not in ("", "all") and every:
        text += "\n\nThe newest run over every kernel: " + verify_line(max(every, key=findings.run_age))
    return text


def blocks(folder):
    """{marker name: generated Markdown}."""
    bench, verify = load(folder)
    return {"attention-verify": verify_block(verify),
            "attention-targets": targets_block(bench),
            "attention-results": results_block(bench)}


# The decomposed rung's traffic per score (src/cuda/attention/decomposed.cu):
# the fp32 scores written by the first GEMM and read by the softmax, P written
# in bf16 by the softmax and read by the second GEMM; the whole S x S square
# per head, causal or not (the mask is applied in the softmax).
DECOMPOSED_BYTES_PER_SCORE = 4 + 4 + 2 + 2


# The sdpa suite's case names (src/attention/suites.cpp): D 64 and 128, S 512 ... 16384, causal and not.
SDPA_CASES = tuple(f"s{s}_d{d}{'_causal' if causal else ''}" for d in (64, 128)
                   for s in (512, 1024, 2048, 4096, 8192, 16384) for causal in (False, True))


def finding_section(bench_files, bandwidth, l2_bytes):
    """FINDINGS.md's section on RIGEL's attention finding: the fused forward
    (fa3) against the decomposed rung, case by case from the newest runs that
    paired them, beside the S x S round trip's bytes over the bandwidth probe's
    device-to-device copy rate. `bandwidth` is (TB/s, path, probes file) or
    None; `l2_bytes` the L2's size or None. Empty without such a run."""
    rows = newest_rows(bench_files)
    # One row per case: the newest run that paired it, whichever suite ran it (targets repeats sdpa's S = 4096).
    newest = {}
    for k, v in rows.items():
        if k[3] == "rigel_decomposed" and k[2] == "forward":
            if k[1] not in newest or findings.run_age(v[1]) > findings.run_age(newest[k[1]][1][1]):
                newest[k[1]] = (k, v)
    pairs = sorted(newest.values(),
                   key=lambda kv: (int(kv[1][0]["head_dim"]), int(kv[1][0]["seq"]), kv[1][0]["causal"], kv[0][1]))
    if not pairs:
        return ""
    lines = ["## Fused attention against the decomposed path (RIGEL's attention finding)", "",
             "The RIGEL study found fused attention 3.6-5x *slower* than the decomposed path on its hardware, "
             "which has no matrix unit and a cheap S x S round trip. On the H200 rigel's fused forward pass (fa3) "
             "runs against its decomposed rung (per head: rigel's GEMM for Q K^T into fp32 scores, a row "
             "softmax writing P in bf16, rigel's GEMM for P V), the two timed in alternating pairs in one run. "
             f"The decomposed pass moves {DECOMPOSED_BYTES_PER_SCORE} bytes per score through memory (fp32 scores "
             "written and read, P written and read, the whole square even when causal); the last columns set "
             "that round trip's time at the probe's bandwidth beside the fused pass's whole time.", ""]
    if bandwidth is None:
        lines.append("No bandwidth probe is committed, so the traffic's time is not given.")
        lines.append("")
    else:
        lines.append(f"Bandwidth: {bandwidth[0]:.2f} TB/s, the bandwidth probe's {findings.md_cell(bandwidth[1])} "
                     f"({findings.md_cell(bandwidth[2].name)}).")
        lines.append("")
    lines += ["| case | fused (fa3) ms | decomposed ms | speed-up: decomposed time / fused time, median [p10, p90] | "
              "S x S bytes per head | "
              "a head's scratch in the L2 | round trip at the probe's bandwidth, ms | that / fused time | source |",
              "|---|---|---|---|---|---|---|---|---|"]
    ratios, in_l2_cases, dram_cases, dram_over_fused = [], [], [], []
    for (suite, case, _, _), (row, f) in pairs:
        b, h, s = int(row["batch"]), int(row["heads"]), int(row["seq"])
        per_head = DECOMPOSED_BYTES_PER_SCORE * s * s
        traffic_ms = (b * h * per_head / (bandwidth[0] * 1e12) * 1e3) if bandwidth else math.nan
        fused_ms, dec_ms = number(row.get("candidate_ms", "")), number(row.get("baseline_ms", ""))
        scratch = 6 * s * s  # one head's fp32 scores and bf16 P, the buffer reused head after head
        in_l2 = None if not l2_bytes else scratch <= l2_bytes
        ratios.append(number(row["ratio_median"]))
        if in_l2:
            in_l2_cases.append(case)
        else:
            dram_cases.append(case + (f" ({traffic_ms / fused_ms:.1f}x)" if not math.isnan(traffic_ms) else ""))
            dram_over_fused.append(traffic_ms / fused_ms)
        lines.append(f"| {findings.md_cell(case)} ({shape(row)}) | {fused_ms:.3f} | {dec_ms:.3f} | "
                     f"{ratio_text(row)} | {per_head / 1e6:.1f} MB | "
                     f"{'unknown' if in_l2 is None else ('yes' if in_l2 else 'no')} ({scratch / 2**20:.0f} MiB) | "
                     f"{'-' if math.isnan(traffic_ms) else f'{traffic_ms:.3f}'} | "
                     f"{'-' if math.isnan(traffic_ms) else f'{traffic_ms / fused_ms:.1f}x'} | {source(f)} |")
    l2_text = f"the {l2_bytes / 2**20:.0f} MiB L2" if l2_bytes else "the L2"
    finite = [r for r in ratios if not math.isnan(r)]
    summary = (f"The fused pass is {min(finite):.1f}x to {max(finite):.1f}x faster than the decomposed one over the "
               f"{len(finite)} measured cases: the opposite direction to the study's, as a matrix unit predicts."
               if finite else "No ratio was measured.")
    lines += ["", summary]
    if dram_cases:
        verdict = ("the round trip alone takes longer than the whole fused pass"
                   if all(x > 1 for x in dram_over_fused) else "the round trip's time, over the fused pass's")
        lines.append(f"Where a head's scratch exceeds {l2_text} ({', '.join(dram_cases)}: the round trip over "
                     f"the fused time), {verdict}.")
    if in_l2_cases:
        lines.append(f"Where it fits ({', '.join(in_l2_cases)}), the square can stay in the L2, so the bandwidth "
                     "model overstates the traffic's cost there; what the decomposed pass spends instead (its 3 B H "
                     "launches, its small per-head GEMMs) is not measured apart.")
    missing = [c for c in SDPA_CASES if c not in newest]
    if missing:
        lines.append(f"Not measured yet, of the issue's sweep (`rigel attention bench --suite sdpa` pairs every case "
                     f"with the decomposed rung): {', '.join(missing)}.")
    return "\n".join(lines) + "\n"
