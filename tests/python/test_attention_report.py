"""The attention report (reproduce/attention_report.py): the targets as
verdicts from the newest run that measured each, rows of runs from before the
backward pass read as forward, the verification line, "not measured" with no
CSV, and a file without the columns refused in one line."""
import json
import unittest

from helpers import TempDirTest, findings, sidecar, to_csv

import attention_report  # noqa: E402  (helpers put reproduce/ on the path)

BENCH_HEADER = ["run_id", "host", "device", "suite", "case", "batch", "heads", "seq", "head_dim", "causal", "ldq",
                "ldk", "ldv", "ldo", "direction", "candidate", "baseline", "kernel", "pairs", "candidate_tflops",
                "baseline_tflops", "ratio_median", "ratio_p10", "ratio_p90", "candidate_ms", "baseline_ms",
                "sm_clock_mhz", "power_w", "temp_c"]
VERIFY_HEADER = ["run_id", "host", "device", "case", "batch", "heads", "seq", "head_dim", "causal", "ldq", "ldk",
                 "ldv", "ldo", "contender", "direction", "kernel", "pass", "err_max_scaled", "checked_heads",
                 "checked_rows", "reason"]


def bench(run_id, case, direction, baseline, ratio, head_dim=128, causal="0", header=BENCH_HEADER):
    row = {"run_id": run_id, "host": "h", "device": "NVIDIA H200", "suite": "targets", "case": case, "batch": "4",
           "heads": "16", "seq": "4096", "head_dim": str(head_dim), "causal": causal, "ldq": "2048", "ldk": "2048",
           "ldv": "2048", "ldo": "2048", "direction": direction, "candidate": "rigel", "baseline": baseline,
           "kernel": "fa3", "pairs": "20", "candidate_tflops": "500", "baseline_tflops": str(500 / ratio),
           "ratio_median": str(ratio), "ratio_p10": str(ratio - 0.01), "ratio_p90": str(ratio + 0.01),
           "candidate_ms": "1", "baseline_ms": "1", "sm_clock_mhz": "1800", "power_w": "690", "temp_c": "60"}
    return [row[c] for c in header]


