"""scripts/sass_ffma_yield.py on a made-up binary and its listing, laid out as
cuobjdump prints it: the chosen function found by its bytes and only its
FFMAs' control words edited (reuse flags and the yield bit, per mode), other
functions and instructions left as they were, and a function that is missing
or occurs twice refused with exit 2 and OUT not written."""
import importlib.util
import io
import os
import unittest
from contextlib import redirect_stderr, redirect_stdout

from helpers import TempDirTest

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "sass_ffma_yield.py"))
_spec = importlib.util.spec_from_file_location("sass_ffma_yield", SCRIPT)
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

REUSED_NO_YIELD = 0x080FE2000000008A  # a reuse flag (bit 59) and bit 45 set
PLAIN_YIELD = 0x000FC2000000008B      # neither
NO_YIELD = 0x000FE2000000008C         # bit 45 alone

# (function name, [(instruction text, first word, control word)])
KERNEL = ("_Z6k38_kernelv", [
    ("LDC R1, c[0x0][0x28]", 0x00000A00FF017B82, 0x000FE20000000800),
    ("FFMA R138, R24, R157.reuse, R138", 0x0000009D188A7223, REUSED_NO_YIELD),
    ("FFMA R139, R25, R157, R139", 0x0000009D198B7223, PLAIN_YIELD),
    ("@!P0 FFMA R140, R26, R157, R140", 0x0000009D1A8C8223, NO_YIELD),
    ("FADD R141, R27, R141", 0x0000008D1B8D7221, REUSED_NO_YIELD),
])
OTHER = ("_Z5otherv", [
    ("FFMA R2, R3, R4.reuse, R2", 0x0000000403027223, REUSED_NO_YIELD),
    ("EXIT", 0x000000000000794D, 0x000FEA0003800000),
])


def listing(*functions):
    lines = ["", "Fatbin elf code:", "================", "arch = sm_90a", ""]
    for name, code in functions:
        lines.append(f"\t\tFunction : {name}")
        lines.append("\t.headerflags\t@\"EF_CUDA_SM90\"")
        for i, (text, lo, hi) in enumerate(code):
            lines.append(f"        /*{16 * i:04x}*/                   {text} ;    /* 0x{lo:016x} */")
            lines.append(f"                                                      /* 0x{hi:016x} */")
        lines.append("\t\t..........")
    return "\n".join(lines) + "\n"


def code_bytes(code):
    return b"".join(lo.to_bytes(8, "little") + hi.to_bytes(8, "little") for _, lo, hi in code)


