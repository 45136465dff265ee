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


if __name__ == "__main__":
    unittest.main()
