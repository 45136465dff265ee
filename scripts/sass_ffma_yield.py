#!/usr/bin/env python3
"""Edit the scheduling bits of a kernel's FFMA instructions in a built binary:
the experiment k38's opening comment names as next.

    scripts/sass_ffma_yield.py BINARY OUT --kernel TEXT [--mode reused|all|chain]
                               [--chain-length N]
                               [--listing FILE] [--cuobjdump PATH]

Why: k38 (block-scaled fp8) promotes each k-tile's partial sum with an FFMA
per accumulator while the other partial sum's wgmma runs, and loses 20-25 %
to k34, which promotes with an FADD. DeepGEMM reports 10 % and more for its
block-scaled kernels from changing two bits of those FFMAs in the SASS: the
operand-reuse flags and the bit beside them that lets the scheduler switch to
another warp. This tool makes that change to a binary rigel built, so that
the H200 machine can time the edited kernel beside the one ptxas wrote.

What it reads: the SASS listing of BINARY (`cuobjdump -sass`, or the text
given with --listing), split into functions; the functions whose mangled name
contains TEXT are edited. Each instruction is two 64-bit words. In the second
(the control word, as public reverse engineering of Volta and later decodes
it): bit 45 is the yield bit (ptxas alternates it along runs of independent
FFMAs and FADDs; 1 where it does not let the warp go) and bits 58-61 are the
reuse flags of the four operand slots. The listing gives each word's value,
so a function's code is found in BINARY as the exact byte sequence of its
instructions; it must occur exactly once.

Modes: `reused` (the default) edits each FFMA that has a reuse flag and bit
45 set: both cleared, so the instruction yields and caches no operand (a
yielding warp cannot keep its operand cache). `all` clears bit 45 and the
reuse flags of every FFMA. `chain` goes the other way: along each run of
adjacent FFMAs, every FFMA but the run's last gets bit 45 set (the warp keeps
issuing), and each whose second source register is the next FFMA's second
source (a promotion's scale) and not its own destination gets that slot's
reuse flag (bit 59), so that the run reads the shared register from the
operand cache: two register-file reads an FFMA, as an FADD has, where ptxas
alternates the yield bit and caches it for every other FFMA only. With
--chain-length N, every N-th FFMA of a run (the N-th, 2N-th, ...) is left to
yield instead, uncached, so the warp lets the others issue after N FFMAs
(N = 2 is ptxas's own pattern). Nothing else is touched, so the kernel computes
what it did; rigel's own checks (the ladder's float64 check, `rigel gemm
blockscaled`) are what show it. OUT gets a copy of BINARY with the edits;
BINARY is never written. A kernel not found, or found more than once, is one
line on stderr and exit 2, and OUT is not written.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

YIELD_BIT = 1 << 45
REUSE_BITS = 0xF << 58
FUNCTION = re.compile(r"^\s*Function : (\S+)")
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
CONTROL = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


class PatchError(Exception):
    pass


def parse_listing(text):
    """{mangled name: [(address, instruction text, first word, control word)]}
    from a cuobjdump SASS listing (an instruction's line, then its control word's)."""
    functions, current, pending = {}, None, None
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = functions.setdefault(m.group(1), [])
            pending = None
            continue
        if current is None:
            continue
        m = INSTRUCTION.search(line)
        if m:
            pending = (int(m.group(1), 16), m.group(2), int(m.group(3), 16))
            continue
        m = CONTROL.match(line)
        if m and pending is not None:
            current.append(pending + (int(m.group(1), 16),))
            pending = None
    return functions


def read_listing(listing_file, binary, cuobjdump):
    """The SASS listing: listing_file's text if given, else what cuobjdump -sass prints for binary."""
    if listing_file:
        with open(listing_file) as f:
            return f.read()
    return subprocess.run([cuobjdump, "-sass", binary], check=True, capture_output=True, text=True).stdout


