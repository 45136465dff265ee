"""rigel's accumulation models beside MMA-Sim's (reproduce/mmasim_report.py):
the model text BlockModel::describe writes is read back parameter by
parameter, set beside MMA-Sim's Hopper parameters, a difference marked, and a
model that misses random cases called incomplete; nothing without model rows."""
import unittest

from helpers import TempDirTest, findings, sidecar, to_csv

import mmasim_report  # noqa: E402  (helpers put reproduce/ on the path)

HEADER = ["run_id", "probe", "path", "dtype", "quantity", "measured", "verified", "detail"]
WGMMA_E4M3 = ("model: 32 products per step, 13 bits kept below the largest term's leading bit, alignment by "
              "truncation toward zero, result rounded toward zero, C aligned with the first block, products aligned "
              "by their factors' exponents. Inputs: ...")
WGMMA_BF16 = ("model: 16 products per step, 25 bits kept below the largest term's leading bit, alignment by "
              "truncation toward zero, result rounded toward zero, C aligned with the first block, products aligned "
              "by their factors' exponents, the result kept to 23 fraction bits. Inputs: ...")


class MmaSimReport(TempDirTest):
    def probes(self, rows):
        name = "2026-12-01_abcdef1_probes.csv"
        self.write(name, to_csv(HEADER, rows))
        self.write(name[:-4] + ".json", sidecar(rows[0][0] if rows else "r", "abcdef1" + "0" * 33))
        return [findings.read_result_file(f"{self.dir}/{name}")]

    def test_parameters_side_by_side(self):
        q = "the model assembled from these answers vs 2048 random 32-term dot products"
        probes = self.probes([
            ["r", "accumulation", "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", "e4m3", q,
             "1534/2048 single, 213/256 chained bit-identical", "1", WGMMA_E4M3],
            ["r", "accumulation", "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", "bf16", q,
             "2048/2048 single, 256/256 chained bit-identical", "1", WGMMA_BF16],
        ])
        text = mmasim_report.section(probes)
        self.assertIn("| wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 | e4m3 | result's fraction bits | 23 | "
                      "13 | **no** |", text)
        self.assertIn("| wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 | e4m3 | bits kept below the largest "
                      "exponent | 13 | 13 | yes |", text)
        self.assertIn("(e4m3): rigel's model incomplete (1534/2048 single, 213/256 chained bit-identical); differs "
                      "from MMA-Sim's in result's fraction bits.", text)
        self.assertIn("(bf16): rigel's model complete", text)
        self.assertIn("every parameter agrees with MMA-Sim's.", text)

    def test_no_model_rows_no_section(self):
        probes = self.probes([["r", "throughput", "p", "bf16", "ceiling", "1", "1", ""]])
        self.assertEqual(mmasim_report.section(probes), "")


if __name__ == "__main__":
    unittest.main()
