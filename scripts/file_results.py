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
A visit that wrote no CSV (GPU tests alone) files its logs the same way, its card
read from nvidia_smi.txt and its run from the RUN file scripts/h200_visit.sh writes.

A visit's subfolders hold variants of one call (env_variants writes env_<n>_<round>/):
their CSVs, sidecars and logs go to results/<card>/experiments/, each name prefixed
with the run and the subfolder, <date>_<commit>_env_0_1_ladder.csv, and the sidecar's
"csv" field renamed to match, so no two variants collide and none lands among the
card's main results.

Usage: file_results.py VISIT_DIR [--logs] [--dry-run] [--root CHECKOUT]
Then: python3 reproduce/reproduce.py --update-manifest && make reproduce
"""
import argparse
import csv
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


def card_of(table):
    """The card folder a CSV's sidecar names; raises ValueError where it cannot be told."""
    side = table.with_suffix(".json")
    if not side.exists():
        raise ValueError(f"{table.name} has no sidecar {side.name}: its card cannot be told")
    try:
        gpu = json.loads(side.read_text()).get("environment", {}).get("gpu_name", "")
    except (json.JSONDecodeError, AttributeError) as e:
        raise ValueError(f"{side.name} is not a sidecar: {e}")
    card = card_folder(gpu)
    if card is None:
        raise ValueError(f"{side.name} names no card (environment.gpu_name '{gpu}')")
    return card


def variant_name(name, stem, sub):
    """<stem>_<rest> in subfolder <sub> -> <stem>_<sub>_<rest>; a name without the stem gets it too."""
    m = STEM.match(name)
    return f"{stem}_{sub}_{name[m.end():] if m else name}"


def log_name(f, stem):
    base = f.name[:-len(".txt")] if f.name.endswith(".txt") else f.name.replace(".", "_")
    return f"{stem}_{base}.txt"


def card_and_run_without_csv(visit):
    """({card}, {date_commit}) of a visit with no CSV, from its nvidia_smi.txt and RUN; raises ValueError."""
    smi, run = visit / "nvidia_smi.txt", visit / "RUN"
    if not smi.exists() or not run.exists():
        raise ValueError(f"no result CSV in {visit}, and no nvidia_smi.txt and RUN to file its logs by")
    rows = list(csv.DictReader(smi.read_text().splitlines(), skipinitialspace=True))
    card = card_folder(rows[0].get("name", "") if rows else "")
    stem = run.read_text().strip()
    if card is None or not STEM.match(stem + "_"):
        raise ValueError(f"{smi.name} names no card or {run.name} no run (<date>_<commit>): '{stem}'")
    return {card}, {stem}


def plan(visit, logs):
    """[(source, destination, bytes or None)] for every file to write, None meaning a plain copy;
    raises ValueError naming the first problem."""
    subs = sorted(d for d in visit.iterdir() if d.is_dir() and any(d.glob("*.csv")))
    tables = {t: card_of(t) for folder in [visit, *subs] for t in sorted(folder.glob("*.csv"))}
    cards = set(tables.values())
    stems = {m.group(1) for t in tables if (m := STEM.match(t.name))}
    moves = []
    for table in sorted(visit.glob("*.csv")):
        for f in (table, table.with_suffix(".json")):
            moves.append((f, ROOT / "results" / tables[table] / f.name, None))
    if logs and not cards and not stems:
        cards, stems = card_and_run_without_csv(visit)
    if subs or logs:
        if len(cards) != 1 or len(stems) != 1:
            raise ValueError(f"the visit's results name {len(cards)} cards and {len(stems)} runs "
                             "(date_commit), so its subfolders and logs have no one home")
        card, stem = next(iter(cards)), next(iter(stems))
        home = ROOT / "results" / card / "experiments"
        for sub in subs:
            for table in sorted(sub.glob("*.csv")):
                new_csv = variant_name(table.name, stem, sub.name)
                side = table.with_suffix(".json")
                # The one field edited in place: a json round trip would rewrite rigel's number formatting too.
                text, n = re.subn(r'("csv":\s*)"[^"]*"', lambda m: f'{m.group(1)}"{new_csv}"',
                                  side.read_text(), count=1)
                moves.append((table, home / new_csv, None))
                moves.append((side, home / (new_csv[:-len(".csv")] + ".json"), text.encode() if n else None))
            if logs:
                for f in sorted(f for ext in ("txt", "log", "err") for f in sub.glob(f"*.{ext}")):
                    moves.append((f, home / log_name(f, f"{stem}_{sub.name}"), None))
        if logs:
            for f in sorted(f for ext in ("txt", "log", "err") for f in visit.glob(f"*.{ext}")):
                moves.append((f, home / (f.name if STEM.match(f.name) else log_name(f, stem)), None))
    for src, dst, data in moves:
        if dst.exists() and dst.read_bytes() != (src.read_bytes() if data is None else data):
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
    for src, dst, data in moves:
        print(f"{src.relative_to(args.visit)} -> {dst.relative_to(ROOT)}")
        if not args.dry_run:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if data is None:
                shutil.copyfile(src, dst)
            else:
                dst.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
