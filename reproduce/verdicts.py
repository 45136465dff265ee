"""RIGEL's verdict rules, as pure functions: what a set of measured numbers
entitles rigel to claim. Every verdict carries its reasoning in words, so that
a reader of FINDINGS.md sees why, not only what.

- Accelerated rule: a low-precision path is "accelerated" only at >= 1.5x the
  fp16 throughput of the same path; otherwise "footprint only" (it saves bytes,
  not time).
- Win rule: a kernel "wins" only at >= 1.10x the strongest baseline.
- Dispatch triangulation: which unit executes a path, from three independent
  signals (throughput ceiling against the scalar-FMA roofline, the SASS
  opcodes, power and clock under sustained load).
"""
import math
import re
from dataclasses import dataclass, field

ACCELERATED_RATIO = 1.5
WIN_RATIO = 1.10

# Relative slack for "at least": a ratio is compared after forgiving this much,
# far below any difference a timing could resolve (0.3 / 0.2 is
# 1.4999999999999998 in binary floating point, and is 1.5x).
RATIO_SLACK = 1e-9

# Throughput: a ceiling this far above the scalar-FMA roofline cannot come from
# the CUDA cores (the roofline is their peak, so 10 % is well past noise).
ABOVE_ROOFLINE = 1.10
# Power/clock: at >= 90 % of the power limit with the clock pulled below 90 % of
# its light-load value, the card is power-bound the way tensor-core GEMMs hold
# it (H200: 700 W, about 1.45-1.5 GHz against 1.98 GHz); a clock within 5 % of
# its light-load value means no such load.
POWER_BOUND_FRACTION = 0.90
CLOCK_PULLED_FRACTION = 0.90
CLOCK_AT_MAX_FRACTION = 0.95
# Energy per flop against the scalar-FMA path of the same precision (both under
# their own sustained load): the tensor cores spend a fraction of the CUDA
# cores' energy on a multiply-add (H200: about 0.6 pJ per f16 flop on wgmma
# against 4-5 pJ on HFMA2/FFMA), so at most half is a matrix unit; at least 0.8
# is the CUDA cores' cost or worse (a GEMM adds memory traffic).
ENERGY_TENSOR_FRACTION = 0.5
ENERGY_SCALAR_FRACTION = 0.8

NAN = math.nan

# (mnemonic, unit, rank): matrix instructions outrank FMA ones, since a GEMM
# kernel's FFMA/IMAD are address and epilogue arithmetic when an MMA is present.
OPCODE_UNITS = [
    ("UTCHMMA", "tensor core (UTCHMMA, tcgen05)", 30),
    ("UTCQMMA", "tensor core (UTCQMMA, tcgen05)", 30),
    ("UTCIMMA", "tensor core (UTCIMMA, tcgen05)", 30),
    ("HGMMA", "tensor core (HGMMA)", 20),
    ("QGMMA", "tensor core (QGMMA)", 20),
    ("IGMMA", "tensor core (IGMMA)", 20),
    ("HMMA", "tensor core (HMMA, legacy warp path)", 10),
    ("QMMA", "tensor core (QMMA, legacy warp path)", 10),
    ("IMMA", "tensor core (IMMA, legacy warp path)", 10),
    ("DMMA", "tensor core (DMMA, fp64)", 10),
    ("FFMA", "CUDA cores (FFMA)", 1),
    ("DFMA", "CUDA cores (DFMA)", 1),
    ("HFMA2", "CUDA cores (HFMA2)", 1),
    ("IDP4A", "CUDA cores (IDP4A)", 1),
]


def measured(v):
    return v is not None and math.isfinite(v) and v > 0


def meets_ratio(ratio, threshold):
    """ratio >= threshold, forgiving the last bits of a quotient."""
    return math.isfinite(ratio) and ratio >= threshold * (1 - RATIO_SLACK)


@dataclass
class AcceleratedVerdict:
    accelerated: bool = False
    ratio: float = NAN  # low-precision rate / fp16 rate
    label: str = ""     # "accelerated", "footprint only" or "not available"
    reasoning: str = ""


def accelerated_rule(lowp_rate, fp16_rate):
    """Rates in any one unit; a rate <= 0 or not finite means "not measured"."""
    if not measured(lowp_rate) or not measured(fp16_rate):
        return AcceleratedVerdict(label="not available",
                                  reasoning="the low-precision rate or the fp16 rate of the same path was not measured")
    ratio = lowp_rate / fp16_rate
    acc = meets_ratio(ratio, ACCELERATED_RATIO)
    return AcceleratedVerdict(
        accelerated=acc, ratio=ratio, label="accelerated" if acc else "footprint only",
        reasoning="%.3gx the fp16 rate of the same path; " % ratio
        + ("at least 1.5x, so the type buys speed, not only bytes" if acc
           else "below 1.5x, so the type saves memory but is not accelerated"))


