// RIGEL's verdict rules, as pure functions: what a set of measured numbers
// entitles rigel to claim.
// - Accelerated rule: a low-precision path is "accelerated" only at >= 1.5x
//   the fp16 throughput of the same path; otherwise "footprint only" (it saves
//   bytes, not time).
// - Win rule: a kernel "wins" only at >= 1.10x the strongest baseline.
// - Dispatch triangulation: which unit executes a path, from three independent
//   signals (throughput ceiling against the scalar-FMA roofline, the SASS
//   opcodes, power and clock under sustained load).
#pragma once
#include <limits>
#include <string>
#include <vector>

namespace rigel {

inline constexpr double kAcceleratedRatio = 1.5;
inline constexpr double kWinRatio = 1.10;

// ratio >= threshold, forgiving the last bits of a quotient (0.3 / 0.2 is
// 1.4999999999999998 in binary floating point, and is 1.5x).
bool meets_ratio(double ratio, double threshold);

struct AcceleratedVerdict {
    bool accelerated = false;
    double ratio = std::numeric_limits<double>::quiet_NaN();  // low-precision rate / fp16 rate
    std::string label;      // "accelerated", "footprint only" or "not available"
    std::string reasoning;
};
// Rates in any one unit (flop/s); a rate <= 0 or not finite means "not measured".
AcceleratedVerdict accelerated_rule(double lowp_rate, double fp16_rate);

struct Baseline {
    std::string name;
    double rate = 0;
};
struct WinVerdict {
    bool wins = false;
    double ratio = std::numeric_limits<double>::quiet_NaN();  // kernel / strongest baseline
    std::string strongest;  // the strongest baseline's name
    std::string label;      // "wins", "no win" or "not available"
    std::string reasoning;
};
// Baselines that were not measured (rate <= 0 or not finite) are ignored.
WinVerdict win_rule(double kernel_rate, const std::vector<Baseline>& baselines);

struct DispatchSignals {
    double measured_tflops = std::numeric_limits<double>::quiet_NaN();             // the path's sustained ceiling
    double scalar_fma_roofline_tflops = std::numeric_limits<double>::quiet_NaN();  // CUDA-core FMA peak, same precision
    std::vector<std::string> sass_opcodes;  // from the path's kernel, e.g. "HGMMA.64x128x16.F32.BF16", "FFMA"
    double sustained_power_w = std::numeric_limits<double>::quiet_NaN();
    double sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();      // under the sustained load
    double power_limit_w = std::numeric_limits<double>::quiet_NaN();     // the enforced limit, if known
    double max_sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();  // the clock on light work, if known
    // Optional, added later (leaving them empty keeps the verdicts above):
    // power drawn by the scalar-FMA path of the roofline under its own
    // sustained load; with both powers and both rates the power signal becomes
    // energy per flop against the CUDA cores', which tells the units apart
    // where the clock does not (a tensor-core path below the power limit runs
    // at the full clock, as the CUDA cores do).
    double scalar_power_w = std::numeric_limits<double>::quiet_NaN();
    // Opcodes the path's instruction assembles to that the kernel's SASS was
    // checked for and lacks (a matrix instruction that did not reach the
    // machine code: emulated, or compiled away).
    std::vector<std::string> sass_opcodes_absent;
    // Why there is no SASS signal, in words ("no SASS record", "HFMA2 is not
    // counted by the SASS record"); replaces "not available" in the reasoning.
    std::string sass_note;
};

struct DispatchVerdict {
    std::string unit;           // "tensor core (HGMMA)", "tensor core (HMMA, legacy warp path)", "CUDA cores (FFMA)", ..., "undetermined"
    int signals_available = 0;  // of throughput, SASS, power/clock
    int signals_agreeing = 0;
    bool consistent = false;    // every available signal agrees with `unit`
    std::string reasoning;
};
DispatchVerdict triangulate_dispatch(const DispatchSignals& s);

// The unit an opcode runs on, or "" when it is neither a matrix nor an FMA
// instruction (loads, moves, branches). Mnemonic = text before the first '.'.
std::string unit_of_opcode(const std::string& opcode);

}  // namespace rigel
