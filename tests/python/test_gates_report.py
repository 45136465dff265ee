"""The version-gates report (reproduce/gates_report.py) from fixture files: the
newest file wins, the feature-by-target cell holds ptxas's lowest accepted
version and NVRTC's answer, a disagreement is marked and counted, refusal
messages are tallied with their numbers folded, and a file without the
columns is refused."""
import json

from helpers import TempDirTest, findings, sidecar, to_csv

import gates_report  # noqa: E402

HEADER = ["run_id", "host", "tool", "tool_version", "feature", "instruction", "target", "ptx_version", "accepted",
          "documented", "agrees", "message", "doc"]


def row(run_id, tool, target, version, accepted, documented, message=""):
    return [run_id, "h", tool, "13.0", "wgmma", "wgmma.mma_async", target, version, str(accepted), str(documented),
            str(int(accepted == documented)), message, "sm_90a only"]


class GatesReport(TempDirTest):
    def put(self, name, run_id, rows):
        self.write(name, to_csv(HEADER, rows))
        self.write(name[:-4] + ".json", sidecar(run_id, "abcdef1" + "0" * 33, questions={}))

    def test_nothing_committed(self):
        self.assertIn("No committed version-gates file", gates_report.block(self.dir))
        self.assertEqual(gates_report.findings_section(self.dir), "")

    def test_cells_counts_and_messages(self):
        self.put("2026-12-01_aaaaaaa_version_gates.csv", "20261201T100000Z-a",
                 [row("20261201T100000Z-a", "ptxas", "sm_90", "8.0", 1, 1)])
        r = "20261202T100000Z-b"
        self.put("2026-12-02_abcdef1_version_gates.csv", r, [
            row(r, "ptxas", "sm_90", "7.8", 0, 0, "error : Instruction 'wgmma.fence' not supported on .target 'sm_90'"),
            row(r, "ptxas", "sm_90", "8.0", 0, 0, "error : Instruction 'wgmma.fence' not supported on .target 'sm_90'"),
            row(r, "ptxas", "sm_90a", "7.8", 0, 0, "error : PTX .version 7.8 does not support .target sm_90a"),
            row(r, "ptxas", "sm_90a", "8.0", 1, 1),
            row(r, "nvrtc", "sm_90", "", 1, 0),  # NVRTC says yes where the document says no
            row(r, "nvrtc", "sm_90a", "", 1, 1),
        ])
        block = gates_report.block(self.dir)
        self.assertIn("From 2026-12-02_abcdef1_version_gates.csv (commit abcdef1)", block)
        self.assertIn("nvrtc 13.0: 1/2 answers agree", block)
        self.assertIn("ptxas 13.0: 4/4 answers agree", block)
        self.assertIn("| wgmma | `wgmma.mma_async` | - / y **!** | 8.0 / y | sm_90a only |", block)
        section = gates_report.findings_section(self.dir)
        self.assertIn("- 2: error : Instruction 'wgmma.fence' not supported on .target 'sm_90'", section)
        self.assertIn("- 1: error : PTX .version 7.8 does not support .target sm_90a", section)

    def test_a_file_without_the_columns_is_refused(self):
        self.write("2026-12-02_abcdef1_version_gates.csv", "run_id,tool\nx,ptxas\n")
        with self.assertRaises(findings.FindingsError) as e:
            gates_report.load(self.dir)
        self.assertIn("not a version-gates file (no column 'tool_version')", str(e.exception))


DRIVER_HEADER = ["run_id", "host", "device", "compute_capability", "driver", "case", "form", "target", "ptx_version",
                 "loaded", "ran", "value", "documented", "agrees", "message", "why"]


