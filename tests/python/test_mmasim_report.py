"""rigel's accumulation models beside MMA-Sim's (reproduce/mmasim_report.py):
the model's typed columns (or, in older files, the text BlockModel::describe
writes) are read back parameter by parameter, set beside MMA-Sim's Hopper parameters, a difference marked, and a
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

    def test_typed_columns_over_the_words_and_a_lowering(self):
        q = "the model assembled from these answers vs 2048 random 32-term dot products"
        header = HEADER + ["model_block", "model_frac_bits", "model_out_frac_bits", "model_align", "model_out",
                           "model_c", "model_exp_rule", "model_lowering", "model_single_ok", "model_single_n",
                           "model_chain_ok", "model_chain_n"]
        # The detail's words say 28 bits; the columns, which the report reads, say 25.
        rows = [["r", "accumulation", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "e4m3", q,
                 "2048/2048 single, 256/256 chained bit-identical", "1",
                 WGMMA_E4M3.replace("13 bits", "28 bits"), "16", "25", "23", "truncation toward zero", "toward zero",
                 "C added last by an fp32 add rounded to nearest", "factors", "f16 HMMA steps of 16 products",
                 "2048", "2048", "256", "256"]]
        name = "2026-12-01_abcdef1_probes.csv"
        self.write(name, to_csv(header, rows))
        self.write(name[:-4] + ".json", sidecar("r", "abcdef1" + "0" * 33))
        text = mmasim_report.section([findings.read_result_file(f"{self.dir}/{name}")])
        self.assertIn("| e4m3 | how the instruction runs | f16 HMMA steps of 16 products; C added last by an fp32 add "
                      "rounded to nearest | one fused step of all 32 products and C | **no** |", text)
        self.assertIn("| e4m3 | one step's bits kept below the largest exponent | 25 | 25 | yes |", text)
        self.assertIn("| e4m3 | one step's products per step | 16 | 32 | **no** |", text)
        self.assertIn("rigel's model complete (2048/2048 single, 256/256 chained bit-identical); differs from "
                      "MMA-Sim's in how the instruction runs, one step's products per step.", text)

    def test_a_mixed_pairing_gets_the_model_of_as_type(self):
        q = "the model assembled from these answers vs 2048 random 32-term dot products"
        probes = self.probes([
            ["r", "accumulation", "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2", "e4m3 x e5m2", q,
             "2048/2048 single, 256/256 chained bit-identical", "1",
             WGMMA_E4M3],
        ])
        text = mmasim_report.section(probes)
        self.assertIn("| wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2 | e4m3 x e5m2 | bits kept below the largest "
                      "exponent | 13 | 13 | yes |", text)
        self.assertIn("(e4m3 x e5m2): rigel's model complete", text)

    def test_no_model_rows_no_section(self):
        probes = self.probes([["r", "throughput", "p", "bf16", "ceiling", "1", "1", ""]])
        self.assertEqual(mmasim_report.section(probes), "")


if __name__ == "__main__":
    unittest.main()
