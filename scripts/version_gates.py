#!/usr/bin/env python3
"""The toolchain's version gates: which PTX features ptxas and NVRTC accept for
which target and PTX ISA version, and with which message they refuse.

For each feature (one instruction, in a minimal kernel that uses it) and each
target (sm_80, sm_89, sm_90, sm_90a, sm_100a, sm_120a):
  - ptxas assembles the kernel written at each PTX ISA version (.version 7.8 to
    9.0): accepted, or refused with its first message;
  - NVRTC compiles the same instruction as inline assembly in CUDA C++ for the
    target, to a cubin (its own PTX ISA version, the newest it writes).
Each row also holds what the PTX ISA document (version 9.1, the "PTX ISA
Notes" and "Target ISA Notes" of each instruction, and the .target
directive's table of targets) states for the feature (GATES and TARGET_SINCE
below) and whether the toolchain's answer agrees with that statement. No GPU is needed: this is the
compile half of the gates; the driver's half (which cubins and PTX it loads)
runs on the H200 machine.

The toolchain is found in this order: --ptxas / --nvrtc; .deps/toolchain
(scripts/stage_toolchain.sh stages ptxas and NVRTC 13.0 from their PyPI
wheels, which is how CI gets them); $CUDA_HOME; /usr/local/cuda. Without one,
the script says so and exits 77 (skipped).

    scripts/version_gates.py [--out DIR] [--ptxas PATH] [--nvrtc PATH] [--commit SHA] [--check]

writes DIR/<date>_<commit>_version_gates.csv with a JSON sidecar (the
toolchain's versions) and prints one table: per feature and target, the
lowest PTX ISA version ptxas accepts.
"""
import argparse
import ctypes
import csv
import datetime
import io
import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a")
PTX_VERSIONS = ("7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "9.0")
# The PTX ISA version that introduced each target (the document's table of
# targets): a module of an older .version cannot name it at all.
TARGET_SINCE = {"sm_80": "7.0", "sm_89": "7.8", "sm_90": "7.8", "sm_90a": "8.0", "sm_100a": "8.6", "sm_120a": "8.7"}
SKIPPED = 77


@dataclass(frozen=True)
class Gate:
    """One feature: its instruction, the kernel body using it (PTX, with the
    registers it needs), and what the PTX ISA document says it requires."""
    feature: str
    instruction: str
    body: str
    allowed: dict  # target -> the PTX ISA version from which the document allows the feature there
    doc: str       # the statement, in short


def version_key(v):
    return tuple(int(x) for x in v.split("."))


# A baseline feature of sm_XX since PTX ISA `since`: every later target takes
# it, the accelerated "a" targets included (they carry their major's baseline).
def from_sm(major_minor, since):
    return {t: since for t in TARGETS if int(re.sub(r"\D", "", t)) >= major_minor}


GATES = (
    Gate("wgmma", "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16",
         """.reg .f32 d<4>; .reg .b64 da, db; .reg .pred p;
    mov.b64 da, 0; mov.b64 db, 0; setp.ne.b32 p, 0, 0;
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {d0, d1, d2, d3}, da, db, p, 1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;""",
         {"sm_90a": "8.0"}, "introduced in PTX ISA 8.0; requires sm_90a (an accelerated feature of sm_90 only)"),
    Gate("setmaxnreg", "setmaxnreg.inc.sync.aligned.u32",
         "setmaxnreg.inc.sync.aligned.u32 232;",
         {"sm_90a": "8.0", "sm_100a": "8.6", "sm_120a": "8.7"},
         "introduced in PTX ISA 8.0 for sm_90a; sm_100a and sm_120a from PTX ISA 8.6 (the f targets from 8.8)"),
    Gate("mma_fp8", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
         """.reg .f32 d<4>; .reg .b32 a<4>, b<2>;
    mov.b32 a0, 0; mov.b32 a1, 0; mov.b32 a2, 0; mov.b32 a3, 0; mov.b32 b0, 0; mov.b32 b1, 0;
    mov.f32 d0, 0f00000000; mov.f32 d1, 0f00000000; mov.f32 d2, 0f00000000; mov.f32 d3, 0f00000000;
    mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {d0, d1, d2, d3}, {a0, a1, a2, a3}, {b0, b1}, {d0, d1, d2, d3};""",
         from_sm(89, "8.4"), "the e4m3/e5m2 forms of mma.sync: introduced in PTX ISA 8.4; require sm_89 or higher"),
    Gate("cp_async_bulk_tensor", "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
         """.reg .b32 c0, c1;
    mov.b32 c0, 0; mov.b32 c1, 0;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [tmap, {c0, c1}], [bar];""",
         from_sm(90, "8.0"), "introduced in PTX ISA 8.0; requires sm_90 or higher"),
    Gate("multicast", "cp.async.bulk.tensor ... .multicast::cluster",
         """.reg .b32 c0, c1; .reg .b16 mask;
    mov.b32 c0, 0; mov.b32 c1, 0; mov.b16 mask, 3;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [buf], [tmap, {c0, c1}], [bar], mask;""",
         from_sm(90, "8.0"), "introduced with cp.async.bulk.tensor in PTX ISA 8.0; sm_90 or higher (advised only on "
                            "sm_90a and the sm_100/sm_110 a and f targets: elsewhere it may be much slower)"),
    Gate("stmatrix", "stmatrix.sync.aligned.m8n8.x4.shared.b16",
         """.reg .b32 r<4>;
    mov.b32 r0, 0; mov.b32 r1, 0; mov.b32 r2, 0; mov.b32 r3, 0;
    stmatrix.sync.aligned.m8n8.x4.shared.b16 [buf], {r0, r1, r2, r3};""",
         from_sm(90, "7.8"), "introduced in PTX ISA 7.8; requires sm_90 or higher"),
    Gate("elect_sync", "elect.sync",
         """.reg .b32 r; .reg .pred p;
    elect.sync r|p, 0xffffffff;""",
         from_sm(90, "8.0"), "introduced in PTX ISA 8.0; requires sm_90 or higher"),
    Gate("cvt_e4m3", "cvt.rn.satfinite.e4m3x2.f32",
         """.reg .b16 h; .reg .f32 x, y;
    mov.f32 x, 0f3F800000; mov.f32 y, 0f40000000;
    cvt.rn.satfinite.e4m3x2.f32 h, x, y;""",
         dict(from_sm(90, "7.8"), sm_89="8.1"),
         "introduced in PTX ISA 7.8 for sm_90; sm_89 from PTX ISA 8.1"),
    Gate("cvt_e2m1", "cvt.rn.satfinite.e2m1x2.f32",
         """.reg .b8 q; .reg .f32 x, y;
    mov.f32 x, 0f3F800000; mov.f32 y, 0f40000000;
    cvt.rn.satfinite.e2m1x2.f32 q, x, y;""",
         {"sm_100a": "8.6", "sm_120a": "8.7"}, "the fp4 type .e2m1: introduced in PTX ISA 8.6; sm_100a, sm_110a (was sm_101a), sm_120a"),
    Gate("mma_block_scale", "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X",
         """.reg .f32 d<4>; .reg .b32 a<4>, b<2>, sa, sb; .reg .b16 z;
    mov.b32 a0, 0; mov.b32 a1, 0; mov.b32 a2, 0; mov.b32 a3, 0; mov.b32 b0, 0; mov.b32 b1, 0;
    mov.b32 sa, 0x7f7f7f7f; mov.b32 sb, 0x7f7f7f7f; mov.b16 z, 0;
    mov.f32 d0, 0f00000000; mov.f32 d1, 0f00000000; mov.f32 d2, 0f00000000; mov.f32 d3, 0f00000000;
    mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0 {d0, d1, d2, d3}, {a0, a1, a2, a3}, {b0, b1}, {d0, d1, d2, d3}, sa, {z, z}, sb, {z, z};""",
         {"sm_120a": "8.7"}, "block-scaled mma.sync (mxf4): introduced in PTX ISA 8.7; sm_120a (not sm_100a, whose block "
         "scaling is tcgen05.mma's)"),
    Gate("tcgen05", "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
         """tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;""",
         {"sm_100a": "8.6"}, "introduced in PTX ISA 8.6; sm_100a and sm_110a (was sm_101a), not sm_90 or sm_120"),
)

MODULE = """.version {version}
.target {target}
.address_size 64

.visible .entry gate(.param .u64 .ptr .align 64 tmap_param)
{{
    .shared .align 128 .b8 buf[1024];
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 slot;
    .reg .b64 tmap;
    ld.param.u64 tmap, [tmap_param];
    {body}
    ret;
}}
"""


def ptx_module(gate, target, version):
    return MODULE.format(version=version, target=target, body=gate.body)


def cuda_source(gate):
    """The gate's instruction as inline assembly in a CUDA C++ kernel (for
    NVRTC): the same PTX body, its shared buffers declared inside the asm."""
    body = gate.body.replace("\n", "\n        ")
    asm = ("{\n .reg .b64 tmap;\n mov.b64 tmap, %0;\n .shared .align 128 .b8 buf[1024];\n"
           " .shared .align 8 .b64 bar;\n .shared .align 4 .b32 slot;\n " + body + "\n}")
    lines = "".join(f'        "{line}\\n"\n' for line in asm.replace('"', '\\"').splitlines())
    return ('extern "C" __global__ void gate(const void* tmap) {\n    asm volatile(\n' + lines +
            '        :: "l"(tmap) : "memory");\n}\n')


def documented(gate, target, version):
    """Whether the document allows the feature for this target at this PTX ISA
    version (None: NVRTC's own, the newest), the target's own introduction
    counted."""
    if target not in gate.allowed:
        return False
    if version is None:
        return True
    return version_key(version) >= max(version_key(gate.allowed[target]), version_key(TARGET_SINCE[target]))


def first_message(text):
    """The first diagnostic line, without the temporary file's name and line."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("ptxas fatal") and "aborted" in line:
            continue
        line = re.sub(r"^ptxas\s+[^,]*, line \d+;\s*", "", line)
        line = re.sub(r"^[^:]*\.cu\(\d+\):\s*", "", line)
        return re.sub(r"\s+", " ", line)[:200]
    return ""


# ---- the tools ------------------------------------------------------------------------------


def find_ptxas(explicit):
    for cand in ([explicit] if explicit else []) + [
            os.path.join(ROOT, ".deps", "toolchain", "bin", "ptxas"),
            os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "ptxas") if os.environ.get("CUDA_HOME") else "",
            "/usr/local/cuda/bin/ptxas", shutil.which("ptxas") or ""]:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def find_nvrtc(explicit):
    dirs = [os.path.join(ROOT, ".deps", "toolchain", "lib")]
    if os.environ.get("CUDA_HOME"):
        dirs.append(os.path.join(os.environ["CUDA_HOME"], "lib64"))
    dirs.append("/usr/local/cuda/lib64")
    for cand in ([explicit] if explicit else []) + [os.path.join(d, n) for d in dirs
                                                    for n in ("libnvrtc.so.13", "libnvrtc.so")]:
        if cand and os.path.isfile(cand):
            return cand
    return None


def ptxas_version(ptxas):
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\S+), V(\S+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def run_ptxas(ptxas, source, target, workdir):
    path = os.path.join(workdir, "gate.ptx")
    with open(path, "w") as f:
        f.write(source)
    r = subprocess.run([ptxas, f"-arch={target}", path, "-o", os.path.join(workdir, "gate.cubin")],
                       capture_output=True, text=True)
    return r.returncode == 0, first_message(r.stderr + r.stdout)


class Nvrtc:
    """NVRTC through its C API (ctypes): CUDA C++ to a cubin for one target."""

    def __init__(self, path):
        # NVRTC opens its builtins library by name at its first compile; the
        # one beside it is loaded first, so that name finds it (a staged
        # toolchain is on no library path).
        builtins = os.path.join(os.path.dirname(path), "libnvrtc-builtins.so.13.0")
        if os.path.isfile(builtins):
            ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"{major.value}.{minor.value}"

    def compile(self, source, target):
        prog = ctypes.c_void_p()
        if self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"gate.cu", 0, None, None) != 0:
            return False, "nvrtcCreateProgram failed"
        try:
            opts = [f"--gpu-architecture={target}".encode()]
            rc = self.lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
            size = ctypes.c_size_t()
            self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            self.lib.nvrtcGetProgramLog(prog, log)
            text = log.value.decode(errors="replace")
            if rc != 0:
                return False, first_message(text) or f"nvrtcCompileProgram returned {rc}"
            cubin = ctypes.c_size_t()
            if self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(cubin)) != 0 or cubin.value == 0:
                return False, "no cubin"
            return True, first_message(text)
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ---- the run ----------------------------------------------------------------------------------


HEADER = ["run_id", "host", "tool", "tool_version", "feature", "instruction", "target", "ptx_version",
          "accepted", "documented", "agrees", "message", "doc"]


def run_gates(ptxas, nvrtc, run_id, host):
    rows = []
    pv = ptxas_version(ptxas)
    with tempfile.TemporaryDirectory() as work:
        for g in GATES:
            for target in TARGETS:
                for version in PTX_VERSIONS:
                    ok, msg = run_ptxas(ptxas, ptx_module(g, target, version), target, work)
                    doc_ok = documented(g, target, version)
                    rows.append([run_id, host, "ptxas", pv, g.feature, g.instruction, target, version, int(ok),
                                 int(doc_ok), int(ok == doc_ok), msg, g.doc])
                if nvrtc is not None:
                    ok, msg = nvrtc.compile(cuda_source(g), target)
                    doc_ok = documented(g, target, None)
                    rows.append([run_id, host, "nvrtc", nvrtc.version, g.feature, g.instruction, target, "",
                                 int(ok), int(doc_ok), int(ok == doc_ok), msg, g.doc])
    return rows


def summary(rows):
    """Per feature and target: the lowest PTX ISA version ptxas accepts ('-'
    for none), NVRTC's answer, and '!' where either disagrees with the
    document."""
    lines = [f"{'feature':<22}" + "".join(f"{t:>12}" for t in TARGETS)]
    for g in GATES:
        cells = []
        for t in TARGETS:
            ptx = [r for r in rows if r[2] == "ptxas" and r[4] == g.feature and r[6] == t]
            nv = [r for r in rows if r[2] == "nvrtc" and r[4] == g.feature and r[6] == t]
            lowest = next((r[7] for r in ptx if r[8]), "-")
            mark = "" if all(r[10] for r in ptx + nv) else "!"
            nv_text = ("/y" if nv[0][8] else "/n") if nv else ""
            cells.append(f"{lowest + nv_text + mark:>12}")
        lines.append(f"{g.feature:<22}" + "".join(cells))
    return "\n".join(lines)


def make_run_id():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def default_commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip() != ""
        return (out.stdout.strip() or "unknown"), dirty
    except OSError:
        return "unknown", False


def write_table(out_dir, stem, header, rows, side):
    """DIR/<stem>.csv and its sidecar <stem>.json (side, with the CSV's name and
    row count), each written whole through a temporary file."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    os.makedirs(out_dir, exist_ok=True)
    for name, text in ((stem + ".csv", buf.getvalue()),
                       (stem + ".json", json.dumps(dict(side, csv=stem + ".csv", rows=len(rows)), indent=2) + "\n")):
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out_dir, name))
    return os.path.join(out_dir, stem + ".csv")