class DriverGates(TempDirTest):
    def test_nothing_committed(self):
        self.assertIn("No committed driver-gates file", gates_report.driver_block(self.dir))

    def test_answers_beside_the_prediction(self):
        r = "20261202T100000Z-b"
        self.write("2026-12-02_abcdef1_driver_gates.csv", to_csv(DRIVER_HEADER, [
            [r, "h", "NVIDIA H200", "9.0", "13.0", "cubin sm_90", "cubin", "sm_90", "8.0", "1", "1", "42", "1", "1", "",
             "its own architecture"],
            [r, "h", "NVIDIA H200", "9.0", "13.0", "cubin sm_80", "cubin", "sm_80", "8.0", "1", "1", "42", "0", "0", "",
             "another major version"],
        ]))
        self.write("2026-12-02_abcdef1_driver_gates.json", sidecar(r, "abcdef1" + "0" * 33, questions={}))
        block = gates_report.driver_block(self.dir)
        self.assertIn("(commit abcdef1; NVIDIA H200, compute capability 9.0, driver API 13.0): 1/2 answers", block)
        self.assertIn("| cubin sm_90 | yes | yes | - | runs | its own architecture |", block)
        self.assertIn("| cubin sm_80 | yes | yes | - | refused **!** | another major version |", block)


OFFERS_HEADER = ["run_id", "host", "device", "cublaslt_version", "a_type", "b_type", "c_type", "d_type", "layout",
                 "a_scale", "b_scale", "status", "algorithms", "offered", "documented", "agrees", "doc"]


class CublasLtOffers(TempDirTest):
    def test_stated_and_unstated_answers(self):
        r = "20261202T100000Z-c"
        self.write("2026-12-02_abcdef1_cublaslt_offers.csv", to_csv(OFFERS_HEADER, [
            [r, "h", "NVIDIA H200", "130100", "e4m3", "e4m3", "bf16", "bf16", "NN", "per tensor", "per tensor",
             "SUCCESS", "8", "1", "0", "0", "fp8 only as TN"],
            [r, "h", "NVIDIA H200", "130100", "e4m3", "e4m3", "bf16", "bf16", "TN", "1 x 128 fp32", "128 x 128 fp32",
             "INVALID_VALUE", "0", "0", "", "", "nothing stated"],
        ]))
        self.write("2026-12-02_abcdef1_cublaslt_offers.json", sidecar(r, "abcdef1" + "0" * 33, questions={}))
        block = gates_report.offers_block(self.dir)
        self.assertIn("cuBLASLt 130100; 4096^3, 32 MiB of workspace): 0/1 answers as the documentation", block)
        self.assertIn("1 where it states nothing", block)
        self.assertIn("| e4m3 x e4m3 -> bf16 | NN | per tensor; per tensor | SUCCESS | 8 | not offered **!** |", block)
        self.assertIn("| INVALID_VALUE | 0 | - | nothing stated |", block)


EMULATE_HEADER = ["run_id", "host", "device", "path", "instruction", "m", "n", "k", "splits", "k_tile", "share",
                  "reduction", "recipe", "seed", "elements", "identical", "first_mismatch", "checksum", "sampled",
                  "sample_identical", "algorithm"]


