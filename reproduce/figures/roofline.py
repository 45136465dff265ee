"""Roofline: every verified GPU rung and vendor row at its arithmetic intensity
(2MNK over the bytes of A, B and C at their storage sizes) against its rate,
under the sustained ceilings the throughput probe measured (scalar FMA,
mma.sync and wgmma per type; the probe rows' typed `value` and `unit`).
Ceilings from findings.latest_ceiling_run; points from reproduce.read_rows."""
import math

from figures import style

# Bits per stored element and bytes per output element, as rigel stores them
# (src/core/dtype.cpp: storage_bits and OutType; mxfp4 adds one e8m0 scale
# byte per 32 elements along K of every line).
STORAGE_BITS = {"f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "e2m1": 4,
                "mxfp4": 4, "i8": 8}
OUT_BYTES = {"f64": 8}  # every other type writes 4-byte fp32 or int32
MX_BLOCK = 32
MARKERS = {"f64": "p", "f32": "o", "tf32": "h", "f16": "s", "bf16": "D", "e4m3": "^", "e5m2": "v",
           "e2m1": "<", "mxfp4": ">", "i8": "X"}


def operand_bytes(dtype, lines, k):
    b = math.ceil(lines * k * STORAGE_BITS[dtype] / 8)
    if dtype == "mxfp4":
        b += lines * math.ceil(k / MX_BLOCK)
    return b


def intensity(dtype, m, n, k):
    """flop (or op) per byte of A, B and C moved once."""
    return 2 * m * n * k / (operand_bytes(dtype, m, k) + operand_bytes(dtype, n, k) + m * n * OUT_BYTES.get(dtype, 4))


def ceilings(findings, probes):
    """[(label, Tflop/s)] from the latest throughput run: each scalar FMA path,
    and the best mma.sync and wgmma shape of each type."""
    f = findings.latest_ceiling_run(probes)
    if not f:
        return [], None
    t = f.table
    best = {}
    for i in range(len(t.rows)):
        if not findings.is_ceiling_row(t, i) or t.cell(i, "verified") != "1":
            continue
        v = findings.rate_tflops(t, i)
        if v is None:
            continue
        path, dtype = t.cell(i, "path").lower(), t.cell(i, "dtype")
        if path.startswith("wgmma"):
            key = f"wgmma {dtype}"
        elif path.startswith("mma.sync"):
            key = f"mma.sync {dtype}"
        else:
            key = path.split(" ")[0].upper()  # FFMA, HFMA2, HFMA2.BF16, DFMA
        if v > best.get(key, 0.0):
            best[key] = v
    return sorted(best.items(), key=lambda kv: kv[1]), f.name


def bandwidth(findings, probes):
    """(TB/s, path, file) of the highest verified sustained memory bandwidth in
    the latest probes file that measured one (the bandwidth probe's typed
    `value`); None when no committed file did."""
    latest = None
    for f in probes:
        t = f.table
        rows = [i for i in range(len(t.rows)) if t.cell(i, "probe") == "bandwidth"
                and t.cell(i, "quantity") == "sustained memory bandwidth" and t.cell(i, "verified") == "1"
                and t.cell(i, "unit") == "TB/s" and t.cell(i, "value")]
        if rows and (latest is None or findings.run_age(f) >= findings.run_age(latest[0])):
            latest = (f, rows)
    if latest is None:
        return None
    f, rows = latest
    best = max(rows, key=lambda i: float(f.table.cell(i, "value")))
    return float(f.table.cell(best, "value")), f.table.cell(best, "path"), f.name


def spread(values, gap, top):
    """Label positions (ascending, log10) at least `gap` apart, none above `top`,
    each as near its value as it can be."""
    out = []
    for v in values:
        out.append(max(v, out[-1] + gap) if out else v)
    for i in reversed(range(len(out))):
        out[i] = min(out[i], top if i == len(out) - 1 else out[i + 1] - gap)
    return out


