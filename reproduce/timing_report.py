"""FINDINGS.md and README.md: paired against blocked timing under the H200's
power cap, from `rigel gemm bench` runs of the same cases in both timings.

Paired timing (harness/paired.hpp) alternates one sample of each side, so a
drift of the clock favours neither; blocked timing (`--blocks SECONDS`) runs
each side alone for a while, in turns, so that each settles to the clock its
own power draw allows. A bench file with block_s > 0 in its sidecar is set
beside the paired file of the same commit, suite, kernel and case filter, row
by row (case and baseline)."""
import math
from dataclasses import dataclass

import findings
import gemm_report


@dataclass
class TimingPair:
    paired: object   # gemm_report.BenchRow
    blocked: object  # the same case and baseline, timed in blocks
    block_s: float

    @property
    def shift(self):
        """blocked ratio / paired ratio: below 1, the blocks credit the baseline more."""
        return self.blocked.ratio / self.paired.ratio


def run_key(f):
    """What a blocked run and its paired twins share (`rigel gemm run` writes suite "run" for any case)."""
    return (findings.short_commit(f), f.side("suite"), f.side("kernel") or "auto", f.side("cases_filter"))


def timing_pairs(bench_files):
    """Every blocked row with its paired twin: the newest paired row of the same commit, suite, kernel and
    cases with its case and baseline; in the blocked files' order (by run age), then the CSV's."""
    paired = {}
    for f in sorted(bench_files, key=findings.run_age):
        # Only back-to-back runs are twins: a paused one (`--pause`) has none.
        if gemm_report.back_to_back(f) and f.side("complete") != "false":
            for r in gemm_report.bench_rows(f):
                if r.measured:
                    paired[run_key(f) + (r.suite, r.case, r.baseline)] = r  # the newest of that key
    out = []
    for f in sorted(bench_files, key=findings.run_age):
        seconds = gemm_report.block_seconds(f)
        if seconds <= 0:
            continue
        for r in gemm_report.bench_rows(f):
            p = paired.get(run_key(f) + (r.suite, r.case, r.baseline))
            if p is not None and r.measured:
                out.append(TimingPair(paired=p, blocked=r, block_s=seconds))
    return out


def pct(x):
    return "%+.1f %%" % (100 * (x - 1))


def side_text(mhz, watts):
    """"1545 MHz, 688 W" of one side's blocks, "-" where the run did not record it."""
    parts = []
    if math.isfinite(mhz):
        parts.append(f"{mhz:.0f} MHz")
    if math.isfinite(watts):
        parts.append(f"{watts:.0f} W")
    return ", ".join(parts) or "-"