def opcode(text):
    """The instruction's opcode without its predicate: "@!P0 FFMA.FTZ R1, ..." -> "FFMA.FTZ"."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


REUSE_B = 1 << 59  # the second source slot's reuse flag
REGISTER = re.compile(r"^R\d+$")


def operands(text):
    """An instruction's operands, destination first, reuse suffixes dropped:
    "@P0 FFMA R1, R2, R3.reuse, R1" -> ["R1", "R2", "R3", "R1"]."""
    words = text.split(None, 2 if text.startswith("@") else 1)
    return [o.strip().split(".reuse")[0] for o in words[-1].split(",")] if len(words) > 1 else []


def chained(code, i, place, length):
    """mode chain: instruction i's control word after the edit, or None (see the module's
    comment). place: its index in its run of adjacent FFMAs; length: --chain-length (0: none)."""
    text, control = code[i][1], code[i][3]
    if i + 1 >= len(code) or not opcode(code[i + 1][1]).startswith("FFMA"):
        return None  # the run's last FFMA (or a lone one) keeps its bits
    if length and place % length == length - 1:
        new = control & ~(YIELD_BIT | REUSE_B)  # this one yields, so it caches nothing
        return new if new != control else None
    new = control | YIELD_BIT
    mine, theirs = operands(text), operands(code[i + 1][1])
    if len(mine) == 4 and len(theirs) == 4 and REGISTER.match(mine[2]) and mine[2] == theirs[2] \
            and mine[0] != mine[2]:
        new |= REUSE_B
    return new if new != control else None


def edited(control, mode):
    """The control word after the edit, or None where the mode leaves it (modes reused and all)."""
    if mode == "all":
        new = control & ~(YIELD_BIT | REUSE_BITS)
    elif control & REUSE_BITS and control & YIELD_BIT:
        new = control & ~(YIELD_BIT | REUSE_BITS)
    else:
        return None
    return new if new != control else None


def encode(instructions):
    return b"".join(lo.to_bytes(8, "little") + hi.to_bytes(8, "little") for _, _, lo, hi in instructions)


def patch(blob, functions, kernel_text, mode, chain_length=0):
    """(the edited bytes, [(function, FFMAs seen, FFMAs edited)])."""
    chosen = {name: code for name, code in functions.items() if kernel_text in name}
    if not chosen:
        raise PatchError(f"no function of the listing has '{kernel_text}' in its name")
    out = bytearray(blob)
    report = []
    for name, code in sorted(chosen.items()):
        body = encode(code)
        at = blob.find(body)
        if at < 0:
            raise PatchError(f"{name}: its code is not in the binary as the listing gives it (compressed, or another build)")
        if blob.find(body, at + 1) >= 0:
            raise PatchError(f"{name}: its code occurs more than once in the binary")
        seen = changed = place = 0
        for i, (address, text, _, control) in enumerate(code):
            if not opcode(text).startswith("FFMA"):
                place = 0
                continue
            seen += 1
            new = chained(code, i, place, chain_length) if mode == "chain" else edited(control, mode)
            place += 1
            if new is None:
                continue
            offset = at + address + 8
            assert out[offset:offset + 8] == control.to_bytes(8, "little")
            out[offset:offset + 8] = new.to_bytes(8, "little")
            changed += 1
        report.append((name, seen, changed))
    return bytes(out), report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("--kernel", required=True, help="text the mangled names of the functions to edit contain")
    ap.add_argument("--mode", choices=("reused", "all", "chain"), default="reused")
    ap.add_argument("--chain-length", type=int, default=0,
                    help="mode chain: every N-th FFMA of a run yields (0: none does)")
    ap.add_argument("--listing", help="the SASS listing of BINARY, instead of running cuobjdump")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    args = ap.parse_args(argv)
    try:
        listing = read_listing(args.listing, args.binary, args.cuobjdump)
        with open(args.binary, "rb") as f:
            blob = f.read()
        if args.chain_length < 0 or args.chain_length == 1:
            raise PatchError("--chain-length is 0 (no yields) or at least 2")
        out, report = patch(blob, parse_listing(listing), args.kernel, args.mode, args.chain_length)
    except (OSError, subprocess.CalledProcessError, PatchError) as e:
        print(f"sass_ffma_yield: {e}", file=sys.stderr)
        return 2
    # Written beside OUT, then moved: OUT holds either the whole edited binary or what it held before.
    folder = os.path.dirname(os.path.abspath(args.out))
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as f:
        f.write(out)
    os.chmod(f.name, os.stat(args.binary).st_mode & 0o777)
    os.replace(f.name, args.out)
    for name, seen, changed in report:
        mode = f"{args.mode}, length {args.chain_length}" if args.mode == "chain" and args.chain_length else args.mode
        print(f"{name}: {changed} of {seen} FFMAs edited ({mode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
