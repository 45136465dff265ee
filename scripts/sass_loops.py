#!/usr/bin/env python3
"""What the hot loops of a kernel's SASS spend their instructions on, and
how much work sits between a loop's wait and its first wgmma.

    scripts/sass_loops.py OBJECT_OR_BINARY [--kernel TEXT] [--min 32]
                          [--listing FILE] [--cuobjdump PATH]

Why: the wgmma attention backward lost a sixth of its time to code nobody
wrote there. P^T's mask, a select inside the exponentials' loop, was
if-converted, and ptxas scheduled every tile's mask comparisons (about 270
instructions a thread at D = 128) between the Q/dO barrier's wait and the
tile's first wgmma, where the tensor cores had nothing to do
(docs/attention.md, Next, item 2). Stall counts did not show it; the loop's
SASS did. This tool reads the listing for that pattern in any kernel.

What it reads: the SASS listing of the file (`cuobjdump -sass`, or the text
given with --listing), split into functions (those whose mangled name
contains TEXT). A loop is the span from a backward branch's target to the
branch (the elected-thread retry loops, BRA.U.ANY, and the returns of the
out-of-line mbarrier retries left out), of at least --min instructions. For each loop it prints the instructions in it; the
matrix instructions (wgmma: HGMMA, QGMMA, IGMMA, BGMMA); MUFU; predicate work
(ISETP, FSETP, PLOP3, P2R, R2P); shared-memory loads and stores; local-memory
loads and stores (spills); and the lead: the most instructions between a
barrier's or mbarrier's wait (BAR.SYNC, SYNCS.PHASECHK) and the
WARPGROUP.ARRIVE that opens the next group of wgmma, with no wgmma wait
(WARPGROUP.DEPBAR) between, and the predicate work among them. A
lead of more than --lead instructions (default 64) is marked: tensor-core
work waits for it on every trip. A file with no such function is one line on
stderr and exit 2.
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_ffma_yield import opcode, parse_listing, read_listing  # noqa: E402

BRANCH = re.compile(r"\bBRA(\.[A-Z.]+)?\s+(0x[0-9a-f]+)")
WGMMA = ("HGMMA", "QGMMA", "IGMMA", "BGMMA")
PREDICATE = ("ISETP", "FSETP", "PLOP3", "P2R", "R2P")
WAITS = ("SYNCS.PHASECHK", "BAR.SYNC")


def loops(code, minimum):
    """[(first index, last index)] of the function's loops, outermost first. ptxas puts the retry
    blocks of mbarrier waits after the function's last EXIT, each returning by an unconditional
    branch to the code it came from: those branches close no loop."""
    index = {address: i for i, (address, *_rest) in enumerate(code)}
    exits = [i for i, (_, text, *_rest) in enumerate(code) if opcode(text) == "EXIT"]
    last_exit = exits[-1] if exits else len(code)
    found = set()
    for i, (address, text, *_rest) in enumerate(code):
        m = BRANCH.search(text)
        if not m or (m.group(1) or "").startswith(".U"):
            continue
        if i > last_exit and not text.lstrip().startswith("@"):
            continue
        target = int(m.group(2), 16)
        if target < address and target in index and i - index[target] + 1 >= minimum:
            found.add((index[target], i))
    return sorted(found, key=lambda span: (span[0], -span[1]))


def starts(op, names):
    return any(op.startswith(n) for n in names)


def loop_report(code, first, last):
    ops = [opcode(text) for _, text, *_rest in code[first:last + 1]]
    lead, lead_predicates, since_wait = 0, 0, None
    for op in ops:
        if starts(op, WAITS):
            since_wait = []
        elif op.startswith("WARPGROUP.DEPBAR"):
            since_wait = None  # work after a wgmma wait is the products' own (their results are used)
        elif op == "WARPGROUP.ARRIVE" and since_wait is not None:
            if len(since_wait) > lead:
                lead, lead_predicates = len(since_wait), sum(starts(o, PREDICATE) for o in since_wait)
            since_wait = None
        elif since_wait is not None:
            since_wait.append(op)
    return {
        "first": code[first][0],
        "last": code[last][0],
        "instructions": len(ops),
        "wgmma": sum(starts(o, WGMMA) for o in ops),
        "mufu": sum(o.startswith("MUFU") for o in ops),
        "predicate": sum(starts(o, PREDICATE) for o in ops),
        "shared": sum(o.startswith(("LDS", "STS", "LDSM", "STSM")) for o in ops),
        "local": sum(o.startswith(("LDL", "STL")) for o in ops),
        "lead": lead,
        "lead_predicate": lead_predicates,
    }


def report(functions, kernel_text, minimum):
    """[(function, [loop report])] of the chosen functions, in name order."""
    return [(name, [loop_report(code, a, b) for a, b in loops(code, minimum)])
            for name, code in sorted(functions.items()) if kernel_text in name]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", help="an object or binary cuobjdump reads (or give --listing)")
    ap.add_argument("--kernel", default="", help="text the mangled names of the functions to read contain")
    ap.add_argument("--min", type=int, default=32, help="the fewest instructions a loop must have to be shown")
    ap.add_argument("--lead", type=int, default=64, help="mark a lead of more instructions than this")
    ap.add_argument("--listing", help="the SASS listing, instead of running cuobjdump on FILE")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    args = ap.parse_args(argv)
    try:
        if not args.listing and not args.file:
            raise ValueError("give an object or binary, or --listing")
        listing = read_listing(args.listing, args.file, args.cuobjdump)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        print(f"sass_loops: {e}", file=sys.stderr)
        return 2
    chosen = report(parse_listing(listing), args.kernel, args.min)
    if not chosen:
        print(f"sass_loops: no function of the listing has '{args.kernel}' in its name", file=sys.stderr)
        return 2
    for name, reports in chosen:
        print(name)
        if not reports:
            print(f"  no loop of {args.min} instructions or more")
        for r in reports:
            mark = "  <- work between a wait and the next wgmma" if r["lead"] > args.lead else ""
            print(f"  loop {r['first']:#06x}-{r['last']:#06x}: {r['instructions']} instructions, {r['wgmma']} wgmma, "
                  f"{r['mufu']} MUFU, {r['predicate']} predicate, {r['shared']} shared, {r['local']} local; "
                  f"lead {r['lead']} ({r['lead_predicate']} predicate){mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