@dataclass
class WinVerdict:
    wins: bool = False
    ratio: float = NAN  # kernel / strongest baseline
    strongest: str = ""  # the strongest baseline's name
    label: str = ""      # "wins", "no win" or "not available"
    reasoning: str = ""
    # Whether `ratio` is the median of per-pair ratios against the strongest
    # baseline (alternating samples), with p10/p90 its spread; otherwise it is
    # the quotient of two medians timed apart (unpaired).
    paired: bool = False
    p10: float = NAN
    p90: float = NAN


def win_rule(kernel_rate, baselines, paired=None):
    """baselines: (name, rate) pairs; those not measured are ignored.
    paired: {baseline name: (median, p10, p90)} of per-pair ratios the kernel
    was timed with; where it holds the strongest baseline, that median is the
    ratio judged, else the quotient of the two rates (unpaired)."""
    best = None
    for name, rate in baselines:
        if measured(rate) and (best is None or rate > best[1]):
            best = (name, rate)
    if not measured(kernel_rate) or best is None:
        return WinVerdict(label="not available",
                          reasoning="no baseline was measured" if best is None else "the kernel's rate was not measured")
    ratio, p10, p90 = kernel_rate / best[1], NAN, NAN
    pair = (paired or {}).get(best[0])
    is_paired = pair is not None and measured(pair[0])
    if is_paired:
        ratio, p10, p90 = pair
    wins = meets_ratio(ratio, WIN_RATIO)
    return WinVerdict(
        wins=wins, ratio=ratio, strongest=best[0], label="wins" if wins else "no win", paired=is_paired,
        p10=p10, p90=p90,
        reasoning="%.3gx the strongest baseline (" % ratio + best[0] + ", "
        + ("median of per-pair ratios" if is_paired else "unpaired ratio of medians") + "); "
        + ("at least 1.10x, a win" if wins else "below 1.10x, within what tuning and noise can move: no win"))


def mnemonic(text):
    """The text before the first '.' or ' ', upper case: "HGMMA" of
    "HGMMA.64x128x16.F32.BF16", "HFMA2" of "hfma2.bf16 (bf16x2 FMA)"."""
    return re.split(r"[. ]", text, maxsplit=1)[0].upper()


def _lookup(opcode):
    m = mnemonic(opcode)
    for entry in OPCODE_UNITS:
        if entry[0] == m:
            return entry
    return None


def unit_of_opcode(opcode):
    """The unit an opcode runs on, or "" when it is neither a matrix nor an FMA
    instruction (loads, moves, branches). Mnemonic = text before the first '.'."""
    u = _lookup(opcode)
    return u[1] if u else ""


def _is_tensor(unit):
    return unit.startswith("tensor core")


@dataclass
class DispatchSignals:
    measured_tflops: float = NAN             # the path's sustained ceiling
    scalar_fma_roofline_tflops: float = NAN  # CUDA-core FMA peak, same precision
    sass_opcodes: list = field(default_factory=list)  # from the path's kernel, e.g. "HGMMA.64x128x16.F32.BF16"
    sustained_power_w: float = NAN
    sm_clock_mhz: float = NAN                # under the sustained load
    power_limit_w: float = NAN               # the enforced limit, if known
    max_sm_clock_mhz: float = NAN            # the clock on light work, if known
    # Power drawn by the scalar-FMA path of the roofline under its own load:
    # with both powers and both rates the power signal becomes energy per flop
    # against the CUDA cores', which tells the units apart where the clock does
    # not (a tensor-core path below the power limit runs at the full clock).
    scalar_power_w: float = NAN
    # Opcodes the path's instruction assembles to that the kernel's SASS was
    # checked for and lacks (emulated, or compiled away).
    sass_opcodes_absent: list = field(default_factory=list)
    # Why there is no SASS signal, in words; replaces "not available".
    sass_note: str = ""


@dataclass
class DispatchVerdict:
    unit: str = ""             # "tensor core (HGMMA)", "CUDA cores (FFMA)", ..., "undetermined"
    signals_available: int = 0  # of throughput, SASS, power/clock
    signals_agreeing: int = 0
    consistent: bool = False    # every available signal agrees with `unit`
    reasoning: str = ""


