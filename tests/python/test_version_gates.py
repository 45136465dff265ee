"""The version gates' logic (scripts/version_gates.py), without a toolchain:
the kernels it writes name the instruction, the target and the version; the
document's statement as a predicate (a target's own introduction counted); the
first diagnostic line freed of file names; the summary's cells; the CSV and
sidecar it writes. The gates themselves run as their own test (ctest
version_gates), where a toolchain is staged."""
import csv
import json
import os
import sys
import unittest

from helpers import TempDirTest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import version_gates as vg  # noqa: E402


def gate(name):
    return next(g for g in vg.GATES if g.feature == name)


class Kernels(unittest.TestCase):
    def test_the_ptx_module_names_version_target_and_instruction(self):
        text = vg.ptx_module(gate("wgmma"), "sm_90a", "8.0")
        self.assertTrue(text.startswith(".version 8.0\n.target sm_90a\n"))
        self.assertIn("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", text)
        self.assertIn(".visible .entry gate(", text)

    def test_the_cuda_source_carries_the_same_body(self):
        src = vg.cuda_source(gate("elect_sync"))
        self.assertIn('extern "C" __global__ void gate', src)
        self.assertIn("elect.sync r|p, 0xffffffff;", src)

    def test_every_feature_is_documented_somewhere(self):
        for g in vg.GATES:
            self.assertTrue(g.allowed, g.feature)
            self.assertTrue(set(g.allowed) <= set(vg.TARGETS), g.feature)


class Documented(unittest.TestCase):
    def test_an_accelerated_feature_only_on_its_target(self):
        w = gate("wgmma")
        self.assertTrue(vg.documented(w, "sm_90a", "8.0"))
        self.assertFalse(vg.documented(w, "sm_90a", "7.8"))
        self.assertFalse(vg.documented(w, "sm_90", "9.0"))
        self.assertFalse(vg.documented(w, "sm_100a", None))

    def test_a_baseline_feature_on_every_later_target_once_the_target_exists(self):
        s = gate("stmatrix")
        self.assertTrue(vg.documented(s, "sm_90", "7.8"))
        self.assertFalse(vg.documented(s, "sm_89", "9.0"))
        # sm_100a exists from PTX ISA 8.6 only.
        self.assertFalse(vg.documented(s, "sm_100a", "8.5"))
        self.assertTrue(vg.documented(s, "sm_100a", "8.6"))

    def test_a_per_target_version(self):
        c = gate("cvt_e4m3")
        self.assertTrue(vg.documented(c, "sm_90", "7.8"))
        self.assertFalse(vg.documented(c, "sm_89", "8.0"))
        self.assertTrue(vg.documented(c, "sm_89", "8.1"))

    def test_versions_compare_as_numbers(self):
        self.assertGreater(vg.version_key("8.10"), vg.version_key("8.9"))


class Messages(unittest.TestCase):
    def test_ptxas_file_and_line_are_dropped(self):
        text = ("ptxas /tmp/x/gate.ptx, line 12; error   : Instruction 'wgmma.fence' not supported on .target 'sm_90'\n"
                "ptxas fatal   : Ptx assembly aborted due to errors\n")
        self.assertEqual(vg.first_message(text), "error : Instruction 'wgmma.fence' not supported on .target 'sm_90'")

    def test_nvrtc_file_is_dropped(self):
        self.assertEqual(vg.first_message("gate.cu(3): error: identifier x is undefined\n"),
                         "error: identifier x is undefined")

    def test_nothing_to_say(self):
        self.assertEqual(vg.first_message(""), "")


def rows_for(feature, accepted_from):
    """Fake ptxas rows: `feature` accepted on sm_90a from PTX ISA `accepted_from`, nowhere else."""
    g = gate(feature)
    out = []
    for t in vg.TARGETS:
        for v in vg.PTX_VERSIONS:
            ok = t == "sm_90a" and vg.version_key(v) >= vg.version_key(accepted_from)
            doc = vg.documented(g, t, v)
            out.append(["r", "h", "ptxas", "13.0", g.feature, g.instruction, t, v, int(ok), int(doc), int(ok == doc),
                        "", g.doc])
    return out


class Summary(TempDirTest):
    def test_the_lowest_accepted_version_and_disagreements(self):
        text = vg.summary(rows_for("wgmma", "8.0") + rows_for("setmaxnreg", "8.0"))
        wgmma = next(line for line in text.splitlines() if line.startswith("wgmma"))
        self.assertEqual(wgmma.split(), ["wgmma", "-", "-", "-", "8.0", "-", "-"])
        # setmaxnreg is documented on sm_100a and sm_120a too: refused there, it disagrees.
        setmaxnreg = next(line for line in text.splitlines() if line.startswith("setmaxnreg"))
        self.assertEqual(setmaxnreg.split(), ["setmaxnreg", "-", "-", "-", "8.0", "-!", "-!"])

    def test_the_csv_and_sidecar(self):
        rows = rows_for("wgmma", "8.0")
        side = {"run_id": "r", "git_commit": "abcdef1234", "environment": {}}
        path = vg.write_results(self.dir, rows, side)
        self.assertTrue(os.path.basename(path).endswith("_abcdef1_version_gates.csv"))
        with open(path) as f:
            read = list(csv.reader(f))
        self.assertEqual(read[0], vg.HEADER)
        self.assertEqual(len(read), 1 + len(rows))
        with open(path[:-4] + ".json") as f:
            meta = json.load(f)
        self.assertEqual((meta["rows"], meta["csv"]), (len(rows), os.path.basename(path)))


if __name__ == "__main__":
    unittest.main()
