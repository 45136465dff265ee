"""Low-precision speed against the 1.5x "accelerated" line: each low-precision
type's rate over the f16 rate of the same path, from the throughput probe's
sustained ceilings (findings.throughput_accel_data) and from the ladder, the
best rung of a group against the group's best f16 rung at the same shape
(findings.ladder_accel_data, the newest run for each group, shape and type:
by run id, findings.run_age, not by file name).
The same numbers as FINDINGS.md's "Is a low-precision type accelerated"."""
import math

import verdicts
from figures import style


def newest_ladder_ratios(ladder_accel):
    """{(group, shape, type): the LadderAccel of the newest run (by run id)
    with a measured ratio}."""
    latest = {}
    for a in ladder_accel:
        key = (a.group, a.shape, a.dtype)
        if math.isfinite(a.verdict.ratio) and (key not in latest or a.age >= latest[key].age):
            latest[key] = a
    return latest


def draw(plt, findings, probe_accel, ladder_accel, path, write_if_changed):
    bars = []  # (label, ratio, colour)
    for a in probe_accel:
        if math.isfinite(a.verdict.ratio):
            bars.append((f"probe  {a.family} {a.dtype} / f16 (instruction ceilings)", a.verdict.ratio, style.CEILING))
    latest = newest_ladder_ratios(ladder_accel)
    for (group, shape, dtype), a in sorted(latest.items()):
        who = "vendor" if group == "vendor" else "own"
        bars.append((f"ladder  {group} {findings.shape_text(*shape)} {dtype}: {a.rung.split('_')[0] if who == 'own' else a.rung.replace('vendor_', '')}"
                     f" / {a.f16[1].split('_')[0] if who == 'own' else a.f16[1].replace('vendor_', '')}", a.verdict.ratio,
                     style.VENDOR if who == "vendor" else style.OWN))
    if not bars:
        return False
    n = len(bars)
    fig, ax = plt.subplots(figsize=(10, 0.34 * n + 1.8))
    ax.barh(range(n), [b[1] for b in bars], color=[b[2] for b in bars], height=0.62, zorder=2)
    for y, (_, ratio, _) in enumerate(bars):
        ax.text(ratio + 0.03, y, f"{ratio:.2f}x", va="center", fontsize=8)
    ax.set_yticks(range(n), [b[0] for b in bars])
    ax.invert_yaxis()
    accel = verdicts.ACCELERATED_RATIO
    ax.axvline(1.0, color="#999999", linewidth=0.8, zorder=1)
    ax.axvline(accel, color=style.VENDOR, linewidth=1.2, linestyle="--", zorder=3)
    ax.text(accel, -0.9, f" accelerated at >= {accel:g}x", color=style.VENDOR, fontsize=8, va="center")
    ax.set_xlim(0, max(max(b[1] for b in bars), accel) * 1.15)
    ax.set_ylim(n - 0.5, -1.4)
    ax.set_xlabel("low-precision rate / f16 rate of the same path (x, linear)")
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=style.CEILING, label="throughput probe, one instruction"),
                       Patch(color=style.OWN, label="ladder, own rungs"),
                       Patch(color=style.VENDOR, label="ladder, vendor library")],
              loc="upper center", bbox_to_anchor=(0.5, -0.12 * 12 / (n + 6)), ncol=3)
    ax.set_title("Is a low-precision type accelerated, or only smaller?")
    fig.tight_layout()
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
