"""reproduce/timing_report.py: a bench run in blocked timing set beside the
paired run of the same commit, suite, kernel and cases, row by row; each
side's own clock and power where the blocked run recorded them; a blocked run
without a paired twin, or of another commit, left out; the finding and the
README block saying so while none is committed."""
import json

from helpers import to_csv

import gemm_report  # noqa: E402  (helpers put reproduce/ on the path)
import timing_report  # noqa: E402

from test_gemm_report import Fixture, vs_lt  # noqa: E402

COLUMNS = gemm_report.BENCH_COLUMNS + gemm_report.SIDE_COLUMNS


def row(case, ratio, kernel, baseline="cublaslt", sides=("", "", "", ""), run_id="20261204T100000Z-aaaaaa"):
    r = vs_lt("llama7b", case, 4096, 11008, 4096, ratio, baseline=baseline, run_id=run_id)
    r[15] = kernel
    return r + list(sides)


def side(commit, suite, kernel="auto", cases="", block_s=None, pause_s=None, run_id="20261204T100000Z-aaaaaa"):
    d = {"run_id": run_id, "what": "gemm_bench", "git_commit": commit, "git_dirty": False, "suite": suite,
         "kernel": kernel, "cases_filter": cases, "complete": True, "environment": {"gpu_name": "NVIDIA H200"}}
    if block_s is not None:
        d["block_s"] = block_s
    if pause_s is not None:
        d["pause_s"] = pause_s
    return json.dumps(d) + "\n"


class TimingReport(Fixture):
    def load(self, files):
        return self.results(extra=files)

    def files(self, stem, commit, rows, **side_fields):
        return [(f"2026-12-04_{commit[:7]}_{stem}_gemm.csv", to_csv(COLUMNS, rows)),
                (f"2026-12-04_{commit[:7]}_{stem}_gemm.json", side(commit, **side_fields))]

    def test_blocked_rows_beside_their_paired_twins(self):
        c = "76392b9000000000000000000000000000000000"
        fin = self.load(
            self.files("llama7b_subset", c, [row("up", 1.00, "128x128"), row("qkv", 0.975, "128x128")],
                       suite="llama7b", cases="up,qkv") +
            self.files("llama7b_subset_blocked", c,
                       [row("up", 0.97, "128x128", sides=("1500", "1560", "695", "670"),
                            run_id="20261204T100500Z-bbbbbb"),
                        row("qkv", 0.945, "128x128", sides=("1490", "1550", "698", "672"),
                            run_id="20261204T100500Z-bbbbbb")],
                       suite="llama7b", cases="up,qkv", block_s=1.0, run_id="20261204T100500Z-bbbbbb") +
            # Blocked, but no paired run of its kernel: left out.
            self.files("llama7b_fixed_n192_subset_blocked", c, [row("up", 0.99, "128x192")], suite="llama7b",
                       kernel="fixed_n192", cases="up,qkv", block_s=1.0))
        pairs = timing_report.timing_pairs(fin.gemm_bench)
        self.assertEqual([(t.paired.case, round(t.shift, 4)) for t in pairs],
                         [("up", 0.97), ("qkv", round(0.945 / 0.975, 4))])
        md = timing_report.render_finding(fin)
        self.assertIn("| llama7b | up | 4096 x 11008 x 4096 | 128x128 | cublaslt | 1.000x [0.980, 1.020] | "
                      "0.970x [0.950, 0.990] | -3.0 % |", md)
        self.assertIn("| 1500 MHz, 695 W | 1560 MHz, 670 W |", md)
        self.assertIn("rigel's 128x128 tiles -3.1 % to -3.0 % (2 comparisons), their clock in the blocks -3.9 % to "
                      "-3.8 % against the library's", md)
        self.assertIn("In 2 of 2 comparisons against a vendor library the blocked ratio moved from the paired one the "
                      "way the two sides' clocks in their blocks differ", md)
        self.assertIn("Each side's mean power in its blocks: 670-698 W.", md)
        self.assertIn("In 2 of 2 comparisons the blocked ratio is the lower one.", md)
        self.assertNotIn("0.990x", md)
        self.assertIn("Blocks of 1 s.", md)
        block = timing_report.readme_block(fin)
        self.assertIn("2026-12-04_76392b9_llama7b_subset_blocked_gemm.csv", block)
        self.assertIn("| qkv |", block)

    def test_a_paired_run_of_another_commit_is_no_twin(self):
        fin = self.load(
            self.files("llama7b", "aaaaaaa000", [row("up", 1.00, "128x128")], suite="llama7b") +
            self.files("llama7b_blocked", "bbbbbbb000", [row("up", 0.97, "128x128")], suite="llama7b", block_s=1.0))
        self.assertEqual(timing_report.timing_pairs(fin.gemm_bench), [])
        self.assertIn("Not measured yet", timing_report.render_finding(fin))
        self.assertIn("No committed bench run in blocked timing yet", timing_report.readme_block(fin))
        # Nor is the blocked run one of the README's tables.
        self.assertEqual([gemm_report.dispatcher_run(f) for f in sorted(fin.gemm_bench, key=lambda f: f.name)],
                         [True, False])

    def test_a_paused_run_is_neither_a_twin_nor_a_table(self):
        # `--pause`: samples after an idle device, not back to back; the blocked run has no twin then.
        c = "76392b9000000000000000000000000000000000"
        fin = self.load(
            self.files("llama7b_paused", c, [row("up", 1.00, "128x128")], suite="llama7b", pause_s=0.1) +
            self.files("llama7b_blocked", c, [row("up", 0.97, "128x128", run_id="20261204T100500Z-bbbbbb")],
                       suite="llama7b", block_s=1.0, run_id="20261204T100500Z-bbbbbb"))
        self.assertEqual(timing_report.timing_pairs(fin.gemm_bench), [])
        self.assertEqual([gemm_report.dispatcher_run(f) for f in sorted(fin.gemm_bench, key=lambda f: f.name)],
                         [False, False])
