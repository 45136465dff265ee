"""The Hopper sweep's cells (reproduce.py, vendor_sweep_data): a rung's ratio
to its baseline from the same run, the paired median where `rigel ladder
--paired` took one against that baseline, and the two rates' quotient
otherwise (old files have no paired columns)."""
import os
import unittest

import helpers  # noqa: F401  (puts reproduce/ on the path)
from helpers import REPRODUCE, TempDirTest
import reproduce


def row(rung, rate, vendor="0", paired_vendor="", paired="", p10="", p90=""):
    return {"backend": "cuda", "status": "PASS", "_rate": rate, "group": "vendor" if vendor == "1" else "hopper",
            "vendor": vendor, "run_id": "r1", "dtype": "e4m3", "m": "4096", "n": "4096", "k": "4096",
            "rung": rung, "_file": "f.csv", "_machine": "h200", "_ops": False, "paired_vendor": paired_vendor,
            "paired_ratio_median": paired, "paired_ratio_p10": p10, "paired_ratio_p90": p90}


class VendorSweep(unittest.TestCase):
    def test_paired_ratio_wins_over_the_rates(self):
        rows = [row("vendor_cublaslt_e4m3", 1000.0, vendor="1"), row("vendor_cublaslt_e4m3_fastacc", 1100.0, "1"),
                row("k34_wgmma_fp8_promoted", 950.0, paired_vendor="vendor_cublaslt_e4m3", paired="0.99"),
                row("k33_wgmma_fp8", 1000.0)]
        own, entries = reproduce.vendor_sweep_data(rows)
        e = entries[0]
        self.assertAlmostEqual(e["ratios"]["k34_wgmma_fp8_promoted"], 0.99)
        self.assertIn("k34_wgmma_fp8_promoted", e["paired"])
        self.assertAlmostEqual(e["ratios"]["k33_wgmma_fp8"], 1000.0 / 1100.0)  # against FAST_ACCUM, unpaired
        self.assertNotIn("k33_wgmma_fp8", e["paired"])
        table, _ = reproduce.vendor_sweep_table(rows)
        self.assertIn("0.99x (paired)", table)

    def test_the_block_scaled_rung_faces_the_default_as_the_promoted_ones_do(self):
        rows = [row("vendor_cublaslt_e4m3", 1000.0, vendor="1"), row("vendor_cublaslt_e4m3_fastacc", 1100.0, "1"),
                row("k38_wgmma_fp8_block_scaled", 750.0, paired_vendor="vendor_cublaslt_e4m3", paired="0.76")]
        _, entries = reproduce.vendor_sweep_data(rows)
        self.assertAlmostEqual(entries[0]["ratios"]["k38_wgmma_fp8_block_scaled"], 0.76)
        self.assertIn("k38_wgmma_fp8_block_scaled", entries[0]["paired"])

    def test_shares_of_the_wgmma_ceiling(self):
        rows = [row("vendor_cublaslt_e4m3", 1000.0, vendor="1"),
                row("k34_wgmma_fp8_promoted", 950.0, paired_vendor="vendor_cublaslt_e4m3", paired="0.99")]
        table, _ = reproduce.vendor_sweep_table(rows, {"e4m3": 2.0})  # Tflop/s; the rates are Gflop/s
        self.assertIn("cublaslt_e4m3 1.0 Tflop/s (50%)", table)
        self.assertIn("0.99x (paired), 48%", table)
        self.assertNotIn("%", reproduce.vendor_sweep_table(rows)[0].split("\n", 2)[2])  # no ceiling, no share

    def test_a_pair_against_another_baseline_is_not_used(self):
        rows = [row("vendor_cublaslt_e4m3", 1000.0, vendor="1"), row("vendor_cublaslt_e4m3_fastacc", 1100.0, "1"),
                row("k33_wgmma_fp8", 1000.0, paired_vendor="vendor_cublaslt_e4m3", paired="1.01")]
        _, entries = reproduce.vendor_sweep_data(rows)
        self.assertAlmostEqual(entries[0]["ratios"]["k33_wgmma_fp8"], 1000.0 / 1100.0)
        self.assertEqual(entries[0]["paired"], set())



def cube_row(rung, rate, dtype, n, **kw):
    r = row(rung, rate, **kw)
    r.update(dtype=dtype, m=str(n), n=str(n), k=str(n))
    return r


