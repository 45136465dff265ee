"""The GEMM library's report (reproduce/gemm_report.py): the suite tables with
their geometric mean and lowest ratio, issue 10's targets as verdicts, the
verification line, the fused bias + GELU finding and its figure, from fixture
CSVs written into a temporary folder; and every block saying so while no CSV
is committed."""
import io
import json
import math
import os
import shutil
import subprocess
import sys
import unittest
from contextlib import redirect_stderr

from helpers import REPRODUCE, TYPED_HEADER, TempDirTest, findings, probes_csv, to_csv, tree_snapshot

import gemm_report  # noqa: E402  (helpers put reproduce/ on the path)

L2_BYTES = 62914560  # 60 MiB, as the H200's sidecars record it
COPY_TBS = 4.0       # the fixture's device-to-device copy; the streaming read is faster and must not be used
READ_TBS = 4.5


def bench_row(suite, case, n, candidate, baseline, ratio, p10, p90, rate, layout="NT", epilogue="bias_gelu",
              m=None, k=None, run_id="20261203T100000Z-aaaaaa"):
    m = n if m is None else m
    k = n if k is None else k
    base = rate / ratio
    return [run_id, "h200-host", "NVIDIA H200", suite, case, str(m), str(n), str(k), layout, "bf16", "bf16", "bf16",
            epilogue, candidate, baseline, "128x256 splits 1", "50", f"{rate:.3f}", f"{base:.3f}", f"{ratio:.4f}",
            f"{p10:.4f}", f"{p90:.4f}", "1755", "690", "61"]


def vs_lt(suite, case, m, n, k, ratio, layout="NT", epilogue="none", rate=600.0, baseline="cublaslt", **kw):
    return bench_row(suite, case, n, "rigel", baseline, ratio, ratio - 0.02, ratio + 0.02, rate, layout=layout,
                     epilogue=epilogue, m=m, k=k, **kw)


# n -> (fused / decomposed ratio, p10, p90, fused rate in Tflop/s)
FUSED_GAINS = {512: (1.40, 1.35, 1.45, 300.0), 1024: (1.20, 1.17, 1.23, 450.0), 2048: (1.10, 1.08, 1.12, 600.0),
               4096: (1.08, 1.07, 1.09, 650.0), 8192: (1.04, 1.03, 1.05, 670.0), 16384: (1.01, 0.995, 1.02, 680.0)}


def fixture_rows(passing=False):
    """Every suite; passing=False misses the GPT-2, fused 8192, 512^3 and
    layout TT targets, passing=True meets every target."""
    rows = [vs_lt("gpt2", "qkv", 16384, 2304, 768, 1.20, epilogue="bias"),
            vs_lt("gpt2", "attn_out", 16384, 768, 768, 1.02 if passing else 0.80, epilogue="bias"),
            vs_lt("gpt2", "mlp_up", 16384, 3072, 768, 1.00, epilogue="bias_gelu_aux"),
            vs_lt("llama7b", "up", 4096, 11008, 4096, 1.05),
            vs_lt("llama7b", "down", 4096, 4096, 11008, 1.02),
            vs_lt("llama7b", "down_dX", 4096, 11008, 4096, 0.95, layout="NN"),
            vs_lt("fused", "bias_gelu_4096", 4096, 4096, 4096, 1.03, epilogue="bias_gelu"),
            vs_lt("fused", "bias_gelu_8192", 8192, 8192, 8192, 1.01 if passing else 0.98, epilogue="bias_gelu"),
            vs_lt("small", "cube_512", 512, 512, 512, 0.95 if passing else 0.66, baseline="cublas"),
            vs_lt("small", "cube_1024", 1024, 1024, 1024, 0.92, baseline="cublas")]
    for n, (ratio, p10, p90, rate) in FUSED_GAINS.items():
        rows.append(bench_row("fused", f"fused_vs_decomposed_{n}", n, "rigel", "rigel_decomposed", ratio, p10, p90,
                              rate))
    # Each layout against both libraries: rigel's rate of a layout is the median of its rows' rates.
    for layout, rate in (("NT", 650.0), ("NN", 640.0), ("TN", 630.5), ("TT", 645.0 if passing else 620.0)):
        rows.append(vs_lt("layouts", f"layout_{layout}", 4096, 4096, 4096, 0.99, layout=layout, rate=rate))
        rows.append(vs_lt("layouts", f"layout_{layout}", 4096, 4096, 4096, 1.01, layout=layout, rate=rate + 2,
                          baseline="cublas"))
    # Rows the vendor tables and targets leave out: the decomposed path in the GPT-2 suite, and
    # cuBLASLt in the small suite (whose target is against cuBLAS).
    rows.append(bench_row("gpt2", "mlp_up", 3072, "rigel", "rigel_decomposed", 1.05, 1.04, 1.06, 600.0, m=16384,
                          k=768, epilogue="bias_gelu_aux"))
    rows.append(vs_lt("small", "cube_512", 512, 512, 512, 0.70))
    return rows


def sidecar(what, run_id, commit="abc1234def5678900000000000000000000000000"):
    return json.dumps({"run_id": run_id, "what": what, "git_commit": commit, "git_dirty": False,
                       "environment": {"gpu_name": "NVIDIA H200", "gpu_l2_bytes": str(L2_BYTES)}}) + "\n"


