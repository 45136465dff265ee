"""Every GPU of a node (reproduce/fleet_report.py): the probes files of one
launch (their sidecars name it, with each file's GPU) are set side by side by
their typed `value` column; a GPU off the median by more than 3 % is named;
files of no launch, or of a launch with one GPU, give nothing."""
import json
import unittest

from helpers import TempDirTest, findings, sidecar, to_csv

import fleet_report  # noqa: E402  (helpers put reproduce/ on the path)

HEADER = ["run_id", "probe", "path", "dtype", "quantity", "measured", "verified", "detail", "unit", "value", "swept"]


class FleetReport(TempDirTest):
    def probes(self, name, gpu, launch, ceiling, clock):
        rows = [["r", "throughput", "wgmma bf16", "bf16", "sustained throughput ceiling", "x", "1", "", "Tflop/s",
                 str(ceiling), ""],
                ["r", "throughput", "sm clock", "", "SM clock", "x", "1", "", "MHz", str(clock), ""],
                ["r", "accumulation", "hostile", "bf16", "hostile sum", "x", "1", "", "", "0.5", "3"]]
        self.write(name, to_csv(HEADER, rows))
        side = json.loads(sidecar("r", "abcdef1" + "0" * 33))
        env = side.setdefault("environment", {})
        env.update({"gpu_index": str(gpu), "gpu_pci_bus_id": f"0000:{gpu:02d}:00.0", "gpu_name": "NVIDIA H200"})
        if launch:
            env["launch_id"] = launch
        self.write(name[:-4] + ".json", json.dumps(side))
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

    def test_no_launch_or_one_gpu_no_section(self):
        alone = [self.probes("2026-12-01_abcdef1_probes.csv", 0, "", 880.0, 1980)]
        self.assertEqual(fleet_report.section(alone), "")
        one = [self.probes("2026-12-01_abcdef1_probes_l.csv", 0, "rigel_rendezvous.x", 880.0, 1980)]
        self.assertEqual(fleet_report.section(one), "")


if __name__ == "__main__":
    unittest.main()
