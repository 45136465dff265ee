"""What an MN-major operand costs a Hopper GEMM's narrow tiles: FINDINGS.md's section "The operand's layout:
the wgmma instruction and the TMA loads", from the probes wgmma_operand_layout and tma_box_rate.

The newest committed probes file holding each probe's rows is read (typed `value` and, for N, `swept`
columns; verified rows only). The wgmma rows become one table: for each N, the SM's cycles a wgmma m64nNk16 in each of the
library's four layouts (NT: A and B K-major; NN: B MN-major; TT: A MN-major; TN: both), each beside N / 2
(2,048 multiply-adds a clock) and the MN-major ones as a ratio to NT at the same N. The TMA rows become a
second: bytes a clock an SM and aggregate TB/s for each box case, the boxes off the 128-byte lines as a
ratio to the same boxes on them. The sentences under each table are computed from the rows: which N and
layouts run more than 5 % slower than NT at the same N, and how much slower the loads off the lines run.
"""
import re

import findings

LAYOUTS = ("NT", "NN", "TT", "TN")
SLOWER = 1.05  # a variant this much slower than NT at its N is named
LAYOUT_OF = re.compile(r"\(layout (N[NT]|T[NT])\)")
BPC = "TMA bytes a clock an SM: "
TBPS = "TMA aggregate bandwidth: "


def newest(probes, probe):
    """(file, row indices) of the newest probes file with verified rows of `probe` that carry a value."""
    best = None
    for f in probes:
        t = f.table
        rows = [i for i in range(len(t.rows)) if t.cell(i, "probe") == probe and t.cell(i, "verified") == "1"
                and t.cell(i, "value")]
        if rows and (best is None or findings.run_age(f) >= findings.run_age(best[0])):
            best = (f, rows)
    return best


def wgmma_cycles(f, rows):
    """{N: {layout: cycles}} from wgmma_operand_layout's rows: N from the typed `swept` column, the layout
    from the row's name (its quantity)."""
    out = {}
    for i in rows:
        n, lay = findings.parse_number(f.table.cell(i, "swept")), LAYOUT_OF.search(f.table.cell(i, "quantity"))
        if n is not None and lay:
            out.setdefault(int(n), {})[lay.group(1)] = float(f.table.cell(i, "value"))
    return out


def source(f):
    return f"{findings.md_cell(f.name)}, commit {findings.md_cell(f.side('git_commit')[:7])}"


def wgmma_part(found):
    f, rows = found
    cycles = wgmma_cycles(f, rows)
    if not cycles:
        return []
    out = ["The SM's cycles a wgmma m64nNk16 bf16 with its operands resident in shared memory in the 128B "
           "swizzle, as the library's TMA loads leave them (two warpgroups an SM, each a chain on one "
           f"accumulator; every element of D checked), against N / 2 at 2,048 multiply-adds a clock ({source(f)}):",
           "", "| N | N / 2 | " + " | ".join(LAYOUTS) + " |", "|---|---|" + "---|" * len(LAYOUTS)]
    slow = []
    for n in sorted(cycles):
        c = cycles[n]
        cells = []
        for lay in LAYOUTS:
            if lay not in c:
                cells.append("-")
            elif lay == "NT" or "NT" not in c:
                cells.append(f"{c[lay]:.1f}")
            else:
                r = c[lay] / c["NT"]
                cells.append(f"{c[lay]:.1f} ({r:.2f}x NT)")
                if r > SLOWER:
                    slow.append(f"{lay} at N = {n} ({r:.2f}x)")
        out.append(f"| {n} | {n / 2:g} | " + " | ".join(cells) + " |")
    out.append("")
    if slow:
        out.append("More than 5 % slower than both operands K-major at the same N: " + ", ".join(slow) + ".")
    else:
        out.append("No layout runs more than 5 % slower than both operands K-major at the same N: the instruction "
                   "itself does not explain what an MN-major operand cost the library's narrow tiles.")
    return out


def tma_part(found):
    f, rows = found
    t = f.table
    bpc, tbps = {}, {}
    for i in rows:
        q = t.cell(i, "quantity")
        if q.startswith(BPC):
            bpc[q[len(BPC):]] = float(t.cell(i, "value"))
        elif q.startswith(TBPS):
            tbps[q[len(TBPS):]] = float(t.cell(i, "value"))
    if not bpc:
        return []
    on_lines = next((v for k, v in bpc.items() if k.startswith("MN-major") and "on the 128-byte lines" in k), None)
    out = [f"TMA loads alone, a 128-wide tile's B a k-step from L2, one producer an SM ({source(f)}):", "",
           "| boxes | bytes a clock an SM | aggregate TB/s | against the MN-major boxes on the lines |",
           "|---|---|---|---|"]
    off = []
    for case, v in bpc.items():
        ratio = "-"
        if on_lines and case.startswith("MN-major") and "past the lines" in case:
            ratio = f"{v / on_lines:.3f}"
            off.append(v / on_lines)
        tb = f"{tbps[case]:.2f}" if case in tbps else "-"
        out.append(f"| {findings.md_cell(case)} | {v:.1f} | {tb} | {ratio} |")
    out.append("")
    if off:
        worst = min(off)
        out.append(f"Boxes off the lines load at {worst:.3f} of the rate of the same boxes on them at worst" +
                   (": the loads explain part of the narrow tail's loss." if worst < 1 / SLOWER
                    else ": within 5 %, so the loads do not explain the narrow tail's loss."))
    return out


def section(probes):
    """The section, or "" when neither probe has verified rows."""
    w, m = newest(probes, "wgmma_operand_layout"), newest(probes, "tma_box_rate")
    parts = (wgmma_part(w) if w else []), (tma_part(m) if m else [])
    if not any(parts):
        return ""
    out = ["## The operand's layout: the wgmma instruction and the TMA loads", "",
           "Why the library's narrow tiles (104 columns) and 168-column tiles lost with B stored MN-major "
           "(docs/gemm.md, \"The narrow tail\"): the instruction and the loads, each timed alone.", ""]
    for p in parts:
        if p:
            out += p + [""]
    return "\n".join(out).rstrip("\n") + "\n"
