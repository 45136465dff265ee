"""The verdict rules (reproduce/verdicts.py) at their boundaries."""
import math
import unittest

import helpers  # noqa: F401  (puts reproduce/ on the path)
from verdicts import DispatchSignals, accelerated_rule, triangulate_dispatch, unit_of_opcode, win_rule


class AcceleratedRule(unittest.TestCase):
    def test_exactly_one_point_five_is_accelerated(self):
        v = accelerated_rule(150.0, 100.0)
        self.assertTrue(v.accelerated)
        self.assertEqual(v.label, "accelerated")
        self.assertEqual(v.ratio, 1.5)

    def test_quotient_rounding_does_not_decide_the_boundary(self):
        self.assertLess(0.3 / 0.2, 1.5)  # the binary quotient falls just short
        self.assertTrue(accelerated_rule(0.3, 0.2).accelerated)

    def test_below_one_point_five_is_footprint_only(self):
        for low in (149.99, 149.0, 100.0, 94.0):
            v = accelerated_rule(low, 100.0)
            self.assertFalse(v.accelerated, low)
            self.assertEqual(v.label, "footprint only", low)
        self.assertFalse(accelerated_rule(1.4999999, 1.0).accelerated)

    def test_missing_rates_are_not_available(self):
        for lo, hi in ((0, 100), (100, 0), (math.nan, 100), (100, -1)):
            v = accelerated_rule(lo, hi)
            self.assertFalse(v.accelerated)
            self.assertEqual(v.label, "not available")
            self.assertTrue(math.isnan(v.ratio))


class WinRule(unittest.TestCase):
    def test_exactly_one_point_one_zero_wins_against_the_strongest_baseline(self):
        v = win_rule(110.0, [("naive tiled", 20.0), ("cuBLAS", 100.0), ("mma.sync", 80.0)])
        self.assertTrue(v.wins)
        self.assertEqual(v.label, "wins")
        self.assertEqual(v.strongest, "cuBLAS")
        self.assertAlmostEqual(v.ratio, 1.10, places=12)
        self.assertLess(0.11 / 0.1, 1.1)  # binary rounding again
        self.assertTrue(win_rule(0.11, [("b", 0.1)]).wins)

    def test_below_one_point_one_zero_is_no_win(self):
        v = win_rule(109.9, [("cuBLAS", 100.0), ("naive", 5.0)])
        self.assertFalse(v.wins)
        self.assertEqual(v.label, "no win")
        # Beating a weak baseline by far does not count when a strong one exists.
        self.assertFalse(win_rule(105.0, [("naive", 10.0), ("cuBLAS", 100.0)]).wins)

    def test_unmeasured_baselines_are_ignored(self):
        self.assertTrue(win_rule(120.0, [("cuBLAS", 100.0), ("missing", math.nan), ("zero", 0.0)]).wins)
        none = win_rule(120.0, [("missing", math.nan)])
        self.assertEqual(none.label, "not available")
        self.assertFalse(none.wins)
        self.assertEqual(win_rule(0.0, [("cuBLAS", 100.0)]).label, "not available")


