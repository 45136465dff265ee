#!/usr/bin/env python3
"""Files a visit's result CSVs and their JSON sidecars under results/<card>/,
the card read from each sidecar (environment.gpu_name): "NVIDIA H200" goes to
results/h200/, "NVIDIA H100 80GB HBM3" to results/h100/. The README, docs/ladder.md
and FINDINGS.md speak for the H200 machine alone (reproduce/reproduce.py), so a
visit that landed on another card must not file its numbers among the H200's.

A CSV without a sidecar, a sidecar without a card, or a file already filed
with other bytes is refused with one line, before anything is copied. Logs
(.txt, .log, .err) go to results/<card>/experiments/ with --logs, each named for the
visit's run (the CSVs' date_commit): tests.log becomes <date>_<commit>_tests_log.txt.

Usage: file_results.py VISIT_DIR [--logs] [--dry-run] [--root CHECKOUT]
Then: python3 reproduce/reproduce.py --update-manifest && make reproduce
"""
import argparse
import filecmp
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEM = re.compile(r"^(\d{4}-\d{2}-\d{2}_[0-9a-f]{7,40})_")


def card_folder(gpu_name):
    """"NVIDIA H200" -> "h200", "NVIDIA H100 80GB HBM3" -> "h100"; None where no card is named."""
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Za-z]?)\b", gpu_name or "")
    return m.group(1).lower() if m else None


def plan(visit, logs):
    """[(source, destination)] for every file to copy; raises ValueError naming the first problem."""
    moves = []
    cards = set()
    for csv in sorted(visit.glob("*.csv")):
        side = csv.with_suffix(".json")
        if not side.exists():
            raise ValueError(f"{csv.name} has no sidecar {side.name}: its card cannot be told")
        try:
            gpu = json.loads(side.read_text()).get("environment", {}).get("gpu_name", "")
        except (json.JSONDecodeError, AttributeError) as e:
            raise ValueError(f"{side.name} is not a sidecar: {e}")
        card = card_folder(gpu)
        if card is None:
            raise ValueError(f"{side.name} names no card (environment.gpu_name '{gpu}')")
        cards.add(card)
        for f in (csv, side):
            moves.append((f, ROOT / "results" / card / f.name))
    if logs:
        stems = {STEM.match(src.name).group(1) for src, _ in moves if STEM.match(src.name)}
        if len(cards) != 1 or len(stems) != 1:
            raise ValueError(f"--logs: the visit's results name {len(cards)} cards and {len(stems)} runs "
                             "(date_commit), so its logs have no one home")
        card, stem = cards.pop(), stems.pop()
        for f in sorted(f for ext in ("txt", "log", "err") for f in visit.glob(f"*.{ext}")):
            base = f.name[:-len(".txt")] if f.name.endswith(".txt") else f.name.replace(".", "_")
            name = f.name if STEM.match(f.name) else f"{stem}_{base}.txt"
            moves.append((f, ROOT / "results" / card / "experiments" / name))
    for src, dst in moves:
        if dst.exists() and not filecmp.cmp(src, dst, shallow=False):
            raise ValueError(f"{dst.relative_to(ROOT)} is already filed with other bytes")
    return moves


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("visit", type=Path, help="the folder the visit's archive was unpacked into")
    ap.add_argument("--logs", action="store_true", help="also file the visit's .txt and .err logs")
    ap.add_argument("--dry-run", action="store_true", help="say where each file would go, copy nothing")
    ap.add_argument("--root", type=Path, help="the checkout to file into (default: this script's)")
    args = ap.parse_args()
    global ROOT
    if args.root:
        ROOT = args.root.resolve()
    if not args.visit.is_dir():
        print(f"file_results: {args.visit} is not a folder", file=sys.stderr)
        return 2
    try:
        moves = plan(args.visit, args.logs)
    except ValueError as e:
        print(f"file_results: {e}", file=sys.stderr)
        return 2
    if not moves:
        print(f"file_results: no result CSV in {args.visit}", file=sys.stderr)
        return 2
    for src, dst in moves:
        print(f"{src.name} -> {dst.relative_to(ROOT)}")
        if not args.dry_run:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
