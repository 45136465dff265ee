// The host half of the cvt_saturation probe: the crafted inputs and the sweep
// of fp32 patterns, the expected codes (rigel's host codecs, which implement
// the documented rules), and the analysis that turns the device's raw codes
// into findings. The device half (src/cuda/probes/formats_cvt.cu) only runs
// the instructions and copies the codes back.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "probes/probe.hpp"

namespace rigel {

// fp32 -> narrow conversions, one output code per input element.
enum class CvtOp : int {
    e4m3_satfinite,      // cvt.rn.satfinite.e4m3x2.f32 (sm_89+)
    e5m2_satfinite,      // cvt.rn.satfinite.e5m2x2.f32 (sm_89+)
    e4m3_nosat_lib,      // CUDA's __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3): PTX has no non-saturating form
    e5m2_nosat_lib,      // the same for e5m2
    f16_rn,              // cvt.rn.f16.f32
    bf16_rn,             // cvt.rn.bf16.f32 (sm_80+)
    e2m1_satfinite,      // cvt.rn.satfinite.e2m1x2.f32 (sm_100a/sm_100f-family targets and later)
    ue8m0_rz_satfinite,  // cvt.rz.satfinite.ue8m0x2.f32 (same targets)
    ue8m0_rp_satfinite,  // cvt.rp.satfinite.ue8m0x2.f32 (same targets)
};
inline constexpr int kCvtOps = 9;

// narrow -> f16/bf16 pairs, over every code.
enum class DecodeOp : int {
    e4m3_to_f16,    // cvt.rn.f16x2.e4m3x2 (sm_89+)
    e5m2_to_f16,    // cvt.rn.f16x2.e5m2x2 (sm_89+)
    e2m1_to_f16,    // cvt.rn.f16x2.e2m1x2 (sm_100a/f family)
    ue8m0_to_bf16,  // cvt.rn.bf16x2.ue8m0x2 (sm_100a/f family)
};
inline constexpr int kDecodeOps = 4;
// Per decode op, 256 launches of one instruction each; slot `c` holds the low
// half of the result for input pattern `c` and slot 256 + c the high half.
inline constexpr int kDecodeSlots = 512;

struct CvtOpInfo {
    std::string_view path;   // the instruction (or library call)
    std::string_view dtype;  // destination format
    std::string_view mode;   // how it rounds and overflows, in words
    std::string_view needs;  // where the instruction exists
};
const CvtOpInfo& op_info(CvtOp op);
const CvtOpInfo& op_info(DecodeOp op);

struct FormatInputs {
    std::vector<float> values;        // crafted values first, then the sweep; an even count (pairs)
    std::vector<std::string> labels;  // one per crafted value
    std::vector<std::uint32_t> masks; // per crafted value: the CvtOps (bit = 1 << op) it is reported for
    std::size_t crafted = 0;
    std::size_t sweep = 0;            // values in the sweep (the rest of `values`, padding aside)
    std::uint64_t seed = 1;
};
// Crafted boundary values, then a structured sweep (every fp32 exponent, both
// signs, the leading mantissa bits exhaustively with low bits 0, 1, the
// rounding midpoint and all-ones) and a seeded low-discrepancy sweep over all
// 2^32 patterns. `quick` shrinks the sweeps about 15-fold.
FormatInputs make_format_inputs(std::uint64_t seed, bool quick);

// What the documented rule gives (rigel's host codecs): the code in the low
// bits of the result.
std::uint16_t expected_code(CvtOp op, float x);
// The instruction's source operand for decode pattern `c` (0..255): two codes
// c and 255 - c packed (or, for e2m1, one byte holding two nibbles).
std::uint16_t decode_operand(DecodeOp op, int c);
std::uint16_t expected_decode_slot(DecodeOp op, int slot);
bool is_nan_code(CvtOp op, std::uint16_t code);
bool decode_is_nan(DecodeOp op, std::uint16_t bits);

// The device driver's PTX JIT asked to assemble one conversion with and
// without .satfinite.
struct JitCheck {
    bool attempted = false;
    bool control_accepted = false;  // cvt.rn.satfinite...
    bool accepted = false;          // cvt.rn... without .satfinite
    std::string control_log;        // the JIT's first error line, if any
    std::string log;
};

struct FormatDeviceResults {
    int compute_capability = 0;
    int compiled_arch = 0;          // __CUDA_ARCH__ of the code that ran (0: none ran)
    std::string unavailable;        // non-empty: no kernel could run on this device, and why
    std::array<bool, kCvtOps> cvt_compiled{};
    std::array<bool, kDecodeOps> decode_compiled{};
    std::vector<std::uint16_t> cvt_out;     // kCvtOps blocks of values.size()
    std::vector<std::uint16_t> decode_out;  // kDecodeOps blocks of kDecodeSlots
    std::array<JitCheck, 2> jit_nosat;      // e4m3x2, e5m2x2
};

std::vector<Finding> analyze_formats(const FormatInputs& in, const FormatDeviceResults& dev);

// The PTX source the JIT check assembles: one conversion of 464.0 (e4m3x2 or
// e5m2x2 destination), with or without .satfinite.
std::string jit_cvt_ptx(bool e5m2, bool satfinite);

// Text of a code of an op's destination format: "0x7E (448)".
std::string code_text(CvtOp op, std::uint16_t code);

}  // namespace rigel
