"""The training report (reproduce/train_report.py): the runs' table from
fixture logs, a run resumed across two files joined by step (the later file's
row winning), a fresh run (from step 1) replacing an older one, "no log yet" without any, a file without the columns refused,
the loss-curve figure drawn; rigel set beside PyTorch's runs of the same
commit (median speed over steps 2..N, their ratio, the largest loss gap), runs
of other commits or of no known commit kept apart, and one sentence without a
PyTorch log; the newest step profile, slowest phase first."""
import json
import os
import unittest

from helpers import TempDirTest, findings, sidecar, to_csv

import train_report  # noqa: E402  (helpers put reproduce/ on the path)

HEADER = ["run_id", "host", "device", "step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s",
          "checkpointed"]


def rows(run_id, steps, val_at=(), rate=1000.0, shift=0.0):
    return [[run_id, "h", "NVIDIA H200", str(s), str(10.0 - s / 10 + shift), str(9.0 - s / 10) if s in val_at else "",
             "0.0006", "1.5", str(rate), str(s), "0"] for s in steps]


class TrainReport(TempDirTest):
    def test_no_log_says_so(self):
        self.assertIn("No committed training log yet", train_report.runs_block(train_report.load(self.dir)))

    def test_a_resumed_run_is_joined_by_step(self):
        self.write("2026-12-01_aaaaaaa_train_tiny_cuda.csv", to_csv(HEADER, rows("20261201T100000Z-a", range(1, 6))))
        self.write("2026-12-02_bbbbbbb_train_tiny_cuda.csv",
                   to_csv(HEADER, rows("20261202T100000Z-b", range(5, 11), val_at=(10,), rate=3000.0, shift=0.5)))
        runs = train_report.load(self.dir)
        self.assertEqual(list(runs), [("tiny", "cuda")])
        run = runs[("tiny", "cuda")]
        self.assertEqual(sorted(run.steps), list(range(1, 11)))
        self.assertAlmostEqual(run.steps[5]["loss"], 10.0 - 0.5 + 0.5)  # the later file's row
        block = train_report.runs_block(runs)
        self.assertIn("| tiny | cuda | 10 | 9.5000 | 8.0000 | 3,000 |", block)
        self.assertIn("2026-12-01_aaaaaaa_train_tiny_cuda.csv, 2026-12-02_bbbbbbb_train_tiny_cuda.csv", block)

    def test_a_fresh_run_replaces_the_older_one(self):
        self.write("2026-12-01_aaaaaaa_train_tiny_cuda.csv", to_csv(HEADER, rows("20261201T100000Z-a", range(1, 21))))
        self.write("2026-12-02_bbbbbbb_train_tiny_cuda.csv",
                   to_csv(HEADER, rows("20261202T100000Z-b", range(1, 8), rate=3000.0)))
        run = train_report.load(self.dir)[("tiny", "cuda")]
        self.assertEqual(sorted(run.steps), list(range(1, 8)))
        self.assertEqual([f.name for f in run.files], ["2026-12-02_bbbbbbb_train_tiny_cuda.csv"])

    def test_a_file_without_the_columns_is_refused(self):
        self.write("2026-12-01_aaaaaaa_train_gpt2_cuda.csv", "run_id,step\nx,1\n")
        with self.assertRaises(findings.FindingsError) as e:
            train_report.load(self.dir)
        self.assertIn("not a training log (no column 'loss')", str(e.exception))

    def test_the_figure_is_drawn(self):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.skipTest("matplotlib is not installed")
        from figures import style
        self.write("2026-12-01_aaaaaaa_train_tiny_reference.csv",
                   to_csv(HEADER, rows("20261201T100000Z-a", range(1, 20), val_at=(10, 19))))
        path = os.path.join(self.dir, "loss.png")
        written = []
        def write_if_changed(p, data):
            written.append(p)
            with open(p, "wb") as f:
                f.write(data)
        self.assertTrue(train_report.draw(plt, train_report.load(self.dir), path, write_if_changed, style))
        self.assertFalse(train_report.draw(plt, {}, path, write_if_changed, style))


C1 = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
C2 = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"


