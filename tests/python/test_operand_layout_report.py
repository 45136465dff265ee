"""What an MN-major operand costs (reproduce/operand_layout_report.py): the wgmma rows pivoted by N and
layout with their ratio to NT, the TMA rows with the boxes off the lines against the same boxes on them,
the sentences computed from the numbers, unverified rows left out, and nothing without rows."""
import unittest

from helpers import TYPED_HEADER, TempDirTest, findings, probes_csv, sidecar

import operand_layout_report  # noqa: E402  (helpers put reproduce/ on the path)


def row(probe, path, quantity, value, verified="1", unit="cycles", swept=""):
    # probe, path, dtype, quantity, measured, expected, unit, verified, relation, doc_statement, doc_source,
    # detail, then the typed columns (value first, swept last)
    return [probe, path, "bf16", quantity, f"{value:.2f}", "", unit, verified, "fills_in", "silent", "PTX", "",
            str(value), "", "", "", "", "", "", swept]


def wgmma(n, layout, cycles, verified="1"):
    majors = {"NT": ("K", "K"), "NN": ("K", "MN"), "TT": ("MN", "K"), "TN": ("MN", "MN")}[layout]
    return row("wgmma_operand_layout", f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 (128B swizzle)",
               f"SM cycles a wgmma, A {majors[0]}-major, B {majors[1]}-major (layout {layout})", cycles, verified,
               swept=str(n))


def tma(case, bpc, tbps):
    return [row("tma_box_rate", "cp.async.bulk.tensor", "TMA bytes a clock an SM: " + case, bpc, unit="B/clk"),
            row("tma_box_rate", "cp.async.bulk.tensor", "TMA aggregate bandwidth: " + case, tbps, unit="TB/s")]


class OperandLayoutReport(TempDirTest):
    def probes(self, rows, name="2026-12-06_abcdef1_probes.csv"):
        self.write(name, probes_csv("r", rows, TYPED_HEADER))
        self.write(name[:-4] + ".json", sidecar("r", "abcdef1" + "0" * 33))
        return [findings.read_result_file(f"{self.dir}/{name}")]

    def test_the_slow_layouts_are_named_and_the_loads_compared(self):
        rows = [wgmma(104, "NT", 52.3), wgmma(104, "NN", 104.9), wgmma(104, "TT", 52.4), wgmma(104, "TN", 105.0),
                wgmma(128, "NT", 64.1), wgmma(128, "NN", 64.2), wgmma(128, "TT", 64.0), wgmma(128, "TN", 64.3),
                wgmma(40, "NN", 999.0, verified="0")]
        rows += tma("K-major, one 128-row box", 60.0, 15.1)
        rows += tma("MN-major, two 64-column boxes on the 128-byte lines", 58.0, 14.8)
        rows += tma("MN-major, two 64-column boxes 80 bytes past the lines (the narrow tail's 3688)", 29.0, 7.4)
        text = operand_layout_report.section(self.probes(rows))
        self.assertIn("## The operand's layout: the wgmma instruction and the TMA loads", text)
        self.assertIn("| 104 | 52 | 52.3 | 104.9 (2.01x NT) | 52.4 (1.00x NT) | 105.0 (2.01x NT) |", text)
        self.assertIn("| 128 | 64 | 64.1 | 64.2 (1.00x NT) | 64.0 (1.00x NT) | 64.3 (1.00x NT) |", text)
        self.assertIn("More than 5 % slower than both operands K-major at the same N: NN at N = 104 (2.01x), "
                      "TN at N = 104 (2.01x).", text)
        self.assertNotIn("| 40 |", text)  # its only row failed its checksum
        self.assertIn("| K-major, one 128-row box | 60.0 | 15.10 | - |", text)
        self.assertIn("80 bytes past the lines (the narrow tail's 3688) | 29.0 | 7.40 | 0.500 |", text)
        self.assertIn("at 0.500 of the rate of the same boxes on them at worst: the loads explain part", text)
        self.assertIn("2026-12-06_abcdef1_probes.csv, commit abcdef1", text)

    def test_no_layout_slower_and_loads_on_par(self):
        rows = [wgmma(104, "NT", 52.0), wgmma(104, "NN", 53.0)]
        rows += tma("MN-major, two 64-column boxes on the 128-byte lines", 58.0, 14.8)
        rows += tma("MN-major, two 64-column boxes 16 bytes past the lines", 57.0, 14.6)
        text = operand_layout_report.section(self.probes(rows))
        self.assertIn("No layout runs more than 5 % slower", text)
        self.assertIn("| 104 | 52 | 52.0 | 53.0 (1.02x NT) | - | - |", text)
        self.assertIn("within 5 %, so the loads do not explain", text)

    def test_nothing_without_rows(self):
        other = [row("throughput", "ffma", "sustained throughput ceiling", 64.0, unit="Tflop/s")]
        self.assertEqual(operand_layout_report.section(self.probes(other)), "")
        self.assertEqual(operand_layout_report.section([]), "")


if __name__ == "__main__":
    unittest.main()
