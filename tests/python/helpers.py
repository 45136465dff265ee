"""Shared fixtures of the report tests: result files written the way rigel
writes them, in a temporary folder of each test's own."""
import csv
import hashlib
import io
import json
import os
import sys
import tempfile
import unittest

REPRODUCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reproduce")
sys.path.insert(0, os.path.normpath(REPRODUCE))

import findings  # noqa: E402

PROBE_HEADER = findings.PROBE_COLUMNS
TYPED_HEADER = findings.PROBE_COLUMNS + findings.PROBE_TYPED_COLUMNS


def to_csv(header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def probes_csv(run_id, rows, header=PROBE_HEADER):
    return to_csv(header, [[run_id] + list(r) for r in rows])


def sidecar(run_id, commit, dirty=False, questions=None, env=None):
    return json.dumps({"run_id": run_id, "git_commit": commit, "git_dirty": dirty,
                       "questions": questions if questions is not None else {
                           "cvt_saturation": "What do conversions do at the edges?",
                           "fp8_gemm_overflow": "What does overflow write?"},
                       "environment": env if env is not None else {"gpu_name": "NVIDIA H200"}}) + "\n"


# probe, path, dtype, quantity, measured, expected, unit, verified, relation,
# doc_statement, doc_source, detail
RUN_A = [
    ["fp8_gemm_overflow", "cublasLtMatmul", "e4m3", "exact 465 -> D e4m3", "0x7E (448): saturated", "", "", "1",
     "fills_in", "silent", "cuBLAS docs", ""],
    ["cvt_saturation", "cvt.rn.satfinite.e4m3x2.f32", "e4m3", "fp32 1e6 -> e4m3", "0x7E (448)", "0x7E (448)", "", "1",
     "confirms", "sign-preserved MAX_NORM", "PTX ISA", "input 0x49742400"],
    ["cvt_saturation", "cvt.rn.f16.f32", "f16", "fp32 65520 -> f16", "0x7BFF (65504)", "0x7C00 (inf)", "", "1",
     "contradicts", "overflow gives inf", "PTX ISA | IEEE", "a|b"],
]
RUN_B = [
    ["cvt_saturation", "cvt.rn.satfinite.e2m1x2.f32", "e2m1", "fp32 -> e2m1 conversion instruction", "not available",
     "", "", "0", "not_available", "exists only on sm_100a", "PTX ISA", ""],
    ["broken_probe", "", "", "probe failed", "", "", "", "0", "error", "", "", "cudaMalloc failed"],
]

LADDER_HEADER = ["run_id", "rung", "backend", "group", "dtype", "m", "n", "k", "status", "vendor", "gflops"]
LADDER_ROWS = [
    ["L", "cublas_f16", "cuda", "vendor", "f16", "4096", "4096", "4096", "PASS", "1", "700000"],
    ["L", "cublaslt_fp8", "cuda", "vendor", "e4m3", "4096", "4096", "4096", "PASS", "1", "1260000"],
    ["L", "k30_wgmma", "cuda", "hopper", "f16", "4096", "4096", "4096", "PASS", "0", "780000"],
    ["L", "k30_wgmma", "cuda", "hopper", "e4m3", "4096", "4096", "4096", "PASS", "0", "900000"],
    ["L", "k31_broken", "cuda", "hopper", "e4m3", "4096", "4096", "4096", "FAIL", "0", "5000000"],
    ["L", "k01_cpu_naive", "cpu", "cpu", "f32", "512", "512", "512", "PASS", "0", "2"],
]


def ladder_csv(header=LADDER_HEADER, rows=LADDER_ROWS):
    return to_csv(header, rows)


def result(name, csv_text, side_text=None):
    """A ResultFile as load_results builds it, from text."""
    side = None
    if side_text is not None:
        side = json.loads(side_text)
        findings.check_sidecar(side, name.replace(".csv", ".json"))
    return findings.make_result_file(name, csv_text.encode("utf-8"), side)


def sample_input(reversed_order=False):
    fin = findings.FindingsInput()
    fin.probes.append(result("2026-11-29_aaaaaaa_probes.csv", probes_csv("RUN-A", RUN_A),
                             sidecar("RUN-A", "aaaaaaa1111111111111111111111111111111111")))
    fin.probes.append(result("2026-11-30_bbbbbbb_probes.csv", probes_csv("RUN-B", RUN_B),
                             sidecar("RUN-B", "bbbbbbb2222222222222222222222222222222222", dirty=True)))
    if reversed_order:
        fin.probes.reverse()
    return fin


class TempDirTest(unittest.TestCase):
    """Each test gets its own temporary folder, removed afterwards."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="rigel_report_test_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, content, folder=None):
        path = os.path.join(folder or self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode("utf-8"))
        return path


def tree_snapshot(tree):
    """{relative path: sha256} of every file under `tree`."""
    out = {}
    for folder, _, files in os.walk(tree):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, tree)] = hashlib.sha256(f.read()).hexdigest()
    return out