def log_rows(run_id, rates, losses):
    """Rows of steps 1..N with the given tokens/s and losses."""
    return [[run_id, "h", "NVIDIA H200", str(s), str(loss), "", "0.0006", "1.5", str(rate), str(s), "0"]
            for s, (rate, loss) in enumerate(zip(rates, losses), start=1)]


class TrainCompare(TempDirTest):
    def log(self, name, run_id, commit, rates, losses):
        self.write(name, to_csv(HEADER, log_rows(run_id, rates, losses)))
        self.write(name[:-4] + ".json", sidecar(run_id, commit, questions={}))

    def test_the_log_name_takes_a_hyphenated_backend(self):
        m = train_report.LOG_NAME.search("2026-12-02_1111111_train_gpt2_torch-eager.csv")
        self.assertEqual((m.group("model"), m.group("backend")), ("gpt2", "torch-eager"))
        self.assertIsNone(train_report.LOG_NAME.search("2026-12-01_ededb02_train_check.csv"))
        self.assertIsNone(train_report.LOG_NAME.search("2026-12-01_ededb02_train_gpt2_-cuda.csv"))

    def test_without_a_torch_log_one_sentence_says_so(self):
        self.assertIn("No committed PyTorch training log", train_report.compare_block(train_report.load(self.dir)))
        self.log("2026-12-02_1111111_train_gpt2_cuda.csv", "20261202T100000Z-a", C1, [10, 20, 20], [11, 10, 9])
        self.log("2026-12-02_2222222_train_gpt2_torch-eager.csv", "20261202T110000Z-b", C2, [5, 10, 10],
                 [11, 10, 9])
        block = train_report.compare_block(train_report.load(self.dir))
        self.assertTrue(block.startswith("No committed PyTorch training log"))
        self.assertEqual(block.count("\n"), 0)

    def test_rigel_beside_the_torch_runs_of_its_call(self):
        # Step 1 (warm-up, compilation) is left out of the medians: rigel 300, eager 150, compile 200 (even count).
        self.log("2026-12-02_1111111_train_gpt2_cuda.csv", "20261202T100000Z-a", C1,
                 [1, 200, 300, 400], [11.0, 10.0, 9.0, 8.0])
        self.log("2026-12-02_1111111_train_gpt2_torch-eager.csv", "20261202T100100Z-b", C1,
                 [1, 100, 150, 1000], [11.0, 10.01, 9.05, 8.02])
        self.log("2026-12-02_1111111_train_gpt2_torch-compile.csv", "20261202T100200Z-c", C1,
                 [1, 150, 250], [11.0, 10.0, 8.9])
        # Another call's PyTorch run (and one whose commit is unknown) stay out of this table.
        self.log("2026-12-03_2222222_train_gpt2_torch-eager.csv", "20261203T100000Z-d", C2, [1, 1, 1], [1, 1, 1])
        self.log("2026-12-03_unknown_train_gpt2_torch-eager.csv", "20261203T110000Z-e", "unknown", [1, 1], [1, 1])
        runs = train_report.load(self.dir)
        found = train_report.comparisons(runs)
        self.assertEqual([(c.model, c.commit, sorted(c.runs)) for c in found],
                         [("gpt2", C1, ["cuda", "torch-compile", "torch-eager"])])
        block = train_report.compare_block(runs)
        lines = block.splitlines()
        self.assertIn("back to back in one call on the same GPU", lines[0])
        self.assertIn("gpt2, commit 1111111, NVIDIA H200:", block)
        rows = [line for line in lines if line.startswith("| ") and not line.startswith("| backend")]
        self.assertEqual(rows, [
            "| cuda | 4 | 300 | 1.000x | 8.0000 | - | - | - | 2026-12-02_1111111_train_gpt2_cuda.csv |",
            "| torch-compile | 3 | 200 | 1.500x | 8.9000 | 0.1000 (step 3) | - | - | "
            "2026-12-02_1111111_train_gpt2_torch-compile.csv |",
            "| torch-eager | 4 | 150 | 2.000x | 8.0200 | 0.0500 (step 3) | - | - | "
            "2026-12-02_1111111_train_gpt2_torch-eager.csv |",
        ])
        self.assertNotIn("2222222", block)
        self.assertNotIn("unknown", block)

    def test_peak_memory_says_which_measure(self):
        header = HEADER + ["peak_memory_gb"]
        rows_with = lambda run_id, peaks: [r + [str(p)] for r, p in zip(log_rows(run_id, [1, 2, 2], [3, 2, 1]), peaks)]
        self.write("2026-12-02_1111111_train_gpt2_cuda.csv", to_csv(header, rows_with("20261202T100000Z-a", [9, 9.5, 9.25])))
        self.write("2026-12-02_1111111_train_gpt2_cuda.json", sidecar("20261202T100000Z-a", C1, questions={}))
        self.write("2026-12-02_1111111_train_gpt2_torch-eager.csv", to_csv(header, rows_with("20261202T100100Z-b", [8, 8, 8])))
        self.write("2026-12-02_1111111_train_gpt2_torch-eager.json", sidecar("20261202T100100Z-b", C1, questions={}))
        runs = train_report.load(self.dir)
        self.assertEqual(train_report.peak_text(runs[("gpt2", "cuda")]), "9.50")
        self.assertEqual(train_report.peak_text(runs[("gpt2", "torch-eager")]), "8.00 (allocator's peak)")
        side = json.loads(sidecar("20261202T100100Z-b", C1, questions={}))
        side["peak_memory"] = "device memory in use (total - free) at the end of a step, at its largest"
        self.write("2026-12-02_1111111_train_gpt2_torch-eager.json", json.dumps(side))
        self.assertEqual(train_report.peak_text(train_report.load(self.dir)[("gpt2", "torch-eager")]), "8.00")

    def test_the_targets_from_the_newest_call_with_both_modes(self):
        self.assertIn("No call yet", train_report.targets_block(train_report.load(self.dir)))
        header = HEADER + ["peak_memory_gb"]

        def write(name, run_id, rates, val, peak, device_wide=True):
            rows = [r + [str(peak)] for r in log_rows(run_id, rates, [9.0] * len(rates))]
            rows[-1][5] = str(val)
            self.write(name, to_csv(header, rows))
            side = json.loads(sidecar(run_id, C1, questions={}))
            if device_wide:
                side["peak_memory"] = "device memory in use at the end of a step, at its largest"
            self.write(name[:-4] + ".json", json.dumps(side))

        write("2026-12-02_1111111_train_gpt2_cuda.csv", "20261202T100000Z-a", [1, 330, 330], 6.50, 9.0)
        write("2026-12-02_1111111_train_gpt2_torch-compile.csv", "20261202T100100Z-b", [1, 300, 300], 6.40, 10.0)
        # Eager only 1.32x slower, its validation loss 2.4 % lower, and its peak an allocator's peak.
        write("2026-12-02_1111111_train_gpt2_torch-eager.csv", "20261202T100200Z-c", [1, 250, 250], 6.35, 8.0,
              device_wide=False)
        block = train_report.targets_block(train_report.load(self.dir))
        self.assertIn("| tokens/s >= 1.10x torch-compile | 1.100x (330 / 300; ratio of medians, unpaired) | met |",
                      block)
        self.assertIn("| tokens/s >= 1.40x torch-eager | 1.320x (330 / 250; ratio of medians, unpaired) | **not met** |",
                      block)
        self.assertIn("(largest difference 2.362%) | **not met** |", block)
        self.assertIn("not comparable (an allocator-only peak)", block)

    def test_a_ratio_just_below_a_target_reads_below_it(self):
        # 1097 / 1000 = 1.097x: "1.10x" beside "not met" would contradict itself.
        for name, run_id, rate in (("cuda", "20261202T100000Z-a", 1097.0), ("torch-compile", "20261202T100100Z-b", 1000.0),
                                   ("torch-eager", "20261202T100200Z-c", 700.0)):
            self.log(f"2026-12-02_1111111_train_gpt2_{name}.csv", run_id, C1, [1.0, rate, rate], [9.0, 8.0, 7.0])
        runs = train_report.load(self.dir)
        block = train_report.targets_block(runs)
        self.assertIn("| tokens/s >= 1.10x torch-compile | 1.097x (1,097 / 1,000; ratio of medians, unpaired) | "
                      "**not met** |", block)
        self.assertIn("| torch-compile | 3 | 1,000 | 1.097x |", train_report.compare_block(runs))

    def test_every_median_is_over_steps_two_to_n(self):
        # Step 1 at 10 tokens/s (warm-up) would pull an upper median over all steps down to 100.
        self.log("2026-12-02_1111111_train_gpt2_cuda.csv", "20261202T100000Z-a", C1, [10, 100, 300], [3, 2, 1])
        runs = train_report.load(self.dir)
        self.assertEqual(train_report.median_rate(runs[("gpt2", "cuda")]), 200)
        self.assertIn("| gpt2 | cuda | 3 | 1.0000 | - | 200 |", train_report.runs_block(runs))

    def test_two_calls_at_one_commit_stay_apart(self):
        # Two train_compare calls of one commit, hours apart: each rigel run beside its own PyTorch run,
        # never joined step by step.
        self.log("2026-12-02_1111111_train_gpt2_cuda.csv", "20261202T100000Z-a", C1, [1, 300, 300], [11, 10, 9])
        self.log("2026-12-02_1111111_train_gpt2_torch-eager.csv", "20261202T100100Z-b", C1, [1, 150, 150],
                 [11, 10, 9])
        self.log("2026-12-02_1111111_train_gpt2_cuda_20261202T150000Z-c.csv", "20261202T150000Z-c", C1,
                 [1, 600, 600, 600], [11, 5, 4, 3])
        self.log("2026-12-02_1111111_train_gpt2_torch-eager_20261202T150100Z-d.csv", "20261202T150100Z-d", C1,
                 [1, 200, 200, 200], [11, 5, 4, 3])
        # A PyTorch run of that commit long after both calls, with no rigel run of its own: in no call.
        self.log("2026-12-02_1111111_train_gpt2_torch-compile_20261202T200000Z-e.csv", "20261202T200000Z-e", C1,
                 [1, 999, 999], [11, 5, 4])
        runs = train_report.load(self.dir)
        found = train_report.comparisons(runs)
        self.assertEqual([(sorted(c.runs), [f.name for r in c.runs.values() for f in r.files]) for c in found], [
            (["cuda", "torch-eager"], ["2026-12-02_1111111_train_gpt2_cuda.csv",
                                       "2026-12-02_1111111_train_gpt2_torch-eager.csv"]),
            (["cuda", "torch-eager"], ["2026-12-02_1111111_train_gpt2_cuda_20261202T150000Z-c.csv",
                                       "2026-12-02_1111111_train_gpt2_torch-eager_20261202T150100Z-d.csv"])])
        self.assertEqual([train_report.median_rate(c.runs["cuda"]) for c in found], [300, 600])
        self.assertEqual([sorted(c.runs["torch-eager"].steps) for c in found], [[1, 2, 3], [1, 2, 3, 4]])
        # Each call has its own table.
        self.assertIn("| cuda | 4 | 600 | 1.000x |", train_report.compare_block(runs))

    def test_a_run_of_step_one_alone_has_no_median(self):
        self.log("2026-12-02_1111111_train_gpt2_cuda.csv", "20261202T100000Z-a", C1, [100], [11.0])
        self.log("2026-12-02_1111111_train_gpt2_torch-eager.csv", "20261202T100100Z-b", C1, [50, 60], [11.0, 10.0])
        block = train_report.compare_block(train_report.load(self.dir))
        self.assertIn("| cuda | 1 | - | - | 11.0000 | - |", block)
        self.assertIn("| torch-eager | 2 | 60 | - | 10.0000 | 0.0000 (step 1) |", block)


