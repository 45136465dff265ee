"""The README's first table (reproduce/glance.py): per area, the targets met out of all, and every target
not met or not measured with what was measured; the head counts them over every area."""
import unittest

import helpers  # noqa: F401  (puts reproduce/ on the path)
import glance  # noqa: E402


class Glance(unittest.TestCase):
    def test_counts_and_lists_what_is_not_met(self):
        text = glance.block([
            ("kernels", "#kernels", [("a >= 1.05x", "1.049x", False), ("b >= 1.03x", "1.056x", True)]),
            ("training", "#training", [("c", "1.15x", True)]),
            ("several GPUs", "docs/multi_gpu.md", [("d >= 0.95", "not measured", None)]),
        ])
        self.assertTrue(text.startswith("Where rigel stands against its targets on the H200 machine: **2 of 4 met**"))
        self.assertIn("| [kernels](#kernels) | 1 of 2 | a >= 1.05x (1.049x) |", text)
        self.assertIn("| [training](#training) | 1 of 1 | - |", text)
        self.assertIn("| [several GPUs](docs/multi_gpu.md) | 0 of 1, 1 not measured | d >= 0.95 (not measured) |", text)

    def test_an_area_without_targets_counts_nothing(self):
        text = glance.block([("empty", "#e", [])])
        self.assertIn("**0 of 0 met**", text)
        self.assertIn("| [empty](#e) | 0 of 0 | - |", text)


if __name__ == "__main__":
    unittest.main()