def triangulate_dispatch(s):
    v = DispatchVerdict()

    # 1. Machine code: the strongest unit among the opcodes.
    sass = None
    for op in s.sass_opcodes:
        u = _lookup(op)
        if u and (sass is None or u[2] > sass[2]):
            sass = u

    # 2. Throughput against the scalar-FMA roofline.
    have_ceiling = measured(s.measured_tflops) and measured(s.scalar_fma_roofline_tflops)
    r = s.measured_tflops / s.scalar_fma_roofline_tflops if have_ceiling else 0.0
    above_roofline = have_ceiling and r > ABOVE_ROOFLINE

    # 3. Power and clock under sustained load: +1 tensor-like load, -1 light
    # (CUDA-core-like) load, 0 inconclusive or absent.
    power_says = 0
    power_text = ""
    if have_ceiling and measured(s.sustained_power_w) and measured(s.scalar_power_w):
        pj = s.sustained_power_w / s.measured_tflops  # W per Tflop/s = pJ per flop
        scalar_pj = s.scalar_power_w / s.scalar_fma_roofline_tflops
        e = pj / scalar_pj
        power_says = 1 if e <= ENERGY_TENSOR_FRACTION else (-1 if e >= ENERGY_SCALAR_FRACTION else 0)
        power_text = ("power %.0f W" % s.sustained_power_w
                      + (" at %.0f MHz" % s.sm_clock_mhz if measured(s.sm_clock_mhz) else "")
                      + ": %.3g pJ per flop," % pj + " %.2gx the scalar-FMA path's" % e + " (%.3g pJ)" % scalar_pj
                      + (", far below what the CUDA cores spend on a multiply-add" if power_says > 0
                         else ", the CUDA cores' cost or more" if power_says < 0 else ": inconclusive"))
    elif measured(s.sm_clock_mhz) and measured(s.max_sm_clock_mhz):
        clock_frac = s.sm_clock_mhz / s.max_sm_clock_mhz
        power_known = measured(s.sustained_power_w) and measured(s.power_limit_w)
        power_frac = s.sustained_power_w / s.power_limit_w if power_known else 0.0
        if power_known and power_frac >= POWER_BOUND_FRACTION and clock_frac <= CLOCK_PULLED_FRACTION:
            power_says = 1
            power_text = ("power %.0f W" % s.sustained_power_w + " (%.0f %% of the limit)" % (100 * power_frac)
                          + " with the SM clock at %.0f MHz" % s.sm_clock_mhz
                          + " (%.0f %% of its light-load value): power-bound, as dense tensor-core work holds the card"
                          % (100 * clock_frac))
        elif clock_frac >= CLOCK_AT_MAX_FRACTION and not (power_known and power_frac >= POWER_BOUND_FRACTION):
            power_says = -1
            power_text = ("SM clock %.0f MHz" % s.sm_clock_mhz
                          + " (%.0f %% of its light-load value): not power-bound, unlike dense tensor-core work"
                          % (100 * clock_frac))
        else:
            power_text = ("SM clock %.0f MHz" % s.sm_clock_mhz + " (%.0f %% of its light-load value)" % (100 * clock_frac)
                          + (", power %.0f W" % s.sustained_power_w if power_known else "") + ": inconclusive")

    # The unit: the machine code names it when it can; without SASS, a ceiling
    # above the roofline still proves a matrix unit, though not which
    # instruction. An expected matrix opcode missing from the machine code,
    # with a ceiling the CUDA cores can deliver, rules the tensor core out.
    absent_list = ", ".join(s.sass_opcodes_absent)
    absent_tensor = any(_lookup(op) and _is_tensor(_lookup(op)[1]) for op in s.sass_opcodes_absent)
    if sass:
        v.unit = sass[1]
    elif above_roofline:
        v.unit = "tensor core (instruction not identified)"
    elif absent_tensor and have_ceiling:
        v.unit = "not a tensor core (no " + absent_list + " in the SASS)"
    else:
        v.unit = "undetermined"
    tensor = _is_tensor(v.unit)

    if sass:
        v.signals_available += 1
        v.signals_agreeing += 1
        why = "SASS: " + sass[0] + " is the strongest matrix/FMA opcode of the kernel"
    elif absent_list:
        v.signals_available += 1
        v.signals_agreeing += int(not tensor and v.unit != "undetermined")
        why = "SASS: the kernel's machine code has no " + absent_list + ", the opcode this instruction assembles to"
    elif s.sass_opcodes:
        why = "SASS: no matrix or FMA opcode among those given"
    else:
        why = "SASS: " + (s.sass_note or "not available")
    if have_ceiling:
        v.signals_available += 1
        agrees = above_roofline if tensor else (v.unit != "undetermined" and not above_roofline)
        v.signals_agreeing += int(agrees)
        why += ("; throughput: %.4g Tflop/s" % s.measured_tflops + " is %.3gx the scalar-FMA roofline" % r
                + " (%.4g Tflop/s)" % s.scalar_fma_roofline_tflops
                + (", beyond what the CUDA cores can deliver" if above_roofline
                   else ", within reach of the CUDA cores (no evidence of a dedicated matrix unit)"))
    else:
        why += "; throughput: ceiling or roofline not available"
    if power_text:
        if power_says != 0:
            v.signals_available += 1
            agrees = power_says > 0 if tensor else (v.unit != "undetermined" and power_says < 0)
            v.signals_agreeing += int(agrees)
        why += "; " + power_text
    else:
        why += "; power/clock: not available"
    v.consistent = v.unit != "undetermined" and v.signals_available > 0 and v.signals_agreeing == v.signals_available
    v.reasoning = v.unit + ": " + why + (" (all available signals agree)" if v.consistent
                                         else ("" if v.unit == "undetermined" else " (signals disagree)"))
    return v
