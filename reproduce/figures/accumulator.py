"""The accumulator: the relative error of RIGEL's hostile sum (2^E + 127 x
2^(E-g), one 128-term dot product) against the gap g, one line per path, from
the accumulation probe's per-gap rows (findings.accumulator_data: the latest
probes file that has them). An accumulator that keeps F bits below the
largest term's leading bit returns the exact sum up to a gap near F and loses
the small terms beyond it, so each path shows as a step at its width."""
import sys

from figures import style

# Where an exact result is drawn on the log axis (a relative error of 0 has no
# log): well below 127 x 2^-40 (1.2e-10), the error of losing the small terms at
# the battery's largest gap.
EXACT_FLOOR = 1e-12
# Up to this gap every partial sum of the hostile terms is an fp32 number, so
# any fp32 summation order returns the exact sum.
FP32_EXACT_GAP = 23
# One colour per path, in the order the lines are drawn.
COLOURS = ["#3566a8", "#c8443c", "#4f9a52", "#d08a2e", "#7b5aa6", "#2b9fa8", "#8c8c8c", "#b05c8a"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def path_label(path, dtype):
    """A short name: "mma.sync m16n8k16 f16", "wgmma m64n8k32 e4m3"."""
    parts = path.split(".")
    shape = next((p for p in parts if p.startswith("m") and "n" in p and "k" in p and p[1:2].isdigit()), "")
    family = "wgmma" if path.startswith("wgmma") else ("mma.sync" if path.startswith("mma.sync") else parts[0])
    return " ".join(x for x in (family, shape, dtype) if x)


def draw(plt, data, path, write_if_changed):
    """data: (source file, {(path, dtype): [(gap, relative error)]}). Draws
    nothing, and says so on stderr, when no probes file has per-gap rows."""
    source, lines = data
    if not lines:
        print("reproduce: accumulator.png not drawn: no committed probes CSV has the accumulation probe's per-gap rows",
              file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(9, 5))
    g_hi = 1.0
    worst = EXACT_FLOOR
    for n, ((p, dtype), points) in enumerate(lines.items()):
        gaps = [g for g, _ in points]
        errs = [max(e, EXACT_FLOOR) for _, e in points]
        g_hi = max(g_hi, max(gaps))
        worst = max(worst, max(errs))
        ax.plot(gaps, errs, color=COLOURS[n % len(COLOURS)], marker=MARKERS[n % len(MARKERS)], markersize=3.5,
                linewidth=1.3, label=path_label(p, dtype), zorder=3 + n)
    ax.set_yscale("log")
    ax.set_xlim(0.5, g_hi + 0.5)
    ax.set_ylim(EXACT_FLOOR / 3, max(worst * 3, EXACT_FLOOR * 100))
    ax.axhline(EXACT_FLOOR, color="#bbbbbb", linewidth=0.8, zorder=1)
    ax.text(0.7, EXACT_FLOOR * 1.3, "exact", color=style.NOTE, fontsize=8, va="bottom")
    ax.axvline(FP32_EXACT_GAP, color=style.CEILING, linewidth=1.0, linestyle="--", zorder=2)
    ax.text(FP32_EXACT_GAP - 0.3, EXACT_FLOOR * 20, "any fp32 order is exact up to here", color=style.CEILING,
            fontsize=8, ha="right", va="center", zorder=20, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_xlabel("gap g: the 127 small terms are 2^(E-g), the large one 2^E (binades)")
    ax.set_ylabel("relative error |device - exact| / exact (log scale)")
    ax.grid(axis="y", color="#eeeeee", zorder=0)
    ax.legend(loc="upper left")
    ax.set_title("The accumulator: RIGEL's hostile sum, one 128-term dot product")
    fig.text(0.99, 0.01, f"from {source}", ha="right", va="bottom", fontsize=7, color=style.NOTE)
    fig.tight_layout()
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