def table(pairs):
    md = ("| suite | case | m x n x k | rigel's kernel | baseline | paired: ratio [p10, p90] | "
          "blocked: ratio [p10, p90] | blocked / paired | rigel Tflop/s, paired -> blocked | "
          "baseline Tflop/s, paired -> blocked | in its blocks: rigel | in its blocks: baseline |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for t in pairs:
        p, b = t.paired, t.blocked
        mhz_a, mhz_b, w_a, w_b = b.sides
        md += (f"| {findings.md_cell(p.suite)} | {findings.md_cell(p.case)} | {p.m} x {p.n} x {p.k} | "
               f"{findings.md_cell(b.kernel)} | {findings.md_cell(p.baseline)} | {gemm_report.ratio_spread(p, 3)} | "
               f"{gemm_report.ratio_spread(b, 3)} | {pct(t.shift)} | "
               f"{gemm_report.tflops(p.candidate_tflops)} -> {gemm_report.tflops(b.candidate_tflops)} | "
               f"{gemm_report.tflops(p.baseline_tflops)} -> {gemm_report.tflops(b.baseline_tflops)} | "
               f"{side_text(mhz_a, w_a)} | {side_text(mhz_b, w_b)} |\n")
    return md


def tile_of(t):
    """The kernel's tile shape, the first word of its text ("128x128 pingpong ..." -> "128x128")."""
    return (t.blocked.kernel.split() or ["?"])[0]


def clock_ratio(t):
    """rigel's clock over the baseline's in their blocks, NaN where the run did not record them."""
    mhz_a, mhz_b = t.blocked.sides[0], t.blocked.sides[1]
    return mhz_a / mhz_b if math.isfinite(mhz_a) and math.isfinite(mhz_b) and mhz_b > 0 else math.nan


def span_text(values):
    lo, hi = min(values), max(values)
    return pct(lo) if lo == hi else f"{pct(lo)} to {pct(hi)}"


def kernel_words(pairs):
    """One clause per tile shape of rigel's kernels: how far its blocked ratios against the vendor
    libraries moved from the paired ones, and its clock against theirs in the blocks."""
    by_tile = {}
    for t in pairs:
        if t.paired.baseline in gemm_report.VENDORS:
            by_tile.setdefault(tile_of(t), []).append(t)
    parts = []
    for tile, ts in sorted(by_tile.items()):
        clause = (f"rigel's {tile} tiles {span_text([t.shift for t in ts])} ({len(ts)} comparison"
                  f"{'' if len(ts) == 1 else 's'})")
        clocks = [clock_ratio(t) for t in ts if math.isfinite(clock_ratio(t))]
        if clocks:
            clause += f", their clock in the blocks {span_text(clocks)} against the library's"
        parts.append(clause)
    return "; ".join(parts)


def clock_agreement(pairs):
    """A sentence: in how many vendor comparisons the ratio moved the way the two clocks differ."""
    ts = [t for t in pairs if t.paired.baseline in gemm_report.VENDORS and math.isfinite(clock_ratio(t))]
    if not ts:
        return ""
    agree = sum((t.shift < 1) == (clock_ratio(t) < 1) for t in ts)
    powers = [w for t in ts for w in (t.blocked.sides[2], t.blocked.sides[3]) if math.isfinite(w)]
    power = f" Each side's mean power in its blocks: {min(powers):.0f}-{max(powers):.0f} W." if powers else ""
    return (f" In {agree} of {len(ts)} comparisons against a vendor library the blocked ratio moved from the paired "
            f"one the way the two sides' clocks in their blocks differ (lower where rigel's clock was lower).{power}")


def sources(pairs):
    names = []
    for t in pairs:
        for f in (t.paired.file, t.blocked.file):
            if f.name not in names:
                names.append(f.name)
    return ", ".join(findings.md_cell(n) for n in names)


INTRO = ("\n## Paired against blocked timing under the power cap\n\n"
         "The statement it tests, rigel's own (harness/paired.hpp, after issue 10's method): under the H200's 700 W "
         "cap the SM clock wanders with temperature, so a head-to-head ratio is taken from alternating samples "
         "(A B, B A, ...), where a drift favours neither side. What that leaves out: the two sides then share one "
         "clock, set by their mean power draw, so a kernel that draws more power than its rival slows both in the "
         "pairs, and one that draws less speeds both; the ratio measures cycles at a common clock. In blocked "
         "timing (`rigel gemm bench --blocks SECONDS`) each side runs alone for that many seconds of samples, the "
         "sides taking turns (A B, B A, ...), each block's first quarter left out, the ratio taken per pair of "
         "blocks: each side settles to the clock its own draw allows, as a run of one kernel after another "
         "does. The same cases, kernels and baselines in both timings, in the same call:\n\n")


def render_finding(fin):
    pairs = timing_pairs(fin.gemm_bench)
    if not pairs:
        return INTRO + ("Not measured yet: no committed bench CSV timed in blocks (`--blocks`) beside a paired one "
                        "of the same commit, suite, kernel and cases.\n")
    lower = [t for t in pairs if t.shift < 1]
    blocks = sorted({t.block_s for t in pairs})
    md = INTRO + table(pairs)
    md += (f"\nBlocks of {', '.join(f'{s:g}' for s in blocks)} s. Blocked against paired: {kernel_words(pairs)}. "
           f"In {len(lower)} of {len(pairs)} comparisons the blocked ratio is the lower one.{clock_agreement(pairs)}")
    md += ("\n\n**Relation to the statement: fills it in.** Pairing removes the drift's bias, and with it each side's "
           "own clock. At the power cap a kernel's clock is set by the energy it spends a cycle, so two kernels of "
           "equal cycles run at different speeds alone; the paired ratio credits neither for it and the blocked "
           "one does. The targets of issues 10 and 11 are read from paired ratios, as the issues define them; this "
           "table says how those ratios relate to each kernel run alone.")
    md += f"\n\nSources: {sources(pairs)}.\n"
    return md


def readme_block(fin):
    """The README's short form: the comparison table and where the finding is."""
    pairs = timing_pairs(fin.gemm_bench)
    if not pairs:
        return ("No committed bench run in blocked timing yet (`rigel gemm bench --blocks SECONDS`); "
                "[FINDINGS.md](FINDINGS.md#paired-against-blocked-timing-under-the-power-cap) says what it measures.")
    newest = pairs[-1].blocked.file
    return (f"Paired against blocked timing (each side alone for {pairs[-1].block_s:g} s at a time, in turns), "
            f"the same cases in the same call; newest from {gemm_report.provenance(newest)}. "
            "[FINDINGS.md](FINDINGS.md#paired-against-blocked-timing-under-the-power-cap) says why they differ.\n\n"
            + table(pairs))
