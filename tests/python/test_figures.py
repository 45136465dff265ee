"""The figures from every committed result: reproduce.py on a temporary copy of
results/ and README.md draws each figure the README links, every relative link
of the README points at a file that exists (a figure: in the regenerated copy;
anything else: in the checkout), and a second run changes no byte.

The figures need matplotlib: the test runs reproduce.py with this interpreter
when it has matplotlib, else with Debian's /usr/bin/python3 (the one the
Makefile prefers and scripts/bootstrap.sh equips), and is skipped only when
neither has it."""
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import unittest

from helpers import REPRODUCE, TempDirTest, findings, tree_snapshot

ROOT = os.path.normpath(os.path.join(REPRODUCE, ".."))
SCRIPT = os.path.join(REPRODUCE, "reproduce.py")
# The figures of the report; each must be drawn and linked from the README.
FIGURES = ["climb.png", "wins.png", "roofline.png", "speed_ratios.png", "accumulator.png", "fused_gain.png"]
# Markdown links and images: [text](target) and ![alt](target), across line breaks.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def python_with_matplotlib():
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return exe
    return None


PYTHON = python_with_matplotlib()


def relative_links(markdown):
    """Targets of the links that point into the tree (no scheme, no bare anchor),
    without their #anchor."""
    out = []
    for target in LINK.findall(markdown):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        out.append(target.split("#", 1)[0])
    return out


@unittest.skipUnless(PYTHON, "matplotlib is installed for neither this python3 nor /usr/bin/python3")
class Figures(TempDirTest):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            cls.readme = f.read()

    def setUp(self):
        super().setUp()
        self.tree = os.path.join(self.dir, "tree")
        shutil.copytree(os.path.join(ROOT, "results"), os.path.join(self.tree, "results"))
        shutil.copyfile(os.path.join(ROOT, "README.md"), os.path.join(self.tree, "README.md"))

    def run_reproduce(self):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        r = subprocess.run([PYTHON, SCRIPT, "--root", self.tree], env=env, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def snapshot(self):
        return tree_snapshot(self.tree)

    def test_every_figure_is_drawn_from_the_committed_results_and_linked(self):
        self.run_reproduce()
        figdir = os.path.join(self.tree, "docs", "figures")
        for name in FIGURES:
            path = os.path.join(figdir, name)
            self.assertTrue(os.path.isfile(path), f"{name} was not drawn")
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
            self.assertIn(f"docs/figures/{name}", relative_links(self.readme), f"README.md does not link {name}")

    def test_every_readme_and_findings_link_points_at_a_file(self):
        self.run_reproduce()
        links = relative_links(self.readme)
        self.assertTrue(links)
        for target in links:
            where = self.tree if target.startswith("docs/figures/") else ROOT
            self.assertTrue(os.path.exists(os.path.join(where, target)),
                            f"README.md links {target}, which does not exist")
        with open(os.path.join(self.tree, "FINDINGS.md"), encoding="utf-8") as f:
            for target in relative_links(f.read()):
                self.assertTrue(os.path.exists(os.path.join(self.tree, target)),
                                f"FINDINGS.md links {target}, which was not generated")

    def test_a_second_run_changes_no_byte(self):
        self.run_reproduce()
        first = self.snapshot()
        self.run_reproduce()
        self.assertEqual(self.snapshot(), first)


def update_manifest(tree):
    """results/MANIFEST.sha256 of a temporary tree, after a result file was added or removed there."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([PYTHON, SCRIPT, "--root", tree, "--update-manifest", "--no-figures"], env=env,
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise AssertionError(r.stderr)


def per_gap_rows(path, dtype, kept_bits, g_max=40):
    """The accumulation probe's per-gap rows for a model accumulator that keeps
    `kept_bits` bits below the large term: exact up to that gap, then the small
    terms are lost."""
    rows = []
    for g in range(1, g_max + 1):
        exact = 2.0 ** 20 + 127 * 2.0 ** (20 - g)
        device = exact if g <= kept_bits else 2.0 ** 20
        rows.append(["2099-01-01T00:00:00Z-acc", "accumulation", path, dtype,
                     "RIGEL's hostile sum at one gap: relative error of the 128-term sum", repr(device), repr(exact),
                     "", "1", "fills_in", "at least single precision", "PTX ISA", f"gap {g}.",
                     repr(abs(device - exact) / exact), "", "", "", "", "", "", str(g)])
    return rows


@unittest.skipUnless(PYTHON, "matplotlib is installed for neither this python3 nor /usr/bin/python3")
class Accumulator(Figures):
    """The accumulator figure from a probes CSV that holds per-gap rows (written
    into the temporary copy, with the manifest updated for it)."""

    def setUp(self):
        super().setUp()
        rows = (per_gap_rows("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "f16", 25)
                + per_gap_rows("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", "e4m3", 13))
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(findings.PROBE_COLUMNS + findings.PROBE_TYPED_COLUMNS)
        w.writerows(rows)
        with open(os.path.join(self.tree, "results", "h200", "2099-01-01_acc0000_probes.csv"), "w",
                  encoding="utf-8") as f:
            f.write(buf.getvalue())
        update_manifest(self.tree)

    def test_the_accumulator_is_drawn_linked_from_findings_and_byte_stable(self):
        r = self.run_reproduce()
        self.assertNotIn("accumulator.png not drawn", r.stderr)
        png = os.path.join(self.tree, "docs", "figures", "accumulator.png")
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        with open(os.path.join(self.tree, "FINDINGS.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertRegex(md, r"\n\d+ rows of a sweep are not listed here: they are drawn in \[docs/figures/accumulator")
        self.assertIn("docs/figures/accumulator.png", relative_links(md))
        self.assertNotIn("RIGEL's hostile sum at one gap", md)
        first = self.snapshot()
        self.run_reproduce()
        self.assertEqual(self.snapshot(), first)

    # The committed README does not link the figure until a committed CSV draws it.
    test_every_figure_is_drawn_from_the_committed_results_and_linked = None
    test_a_second_run_changes_no_byte = None


class NoPerGapRows(Figures):
    """Without per-gap rows reproduce still succeeds, draws no accumulator and says why."""
    test_every_figure_is_drawn_from_the_committed_results_and_linked = None
    test_every_readme_and_findings_link_points_at_a_file = None
    test_a_second_run_changes_no_byte = None

    def setUp(self):
        super().setUp()
        folder = os.path.join(self.tree, "results", "h200")
        for name in os.listdir(folder):  # leave out any committed file that has a sweep column
            if name.endswith("_probes.csv"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    if "swept" in f.readline().strip().split(","):
                        os.remove(os.path.join(folder, name))
        update_manifest(self.tree)

    def test_reproduce_succeeds_and_says_the_accumulator_was_not_drawn(self):
        r = self.run_reproduce()
        self.assertFalse(os.path.exists(os.path.join(self.tree, "docs", "figures", "accumulator.png")))
        self.assertIn("accumulator.png not drawn", r.stderr)


class Links(unittest.TestCase):
    """The link finder the test above relies on."""

    def test_it_finds_images_and_links_across_lines_and_leaves_out_urls_and_anchors(self):
        md = ("![a chart\nwith words](docs/figures/a.png) see [the table](#the-table), "
              "[map](docs/map.md#rungs) and [site](https://example.org/x)")
        self.assertEqual(relative_links(md), ["docs/figures/a.png", "docs/map.md"])


if __name__ == "__main__":
    unittest.main()
