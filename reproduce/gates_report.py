"""The toolchain's version gates, from the newest committed
results/toolchain/*_version_gates.csv (scripts/version_gates.py, the compile
half) and results/h200/*_driver_gates.csv (scripts/driver_gates.py, the run
half): the tables of docs/version_gates.md and FINDINGS.md's section.

Every statement here is counted from the rows: the lowest PTX ISA version
ptxas accepts per feature and target, NVRTC's answer, how many answers agree
with the PTX ISA document, and the messages the refusals carry.
"""
import re

import findings

GATES_NAME = re.compile(r"_version_gates\.csv$")
DRIVER_NAME = re.compile(r"_driver_gates\.csv$")
OFFERS_NAME = re.compile(r"_cublaslt_offers\.csv$")
OFFERS_COLUMNS = ("device", "cublaslt_version", "a_type", "b_type", "d_type", "layout", "a_scale", "b_scale", "status",
                  "algorithms", "offered", "documented", "agrees", "doc")
DRIVER_COLUMNS = ("device", "compute_capability", "driver", "case", "form", "target", "ptx_version", "loaded",
                  "ran", "documented", "agrees", "message", "why")
COLUMNS = ("tool", "tool_version", "feature", "instruction", "target", "ptx_version", "accepted", "documented",
           "agrees", "message", "doc")


def load(folder):
    """The newest version-gates file, or None."""
    return findings.newest_result_file(folder, GATES_NAME, COLUMNS, "a version-gates file")


def rows_of(rf):
    t = rf.table
    return [{c: t.cell(i, c) for c in COLUMNS} for i in range(len(t.rows))]


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def version_key(v):
    return tuple(int(x) for x in v.split("."))


def table(rf):
    """Feature x target: the lowest PTX ISA version ptxas accepts ('-': none),
    NVRTC's cubin (y/n), '!' where an answer disagrees with the document."""
    rows = rows_of(rf)
    features = ordered(r["feature"] for r in rows)
    targets = ordered(r["target"] for r in rows)
    lines = ["| feature | instruction | " + " | ".join(targets) + " | the PTX ISA document |",
             "|---|---|" + "---|" * len(targets) + "---|"]
    for f in features:
        mine = [r for r in rows if r["feature"] == f]
        cells = []
        for t in targets:
            ptx = sorted((r for r in mine if r["target"] == t and r["tool"] == "ptxas"),
                         key=lambda r: version_key(r["ptx_version"]))
            nv = [r for r in mine if r["target"] == t and r["tool"] == "nvrtc"]
            lowest = next((r["ptx_version"] for r in ptx if r["accepted"] == "1"), "-")
            cell = lowest + ("" if not nv else " / " + ("y" if nv[0]["accepted"] == "1" else "n"))
            if any(r["agrees"] != "1" for r in ptx + nv):
                cell += " **!**"
            cells.append(cell)
        lines.append(f"| {findings.md_cell(f)} | `{findings.md_cell(mine[0]['instruction'])}` | " +
                     " | ".join(cells) + f" | {findings.md_cell(mine[0]['doc'])} |")
    return "\n".join(lines)


def counts(rf):
    rows = rows_of(rf)
    by_tool = {}
    for r in rows:
        a = by_tool.setdefault(r["tool"], [0, 0, r["tool_version"]])
        a[0] += r["agrees"] == "1"
        a[1] += 1
    return by_tool


def block(folder):
    rf = load(folder)
    if rf is None:
        return ("No committed version-gates file yet (`results/toolchain/*_version_gates.csv`, written by "
                "`scripts/version_gates.py --out results/toolchain`).")
    tools = counts(rf)
    agree = "; ".join(f"{tool} {v[2]}: {v[0]}/{v[1]} answers agree with the document"
                      for tool, v in sorted(tools.items()))
    return (f"From {findings.md_cell(rf.name)} (commit {findings.md_cell(rf.side('git_commit')[:7])}): {agree}. "
            "Each cell: the lowest PTX ISA version at which ptxas assembles the feature for the target ('-': at "
            "none of 7.8 to 9.0), then NVRTC's answer (y: a cubin) in its own PTX ISA version; **!** marks an "
            "answer the document does not predict.\n\n" + table(rf))


