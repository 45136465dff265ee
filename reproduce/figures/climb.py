"""The climb: one bar per step, naive CPU loop to fp8 wgmma, on a log rate axis,
each bar labelled with its rate and its factor over the naive loop; the vendor
library measured in the same run (OpenBLAS, cuBLAS/cuBLASLt) is a mark on the
step's row. Drawn from reproduce.climb_data, the rows of README's climb table."""
import math

from figures import style


def vendor_level(r):
    """The vendor's rate in the step's run, from the row's pct_of_vendor; None when absent."""
    try:
        pct = float(r["pct_of_vendor"])
    except (KeyError, ValueError):
        return None
    return r["_rate"] / (pct / 100) if pct > 0 else None


def draw(plt, steps, path, write_if_changed):
    """steps: [(label, ladder row)] with the naive loop first. Returns True when drawn."""
    if not steps:
        return False
    base = steps[0][1]["_rate"]
    n = len(steps)
    fig, ax = plt.subplots(figsize=(13, 0.36 * n + 1.9))
    ys = range(n)
    rates = [r["_rate"] for _, r in steps]
    colors = [style.CPU if r["backend"] == "cpu" else style.OWN for _, r in steps]
    ax.barh(ys, rates, color=colors, height=0.66, zorder=2)
    vendor = [(y, vendor_level(r)) for y, (_, r) in zip(ys, steps)]
    vendor = [(y, v) for y, v in vendor if v]
    ax.scatter([v for _, v in vendor], [y for y, _ in vendor], marker="|", s=260, linewidths=2.4,
               color=style.VENDOR, zorder=3)
    labels = [f"{label}   {r['rung'].split('_')[0]} {r['dtype']} {r['m']}\u00b3" for label, r in steps]
    ax.set_yticks(list(ys), labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    top = max(rates + [v for _, v in vendor])
    ax.set_xlim(min(rates) / 2, top * 2)
    style.rate_axis(ax.xaxis, "rate, 2MNK / median time (log scale)")
    ax.grid(axis="x", which="major", color="#dddddd", zorder=0)
    # The rate and factor of each step, in a column to the right of the plot.
    trans = ax.get_yaxis_transform()
    ax.text(1.01, -0.9, "rate", transform=trans, fontsize=8, fontweight="bold", va="center")
    ax.text(1.23, -0.9, "x naive", transform=trans, fontsize=8, fontweight="bold", va="center", ha="right")
    for y, (_, r) in zip(ys, steps):
        g = r["_rate"]
        ax.text(1.01, y, style.rate_text(g, r["_ops"]), transform=trans, fontsize=8, va="center")
        f = g / base
        ax.text(1.23, y, f"{f:,.0f}x" if f >= 10 else f"{f:.1f}x", transform=trans, fontsize=8,
                va="center", ha="right")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=style.CPU, label="CPU rung (H200 machine's host)"),
                       Patch(color=style.OWN, label="GPU rung (H200)"),
                       Line2D([], [], color=style.VENDOR, marker="|", linestyle="", markersize=13, mew=2.4,
                              label="vendor library, same run (OpenBLAS / cuBLAS, cuBLASLt)")],
              loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3)
    ax.set_title(f"The climb: naive CPU loop to fp8 wgmma, {math.log10(rates[-1] / base):.1f} decades")
    fig.tight_layout()
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
