"""The PyTorch baseline's parts that need no PyTorch (scripts/gpt2_torch.py):
a rigel checkpoint read back (layout of src/train/checkpoint.hpp), bad ones
refused; token files; the batch order of rigel's DataLoader; the
learning-rate schedule of src/train/optimizer.hpp; the log, written in
rigel's columns with a sidecar the reports read; the commit it names; the
profiler's sort key in either PyTorch's spelling."""
import array
import contextlib
import importlib.util
import io
import json
import os
import struct
import unittest

from helpers import TempDirTest, findings

import train_report  # noqa: E402  (helpers put reproduce/ on the path)

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpt2_torch.py")
spec = importlib.util.spec_from_file_location("gpt2_torch", SCRIPT)
gpt2_torch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpt2_torch)

CONFIG = {"layers": 1, "heads": 2, "channels": 8, "max_seq_len": 4, "vocab_size": 10, "padded_vocab_size": 16}


def checkpoint_bytes(config, step, params, options=b"{}"):
    n = len(params)
    fixed = struct.pack("<6iqQQQqq4QQ", *[config[k] for k in ("layers", "heads", "channels", "max_seq_len",
                                                               "vocab_size", "padded_vocab_size")],
                        step, n, n, n, 0, 0, 0, 0, 0, 0, len(options))
    payload = fixed + params.tobytes() * 3 + options
    return b"RIGELCKP" + struct.pack("<QQQ", 1, len(payload), 0) + payload


class Gpt2TorchReaders(TempDirTest):
    def test_checkpoint_round_trip_and_refusals(self):
        n = gpt2_torch.parameter_count(CONFIG)
        self.assertEqual(n, 16 * 8 + 4 * 8 + (8 + 8 + 24 * 8 + 24 + 64 + 8 + 8 + 8 + 32 * 8 + 32 + 8 * 32 + 8) + 16)
        params = array.array("f", (i / 7 for i in range(n)))
        path = self.write("init.ckpt", checkpoint_bytes(CONFIG, 0, params))
        config, step, got = gpt2_torch.read_checkpoint(path)
        self.assertEqual((config, step), (CONFIG, 0))
        self.assertEqual(got, params)
        good = checkpoint_bytes(CONFIG, 0, params)
        for data, part in ((good[:-1], "truncated"), (b"XIGELCKP" + good[8:], "not a rigel checkpoint"),
                           (good[:8] + struct.pack("<Q", 2) + good[16:], "version 2"),
                           (checkpoint_bytes(CONFIG, 0, params[:-1]), "parameters, but its model has")):
            with self.assertRaises(gpt2_torch.Failure) as e:
                gpt2_torch.read_checkpoint(self.write("bad.ckpt", data))
            self.assertIn(part, str(e.exception))

    def test_tokens_and_the_loaders_batch_order(self):
        tokens = array.array("H", (i % 10 for i in range(50)))
        path = self.write("t.bin", struct.pack("<3i", 20240520, 1, 50) + bytes(4 * 253) + tokens.tobytes())
        self.assertEqual(gpt2_torch.read_tokens(path, 10), tokens)
        with self.assertRaises(gpt2_torch.Failure):
            gpt2_torch.read_tokens(path, 9)
        # B 2 x T 4: (50 - 1) // 8 = 6 batches per pass, then back to the start.
        self.assertEqual(gpt2_torch.batch_positions(8, 2, 4, 50), [0, 8, 16, 24, 32, 40, 0, 8])
        with self.assertRaises(gpt2_torch.Failure):
            gpt2_torch.batch_positions(1, 7, 7, 49)

    def test_schedule_matches_rigels(self):
        lr = 6e-4
        self.assertAlmostEqual(gpt2_torch.learning_rate(0, lr, 10, 110, 0.1), lr / 10)
        self.assertAlmostEqual(gpt2_torch.learning_rate(60, lr, 10, 110, 0.1), 0.5 * (lr + 0.1 * lr))
        self.assertAlmostEqual(gpt2_torch.learning_rate(500, lr, 10, 110, 0.1), 0.1 * lr)
        self.assertEqual(gpt2_torch.training_flops_per_token(
            {"layers": 12, "heads": 12, "channels": 768, "max_seq_len": 1024, "vocab_size": 50257,
             "padded_vocab_size": 50304}, 1024), 860101632.0)


RIGEL_LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "h200",
                         "2026-12-01_ededb02_train_gpt2_cuda.csv")


def run_info(**over):
    run = {"run_id": "20261202T100000Z-0a1b2c", "host": "vm", "device": "NVIDIA H200",
           "git_commit": "abcdef1234567890abcdef1234567890abcdef12", "torch_version": "2.11.0",
           "cuda_version": "12.8", "mode": "eager", "model": "gpt2", "batch": 16, "seq": 1024, "accumulation": 1,
           "steps": 3, "environment": {"gpu_name": "NVIDIA H200", "os": "Ubuntu 24.04.3 LTS"}}
    run.update(over)
    return run


def step_rows(n):
    return [{"step": s, "loss": 11.0 - s / 3, "val_loss": 10.5 if s == n else None, "lr": 6e-5 * s,
             "grad_norm": 1.25, "tokens_per_s": 123456.789, "tflops": 106.2, "mfu": 0.10734,
             "peak_memory_gb": 9.5, "elapsed_s": 0.1 * s} for s in range(1, n + 1)]