if __name__ == "__main__":
    unittest.main()


PROFILE_HEADER = ["run_id", "host", "device", "phase", "kind", "calls", "ms_per_step", "share", "tflops", "steps"]


class TrainProfile(TempDirTest):
    def profile(self, name, run_id, rows):
        self.write(name, to_csv(PROFILE_HEADER, [[run_id, "h", "NVIDIA H200"] + r for r in rows]))
        self.write(name[:-4] + ".json", sidecar(run_id, C1, questions={}))

    def test_no_profile_says_so(self):
        self.assertIn("No committed step profile yet", train_report.profile_block(self.dir))

    def test_the_newest_profile_slowest_phase_first(self):
        self.profile("2026-12-01_aaaaaaa_profile_gpt2_cuda.csv", "20261201T100000Z-a",
                     [["adamw", "other", "1", "9", "1", "", "7"]])
        self.profile("2026-12-02_1111111_profile_gpt2_cuda.csv", "20261202T100000Z-b",
                     [["adamw", "other", "1", "1.0", "0.25", "", "7"],
                      ["fwd_qkv", "gemm", "12", "3.0", "0.75", "283.5", "7"]])
        block = train_report.profile_block(self.dir)
        self.assertIn("2026-12-02_1111111_profile_gpt2_cuda.csv (commit 1111111, NVIDIA H200)", block)
        self.assertIn("averaged over 7 steps, 4.0 ms in all", block)
        rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| phase")]
        self.assertEqual(rows, ["| fwd_qkv | gemm | 12 | 3.000 | 75.0 % | 284 |",
                                "| adamw | other | 1 | 1.000 | 25.0 % | - |"])

    def test_a_file_without_the_columns_is_refused(self):
        self.write("2026-12-02_1111111_profile_gpt2_cuda.csv", "run_id,phase\nx,adamw\n")
        with self.assertRaises(findings.FindingsError) as e:
            train_report.profile_block(self.dir)
        self.assertIn("not a step profile (no column 'kind')", str(e.exception))

    def test_the_vendor_profile_of_the_same_commit_beside_it(self):
        self.profile("2026-12-02_1111111_profile_gpt2_cuda.csv", "20261202T100000Z-b",
                     [["adamw", "other", "1", "1.0", "0.25", "", "7"],
                      ["fwd_qkv", "gemm", "12", "3.0", "0.75", "283.5", "7"]])
        self.profile("2026-12-02_1111111_profile_gpt2_cuda-vendor.csv", "20261202T100100Z-c",
                     [["adamw", "other", "1", "1.0", "0.5", "", "7"],
                      ["fwd_qkv", "gemm", "12", "1.5", "0.5", "567", "7"]])
        block = train_report.profile_block(self.dir)
        self.assertIn("Beside it, 2026-12-02_1111111_profile_gpt2_cuda-vendor.csv", block)
        self.assertIn("2.5 ms in all", block)
        self.assertIn("| fwd_qkv | gemm | 12 | 3.000 | 75.0 % | 284 | 1.500 | 2.00x |", block)
        self.assertIn("| adamw | other | 1 | 1.000 | 25.0 % | - | 1.000 | 1.00x |", block)


