"""The training report (reproduce/train_report.py): the runs' table from
fixture logs, a run resumed across two files joined by step (the later file's
row winning), "no log yet" without any, a file without the columns refused,
and the loss-curve figure drawn."""
import os
import unittest

from helpers import TempDirTest, findings, to_csv

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


if __name__ == "__main__":
    unittest.main()