class SassFfmaYield(TempDirTest):
    def run_tool(self, blob, text, *args):
        binary, out, lst = (os.path.join(self.dir, n) for n in ("bin", "out", "listing.txt"))
        with open(binary, "wb") as f:
            f.write(blob)
        with open(lst, "w") as f:
            f.write(text)
        so, se = io.StringIO(), io.StringIO()
        with redirect_stdout(so), redirect_stderr(se):
            rc = tool.main([binary, out, "--listing", lst, *args])
        data = None
        if os.path.exists(out):
            with open(out, "rb") as f:
                data = f.read()
        return rc, data, so.getvalue(), se.getvalue()

    def blob(self):
        return b"\x7fELF header" + code_bytes(OTHER[1]) + b"pad" + code_bytes(KERNEL[1]) + b"tail"

    def control_words(self, data, code):
        at = data.find(code_bytes(code)[:16])  # the first instruction is never edited
        return [int.from_bytes(data[at + 16 * i + 8:at + 16 * i + 16], "little") for i in range(len(code))]

    def test_reused_mode_edits_the_reused_ffmas_of_the_chosen_function_alone(self):
        blob = self.blob()
        rc, data, out, _ = self.run_tool(blob, listing(OTHER, KERNEL), "--kernel", "k38")
        self.assertEqual(rc, 0)
        self.assertIn("_Z6k38_kernelv: 1 of 3 FFMAs edited (reused)", out)
        self.assertEqual(len(data), len(blob))
        words = self.control_words(data, KERNEL[1])
        self.assertEqual(words[1], REUSED_NO_YIELD & ~((1 << 45) | (0xF << 58)))  # 0x000fc2...
        self.assertEqual(words[1] >> 40, 0x000FC2)
        self.assertEqual(words[2:], [PLAIN_YIELD, NO_YIELD, REUSED_NO_YIELD])  # the FADD is not an FFMA
        self.assertEqual(data[:len(b"\x7fELF header") + 32], blob[:len(b"\x7fELF header") + 32])  # other function
        changed = [i for i in range(len(blob)) if blob[i] != data[i]]
        self.assertTrue(changed and all(b - changed[0] < 8 for b in changed))  # one control word only

    def test_all_mode_clears_every_ffma_of_the_function(self):
        rc, data, out, _ = self.run_tool(self.blob(), listing(OTHER, KERNEL), "--kernel", "k38", "--mode", "all")
        self.assertEqual(rc, 0)
        self.assertIn("2 of 3 FFMAs edited (all)", out)  # the one already clear is left
        words = self.control_words(data, KERNEL[1])
        mask = (1 << 45) | (0xF << 58)
        self.assertEqual([w & mask for w in words[1:4]], [0, 0, 0])
        self.assertEqual(words[4], REUSED_NO_YIELD)

    def test_chain_mode_keeps_a_run_issuing_and_caches_its_shared_register(self):
        run = ("_Z6k38_chainv", [
            ("LDC R1, c[0x0][0x28]", 0x00000A00FF017B82, 0x000FE20000000800),
            ("FFMA R1, R24, R157, R1", 0x0000009D18017223, PLAIN_YIELD),             # -> no yield, reuse b
            ("FFMA R2, R25, R157.reuse, R2", 0x0000009D19027223, REUSED_NO_YIELD),   # already so: left
            ("FFMA R3, R26, R157, R3", 0x0000009D1A037223, PLAIN_YIELD),             # next reads R158: no reuse
            ("@P0 FFMA R4, R27, R158, R4", 0x0000009E1B048223, PLAIN_YIELD),         # -> no yield, reuse b
            ("FFMA R158, R28, R158, R5", 0x0000009E1C9E7223, PLAIN_YIELD),           # writes R158: no reuse
            ("FFMA R6, R29, R158, R6", 0x0000009E1D067223, PLAIN_YIELD),             # the run's last: left
            ("LDS R7, [R8]", 0x0000000008077984, PLAIN_YIELD),
        ])
        blob = b"\x7fELF" + code_bytes(run[1]) + b"tail"
        rc, data, out, _ = self.run_tool(blob, listing(run), "--kernel", "chain", "--mode", "chain")
        self.assertEqual(rc, 0)
        self.assertIn("4 of 6 FFMAs edited (chain)", out)
        words = self.control_words(data, run[1])
        y, b = 1 << 45, 1 << 59
        self.assertEqual(words[0], 0x000FE20000000800)
        self.assertEqual(words[1], PLAIN_YIELD | y | b)
        self.assertEqual(words[2], REUSED_NO_YIELD)
        self.assertEqual(words[3:7], [PLAIN_YIELD | y, PLAIN_YIELD | y | b, PLAIN_YIELD | y, PLAIN_YIELD])
        self.assertEqual(words[7], PLAIN_YIELD)

    def test_chain_length_lets_every_nth_ffma_of_a_run_yield(self):
        run = ("_Z6k38_lengthv", [("LDC R1, c[0x0][0x28]", 0x00000A00FF017B82, 0x000FE20000000800)] +
               [(f"FFMA R{10 + j}, R{30 + j}, R157, R{10 + j}", 0x0000009D1E0A7223 + (j << 32), PLAIN_YIELD)
                for j in range(6)] +
               [("LDS R7, [R8]", 0x0000000008077984, PLAIN_YIELD)])
        blob = b"\x7fELF" + code_bytes(run[1]) + b"tail"
        rc, data, out, _ = self.run_tool(blob, listing(run), "--kernel", "length", "--mode", "chain",
                                         "--chain-length", "3")
        self.assertEqual(rc, 0)
        self.assertIn("4 of 6 FFMAs edited (chain, length 3)", out)
        words = self.control_words(data, run[1])
        y, b = 1 << 45, 1 << 59
        # places 0 1 2 3 4 5: cached, cached, yields, cached, cached, the run's last (left)
        self.assertEqual(words[1:7], [PLAIN_YIELD | y | b, PLAIN_YIELD | y | b, PLAIN_YIELD,
                                      PLAIN_YIELD | y | b, PLAIN_YIELD | y | b, PLAIN_YIELD])
        os.remove(os.path.join(self.dir, "out"))
        rc, data, _, err = self.run_tool(blob, listing(run), "--kernel", "length", "--mode", "chain",
                                         "--chain-length", "1")
        self.assertEqual((rc, data), (2, None))
        self.assertIn("--chain-length", err)

    def test_a_kernel_not_in_the_binary_or_twice_is_refused_and_out_not_written(self):
        rc, data, _, err = self.run_tool(self.blob(), listing(OTHER, KERNEL), "--kernel", "absent")
        self.assertEqual((rc, data), (2, None))
        self.assertIn("no function of the listing", err)
        rc, data, _, err = self.run_tool(b"x" + code_bytes(OTHER[1]), listing(OTHER, KERNEL), "--kernel", "k38")
        self.assertEqual((rc, data), (2, None))
        self.assertIn("not in the binary", err)
        twice = self.blob() + code_bytes(KERNEL[1])
        rc, data, _, err = self.run_tool(twice, listing(OTHER, KERNEL), "--kernel", "k38")
        self.assertEqual((rc, data), (2, None))
        self.assertIn("more than once", err)
        self.assertEqual(err.count("\n"), 1)


if __name__ == "__main__":
    unittest.main()
