"""rigel's measured accumulation models beside the ones MMA-Sim publishes for
Hopper: FINDINGS.md's section "rigel's models beside MMA-Sim's".

rigel's side comes from the newest committed probes file with the
accumulation probe's "model assembled from these answers" rows (their detail
names the model's parameters, as BlockModel::describe writes them, and their
measured column how many random cases it reproduced). MMA-Sim's side is what
its simulator sets for Hopper (the repository microsoft/MMA-Sim, commit
c785138, mmasim/simulator/nv_ptx.py and arithmetic.py): mma and wgmma add all
of an instruction's products and C in one fused step, with 25 fraction bits
kept below the largest exponent (13 for wgmma's fp8), each term cut toward
zero, products aligned by their factors' exponents, and the result truncated
to fp32 (for wgmma's fp8: to 13 fraction bits, "f32_e8m13"). Each parameter is
stated as agreeing or not; a model that reproduces fewer than all of rigel's
random cases is marked incomplete, whichever side it agrees with.
"""
import re

import findings

MODEL = re.compile(
    r"model: (?P<block>\d+) products per step, (?P<bits>\d+) bits kept below the largest term's leading bit, "
    r"alignment by (?P<align>[^,]+), result rounded (?P<out>[^,]+?(?:, ties to even)?), "
    r"(?P<c>C aligned with the first block|C added after the first block)"
    r"(?P<factors>, products aligned by their factors' exponents)?"
    r"(?:, the result kept to (?P<out_bits>\d+) fraction bits)?")
SCORE = re.compile(r"(\d+)/(\d+) single, (\d+)/(\d+) chained")

MMASIM_SOURCE = "MMA-Sim (Xie et al., 2025), github.com/microsoft/MMA-Sim @ c785138, mmasim/simulator/nv_ptx.py"


def mmasim_model(path, dtype):
    """MMA-Sim's Hopper parameters for one of rigel's paths, or None."""
    k = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}.get(dtype)
    if k is None:
        return None
    fp8_wgmma = path.startswith("wgmma") and dtype in ("e4m3", "e5m2")
    return {"block": k, "bits": 13 if fp8_wgmma else 25, "align": "truncation toward zero",
            "out": "toward zero", "c": "C aligned with the first block", "factors": True,
            "out_bits": 13 if fp8_wgmma else 23}


def rigel_model(detail):
    m = MODEL.search(detail)
    if not m:
        return None
    return {"block": int(m.group("block")), "bits": int(m.group("bits")), "align": m.group("align"),
            "out": m.group("out"), "c": m.group("c"), "factors": m.group("factors") is not None,
            "out_bits": int(m.group("out_bits") or 23)}


def latest_models(probes):
    """(file, [row index]) of the newest probes file with model rows, or (None, [])."""
    latest, rows = None, []
    for f in probes:
        t = f.table
        mine = [i for i in range(len(t.rows)) if t.cell(i, "probe") == "accumulation"
                and t.cell(i, "quantity").startswith("the model assembled")]
        if mine and (latest is None or findings.run_age(f) >= findings.run_age(latest)):
            latest, rows = f, mine
    return latest, rows


PARAMS = (("block", "products per step", str), ("bits", "bits kept below the largest exponent", str),
          ("align", "alignment cut", str), ("out", "result rounded", str),
          ("out_bits", "result's fraction bits", str), ("c", "where C joins", str),
          ("factors", "products aligned by", lambda v: "their factors' exponents" if v else "their own exponent"))


def section(probes):
    f, rows = latest_models(probes)
    if f is None:
        return ""
    t = f.table
    out = ["## rigel's models beside MMA-Sim's (Hopper)", "",
           f"What rigel's accumulation probe assembled on the H200 machine ({findings.md_cell(f.name)}, commit "
           f"{findings.md_cell(f.side('git_commit')[:7])}), parameter by parameter beside what {MMASIM_SOURCE} "
           "sets for Hopper. A model that misses some of rigel's random cases is incomplete, whichever side "
           "its parameters agree with.", "",
           "| path | type | parameter | rigel measured | MMA-Sim | agree |", "|---|---|---|---|---|---|"]
    summary = []
    for i in rows:
        path, dtype = t.cell(i, "path"), t.cell(i, "dtype")
        mine, theirs = rigel_model(t.cell(i, "detail")), mmasim_model(path, dtype)
        if mine is None or theirs is None:
            continue
        score = SCORE.search(t.cell(i, "measured"))
        complete = bool(score) and score.group(1) == score.group(2) and score.group(3) == score.group(4)
        differ = []
        for key, label, show in PARAMS:
            same = mine[key] == theirs[key]
            if not same:
                differ.append(label)
            out.append(f"| {findings.md_cell(path)} | {dtype} | {label} | {show(mine[key])} | {show(theirs[key])} | "
                       f"{'yes' if same else '**no**'} |")
        state = ("complete (" + t.cell(i, "measured") + ")") if complete else (
            "incomplete (" + t.cell(i, "measured") + ")")
        summary.append(f"- {findings.md_cell(path)} ({dtype}): rigel's model {state}; "
                       + ("every parameter agrees with MMA-Sim's." if not differ
                          else "differs from MMA-Sim's in " + ", ".join(differ) + "."))
    if not summary:
        return ""
    return "\n".join(out + [""] + summary) + "\n"