class Issue11Targets(unittest.TestCase):
    def verdicts(self, rows):
        return {t: (m, ok) for t, m, ok in reproduce.issue11_targets(rows)}

    def test_each_target_reads_the_best_own_rung_against_its_baseline(self):
        rows = [cube_row("vendor_cublas_bf16", 600.0, "bf16", 4096, vendor="1"),
                cube_row("k35_wgmma_cluster_multicast", 590.0, "bf16", 4096),
                cube_row("k39_wgmma_pingpong", 610.0, "bf16", 4096, paired_vendor="vendor_cublas_bf16",
                         paired="1.031"),
                cube_row("vendor_cublaslt_e4m3", 1000.0, "e4m3", 8192, vendor="1"),
                cube_row("vendor_cublaslt_e4m3_fastacc", 1100.0, "e4m3", 8192, vendor="1"),
                cube_row("k39_wgmma_pingpong", 1180.0, "e4m3", 8192, paired_vendor="vendor_cublaslt_e4m3_fastacc",
                         paired="1.078"),
                cube_row("k34_wgmma_fp8_promoted", 970.0, "e4m3", 8192),  # 0.97x the default, unpaired
                cube_row("k38_wgmma_fp8_block_scaled", 700.0, "e4m3", 8192)]
        v = self.verdicts(rows)
        self.assertEqual(v["bf16 4096^3 >= 1.05x cuBLAS"], ("1.031x (paired), k39_wgmma_pingpong", False))
        self.assertEqual(v["bf16 8192^3 >= 1.03x cuBLAS"], ("-", None))
        self.assertEqual(v["e4m3 8192^3 without promotion >= 1.02x cuBLASLt FAST_ACCUM"],
                         ("1.078x (paired), k39_wgmma_pingpong", True))
        # 4096^3 has no promoted rung: not measured, whatever 8192^3 says.
        self.assertIsNone(v["e4m3 with promotion >= 0.95x cuBLASLt's default at 4096^3 and 8192^3"][1])
        self.assertEqual(v["block-scaled fp8 (k38) within 5 % of promoted fp8 (k34), same run"],
                         ("8192^3 0.722x k34", None))
        low = v["no bf16 square from 2048^3 to 16384^3 below 1.00x cuBLAS"]
        self.assertEqual(low, ("lowest 4096^3: 1.031x (paired), k39_wgmma_pingpong; 2048, 8192, 16384 not measured",
                               None))
        self.assertIn("**1 of 6 met**", reproduce.issue11_block(rows))

    def test_a_ratio_just_short_of_its_goal_does_not_print_as_the_goal(self):
        rows = [cube_row("vendor_cublas_bf16", 600.0, "bf16", 4096, vendor="1"),
                cube_row("k42_wgmma_tail_fit", 630.0, "bf16", 4096, paired_vendor="vendor_cublas_bf16",
                         paired="1.04971")]
        m, ok = self.verdicts(rows)["bf16 4096^3 >= 1.05x cuBLAS"]
        self.assertEqual(m, "1.0497x (paired), k42_wgmma_tail_fit")
        self.assertFalse(ok)

    def test_a_square_below_one_fails_the_sweep_target_even_with_others_unmeasured(self):
        rows = [cube_row("vendor_cublas_bf16", 600.0, "bf16", 2048, vendor="1"),
                cube_row("k39_wgmma_pingpong", 580.0, "bf16", 2048)]
        m, ok = self.verdicts(rows)["no bf16 square from 2048^3 to 16384^3 below 1.00x cuBLAS"]
        self.assertTrue(m.startswith("lowest 2048^3: 0.967x (unpaired), k39_wgmma_pingpong"), m)
        self.assertFalse(ok)

    def test_a_square_between_the_powers_of_two_counts(self):
        rows = []
        for n, rate in ((2048, 610.0), (3072, 590.0), (4096, 620.0), (8192, 620.0), (16384, 620.0), (1024, 500.0)):
            rows += [cube_row("vendor_cublas_bf16", 600.0, "bf16", n, vendor="1"),
                     cube_row("k39_wgmma_pingpong", rate, "bf16", n)]
        m, ok = self.verdicts(rows)["no bf16 square from 2048^3 to 16384^3 below 1.00x cuBLAS"]
        self.assertTrue(m.startswith("lowest 3072^3: 0.983x (unpaired)"), m)  # 1024^3 lies outside the range
        self.assertFalse(ok)


class PairedSpread(unittest.TestCase):
    """A paired ratio travels with its p10 and p90 into the sweep and issue 11's targets; an unpaired one
    is marked as the quotient of two medians."""

    def rows(self):
        return [cube_row("vendor_cublas_bf16", 660.4, "bf16", 8192, vendor="1"),
                cube_row("k39_wgmma_pingpong", 648.6, "bf16", 8192, paired_vendor="vendor_cublas_bf16",
                         paired="1.05193", p10="0.97812", p90="1.05917"),
                cube_row("k35_wgmma_cluster_multicast", 650.0, "bf16", 8192)]

    def test_the_sweep_carries_p10_and_p90(self):
        _, entries = reproduce.vendor_sweep_data(self.rows())
        e = entries[0]
        self.assertEqual(e["spread"]["k39_wgmma_pingpong"], (0.97812, 1.05917))
        self.assertNotIn("k35_wgmma_cluster_multicast", e["spread"])
        table, _ = reproduce.vendor_sweep_table(self.rows())
        self.assertIn("| 1.05x [0.98, 1.06] (paired) |", table)
        self.assertIn("| 0.98x (unpaired) |", table)  # 650.0 / 660.4, two medians timed apart
        self.assertIn("| 1.05x [0.98, 1.06] (paired, k39_wgmma_pingpong / cublas_bf16) |", table)

    def test_the_issue11_target_prints_the_spread(self):
        v = {t: (m, ok) for t, m, ok in reproduce.issue11_targets(self.rows())}
        self.assertEqual(v["bf16 8192^3 >= 1.03x cuBLAS"],
                         ("1.052x [0.978, 1.059] (paired), k39_wgmma_pingpong", True))
        self.assertIn("| bf16 8192^3 >= 1.03x cuBLAS | 1.052x [0.978, 1.059] (paired), k39_wgmma_pingpong | met |",
                      reproduce.issue11_block(self.rows()))