class EmulateBlock(TempDirTest):
    """`rigel emulate --against ...` files: the newest run per (path, what it
    was set against), rigel's own split as a count, a vendor's inferred
    hypothesis in full with its sample score, a mismatch flagged."""

    def put(self, name, rows):
        self.write(name, to_csv(EMULATE_HEADER, rows))
        self.write(name[:-4] + ".json", sidecar(rows[0][0], "abcdef1" + "0" * 33))

    def test_nothing_committed(self):
        self.assertIn("No committed comparison yet", gates_report.emulate_block(self.dir))

    def test_library_and_vendor_rows(self):
        base = ["h", "NVIDIA H200", "wgmma_bf16", "wgmma", "64", "64"]
        self.put("2026-12-01_abcdef1_emulate_wgmma_bf16_library.csv",
                 [["r1"] + base + ["1024", "8", "64", "floor", "serial", "normal", "1", "4096", "4096", "", "x", "",
                                   "", ""]])
        self.put("2026-12-01_abcdef1_emulate_wgmma_bf16_cublas.csv",
                 [["r2"] + base + ["4096", "4", "128", "ceil", "pairwise", "normal", "1", "4096", "4000",
                                   "D[0][1]: ...", "x", "256", "250", "cublasGemmEx"]])
        block = gates_report.emulate_block(self.dir)
        self.assertIn("| wgmma_bf16 | the GEMM library | 1 | 8 | 4,096 / 4,096 | 64x64x1024 | abcdef1 |", block)
        self.assertIn("| wgmma_bf16 | cuBLAS (cublasGemmEx) | 1 | 4 (ceil shares of 128-element k-tiles, pairwise) "
                      "[inferred: 250/256 sampled] | 4,000 / 4,096 **!** |", block)

    def test_a_hypothesis_path_is_named_so(self):
        base = ["h", "NVIDIA H200", "wgmma_e4m3", "wgmma", "64", "64"]
        name = "2026-12-01_abcdef1_emulate_wgmma_e4m3_k33_wgmma_fp8.csv"
        self.write(name, to_csv(EMULATE_HEADER, [["r3"] + base + ["1024", "1", "64", "floor", "serial", "normal", "1",
                                                                  "4096", "4096", "", "x", "", "", ""]]))
        self.write(name[:-4] + ".json", json.dumps({"run_id": "r3", "git_commit": "abcdef1" + "0" * 33,
                                                    "git_dirty": False, "model": "MMA-Sim's Hopper model",
                                                    "model_measured": "no",
                                                    "environment": {"gpu_name": "NVIDIA H200"}}) + "\n")
        block = gates_report.emulate_block(self.dir)
        self.assertIn("| wgmma_e4m3 (run while its model was a hypothesis: MMA-Sim's Hopper model) | rung k33_wgmma_fp8 | 1 | 1 | 4,096 / 4,096 |",
                      block)

    def test_a_vendor_interval_is_named(self):
        base = ["h", "NVIDIA H200", "wgmma_e4m3", "wgmma", "64", "64"]
        rows = [["r5"] + base[:4] + [str(m), "64", str(k), str(k // 128), "32", "floor", "serial", "normal", "1",
                                     "4096", "4096", "", "x", "256", "256", "algo"] for m, k in ((64, 1024), (64, 4096))]
        self.put("2026-12-01_abcdef1_emulate_wgmma_e4m3_cublaslt.csv", rows)
        block = gates_report.emulate_block(self.dir)
        self.assertIn("cuBLASLt on wgmma_e4m3: on every problem K cut into partials of 128 products, added in fp32 in "
                      "order, every element reproduced.", block)

    def test_fast_accum_as_one_chain(self):
        base = ["h", "NVIDIA H200", "wgmma_e4m3", "wgmma", "64", "64"]
        self.put("2026-12-01_abcdef1_emulate_wgmma_e4m3_vendor_cublaslt_e4m3_fastacc.csv",
                 [["r4"] + base + ["1024", "1", "64", "floor", "serial", "normal", "1", "4096", "4096", "", "x", "",
                                   "", ""]])
        block = gates_report.emulate_block(self.dir)
        self.assertIn("| wgmma_e4m3 | cuBLASLt with FAST_ACCUM (the ladder's rung) | 1 | 1 | 4,096 / 4,096 |", block)
        self.assertIn("cuBLASLt with FAST_ACCUM on wgmma_e4m3: no promotion; each split of K one uninterrupted chain "
                      "of the instruction, the splits' partials added in fp32 in order (K split 1 ways), every element "
                      "reproduced.", block)

    def test_fast_accum_missed_no_note(self):
        base = ["h", "NVIDIA H200", "wgmma_e4m3", "wgmma", "64", "64"]
        self.put("2026-12-01_abcdef1_emulate_wgmma_e4m3_vendor_cublaslt_e4m3_fastacc.csv",
                 [["r6"] + base + ["8192", "1", "64", "floor", "serial", "normal", "1", "4096", "908", "D[0][0]", "x",
                                   "", "", ""]])
        self.assertNotIn("no promotion", gates_report.emulate_block(self.dir))
