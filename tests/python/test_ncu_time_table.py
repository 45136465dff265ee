"""scripts/ncu_time_table.py on made-up ncu_time files laid out as Nsight
Compute's --csv prints them (a warning and rigel's own lines before the
quoted rows, thousands separators in the values): one row per file and
kernel, each metric the range over the kernel's launches in docs/gemm.md's
units, rigel's template names shortened, only the columns of metrics the files
hold, a file without launches named and left out, and exit 2 where no file
holds one."""
import csv
import importlib.util
import io
import os
from contextlib import redirect_stderr, redirect_stdout

from helpers import TempDirTest

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "ncu_time_table.py"))
_spec = importlib.util.spec_from_file_location("ncu_time_table", SCRIPT)
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

HEAD = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
RIGEL = ("void rigel::cuda::sm90::pingpong_kernel<rigel::cuda::sm90::PingPong<4, 6, 0, 0, 1, 0, 128, 128>, "
         "rigel::cuda::gemm_kernels::FixedEpilogue<__nv_bfloat16, 0, 0, 128>>(CUtensorMap_st, CUtensorMap_st, "
         "T2::Params, int, int, int, int, int, int)")
VENDOR = "nvjet_sm90_tst_168x128_64x5_1x2_h_bz_TNN"


def ncu_csv(launches):
    """launches: [(kernel, {metric: value text})], each a launch of its own, as ncu --csv writes them."""
    buf = io.StringIO()
    buf.write("==WARNING== Note: Running with unmodified GPU clocks.\n")
    buf.write("rigel: run 4096x11008x4096_NT_bf16_bf16_none: verifying, then timing\n")
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(HEAD)
    for i, (kernel, metrics) in enumerate(launches):
        for name, value in metrics.items():
            w.writerow([str(i), "1", "rigel", "127.0.0.1", kernel, "1", "13", "(384, 1, 1)", "(132, 1, 1)", "0",
                        "9.0", "Command line profiler metrics", name, "", value])
    return buf.getvalue()


def metrics(us_ns, mhz_hz, sectors):
    return {"gpu__time_duration.sum": us_ns, "sm__cycles_elapsed.avg.per_second": mhz_hz,
            "lts__t_sectors_srcunit_tex_op_read.sum": sectors}


class NcuTimeTableTest(TempDirTest):
    def run_tool(self, paths):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = tool.main(paths)
        return rc, out.getvalue(), err.getvalue()

    def test_one_row_per_kernel_with_ranges(self):
        path = self.write("ncu_time_4096x11008x4096_auto.csv", ncu_csv([
            (RIGEL, metrics("459,840", "1,561,233,485.69", "114,014,124")),
            (RIGEL, metrics("458,144", "1,555,769,186.50", "110,319,752")),
            (VENDOR, metrics("442,400", "1,592,506,370.21", "79,666,304")),
        ]))
        rc, out, err = self.run_tool([path])
        self.assertEqual(rc, 0, err)
        lines = out.strip().splitlines()
        self.assertEqual(lines[0], "| file | kernel | launches | us | MHz | L2 sectors (M) |")
        self.assertEqual(lines[2], "| ncu_time_4096x11008x4096_auto.csv | rigel PingPong<4, 6, 0, 0, 1, 0, 128, 128> | "
                                   "2 | 458.1-459.8 | 1556-1561 | 110.3-114.0 |")
        self.assertEqual(lines[3], f"| ncu_time_4096x11008x4096_auto.csv | {VENDOR} | 1 | 442.4 | 1593 | 79.7 |")
        self.assertEqual(len(lines), 4)

    def test_sustained_files_add_l2_clock_traffic_and_dram_busy(self):
        # An ncu_sustained file: rigel's kernel with L2's clock, all its traffic and how busy DRAM was.
        sustained = {"gpu__time_duration.sum": "16,110,000", "sm__cycles_elapsed.avg.per_second": "1,350,000,000",
                     "lts__cycles_elapsed.avg.per_second": "1,612,000,000", "lts__t_bytes.sum": "112,290,000,000",
                     "dram__throughput.avg.pct_of_peak_sustained_elapsed": "63.59"}
        path = self.write("ncu_sustained_16384x16384x16384_pingpong.csv", ncu_csv([(RIGEL, sustained)]))
        rc, out, err = self.run_tool([path])
        self.assertEqual(rc, 0, err)
        lines = out.strip().splitlines()
        self.assertEqual(lines[0], "| file | kernel | launches | us | MHz | L2 MHz | L2 bytes (GB) | DRAM busy % |")
        self.assertTrue(lines[2].endswith("| 1 | 16110.0 | 1350 | 1612 | 112.3 | 63.6 |"), lines[2])

    def test_empty_file_left_out_and_none_at_all_refused(self):
        empty = self.write("ncu_time_512x512x512_fixed.csv", "==ERROR== the visit ran out of time\n")
        full = self.write("ncu_time_4096x4096x4096_fixed.csv", ncu_csv([(RIGEL, metrics("180,700", "1.541e9", "1"))]))
        rc, out, err = self.run_tool([empty, full])
        self.assertEqual(rc, 0)
        self.assertIn("no launch in", err)
        self.assertNotIn("512x512x512", out)
        self.assertIn("180.7", out)
        rc, out, err = self.run_tool([empty])
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("none of the files holds a launch", err)
