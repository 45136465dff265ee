"""Every GPU of a node (reproduce/fleet_report.py): the probes and ladder files
of one launch (their sidecars name it, with each file's GPU) are set side by
side: the probes' typed `value` column, the sweep's rates per rung (geometric
mean over the shapes every GPU ran) and each GPU's clock and power, a GPU off
the median by more than 3 % named; the exact answers (words, swept numbers)
compared, any that differ listed; files of no launch, or of a launch with one
GPU, give nothing."""
import json
import pathlib
import unittest

from helpers import TempDirTest, findings, sidecar, to_csv

import fleet_report  # noqa: E402  (helpers put reproduce/ on the path)

HEADER = ["run_id", "probe", "path", "dtype", "quantity", "measured", "verified", "detail", "unit", "value", "swept"]


class FleetReport(TempDirTest):
    def side(self, name, gpu, launch):
        side = json.loads(sidecar("r", "abcdef1" + "0" * 33))
        env = side.setdefault("environment", {})
        env.update({"gpu_index": str(gpu), "gpu_pci_bus_id": f"0000:{gpu:02d}:00.0", "gpu_name": "NVIDIA H200"})
        if launch:
            env["launch_id"] = launch
        self.write(name[:-4] + ".json", json.dumps(side))

    def ladder(self, name, gpu, launch, rates, clock=1755, power=690):
        """A sweep file: (rung, dtype, m, n, k, Gflop/s, status) rows."""
        header = ["run_id", "rung", "dtype", "m", "n", "k", "status", "rate", "rate_unit", "sm_clock_mhz", "power_w"]
        self.write(name, to_csv(header, [["r", rung, dt, m, n, k, st, str(rate), "Gflop/s", str(clock), str(power)]
                                         for rung, dt, m, n, k, rate, st in rates]))
        self.side(name, gpu, launch)
        return findings.read_result_file(f"{self.dir}/{name}")

    def probes(self, name, gpu, launch, ceiling, clock, layout="row 0: a0 a1"):
        rows = [["r", "throughput", "wgmma bf16", "bf16", "sustained throughput ceiling", "x", "1", "", "Tflop/s",
                 str(ceiling), ""],
                ["r", "throughput", "sm clock", "", "SM clock", "x", "1", "", "MHz", str(clock), ""],
                ["r", "accumulation", "hostile", "bf16", "hostile sum", "x", "1", "", "", "0.5", "3"],
                ["r", "mma_fragment_layout", "mma.sync m16n8k16", "bf16", "A fragment", layout, "1", "", "", "", ""]]
        self.write(name, to_csv(HEADER, rows))
        self.side(name, gpu, launch)
        return findings.read_result_file(f"{self.dir}/{name}")

    def test_gpus_side_by_side_and_the_odd_one_named(self):
        files = [self.probes(f"2026-12-01_abcdef1_probes_{g}.csv", g, "rigel_rendezvous.ab12", c, 1980)
                 for g, c in ((0, 880.0), (1, 884.0), (2, 820.0))]
        text = fleet_report.section(files)
        self.assertIn("## Every GPU of a node", text)
        self.assertIn("| throughput | sustained throughput ceiling | wgmma bf16 | Tflop/s | 820 | 880 | 884 | 7.3% | "
                      "GPU 2 (-6.8%) |", text)
        self.assertIn("| throughput | SM clock | sm clock | MHz | 1980 | 1980 | 1980 | 0.0% | none |", text)
        self.assertNotIn("hostile sum", text)  # a sweep's row (swept) is not compared
        csv = fleet_report.csv_text(fleet_report.rows(files))
        self.assertTrue(csv.startswith(",".join(fleet_report.COLUMNS) + "\n"))
        self.assertIn("rigel_rendezvous.ab12,2,0000:02:00.0,NVIDIA H200,throughput,wgmma bf16,bf16,"
                      "sustained throughput ceiling,Tflop/s,820,", csv)

    def test_the_sweep_beside_the_probes_and_answers_compared(self):
        lid = "rigel_rendezvous.cd34"
        sweep = {0: (700000, 1400000), 1: (690000, 1380000), 2: (600000, 1390000)}
        files = []
        for g, (bf16, e4m3) in sweep.items():
            files.append(self.probes(f"2026-12-01_abcdef1_probes_{g}.csv", g, lid, 880.0, 1980,
                                     "row 0: a0 a1" if g != 1 else "row 0: a1 a0"))
            rates = [("k39_wgmma_pingpong", "bf16", "4096", "4096", "4096", bf16, "PASS"),
                     ("k39_wgmma_pingpong", "bf16", "8192", "8192", "8192", bf16 * 1.1, "PASS"),
                     ("k39_wgmma_pingpong", "e4m3", "4096", "4096", "4096", e4m3, "PASS"),
                     ("k38_wgmma_fp8_block_scaled", "e4m3", "4096", "4096", "4096", 1.0, "FAIL")]
            if g == 0:  # a shape only one GPU ran is left out of the geometric mean
                rates.append(("k39_wgmma_pingpong", "bf16", "2048", "2048", "2048", 100.0, "PASS"))
            files.append(self.ladder(f"2026-12-01_abcdef1_ladder_{g}.csv", g, lid, rates, 1755 - 40 * g, 690 + g))
        text = fleet_report.section(files)
        # bf16: geometric mean of the 4096^3 and 8192^3 rates (the 2048^3 row only GPU 0 ran is left out)
        geo = [r * 1.1 ** 0.5 / 1000 for r in (700000, 690000, 600000)]
        self.assertIn(f"| k39_wgmma_pingpong | bf16 | 3 of 3 | 2 | {geo[2]:.6g} | {geo[1]:.6g} | {geo[0]:.6g} | "
                      "14.5% | GPU 2 (-13.0%) |", text)
        self.assertIn("| k39_wgmma_pingpong | e4m3 | 3 of 3 | 1 | 1380 | 1390 | 1400 | 1.4% | none |", text)
        self.assertNotIn("k38_wgmma_fp8_block_scaled", text)  # a failed row has no rate
        self.assertIn("| 2 | 0000:02:00.0 | 1675 | 692 |", text)
        self.assertIn("1 of 2 alike on every GPU that gave them; these differ:", text)
        self.assertIn("| mma_fragment_layout | mma.sync m16n8k16 | A fragment |  | GPU 0: row 0: a0 a1; "
                      "GPU 1: row 0: a1 a0; GPU 2: row 0: a0 a1 |", text)
        csv = fleet_report.csv_text(fleet_report.rows(files))
        self.assertIn(f"{lid},1,0000:01:00.0,NVIDIA H200,ladder,k39_wgmma_pingpong,bf16,rate at 4096x4096x4096,"
                      "Tflop/s,690,2026-12-01_abcdef1_ladder_1.csv", csv)
        self.assertIn(f"{lid},2,0000:02:00.0,NVIDIA H200,ladder,k39_wgmma_pingpong,bf16,SM clock at 4096x4096x4096,"
                      "MHz,1675,", csv)

    def test_a_gpu_without_its_sweep_leaves_the_others_compared(self):
        lid = "rigel_rendezvous.ef56"
        files = []
        for g, rate in ((0, 700000), (1, 690000), (2, 600000), (3, 700000)):
            files.append(self.probes(f"2026-12-01_abcdef1_probes_{g}.csv", g, lid, 880.0, 1980))
            if g != 3:  # GPU 3's sweep failed: its probes are there, its ladder file is not
                files.append(self.ladder(f"2026-12-01_abcdef1_ladder_{g}.csv", g, lid,
                                         [("k39_wgmma_pingpong", "bf16", "4096", "4096", "4096", rate, "PASS")]))
        text = fleet_report.section(files)
        self.assertIn("| k39_wgmma_pingpong | bf16 | 3 of 4 | 1 | 600 | 690 | 700 | 14.5% | GPU 2 (-13.0%) |", text)
        self.assertIn("No sweep rows from GPU 3", text)

    def test_two_gpus_name_no_outlier_and_swept_measurements_are_compared(self):
        lid = "rigel_rendezvous.gh78"
        files = []
        for g, cycles in ((0, 52.0), (1, 60.0)):
            f = self.probes(f"2026-12-01_abcdef1_probes_{g}.csv", g, lid, 880.0 if g == 0 else 800.0, 1980)
            # a timing at a swept N (wgmma_operand_layout's rows): a number with a unit, not an exact answer
            self.write(f.name, pathlib.Path(f"{self.dir}/{f.name}").read_text() + to_csv(HEADER, [
                ["r", "wgmma_operand_layout", "m64nNk16 NT", "bf16", "SM cycles a wgmma", "x", "1", "", "cycles",
                 str(cycles), "104"]]).split("\n", 1)[1])
            files.append(findings.read_result_file(f"{self.dir}/{f.name}"))
        text = fleet_report.section(files)
        self.assertIn("| throughput | sustained throughput ceiling | wgmma bf16 | Tflop/s | 800 | 840 | 880 | 9.5% | "
                      "- (two GPUs) |", text)
        self.assertIn("| wgmma_operand_layout | SM cycles a wgmma [swept 104] | m64nNk16 NT | cycles | 52 | 56 | 60 |",
                      text)
        self.assertNotIn("GPU 0: 52", text)  # not among the exact answers

    def test_no_launch_or_one_gpu_no_section(self):
        alone = [self.probes("2026-12-01_abcdef1_probes.csv", 0, "", 880.0, 1980)]
        self.assertEqual(fleet_report.section(alone), "")
        one = [self.probes("2026-12-01_abcdef1_probes_l.csv", 0, "rigel_rendezvous.x", 880.0, 1980)]
        self.assertEqual(fleet_report.section(one), "")


if __name__ == "__main__":
    unittest.main()
