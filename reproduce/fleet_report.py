"""Every GPU of a node, side by side: what `rigel launch --nproc N --independent
-- rigel fleet --out DIR` ran on each GPU of one launch (the probes, `rigel probe all`,
and the Hopper sweep, `rigel ladder --suite bench` and `bench_llm`; one file
pair per rank and run, each sidecar naming the launch, the GPU index and its PCI
bus id), set into one table per launch with a GPU column (rows(), written by
reproduce.py as docs/fleet/<launch>.csv) and FINDINGS.md's section "Every GPU
of a node":
- each measured number of the probes, its spread over the GPUs, and any GPU
  more than DEVIATION off the GPUs' median named (rows with a typed `value` and
  no `swept` input: ceilings, clocks, bandwidths, counts);
- the sweep: each rung's geometric-mean rate over the shapes every GPU ran, in
  the same way, and each GPU's median SM clock and board power over its sweep;
- the exact answers (fragment layouts, conversions, the accumulator's sweeps
  and model, alignment rules, overflow): rows whose answer is a word or a swept
  number, which should be the same on every GPU of one model; any that is not
  is listed with each GPU's answer.
A launch with a single GPU gives no section."""
import math
import statistics

import findings

DEVIATION = 0.03  # a GPU this far from the median of all GPUs is named


def num(v):
    return f"{v:.6g}"
COLUMNS = ["launch_id", "gpu_index", "gpu_pci_bus_id", "gpu_name", "probe", "path", "dtype", "quantity", "unit",
           "value", "source"]


def is_ladder(f):
    """A ladder file (the sweep's), told from a probes file by its `rung` column."""
    return "rung" in f.table.header


def launches(files):
    """{launch id: [probes and ladder files of that launch]}, only launches with two GPUs or more."""
    by_launch = {}
    for f in files:
        lid = f.env("launch_id")
        if lid:
            by_launch.setdefault(lid, []).append(f)
    return {k: v for k, v in sorted(by_launch.items()) if len({f.env("gpu_index") for f in v}) >= 2}


def row(f, probe, path, dtype, quantity, unit, value):
    return {"launch_id": f.env("launch_id"), "gpu_index": f.env("gpu_index"),
            "gpu_pci_bus_id": f.env("gpu_pci_bus_id"), "gpu_name": f.env("gpu_name"), "probe": probe,
            "path": path, "dtype": dtype, "quantity": quantity, "unit": unit, "value": value, "source": f.name}


# The sweep's rate units, in Tflop/s.
TFLOPS_PER = {"Tflop/s": 1.0, "Gflop/s": 1e-3}


def ladder_rows(f):
    """A sweep's numbers: each verified row's rate (Tflop/s), SM clock and power, under probe "ladder" and
    path = the rung; the quantity names the shape."""
    t = f.table
    out = []
    for i in range(len(t.rows)):
        rate = findings.parse_number(t.cell(i, "rate"))
        per = TFLOPS_PER.get(t.cell(i, "rate_unit"))
        if t.cell(i, "status") != "PASS" or rate is None or per is None:
            continue
        shape = f"{t.cell(i, 'm')}x{t.cell(i, 'n')}x{t.cell(i, 'k')}"
        rung, dtype = t.cell(i, "rung"), t.cell(i, "dtype")
        out.append(row(f, "ladder", rung, dtype, f"rate at {shape}", "Tflop/s", rate * per))
        for col, what, unit in (("sm_clock_mhz", "SM clock", "MHz"), ("power_w", "power", "W")):
            v = findings.parse_number(t.cell(i, col))
            if v is not None:
                out.append(row(f, "ladder", rung, dtype, f"{what} at {shape}", unit, v))
    return out


def measured(t, i):
    """True for a probes row that measured a number (a ceiling, a clock, cycles at a swept N): a typed value,
    and a unit wherever the row belongs to a sweep; the accumulation probe's swept rows, unitless, are
    exact answers instead."""
    return findings.parse_number(t.cell(i, "value")) is not None and (
        findings.parse_number(t.cell(i, "swept")) is None or t.cell(i, "unit") != "")


