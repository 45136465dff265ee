// The verdict rules. Every verdict carries its reasoning in words, so that a
// reader of FINDINGS.md sees why, not only what.
#include "probes/verdicts.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace rigel {
namespace {

// Relative slack for "at least": a ratio is compared after forgiving this
// much, far below any difference a timing could resolve.
constexpr double kRatioSlack = 1e-9;

// Throughput: a ceiling this far above the scalar-FMA roofline cannot come
// from the CUDA cores (the roofline is their peak, so 10 % is well past noise).
constexpr double kAboveRoofline = 1.10;
// Power/clock: at >= 90 % of the power limit with the clock pulled below 90 %
// of its light-load value, the card is power-bound the way tensor-core GEMMs
// hold it (H200: 700 W, about 1.45-1.5 GHz against 1.98 GHz); a clock within
// 5 % of its light-load value means no such load.
constexpr double kPowerBoundFraction = 0.90;
constexpr double kClockPulledFraction = 0.90;
constexpr double kClockAtMaxFraction = 0.95;
// Energy per flop against the scalar-FMA path of the same precision (both
// under their own sustained load): the tensor cores spend a fraction of the
// CUDA cores' energy on a multiply-add (H200: about 0.6 pJ per f16 flop on
// wgmma against 4-5 pJ on HFMA2/FFMA), so at most half is a matrix unit; at
// least 0.8 is the CUDA cores' cost or worse (a GEMM adds memory traffic).
constexpr double kEnergyTensorFraction = 0.5;
constexpr double kEnergyScalarFraction = 0.8;

bool measured(double v) { return std::isfinite(v) && v > 0; }

std::string fmt(const char* f, double v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

struct OpcodeUnit {
    std::string_view mnemonic;
    std::string_view unit;
    int rank;  // higher wins when a kernel holds several
};

// Matrix instructions outrank FMA ones: a GEMM kernel's FFMA/IMAD are
// address and epilogue arithmetic when an MMA is present.
constexpr std::array<OpcodeUnit, 14> kOpcodeUnits{{
    {"UTCHMMA", "tensor core (UTCHMMA, tcgen05)", 30},
    {"UTCQMMA", "tensor core (UTCQMMA, tcgen05)", 30},
    {"UTCIMMA", "tensor core (UTCIMMA, tcgen05)", 30},
    {"HGMMA", "tensor core (HGMMA)", 20},
    {"QGMMA", "tensor core (QGMMA)", 20},
    {"IGMMA", "tensor core (IGMMA)", 20},
    {"HMMA", "tensor core (HMMA, legacy warp path)", 10},
    {"QMMA", "tensor core (QMMA, legacy warp path)", 10},
    {"IMMA", "tensor core (IMMA, legacy warp path)", 10},
    {"DMMA", "tensor core (DMMA, fp64)", 10},
    {"FFMA", "CUDA cores (FFMA)", 1},
    {"DFMA", "CUDA cores (DFMA)", 1},
    {"HFMA2", "CUDA cores (HFMA2)", 1},
    {"IDP4A", "CUDA cores (IDP4A)", 1},
}};

const OpcodeUnit* lookup(const std::string& opcode) {
    std::string m;
    for (char c : opcode) {
        if (c == '.' || c == ' ') break;
        m += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    for (const auto& u : kOpcodeUnits)
        if (u.mnemonic == m) return &u;
    return nullptr;
}

bool is_tensor(const std::string& unit) { return unit.rfind("tensor core", 0) == 0; }

}  // namespace

bool meets_ratio(double ratio, double threshold) {
    return std::isfinite(ratio) && ratio >= threshold * (1 - kRatioSlack);
}

AcceleratedVerdict accelerated_rule(double lowp_rate, double fp16_rate) {
    AcceleratedVerdict v;
    if (!measured(lowp_rate) || !measured(fp16_rate)) {
        v.label = "not available";
        v.reasoning = "the low-precision rate or the fp16 rate of the same path was not measured";
        return v;
    }
    v.ratio = lowp_rate / fp16_rate;
    v.accelerated = meets_ratio(v.ratio, kAcceleratedRatio);
    v.label = v.accelerated ? "accelerated" : "footprint only";
    v.reasoning = fmt("%.3gx the fp16 rate of the same path; ", v.ratio) +
                  (v.accelerated ? "at least 1.5x, so the type buys speed, not only bytes"
                                 : "below 1.5x, so the type saves memory but is not accelerated");
    return v;
}

WinVerdict win_rule(double kernel_rate, const std::vector<Baseline>& baselines) {
    WinVerdict v;
    const Baseline* best = nullptr;
    for (const auto& b : baselines)
        if (measured(b.rate) && (!best || b.rate > best->rate)) best = &b;
    if (!measured(kernel_rate) || !best) {
        v.label = "not available";
        v.reasoning = !best ? "no baseline was measured" : "the kernel's rate was not measured";
        return v;
    }
    v.strongest = best->name;
    v.ratio = kernel_rate / best->rate;
    v.wins = meets_ratio(v.ratio, kWinRatio);
    v.label = v.wins ? "wins" : "no win";
    v.reasoning = fmt("%.3gx the strongest baseline (", v.ratio) + best->name + "); " +
                  (v.wins ? "at least 1.10x, a win" : "below 1.10x, within what tuning and noise can move: no win");
    return v;
}

std::string unit_of_opcode(const std::string& opcode) {
    const OpcodeUnit* u = lookup(opcode);
    return u ? std::string(u->unit) : std::string();
}

DispatchVerdict triangulate_dispatch(const DispatchSignals& s) {
    DispatchVerdict v;
    std::string why;

    // 1. Machine code: the strongest unit among the opcodes.
    const OpcodeUnit* sass = nullptr;
    for (const auto& op : s.sass_opcodes) {
        const OpcodeUnit* u = lookup(op);
        if (u && (!sass || u->rank > sass->rank)) sass = u;
    }

    // 2. Throughput against the scalar-FMA roofline.
    const bool have_ceiling = measured(s.measured_tflops) && measured(s.scalar_fma_roofline_tflops);
    const double r = have_ceiling ? s.measured_tflops / s.scalar_fma_roofline_tflops : 0;
    const bool above_roofline = have_ceiling && r > kAboveRoofline;

    // 3. Power and clock under sustained load.
    int power_says = 0;  // +1 tensor-like load, -1 light (CUDA-core-like) load, 0 inconclusive or absent
    std::string power_text;
    const bool have_energy = have_ceiling && measured(s.sustained_power_w) && measured(s.scalar_power_w);
    if (have_energy) {
        const double pj = s.sustained_power_w / s.measured_tflops;  // W per Tflop/s = pJ per flop
        const double scalar_pj = s.scalar_power_w / s.scalar_fma_roofline_tflops;
        const double e = pj / scalar_pj;
        power_says = e <= kEnergyTensorFraction ? 1 : (e >= kEnergyScalarFraction ? -1 : 0);
        power_text = fmt("power %.0f W", s.sustained_power_w) +
                     (measured(s.sm_clock_mhz) ? fmt(" at %.0f MHz", s.sm_clock_mhz) : std::string()) +
                     fmt(": %.3g pJ per flop,", pj) + fmt(" %.2gx the scalar-FMA path's", e) + fmt(" (%.3g pJ)", scalar_pj) +
                     (power_says > 0   ? ", far below what the CUDA cores spend on a multiply-add"
                      : power_says < 0 ? ", the CUDA cores' cost or more"
                                       : ": inconclusive");
    } else if (measured(s.sm_clock_mhz) && measured(s.max_sm_clock_mhz)) {
        const double clock_frac = s.sm_clock_mhz / s.max_sm_clock_mhz;
        const bool power_known = measured(s.sustained_power_w) && measured(s.power_limit_w);
        const double power_frac = power_known ? s.sustained_power_w / s.power_limit_w : 0;
        if (power_known && power_frac >= kPowerBoundFraction && clock_frac <= kClockPulledFraction) {
            power_says = 1;
            power_text = fmt("power %.0f W", s.sustained_power_w) + fmt(" (%.0f %% of the limit)", 100 * power_frac) +
                         fmt(" with the SM clock at %.0f MHz", s.sm_clock_mhz) +
                         fmt(" (%.0f %% of its light-load value): power-bound, as dense tensor-core work holds the card",
                             100 * clock_frac);
        } else if (clock_frac >= kClockAtMaxFraction && !(power_known && power_frac >= kPowerBoundFraction)) {
            power_says = -1;
            power_text = fmt("SM clock %.0f MHz", s.sm_clock_mhz) +
                         fmt(" (%.0f %% of its light-load value): not power-bound, unlike dense tensor-core work",
                             100 * clock_frac);
        } else {
            power_text = fmt("SM clock %.0f MHz", s.sm_clock_mhz) + fmt(" (%.0f %% of its light-load value)", 100 * clock_frac) +
                         (power_known ? fmt(", power %.0f W", s.sustained_power_w) : std::string()) +
                         ": inconclusive";
        }
    }

    // The unit: the machine code names it when it can; without SASS, a ceiling
    // above the roofline still proves a matrix unit, though not which instruction.
    // An expected matrix opcode missing from the machine code, with a ceiling
    // the CUDA cores can deliver, rules the tensor core out.
    std::string absent_list;
    bool absent_tensor = false;
    for (const auto& op : s.sass_opcodes_absent) {
        absent_list += (absent_list.empty() ? "" : ", ") + op;
        if (const OpcodeUnit* u = lookup(op)) absent_tensor |= is_tensor(std::string(u->unit));
    }
    if (sass)
        v.unit = std::string(sass->unit);
    else if (above_roofline)
        v.unit = "tensor core (instruction not identified)";
    else if (absent_tensor && have_ceiling)
        v.unit = "not a tensor core (no " + absent_list + " in the SASS)";
    else
        v.unit = "undetermined";
    const bool tensor = is_tensor(v.unit);

    if (sass) {
        ++v.signals_available;
        ++v.signals_agreeing;
        why += "SASS: " + std::string(sass->mnemonic) + " is the strongest matrix/FMA opcode of the kernel";
    } else if (!absent_list.empty()) {
        ++v.signals_available;
        v.signals_agreeing += !tensor && v.unit != "undetermined";
        why += "SASS: the kernel's machine code has no " + absent_list +
               ", the opcode this instruction assembles to";
    } else if (!s.sass_opcodes.empty()) {
        why += "SASS: no matrix or FMA opcode among those given";
    } else {
        why += "SASS: " + (s.sass_note.empty() ? std::string("not available") : s.sass_note);
    }
    if (have_ceiling) {
        ++v.signals_available;
        const bool agrees = tensor ? above_roofline : (v.unit != "undetermined" && !above_roofline);
        v.signals_agreeing += agrees;
        why += fmt("; throughput: %.4g Tflop/s", s.measured_tflops) +
               fmt(" is %.3gx the scalar-FMA roofline", r) + fmt(" (%.4g Tflop/s)", s.scalar_fma_roofline_tflops) +
               (above_roofline ? ", beyond what the CUDA cores can deliver"
                               : ", within reach of the CUDA cores (no evidence of a dedicated matrix unit)");
    } else {
        why += "; throughput: ceiling or roofline not available";
    }
    if (!power_text.empty()) {
        if (power_says != 0) {
            ++v.signals_available;
            const bool agrees = tensor ? power_says > 0 : (v.unit != "undetermined" && power_says < 0);
            v.signals_agreeing += agrees;
        }
        why += "; " + power_text;
    } else {
        why += "; power/clock: not available";
    }
    v.consistent = v.unit != "undetermined" && v.signals_available > 0 && v.signals_agreeing == v.signals_available;
    v.reasoning = v.unit + ": " + why + (v.consistent ? " (all available signals agree)"
                                                      : (v.unit == "undetermined" ? "" : " (signals disagree)"));
    return v;
}

}  // namespace rigel
