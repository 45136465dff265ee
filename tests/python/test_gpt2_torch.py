"""The PyTorch baseline's readers (scripts/gpt2_torch.py), which need no
PyTorch: a rigel checkpoint read back (layout of src/train/checkpoint.hpp),
bad ones refused; token files; the batch order of rigel's DataLoader; the
learning-rate schedule of src/train/optimizer.hpp."""
import array
import importlib.util
import os
import struct
import unittest

from helpers import TempDirTest

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


if __name__ == "__main__":
    unittest.main()