def bandwidth_probes():
    def row(path, tbs):
        return ["bandwidth", path, "", "sustained memory bandwidth", f"{tbs:.2f}", "4.8", "TB/s", "1", "fills_in",
                "4.8 TB/s", "datasheet", "", f"{tbs}", "1980", "500", "700", "50", "0", "k", ""]
    return probes_csv("20261201T061456Z-7d80ae", [row("cudaMemcpyAsync device to device", COPY_TBS),
                                                  row("streaming read kernel (ld.global 16-byte words)", READ_TBS)],
                      header=TYPED_HEADER)


def verify_csv(fail=0, total=6, pass_word="1"):
    rows = []
    for i in range(total):
        ok = i >= fail
        rows.append(["20261203T090000Z-bbbbbb", "h200-host", "NVIDIA H200", f"odd_{i}", "129", "257", "264",
                     ["NN", "NT", "TN", "TT"][i % 4], "bf16", "bf16", "bf16", "bias_gelu", "272", "272", "264",
                     "128x128 splits 1", pass_word if ok else "0", "0.3" if ok else "2.5", "1", "" if ok else
                     "element (3, 7) off by 2.5 x tol"])
    return to_csv(gemm_report.VERIFY_COLUMNS, rows)


class Fixture(TempDirTest):
    """A results folder with a probes file (bandwidth rows), bench and verify CSVs."""

    def results(self, bench=None, verify=None, extra=()):
        folder = os.path.join(self.dir, "h200")
        self.write("2026-12-01_410124e_probes.csv", bandwidth_probes(), folder)
        self.write("2026-12-01_410124e_probes.json", json.dumps(
            {"run_id": "20261201T061456Z-7d80ae", "git_commit": "410124e000", "environment": {}}), folder)
        self.write_gemm(folder, bench, verify, extra)
        return findings.load_results([folder])

    def write_gemm(self, folder, bench, verify, extra=()):
        if bench is not None:
            self.write("2026-12-03_abc1234_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, bench), folder)
            self.write("2026-12-03_abc1234_gemm.json", sidecar("gemm_bench", "20261203T100000Z-aaaaaa"), folder)
        if verify is not None:
            self.write("2026-12-03_abc1234_gemm_verify.csv", verify, folder)
            self.write("2026-12-03_abc1234_gemm_verify.json", sidecar("gemm_verify", "20261203T090000Z-bbbbbb"),
                       folder)
        for name, text in extra:
            self.write(name, text, folder)

    def blocks(self, **kw):
        return gemm_report.readme_blocks(self.results(**kw))


class SuiteTables(Fixture):
    def test_each_suite_has_its_rows_geomean_and_lowest_from_the_csv(self):
        lib = self.blocks(bench=fixture_rows())["gemm-library"]
        self.assertIn("**gpt2**: every GEMM of one GPT-2 124M training step", lib)
        self.assertIn("From h200/2026-12-03_abc1234_gemm.csv (run 20261203T100000Z-aaaaaa, commit abc1234, "
                      "NVIDIA H200); 50 pairs per ratio, SM clock 1755 MHz, power up to 690 W.", lib)
        self.assertIn("| attn_out | 16384 x 768 x 768 | NT | bf16, bf16 -> bf16 | bias | 600.0 | cuBLASLt | 750.0 | "
                      "0.80x [0.78, 0.82] | 128x256 splits 1 |", lib)
        # (1.20 x 0.80 x 1.00)^(1/3) = 0.9865; lowest attn_out.
        self.assertIn("\n\nrigel / cuBLASLt: geometric mean of the median ratios **0.99x** over 3 products; lowest "
                      "**0.80x** (attn_out, NT); rigel faster in 1 of 3.", lib)
        self.assertIn("| cube_512 | 512 x 512 x 512 | NT | bf16, bf16 -> bf16 | none | 600.0 | cuBLAS |", lib)
        # Suites in their order; the decomposed rows are the finding's, not the vendor table's.
        order = [lib.find(f"**{s}**") for s in ("gpt2", "llama7b", "fused", "layouts", "small")]
        self.assertEqual(order, sorted(order))
        self.assertNotIn("fused_vs_decomposed", lib)
        self.assertIn("docs/figures/fused_gain.png", lib)

    def test_a_suite_against_two_libraries_has_a_line_for_each(self):
        lib = self.blocks(bench=fixture_rows())["gemm-library"]
        small = lib[lib.find("**small**"):]
        self.assertIn("**small**: small squares, where tiles leave SMs idle and launch cost shows, no epilogue; rigel "
                      "against cuBLAS, cuBLASLt.", small)
        self.assertIn("\n\nrigel / cuBLAS: geometric mean of the median ratios **0.78x** over 2 products; lowest "
                      "**0.66x** (cube_512, NT); rigel faster in 0 of 2.", small)
        self.assertIn("\n\nrigel / cuBLASLt: geometric mean of the median ratios **0.70x** over 1 product;", small)
        self.assertNotIn("rigel decomposed", lib)

    def test_fused_against_decomposed_is_listed_and_a_product_without_vendor_row_says_so(self):
        rows = fixture_rows() + [bench_row("gpt2", "dgelu_dx", 3072, "rigel", "rigel_decomposed", 0.74, 0.73, 0.75,
                                           120.0, m=16384, k=768, layout="NN", epilogue="dgelu_bgrad")]
        lib = self.blocks(bench=rows)["gemm-library"]
        gpt2 = lib[lib.find("**gpt2**"):lib.find("**llama7b**")]
        self.assertIn("\n\nrigel's fused epilogue / its decomposed path (the same GEMM, then an elementwise kernel), "
                      "same run: mlp_up (bias_gelu_aux) 1.05x [1.04, 1.06]; dgelu_dx (dgelu_bgrad, no vendor "
                      "baseline) 0.74x [0.73, 0.75].", gpt2)
        # The fused suite's own comparison is FINDINGS.md's, not repeated under its table.
        fused = lib[lib.find("**fused**"):lib.find("**layouts**")]
        self.assertNotIn("decomposed path", fused)

    def test_geomean_and_summary_numbers(self):
        self.assertAlmostEqual(gemm_report.geomean([1.2, 0.8, 1.0]), 0.96 ** (1 / 3), places=12)
        self.assertTrue(math.isnan(gemm_report.geomean([])))
        rows = gemm_report.bench_rows(findings.make_result_file(
            "x_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, fixture_rows()).encode()))
        s = gemm_report.summarize(gemm_report.vendor_rows([r for r in rows if r.suite == "llama7b"]))
        self.assertEqual((s.measured, s.total, s.faster), (3, 3, 2))
        self.assertEqual(s.lowest.case, "down_dX")
        self.assertAlmostEqual(s.geomean, (1.05 * 1.02 * 0.95) ** (1 / 3), places=3)

    def test_the_newest_file_of_each_suite_wins_and_a_suite_only_an_older_file_has_stays(self):
        old = [vs_lt("gpt2", "qkv", 16384, 2304, 768, 0.70, run_id="20261202T100000Z-old"),
               vs_lt("small", "cube_512", 512, 512, 512, 0.61, baseline="cublas", run_id="20261202T100000Z-old")]
        extra = [("2026-12-02_0ld0000_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, old)),
                 ("2026-12-02_0ld0000_gemm.json", sidecar("gemm_bench", "20261202T100000Z-old", "0ld0000"))]
        newer = [r for r in fixture_rows() if r[3] != "small"]
        lib = self.blocks(bench=newer, extra=extra)["gemm-library"]
        self.assertNotIn("0.70x", lib)
        self.assertIn("| qkv | 16384 x 2304 x 768 | NT | bf16, bf16 -> bf16 | bias | 600.0 | cuBLASLt | 500.0 | "
                      "1.20x", lib)
        self.assertIn("**small**", lib)
        self.assertIn("0.61x [0.59, 0.63]", lib)
        self.assertIn("h200/2026-12-02_0ld0000_gemm.csv (run 20261202T100000Z-old, commit 0ld0000", lib)


    def side_run(self, stem, commit, ratio, **side_fields):
        """A newer bench file of one gpt2 row (0.55x, 0.57x ...) whose sidecar has side_fields."""
        run_id = "20261204T100000Z-" + commit[:3]
        side = json.loads(sidecar("gemm_bench", run_id, commit))
        side.update(side_fields)
        rows = [vs_lt("gpt2", "qkv", 16384, 2304, 768, ratio, run_id=run_id)]
        return [(f"2026-12-04_{commit}_{stem}_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows)),
                (f"2026-12-04_{commit}_{stem}_gemm.json", json.dumps(side) + "\n")]

    def test_a_run_on_a_forced_kernel_is_left_out_of_the_tables(self):
        # `rigel gemm bench --kernel 128x256`, newer than the dispatcher's run: its sidecar names the kernel.
        lib = self.blocks(bench=fixture_rows(), extra=self.side_run("all_128x256", "f0rced0", 0.55,
                                                                     kernel="128x256"))["gemm-library"]
        self.assertNotIn("0.55x", lib)
        self.assertNotIn("f0rced0", lib)
        self.assertIn("1.20x", lib)

    def test_a_run_of_some_cases_is_left_out_of_the_tables(self):
        # `rigel gemm bench --cases qkv`, newer than the whole run: its sidecar names the filter.
        lib = self.blocks(bench=fixture_rows(), extra=self.side_run("gpt2_subset", "5ubset0", 0.57, kernel="auto",
                                                                     cases_filter="qkv"))["gemm-library"]
        self.assertNotIn("0.57x", lib)
        self.assertNotIn("5ubset0", lib)
        self.assertIn("1.20x", lib)

    def test_a_blocked_run_is_left_out_of_the_tables(self):
        # `rigel gemm bench --blocks 2`, newer than the paired run: its sidecar holds block_s.
        lib = self.blocks(bench=fixture_rows(), extra=self.side_run("gpt2_blocked", "b10cked", 0.58, kernel="auto",
                                                                     block_s=2.0))["gemm-library"]
        self.assertNotIn("0.58x", lib)
        self.assertNotIn("b10cked", lib)
        self.assertIn("1.20x", lib)
        # A paired run's sidecar with block_s 0 (the default) counts.
        lib = self.blocks(bench=fixture_rows(), extra=self.side_run("gpt2", "pa1red0", 0.58, kernel="auto",
                                                                     block_s=0))["gemm-library"]
        self.assertIn("0.58x", lib)

    def test_a_paused_run_is_left_out_of_the_tables(self):
        # `rigel gemm bench --pause 0.1`: samples after an idle device, not the back-to-back rate.
        lib = self.blocks(bench=fixture_rows(), extra=self.side_run("gpt2_paused", "pau5ed0", 0.93, kernel="auto",
                                                                     pause_s=0.1))["gemm-library"]
        self.assertNotIn("0.93x", lib)
        self.assertIn("1.20x", lib)

    def test_single_runs_keep_the_newest_row_of_each_case(self):
        # `rigel gemm run` writes suite "run", one case a file: newest_rows keeps every case, the newest of each.
        def run_file(commit, run_id, case, n, ratio):
            rows = [vs_lt("run", case, n, n, n, ratio, run_id=run_id)]
            return [(f"2026-12-0{run_id[7]}_{commit}_run_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows)),
                    (f"2026-12-0{run_id[7]}_{commit}_run_gemm.json", sidecar("gemm_bench", run_id, commit))]
        fin = self.results(bench=fixture_rows(), extra=run_file("aaaaaaa", "20261202T100000Z-a", "c3072", 3072, 0.98) +
                           run_file("bbbbbbb", "20261203T100000Z-b", "c4096", 4096, 1.01) +
                           run_file("ccccccc", "20261204T100000Z-c", "c3072", 3072, 1.00))
        runs = {r.case: r.ratio for r in gemm_report.newest_rows(fin.gemm_bench) if r.suite == "run"}
        self.assertEqual(runs, {"c3072": 1.00, "c4096": 1.01})
        # The README's table of the suite stays the newest file's.
        self.assertEqual([r.case for r in gemm_report.newest_per_suite(fin.gemm_bench)["run"]], ["c3072"])

class Targets(Fixture):
    def verdicts(self, passing):
        return {t.target: t for t in gemm_report.targets(self.results(bench=fixture_rows(passing)).gemm_bench)}

    def test_a_failing_run_is_not_met_where_it_misses_and_met_where_it_reaches(self):
        v = self.verdicts(passing=False)
        met = {k: t.met for k, t in v.items()}
        self.assertEqual(met, {
            "fused bias + GELU >= 1.00x cuBLASLt GELU_BIAS at 4096^3": True,
            "fused bias + GELU >= 1.00x cuBLASLt GELU_BIAS at 8192^3": False,
            "GPT-2 suite: geometric mean >= 1.00x cuBLASLt": False,
            "GPT-2 suite: no product below 0.90x cuBLASLt": False,
            "7B-class suite: geometric mean >= 1.00x cuBLASLt": True,
            "7B-class suite: no product below 0.90x cuBLASLt": True,
            "512^3 >= 0.90x cuBLAS": False,
            "1024^3 >= 0.90x cuBLAS": True,
            "every layout within 3 % of layout NT at 4096^3 (rigel's rates, same run)": False})
        self.assertEqual(v["GPT-2 suite: no product below 0.90x cuBLASLt"].measured, "lowest 0.80x (attn_out); 1 below")
        self.assertEqual(v["every layout within 3 % of layout NT at 4096^3 (rigel's rates, same run)"].measured,
                         "lowest TT: 0.954x NT's 651.0 Tflop/s (unpaired rates)")
        self.assertEqual(v["512^3 >= 0.90x cuBLAS"].measured, "0.660x [0.640, 0.680]")
        block = self.blocks(bench=fixture_rows(False))["gemm-targets"]
        self.assertIn("**4 of 9 met**.", block)
        self.assertIn("| 512^3 >= 0.90x cuBLAS | 0.660x [0.640, 0.680] | **not met** |", block)
        self.assertIn("| 1024^3 >= 0.90x cuBLAS | 0.920x [0.900, 0.940] | met |", block)

    def test_a_passing_run_meets_every_target_and_the_layout_boundary_counts_as_within(self):
        v = self.verdicts(passing=True)
        self.assertTrue(all(t.met is True for t in v.values()), {k: t.met for k, t in v.items()})
        # TN at 630.5 / 650 = 0.97 exactly: within 3 %.
        rows = [vs_lt("layouts", "NT", 4096, 4096, 4096, 1.0, layout="NT", rate=650.0),
                vs_lt("layouts", "TN", 4096, 4096, 4096, 1.0, layout="TN", rate=630.5),
                vs_lt("layouts", "NN", 4096, 4096, 4096, 1.0, layout="NN", rate=650.0),
                vs_lt("layouts", "TT", 4096, 4096, 4096, 1.0, layout="TT", rate=650.0)]
        t = gemm_report.layout_target(gemm_report.bench_rows(findings.make_result_file(
            "x_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows).encode())))
        self.assertTrue(t.met)

    def test_the_layout_target_needs_all_four_layouts(self):
        # NT and TN alone, within 3 % of each other: NN and TT unmeasured, so not met.
        rows = [vs_lt("layouts", "NT", 4096, 4096, 4096, 1.0, layout="NT", rate=650.0),
                vs_lt("layouts", "TN", 4096, 4096, 4096, 1.0, layout="TN", rate=645.0)]
        t = gemm_report.layout_target(gemm_report.bench_rows(findings.make_result_file(
            "x_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows).encode())))
        self.assertIs(t.met, False)
        self.assertEqual(t.verdict, "**not met**")
        self.assertTrue(t.measured.endswith("; NN, TT not measured"), t.measured)

    def test_a_geometric_mean_over_some_products_is_not_the_suites(self):
        # Two GPT-2 products at 1.05x and one without a ratio: the mean of the measured two is 1.05x,
        # yet the suite's mean is not known, so the target is not met, as the floor beside it is not.
        rows = [vs_lt("gpt2", "qkv", 16384, 2304, 768, 1.05), vs_lt("gpt2", "fc", 16384, 3072, 768, 1.05),
                vs_lt("gpt2", "proj", 16384, 768, 3072, float("nan"))]
        mean, floor = gemm_report.suite_targets("GPT-2", gemm_report.bench_rows(findings.make_result_file(
            "x_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows).encode())), "cublaslt")
        self.assertIs(mean.met, False)
        self.assertEqual(mean.measured, "1.050x [1.030, 1.070] over 2 products; 1 not measured")
        self.assertIs(floor.met, False)
        # All three measured: met.
        rows[2] = vs_lt("gpt2", "proj", 16384, 768, 3072, 1.05)
        mean, _ = gemm_report.suite_targets("GPT-2", gemm_report.bench_rows(findings.make_result_file(
            "x_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows).encode())), "cublaslt")
        self.assertIs(mean.met, True)

    def test_a_missing_suite_or_row_is_not_measured_never_met(self):
        rows = [r for r in fixture_rows(True) if r[3] not in ("small", "layouts")]
        v = self.verdicts_of(rows)
        self.assertIsNone(v["512^3 >= 0.90x cuBLAS"].met)
        self.assertEqual(v["512^3 >= 0.90x cuBLAS"].verdict, "not measured")
        self.assertIsNone(v["every layout within 3 % of layout NT at 4096^3 (rigel's rates, same run)"].met)
        self.assertIn("**6 of 9 met**, 3 not measured.", self.blocks(bench=rows)["gemm-targets"])

    def verdicts_of(self, rows):
        return {t.target: t for t in gemm_report.targets(self.results(bench=rows).gemm_bench)}

class Verify(Fixture):
    def test_all_passing_says_n_of_n_with_commit_and_date(self):
        line = self.blocks(verify=verify_csv())["gemm-verify"]
        self.assertEqual(line, "**6/6 library combinations verified against float64 on the H200** "
                               "(`rigel gemm verify`, commit abc1234, 2026-12-03; "
                               "h200/2026-12-03_abc1234_gemm_verify.csv).")

    def test_failures_are_counted_and_named_with_their_reason(self):
        line = self.blocks(verify=verify_csv(fail=2))["gemm-verify"]
        self.assertTrue(line.startswith("**4/6 library combinations verified"), line)
        self.assertIn("Not passing: odd_0 (129x257x264 NN bf16 -> bf16 bias_gelu): element (3, 7) off by 2.5 x tol; "
                      "odd_1 (129x257x264 NT", line)

    def test_a_run_of_some_cases_does_not_stand_for_the_suite(self):
        # A newer `rigel gemm verify --cases ...` of 2 cases: the whole run's 6/6 stands; alone, it says none.
        side = json.loads(sidecar("gemm_verify", "20261204T090000Z-sub", "5ubset0"))
        side["cases_filter"] = "odd_0,odd_1"
        extra = [("2026-12-04_5ubset0_verify_subset_gemm_verify.csv", verify_csv(total=2)),
                 ("2026-12-04_5ubset0_verify_subset_gemm_verify.json", json.dumps(side) + "\n")]
        alone = self.blocks(extra=extra)["gemm-verify"]
        self.assertIn("No committed GEMM verify CSV of a whole suite yet", alone)
        line = self.blocks(verify=verify_csv(), extra=extra)["gemm-verify"]
        self.assertTrue(line.startswith("**6/6 library combinations verified"), line)

    def test_a_run_stopped_before_its_end_does_not_stand_for_the_suite(self):
        # A newer whole-suite run that its time limit stopped after 4 cases (sidecar complete false).
        side = json.loads(sidecar("gemm_verify", "20261204T090000Z-cut", "c0ffee0"))
        side["complete"] = False
        extra = [("2026-12-04_c0ffee0_verify_gemm_verify.csv", verify_csv(total=4)),
                 ("2026-12-04_c0ffee0_verify_gemm_verify.json", json.dumps(side) + "\n")]
        line = self.blocks(verify=verify_csv(), extra=extra)["gemm-verify"]
        self.assertTrue(line.startswith("**6/6 library combinations verified"), line)

    def stopped_and_rest(self, rest_commit="c0ffee0", rest_cases=("odd_4", "odd_5"), rest_fail=0):
        """A whole-suite run of 6 cases stopped after 4 (newer than the fixture's whole run), and a run of
        `--cases` for `rest_cases` at `rest_commit`."""
        side = json.loads(sidecar("gemm_verify", "20261204T090000Z-cut", "c0ffee0"))
        side.update(complete=False, cases=6, cases_filter="")
        rest_side = json.loads(sidecar("gemm_verify", "20261204T100000Z-rest", rest_commit))
        rest_side.update(cases_filter=",".join(rest_cases), cases=len(rest_cases))
        lines = verify_csv(fail=rest_fail + 4).splitlines(keepends=True)
        rest = lines[0] + "".join(l for l in lines[1:] if l.split(",")[3] in rest_cases)
        return [("2026-12-04_c0ffee0_verify_gemm_verify.csv", verify_csv(total=4)),
                ("2026-12-04_c0ffee0_verify_gemm_verify.json", json.dumps(side) + "\n"),
                (f"2026-12-04_{rest_commit}_verify_rest_subset_gemm_verify.csv", rest),
                (f"2026-12-04_{rest_commit}_verify_rest_subset_gemm_verify.json", json.dumps(rest_side) + "\n")]

    def test_a_stopped_run_completed_by_the_cases_it_had_not_reached_stands_for_the_suite(self):
        line = self.blocks(verify=verify_csv(), extra=self.stopped_and_rest())["gemm-verify"]
        self.assertEqual(line, "**6/6 library combinations verified against float64 on the H200** "
                               "(`rigel gemm verify`, commit c0ffee0, 2026-12-04; "
                               "h200/2026-12-04_c0ffee0_verify_gemm_verify.csv, stopped by its time limit, and "
                               "h200/2026-12-04_c0ffee0_verify_rest_subset_gemm_verify.csv, the cases it had not "
                               "reached).")
        # The rest's failures count with the run's own.
        line = self.blocks(verify=verify_csv(), extra=self.stopped_and_rest(rest_fail=1))["gemm-verify"]
        self.assertTrue(line.startswith("**5/6 library combinations verified"), line)
        self.assertIn("Not passing: odd_4 (", line)

    def test_the_rest_of_another_commit_or_short_of_the_suite_completes_nothing(self):
        for extra in (self.stopped_and_rest(rest_commit="0ddba11"), self.stopped_and_rest(rest_cases=("odd_5",))):
            line = self.blocks(verify=verify_csv(), extra=extra)["gemm-verify"]
            self.assertIn("commit abc1234", line)
            self.assertTrue(line.startswith("**6/6 library combinations verified"), line)

    def test_a_pass_cell_that_is_neither_1_nor_0_is_refused_naming_the_file(self):
        with self.assertRaises(findings.FindingsError) as e:
            self.results(verify=verify_csv(pass_word="maybe"))
        self.assertIn("2026-12-03_abc1234_gemm_verify.csv: row 2: pass 'maybe' is not 1 or 0", str(e.exception))


class BadInput(Fixture):
    def test_a_missing_column_or_a_sidecar_of_another_kind_is_refused_in_one_line(self):
        rows = fixture_rows()
        header = [c for c in gemm_report.BENCH_COLUMNS if c != "ratio_p90"]
        with self.assertRaises(findings.FindingsError) as e:
            self.results(extra=[("2026-12-03_x_gemm.csv", to_csv(header, [r[:-4] + r[-3:] for r in rows]))])
        self.assertIn("2026-12-03_x_gemm.csv: not a GEMM bench CSV (no column 'ratio_p90')", str(e.exception))
        os.remove(os.path.join(self.dir, "h200", "2026-12-03_x_gemm.csv"))
        with self.assertRaises(findings.FindingsError) as e:
            self.results(extra=[("2026-12-03_y_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, rows)),
                                ("2026-12-03_y_gemm.json", sidecar("gemm_verify", "20261203T100000Z-y"))])
        self.assertIn("the sidecar says it holds 'gemm_verify', not gemm_bench", str(e.exception))

    def test_a_size_that_is_not_a_positive_integer_is_refused(self):
        rows = fixture_rows()
        rows[0][5] = "16384.5"
        with self.assertRaises(findings.FindingsError) as e:
            self.results(bench=rows)
        self.assertIn("row 2: m '16384.5' is not a positive integer", str(e.exception))


class FusedFinding(Fixture):
    def test_the_gain_for_every_n_beside_the_prediction_and_rigels_statement(self):
        fin = self.results(bench=fixture_rows())
        md = gemm_report.render_finding(fin)
        self.assertIn("## Fused bias + GELU against the decomposed path", md)
        self.assertIn("beat the decomposed path by 6.5-12.9 % on its hardware", md)
        # The copy (read and write, like the elementwise pass) is the bandwidth used, not the faster read.
        self.assertIn("B = 4.00 TB/s, the bandwidth probe's cudaMemcpyAsync device to device "
                      "(2026-12-01_410124e_probes.csv @ 410124e)", md)
        self.assertIn("fits in the 60 MiB L2 (up to n = 5,608)", md)
        # 4096: predicted 2 x 650 / (4096 x 4.0) = 7.9 %; D = 32 MiB fits in L2. 8192: 128 MiB does not.
        # The extra passes' bandwidth: 2 x 4096^2 x 2 bytes over 2 x 4096^3 (1/601.9 - 1/650) ps = 3.97 TB/s.
        self.assertIn("| 4096 | 32.0 MiB | yes | 650.0 | 601.9 | +8.0 % [+7.0 %, +9.0 %] | +7.9 % | 3.97 TB/s | "
                      "inside |", md)
        self.assertIn("| 8192 | 128.0 MiB | no | 670.0 | 644.2 | +4.0 % [+3.0 %, +5.0 %] | +4.1 % | 4.09 TB/s | "
                      "below |", md)
        self.assertIn("the decomposed path's elementwise kernel, not the bytes, sets the gain", md)
        for n in FUSED_GAINS:
            self.assertIn(f"\n| {n} | ", md)
        # 16384's p10 is below 1: the gain there is within the pairs' spread.
        self.assertIn("**Relation to RIGEL's statement: confirms in part.** The H200: the fused path is faster at "
                      "n = 512, 1024, 2048, 4096, 8192; at n = 16384 the gain is within the pairs' spread;", md)
        self.assertIn("inside RIGEL's 6.5-12.9 % at n = 2048, 4096", md)
        # 2 x 680 / (0.01 x 4.0) = 34,000.
        self.assertIn("falls below 1 % beyond n = 34,000", md)
        self.assertIn("[docs/figures/fused_gain.png](docs/figures/fused_gain.png)", md)

    def test_the_prediction_is_the_two_passes_over_the_gemm_time(self):
        r = gemm_report.bench_rows(findings.make_result_file("x_gemm.csv", to_csv(
            gemm_report.BENCH_COLUMNS, [bench_row("fused", "c", 1000, "rigel", "rigel_decomposed", 1.1, 1.0, 1.2,
                                                  500.0, m=2000, k=3000)]).encode()))[0]
        # extra 2 x 2000 x 1000 x 2 B = 8 MB at 4 TB/s = 2 us; GEMM 2 x 2000 x 1000 x 3000 / 500e12 = 24 us.
        self.assertAlmostEqual(gemm_report.predicted_gain(r, 4.0), 2.0 / 24.0, places=12)
        self.assertTrue(math.isnan(gemm_report.predicted_gain(r, None)))

    def relation(self, gains):
        pts = [gemm_report.GainPoint(n=n, gain=g, p10=lo, p90=hi, predicted=math.nan, d_bytes=0, in_l2=None, row=None)
               for n, (g, lo, hi) in gains.items()]
        return gemm_report.fused_relation(pts)

    def test_the_relation_confirms_contradicts_or_confirms_only_the_direction(self):
        self.assertEqual(self.relation({1024: (0.10, 0.09, 0.11), 4096: (0.03, 0.02, 0.04)})[0], "confirms")
        rel, why = self.relation({1024: (0.08, 0.07, 0.09), 4096: (-0.05, -0.06, -0.04)})
        self.assertEqual(rel, "confirms in part")
        self.assertIn("the fused path is faster at n = 1024; the decomposed path is faster at n = 4096", why)
        rel, why = self.relation({1024: (-0.03, -0.04, -0.02), 4096: (0.01, -0.01, 0.02)})
        self.assertEqual(rel, "contradicts")
        self.assertIn("the decomposed path is faster at n = 1024 (p90 of the pairs below 1.00); at no n is the fused "
                      "path faster", why)
        self.assertEqual(self.relation({1024: (0.01, -0.01, 0.02)})[0], "contradicts")
        rel, why = self.relation({1024: (0.30, 0.28, 0.32), 4096: (0.20, 0.19, 0.21)})
        self.assertEqual(rel, "confirms that fusion wins, not by how much")
        self.assertIn("never inside RIGEL's 6.5-12.9 %", why)

    def test_without_a_bandwidth_nothing_is_predicted(self):
        folder = os.path.join(self.dir, "nobw")
        self.write("p_probes.csv", probes_csv("R", [], header=TYPED_HEADER), folder)
        self.write("2026-12-03_abc1234_gemm.csv", to_csv(gemm_report.BENCH_COLUMNS, fixture_rows()), folder)
        md = gemm_report.render_finding(findings.load_results([folder]))
        self.assertIn("none committed, so no gain is predicted", md)
        self.assertIn("| 4096 | 32.0 MiB | - | 650.0 |", md)  # no sidecar: the L2 size is unknown
        self.assertNotIn("falls below 1 %", md)


class NothingCommitted(Fixture):
    def test_every_output_says_not_measured_and_the_figure_is_skipped_with_a_line(self):
        fin = self.results()
        blocks = gemm_report.readme_blocks(fin)
        self.assertIn("No committed GEMM bench CSV yet", blocks["gemm-library"])
        self.assertIn("No committed GEMM verify CSV yet", blocks["gemm-verify"])
        self.assertIn("no committed GEMM bench CSV yet", blocks["gemm-targets"])
        self.assertEqual(blocks["gemm-targets"].count("| - | not measured |"), 9)
        self.assertIn("Not measured yet: no committed `*_gemm.csv` has the fused suite",
                      gemm_report.render_finding(fin))
        self.assertIn("## Fused bias + GELU against the decomposed path", findings.render_findings(fin))
        self.assertIsNone(gemm_report.fused_gain_data(fin))
        from figures import fused_gain
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertFalse(fused_gain.draw(None, None, os.path.join(self.dir, "f.png"), findings.write_if_changed))
        self.assertIn("fused_gain.png not drawn", err.getvalue())
        self.assertFalse(os.path.exists(os.path.join(self.dir, "f.png")))

    def test_a_bench_csv_without_the_fused_suite_draws_nothing_either(self):
        fin = self.results(bench=[r for r in fixture_rows() if r[3] != "fused"])
        self.assertIsNone(gemm_report.fused_gain_data(fin))
        self.assertNotIn("fused_gain.png", gemm_report.readme_blocks(fin)["gemm-library"])


ROOT = os.path.normpath(os.path.join(REPRODUCE, ".."))
README = """# test tree

<!-- generated:gemm-verify:begin -->
<!-- generated:gemm-verify:end -->
<!-- generated:gemm-targets:begin -->
<!-- generated:gemm-targets:end -->
<!-- generated:gemm-library:begin -->
<!-- generated:gemm-library:end -->
"""


def python_with_matplotlib():
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run([exe, "-c", "import matplotlib"],
                                                          capture_output=True).returncode == 0:
            return exe
    return None


PYTHON = python_with_matplotlib()


@unittest.skipUnless(PYTHON, "matplotlib is installed for neither this python3 nor /usr/bin/python3")
class EndToEnd(Fixture):
    """reproduce.py on a temporary tree: the committed bandwidth probe run and
    the fixture's bench and verify CSVs fill the README blocks and FINDINGS.md
    and draw the figure; a second run changes no byte."""

    def run_reproduce(self, tree, *args):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        r = subprocess.run([PYTHON, os.path.join(REPRODUCE, "reproduce.py"), "--root", tree, *args], env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def tree(self, bench=None, verify=None):
        """A tree with the committed bandwidth probe run, the GEMM CSVs given and a README of the markers."""
        tree = os.path.join(self.dir, "tree")
        results = os.path.join(tree, "results", "h200")
        os.makedirs(results)
        for name in ("2026-12-01_410124e_probes.csv", "2026-12-01_410124e_probes.json"):
            shutil.copyfile(os.path.join(ROOT, "results", "h200", name), os.path.join(results, name))
        self.write_gemm(results, bench, verify)
        self.write("README.md", README, tree)
        return tree

    def test_blocks_finding_and_figure_from_the_fixture_and_a_second_run_changes_nothing(self):
        tree = self.tree(bench=fixture_rows(), verify=verify_csv())
        r = self.run_reproduce(tree, "--update-manifest")
        self.assertNotIn("fused_gain.png not drawn", r.stderr)
        with open(os.path.join(tree, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertIn("**6/6 library combinations verified against float64 on the H200**", readme)
        self.assertIn("**4 of 9 met**", readme)
        self.assertIn("rigel / cuBLASLt: geometric mean of the median ratios **0.99x**", readme)
        with open(os.path.join(tree, "FINDINGS.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("| 2026-12-03_abc1234_gemm.csv | `", md)  # listed under Sources
        # The committed copy bandwidth, 4.29 TB/s: 2 x 650 / (4096 x 4.29) = 7.4 %.
        self.assertIn("B = 4.29 TB/s, the bandwidth probe's cudaMemcpyAsync device to device", md)
        self.assertIn("| 4096 | 32.0 MiB | yes | 650.0 | 601.9 | +8.0 % [+7.0 %, +9.0 %] | +7.4 % |", md)
        png = os.path.join(tree, "docs", "figures", "fused_gain.png")
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        first = tree_snapshot(tree)
        self.run_reproduce(tree)
        self.assertEqual(tree_snapshot(tree), first)

    def test_without_a_gemm_csv_the_blocks_say_so_and_reproduce_says_what_it_skipped(self):
        tree = self.tree()
        r = self.run_reproduce(tree, "--update-manifest")
        self.assertIn("the GEMM library's README blocks say 'not measured': no committed *_gemm.csv", r.stderr)
        self.assertIn("fused_gain.png not drawn", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(tree, "docs", "figures", "fused_gain.png")))
        with open(os.path.join(tree, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertIn("No committed GEMM verify CSV yet", readme)
        self.assertIn("| 512^3 >= 0.90x cuBLAS | - | not measured |", readme)
        with open(os.path.join(tree, "FINDINGS.md"), encoding="utf-8") as f:
            self.assertIn("Not measured yet: no committed `*_gemm.csv` has the fused suite", f.read())



class FileKinds(unittest.TestCase):
    def test_claimed_names_keep_their_kind(self):
        # A run whose name was taken appends its run id (and a counter) to the stem.
        cases = {
            "2026-12-01_d2eeedf_all_gemm.csv": "bench",
            "2026-12-01_d2eeedf_all_gemm_20261201T084944Z-d2bf30.csv": "bench",
            "2026-12-01_d2eeedf_all_gemm_20261201T084944Z-d2bf30_2.csv": "bench",
            "2026-12-01_d2eeedf_verify_gemm_verify.csv": "verify",
            "2026-12-01_d2eeedf_verify_gemm_verify_20261201T084944Z-d2bf30.csv": "verify",
            "2026-12-01_d2eeedf_ladder.csv": None,
            "2026-12-01_d2eeedf_ladder_20261201T084944Z-d2bf30.csv": None,
        }
        for name, kind in cases.items():
            self.assertEqual(gemm_report.kind_of(name), kind, name)


if __name__ == "__main__":
    unittest.main()
