"""Fused bias + GELU over the decomposed path: the gain (median of the per-pair
ratios - 1) against n on a log2 axis, with the pairs' p10-p90 band, the gain
that the two extra passes over D predict at the bandwidth probe's rate, RIGEL's
6.5-12.9 % as a band, and where D stops fitting in L2. Drawn from
gemm_report.fused_gain_data, the rows of FINDINGS.md's "Fused bias + GELU
against the decomposed path"."""
import math
import sys

import gemm_report
from figures import style


def draw(plt, data, path, write_if_changed):
    """data: gemm_report.FusedGain or None. Draws nothing, and says so on
    stderr, when no committed bench CSV has the fused suite."""
    if data is None:
        print("reproduce: fused_gain.png not drawn: no committed *_gemm.csv has the fused suite's rigel against "
              "rigel_decomposed rows", file=sys.stderr)
        return False
    pts = data.points
    ns = [p.n for p in pts]
    pct = lambda v: 100 * v
    fig, ax = plt.subplots(figsize=(9, 5))
    lo, hi = gemm_report.RIGEL_GAIN
    ax.axhspan(pct(lo), pct(hi), color=style.VENDOR, alpha=0.12, linewidth=0, zorder=1,
               label=f"RIGEL's statement, {pct(lo):.1f}-{pct(hi):.1f} % (its hardware)")
    ax.axhline(0, color="#999999", linewidth=0.8, zorder=1)
    ax.fill_between(ns, [pct(p.p10) for p in pts], [pct(p.p90) for p in pts], color=style.OWN, alpha=0.22,
                    linewidth=0, zorder=2, label="p10-p90 of the pairs")
    ax.plot(ns, [pct(p.gain) for p in pts], color=style.OWN, marker="o", markersize=4, linewidth=1.5, zorder=4,
            label="measured: median of fused / decomposed - 1")
    predicted = [(p.n, pct(p.predicted)) for p in pts if math.isfinite(p.predicted)]
    if predicted:
        ax.plot([x for x, _ in predicted], [y for _, y in predicted], color=style.CEILING, linestyle="--",
                marker="s", markersize=3, linewidth=1.2, zorder=3,
                label=f"predicted: 2 passes x n^2 x 2 bytes at {data.bandwidth[0]:.2f} TB/s / GEMM time")
    if data.l2:
        edge = math.sqrt(data.l2 / 2)
        if ns[0] <= edge <= ns[-1]:
            ax.axvline(edge, color=style.CEILING, linewidth=0.9, linestyle=":", zorder=2)
            ax.text(edge, 0.55, f"D outgrows the {data.l2 / (1 << 20):.0f} MiB L2 ",
                    transform=ax.get_xaxis_transform(), fontsize=8, color=style.CEILING, rotation=90, ha="right",
                    va="center")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set_xlabel("n (square GEMM n x n x n, bias + GELU, bf16 in and out; log2 scale)")
    ax.set_ylabel("gain of the fused path over the decomposed one (%)")
    ax.grid(axis="y", color="#eeeeee", zorder=0)
    ax.legend(loc="upper right")
    ax.set_title("Fused bias + GELU against the decomposed path on the H200")
    note = f"from {data.source.name}"
    if data.bandwidth:
        note += f"; bandwidth: {data.bandwidth[1]} ({data.bandwidth[2].name})"
    fig.text(0.99, 0.01, note, ha="right", va="bottom", fontsize=7, color=style.NOTE)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
