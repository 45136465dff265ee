"""reproduce.py end to end on a temporary copy of a few committed results:
one run writes README tables, docs/ and FINDINGS.md; a second run changes no
byte; without matplotlib it stops with one line unless --no-figures is given."""
import os
import shutil
import subprocess
import sys
import unittest

from helpers import REPRODUCE, TempDirTest, tree_snapshot

ROOT = os.path.normpath(os.path.join(REPRODUCE, ".."))
SCRIPT = os.path.join(REPRODUCE, "reproduce.py")
# A small, complete slice of the committed results: a probes run with its
# SASS records and a ladder run that holds both the CPU and GPU rows.
RESULT_FILES = ["2026-11-30_d31ebbb_probes.csv", "2026-11-30_d31ebbb_probes.json", "2026-11-30_d31ebbb_sass.csv",
                "2026-11-30_d31ebbb_sass_kernels.csv", "2026-11-30_7c1af3f_ladder.csv",
                "2026-11-30_7c1af3f_ladder.json", "2026-11-30_7c1af3f_ladder_splitk.csv",
                "2026-11-30_7c1af3f_ladder_splitk.json", "2026-11-30_7c1af3f_sass.csv"]
README = """# test tree

<!-- generated:climb:begin -->
<!-- generated:climb:end -->
<!-- generated:ladder-2048:begin -->
<!-- generated:ladder-2048:end -->
"""


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


class Reproduce(TempDirTest):
    def setUp(self):
        super().setUp()
        self.tree = os.path.join(self.dir, "tree")
        results = os.path.join(self.tree, "results", "h200")
        os.makedirs(results)
        for name in RESULT_FILES:
            shutil.copyfile(os.path.join(ROOT, "results", "h200", name), os.path.join(results, name))
        self.write("README.md", README, self.tree)
        # A matplotlib that cannot be imported, for the runs that must notice.
        self.no_mpl = os.path.join(self.dir, "no_matplotlib")
        self.write("matplotlib/__init__.py", "raise ImportError('matplotlib blocked by the test')\n", self.no_mpl)

    def run_reproduce(self, *args, block_matplotlib=False):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        if block_matplotlib:
            env["PYTHONPATH"] = self.no_mpl
        return subprocess.run([sys.executable, SCRIPT, "--root", self.tree, *args], env=env,
                              capture_output=True, text=True, timeout=120)

    def snapshot(self):
        return tree_snapshot(self.tree)

    def test_without_matplotlib_it_says_so_and_fails_unless_told_to_skip_figures(self):
        r = self.run_reproduce("--update-manifest", block_matplotlib=True)
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("matplotlib is not installed", lines[0])
        self.assertIn("--no-figures", lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.tree, "FINDINGS.md")))  # nothing half-written
        r = self.run_reproduce("--update-manifest", "--no-figures", block_matplotlib=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("figures skipped", r.stdout)

    def test_one_run_writes_tables_and_findings_and_a_second_changes_nothing(self):
        args = ["--update-manifest"] + ([] if have_matplotlib() else ["--no-figures"])
        r = self.run_reproduce(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = self.snapshot()
        with open(os.path.join(self.tree, "FINDINGS.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertTrue(md.startswith("# rigel findings\n"))
        self.assertIn("2026-11-30_d31ebbb_probes.csv", md)
        self.assertIn("## Does a rigel kernel win?", md)
        with open(os.path.join(self.tree, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertIn("| k01_cpu_naive | cpu | f32 | 1 |", readme)
        self.assertIn(os.path.join("docs", "ladder.md"), first)
        if have_matplotlib():
            self.assertIn(os.path.join("docs", "figures", "ladder_2048.png"), first)
        r = self.run_reproduce(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.snapshot(), first)

    def test_another_machines_results_get_their_own_page_and_stay_out_of_the_main_tables(self):
        args = ["--update-manifest", "--no-figures"]
        gpt2 = ["2026-12-04_99a7748_gpt2_gemm.csv", "2026-12-04_99a7748_gpt2_gemm.json"]
        for name in gpt2:
            shutil.copyfile(os.path.join(ROOT, "results", "h200", name), os.path.join(self.tree, "results", "h200", name))
        self.assertEqual(self.run_reproduce(*args).returncode, 0)
        main_only = {}
        for name in ("README.md", os.path.join("docs", "ladder.md"), "FINDINGS.md"):
            with open(os.path.join(self.tree, name), encoding="utf-8") as f:
                main_only[name] = f.read()
        # The same ladder run, as if measured on another machine: its rows are h100's alone.
        other = os.path.join(self.tree, "results", "h100")
        os.makedirs(other)
        for name in ["2026-11-30_7c1af3f_ladder.csv", "2026-11-30_7c1af3f_ladder.json"] + gpt2:
            shutil.copyfile(os.path.join(self.tree, "results", "h200", name), os.path.join(other, name))
        r = self.run_reproduce(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name, text in main_only.items():
            with open(os.path.join(self.tree, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), text, name)
        with open(os.path.join(self.tree, "docs", "machines", "h100.md"), encoding="utf-8") as f:
            page = f.read()
        self.assertTrue(page.startswith("# rigel on the h100 machine\n"))
        self.assertIn("## Ladder, 2048x2048x2048", page)
        self.assertIn("| h100/2026-11-30_7c1af3f_ladder.csv |", page)
        # Each paired ratio beside the main machine's for the same comparison, both files named; the same
        # run copied to both folders reads the same on each side.
        self.assertIn("## Beside the h200 machine", page)
        row = next(line for line in page.splitlines() if line.startswith("| gpt2 fwd_qkv: rigel / cublaslt |"))
        cells = [c.strip() for c in row.split("|")]
        self.assertEqual(cells[4], cells[5])
        self.assertIn("h100/2026-12-04_99a7748_gpt2_gemm.csv, h200/2026-12-04_99a7748_gpt2_gemm.csv", row)
        self.assertIn("From h100/2026-12-04_99a7748_gpt2_gemm.csv", page)

    def test_bad_results_stop_it_with_one_line_naming_the_file(self):
        with open(os.path.join(self.tree, "results", "h200", "2026-11-30_d31ebbb_probes.json"), "w") as f:
            f.write("[]")
        r = self.run_reproduce("--update-manifest", "--no-figures")
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("2026-11-30_d31ebbb_probes.json", lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.tree, "FINDINGS.md")))


if __name__ == "__main__":
    unittest.main()
