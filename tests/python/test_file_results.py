"""scripts/file_results.py on made-up visits: each CSV and its sidecar filed
under the card its sidecar names, logs named for the run, and every problem
refused with one line before anything is copied."""
import json
import os
import subprocess
import sys
import unittest

from helpers import TempDirTest, tree_snapshot

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "file_results.py"))


def sidecar(gpu):
    return json.dumps({"run_id": "20261205T000000Z-abcdef", "environment": {"gpu_name": gpu}})


class FileResults(TempDirTest):
    def setUp(self):
        super().setUp()
        self.visit = os.path.join(self.dir, "visit")
        self.root = os.path.join(self.dir, "checkout")
        os.makedirs(os.path.join(self.root, "results"))

    def run_script(self, *args):
        return subprocess.run([sys.executable, "-B", SCRIPT, self.visit, "--root", self.root, *args],
                              capture_output=True, text=True, timeout=60)

    def results(self):
        return tree_snapshot(os.path.join(self.root, "results"))

    def test_each_card_gets_its_own_folder_and_logs_are_named_for_the_run(self):
        self.write("2026-12-05_abc1234_ladder.csv", "run_id\nx\n", self.visit)
        self.write("2026-12-05_abc1234_ladder.json", sidecar("NVIDIA H100 80GB HBM3"), self.visit)
        self.write("tests.log", "100% tests passed\n", self.visit)
        self.write("probes.txt", "table\n", self.visit)
        r = self.run_script("--logs")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(self.results()), sorted([
            os.path.join("h100", "2026-12-05_abc1234_ladder.csv"),
            os.path.join("h100", "2026-12-05_abc1234_ladder.json"),
            os.path.join("h100", "experiments", "2026-12-05_abc1234_tests_log.txt"),
            os.path.join("h100", "experiments", "2026-12-05_abc1234_probes.txt")]))
        # A second filing of the same bytes changes nothing and succeeds.
        before = self.results()
        self.assertEqual(self.run_script("--logs").returncode, 0)
        self.assertEqual(self.results(), before)

    def test_an_h200_run_goes_to_h200(self):
        self.write("2026-12-05_abc1234_gpt2_gemm.csv", "run_id\nx\n", self.visit)
        self.write("2026-12-05_abc1234_gpt2_gemm.json", sidecar("NVIDIA H200"), self.visit)
        self.assertEqual(self.run_script().returncode, 0)
        self.assertIn(os.path.join("h200", "2026-12-05_abc1234_gpt2_gemm.csv"), self.results())

    def test_subfolder_variants_go_to_experiments_renamed_with_their_sidecars_csv_field(self):
        self.write("2026-12-05_abc1234_ladder.csv", "run_id\nx\n", self.visit)
        self.write("2026-12-05_abc1234_ladder.json", sidecar("NVIDIA H100 80GB HBM3"), self.visit)
        for sub in ("env_0_1", "env_1_1"):
            self.write(os.path.join(sub, "2026-12-05_abc1234_ladder.csv"), f"run_id\n{sub}\n", self.visit)
            side = {"run_id": "r", "csv": "2026-12-05_abc1234_ladder.csv",
                    "environment": {"gpu_name": "NVIDIA H100 80GB HBM3"}}
            self.write(os.path.join(sub, "2026-12-05_abc1234_ladder.json"), json.dumps(side, indent=2), self.visit)
        self.write(os.path.join("env_0_1", "ladder.txt"), "table\n", self.visit)
        r = self.run_script("--logs")
        self.assertEqual(r.returncode, 0, r.stderr)
        exp = os.path.join("h100", "experiments")
        self.assertEqual(sorted(self.results()), sorted([
            os.path.join("h100", "2026-12-05_abc1234_ladder.csv"),
            os.path.join("h100", "2026-12-05_abc1234_ladder.json"),
            os.path.join(exp, "2026-12-05_abc1234_env_0_1_ladder.csv"),
            os.path.join(exp, "2026-12-05_abc1234_env_0_1_ladder.json"),
            os.path.join(exp, "2026-12-05_abc1234_env_1_1_ladder.csv"),
            os.path.join(exp, "2026-12-05_abc1234_env_1_1_ladder.json"),
            os.path.join(exp, "2026-12-05_abc1234_env_0_1_ladder.txt")]))
        with open(os.path.join(self.root, "results", exp, "2026-12-05_abc1234_env_1_1_ladder.json")) as f:
            side = json.load(f)
        self.assertEqual(side["csv"], "2026-12-05_abc1234_env_1_1_ladder.csv")
        self.assertEqual(side["run_id"], "r")
        with open(os.path.join(self.root, "results", exp, "2026-12-05_abc1234_env_1_1_ladder.csv")) as f:
            self.assertEqual(f.read(), "run_id\nenv_1_1\n")
        before = self.results()
        self.assertEqual(self.run_script("--logs").returncode, 0)
        self.assertEqual(self.results(), before)

    def test_a_visit_without_csv_files_its_logs_by_its_nvidia_smi_and_run(self):
        self.write("nvidia_smi.txt", "name, driver_version\nNVIDIA H100 80GB HBM3, 580.159.04\n", self.visit)
        self.write("tests.log", "==== gpu_train_check: passed (6.9 s)\n", self.visit)
        self.write("RUN", "2026-12-07_fbb3b5d\n", self.visit)
        r = self.run_script("--logs")
        self.assertEqual(r.returncode, 0, r.stderr)
        exp = os.path.join("h100", "experiments")
        self.assertEqual(sorted(self.results()), sorted([
            os.path.join(exp, "2026-12-07_fbb3b5d_tests_log.txt"),
            os.path.join(exp, "2026-12-07_fbb3b5d_nvidia_smi.txt")]))
        # Without the RUN file (a visit before it was written) there is nothing to name the logs by.
        os.remove(os.path.join(self.visit, "RUN"))
        os.remove(os.path.join(self.root, "results", exp, "2026-12-07_fbb3b5d_tests_log.txt"))
        r = self.run_script("--logs")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("no nvidia_smi.txt and RUN", r.stderr)

    def test_problems_are_refused_with_one_line_and_nothing_copied(self):
        cases = {
            "no sidecar": ({"2026-12-05_abc1234_ladder.csv": "run_id\n"}, "has no sidecar"),
            "no card": ({"2026-12-05_abc1234_ladder.csv": "run_id\n",
                         "2026-12-05_abc1234_ladder.json": sidecar("")}, "names no card"),
            "not json": ({"2026-12-05_abc1234_ladder.csv": "run_id\n",
                          "2026-12-05_abc1234_ladder.json": "{"}, "is not a sidecar"),
        }
        for what, (files, message) in cases.items():
            with self.subTest(what):
                for name in os.listdir(self.visit) if os.path.isdir(self.visit) else []:
                    os.remove(os.path.join(self.visit, name))
                for name, text in files.items():
                    self.write(name, text, self.visit)
                r = self.run_script()
                self.assertEqual(r.returncode, 2)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertEqual(self.results(), {})

    def test_a_file_already_filed_with_other_bytes_is_not_overwritten(self):
        self.write("2026-12-05_abc1234_ladder.csv", "run_id\nnew\n", self.visit)
        self.write("2026-12-05_abc1234_ladder.json", sidecar("NVIDIA H200"), self.visit)
        filed = self.write(os.path.join("results", "h200", "2026-12-05_abc1234_ladder.csv"), "run_id\nold\n",
                           self.root)
        r = self.run_script()
        self.assertEqual(r.returncode, 2)
        self.assertIn("already filed with other bytes", r.stderr)
        with open(filed) as f:
            self.assertEqual(f.read(), "run_id\nold\n")
        self.assertNotIn(os.path.join("h200", "2026-12-05_abc1234_ladder.json"), self.results())


if __name__ == "__main__":
    unittest.main()