def messages(rf):
    """The distinct refusal messages, with how many answers gave each (the
    target and version numbers in them folded, so one gate is one line)."""
    tally = {}
    for r in rows_of(rf):
        if r["accepted"] == "1" or not r["message"]:
            continue
        key = re.sub(r"sm_\d+a?|\b\d+\.\d+\b", "#", r["message"])
        entry = tally.setdefault(key, [0, r["message"]])
        entry[0] += 1
    return sorted(tally.values(), key=lambda e: -e[0])


def load_driver(folder):
    """The newest driver-gates file, or None."""
    return findings.newest_result_file(folder, DRIVER_NAME, DRIVER_COLUMNS, "a driver-gates file")


def driver_block(folder):
    rf = load_driver(folder)
    if rf is None:
        return ("No committed driver-gates file yet (`results/h200/*_driver_gates.csv`, written by "
                "`scripts/driver_gates.py --out DIR` on the H200 machine).")
    t = rf.table
    n = len(t.rows)
    agree = sum(t.cell(i, "agrees") == "1" for i in range(n))
    first = 0
    lines = [f"From {findings.md_cell(rf.name)} (commit {findings.md_cell(rf.side('git_commit')[:7])}; "
             f"{findings.md_cell(t.cell(first, 'device'))}, compute capability {t.cell(first, 'compute_capability')}, "
             f"driver API {t.cell(first, 'driver')}): {agree}/{n} answers as the documentation predicts.", "",
             "| image | loaded | ran (read back 42) | the driver's answer | predicted | why |",
             "|---|---|---|---|---|---|"]
    for i in range(n):
        verdict = "" if t.cell(i, "agrees") == "1" else " **!**"
        lines.append(f"| {findings.md_cell(t.cell(i, 'case'))} | {'yes' if t.cell(i, 'loaded') == '1' else 'no'} | "
                     f"{'yes' if t.cell(i, 'ran') == '1' else 'no'} | {findings.md_cell(t.cell(i, 'message')) or '-'} | "
                     f"{'runs' if t.cell(i, 'documented') == '1' else 'refused'}{verdict} | "
                     f"{findings.md_cell(t.cell(i, 'why'))} |")
    return "\n".join(lines)


def offers_block(folder):
    """What cuBLASLt's heuristic offers per type pairing (scripts/cublaslt_offers.py)."""
    rf = findings.newest_result_file(folder, OFFERS_NAME, OFFERS_COLUMNS, "a cuBLASLt offers file")
    if rf is None:
        return ("No committed cuBLASLt offers file yet (`results/h200/*_cublaslt_offers.csv`, written by "
                "`scripts/cublaslt_offers.py --out DIR` on the H200 machine).")
    t = rf.table
    n = len(t.rows)
    stated = [i for i in range(n) if t.cell(i, "documented") != ""]
    agree = sum(t.cell(i, "agrees") == "1" for i in stated)
    lines = [f"From {findings.md_cell(rf.name)} (commit {findings.md_cell(rf.side('git_commit')[:7])}; "
             f"{findings.md_cell(t.cell(0, 'device'))}, cuBLASLt {t.cell(0, 'cublaslt_version')}; 4096^3, 32 MiB "
             f"of workspace): {agree}/{len(stated)} answers as the documentation leads one to expect, "
             f"{n - len(stated)} where it states nothing.", "",
             "| A x B -> D | layout | scales (A; B) | heuristic's answer | algorithms | expected | what is expected, "
             "and why |", "|---|---|---|---|---|---|---|"]
    for i in range(n):
        doc = t.cell(i, "documented")
        expected = "-" if doc == "" else ("offered" if doc == "1" else "not offered")
        if doc != "" and t.cell(i, "agrees") != "1":
            expected += " **!**"
        lines.append(f"| {t.cell(i, 'a_type')} x {t.cell(i, 'b_type')} -> {t.cell(i, 'd_type')} | "
                     f"{t.cell(i, 'layout')} | {findings.md_cell(t.cell(i, 'a_scale'))}; "
                     f"{findings.md_cell(t.cell(i, 'b_scale'))} | {t.cell(i, 'status')} | {t.cell(i, 'algorithms')} | "
                     f"{expected} | {findings.md_cell(t.cell(i, 'doc'))} |")
    return "\n".join(lines)


