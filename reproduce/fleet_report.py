"""Every GPU of a node, side by side: the probes that `rigel launch --nproc N
-- rigel probe all --out DIR` ran on each GPU of one launch (one probes file
per rank, the sidecars naming the launch, the GPU index and its PCI bus id),
set into one table per launch with a GPU column (rows(), written by
reproduce.py as docs/fleet/<launch>.csv) and FINDINGS.md's section "Every GPU
of a node": each measured number's spread over the GPUs, and any GPU more than
DEVIATION off the GPUs' median named.

Only rows with a typed `value` and no `swept` input are compared (ceilings,
clocks, bandwidths, counts); words are never read. A launch with a single GPU
gives no section."""
import statistics

import findings

DEVIATION = 0.03  # a GPU this far from the median of all GPUs is named


def num(v):
    return f"{v:.6g}"
COLUMNS = ["launch_id", "gpu_index", "gpu_pci_bus_id", "gpu_name", "probe", "path", "dtype", "quantity", "unit",
           "value", "source"]


def launches(probes):
    """{launch id: [probes files of that launch]}, only launches with two GPUs or more."""
    by_launch = {}
    for f in probes:
        lid = f.env("launch_id")
        if lid:
            by_launch.setdefault(lid, []).append(f)
    return {k: v for k, v in sorted(by_launch.items()) if len({f.env("gpu_index") for f in v}) >= 2}


def rows(files):
    """The launch's numbers, one row per (GPU, measured quantity)."""
    out = []
    for f in sorted(files, key=lambda f: (int(f.env("gpu_index") or 0), f.name)):
        t = f.table
        for i in range(len(t.rows)):
            value = findings.parse_number(t.cell(i, "value"))
            if value is None or findings.parse_number(t.cell(i, "swept")) is not None:
                continue
            out.append({"launch_id": f.env("launch_id"), "gpu_index": f.env("gpu_index"),
                        "gpu_pci_bus_id": f.env("gpu_pci_bus_id"), "gpu_name": f.env("gpu_name"),
                        "probe": t.cell(i, "probe"), "path": t.cell(i, "path"), "dtype": t.cell(i, "dtype"),
                        "quantity": t.cell(i, "quantity"), "unit": t.cell(i, "unit"), "value": value,
                        "source": f.name})
    return out


def csv_text(rs):
    def cell(v):
        s = num(v) if isinstance(v, float) else str(v)
        return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\n') else s
    return "\n".join([",".join(COLUMNS)] + [",".join(cell(r[c]) for c in COLUMNS) for r in rs]) + "\n"


def section(probes):
    groups = launches(probes)
    if not groups:
        return ""
    out = ["## Every GPU of a node", "",
           "The probes run on every GPU of one launch (`rigel launch --nproc N -- rigel probe all`), each measured "
           f"number set beside the same number on the other GPUs; a GPU more than {DEVIATION:.0%} off the GPUs' "
           "median is named. The whole table, one row per GPU and number: docs/fleet/<launch>.csv.", ""]
    for lid, files in groups.items():
        rs = rows(files)
        gpus = sorted({r["gpu_index"] for r in rs}, key=int)
        out += [f"Launch {findings.md_cell(lid)}: GPUs {', '.join(gpus)} "
                f"({', '.join(sorted({findings.md_cell(f.name) for f in files}))}).", "",
                "| probe | quantity | path | unit | min | median | max | spread | off the median |",
                "|---|---|---|---|---|---|---|---|---|"]
        keyed = {}
        for r in rs:
            keyed.setdefault((r["probe"], r["quantity"], r["path"], r["dtype"], r["unit"]), {})[r["gpu_index"]] = \
                r["value"]
        for (probe, quantity, path, _, unit), by_gpu in keyed.items():
            if len(by_gpu) < 2:
                continue
            vals = list(by_gpu.values())
            med = statistics.median(vals)
            spread = (max(vals) - min(vals)) / abs(med) if med else float("nan")
            off = [f"GPU {g} ({(v - med) / abs(med):+.1%})" for g, v in sorted(by_gpu.items(), key=lambda x: int(x[0]))
                   if med and abs(v - med) / abs(med) > DEVIATION]
            out.append(f"| {findings.md_cell(probe)} | {findings.md_cell(quantity)} | {findings.md_cell(path)} | "
                       f"{findings.md_cell(unit)} | {num(min(vals))} | {num(med)} | "
                       f"{num(max(vals))} | {spread:.1%} | {', '.join(off) or 'none'} |")
        out.append("")
    return "\n".join(out)
