#!/usr/bin/env python3
"""Where a kernel's warps wait, instruction by instruction: the SASS lines of
an Nsight Compute source page with the most warp-stall samples.

    ncu --csv --page source --print-source sass ... > page.csv
    scripts/ncu_sass_hotspots.py page.csv [--top N]

Nsight Compute's source page lists every SASS instruction of the profiled
kernel with its sampled warp states (the SourceCounters section, which
`--set full` collects). A kernel of tens of thousands of instructions (the
GEMM library's ping-pong kernel with its epilogue variants) makes that page
too long to read or to commit; this keeps the N lines with the most samples,
each with its address, its instruction, its share of all samples and its
largest stall reasons, and sums the samples of the lines between two
addresses the caller names as regions (--region NAME:FIRST-LAST, hex). Above
the lines, each stall reason's samples summed over every instruction of the
page (the whole kernel's breakdown, which the listed lines alone leave out).

The page's columns are found by name: the instruction's address ("Address"),
its text ("Source"), all samples ("Warp Stall Sampling (All Samples)") and
one column per stall reason (names starting "stall_" or ending in a reason in
parentheses, as the page prints them). Lines before the header (ncu's ==PROF==
messages) are skipped. A page whose header is not found is reported with its
first lines, exit 1.
"""
import argparse
import csv
import io
import sys

ALL_SAMPLES = "Warp Stall Sampling (All Samples)"


def header_index(lines):
    """The index of the CSV header line: the first that names the address and
    the source columns."""
    for i, line in enumerate(lines):
        if line.startswith('"') and '"Address"' in line and '"Source"' in line:
            return i
    return None


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_page(text):
    """(rows as dicts, the all-samples column's name, the reason columns) of a
    source page, or None when its header is not there."""
    lines = text.splitlines()
    at = header_index(lines)
    if at is None:
        return None
    reader = csv.DictReader(io.StringIO("\n".join(lines[at:])))
    names = reader.fieldnames or []
    total = next((n for n in names if n.startswith(ALL_SAMPLES)), None)
    if total is None:
        return None
    reasons = [n for n in names if n != total and "Sampling" not in n and
               (n.lower().startswith("stall") or "stall_" in n.lower())]
    rows = [r for r in reader if r.get("Address")]
    return rows, total, reasons


def parse_region(text):
    name, _, span = text.partition(":")
    first, _, last = span.partition("-")
    if not name or not first or not last:
        raise argparse.ArgumentTypeError(f"--region '{text}' is not NAME:FIRST-LAST (hex addresses)")
    try:
        return name, int(first, 16), int(last, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--region '{text}': FIRST and LAST must be hex addresses") from None


def report(rows, total_col, reasons, top, regions):
    samples = [number(r[total_col]) for r in rows]
    grand = sum(samples) or 1.0
    out = [f"{len(rows)} instructions, {int(sum(samples))} warp-state samples", ""]
    totals = sorted(((sum(number(r[c]) for r in rows), c) for c in reasons), reverse=True)
    out.append("all instructions, by reason: " +
               ", ".join(f"{c} {int(v)} ({v / grand:.1%})" for v, c in totals if v > 0))
    out.append("")
    for name, first, last in regions:
        inside = sum(s for r, s in zip(rows, samples) if first <= int(r["Address"], 16) <= last)
        out.append(f"region {name} [{first:#x}, {last:#x}]: {inside / grand:.1%} of the samples")
    if regions:
        out.append("")
    out.append(f"{'address':>10}  {'share':>6}  largest reasons  |  instruction")
    order = sorted(range(len(rows)), key=lambda i: -samples[i])[:top]
    for i in order:
        r = rows[i]
        by_reason = sorted(((number(r[c]), c) for c in reasons), reverse=True)
        named = ", ".join(f"{c} {int(v)}" for v, c in by_reason[:3] if v > 0)
        out.append(f"{r['Address']:>10}  {samples[i] / grand:6.2%}  {named}  |  {r.get('Source', '').strip()}")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", help="the CSV of `ncu --csv --page source --print-source sass`")
    ap.add_argument("--top", type=int, default=60, help="how many instructions to list (default 60)")
    ap.add_argument("--region", type=parse_region, action="append", default=[],
                    help="NAME:FIRST-LAST (hex): the share of the samples between two addresses")
    a = ap.parse_args(argv)
    try:
        with open(a.page, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"ncu_sass_hotspots: cannot read {a.page}: {e.strerror}", file=sys.stderr)
        return 1
    page = read_page(text)
    if page is None:
        head = "\n".join(text.splitlines()[:8])
        print(f"ncu_sass_hotspots: {a.page} has no source-page header with '{ALL_SAMPLES}'; it begins:\n{head}",
              file=sys.stderr)
        return 1
    print(report(*page, a.top, a.region))
    return 0


if __name__ == "__main__":
    sys.exit(main())
