"""scripts/ncu_sass_hotspots.py on a small source page laid out as Nsight
Compute prints it: ncu's messages before the header skipped, the lines with
the most samples first with their largest reasons, a region's share summed,
each reason's samples over every line, and a page without the header refused with its first lines."""
import importlib.util
import io
import os
import unittest
from contextlib import redirect_stderr, redirect_stdout

from helpers import TempDirTest

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "ncu_sass_hotspots.py"))
_spec = importlib.util.spec_from_file_location("ncu_sass_hotspots", SCRIPT)
hotspots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hotspots)

PAGE = """==PROF== Connected to process 1
==PROF== Disconnected from process 1
"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","stall_wait","stall_long_sb"
"0x0b30","MOV R8, R4 ;","10","5","2","0"
"0x0bc0","SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R6+URZ], R5 ;","600","590","0","0"
"0x1250","HGMMA.64x128x16.F32.BF16 R88, gdesc[UR28], R88 ;","300","100","250","0"
"0x2000","STG.E [R2], R4 ;","90","80","0","70"
"""


class Hotspots(TempDirTest):
    def run_on(self, text, *args):
        self.write("page.csv", text)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = hotspots.main([f"{self.dir}/page.csv", *args])
        return rc, out.getvalue(), err.getvalue()

    def test_top_lines_and_a_region(self):
        rc, out, _ = self.run_on(PAGE, "--top", "2", "--region", "mainloop:0b30-1250")
        self.assertEqual(rc, 0)
        self.assertIn("4 instructions, 1000 warp-state samples", out)
        self.assertIn("region mainloop [0xb30, 0x1250]: 91.0% of the samples", out)
        # Every line's reasons summed, the lines left out of the top 2 (MOV, STG) included.
        self.assertIn("all instructions, by reason: stall_wait 252 (25.2%), stall_long_sb 70 (7.0%)", out)
        lines = [l for l in out.splitlines() if l.strip().startswith("0x")]
        self.assertEqual(len(lines), 2)
        self.assertIn("TRYWAIT", lines[0])
        self.assertIn("60.00%", lines[0])
        self.assertIn("stall_wait 250", lines[1])
        self.assertNotIn("STG", out)

    def test_a_page_without_the_header(self):
        rc, out, err = self.run_on("==PROF== nothing profiled\n")
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn("no source-page header", err)
        self.assertIn("nothing profiled", err)

    def test_a_bad_region(self):
        with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            hotspots.main(["x.csv", "--region", "loop:zz-10"])


if __name__ == "__main__":
    unittest.main()
