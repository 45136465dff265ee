#!/usr/bin/env python3
"""What cuBLASLt offers on this machine's GPU per type combination: for each
pairing of operand types, output type, layout and scaling mode, how many
algorithms its heuristic returns (cublasLtMatmulAlgoGetHeuristic, 4096^3,
32 MiB of workspace), or the status it refuses with. No matrix is multiplied:
the question is what the library will run, not how fast.

Each case stands beside what cuBLASLt's documentation leads one to expect on
Hopper (compute capability 9.0), where rigel's reading of it says anything:
fp8 operands only as TN (A transposed, B not); e5m2 x e5m2 not offered; the
microscaled modes (32-element UE8M0 scales for mxfp8, 16-element UE4M3 for
nvfp4) and fp4 operands only on compute capability 10.0 and later. Where it
says nothing (the 1 x 128 and 128 x 128 fp32 block scales of DeepSeek-V3's
recipe on sm_90), the answer is recorded as it comes.

    scripts/cublaslt_offers.py [--out DIR] [--commit SHA]

writes DIR/<date>_<commit>_cublaslt_offers.csv with a JSON sidecar. Exit 77
without a GPU or libcublasLt.
"""
import argparse
import ctypes
import platform
import socket
import sys

import version_gates as vg

SKIPPED = 77
# library_types.h and cublasLt.h (CUDA 13.0)
R_32F, R_16F, R_16BF, E4M3, E5M2, E2M1 = 0, 2, 14, 28, 29, 33
TYPE_NAMES = {R_32F: "f32", R_16F: "f16", R_16BF: "bf16", E4M3: "e4m3", E5M2: "e5m2", E2M1: "e2m1"}
COMPUTE_32F = 68
DESC_TRANSA, DESC_TRANSB, DESC_A_SCALE_MODE, DESC_B_SCALE_MODE = 3, 4, 31, 32
PREF_MAX_WORKSPACE_BYTES = 1
SCALAR_32F, VEC16_UE4M3, VEC32_UE8M0, VEC128_32F, BLK128x128_32F = 0, 1, 2, 4, 5
SCALE_NAMES = {SCALAR_32F: "per tensor", VEC16_UE4M3: "16-element UE4M3 (nvfp4)",
               VEC32_UE8M0: "32-element UE8M0 (mxfp8/mxfp4)", VEC128_32F: "1 x 128 fp32",
               BLK128x128_32F: "128 x 128 fp32"}
STATUS = {0: "SUCCESS", 1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE", 8: "ARCH_MISMATCH",
          11: "MAPPING_ERROR", 13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR", 15: "NOT_SUPPORTED",
          16: "LICENSE_ERROR"}
HEURISTIC_RESULT_BYTES = 96  # cublasLtMatmulHeuristicResult_t: algo (64), workspaceSize, state, wavesCount, reserved[4]

# (A, B, C, D, layout, A's scale mode, B's scale mode, expected on sm_90: True offered / False not / None unstated,
#  the documentation's statement or why nothing is expected)
CASES = (
    (R_16BF, R_16BF, R_16BF, R_16BF, "TN", SCALAR_32F, SCALAR_32F, True, "bf16 GEMMs in every layout"),
    (R_16BF, R_16BF, R_16BF, R_16BF, "NN", SCALAR_32F, SCALAR_32F, True, "bf16 GEMMs in every layout"),
    (R_16F, R_16F, R_16F, R_16F, "NN", SCALAR_32F, SCALAR_32F, True, "f16 GEMMs in every layout"),
    (R_16BF, R_16BF, R_32F, R_32F, "NN", SCALAR_32F, SCALAR_32F, True, "bf16 inputs with an fp32 output"),
    (E4M3, E4M3, R_16BF, R_16BF, "TN", SCALAR_32F, SCALAR_32F, True, "fp8 as TN, bf16 output"),
    (E4M3, E4M3, R_16BF, R_16BF, "NN", SCALAR_32F, SCALAR_32F, False, "fp8 operands only as TN on Hopper"),
    (E4M3, E4M3, R_16BF, R_16BF, "NT", SCALAR_32F, SCALAR_32F, False, "fp8 operands only as TN on Hopper"),
    (E4M3, E5M2, R_16BF, R_16BF, "TN", SCALAR_32F, SCALAR_32F, True, "e4m3 x e5m2 is a listed pairing"),
    (E5M2, E4M3, R_16BF, R_16BF, "TN", SCALAR_32F, SCALAR_32F, True, "e5m2 x e4m3 is a listed pairing"),
    (E5M2, E5M2, R_16BF, R_16BF, "TN", SCALAR_32F, SCALAR_32F, False, "e5m2 x e5m2 is not a listed pairing"),
    (E4M3, E4M3, R_32F, R_32F, "TN", SCALAR_32F, SCALAR_32F, True, "fp8 with an fp32 output"),
    (E4M3, E4M3, R_16BF, E4M3, "TN", SCALAR_32F, SCALAR_32F, True, "fp8 output (C in bf16)"),
    (E4M3, E4M3, R_16BF, R_16BF, "TN", VEC128_32F, BLK128x128_32F, None,
     "DeepSeek-V3's block scales (A per 1 x 128, B per 128 x 128): nothing stated for sm_90 in what rigel read"),
    (E4M3, E4M3, R_16BF, R_16BF, "TN", VEC128_32F, VEC128_32F, None,
     "1 x 128 block scales on both operands: nothing stated for sm_90 in what rigel read"),
    (E4M3, E4M3, R_16BF, R_16BF, "TN", VEC32_UE8M0, VEC32_UE8M0, False,
     "mxfp8 (32-element UE8M0 scales): compute capability 10.0 and later"),
    (E2M1, E2M1, R_16BF, R_16BF, "TN", VEC16_UE4M3, VEC16_UE4M3, False,
     "nvfp4 (e2m1 with 16-element UE4M3 scales): compute capability 10.0 and later"),
)


