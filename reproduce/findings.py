#!/usr/bin/env python3
"""FINDINGS.md, rendered from committed results alone (no GPU).

Every probe finding beside the documentation statement it confirms, fills in or
contradicts, grouped by the question its probe asks; which unit executes each
path (dispatch triangulation); and, from the ladder CSVs, the accelerated and
win verdicts. The output is a pure function of the input files: sorted, no
clock, no machine paths. Numbers come from typed CSV columns only, never from
the prose of a `detail` cell.

    python3 reproduce/findings.py --results results/h200 --out FINDINGS.md

reproduce.py calls render() the same way; this entry point is for one folder.
"""
import argparse
import csv
import hashlib
import io
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field

import gemm_report
import timing_report
from verdicts import WIN_RATIO, DispatchSignals, accelerated_rule, meets_ratio, mnemonic, triangulate_dispatch, win_rule

PROBES_SUFFIX = "_probes.csv"
# A probes file whose name was taken: rigel then claims <stem>_probes_<run id>.csv (every rank of a
# `rigel launch` writing into one folder, or a second probe run of one commit).
PROBES_INFIX = "_probes_"
LADDER_SUFFIX = "_ladder.csv"
LADDER_INFIX = "_ladder_"
SASS_SUFFIX = "_sass.csv"
SASS_KERNELS_SUFFIX = "_sass_kernels.csv"

# The probes CSV's columns that every version of it has; the typed columns
# below came later, and a file without them shows their values as not recorded.
PROBE_COLUMNS = ["run_id", "probe", "path", "dtype", "quantity", "measured", "expected", "unit", "verified",
                 "relation", "doc_statement", "doc_source", "detail"]
PROBE_TYPED_COLUMNS = ["value", "sm_clock_mhz", "power_w", "power_max_w", "temp_c", "clock_event_mask", "kernel",
                       "swept"]
# Probes whose sweep rows (a number in `swept`) are drawn as a figure instead of
# listed one by one: probe -> (the figure, what its points are).
SWEEP_FIGURES = {"accumulation": ("docs/figures/accumulator.png",
                                  "the relative error of RIGEL's hostile sum at each gap, one line per path")}
LADDER_COLUMNS = ["rung", "backend", "group", "dtype", "m", "n", "k", "status", "vendor"]

# A cell longer than this is cut in FINDINGS.md (the CSV keeps it whole): the
# longest cell rigel writes today is about 5,000 characters.
MAX_CELL_CHARS = 8000
# The longest cell read at all (the csv module refuses longer ones).
MAX_FIELD_CHARS = 1 << 30
# Characters of file content shown in an error message.
EXCERPT_CHARS = 40

# Low-precision types the accelerated rule applies to (fewer than 16 bits).
LOW_PRECISION_TYPES = {"e4m3", "e5m2", "e2m1", "mxfp4", "i8"}


class FindingsError(Exception):
    """Bad input: one line for the user, naming the file at fault."""


def excerpt(data, limit=EXCERPT_CHARS):
    """Text or bytes made safe for a terminal: printable ASCII as is,
    everything else escaped, cut after `limit` characters."""
    cut = len(data) > limit
    data = data[:limit]
    if isinstance(data, bytes):
        out = "".join(chr(b) if 0x20 <= b < 0x7F else "\\x%02x" % b for b in data)
    else:
        out = "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in data)
    return out + ("..." if cut else "")


def shown_path(path):
    return excerpt(str(path), 200)


# ---- reading -------------------------------------------------------------------


class Table:
    """A CSV: its header and rows (each as wide as the header)."""

    def __init__(self, header, rows):
        self.header = header
        self.rows = rows
        self._index = {}
        for i, name in enumerate(header):
            self._index.setdefault(name, i)

    def has(self, name):
        return name in self._index

    def cell(self, row, name):
        """The cell of `row` under `name`; "" when there is no such column."""
        c = self._index.get(name)
        return self.rows[row][c] if c is not None and row < len(self.rows) else ""


@dataclass
class ResultFile:
    name: str      # file name, e.g. 2026-11-29_3fa9c2e_probes.csv
    sha256: str    # of the CSV's bytes
    table: Table
    sidecar: dict = None  # <stem>.json beside the CSV, checked for shape
    machine: str = "h200"  # the results folder it was read from (results/<machine>/)

    @property
    def has_sidecar(self):
        return self.sidecar is not None

    def side(self, key):
        return json_text(self.sidecar.get(key)) if self.sidecar is not None else ""

    def env(self, key):
        if self.sidecar is None:
            return ""
        return json_text(self.sidecar.get("environment", {}).get(key))


@dataclass
class FindingsInput:
    probes: list = field(default_factory=list)        # *_probes.csv and *_probes_<run id>.csv
    ladder: list = field(default_factory=list)        # *_ladder.csv and *_ladder_<suffix>.csv
    # *_sass.csv (object, then opcode counts per compiled source file);
    # <stem>_sass.csv belongs to the probes and ladder files of the same
    # <stem> (date_commit).
    sass: list = field(default_factory=list)
    # *_sass_kernels.csv (object, kernel, then the same counts per kernel
    # symbol), matched to the probes file of the same <stem>.
    sass_kernels: list = field(default_factory=list)
    gemm_bench: list = field(default_factory=list)   # *_gemm.csv (gemm_report.py)
    gemm_verify: list = field(default_factory=list)  # *_gemm_verify.csv


def json_text(v):
    """A JSON value as text: strings as they are, numbers and booleans written
    out, "" for null, absent, objects and arrays."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        f = float(v)
        if math.isfinite(f) and f == round(f) and abs(f) < 1e15:
            return "%.0f" % f
        return "%.17g" % f
    return ""


def decode_text(data, where):
    """UTF-8 text of a file's bytes; binary content is refused with an escaped
    excerpt, never echoed raw."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise FindingsError(f"{shown_path(where)}: binary data, not text (NUL byte at offset {nul}, "
                            f"near '{excerpt(data[max(0, nul - 8):nul + 8])}')")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FindingsError(f"{shown_path(where)}: not UTF-8 text (byte offset {e.start}, "
                            f"near '{excerpt(data[max(0, e.start - 8):e.start + 8])}')") from None


