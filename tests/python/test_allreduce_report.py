"""NCCL's all-reduce beside NVLink (reproduce/allreduce_report.py): the newest
run with two ranks or more is shown, each bus bandwidth as a share of one
direction of NVLink 4; a one-rank run (no link crossed) gives no section."""
import unittest

from helpers import TempDirTest, sidecar, to_csv

import allreduce_report  # noqa: E402  (helpers put reproduce/ on the path)

HEADER = ["run_id", "host", "device", "ranks", "bytes", "iterations", "seconds", "algbw_gbs", "busbw_gbs"]


class AllreduceReport(TempDirTest):
    def run_file(self, name, ranks, rows):
        self.write(name, to_csv(HEADER, [["r", "h", "NVIDIA H200", str(ranks)] + row for row in rows]))
        self.write(name[:-4] + ".json", sidecar("r", "abcdef1" + "0" * 33))

    def test_the_newest_multi_rank_run_beside_nvlink(self):
        self.run_file("2026-12-01_abcdef1_nccl_allreduce.csv", 8,
                      [["1024", "200", "2e-05", "0.0512", "0.0896"], ["1073741824", "5", "0.005", "214.7", "375.8"]])
        text = allreduce_report.section(allreduce_report.load(self.dir))
        self.assertIn("## NCCL all-reduce across the node's GPUs", text)
        self.assertIn("| 1024 MiB | 8 | 5000.0 | 214.7 | 375.8 | 84% |", text)
        self.assertIn("| 1 KiB | 8 | 20.0 | 0.1 | 0.1 | 0% |", text)

    def test_a_run_under_a_run_id_name_is_read(self):
        # One rank's run took the plain name; a later run of 8 ranks, same date and commit, the run id's.
        self.run_file("2026-12-01_abcdef1_nccl_allreduce.csv", 1, [["1024", "200", "1e-05", "0.1", "0"]])
        self.run_file("2026-12-01_abcdef1_nccl_allreduce_20261201T120000Z-abc123.csv", 8,
                      [["1073741824", "5", "0.005", "214.7", "375.8"]])
        self.assertEqual(len(allreduce_report.load(self.dir)), 2)
        self.assertIn("| 1024 MiB | 8 | 5000.0 | 214.7 | 375.8 | 84% |",
                      allreduce_report.section(allreduce_report.load(self.dir)))

    def test_one_rank_gives_nothing(self):
        self.run_file("2026-12-01_abcdef1_nccl_allreduce.csv", 1, [["1024", "200", "1e-05", "0.1", "0"]])
        self.assertEqual(allreduce_report.section(allreduce_report.load(self.dir)), "")


if __name__ == "__main__":
    unittest.main()