class FullRunReport(TempDirTest):
    """The run over the corpus (..._train_full_<model>_<backend>.csv): kept
    out of the comparison's runs, its losses and samples in one block."""

    def test_no_full_run_says_so(self):
        self.assertIn("No committed run over the corpus yet", train_report.full_block(self.dir))

    def test_losses_and_samples(self):
        stem = "2026-12-02_1111111_train_full"
        self.write(f"{stem}_gpt2_cuda.csv", to_csv(HEADER, rows("20261202T100000Z-a", range(1, 51), val_at=(25, 50))))
        self.write(f"{stem}_gpt2_cuda.json", sidecar("20261202T100000Z-a", "1111111" + "0" * 33))
        self.write(f"{stem}_samples.txt", "== sample, seed 1\nTo be\n\n\n\nor not\n")
        self.assertEqual(train_report.load(self.dir), {})  # not one of the comparison's runs
        block = train_report.full_block(self.dir)
        self.assertIn("gpt2 on cuda, commit 1111111, NVIDIA H200: 50 steps in 50 s (median 1,000 tokens/s", block)
        self.assertIn("| 1 | 9.9000 | - | 0.0006 | 1.500 |", block)
        self.assertIn("| 50 | 5.0000 | 4.0000 | 0.0006 | 1.500 |", block)
        self.assertIn("Lowest validation loss 4.0000 at step 50", block)
        self.assertIn("```text\n== sample, seed 1\nTo be\n\nor not\n```", block)