def parse_csv(text, where):
    """RFC 4180 through the csv module; every record must be as wide as the header."""
    # A huge cell is read (and cut when rendered), not refused at the csv
    # module's default limit of 128 KiB.
    csv.field_size_limit(MAX_FIELD_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records = []
    try:
        for rec in reader:
            if not rec:
                continue  # a blank line
            if records and len(rec) != len(records[0]):
                raise FindingsError(f"{shown_path(where)}: csv line {reader.line_num}: {len(rec)} cells, "
                                    f"the header has {len(records[0])}")
            records.append(rec)
    except csv.Error as e:
        raise FindingsError(f"{shown_path(where)}: csv line {reader.line_num}: {excerpt(str(e), 120)}") from None
    if not records:
        return Table([], [])
    return Table(records[0], records[1:])


JSON_TYPE = {dict: "an object", list: "an array", str: "a string", bool: "true/false", int: "a number",
             float: "a number", type(None): "null"}


def check_sidecar(side, where):
    """The keys the report reads, with their types; anything else is the
    writer's business."""
    def kind(v):
        return JSON_TYPE.get(type(v), "something else")
    if not isinstance(side, dict):
        raise FindingsError(f"{shown_path(where)}: a sidecar must be a JSON object, this one is {kind(side)}")
    for key, want in (("run_id", str), ("git_commit", str), ("environment", dict)):
        if key not in side:
            raise FindingsError(f"{shown_path(where)}: sidecar has no '{key}'")
        if not isinstance(side[key], want):
            raise FindingsError(f"{shown_path(where)}: sidecar '{key}' is {kind(side[key])}, "
                                f"not {JSON_TYPE[want]}")
    if "git_dirty" in side and not isinstance(side["git_dirty"], bool):
        raise FindingsError(f"{shown_path(where)}: sidecar 'git_dirty' is {kind(side['git_dirty'])}, not true/false")
    if "questions" in side:
        q = side["questions"]
        if not isinstance(q, dict) or not all(isinstance(t, str) for t in q.values()):
            raise FindingsError(f"{shown_path(where)}: sidecar 'questions' must be an object of strings")


def read_sidecar(path):
    with open(path, "rb") as f:
        text = decode_text(f.read(), path)
    try:
        side = json.loads(text)
    except json.JSONDecodeError as e:
        raise FindingsError(f"{shown_path(path)}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise FindingsError(f"{shown_path(path)}: not valid JSON (nested too deeply)") from None
    check_sidecar(side, path)
    return side


def make_result_file(name, csv_bytes, sidecar=None, where=None):
    """A ResultFile from a CSV's bytes (parsed, its SHA-256 taken) and its
    sidecar, already read and checked (None: there is none)."""
    folder = os.path.basename(os.path.dirname(where)) if where else ""
    where = where or name
    return ResultFile(name=name, sha256=hashlib.sha256(csv_bytes).hexdigest(),
                      table=parse_csv(decode_text(csv_bytes, where), where), sidecar=sidecar,
                      machine=folder or "h200")


def read_result_file(path):
    """A ResultFile from a CSV on disk and, when it has one, its sidecar <stem>.json."""
    with open(path, "rb") as f:
        data = f.read()
    side_path = os.path.splitext(path)[0] + ".json"
    side = read_sidecar(side_path) if os.path.exists(side_path) else None
    return make_result_file(os.path.basename(path), data, side, path)


def sort_files(files):
    files.sort(key=lambda f: (f.name, f.sha256))


def load_results(dirs, need_probes=True):
    """Every *_probes*.csv, *_ladder*.csv, *_sass.csv and *_sass_kernels.csv
    directly in the folders, with their sidecars. A file reached twice (the
    same folder named twice, or two paths to one file) counts once. Without a
    probes CSV it stops, unless need_probes is False."""
    fin = FindingsInput()
    seen = set()
    for d in dirs:
        if not os.path.isdir(d):
            raise FindingsError(f"results folder {shown_path(d)} does not exist")
        for entry in sorted(os.scandir(d), key=lambda e: e.name):
            if not entry.is_file():
                continue
            st = os.stat(entry.path)
            if (st.st_dev, st.st_ino) in seen:
                continue
            fname = entry.name
            path = entry.path
            probes = fname.endswith(PROBES_SUFFIX) or (fname.endswith(".csv") and PROBES_INFIX in fname)
            ladder = fname.endswith(LADDER_SUFFIX) or (fname.endswith(".csv") and LADDER_INFIX in fname)
            sass_kernels = fname.endswith(SASS_KERNELS_SUFFIX)
            sass = fname.endswith(SASS_SUFFIX)
            gemm = gemm_report.kind_of(fname)
            if not (probes or ladder or sass or sass_kernels or gemm):
                continue
            seen.add((st.st_dev, st.st_ino))
            with open(path, "rb") as f:
                data = f.read()
            if sass_kernels or sass:
                rf = make_result_file(fname, data, None, path)
                col = "kernel" if sass_kernels else "object"
                if not rf.table.has(col):
                    what = "a per-kernel SASS CSV" if sass_kernels else "a SASS opcode CSV"
                    raise FindingsError(f"{shown_path(path)}: not {what} (no column '{col}')")
                (fin.sass_kernels if sass_kernels else fin.sass).append(rf)
                continue
            side_path = os.path.splitext(path)[0] + ".json"
            side = read_sidecar(side_path) if os.path.exists(side_path) else None
            rf = make_result_file(fname, data, side, path)
            if gemm:
                gemm_report.check_file(rf, gemm, path)
                (fin.gemm_bench if gemm == "bench" else fin.gemm_verify).append(rf)
            elif probes:
                for col in PROBE_COLUMNS:
                    if not rf.table.has(col):
                        raise FindingsError(f"{shown_path(path)}: not a probes CSV (no column '{col}')")
                fin.probes.append(rf)
            else:
                for col in LADDER_COLUMNS:
                    if not rf.table.has(col):
                        raise FindingsError(f"{shown_path(path)}: not a ladder CSV (no column '{col}')")
                if not rf.table.has("rate") and not rf.table.has("gflops"):
                    raise FindingsError(f"{shown_path(path)}: not a ladder CSV (no column 'rate' or 'gflops')")
                fin.ladder.append(rf)
    if need_probes and not fin.probes:
        raise FindingsError("no *_probes.csv in " + ", ".join(shown_path(d) for d in dirs))
    for files in (fin.probes, fin.ladder, fin.sass, fin.sass_kernels, fin.gemm_bench, fin.gemm_verify):
        sort_files(files)
    return fin


# ---- small formatting helpers ------------------------------------------------


def md_cell(s):
    """A Markdown table cell: '|' escaped, line breaks flattened, a huge cell cut
    with a marker saying how long it was."""
    if len(s) > MAX_CELL_CHARS:
        s = s[:MAX_CELL_CHARS] + f" ... [cut: the cell has {len(s):,} characters; the CSV holds it whole]"
    return s.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
INTEGER = re.compile(r"[+-]?\d+")


def parse_number(s):
    """A finite number written alone in a cell, else None."""
    if not NUMBER.fullmatch(s):
        return None
    v = float(s)
    return v if math.isfinite(v) else None


def parse_int(s):
    return int(s) if INTEGER.fullmatch(s) else 0


def typed(t, i, col):
    """A typed numeric column of a row: NaN when the file lacks the column or
    the cell holds no number."""
    v = parse_number(t.cell(i, col))
    return math.nan if v is None else v


def ratio_text(r):
    return "%.2fx" % r


def verdict_digits(r, threshold, digits=2):
    """Decimals enough that `r` printed does not read as on the other side of
    `threshold` than the verdict puts it (1.097 is "1.097x", not "1.10x",
    beside "no win" at 1.10x)."""
    while digits < 6 and meets_ratio(round(r, digits), threshold) != meets_ratio(r, threshold):
        digits += 1
    return digits


def paired_columns(t, i):
    """{vendor rung: (median, p10, p90)} of a ladder row timed in alternating
    pairs against a vendor row (`rigel ladder --paired`); {} without one."""
    vendor = t.cell(i, "paired_vendor")
    median = typed(t, i, "paired_ratio_median")
    if not vendor or not math.isfinite(median) or median <= 0:
        return {}
    return {vendor: (median, typed(t, i, "paired_ratio_p10"), typed(t, i, "paired_ratio_p90"))}


def win_ratio_text(v, threshold=WIN_RATIO):
    """A win verdict's ratio: the paired median with its p10 and p90, marked
    paired, or the quotient of two medians timed apart, marked unpaired."""
    if not math.isfinite(v.ratio):
        return "-"
    d = verdict_digits(v.ratio, threshold)
    if not v.paired:
        return f"{v.ratio:.{d}f}x (unpaired)"
    spread = (f" [{v.p10:.{d}f}, {v.p90:.{d}f}]" if math.isfinite(v.p10) and math.isfinite(v.p90) else "")
    return f"{v.ratio:.{d}f}x{spread} (paired)"


def ladder_rate(t, i):
    """(rate in G units, counts operations rather than flops) of a ladder row:
    `rate` with its `rate_unit`, or the older `gflops` column (then i8 products
    count operations)."""
    g = parse_number(t.cell(i, "rate") if t.has("rate") else t.cell(i, "gflops"))
    ops = t.cell(i, "rate_unit") == "Gop/s" if t.has("rate_unit") else t.cell(i, "dtype") == "i8"
    return (g if g is not None else 0.0), ops


def format_rate(g, ops=False):
    big, small = ("Tops", "Gops") if ops else ("Tflop/s", "Gflop/s")
    return "%.1f %s" % (g / 1000, big) if g >= 1000 else "%.2f %s" % (g, small)


def shape_text(m, n, k):
    return str(m) if m == n == k else f"{m}x{n}x{k}"


def short_commit(f):
    if not f.has_sidecar:
        return "?"
    c = f.side("git_commit")
    if not c:
        return "?"
    if len(c) > 7 and c != "unknown":
        c = c[:7]
    if f.side("git_dirty") == "true":
        c += " (dirty)"
    return c


def relation_words(r):
    return {"fills_in": "fills in", "not_available": "not available", "contradicts": "**contradicts**"}.get(r, r)


def run_age(f):
    """How late a result file is: its run id (which starts with the UTC time),
    then its name."""
    return (f.table.cell(0, "run_id") if f.table.rows else "", f.name)


def matching_files(folder, name_pattern, columns, what):
    """[(file, match)] of the files in `folder` whose names `name_pattern` (a
    compiled regex) matches, in name order, each read with its sidecar and
    refused as not `what` when it lacks one of `columns`."""
    out = []
    if os.path.isdir(folder):
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            m = name_pattern.search(entry.name)
            if not entry.is_file() or not m:
                continue
            rf = read_result_file(entry.path)
            for col in columns:
                if not rf.table.has(col):
                    raise FindingsError(f"{shown_path(entry.path)}: not {what} (no column '{col}')")
            out.append((rf, m))
    return out


def newest_result_file(folder, name_pattern, columns, what):
    """The latest result file in `folder` whose name matches `name_pattern` (a
    compiled regex), read with its sidecar; None when there is none. A match
    that lacks one of `columns` is refused as not being `what`."""
    newest = None
    if os.path.isdir(folder):
        for entry in os.scandir(folder):
            if not entry.is_file() or not name_pattern.search(entry.name):
                continue
            rf = read_result_file(entry.path)
            for col in columns:
                if not rf.table.has(col):
                    raise FindingsError(f"{shown_path(entry.path)}: not {what} (no column '{col}')")
            if newest is None or run_age(rf) > run_age(newest):
                newest = rf
    return newest


# ---- which unit executes each path: dispatch triangulation ----------------------


def is_ceiling_row(t, i):
    return t.cell(i, "probe") == "throughput" and t.cell(i, "quantity") == "sustained throughput ceiling"


def rate_tflops(t, i):
    """A ceiling in Tflop/s (or Tops) from the row's `value` (older files: the
    `measured` cell when it holds a number alone) and its unit; None if absent."""
    v = parse_number(t.cell(i, "value") if t.has("value") else t.cell(i, "measured"))
    if v is None:
        return None
    u = t.cell(i, "unit").lower()
    if u in ("gflop/s", "gops"):
        v /= 1000
    elif u not in ("tflop/s", "tops"):
        return None
    return v if v > 0 else None


@dataclass
class ScalarRef:
    mnemonic: str  # FFMA, HFMA2, DFMA
    tflops: float
    power_w: float


def scalar_refs(t):
    """The scalar-FMA paths of a probes CSV: precision -> ceiling and power."""
    refs = {}
    for i in range(len(t.rows)):
        if not is_ceiling_row(t, i) or t.cell(i, "verified") != "1":
            continue
        m = mnemonic(t.cell(i, "path"))
        if m not in ("FFMA", "HFMA2", "DFMA"):
            continue
        tflops = rate_tflops(t, i)
        if tflops is None:
            continue
        refs.setdefault(t.cell(i, "dtype"), ScalarRef(m, tflops, typed(t, i, "power_w")))
    return refs


def roofline_precision(dtype):
    """The scalar precision that bounds a type on the CUDA cores: tf32 operands
    are fp32 words (FFMA); fp8 has no scalar FMA, so a CUDA-core fp8 product
    goes through f16 (HFMA2). No scalar integer path is measured: none for i8."""
    return {"f32": "f32", "tf32": "f32", "f16": "f16", "e4m3": "f16", "e5m2": "f16", "bf16": "bf16",
            "f64": "f64"}.get(dtype, "")


def expected_opcode(path, dtype):
    """(mnemonic, SASS CSV column) a throughput-probe instruction assembles to
    on sm_90; ("", "") when unknown."""
    p = path.lower()
    if p.startswith("ffma"):
        return "FFMA", "ffma"
    if p.startswith("hfma2"):
        return "HFMA2", "hfma2"
    if p.startswith("dfma"):
        return "DFMA", "dfma"
    if p.startswith("wgmma"):
        if dtype in ("e4m3", "e5m2"):
            return "QGMMA", "qgmma"
        if dtype == "i8":
            return "IGMMA", "igmma"
        return "HGMMA", "hgmma"
    if p.startswith("mma"):
        if dtype == "f64":
            return "DMMA", "dmma"
        if dtype == "i8":
            return "IMMA", "imma"
        # f16, bf16, tf32; and e4m3, which ptxas for sm_90 unpacks to f16 HMMA.
        return "HMMA", "hmma"
    return "", ""


def result_stem(name):
    """The date_commit stem a result file shares with its *_sass.csv."""
    for tag in ("_probes", "_ladder", "_sass"):
        at = name.find(tag)
        if at >= 0:
            return name[:at]
    return name


def file_named(files, want):
    return next((f for f in files if f.name == want), None)


def sass_counts(f, value, key="object"):
    """Opcode columns in file order, (column, count), of the row whose `key`
    column is `value`; None when there is no such row."""
    t = f.table
    for i in range(len(t.rows)):
        if t.cell(i, key) != value:
            continue
        return [(col, parse_int(t.cell(i, col))) for col in t.header if col not in ("object", "kernel")]
    return None


def limits_of(f, s):
    """The enforced power limit and the light-load SM clock from a sidecar,
    where the signals do not hold them yet."""
    if not f.has_sidecar:
        return
    if not math.isfinite(s.power_limit_w):
        v = parse_number(f.env("gpu_power_limit_w"))
        if v is not None:
            s.power_limit_w = v
    if not math.isfinite(s.max_sm_clock_mhz):
        v = parse_number(f.env("gpu_sm_clock_max_mhz"))
        if v is None:
            v = parse_number(f.env("gpu_sm_clock_peak_mhz"))
        if v is not None:
            s.max_sm_clock_mhz = v


def clock_power_text(clock, power, recorded=True):
    if not recorded:
        return "not recorded"
    return (("%.0f MHz" % clock) if math.isfinite(clock) else "-") + " / " + \
        (("%.0f W" % power) if math.isfinite(power) else "-")


def verdict_cell(v):
    s = "**" + v.unit + "**"
    if v.signals_available > 0 and v.unit != "undetermined":
        s += f" ({v.signals_agreeing} of {v.signals_available} signals agree)"
    return s


def roofline_cell(tflops, refs, dtype, s):
    s.measured_tflops = tflops
    ref = refs.get(roofline_precision(dtype))
    if ref is None:
        return "- (no scalar " + dtype + " path)"
    s.scalar_fma_roofline_tflops = ref.tflops
    s.scalar_power_w = ref.power_w
    return ratio_text(tflops / ref.tflops) + " " + ref.mnemonic


def is_drawn_sweep_row(t, i):
    """A row of a sweep that a figure draws (SWEEP_FIGURES), not a finding read alone."""
    return t.cell(i, "probe") in SWEEP_FIGURES and parse_number(t.cell(i, "swept")) is not None


def accumulator_data(probes):
    """The accumulation probe's per-gap hostile sums from the latest probes file
    that has them: (that file's name, {(path, dtype): [(gap, relative error)]}
    sorted by gap), or (None, {}) when no file has them."""
    latest = None
    for f in probes:
        t = f.table
        if any(t.cell(i, "probe") == "accumulation" and is_drawn_sweep_row(t, i) for i in range(len(t.rows))):
            if latest is None or run_age(f) >= run_age(latest):
                latest = f
    if latest is None:
        return None, {}
    t = latest.table
    lines = {}
    for i in range(len(t.rows)):
        if t.cell(i, "probe") != "accumulation" or not is_drawn_sweep_row(t, i):
            continue
        err = parse_number(t.cell(i, "value"))
        if err is not None and t.cell(i, "verified") == "1":
            lines.setdefault((t.cell(i, "path"), t.cell(i, "dtype")), []).append(
                (parse_number(t.cell(i, "swept")), err))
    return latest.name, {k: sorted(v) for k, v in sorted(lines.items())}


def latest_ceiling_run(probes):
    """The latest probes file that measured throughput ceilings; None when none did."""
    latest = None
    for f in probes:
        if any(is_ceiling_row(f.table, i) for i in range(len(f.table.rows))):
            if latest is None or run_age(f) >= run_age(latest):
                latest = f
    return latest


def probe_dispatch_rows(fin, f):
    """The dispatch table of one throughput-probe run, and the SASS record it read."""
    t = f.table
    refs = scalar_refs(t)
    sass = file_named(fin.sass, result_stem(f.name) + SASS_SUFFIX)
    per_kernel = file_named(fin.sass_kernels, result_stem(f.name) + SASS_KERNELS_SUFFIX)
    object_counts = sass_counts(sass, "throughput_ceilings") if sass else None
    limits = DispatchSignals()
    limits_of(f, limits)
    recorded = t.has("sm_clock_mhz") and t.has("power_w")
    rows = ""
    for i in range(len(t.rows)):
        if not is_ceiling_row(t, i):
            continue
        path, dtype = t.cell(i, "path"), t.cell(i, "dtype")
        s = DispatchSignals(power_limit_w=limits.power_limit_w, max_sm_clock_mhz=limits.max_sm_clock_mhz,
                            sm_clock_mhz=typed(t, i, "sm_clock_mhz"), sustained_power_w=typed(t, i, "power_w"))
        ceiling, ratio = "-", "-"
        tflops = rate_tflops(t, i)
        if tflops is not None:
            ceiling = md_cell(t.cell(i, "measured") + " " + t.cell(i, "unit"))
            if t.cell(i, "verified") != "1":
                ceiling += " (unverified)"
            ratio = roofline_cell(tflops, refs, dtype, s)
        mnemonic, column = expected_opcode(path, dtype)
        # The opcodes of the kernel that measured this ceiling where the run
        # recorded them per kernel, else those of the whole object.
        counts, where = object_counts, "throughput_ceilings"
        kernel = t.cell(i, "kernel")
        kernel_counts = sass_counts(per_kernel, kernel, "kernel") if per_kernel and kernel else None
        if kernel_counts is not None:
            counts, where = kernel_counts, "its kernel"
        if per_kernel and not kernel:
            # The object's counts would mislead here: an emptied kernel's
            # opcode still sits in another kernel of the same object.
            sass_text = "kernel not recorded"
            s.sass_note = "the CSV records no kernel symbol to look up in " + per_kernel.name
        elif sass is None and where == "throughput_ceilings":
            sass_text = "no SASS record"
            s.sass_note = "no SASS record (no " + result_stem(f.name) + SASS_SUFFIX + ")"
        elif object_counts is None and where == "throughput_ceilings":
            sass_text = "no SASS record"
            s.sass_note = "no SASS record of throughput_ceilings in " + sass.name
        elif not mnemonic:
            sass_text = "-"
            s.sass_note = "no opcode known for this instruction"
        else:
            n = -1
            for col, c in counts:
                if col.lower() == column:
                    n = c
            if n < 0:
                sass_text = mnemonic + ": not counted"
                s.sass_note = (mnemonic + " is not counted by the SASS record ("
                               + (per_kernel.name if where == "its kernel" else sass.name) + ")")
            elif n == 0:
                sass_text = "**no " + mnemonic + "** in " + where
                s.sass_opcodes_absent.append(mnemonic)
            else:
                sass_text = f"{mnemonic} ({n} in {where})"
                s.sass_opcodes.append(mnemonic)
            # What else the kernel holds that changes the reading: the
            # conversions of an emulated type.
            if where == "its kernel":
                for col, c in counts:
                    if col.lower() == "f2fp" and c > 0:
                        sass_text += f" + F2FP ({c})"
        v = triangulate_dispatch(s)
        rows += (f"| {md_cell(path)} | {md_cell(dtype)} | {ceiling} | {ratio} | {md_cell(sass_text)} | "
                 f"{clock_power_text(s.sm_clock_mhz, s.sustained_power_w, recorded)} | {md_cell(verdict_cell(v))} | "
                 f"{md_cell(v.reasoning)} |\n")
    if per_kernel:
        record = "`" + md_cell(per_kernel.name) + "`, per kernel"
    elif sass:
        record = "`" + md_cell(sass.name) + "`, object `throughput_ceilings`"
    else:
        record = "no SASS record"
    return rows, record


def ladder_dispatch_rows(fin):
    """The best verified rate of each (rung, type) on the CUDA backend, its
    opcodes from the SASS object named after the rung in the SASS record of
    the row's own run (its date_commit stem); and the roofline file, the
    newest probes run (by run id, not by name) that measured a scalar path."""
    ref_file = max((f for f in fin.probes if scalar_refs(f.table)), key=run_age, default=None)
    best = {}  # (rung, dtype) -> (file, row, rate, ops)
    for f in fin.ladder:
        t = f.table
        for i in range(len(t.rows)):
            g, ops = ladder_rate(t, i)
            if t.cell(i, "backend") != "cuda" or t.cell(i, "status") != "PASS" or g <= 0:
                continue
            key = (t.cell(i, "rung"), t.cell(i, "dtype"))
            if key not in best or g > best[key][2]:
                best[key] = (f, i, g, ops)
    refs = scalar_refs(ref_file.table) if ref_file else {}
    rows = ""
    for (rung, dtype), (f, i, g, ops) in sorted(best.items()):
        t = f.table
        s = DispatchSignals()
        limits_of(f, s)
        if ref_file:
            limits_of(ref_file, s)
        s.sm_clock_mhz = typed(t, i, "sm_clock_mhz")
        s.sustained_power_w = typed(t, i, "power_w")
        ratio = roofline_cell(g / 1000, refs, dtype, s)
        sass = file_named(fin.sass, result_stem(f.name) + SASS_SUFFIX)
        counts = sass_counts(sass, rung) if sass else None
        if counts is None:
            sass_text = "no SASS record"
            s.sass_note = "no SASS record for " + rung
        else:
            # The object holds every type the rung is built for: an fp64 row
            # reads only fp64 opcodes (the record does not count DFMA), an fp8
            # row no HGMMA, the others no QGMMA and no DMMA.
            parts = []
            fp8 = dtype in ("e4m3", "e5m2")
            for col, c in counts:
                lc = col.lower()
                if c <= 0 or (dtype == "f64") != (lc == "dmma") or (fp8 and lc == "hgmma") or (not fp8 and lc == "qgmma"):
                    continue
                s.sass_opcodes.append(col.upper())
                parts.append(f"{col.upper()} {c}")
            sass_text = ", ".join(parts)
            if not s.sass_opcodes:
                sass_text = "no DMMA (DFMA not counted)" if dtype == "f64" else "no matrix/FMA opcode counted"
                s.sass_note = ("no " + ("DMMA (and DFMA is not counted)" if dtype == "f64"
                                        else "matrix or FMA opcode counted") + " in " + rung)
        dv = triangulate_dispatch(s)
        rows += (f"| {md_cell(rung)} | {md_cell(dtype)} | "
                 f"{shape_text(parse_int(t.cell(i, 'm')), parse_int(t.cell(i, 'n')), parse_int(t.cell(i, 'k')))} | "
                 f"{format_rate(g, ops)} | {ratio} | {md_cell(sass_text)} | "
                 f"{clock_power_text(s.sm_clock_mhz, s.sustained_power_w)} | {md_cell(verdict_cell(dv))} | "
                 f"{md_cell(dv.reasoning)} | {md_cell(f.name)} |\n")
    return rows, ref_file


def render_dispatch(fin):
    probe_part = ""
    latest = latest_ceiling_run(fin.probes)
    if latest:
        rows, record = probe_dispatch_rows(fin, latest)
        if rows:
            probe_part = (f"\nThroughput probe, `{md_cell(latest.name)}`; SASS: {record}.\n\n"
                          "| path | type | ceiling | x scalar roofline | SASS | SM clock / power | verdict | reasoning |\n"
                          "|---|---|---|---|---|---|---|---|\n" + rows)
    ladder_rows, ref_file = ladder_dispatch_rows(fin)
    if not probe_part and not ladder_rows:
        return ""
    md = ("\n## Which unit executes each path\n\n"
          "Three independent signals per path, combined by `triangulate_dispatch` (reproduce/verdicts.py): "
          "(a) the rate against the scalar-FMA roofline of the same precision, measured by the throughput probe "
          "(FFMA for f32 and tf32, HFMA2 for f16 and fp8, HFMA2.BF16 for bf16, DFMA for f64; no scalar integer "
          "path is measured, so i8 has none); (b) the opcode in the SASS; (c) the power and SM clock recorded "
          "with the measurement: energy per flop against the scalar path's, else the clock under load against "
          "the light-load clock and the power limit. A ceiling above 1.10x the roofline cannot come from the "
          "CUDA cores. For the scalar paths themselves (a) and (c) compare a path with itself and only confirm. "
          "The SASS cell counts the expected opcode in the very kernel that measured the ceiling, where the "
          "run has a per-kernel SASS record (`*_sass_kernels.csv`, matched by the kernel symbol in the probe "
          "CSV's `kernel` column), else in the probe's whole object (`throughput_ceilings`). Clock, power and "
          "kernel come from the probe CSV's typed columns; a run written before those columns existed shows "
          "them as not recorded, and then the per-kernel record cannot be read. Per kernel matters: "
          "a kernel whose loop the compiler emptied still holds the opcode somewhere; ptxas turns mma.sync e4m3 "
          "into F2FP unpacks and f16 HMMA on Hopper, and with loop-invariant operands it computed the product "
          "once, before the loop. Older SASS records count HGMMA, QGMMA, HMMA, IMMA, DMMA and FFMA only.\n")
    md += probe_part
    if ladder_rows:
        md += ("\nLadder rungs (CUDA backend): the best verified rate of each rung and type, its SASS from the "
               "object named after the rung, the clock and power the ladder recorded with that row"
               + (f"; roofline from `{md_cell(ref_file.name)}`" if ref_file else "; no scalar roofline measured")
               + ". A GEMM's rate is not a ceiling and its energy includes memory traffic.\n\n"
               "| rung | type | shape | rate | x scalar roofline | SASS | SM clock / power | verdict | reasoning | source |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n" + ladder_rows)
    return md


# ---- accelerated and win verdicts --------------------------------------------------


def path_family(path):
    """The path a ceiling belongs to, across types: "mma.sync", "wgmma m64n256"."""
    p = path.lower()
    if p.startswith("wgmma"):
        m = re.search(r"\.m64n(\d*)", p)
        return "wgmma m64n" + m.group(1) if m else "wgmma"
    if p.startswith("mma.sync"):
        return "mma.sync"
    return p


@dataclass
class ProbeAccel:
    """One low-precision ceiling against the f16 ceiling of the same path."""
    family: str
    dtype: str
    path: str
    tflops: float
    ops: bool
    f16_path: str
    f16_tflops: float
    verdict: object
    source: str


def throughput_accel_data(probes):
    """The accelerated rule on the latest throughput run's ceilings, one
    ProbeAccel per (path family, low-precision type) with an f16 ceiling."""
    f = latest_ceiling_run(probes)
    if not f:
        return []
    t = f.table
    by_family = {}  # (family, type) -> row, the first of each
    for i in range(len(t.rows)):
        if is_ceiling_row(t, i) and t.cell(i, "verified") == "1":
            by_family.setdefault((path_family(t.cell(i, "path")), t.cell(i, "dtype")), i)
    out = []
    for (family, dtype), i in sorted(by_family.items()):
        if dtype not in LOW_PRECISION_TYPES or (family, "f16") not in by_family:
            continue
        h = by_family[(family, "f16")]
        lo, hi = rate_tflops(t, i), rate_tflops(t, h)
        if lo is None or hi is None:
            continue
        out.append(ProbeAccel(family, dtype, t.cell(i, "path"), lo, t.cell(i, "unit").lower() == "tops",
                              t.cell(h, "path"), hi, accelerated_rule(lo, hi), f.name))
    return out


def throughput_accel_rows(probes):
    """The accelerated rule on the latest throughput run's ceilings, as table rows."""
    rows = ""
    for a in throughput_accel_data(probes):
        v = a.verdict
        rows += (f"| {md_cell(a.family)} | {a.dtype} | {md_cell(a.path)} "
                 f"{format_rate(a.tflops * 1000, a.ops)} | {md_cell(a.f16_path)} "
                 f"{format_rate(a.f16_tflops * 1000)} | {ratio_text(v.ratio) if math.isfinite(v.ratio) else '-'} | "
                 f"{v.label} | {md_cell(a.source)} |\n")
    return rows


@dataclass
class LadderAccel:
    """The best verified rung of a group in one type against the group's best
    f16 rung at the same shape, in one ladder file."""
    group: str
    shape: tuple
    dtype: str
    rung: str
    rate: float
    ops: bool
    f16: object  # (rate, rung, ops) or None
    verdict: object
    source: str
    age: tuple = ()  # run_age of the source file: which of two files is the newer run


def ladder_groups(t):
    """Per ladder table: best rate per (group, m, n, k, type), best own CUDA rung
    per (m, n, k, type), vendor rows per (m, n, k, type)."""
    best_by_group = {}  # (group, m, n, k, dtype) -> (rate, rung, ops)
    best_own = {}       # (m, n, k, dtype) -> (rate, rung, ops, row), own CUDA rungs
    vendors = {}        # (m, n, k, dtype) -> [(rung, rate)]
    for i in range(len(t.rows)):
        g, ops = ladder_rate(t, i)
        if t.cell(i, "status") != "PASS" or g <= 0:
            continue
        m, n, k = parse_int(t.cell(i, "m")), parse_int(t.cell(i, "n")), parse_int(t.cell(i, "k"))
        dtype, rung = t.cell(i, "dtype"), t.cell(i, "rung")
        gk = (t.cell(i, "group"), m, n, k, dtype)
        if g > best_by_group.get(gk, (0.0,))[0]:
            best_by_group[gk] = (g, rung, ops)
        key = (m, n, k, dtype)
        if t.cell(i, "vendor") == "1":
            vendors.setdefault(key, []).append((rung, g))
        elif t.cell(i, "backend") == "cuda" and g > best_own.get(key, (0.0,))[0]:
            best_own[key] = (g, rung, ops, i)
    return best_by_group, best_own, vendors


def ladder_accel_data(ladder):
    """The accelerated rule on every ladder file, in file order."""
    out = []
    for f in ladder:
        best_by_group, _, _ = ladder_groups(f.table)
        for (group, m, n, k, dtype), (g, rung, ops) in sorted(best_by_group.items()):
            if dtype not in LOW_PRECISION_TYPES:
                continue
            f16 = best_by_group.get((group, m, n, k, "f16"))
            out.append(LadderAccel(group, (m, n, k), dtype, rung, g, ops, f16,
                                   accelerated_rule(g, f16[0] if f16 else 0.0), f.name, run_age(f)))
    return out


def render_ladder(ladder, probe_accel):
    accel = win = ""
    for a in ladder_accel_data(ladder):
        v, f16 = a.verdict, a.f16
        accel += (f"| {md_cell(a.group)} | {shape_text(*a.shape)} | {a.dtype} | {md_cell(a.rung)} "
                  f"{format_rate(a.rate, a.ops)} | "
                  + (f"{md_cell(f16[1])} {format_rate(f16[0], f16[2])}" if f16 else "-")
                  + f" | {ratio_text(v.ratio) if math.isfinite(v.ratio) else '-'} | {v.label} | {a.source} |\n")
    for f in ladder:
        _, best_own, vendors = ladder_groups(f.table)
        for (m, n, k, dtype), (g, rung, ops, i) in sorted(best_own.items()):
            bases = vendors.get((m, n, k, dtype), [])
            v = win_rule(g, bases, paired_columns(f.table, i))
            strongest = max((b[1] for b in bases), default=0.0)
            win += (f"| {shape_text(m, n, k)} | {dtype} | {md_cell(rung)} {format_rate(g, ops)} | "
                    + (f"{md_cell(v.strongest)} {format_rate(strongest, ops)}" if v.strongest else "-")
                    + f" | {win_ratio_text(v)} | {v.label} | {f.name} |\n")
    md = ""
    if accel or probe_accel:
        md += ("\n## Is a low-precision type accelerated, or only smaller?\n\n"
               "Rule: a low-precision type is *accelerated* only at >= 1.5x the fp16 rate of the same path; "
               "otherwise *footprint only*. The ratios below, drawn against that line: "
               "[docs/figures/speed_ratios.png](docs/figures/speed_ratios.png).\n")
    if accel:
        md += ("\nLadder: the best verified rung of the group against the group's best fp16 rung, same shape.\n\n"
               "| path (group) | shape | type | best rung | fp16 best rung | ratio | verdict | source |\n"
               "|---|---|---|---|---|---|---|---|\n" + accel)
    if probe_accel:
        md += ("\nThroughput probe: the sustained ceiling of one instruction against the f16 instruction of the same "
               "path (mma.sync; wgmma at the same N).\n\n"
               "| path | type | ceiling | fp16 ceiling | ratio | verdict | source |\n"
               "|---|---|---|---|---|---|---|\n" + probe_accel)
    if win:
        md += ("\n## Does a rigel kernel win?\n\n"
               "Rule: a kernel *wins* only at >= 1.10x the strongest baseline; here the baselines are the vendor "
               "library rows (cuBLAS, cuBLASLt) of the same shape and type. The ratio is *paired* where the run timed "
               "the rung against that very vendor row in alternating samples (`rigel ladder --paired`): the median "
               "of the per-pair ratios, [p10, p90] their spread, and the verdict reads it. Elsewhere it is "
               "*unpaired*: the quotient of the two rows' medians, timed apart.\n\n"
               "| shape | type | best own CUDA rung | strongest vendor row | ratio | verdict | source |\n"
               "|---|---|---|---|---|---|---|\n" + win)
    return md


# ---- the document ------------------------------------------------------------------


def render_findings(fin):
    """Sections, in order: sources, summary, one per probe, which unit executes
    each path, the accelerated verdicts (ladder and throughput probe), the win
    verdicts, fused bias + GELU against the decomposed path (gemm_report.py)."""
    probes, ladder = sorted(fin.probes, key=lambda f: (f.name, f.sha256)), sorted(fin.ladder, key=lambda f: (f.name, f.sha256))
    sass = sorted(fin.sass, key=lambda f: (f.name, f.sha256))
    sass_kernels = sorted(fin.sass_kernels, key=lambda f: (f.name, f.sha256))
    gemm_bench = sorted(fin.gemm_bench, key=lambda f: (f.name, f.sha256))
    gemm_verify = sorted(fin.gemm_verify, key=lambda f: (f.name, f.sha256))
    fin = FindingsInput(probes, ladder, sass, sass_kernels, gemm_bench, gemm_verify)

    md = ("# rigel findings\n\n"
          "Generated by `make reproduce` from the result files listed below; do not edit by hand. "
          "Each finding sits beside the documentation statement it confirms, fills in or contradicts.\n\n"
          "## Sources\n\n"
          "A finding measured by several runs is shown from the latest; the earlier runs stay listed here.\n\n"
          "| file | sha256 | run id | commit | device | rows |\n|---|---|---|---|---|---|\n")
    for files in (probes, ladder, sass, sass_kernels, gemm_bench, gemm_verify):
        for f in files:
            md += (f"| {md_cell(f.name)} | `{f.sha256}` | {md_cell(f.side('run_id'))} | {md_cell(short_commit(f))} | "
                   f"{md_cell(f.env('gpu_name'))} | {len(f.table.rows)} |\n")

    # A finding measured by several runs is shown from the latest only (run ids
    # start with the UTC time); earlier runs stay listed under Sources.
    def finding_key(t, i):
        return (t.cell(i, "probe"), t.cell(i, "path"), t.cell(i, "dtype"), t.cell(i, "quantity"), t.cell(i, "swept"))
    latest = {}
    for n, f in enumerate(probes):
        for i in range(len(f.table.rows)):
            k = finding_key(f.table, i)
            if k not in latest or run_age(f) >= run_age(probes[latest[k]]):
                latest[k] = n
    question, groups, relation_count, contradictions, swept = {}, {}, {}, [], {}
    for n, f in enumerate(probes):
        if f.has_sidecar:
            for probe, q in f.sidecar.get("questions", {}).items():
                question.setdefault(probe, q)
        for i in range(len(f.table.rows)):
            if latest[finding_key(f.table, i)] != n:
                continue
            if is_drawn_sweep_row(f.table, i):
                probe = f.table.cell(i, "probe")
                swept[probe] = swept.get(probe, 0) + 1
                groups.setdefault(probe, [])
                continue
            groups.setdefault(f.table.cell(i, "probe"), []).append((f, i))
            rel = f.table.cell(i, "relation")
            relation_count[rel] = relation_count.get(rel, 0) + 1
            if rel == "contradicts":
                contradictions.append((f, i))

    known = ["confirms", "fills_in", "contradicts", "not_available", "error"]
    counts = [f"{relation_count[r]} {relation_words(r)}" for r in known if r in relation_count]
    counts += [f"{c} '{md_cell(r)}'" for r, c in sorted(relation_count.items()) if r not in known]
    md += (f"\n## Summary\n\n{sum(relation_count.values())} findings from {len(groups)} probes:"
           + (" " + ", ".join(counts) if counts else "") + ".\n")
    if contradictions:
        md += "\nWhere the device contradicts the documentation:\n\n"
        for f, i in contradictions:
            c = lambda col: md_cell(f.table.cell(i, col))
            md += (f"- `{c('probe')}`: {c('quantity')}: measured {c('measured')}; the documentation says: "
                   f"{c('doc_statement')} ({c('doc_source')})\n")

    for probe in sorted(groups):
        md += (f"\n## {md_cell(question.get(probe, probe))}\n\nProbe `{md_cell(probe)}`.\n\n"
               "| finding | path | type | measured | expected | relation | the documentation says | source | detail | "
               "run @ commit |\n|---|---|---|---|---|---|---|---|---|---|\n")
        for f, i in groups[probe]:
            t = f.table
            c = lambda col: md_cell(t.cell(i, col))
            measured = c("measured")
            if t.cell(i, "unit") and measured:
                measured += " " + c("unit")
            if t.cell(i, "verified") != "1" and measured:
                measured += " (unverified)"
            md += (f"| {c('quantity')} | {c('path')} | {c('dtype')} | {measured} | {c('expected')} | "
                   f"{relation_words(t.cell(i, 'relation'))} | {c('doc_statement')} | {c('doc_source')} | "
                   f"{c('detail')} | {c('run_id')} @ {md_cell(short_commit(f))} |\n")
        if swept.get(probe):
            figure, what = SWEEP_FIGURES[probe]
            md += (f"\n{swept[probe]} rows of a sweep are not listed here: they are drawn in "
                   f"[{figure}]({figure}), {what}.\n")
    md += render_dispatch(fin)
    md += render_ladder(ladder, throughput_accel_rows(probes))
    md += gemm_report.render_finding(fin)
    md += timing_report.render_finding(fin)
    return md


def write_if_changed(path, text):
    """Write `text` (or bytes) to `path` through a temporary file in the same
    folder, and only when it differs, so that a second run leaves the tree
    unchanged."""
    path = os.fspath(path)
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except FileNotFoundError:
        pass
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description="Render FINDINGS.md from probe (and ladder) CSVs; no GPU needed.")
    ap.add_argument("--results", nargs="+", default=["results/h200"], help="folders holding *_probes.csv")
    ap.add_argument("--out", default="FINDINGS.md", help="the Markdown file to write, or - for stdout")
    args = ap.parse_args(argv)
    try:
        fin = load_results(args.results)
        md = render_findings(fin)
    except FindingsError as e:
        print(f"findings: error: {e}", file=sys.stderr)
        return 1
    if args.out == "-":
        sys.stdout.write(md)
        return 0
    write_if_changed(args.out, md)
    print(f"findings: wrote {args.out} from {len(fin.probes)} probes CSV(s) and {len(fin.ladder)} ladder CSV(s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