def draw(plt, rows, findings, probes, path, write_if_changed):
    """rows: ladder rows (reproduce.read_rows); probes: findings' probe files."""
    sel = [r for r in rows if r["backend"] == "cuda" and r["status"] == "PASS" and r["_rate"] > 0
           and r["dtype"] in STORAGE_BITS]
    latest = {}
    for r in sel:
        latest[(r["rung"], r["dtype"], r["m"], r["n"], r["k"])] = r
    roofs, source = ceilings(findings, probes)
    if not latest or not roofs:
        return False
    fig, ax = plt.subplots(figsize=(13, 7.5))
    types = [t for t in STORAGE_BITS if any(r["dtype"] == t for r in latest.values())]
    for own in (True, False):
        for t in types:
            pts = [r for r in latest.values() if r["dtype"] == t and (r["vendor"] != "1") == own]
            if not pts:
                continue
            xs = [intensity(t, int(r["m"]), int(r["n"]), int(r["k"])) for r in pts]
            ax.scatter(xs, [r["_rate"] for r in pts], marker=MARKERS[t], s=30, zorder=3,
                       color=style.OWN if own else "none", edgecolors=style.OWN if own else style.VENDOR,
                       linewidths=1.0, alpha=0.85)
    ax.set_xscale("log")
    ax.set_yscale("log")
    top = max(v for _, v in roofs) * 1000
    ax.set_ylim(min(r["_rate"] for r in latest.values()) / 2, top * 1.6)
    for _, v in roofs:
        ax.axhline(v * 1000, color=style.CEILING, linewidth=0.8, linestyle="--", zorder=1)
    bw = bandwidth(findings, probes)
    if bw:
        # Rate (Gflop/s) = bandwidth (GB/s) x intensity (flop/byte), up to the highest ceiling.
        tbs, bw_path, bw_source = bw
        x_lo = ax.get_xlim()[0]
        x_top = top / (tbs * 1000)
        ax.plot([x_lo, x_top], [tbs * 1000 * x_lo, top], color=style.CEILING, linewidth=1.0, zorder=1)
    # Ceiling labels in a column right of the plot: ceilings within 10 % of each
    # other share a line, and lines are spread so that they never overlap.
    groups = []
    for label, v in roofs:
        if groups and v <= groups[-1][-1][1] * 1.1:
            groups[-1].append((label, v))
        else:
            groups.append([(label, v)])
    lo_y, hi_y = (math.log10(x) for x in ax.get_ylim())
    gap = (hi_y - lo_y) * 0.03
    trans = ax.get_yaxis_transform()
    centres = [math.log10(sum(v for _, v in g) / len(g) * 1000) for g in groups]
    for g, y in zip(groups, spread(centres, gap, hi_y - gap / 2)):
        unit = "Tops" if g[-1][0].endswith("i8") else "Tflop/s"
        text = ", ".join(f"{label} {v:.0f}" for label, v in reversed(g)) + " " + unit
        ax.text(1.01, 10 ** y, text, transform=trans, fontsize=7.5, va="center", color=style.CEILING)
    style.rate_axis(ax.yaxis, "rate, 2MNK / median time (op/s for i8; log scale)")
    ax.set_xlabel("arithmetic intensity, 2MNK / bytes of A, B and C at their storage sizes (flop/byte, log scale)")
    ax.grid(which="major", color="#eeeeee", zorder=0)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker="o", linestyle="", color=style.OWN, label="own rung (filled)"),
               Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color=style.VENDOR,
                      label="vendor library (open)"),
               Line2D([], [], linestyle="--", color=style.CEILING, label="sustained ceiling (throughput probe)")]
    if bw:
        handles.append(Line2D([], [], color=style.CEILING,
                              label=f"memory roof {bw[0]:.2f} TB/s (bandwidth probe)"))
    handles += [Line2D([], [], marker=MARKERS[t], linestyle="", color="#333333", markerfacecolor="none", label=t)
                for t in types]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=6)
    from matplotlib.ticker import FuncFormatter
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    roof_note = (f"Memory roof: {bw_source}." if bw else
                 "No memory-bandwidth roof is drawn: no committed CSV holds a measured bandwidth.")
    fig.text(0.01, 0.01, f"{roof_note}  Ceilings: {source}.  Points: every verified GPU row, the latest per rung, "
             "type and shape.", fontsize=7.5, color=style.NOTE)
    ax.set_title("Roofline on the H200: rungs and vendor rows under the measured ceilings")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