def write_run(out_dir, tag, header, rows, side):
    """DIR/<UTC date>_<commit>_<tag>.csv and its sidecar, named as rigel names
    its result files; says where it wrote them and returns the CSV's path."""
    stem = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}_{side['git_commit'][:7]}_{tag}"
    path = write_table(out_dir, stem, header, rows, side)
    print(f"{tag.replace('_', ' ')}: wrote {len(rows)} rows to {path}", file=sys.stderr)
    return path


def write_results(out_dir, rows, side):
    return write_run(out_dir, "version_gates", HEADER, rows, side)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the CSV and its JSON sidecar (none: print only)")
    ap.add_argument("--ptxas", help="the ptxas to ask")
    ap.add_argument("--nvrtc", help="the libnvrtc.so to ask")
    ap.add_argument("--commit", help="the commit to name the files after (default: this checkout's HEAD)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 where the toolchain disagrees with the document (the test CI runs)")
    args = ap.parse_args(argv)
    ptxas = find_ptxas(args.ptxas)
    if ptxas is None:
        print("version_gates: no ptxas found (scripts/stage_toolchain.sh stages one; or pass --ptxas): skipped",
              file=sys.stderr)
        return SKIPPED
    nvrtc_path = find_nvrtc(args.nvrtc)
    nvrtc = None
    if nvrtc_path is not None:
        try:
            nvrtc = Nvrtc(nvrtc_path)
        except OSError as e:
            print(f"version_gates: NVRTC at {nvrtc_path} does not load ({e}); ptxas only", file=sys.stderr)
    run_id, host = make_run_id(), socket.gethostname() or "unknown"
    rows = run_gates(ptxas, nvrtc, run_id, host)
    commit, dirty = (args.commit, False) if args.commit else default_commit()
    side = {"run_id": run_id, "what": "version_gates", "tool": "scripts/version_gates.py", "git_commit": commit,
            "git_dirty": dirty, "ptxas": ptxas, "ptxas_version": ptxas_version(ptxas),
            "nvrtc": nvrtc_path if nvrtc else "", "nvrtc_version": nvrtc.version if nvrtc else "",
            "targets": list(TARGETS), "ptx_versions": list(PTX_VERSIONS),
            "environment": {"host": host, "os": platform.platform(), "python": platform.python_version()}}
    if args.out:
        write_results(args.out, rows, side)
    print(f"ptxas {side['ptxas_version']}" + (f", NVRTC {nvrtc.version}" if nvrtc else ", no NVRTC") +
          ": the lowest PTX ISA version ptxas accepts per target (/y, /n: NVRTC's cubin; !: disagrees with the "
          "PTX ISA document)")
    print(summary(rows))
    disagree = [r for r in rows if not r[HEADER.index("agrees")]]
    for r in disagree:
        print(f"version_gates: {r[2]} {r[4]} on {r[6]}" + (f" at PTX ISA {r[7]}" if r[7] else "") +
              f": {'accepted' if r[8] else 'refused'}, the document says {'yes' if r[9] else 'no'} ({r[11]})",
              file=sys.stderr)
    if args.check and disagree:
        print(f"version_gates: {len(disagree)} answer(s) disagree with the PTX ISA document", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
