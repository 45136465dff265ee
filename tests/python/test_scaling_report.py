"""Data-parallel training across GPUs (reproduce/scaling_report.py): the
dist_node logs read by their sidecars; tokens/s per rank count as the median
after the first steps and the efficiency against one rank, with the target's
verdict at 8 ranks and 16,384 tokens per GPU; the same global batch on N ranks
beside one process, loss by loss; logs without the geometry left out."""
import json
import unittest

from helpers import TempDirTest, sidecar, to_csv

import scaling_report  # noqa: E402  (helpers put reproduce/ on the path)

HEADER = ["run_id", "host", "device", "step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s"]


class ScalingReport(TempDirTest):
    def log(self, what, rates, losses=None, ranks=1, accumulation=1, det=False, shard=False, run_id="20261205T000000Z",
            geometry=True):
        losses = losses or [10.0 - s for s in range(len(rates))]
        name = f"2026-12-05_abcdef1_dist_{what}_gpt2_cuda.csv"
        self.write(name, to_csv(HEADER, [[run_id, "h", "H200", str(s + 1), repr(loss), "", "0.0006", "1", str(rate)]
                                         for s, (rate, loss) in enumerate(zip(rates, losses))]))
        side = json.loads(sidecar(run_id, "abcdef1" + "0" * 33))
        side.update({"ranks": ranks, "optimizer_state": "sharded over the ranks (ZeRO stage 1)" if shard else
                     "replicated"})
        if geometry:
            side.update({"batch": 16, "seq": 1024, "accumulation": accumulation, "deterministic": det,
                         "tokens_per_rank_step": 16384 * accumulation})
        self.write(name[:-4] + ".json", json.dumps(side))

    def test_efficiency_against_one_rank_and_the_target(self):
        # The first three steps (slow: first launches) are left out of the median.
        self.log("scale_n1", [1000, 2000, 3000, 400000, 410000, 420000])
        self.log("scale_n2", [1000, 2000, 3000, 800000, 810000, 790000], ranks=2)
        self.log("scale_n8", [1000, 2000, 3000, 3100000, 3120000, 3110000], ranks=8)
        text = scaling_report.section(scaling_report.load(self.dir))
        self.assertIn("16,384 tokens per GPU per step", text)
        self.assertIn("| 1 | 410,000 | 410,000 | 1.000 |", text)
        self.assertIn("| 2 | 800,000 | 400,000 | 0.976 |", text)
        self.assertIn("| 8 | 3,110,000 | 388,750 | 0.948 |", text)
        self.assertIn("16,384 tokens per GPU per step: 0.948, **not met**.", text)
        target, measured, met = scaling_report.target(scaling_report.load(self.dir))
        self.assertIn(">= 0.95 at 8 GPUs", target)
        self.assertEqual((measured, met), ("0.948 (commit abcdef1)", False))

    def test_target_not_measured_without_one_and_eight_ranks(self):
        self.log("scale_n1", [1, 1, 1, 400000])
        self.log("scale_n2", [1, 1, 1, 800000], ranks=2)
        _, measured, met = scaling_report.target(scaling_report.load(self.dir))
        self.assertIsNone(met)
        self.assertIn("not measured", measured)

    def test_same_batch_pairs_loss_by_loss(self):
        self.log("same_det_n8", [1, 1, 1, 1], [10.5, 9.25, 8.0, 7.5], ranks=8, det=True)
        self.log("same_det_n1", [1, 1, 1, 1], [10.5, 9.25, 8.0, 7.5], accumulation=8, det=True)
        self.log("same_replicated_n8", [1, 1, 1], [10.5, 9.25, 8.0], ranks=8)
        self.log("same_replicated_n1", [1, 1, 1], [10.5, 9.2501, 8.0], accumulation=8)
        # ZeRO stage 1 on the ranks; its one process keeps the whole state, as any one process does.
        self.log("same_shard_n8", [1, 1, 1], [10.5, 9.25, 8.0], ranks=8, shard=True)
        self.log("same_shard_n1", [1, 1, 1], [10.5, 9.25, 8.0], accumulation=8)
        self.log("same_other_n4", [1, 1, 1], [10.5, 9.25, 8.0], ranks=4)  # no one-process partner
        text = scaling_report.section(scaling_report.load(self.dir))
        self.assertIn("| abcdef1 | deterministic | replicated | 8 | 131,072 | 4 | 0 | yes |", text)
        self.assertIn("| abcdef1 | default | replicated | 8 | 131,072 | 3 | 0.0001 | no |", text)
        self.assertIn("| abcdef1 | default | ZeRO stage 1 | 8 | 131,072 | 3 | 0 | yes |", text)
        self.assertNotIn("| 4 | 65,536 |", text)
        self.assertNotIn("Scaling, commit", text)  # no scaling runs

    def test_nothing_without_two_sizes_or_a_pair_and_old_logs_left_out(self):
        self.log("scale_n1", [1, 1, 1, 400000])
        self.assertEqual(scaling_report.section(scaling_report.load(self.dir)), "")
        self.log("scale_n8", [1, 1, 1, 3000000], ranks=8, geometry=False)  # a log from before the geometry
        self.assertEqual(len(scaling_report.load(self.dir)), 1)
        self.assertEqual(scaling_report.section(scaling_report.load(self.dir)), "")


if __name__ == "__main__":
    unittest.main()
