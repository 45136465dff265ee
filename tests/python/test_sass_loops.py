"""scripts/sass_loops.py on made-up listings laid out as cuobjdump prints them:
a loop's counts, the lead between an mbarrier's wait and the next wgmma (the
pattern the attention backward had: predicate work hoisted there), no lead
counted after a wgmma wait, the out-of-line retry's return not taken for a
loop, and a kernel not in the listing refused with exit 2."""
import importlib.util
import io
import os
import unittest
from contextlib import redirect_stderr, redirect_stdout

from helpers import TempDirTest

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "sass_loops.py"))
_spec = importlib.util.spec_from_file_location("sass_loops", SCRIPT)
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def listing(name, texts):
    """A listing of one function whose instructions are `texts`, 16 bytes apart; "BRA @n" in a text
    becomes a branch to instruction n's address."""
    lines = ["", "Fatbin elf code:", "================", "arch = sm_90a", "", f"\t\tFunction : {name}"]
    for i, text in enumerate(texts):
        if "@n" in text:
            head, n = text.split("@n")
            text = f"{head}{16 * int(n):#x}"
        lines.append(f"        /*{16 * i:04x}*/                   {text} ;    /* 0x{i:016x} */")
        lines.append(f"                                                      /* 0x{0xFFFF0000 + i:016x} */")
    lines.append("\t\t..........")
    return "\n".join(lines) + "\n"


def kernel(between, after_wait=False):
    """A loop: an mbarrier's wait (or a wgmma wait), `between` predicate instructions, then two wgmma and
    the loop's branch back; then the function's exit and an out-of-line retry returning to the loop."""
    wait = "WARPGROUP.DEPBAR.LE gsb0, 0x0" if after_wait else "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2"
    body = ["MOV R1, RZ", wait, "@!P0 BRA @n" + str(4 + between + 6)]
    body += ["ISETP.GE.AND P1, PT, R3, R4, PT"] * between
    body += ["WARPGROUP.ARRIVE", "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT",
             "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24, gsb0", "MUFU.EX2 R5, R5", "STS [R6], R5",
             "@P2 BRA @n1"]
    body += ["EXIT", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2", "@!P0 BRA @n" + str(len(body) + 1),
             "BRA @n2"]
    return body


class SassLoops(TempDirTest):
    def run_tool(self, text, *args):
        path = os.path.join(self.dir, "listing.txt")
        with open(path, "w") as f:
            f.write(text)
        so, se = io.StringIO(), io.StringIO()
        with redirect_stdout(so), redirect_stderr(se):
            rc = tool.main(["--listing", path, *args])
        return rc, so.getvalue(), se.getvalue()

    def test_hoisted_predicates_are_the_lead(self):
        rc, out, _ = self.run_tool(listing("_Z3bwdv", kernel(70)), "--min", "8")
        self.assertEqual(rc, 0)
        self.assertIn("_Z3bwdv", out)
        loops = [line for line in out.splitlines() if line.strip().startswith("loop")]
        self.assertEqual(len(loops), 1, out)  # the retry's return closes no loop
        self.assertIn("loop 0x0010-0x04e0: 78 instructions, 2 wgmma, 1 MUFU, 70 predicate, 1 shared, 0 local", out)
        # the wait's retry branch and the 70 comparisons
        self.assertIn("lead 71 (70 predicate)  <- work between a wait and the next wgmma", out)

    def test_short_lead_is_not_marked(self):
        rc, out, _ = self.run_tool(listing("_Z3bwdv", kernel(3)), "--min", "8")
        self.assertEqual(rc, 0)
        self.assertIn("lead 4 (3 predicate)", out)
        self.assertNotIn("<-", out)

    def test_work_after_a_wgmma_wait_is_no_lead(self):
        rc, out, _ = self.run_tool(listing("_Z3bwdv", kernel(70, after_wait=True)), "--min", "8")
        self.assertEqual(rc, 0)
        self.assertIn("lead 0 (0 predicate)", out)

    def test_loops_below_the_minimum_are_left_out(self):
        rc, out, _ = self.run_tool(listing("_Z3bwdv", kernel(70)), "--min", "200")
        self.assertEqual(rc, 0)
        self.assertIn("no loop of 200 instructions or more", out)

    def test_missing_kernel_is_refused(self):
        rc, out, err = self.run_tool(listing("_Z3bwdv", kernel(3)), "--kernel", "forward")
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("no function of the listing has 'forward' in its name", err)


if __name__ == "__main__":
    unittest.main()