class Gpt2TorchLog(TempDirTest):
    def test_the_log_has_rigels_columns_and_a_sidecar_the_reports_read(self):
        path = os.path.join(self.dir, "2026-12-02_abcdef1_train_gpt2_torch-eager.csv")
        side_path = gpt2_torch.write_log(path, run_info(), step_rows(3), complete=True)
        self.assertEqual(side_path, path[:-4] + ".json")
        self.assertEqual(sorted(os.listdir(self.dir)), sorted([os.path.basename(path), os.path.basename(side_path)]))
        with open(RIGEL_LOG) as f:
            rigel_header = f.readline().rstrip("\n").split(",")
        rf = findings.read_result_file(path)
        self.assertEqual(rf.table.header, rigel_header)
        self.assertEqual(list(gpt2_torch.LOG_COLUMNS), rigel_header)
        self.assertEqual(rf.table.rows[0], ["20261202T100000Z-0a1b2c", "vm", "NVIDIA H200", "1", "10.6667", "",
                                            "6e-05", "1.25", "123457", "106.2", "0.10734", "9.5", "0.1", "0"])
        self.assertEqual(rf.table.cell(2, "val_loss"), "10.5")
        side = rf.sidecar
        for key, want in (("run_id", "20261202T100000Z-0a1b2c"), ("what", "train_log"), ("tool", "gpt2_torch.py"),
                          ("csv", os.path.basename(path)), ("torch_version", "2.11.0"), ("cuda_version", "12.8"),
                          ("mode", "eager"), ("backend", "torch-eager"), ("model", "gpt2"), ("batch", 16),
                          ("seq", 1024), ("steps", 3), ("complete", True), ("interrupted", False), ("rows", 3),
                          ("git_commit", "abcdef1234567890abcdef1234567890abcdef12")):
            self.assertEqual(side[key], want, key)
        self.assertEqual(rf.env("gpu_name"), "NVIDIA H200")
        self.assertEqual(findings.short_commit(rf), "abcdef1")
        runs = train_report.load(self.dir)
        self.assertEqual(list(runs), [("gpt2", "torch-eager")])
        self.assertAlmostEqual(runs[("gpt2", "torch-eager")].steps[3]["val_loss"], 10.5)

    def test_a_run_cut_short_says_so_and_a_rewrite_replaces_the_files(self):
        path = os.path.join(self.dir, "x_train_gpt2_torch-compile.csv")
        gpt2_torch.write_log(path, run_info(mode="compile"), step_rows(2), complete=False, interrupted=True)
        gpt2_torch.write_log(path, run_info(mode="compile"), step_rows(1), complete=False, interrupted=True)
        with open(path[:-4] + ".json") as f:
            side = json.load(f)
        self.assertEqual((side["complete"], side["interrupted"], side["rows"], side["backend"]),
                         (False, True, 1, "torch-compile"))
        self.assertEqual(len(findings.read_result_file(path).table.rows), 1)
        self.assertEqual(len(os.listdir(self.dir)), 2)  # no temporary file left behind

    def test_run_ids_and_numbers_as_rigel_writes_them(self):
        rid = gpt2_torch.make_run_id(1764599610)  # 2025-12-01 14:33:30 UTC
        self.assertRegex(rid, r"^20251201T143330Z-[0-9a-f]{6}$")
        self.assertRegex(gpt2_torch.make_run_id(), r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")
        self.assertEqual([gpt2_torch.num(v) for v in (None, float("nan"), float("inf"), 277784.4, 6e-05, 3)],
                         ["", "", "", "277784", "6e-05", "3"])

    def test_the_commit_comes_from_the_trees_commit_file(self):
        self.assertEqual(gpt2_torch.default_commit(self.dir), "unknown")
        self.write(".visit/COMMIT", "1111111111111111111111111111111111111111\n")
        self.assertEqual(gpt2_torch.default_commit(self.dir), "1111111111111111111111111111111111111111")
        self.write("COMMIT", "2222222222222222222222222222222222222222\n")
        self.assertEqual(gpt2_torch.default_commit(self.dir), "2222222222222222222222222222222222222222")

    def test_the_host_facts_are_strings(self):
        facts = gpt2_torch.host_facts()
        self.assertTrue(all(isinstance(v, str) and v for v in facts.values()))
        self.assertIn("cpu_cores", facts)

    def test_the_profile_sorts_by_device_time_in_either_spelling(self):
        class Event:
            def __init__(self, **attrs):
                self.__dict__.update(attrs)

        class Averages(list):
            def table(self, sort_by, row_limit):
                getattr(self[0], sort_by)  # as PyTorch's table does: an unknown key raises AttributeError
                return f"{sort_by} {row_limit}"
        self.assertEqual(gpt2_torch.profile_table(Averages([Event(device_time_total=1)])), "device_time_total 40")
        self.assertEqual(gpt2_torch.profile_table(Averages([Event(cuda_time_total=1)]), 5), "cuda_time_total 5")

        class Refusing(Averages):
            def table(self, sort_by, row_limit):
                if sort_by == "device_time_total":
                    raise KeyError(sort_by)
                return sort_by
        self.assertEqual(gpt2_torch.profile_table(Refusing([Event(device_time_total=1)])), "cuda_time_total")

    def test_an_output_folder_that_does_not_exist_is_refused_before_training(self):
        missing = os.path.join(self.dir, "no", "log.csv")
        for option in ("--out", "--profile"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(gpt2_torch.main(["--init", "x", "--data", "y", option, missing]), 2)
            self.assertIn(f"{option} {missing}: its folder does not exist", err.getvalue())


if __name__ == "__main__":
    unittest.main()