def rows(files):
    """The launch's numbers, one row per (GPU, measured quantity): the probes' and the sweep's. A swept
    row's quantity names its swept input."""
    out = []
    for f in sorted(files, key=lambda f: (int(f.env("gpu_index") or 0), f.name)):
        if is_ladder(f):
            out += ladder_rows(f)
            continue
        t = f.table
        for i in range(len(t.rows)):
            if not measured(t, i):
                continue
            swept = t.cell(i, "swept")
            quantity = t.cell(i, "quantity") + (f" [swept {swept}]" if swept else "")
            out.append(row(f, t.cell(i, "probe"), t.cell(i, "path"), t.cell(i, "dtype"), quantity,
                           t.cell(i, "unit"), findings.parse_number(t.cell(i, "value"))))
    return out


def answers(files):
    """The exact answers of the probes files, {(probe, path, dtype, quantity, swept): {gpu: answer}}: rows
    whose value is no number or that belong to a sweep, the answer being `measured` and `value` together."""
    out = {}
    for f in files:
        if is_ladder(f):
            continue
        t = f.table
        for i in range(len(t.rows)):
            swept = t.cell(i, "swept")
            if measured(t, i):
                continue
            key = (t.cell(i, "probe"), t.cell(i, "path"), t.cell(i, "dtype"), t.cell(i, "quantity"), swept)
            answer = t.cell(i, "measured") + (f" = {t.cell(i, 'value')}" if t.cell(i, "value") else "")
            out.setdefault(key, {})[f.env("gpu_index")] = answer
    return out


def spread_cells(by_gpu):
    """min, median, max, spread and the GPUs off the median, as table cells; None under two GPUs. Two GPUs
    have no median to be off: their spread is their difference, and neither is named."""
    if len(by_gpu) < 2:
        return None
    vals = list(by_gpu.values())
    med = statistics.median(vals)
    spread = (max(vals) - min(vals)) / abs(med) if med else float("nan")
    off = [f"GPU {g} ({(v - med) / abs(med):+.1%})" for g, v in sorted(by_gpu.items(), key=lambda x: int(x[0]))
           if med and abs(v - med) / abs(med) > DEVIATION]
    if len(by_gpu) == 2:
        off = ["- (two GPUs)"]
    return [num(min(vals)), num(med), num(max(vals)), f"{spread:.1%}", ", ".join(off) or "none"]


def sweep_lines(rs):
    """The sweep's tables: each rung's geometric-mean rate over the shapes every GPU ran, and each GPU's
    median SM clock and power over its sweep rows."""
    rates = {}
    for r in rs:
        if r["probe"] == "ladder" and r["unit"] == "Tflop/s":
            rates.setdefault((r["path"], r["dtype"]), {}).setdefault(r["quantity"], {})[r["gpu_index"]] = r["value"]
    if not rates:
        return []
    gpus = sorted({r["gpu_index"] for r in rs if r["probe"] == "ladder"}, key=int)
    everyone = sorted({r["gpu_index"] for r in rs}, key=int)
    out = ["The Hopper sweep: each rung's geometric mean rate over the shapes that every GPU which ran the rung "
           "ran (a GPU whose sweep failed or stopped is left out of the rungs it did not run, and counted in the "
           "GPUs column).", "",
           "| rung | type | GPUs | shapes | min | median | max | spread | off the median |",
           "|---|---|---|---|---|---|---|---|---|"]
    for (rung, dtype), shapes in sorted(rates.items()):
        ran = sorted({g for by_gpu in shapes.values() for g in by_gpu}, key=int)
        common = [q for q, by_gpu in shapes.items() if set(by_gpu) == set(ran) and all(v > 0 for v in by_gpu.values())]
        if not common:
            continue
        geo = {g: math.exp(sum(math.log(shapes[q][g]) for q in common) / len(common)) for g in ran}
        cells = spread_cells(geo)
        if cells:
            out.append(f"| {findings.md_cell(rung)} | {findings.md_cell(dtype)} | {len(ran)} of {len(everyone)} | "
                       f"{len(common)} | " + " | ".join(cells) + " |")
    missing = [g for g in everyone if g not in gpus]
    if missing:
        out += ["", f"No sweep rows from GPU {', '.join(missing)} (its sweep failed or did not run)."]
    out += ["", "| GPU | PCI bus | median SM clock over the sweep (MHz) | median power (W) |", "|---|---|---|---|"]
    for g in gpus:
        def median_of(unit):
            vals = [r["value"] for r in rs if r["probe"] == "ladder" and r["gpu_index"] == g and r["unit"] == unit]
            return num(statistics.median(vals)) if vals else "-"
        bus = next((r["gpu_pci_bus_id"] for r in rs if r["gpu_index"] == g), "")
        out.append(f"| {findings.md_cell(g)} | {findings.md_cell(bus)} | {median_of('MHz')} | {median_of('W')} |")
    return out + [""]