class Triangulation(unittest.TestCase):
    def test_opcodes_name_their_unit(self):
        self.assertEqual(unit_of_opcode("HGMMA.64x128x16.F32.BF16"), "tensor core (HGMMA)")
        self.assertEqual(unit_of_opcode("QGMMA.64x256x32.F32.E4M3.E4M3"), "tensor core (QGMMA)")
        self.assertEqual(unit_of_opcode("hmma.16816.f32.bf16"), "tensor core (HMMA, legacy warp path)")
        self.assertEqual(unit_of_opcode("FFMA"), "CUDA cores (FFMA)")
        self.assertEqual(unit_of_opcode("DMMA.8x8x4"), "tensor core (DMMA, fp64)")
        self.assertEqual(unit_of_opcode("LDS.128"), "")
        self.assertEqual(unit_of_opcode("HGMMAX"), "")  # whole mnemonics only

    def test_wgmma_path_with_all_signals_agreeing(self):
        s = DispatchSignals(measured_tflops=620, scalar_fma_roofline_tflops=67,
                            sass_opcodes=["LDS.128", "HGMMA.64x256x16.F32.BF16", "FFMA", "WARPGROUP.ARRIVE"],
                            sustained_power_w=690, power_limit_w=700, sm_clock_mhz=1500, max_sm_clock_mhz=1980)
        v = triangulate_dispatch(s)
        self.assertEqual(v.unit, "tensor core (HGMMA)")
        self.assertEqual((v.signals_available, v.signals_agreeing), (3, 3))
        self.assertTrue(v.consistent)
        self.assertIn("all available signals agree", v.reasoning)

    def test_legacy_warp_path_outranks_its_ffma(self):
        v = triangulate_dispatch(DispatchSignals(sass_opcodes=["FFMA", "HMMA.16816.F32.BF16", "IMAD"],
                                                 measured_tflops=350, scalar_fma_roofline_tflops=67))
        self.assertEqual(v.unit, "tensor core (HMMA, legacy warp path)")
        self.assertEqual(v.signals_available, 2)
        self.assertTrue(v.consistent)

    def test_scalar_path_at_full_clock(self):
        v = triangulate_dispatch(DispatchSignals(sass_opcodes=["FFMA", "LDS"], measured_tflops=48,
                                                 scalar_fma_roofline_tflops=67, sm_clock_mhz=1965,
                                                 max_sm_clock_mhz=1980, sustained_power_w=420, power_limit_w=700))
        self.assertEqual(v.unit, "CUDA cores (FFMA)")
        self.assertEqual(v.signals_available, 3)
        self.assertTrue(v.consistent)

    def test_matrix_opcode_below_the_scalar_roofline_is_flagged(self):
        # RIGEL's finding on the M4 Max: a "matrix" path at 46 % of the scalar
        # roofline is no evidence of a dedicated unit.
        v = triangulate_dispatch(DispatchSignals(sass_opcodes=["HMMA.16816.F32"], measured_tflops=0.46 * 67,
                                                 scalar_fma_roofline_tflops=67))
        self.assertEqual(v.unit, "tensor core (HMMA, legacy warp path)")
        self.assertFalse(v.consistent)
        self.assertEqual(v.signals_agreeing, 1)
        self.assertIn("no evidence of a dedicated matrix unit", v.reasoning)

    def test_ceiling_beyond_the_roofline_without_matrix_opcodes(self):
        s = DispatchSignals(measured_tflops=300, scalar_fma_roofline_tflops=67)
        self.assertEqual(triangulate_dispatch(s).unit, "tensor core (instruction not identified)")
        s.sass_opcodes = ["FFMA"]  # the listing misses the instruction doing the work
        v = triangulate_dispatch(s)
        self.assertEqual(v.unit, "CUDA cores (FFMA)")
        self.assertFalse(v.consistent)

    def test_nothing_known_is_undetermined(self):
        v = triangulate_dispatch(DispatchSignals())
        self.assertEqual(v.unit, "undetermined")
        self.assertFalse(v.consistent)
        self.assertEqual(v.signals_available, 0)

    def test_power_boundary_is_inclusive(self):
        # Exactly 90 % of 700 W, exactly 90 % of 1980 MHz.
        v = triangulate_dispatch(DispatchSignals(sass_opcodes=["HGMMA.64x128x16.F32.F16"], sustained_power_w=630,
                                                 power_limit_w=700, sm_clock_mhz=1782, max_sm_clock_mhz=1980))
        self.assertEqual((v.signals_available, v.signals_agreeing), (2, 2))

    def test_energy_per_flop_tells_the_units_apart(self):
        # 430 W at 660 Tflop/s against the scalar path's 264 W at 66: 0.16x.
        v = triangulate_dispatch(DispatchSignals(sass_opcodes=["HMMA"], measured_tflops=660,
                                                 scalar_fma_roofline_tflops=66, sustained_power_w=430,
                                                 scalar_power_w=264))
        self.assertEqual((v.signals_available, v.signals_agreeing), (3, 3))
        self.assertIn("far below what the CUDA cores spend", v.reasoning)


if __name__ == "__main__":
    unittest.main()