def ladder_row(rung, rate, file, vendor="0", backend="cuda", pct="", **kw):
    r = cube_row(rung, rate, "bf16", 4096, vendor=vendor, **kw)
    r.update(backend=backend, threads="1", pct_of_vendor=pct, err_max_scaled="5.5e-07", _file=file)
    return r


class LadderTable(TempDirTest):
    """reproduce.ladder_table's SASS column reads the SASS record of the row's own run (its date_commit
    stem), and its "% of vendor" column says which figure is paired."""

    def setUp(self):
        super().setUp()
        # A SASS record of another commit, listed last by name: it must not speak for k39's run.
        self.write("results/h200/2026-12-05_fffffff_sass.csv",
                   "object,hgmma,qgmma,hmma,imma,dmma,ffma\nk39_wgmma_pingpong,16,0,0,0,0,0\n")
        self.write("results/h200/2026-12-01_2d29642_sass.csv",
                   "object,hgmma,qgmma,hmma,imma,dmma,ffma\nk32_wgmma_persistent,32,0,0,0,0,0\n")
        reproduce.set_root(self.dir)
        self.addCleanup(reproduce.set_root, os.path.join(REPRODUCE, ".."))

    def test_sass_of_the_rows_own_run_or_no_record(self):
        rows = [ladder_row("vendor_cublas_bf16", 671718.0, "2026-12-04_42ea831_ladder_k39_2.csv", vendor="1",
                           pct="100"),
                ladder_row("k39_wgmma_pingpong", 644890.0, "2026-12-04_42ea831_ladder_k39_2.csv", pct="96.006",
                           paired_vendor="vendor_cublas_bf16", paired="1.02881", p10="1.02097", p90="1.03842"),
                ladder_row("k32_wgmma_persistent", 651200.0, "2026-12-01_2d29642_ladder_gpu_short.csv", pct="95.8")]
        table, n = reproduce.ladder_table(rows, 4096)
        self.assertEqual(n, 3)
        lines = {line.split(" | ")[0][2:]: line for line in table.splitlines()[2:]}
        self.assertIn("| library |", lines["vendor_cublas_bf16"])
        k39 = lines["k39_wgmma_pingpong"]
        self.assertIn("| no SASS record |", k39)
        self.assertNotIn("library", k39)
        self.assertNotIn("HGMMA", k39)
        self.assertIn("| 96.0% unpaired; 1.029x [1.021, 1.038] paired vs cublas_bf16 |", k39)
        self.assertIn("| 95.8% | 5.5e-07 | HGMMA |", lines["k32_wgmma_persistent"])

    def test_a_record_made_before_the_run_speaks_for_it_by_name(self):
        # k32's record at 2d29642, whose probes ran before the row's run: named as that commit's build.
        self.write("results/h200/2026-12-01_2d29642_probes.csv", "run_id,probe\n20261201T000000Z-aaaaaa,x\n")
        self.write("results/h200/2026-12-05_fffffff_probes.csv", "run_id,probe\n20261205T000000Z-bbbbbb,x\n")
        reproduce.set_root(self.dir)
        rows = [ladder_row("k32_wgmma_persistent", 651200.0, "2026-12-04_42ea831_ladder_k39_2.csv", pct="95.8"),
                ladder_row("k39_wgmma_pingpong", 644890.0, "2026-12-04_42ea831_ladder_k39_2.csv", pct="96.0")]
        for r in rows:
            r["run_id"] = "20261204T000000Z-cccccc"
        table, _ = reproduce.ladder_table(rows, 4096)
        lines = {line.split(" | ")[0][2:]: line for line in table.splitlines()[2:]}
        self.assertIn("| HGMMA (2d29642's build) |", lines["k32_wgmma_persistent"])
        # fffffff's record of k39 was made after the run: it does not speak for it.
        self.assertIn("| no SASS record |", lines["k39_wgmma_pingpong"])


if __name__ == "__main__":
    unittest.main()