class DeterministicRuns(TempDirTest):
    """scripts/h200_visit.sh train_det's logs: the newest commit with all five
    runs, the two deterministic runs and the resumed one set against each other
    step by step, and the mode's speed over the default run's."""

    def put(self, run, commit, steps, rate=1000.0, shift=0.0):
        name = f"2026-12-01_{commit[:7]}_train_det_{run}_gpt2_cuda.csv"
        self.write(name, to_csv(HEADER, rows("20261201T100000Z-" + run, steps, rate=rate, shift=shift)))
        self.write(name[:-4] + ".json", sidecar("20261201T100000Z-" + run, commit))

    def test_nothing_committed(self):
        self.assertIn("Not measured yet", train_report.det_block(self.dir))

    def put_all(self, det_rate, default_rate, b_shift=0.0, default_shift=0.0):
        """The five runs of one commit: a, b (shifted by b_shift), r and r2 (a stopped after step 4 and resumed),
        all at det_rate, and the default run."""
        commit = "abcdef1" + "0" * 33
        self.put("a", commit, range(1, 9), rate=det_rate)
        self.put("b", commit, range(1, 9), rate=det_rate, shift=b_shift)
        self.put("r", commit, range(1, 5), rate=det_rate)
        self.put("r2", commit, range(5, 9), rate=det_rate)
        self.put("default", commit, range(1, 9), rate=default_rate, shift=default_shift)

    def test_equal_runs_and_the_speed_ratio(self):
        self.put_all(det_rate=800.0, default_rate=1000.0, default_shift=0.001)
        block = train_report.det_block(self.dir)
        self.assertIn("| two deterministic runs from the same weights | equal at every step |", block)
        self.assertIn("| stopped after step 4 and resumed, against the straight run | equal at every step |", block)
        self.assertIn("differ (as expected of atomic sums)", block)
        self.assertIn("deterministic 800, default 1,000: the deterministic mode at 0.800x (ratio of medians, unpaired",
                      block)

    def test_a_difference_is_flagged(self):
        self.put_all(det_rate=1000.0, default_rate=1000.0, b_shift=1e-3)
        block = train_report.det_block(self.dir)
        self.assertIn("| two deterministic runs from the same weights | **differ** |", block)