def answer_lines(files):
    """How many exact answers every GPU gave alike, and the ones that differ, each GPU's answer beside."""
    keyed = {k: v for k, v in answers(files).items() if len(v) >= 2}
    if not keyed:
        return []
    differ = {k: v for k, v in keyed.items() if len(set(v.values())) > 1}
    out = [f"Exact answers (words and swept numbers: fragment layouts, conversions, the accumulator's sweeps and "
           f"model, alignment rules, overflow): {len(keyed) - len(differ)} of {len(keyed)} alike on every GPU "
           f"that gave them" + ("." if not differ else "; these differ:"), ""]
    if differ:
        out += ["| probe | path | quantity | swept | answers |", "|---|---|---|---|---|"]
        for (probe, path, _, quantity, swept), by_gpu in sorted(differ.items()):
            given = "; ".join(f"GPU {g}: {a}" for g, a in sorted(by_gpu.items(), key=lambda x: int(x[0])))
            out.append(f"| {findings.md_cell(probe)} | {findings.md_cell(path)} | {findings.md_cell(quantity)} | "
                       f"{findings.md_cell(swept)} | {findings.md_cell(given)} |")
        out.append("")
    return out


def csv_text(rs):
    def cell(v):
        s = num(v) if isinstance(v, float) else str(v)
        return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\n') else s
    return "\n".join([",".join(COLUMNS)] + [",".join(cell(r[c]) for c in COLUMNS) for r in rs]) + "\n"


def section(files):
    groups = launches(files)
    if not groups:
        return ""
    out = ["## Every GPU of a node", "",
           "What ran on every GPU of one launch (`rigel launch --nproc N --independent -- rigel fleet --out DIR`: the "
           "probes and "
           "the Hopper sweep), each measured number set beside the same number on the other GPUs; a GPU more than "
           f"{DEVIATION:.0%} off the GPUs' median is named. The whole table, one row per GPU and number: "
           "docs/fleet/<launch>.csv.", ""]
    for lid, group in groups.items():
        rs = rows(group)
        gpus = sorted({f.env("gpu_index") for f in group}, key=int)
        out += [f"Launch {findings.md_cell(lid)}: GPUs {', '.join(gpus)} "
                f"({', '.join(sorted({findings.md_cell(f.name) for f in group}))}).", ""]
        keyed = {}
        for r in rs:
            if r["probe"] == "ladder":
                continue
            keyed.setdefault((r["probe"], r["quantity"], r["path"], r["dtype"], r["unit"]), {})[r["gpu_index"]] = \
                r["value"]
        table = []
        for (probe, quantity, path, _, unit), by_gpu in keyed.items():
            cells = spread_cells(by_gpu)
            if cells:
                table.append(f"| {findings.md_cell(probe)} | {findings.md_cell(quantity)} | {findings.md_cell(path)} | "
                             f"{findings.md_cell(unit)} | " + " | ".join(cells) + " |")
        if table:
            out += ["| probe | quantity | path | unit | min | median | max | spread | off the median |",
                    "|---|---|---|---|---|---|---|---|---|"] + table + [""]
        out += sweep_lines(rs)
        out += answer_lines(group)
    return "\n".join(out).rstrip("\n") + "\n"