class AttentionReport(TempDirTest):
    def blocks(self):
        return attention_report.blocks(self.dir)

    def test_no_csv_says_not_measured(self):
        b = self.blocks()
        self.assertIn("Not verified yet", b["attention-verify"])
        self.assertIn("Not measured yet", b["attention-results"])
        self.assertIn("| forward, D 128, S 4096 >= 0.95x cuDNN | not measured | open |", b["attention-targets"])
        self.assertIn("| fused (fa3) >= 5x the decomposed rung, S 4096, D 128 | not measured | open |", b["attention-targets"])

    def test_targets_take_the_newest_run_and_three_digits(self):
        old = "20261201T100000Z-aaaaaa"
        new = "20261202T100000Z-bbbbbb"
        self.write("2026-12-01_aaaaaaa_targets_attention.csv",
                   to_csv(BENCH_HEADER, [bench(old, "s4096_d128", "forward", "cudnn", 0.99)]))
        self.write("2026-12-02_bbbbbbb_targets_attention.csv",
                   to_csv(BENCH_HEADER, [bench(new, "s4096_d128", "forward", "cudnn", 0.948),
                                         bench(new, "s4096_d128", "forward", "rigel_fa2", 2.9),
                                         bench(new, "s4096_d128", "backward", "cudnn", 0.9)]))
        t = self.blocks()["attention-targets"]
        self.assertIn("| forward, D 128, S 4096 >= 0.95x cuDNN | 0.948x [0.938, 0.958]", t)
        self.assertRegex(t, r"0\.95x cuDNN \| 0\.948x[^|]*\| not met \|")
        self.assertRegex(t, r"backward, D 128, S 4096 >= 0\.85x cuDNN \| 0\.900x[^|]*\| met \|")
        self.assertRegex(t, r"\(fa2\), S 4096, D 128 \| 2\.900x[^|]*\| met \|")
        self.assertIn("| forward, D 64, S 4096 >= 0.90x cuDNN | not measured | open |", t)

    def test_runs_before_the_backward_pass_read_as_forward(self):
        header = [c for c in BENCH_HEADER if c != "direction"]
        self.write("2026-12-01_aaaaaaa_all_attention.csv",
                   to_csv(header, [bench("20261201T100000Z-aaaaaa", "s4096_d64", "forward", "cudnn", 0.91,
                                         head_dim=64, header=header)]))
        b = self.blocks()
        self.assertRegex(b["attention-targets"], r"D 64, S 4096 >= 0\.90x cuDNN \| 0\.910x[^|]*\| met \|")
        self.assertIn("| forward | fa3 |", b["attention-results"])

    def test_verify_line_counts_each_contender_and_direction(self):
        run = "20261201T100000Z-aaaaaa"
        def row(contender, direction, ok, err):
            return [run, "h", "NVIDIA H200", "s17_d64", "2", "2", "17", "64", "0", "128", "128", "128", "128",
                    contender, direction, "fa3", "1" if ok else "0", str(err), "4", "17", "" if ok else "O wrong"]
        self.write("2026-12-01_aaaaaaa_verify_attention_verify.csv",
                   to_csv(VERIFY_HEADER, [row("rigel", "forward", True, 0.5), row("rigel", "backward", False, 3.0),
                                          row("cudnn", "forward", True, 0.25)]))
        v = self.blocks()["attention-verify"]
        self.assertIn("**2/3 checks passed against float64**", v)
        self.assertIn("rigel forward 1/1 (largest error 0.50 of the allowance)", v)
        self.assertIn("rigel backward 0/1", v)
        self.assertIn("Not passing: s17_d64 rigel backward: O wrong", v)

    def test_a_run_of_one_kernel_names_it_and_shows_the_newest_full_run_beside_it(self):
        def rows(run, contenders):
            return [[run, "h", "NVIDIA H200", "s17_d64", "2", "2", "17", "64", "0", "128", "128", "128", "128",
                     who, "forward", "fa3", "1", "0.5", "4", "17", ""] for who in contenders]
        full, narrow = "20261201T100000Z-aaaaaa", "20261202T100000Z-bbbbbb"
        self.write("2026-12-01_aaaaaaa_verify_attention_verify.csv", to_csv(VERIFY_HEADER, rows(full, ["rigel", "cudnn"])))
        side = json.loads(sidecar(full, "a" * 40))
        side["kernel"] = "all"
        self.write("2026-12-01_aaaaaaa_verify_attention_verify.json", json.dumps(side))
        self.write("2026-12-02_bbbbbbb_verify_attention_verify.csv", to_csv(VERIFY_HEADER, rows(narrow, ["rigel"])))
        side = json.loads(sidecar(narrow, "b" * 40))
        side["kernel"] = "fa3"
        self.write("2026-12-02_bbbbbbb_verify_attention_verify.json", json.dumps(side))
        v = self.blocks()["attention-verify"]
        self.assertIn("**1/1 checks passed against float64** (`rigel attention verify --kernel fa3`, "
                      "2026-12-02_bbbbbbb", v)
        self.assertNotIn("cuDNN forward 0/0", v)
        self.assertIn("The newest run over every kernel: **2/2 checks passed against float64** "
                      "(`rigel attention verify --baselines`, 2026-12-01_aaaaaaa", v)

    def put(self, name, run_id, rows, **side):
        """A bench CSV and its sidecar, with the sidecar keys given (complete, cases_filter, kernel)."""
        self.write(name, to_csv(BENCH_HEADER, rows))
        doc = json.loads(sidecar(run_id, name.split("_")[1] * 6, questions={}))
        doc.update(side)
        self.write(name[:-4] + ".json", json.dumps(doc))

    def whole_run(self):
        old = "20261201T100000Z-aaaaaa"
        self.put("2026-12-01_aaaaaaa_targets_attention.csv", old,
                 [bench(old, "s4096_d128", "forward", "cudnn", 0.97), bench(old, "s4096_d128", "forward", "rigel_fa2", 2.5),
                  bench(old, "s4096_d64", "forward", "cudnn", 0.93, head_dim=64)],
                 complete=True, cases_filter="", kernel="fa3")

    def test_a_forced_kernel_run_never_feeds_the_default_targets(self):
        self.whole_run()
        new = "20261203T100000Z-cccccc"
        forced = bench(new, "s4096_d128", "forward", "cudnn", 0.29)
        forced[BENCH_HEADER.index("kernel")] = "fa2"
        self.put("2026-12-03_ccccccc_targets_attention.csv", new, [forced], complete=True, kernel="fa2")
        b = self.blocks()
        self.assertRegex(b["attention-targets"],
                         r"D 128, S 4096 >= 0\.95x cuDNN \| 0\.970x [^|]*2026-12-01_aaaaaaa_targets_attention\.csv[^|]*\| met \|")
        self.assertNotIn("0.290x", b["attention-targets"])
        self.assertNotIn("2026-12-03_ccccccc", b["attention-targets"] + b["attention-results"])

    def test_a_subset_run_speaks_for_its_cases_only_each_line_from_one_file(self):
        self.whole_run()
        new = "20261202T100000Z-bbbbbb"
        # A newer run of the D 64 cases, stopped before its end: it holds s4096_d64 against cuDNN alone.
        self.put("2026-12-02_bbbbbbb_targets_subset_attention.csv", new,
                 [bench(new, "s4096_d64", "forward", "cudnn", 0.91, head_dim=64)],
                 complete=False, cases_filter="_d64", kernel="fa3")
        b = self.blocks()
        t = b["attention-targets"]
        # D 128: the older whole run, the only one that has the case.
        self.assertRegex(t, r"D 128, S 4096 >= 0\.95x cuDNN \| 0\.970x [^|]*2026-12-01_aaaaaaa[^|]*\| met \|")
        self.assertRegex(t, r"\(fa2\), S 4096, D 128 \| 2\.500x [^|]*2026-12-01_aaaaaaa")
        # D 64: the newer subset run holds the case, and says what kind of run it was.
        self.assertIn("| forward, D 64, S 4096 >= 0.90x cuDNN | 0.910x [0.900, 0.920] "
                      "(2026-12-02_bbbbbbb_targets_subset_attention.csv (commit bbbbbbb, cases '_d64', incomplete run)) "
                      "| met |", t)
        # The results table: each line's numbers and source from one file.
        lines = {line.split(" | ")[1].split(" ")[0]: line for line in b["attention-results"].splitlines()[2:]}
        self.assertIn("0.91x [0.90, 0.92]", lines["s4096_d64"])
        self.assertIn("2026-12-02_bbbbbbb", lines["s4096_d64"])
        self.assertIn("0.97x [0.96, 0.98] | 2.50x [2.49, 2.51]", lines["s4096_d128"])
        self.assertIn("2026-12-01_aaaaaaa", lines["s4096_d128"])

    def test_a_newer_run_of_the_case_without_the_baseline_does_not_borrow_an_older_number(self):
        self.whole_run()
        new = "20261202T100000Z-bbbbbb"
        self.put("2026-12-02_bbbbbbb_targets_attention.csv", new, [bench(new, "s4096_d128", "forward", "cudnn", 0.96)],
                 complete=True, kernel="fa3")
        t = self.blocks()["attention-targets"]
        self.assertIn("| wgmma rung (fa3) >= 1.8x the mma.sync rung (fa2), S 4096, D 128 | not measured against "
                      "rigel_fa2 in the newest run of the case, 2026-12-02_bbbbbbb_targets_attention.csv", t)
        # Its results line: the newer run's cuDNN ratio, no fa2 ratio borrowed from the older run.
        line = next(x for x in self.blocks()["attention-results"].splitlines() if "| s4096_d128 (" in x)
        self.assertIn("| 0.96x [0.95, 0.97] | - | - | - | 2026-12-02_bbbbbbb_targets_attention.csv", line)

    def test_a_file_without_the_columns_is_refused(self):
        self.write("2026-12-01_aaaaaaa_gpt2_attention.csv", "run_id,case\nx,y\n")
        with self.assertRaises(findings.FindingsError) as e:
            self.blocks()
        self.assertIn("not an attention bench CSV (no column 'suite')", str(e.exception))


