"""The Hopper sweep's cells (reproduce.py, vendor_sweep_data): a rung's ratio
to its baseline from the same run, the paired median where `rigel ladder
--paired` took one against that baseline, and the two rates' quotient
otherwise (old files have no paired columns)."""
import unittest

import helpers  # noqa: F401  (puts reproduce/ on the path)
import reproduce


def row(rung, rate, vendor="0", paired_vendor="", paired=""):
    return {"backend": "cuda", "status": "PASS", "_rate": rate, "group": "vendor" if vendor == "1" else "hopper",
            "vendor": vendor, "run_id": "r1", "dtype": "e4m3", "m": "4096", "n": "4096", "k": "4096",
            "rung": rung, "_file": "f.csv", "_machine": "h200", "_ops": False, "paired_vendor": paired_vendor,
            "paired_ratio_median": paired}


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

    def test_a_square_below_one_fails_the_sweep_target_even_with_others_unmeasured(self):
        rows = [cube_row("vendor_cublas_bf16", 600.0, "bf16", 2048, vendor="1"),
                cube_row("k39_wgmma_pingpong", 580.0, "bf16", 2048)]
        m, ok = self.verdicts(rows)["no bf16 square from 2048^3 to 16384^3 below 1.00x cuBLAS"]
        self.assertTrue(m.startswith("lowest 2048^3: 0.967x, k39_wgmma_pingpong"), m)
        self.assertFalse(ok)


if __name__ == "__main__":
    unittest.main()