def findings_section(folder, driver_folder=None):
    """FINDINGS.md's section on the gates: the table, then each refusal message
    with its count, the evidence of which gate (target or version) refused."""
    rf = load(folder)
    if rf is None:
        return ""
    lines = ["## The toolchain's version gates (compile half)", "",
             "`scripts/version_gates.py` asks ptxas (at each PTX ISA version from 7.8 to 9.0) and NVRTC which "
             "target takes each feature, and sets each answer beside the PTX ISA document's notes "
             "(docs/version_gates.md). " + block(folder), "",
             "The refusals' messages (a target or version in them shown as #, with one example), by count:", ""]
    for n, example in messages(rf)[:12]:
        lines.append(f"- {n}: {findings.md_cell(example)}")
    if driver_folder is not None and load_driver(driver_folder) is not None:
        lines += ["", "### The run half: what the driver loads", "",
                  "`scripts/driver_gates.py` on the H200 machine: one small kernel as cubins for several targets "
                  "and as PTX for the driver to compile at load time, each loaded, launched and read back. " +
                  driver_block(driver_folder), "", "### What cuBLASLt 13 offers on the H200", "",
                  "`scripts/cublaslt_offers.py`: cuBLASLt's heuristic asked, per type pairing, layout and scaling "
                  "mode, for algorithms (no product computed; the block-scaled modes asked with the mode alone, "
                  "no scale pointers set). " + offers_block(driver_folder)]
    return "\n".join(lines) + "\n"


EMULATE_NAME = re.compile(
    r"_emulate_(?P<path>[a-z0-9_]+?)_(?P<against>library|cublas|cublaslt|k[0-9]+_[a-z0-9_]+|vendor_[a-z0-9_]+)\.csv$")
EMULATE_COLUMNS = ("device", "path", "instruction", "m", "n", "k", "splits", "elements", "identical")


def emulate_block(folder):
    """`rigel emulate --against ...`: the CPU model of a 16-bit path beside the
    device's fp32 output, per (path, what it was set against), the newest
    run of each."""
    newest = {}
    for rf, m in findings.matching_files(folder, EMULATE_NAME, EMULATE_COLUMNS, "an emulate file"):
        key = (m.group("path"), m.group("against"))
        if key not in newest or findings.run_age(rf) > findings.run_age(newest[key]):
            newest[key] = rf
    if not newest:
        return ("No committed comparison yet (`results/h200/*_emulate_<path>_<against>.csv`, written by "
                "`rigel emulate --against ...` on the H200 machine: `scripts/h200_visit.sh emulate`).")
    lines = ["| path | set against | problems | how K is split | elements bit-identical | shapes (M x N x K) | commit | "
             "file |", "|---|---|---|---|---|---|---|---|"]
    for (path, against), rf in sorted(newest.items()):
        t = rf.table
        n = len(t.rows)
        total = sum(findings.parse_int(t.cell(i, "elements")) for i in range(n))
        same = sum(findings.parse_int(t.cell(i, "identical")) for i in range(n))
        splits = ", ".join(split_text(t, i) for i in ordered_rows(t, n))
        shapes = ", ".join(f"{t.cell(i, 'm')}x{t.cell(i, 'n')}x{t.cell(i, 'k')}" for i in range(n))
        what = {"library": "the GEMM library", "cublas": "cuBLAS (cublasGemmEx)", "cublaslt": "cuBLASLt",
                "vendor_cublaslt_e4m3_fastacc": "cuBLASLt with FAST_ACCUM (the ladder's rung)"}.get(
                    against, f"rung {against}")
        if rf.side("model_measured") == "no":  # the path's model was a hypothesis when this ran
            path += " (run while its model was a hypothesis: " + findings.md_cell(rf.side("model")) + ")"
        lines.append(f"| {path} | {what} | {n} | {splits} | {same:,} / {total:,}"
                     f"{'' if same == total else ' **!**'} | {shapes} | {findings.md_cell(rf.side('git_commit')[:7])} | "
                     f"{findings.md_cell(rf.name)} |")
    notes = [interval_note(path, against, rf.table) for (path, against), rf in sorted(newest.items())]
    return "\n".join(lines + [n for n in notes if n])