class CublasLt:
    def __init__(self):
        ctypes.CDLL("libcuda.so.1")  # a driver, or no GPU to ask
        self.lib = None
        for name in ("libcublasLt.so.13", "libcublasLt.so"):
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if self.lib is None:
            raise OSError("libcublasLt.so.13 not found")
        self.handle = ctypes.c_void_p()
        st = self.lib.cublasLtCreate(ctypes.byref(self.handle))
        if st != 0:
            raise OSError(f"cublasLtCreate: {STATUS.get(st, st)}")
        self.version = self.lib.cublasLtGetVersion()

    def set_int(self, desc, attr, value):
        v = ctypes.c_int32(value)
        return self.lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(v), ctypes.c_size_t(4))

    def layout(self, dtype, rows, cols):
        lay = ctypes.c_void_p()
        st = self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), dtype, ctypes.c_uint64(rows),
                                                 ctypes.c_uint64(cols), ctypes.c_int64(rows))
        return lay, st

    def offers(self, a, b, c, d, layout, scale_a, scale_b, n=4096):
        """(status name, algorithms returned) for a column-major n^3 product."""
        desc, pref = ctypes.c_void_p(), ctypes.c_void_p()
        made = []
        try:
            st = self.lib.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, R_32F)
            if st != 0:
                return "desc " + STATUS.get(st, str(st)), 0
            ta, tb = (1 if layout[0] == "T" else 0), (1 if layout[1] == "T" else 0)
            for attr, value in ((DESC_TRANSA, ta), (DESC_TRANSB, tb)):
                st = self.set_int(desc, attr, value)
                if st != 0:
                    return "transpose " + STATUS.get(st, str(st)), 0
            for attr, value in ((DESC_A_SCALE_MODE, scale_a), (DESC_B_SCALE_MODE, scale_b)):
                if value != SCALAR_32F:
                    st = self.set_int(desc, attr, value)
                    if st != 0:
                        return "scale mode " + STATUS.get(st, str(st)), 0
            layouts = []
            for dtype in (a, b, c, d):
                lay, st = self.layout(dtype, n, n)
                if st != 0:
                    return "layout " + STATUS.get(st, str(st)), 0
                made.append(lay)
                layouts.append(lay)
            st = self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref))
            ws = ctypes.c_uint64(32 << 20)
            self.lib.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(ws),
                                                          ctypes.c_size_t(8))
            results = ctypes.create_string_buffer(HEURISTIC_RESULT_BYTES * 8)
            count = ctypes.c_int(0)
            st = self.lib.cublasLtMatmulAlgoGetHeuristic(self.handle, desc, layouts[0], layouts[1], layouts[2],
                                                         layouts[3], pref, 8, results, ctypes.byref(count))
            return STATUS.get(st, str(st)), count.value if st == 0 else 0
        finally:
            for lay in made:
                self.lib.cublasLtMatrixLayoutDestroy(lay)
            if pref:
                self.lib.cublasLtMatmulPreferenceDestroy(pref)
            if desc:
                self.lib.cublasLtMatmulDescDestroy(desc)


HEADER = ["run_id", "host", "device", "cublaslt_version", "a_type", "b_type", "c_type", "d_type", "layout",
          "a_scale", "b_scale", "status", "algorithms", "offered", "documented", "agrees", "doc"]


def device_name():
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuInit(0)
    dev = ctypes.c_int()
    cu.cuDeviceGet(ctypes.byref(dev), 0)
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    return name.value.decode()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the CSV and its JSON sidecar (none: print only)")
    ap.add_argument("--commit", help="the commit to name the files after (default: this checkout's HEAD)")
    args = ap.parse_args(argv)
    try:
        lt = CublasLt()
        gpu = device_name()
    except OSError as e:
        print(f"cublaslt_offers: no GPU or cuBLASLt ({e}): skipped", file=sys.stderr)
        return SKIPPED
    run_id, host = vg.make_run_id(), socket.gethostname() or "unknown"
    rows = []
    for a, b, c, d, layout, sa, sb, expected, doc in CASES:
        status, n = lt.offers(a, b, c, d, layout, sa, sb)
        offered = status == "SUCCESS" and n > 0
        rows.append([run_id, host, gpu, lt.version, TYPE_NAMES[a], TYPE_NAMES[b], TYPE_NAMES[c], TYPE_NAMES[d],
                     layout, SCALE_NAMES[sa], SCALE_NAMES[sb], status, n, int(offered),
                     "" if expected is None else int(expected),
                     "" if expected is None else int(offered == expected), doc])
        print(f"{TYPE_NAMES[a]} x {TYPE_NAMES[b]} -> {TYPE_NAMES[d]:<5} {layout}  {SCALE_NAMES[sa]:<16} "
              f"{SCALE_NAMES[sb]:<16} {status:<14} {n} algorithm(s)"
              + ("" if expected is None or offered == expected else "   DISAGREES"))
    commit, dirty = (args.commit, False) if args.commit else vg.default_commit()
    side = {"run_id": run_id, "what": "cublaslt_offers", "tool": "scripts/cublaslt_offers.py", "git_commit": commit,
            "git_dirty": dirty, "cublaslt_version": lt.version, "problem": "4096^3, 32 MiB workspace",
            "environment": {"host": host, "gpu_name": gpu, "os": platform.platform(),
                            "python": platform.python_version()}}
    if args.out:
        vg.write_run(args.out, "cublaslt_offers", HEADER, rows, side)
    return 0


if __name__ == "__main__":
    sys.exit(main())
