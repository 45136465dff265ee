"""rigel's measured accumulation models beside the ones MMA-Sim publishes for
Hopper: FINDINGS.md's section "rigel's models beside MMA-Sim's".

rigel's side comes from the newest committed probes file with the
accumulation probe's "model assembled from these answers" rows: the model's
parameters and how many random cases it reproduced, from the row's typed
model_* columns (files written before those columns existed state them only
in the detail and measured text, which is read instead, as BlockModel::describe
wrote it). A path that ptxas lowers to other instructions (mma.sync with fp8
operands on sm_90) carries the lowering and one step's parameters. MMA-Sim's side is what
its simulator sets for Hopper (the repository microsoft/MMA-Sim, commit
c785138, mmasim/simulator/nv_ptx.py and arithmetic.py): mma and wgmma add all
of an instruction's products and C in one fused step, with 25 fraction bits
kept below the largest exponent (13 for wgmma's fp8), each term cut toward
zero, products aligned by their factors' exponents, and the result truncated
to fp32 (for wgmma's fp8: to 13 fraction bits, "f32_e8m13"), each chosen by
A's type (so an e4m3 x e5m2 pairing gets the fp8 model). Each parameter is
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
    """MMA-Sim's Hopper parameters for one of rigel's paths, or None. A mixed
    pairing ("e4m3 x e5m2") gets the model of A's type: MMA-Sim's mma and
    wgmma choose their parameters by A's type alone."""
    dtype = dtype.split(" x ")[0]
    k = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}.get(dtype)
    if k is None:
        return None
    fp8_wgmma = path.startswith("wgmma") and dtype in ("e4m3", "e5m2")
    return {"block": k, "bits": 13 if fp8_wgmma else 25, "align": "truncation toward zero",
            "out": "toward zero", "c": "C aligned with the first block", "factors": True,
            "out_bits": 13 if fp8_wgmma else 23}


def rigel_model(t, i):
    """The model of row i of probes table t, with its score, or None."""
    if t.cell(i, "model_block"):
        try:
            return {"block": int(t.cell(i, "model_block")), "bits": int(t.cell(i, "model_frac_bits")),
                    "align": t.cell(i, "model_align"), "out": t.cell(i, "model_out"), "c": t.cell(i, "model_c"),
                    "factors": t.cell(i, "model_exp_rule") == "factors",
                    "out_bits": int(t.cell(i, "model_out_frac_bits")), "lowering": t.cell(i, "model_lowering"),
                    "score": tuple(int(t.cell(i, f"model_{k}")) for k in ("single_ok", "single_n", "chain_ok",
                                                                           "chain_n"))}
        except ValueError:
            return None
    m = MODEL.search(t.cell(i, "detail"))
    if not m:
        return None
    score = SCORE.search(t.cell(i, "measured"))
    return {"block": int(m.group("block")), "bits": int(m.group("bits")), "align": m.group("align"),
            "out": m.group("out"), "c": m.group("c"), "factors": m.group("factors") is not None,
            "out_bits": int(m.group("out_bits") or 23), "lowering": "",
            "score": tuple(int(g) for g in score.groups()) if score else None}


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
        mine, theirs = rigel_model(t, i), mmasim_model(path, dtype)
        if mine is None or theirs is None:
            continue
        score = mine["score"]
        complete = bool(score) and score[0] == score[1] and score[2] == score[3]
        differ = []
        row = f"| {findings.md_cell(path)} | {dtype} |"
        step = ""
        if mine["lowering"]:
            # MMA-Sim runs the instruction as one fused step; rigel measured it as other instructions.
            differ.append("how the instruction runs")
            out.append(f"{row} how the instruction runs | {findings.md_cell(mine['lowering'])}; "
                       f"{findings.md_cell(mine['c'])} | one fused step of all {theirs['block']} products and C | "
                       "**no** |")
            step = "one step's "
        for key, label, show in PARAMS:
            if mine["lowering"] and key == "c":
                continue  # stated in the row above
            same = mine[key] == theirs[key]
            if not same:
                differ.append(step + label)
            out.append(f"{row} {step}{label} | {show(mine[key])} | {show(theirs[key])} | "
                       f"{'yes' if same else '**no**'} |")
        shown = (f"{score[0]}/{score[1]} single, {score[2]}/{score[3]} chained bit-identical" if score
                 else t.cell(i, "measured"))
        state = ("complete (" + shown + ")") if complete else ("incomplete (" + shown + ")")
        summary.append(f"- {findings.md_cell(path)} ({dtype}): rigel's model {state}; "
                       + ("every parameter agrees with MMA-Sim's." if not differ
                          else "differs from MMA-Sim's in " + ", ".join(differ) + "."))
    if not summary:
        return ""
    return "\n".join(out + [""] + summary) + "\n"