if __name__ == "__main__":
    unittest.main()


class AttentionFinding(TempDirTest):
    """RIGEL's attention finding: the fused / decomposed ratios, each case's S x S
    round trip at the probe's bandwidth over the fused time, and whether a
    head's scratch fits the L2; nothing without a paired run."""

    def finding(self, bandwidth):
        """FINDINGS.md's section from the CSVs written so far, with a 60 MiB L2."""
        bench_files, _ = attention_report.load(self.dir)
        return attention_report.finding_section(bench_files, bandwidth, 60 * 2**20)

    def test_nothing_without_a_decomposed_pair(self):
        self.write("2026-12-01_aaaaaaa_targets_attention.csv",
                   to_csv(BENCH_HEADER, [bench("20261201T100000Z-a", "s4096_d128", "forward", "cudnn", 0.95)]))
        self.assertEqual(self.finding((4.0, "copy", None)), "")

    def test_ratios_round_trip_and_l2(self):
        r = "20261201T100000Z-a"
        small = bench(r, "s1024", "forward", "rigel_decomposed", 50.0)
        small[BENCH_HEADER.index("seq")] = "1024"
        big = bench(r, "s4096_d128", "forward", "rigel_decomposed", 9.0)
        big[BENCH_HEADER.index("candidate_ms")] = "1.0"
        self.write("2026-12-01_aaaaaaa_targets_attention.csv", to_csv(BENCH_HEADER, [small, big]))

        class Probe:
            name = "2026-12-01_aaaaaaa_probes.csv"

        text = self.finding((4.0, "cudaMemcpyAsync device to device", Probe()))
        self.assertIn("Bandwidth: 4.00 TB/s", text)
        # 4 x 16 heads of 12 x 4096^2 bytes at 4 TB/s: 3.221 ms, 3.2x the fused 1 ms; 96 MiB of scratch > 60 MiB.
        self.assertIn("| no (96 MiB) | 3.221 | 3.2x |", text)
        self.assertIn("| yes (6 MiB) |", text)
        self.assertIn("The fused pass is 9.0x to 50.0x faster than the decomposed one over the 2 measured cases", text)
        self.assertIn("the round trip alone takes longer than the whole fused pass", text)
        self.assertIn("Where it fits (s1024)", text)

    def test_the_ratio_column_says_it_is_the_speed_up(self):
        r = "20261201T100000Z-a"
        self.write("2026-12-01_aaaaaaa_targets_attention.csv",
                   to_csv(BENCH_HEADER, [bench(r, "s4096_d128", "forward", "rigel_decomposed", 6.5)]))
        header = next(line for line in self.finding(None).splitlines() if line.startswith("| case |"))
        self.assertIn("| speed-up: decomposed time / fused time, median [p10, p90] |", header)
        self.assertNotIn("fused / decomposed", header)

    def test_one_row_per_case_and_the_sweep_left_to_measure(self):
        old, new = "20261201T100000Z-a", "20261202T100000Z-b"
        self.write("2026-12-01_aaaaaaa_targets_attention.csv",
                   to_csv(BENCH_HEADER, [bench(old, "s4096_d128", "forward", "rigel_decomposed", 6.5)]))
        again = bench(new, "s4096_d128", "forward", "rigel_decomposed", 7.0)
        again[BENCH_HEADER.index("suite")] = "sdpa"
        self.write("2026-12-02_bbbbbbb_sdpa_attention.csv", to_csv(BENCH_HEADER, [again]))
        text = self.finding(None)
        self.assertEqual(text.count("| s4096_d128 ("), 1)
        self.assertIn("7.00x", text)
        self.assertNotIn("6.50x", text)
        self.assertIn("Not measured yet, of the issue's sweep", text)
        self.assertIn("s512_d64, s512_d64_causal", text)
        self.assertIn("s16384_d128_causal.", text)
        self.assertNotIn("s4096_d128,", text)