class FusedOrSplitDgelu(TempDirTest):
    """scripts/h200_visit.sh train_dgelu's logs: each round's fused and split
    runs set against each other, the median of the rounds' ratios, and the
    newest commit's rounds only; a round missing one side is left out."""

    def put(self, form, rnd, commit, rate):
        name = f"2026-12-06_{commit[:7]}_train_dgelu_{form}_{rnd}_gpt2_cuda.csv"
        run = f"20261206T10000{rnd}Z-{form}"
        self.write(name, to_csv(HEADER, rows(run, range(1, 11), rate=rate)))
        self.write(name[:-4] + ".json", sidecar(run, commit))

    def test_nothing_committed(self):
        self.assertIn("Not measured yet", train_report.dgelu_block(self.dir))

    def test_rounds_and_the_median_ratio(self):
        commit = "abcdef1" + "0" * 33
        for rnd, (fused, split) in enumerate([(1100.0, 1000.0), (1000.0, 1000.0), (1300.0, 1000.0)], start=1):
            self.put("fused", rnd, commit, fused)
            self.put("split", rnd, commit, split)
        self.put("fused", 4, commit, 9000.0)  # no split run beside it: left out
        block = train_report.dgelu_block(self.dir)
        self.assertIn("at commit abcdef1", block)
        self.assertIn("| 1 | 1,100 | 1,000 | 1.100x |", block)
        self.assertIn("| 3 | 1,300 | 1,000 | 1.300x |", block)
        self.assertNotIn("| 4 |", block)
        self.assertIn("Median over the rounds of fused / split: 1.100x", block)
        self.assertEqual(train_report.load(self.dir), {})  # not one of the comparison's runs
