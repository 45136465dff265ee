"""NCCL's all-reduce bus bandwidth on the node (`rigel launch --nproc N --
rigel dist allreduce`), beside what NVLink 4 offers: FINDINGS.md's section
"NCCL all-reduce across the node's GPUs", from the newest committed
*_nccl_allreduce.csv whose run had two ranks or more (one rank crosses no
link). Bus bandwidth is nccl-tests' convention, algbw x 2 (n - 1) / n: what a
ring all-reduce moves over each GPU's links in one direction, so its ceiling
is one direction of the GPU's NVLink bandwidth."""
import glob
import os

import findings

SUFFIX = "_nccl_allreduce.csv"
# A name already taken: rigel then claims <stem>_nccl_allreduce_<run id>.csv (a second run of one commit
# and date, as a visit's dist_one and dist_node steps make).
INFIX = "_nccl_allreduce_"
# NVIDIA H200 SXM datasheet: NVLink 900 GB/s per GPU, the two directions together.
NVLINK_GBS_ONE_WAY = 450.0
NVLINK_SOURCE = "NVIDIA H200 datasheet: NVLink 900 GB/s per GPU, both directions together"


def load(folder):
    files = []
    paths = glob.glob(os.path.join(folder, "*" + SUFFIX)) + glob.glob(os.path.join(folder, "*" + INFIX + "*.csv"))
    for path in sorted(set(paths)):
        f = findings.read_result_file(path)
        for col in ("ranks", "bytes", "busbw_gbs", "algbw_gbs", "seconds"):
            if not f.table.has(col):
                raise findings.FindingsError(f"{path}: not an all-reduce CSV (no column '{col}')")
        files.append(f)
    return files


def section(files):
    multi = [f for f in files if any(findings.parse_int(f.table.cell(i, "ranks")) >= 2
                                     for i in range(len(f.table.rows)))]
    if not multi:
        return ""
    f = max(multi, key=findings.run_age)
    t = f.table
    out = ["## NCCL all-reduce across the node's GPUs", "",
           f"`rigel dist allreduce` under `rigel launch` ({findings.md_cell(f.name)}, commit "
           f"{findings.md_cell(f.side('git_commit')[:7])}): fp32 sums in place, the median of 5 batches. Bus "
           "bandwidth is the algorithm bandwidth times 2 (n - 1) / n, what a ring moves over each GPU's links in "
           f"one direction; beside it, the share of one direction of NVLink 4 ({NVLINK_SOURCE}: "
           f"{NVLINK_GBS_ONE_WAY:.0f} GB/s each way).", "",
           "| message | ranks | time (us) | algorithm GB/s | bus GB/s | of NVLink's one way |", "|---|---|---|---|---|---|"]
    for i in range(len(t.rows)):
        size = findings.parse_int(t.cell(i, "bytes"))
        bus = findings.parse_number(t.cell(i, "busbw_gbs"))
        secs = findings.parse_number(t.cell(i, "seconds"))
        alg = findings.parse_number(t.cell(i, "algbw_gbs"))
        if bus is None or secs is None or alg is None:
            continue
        shown = f"{size / 2**20:g} MiB" if size >= 2**20 else f"{size / 2**10:g} KiB"
        out.append(f"| {shown} | {t.cell(i, 'ranks')} | {secs * 1e6:.1f} | {alg:.1f} | {bus:.1f} | "
                   f"{bus / NVLINK_GBS_ONE_WAY:.0%} |")
    return "\n".join(out) + "\n"
