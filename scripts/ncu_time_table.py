#!/usr/bin/env python3
"""The kernels of `scripts/h200_visit.sh ncu_time` files as one markdown table.

Each ncu_time file holds Nsight Compute's CSV (--csv, one row per launch and
metric) of the first launches of `rigel gemm run`: rigel's kernel and every
candidate cuBLASLt's tuning timed. This prints one row per file and kernel,
each metric as the range over that kernel's launches (min-max), in the units
docs/gemm.md's tables use:

    python3 scripts/ncu_time_table.py results/h200/experiments/2026-12-04_db806f7_ncu_time_*.csv

Columns appear for the metrics the files hold: duration (us), SM and L2 clocks
(MHz), the busiest SM's cycles (k), the tensor pipe's share (%), the sectors
the SMs read from L2 (M), how busy L2 was and how often it hit (%), all of
L2's traffic (GB), DRAM bytes read (MB) and how busy DRAM was (%),
instructions (M). The ncu_sustained step's files are laid out the same way.
A file with no launch in it (ncu found no kernel, or the visit ran out of
time) is named on stderr and left out; no file with a launch at all exits 2.
"""
import argparse
import csv
import os
import sys

# (metric, column title, scale to the column's unit, decimals)
COLUMNS = [
    ("gpu__time_duration.sum", "us", 1e-3, 1),
    ("sm__cycles_elapsed.avg.per_second", "MHz", 1e-6, 0),
    ("lts__cycles_elapsed.avg.per_second", "L2 MHz", 1e-6, 0),
    ("sm__cycles_elapsed.max", "cycles (k)", 1e-3, 1),
    ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "tensor pipe %", 1.0, 1),
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2 sectors (M)", 1e-6, 1),
    ("lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "L2 busy %", 1.0, 1),
    ("lts__t_sector_hit_rate.pct", "L2 hit %", 1.0, 1),
    ("lts__t_bytes.sum", "L2 bytes (GB)", 1e-9, 1),
    ("dram__bytes_read.sum", "DRAM read (MB)", 1e-6, 0),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM busy %", 1.0, 1),
    ("sm__inst_executed.sum", "instructions (M)", 1e-6, 1),
]


def number(text):
    """A metric value as ncu prints it ("183,488", "90.34"); None where it is not a number."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def short_name(name):
    """rigel's kernels by their template's first arguments (the full signature runs to hundreds of
    characters); a vendor kernel by its own name."""
    if "pingpong_kernel" in name or "warp_specialized_kernel" in name:
        head = name.split("(")[0]
        inner = head[head.find("<") + 1:].split(">")[0]  # "rigel::cuda::sm90::PingPong<4, 6, ..."
        template, _, args = inner.partition("<")
        return f"rigel {template.split('::')[-1]}<{args}>"
    return name.split("(")[0].strip()


def launches(path):
    """{launch id: (kernel name, {metric: value})} of one ncu CSV, in launch order."""
    with open(path, newline="") as f:
        rows = [line for line in f if line.startswith('"')]
    if not rows:
        return {}
    table = list(csv.reader(rows))
    head = table[0]
    try:
        at = {key: head.index(key) for key in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
    except ValueError:
        return {}
    out = {}
    for row in table[1:]:
        if len(row) < len(head):
            continue
        kernel, metrics = out.setdefault(row[at["ID"]], (row[at["Kernel Name"]], {}))
        value = number(row[at["Metric Value"]])
        if value is not None:
            metrics[row[at["Metric Name"]]] = value
    return out


def cell(values, scale, decimals):
    lo, hi = min(values) * scale, max(values) * scale
    text = f"{lo:.{decimals}f}"
    return text if f"{hi:.{decimals}f}" == text else f"{text}-{hi:.{decimals}f}"


def table(paths):
    """The markdown table of every kernel of `paths`, or None where no file holds a launch."""
    groups = {}  # (file, kernel) -> [metrics of each launch]
    for path in paths:
        found = launches(path)
        if not found:
            print(f"ncu_time_table: no launch in {path}", file=sys.stderr)
            continue
        for kernel, metrics in found.values():
            groups.setdefault((os.path.basename(path), short_name(kernel)), []).append(metrics)
    if not groups:
        return None
    present = [c for c in COLUMNS if any(c[0] in m for ms in groups.values() for m in ms)]
    lines = ["| file | kernel | launches | " + " | ".join(c[1] for c in present) + " |",
             "|---|---|---|" + "---|" * len(present)]
    for (name, kernel), ms in groups.items():
        cells = []
        for metric, _, scale, decimals in present:
            values = [m[metric] for m in ms if metric in m]
            cells.append(cell(values, scale, decimals) if values else "-")
        lines.append(f"| {name} | {kernel} | {len(ms)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="ncu_time CSV files (scripts/h200_visit.sh ncu_time)")
    args = parser.parse_args(argv)
    text = table(args.files)
    if text is None:
        print("ncu_time_table: none of the files holds a launch", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
