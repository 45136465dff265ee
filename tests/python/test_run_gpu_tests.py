"""scripts/run_gpu_tests.py on made-up tests (shell commands standing in for
rigel's): each verdict logged as its test ends, not in the listed order, and a
run stopped by SIGTERM still writing the verdicts it has and naming the tests
it leaves unfinished."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

from helpers import TempDirTest

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "run_gpu_tests.py"))


def shell_test(name, script, timeout=60):
    return {"name": name, "command": ["/bin/sh", "-c", script],
            "properties": [{"name": "LABELS", "value": ["gpu"]}, {"name": "SKIP_RETURN_CODE", "value": 77},
                           {"name": "TIMEOUT", "value": timeout}]}


class RunGpuTests(TempDirTest):
    def start(self, tests):
        self.write("gpu_tests.json", json.dumps({"build_dir": "/nowhere/build", "tests": tests}))
        self.log = os.path.join(self.dir, "tests.log")
        p = subprocess.Popen([sys.executable, "-B", SCRIPT, os.path.join(self.dir, "gpu_tests.json"),
                              "--build", self.dir, "-j", "2", "--log", self.log],
                             stdout=subprocess.DEVNULL, start_new_session=True)
        # What a stopped run leaves running is its caller's to end (the visit's pkill): here, its process
        # group's, whether the test passed or not.
        self.addCleanup(self.end_group, p.pid)
        return p

    @staticmethod
    def end_group(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def test_a_verdict_is_logged_when_its_test_ends(self):
        p = self.start([shell_test("slow", "sleep 3"), shell_test("fast", "exit 0"),
                        shell_test("broken", "echo boom; exit 3"), shell_test("skipping", "exit 77")])
        self.assertEqual(p.wait(timeout=60), 1)
        log = self.read_log()
        order = [line.split(":")[0][5:] for line in log.splitlines() if line.startswith("==== ")]
        self.assertEqual(sorted(order), ["broken", "fast", "skipping", "slow"])
        self.assertEqual(order[-1], "slow")
        self.assertIn("==== broken: failed (rc 3)", log)
        self.assertIn("boom", log)
        self.assertIn("==== skipping: skipped", log)
        self.assertIn("50% tests passed, 1 tests failed out of 4", log)
        self.assertIn("  broken: failed (rc 3)", log)

    def test_a_stopped_run_keeps_what_ended_and_names_the_rest(self):
        p = self.start([shell_test("hangs", "sleep 30"), shell_test("fast", "exit 0"),
                        shell_test("queued", "sleep 30")])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(self.log) and "==== fast: passed" in self.read_log():
                break
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=30), 124)
        log = self.read_log()
        self.assertIn("==== fast: passed", log)
        self.assertIn("33% tests passed, 0 tests failed out of 3 (stopped by SIGTERM; unfinished: hangs queued)",
                      log)


if __name__ == "__main__":
    unittest.main()