def interval_note(path, against, t):
    """A vendor library's K cut into equal partials added in order on every
    problem, every element reproduced: the interval, in one sentence (what
    the fp8 GEMM's promotion every so many products of K shows as)."""
    if against == "vendor_cublaslt_e4m3_fastacc":
        return fastacc_note(path, t)
    if against not in ("cublas", "cublaslt") or not t.rows:
        return ""
    n = len(t.rows)
    lengths = set()
    for i in range(n):
        k, splits = findings.parse_int(t.cell(i, "k")), findings.parse_int(t.cell(i, "splits"))
        if splits < 2 or k % splits or t.cell(i, "reduction") != "serial" or \
                t.cell(i, "identical") != t.cell(i, "elements"):
            return ""
        lengths.add(k // splits)
    if len(lengths) != 1:
        return ""
    what = {"cublas": "cuBLAS", "cublaslt": "cuBLASLt"}[against]
    return (f"\n{what} on {path}: on every problem K cut into partials of {lengths.pop()} products, added in fp32 in "
            f"order, every element reproduced.")


def fastacc_note(path, t):
    """cuBLASLt's FAST_ACCUM reproduced on every problem with no promotion
    inside a split of K (each split one chain of the instruction, the splits'
    partials added in order): that, in one sentence, with the splits found."""
    n = len(t.rows)
    if not n or any(t.cell(i, "identical") != t.cell(i, "elements") or t.cell(i, "reduction") != "serial"
                    for i in range(n)):
        return ""
    splits = ", ".join(t.cell(i, "splits") for i in range(n))
    return (f"\ncuBLASLt with FAST_ACCUM on {path}: no promotion; each split of K one uninterrupted chain of the "
            f"instruction, the splits' partials added in fp32 in order (K split {splits} ways), every element "
            f"reproduced.")


def split_text(t, i):
    """How row i's K was split: the count alone for rigel's own split (k-tiles
    of 64, floor shares, partials in order), the whole hypothesis otherwise,
    with a vendor's sample score."""
    splits = findings.parse_int(t.cell(i, "splits"))
    if not t.has("k_tile"):
        return str(splits)
    k_tile, share, red = t.cell(i, "k_tile"), t.cell(i, "share"), t.cell(i, "reduction")
    text = str(splits) if (k_tile, share, red) == ("64", "floor", "serial") or splits == 1 else \
        f"{splits} ({share} shares of {k_tile}-element k-tiles, {'in order' if red == 'serial' else red})"
    if t.cell(i, "sampled"):
        text += f" [inferred: {t.cell(i, 'sample_identical')}/{t.cell(i, 'sampled')} sampled]"
    return text


def ordered_rows(t, n):
    """Row indices whose split text is new, in row order."""
    seen, out = set(), []
    for i in range(n):
        key = split_text(t, i)
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out
