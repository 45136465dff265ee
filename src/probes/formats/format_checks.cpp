// The cvt_saturation probe's inputs, expectations and verdicts.
// Documentation the findings are held to:
// - PTX ISA 9.0, cvt: .rn rounds to nearest even; .satfinite: "if the input
//   is NaN, the result is NaN in the destination format; if the absolute value
//   of the input is greater than MAX_NORM, the result is sign-preserved
//   MAX_NORM"; .satfinite is required for .e4m3x2/.e5m2x2 destinations.
// - OCP 8-bit Floating Point Specification (OFP8) rev 1.0: e4m3 max 448, no
//   inf, NaN S.1111.111; e5m2 max 57344, inf and NaN as IEEE; a
//   non-saturating conversion overflows to NaN (e4m3) or inf (e5m2).
// - OCP Microscaling (MX) Formats v1.0: e2m1 (max 6, no inf or NaN), e8m0.
#include "probes/formats/format_checks.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "core/formats.hpp"
#include "core/hash.hpp"

namespace rigel {
namespace {

constexpr std::string_view kPtxCvt = "PTX ISA 9.0, cvt (data conversion instructions)";
constexpr std::string_view kOcpFp8 = "OCP 8-bit Floating Point Specification (OFP8) rev 1.0, 2023";
constexpr std::string_view kOcpMx = "OCP Microscaling Formats (MX) v1.0, 2023";
constexpr std::string_view kCudaNosat = "CUDA Math API 13.0, __nv_cvt_float_to_fp8 (__NV_NOSAT)";

constexpr int kMaxExamples = 4;  // mismatches quoted in a detail cell

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

std::string hex(std::uint32_t v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*X", digits, v);
    return buf;
}

std::string num(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string fp32_text(float x) { return num(x) + " (" + hex(bits_of(x), 8) + ")"; }

std::uint32_t op_bit(CvtOp op) { return 1u << static_cast<int>(op); }

bool is_e8m0_op(CvtOp op) { return op == CvtOp::ue8m0_rz_satfinite || op == CvtOp::ue8m0_rp_satfinite; }

// 2^ceil(log2 |x|) as an e8m0 code, saturating (cvt.rp.satfinite.ue8m0x2):
// exact powers of two keep their code, anything above 2^127 gives 0xFE.
std::uint8_t e8m0_ceil_satfinite(float x) {
    const std::uint32_t u = bits_of(x) & 0x7FFF'FFFFu;
    if (u > 0x7F80'0000u) return 0xFF;
    if (u >= 0x7F80'0000u) return 0xFE;
    const std::uint32_t biased = u >> 23, frac = u & 0x007F'FFFFu;
    std::uint32_t code = 0;
    if (biased == 0) {
        // Subnormal: |x| = frac * 2^-149; code 0 is 2^-127 = 2^22 * 2^-149.
        code = frac <= (1u << 22) ? 0 : 1;
    } else {
        code = biased + (frac != 0 ? 1 : 0);
    }
    return static_cast<std::uint8_t>(code > 0xFE ? 0xFE : code);
}

float decoded_value(CvtOp op, std::uint16_t code) {
    switch (op) {
        case CvtOp::e4m3_satfinite:
        case CvtOp::e4m3_nosat_lib: return e4m3_to_f32(static_cast<std::uint8_t>(code));
        case CvtOp::e5m2_satfinite:
        case CvtOp::e5m2_nosat_lib: return e5m2_to_f32(static_cast<std::uint8_t>(code));
        case CvtOp::f16_rn: return f16_to_f32(code);
        case CvtOp::bf16_rn: return bf16_to_f32(code);
        case CvtOp::e2m1_satfinite: return e2m1_to_f32(static_cast<std::uint8_t>(code & 0xF));
        case CvtOp::ue8m0_rz_satfinite:
        case CvtOp::ue8m0_rp_satfinite: return e8m0_to_f32(static_cast<std::uint8_t>(code));
    }
    return std::numeric_limits<float>::quiet_NaN();
}

int code_digits(CvtOp op) {
    if (op == CvtOp::f16_rn || op == CvtOp::bf16_rn) return 4;
    if (op == CvtOp::e2m1_satfinite) return 1;
    return 2;
}

// The crafted inputs: each with the ops it is reported for.
struct Crafted {
    float value;
    const char* label;
    std::uint32_t mask;
};

std::vector<Crafted> crafted_values() {
    const std::uint32_t e4 = op_bit(CvtOp::e4m3_satfinite) | op_bit(CvtOp::e4m3_nosat_lib);
    const std::uint32_t e5 = op_bit(CvtOp::e5m2_satfinite) | op_bit(CvtOp::e5m2_nosat_lib);
    const std::uint32_t h = op_bit(CvtOp::f16_rn);
    const std::uint32_t b = op_bit(CvtOp::bf16_rn);
    const std::uint32_t f4 = op_bit(CvtOp::e2m1_satfinite);
    const std::uint32_t s = op_bit(CvtOp::ue8m0_rz_satfinite) | op_bit(CvtOp::ue8m0_rp_satfinite);
    const float inf = std::numeric_limits<float>::infinity();
    return {
        {0.0f, "+0", e4 | e5 | h | b | f4 | s},
        {-0.0f, "-0", e4 | e5 | h | b | f4},
        {448.0f, "448 (e4m3 max)", e4},
        {449.0f, "449 (just above the e4m3 max)", e4},
        {464.0f, "464 (midpoint of 448 and 480: a tie, even is 448)", e4},
        {465.0f, "465 (above the 448/480 midpoint)", e4},
        {480.0f, "480 (the next e4m3 step, past the max)", e4},
        {-480.0f, "-480", e4},
        {1e6f, "1e6", e4 | e5 | h | f4 | s},
        {-1e6f, "-1e6", e4 | e5},
        {57344.0f, "57344 (e5m2 max)", e5},
        {61439.0f, "61439 (below the 57344/65536 midpoint)", e5},
        {61440.0f, "61440 (midpoint of 57344 and 65536: a tie, even is 65536)", e5},
        {65504.0f, "65504 (f16 max)", h},
        {65519.0f, "65519 (below the 65504/65536 midpoint)", h},
        {65520.0f, "65520 (midpoint of 65504 and 65536: a tie, even is 65536)", h},
        {65536.0f, "65536", e5 | h},
        {std::numeric_limits<float>::max(), "fp32 max (rounds past the bf16 max)", b},
        {float_of(0x7F7F'0000u), "bf16 max", b},
        {inf, "+inf", e4 | e5 | h | b | f4 | s},
        {-inf, "-inf", e4 | e5 | h | b | f4},
        {float_of(0x7FC0'0000u), "NaN (0x7FC00000)", e4 | e5 | h | b | f4 | s},
        {float_of(0xFFC0'0000u), "-NaN (0xFFC00000)", e4 | e5 | h | b},
        {float_of(0x7F80'0001u), "signalling NaN (0x7F800001)", e4 | h | b},
        {std::ldexp(1.0f, -6), "2^-6 (e4m3 min normal)", e4},
        {std::ldexp(1.0f, -9), "2^-9 (e4m3 min subnormal)", e4},
        {std::ldexp(1.0f, -10), "2^-10 (half the e4m3 min subnormal: a tie, even is 0)", e4},
        {std::ldexp(1.5f, -10), "1.5*2^-10 (rounds up to 2^-9)", e4},
        {std::ldexp(1.0f, -14), "2^-14 (e5m2 and f16 min normal)", e5 | h},
        {std::ldexp(1.0f, -16), "2^-16 (e5m2 min subnormal)", e5},
        {std::ldexp(1.0f, -17), "2^-17 (half the e5m2 min subnormal: a tie, even is 0)", e5},
        {std::ldexp(1.5f, -17), "1.5*2^-17 (rounds up to 2^-16)", e5},
        {std::ldexp(1.0f, -24), "2^-24 (f16 min subnormal)", h},
        {std::ldexp(1.0f, -25), "2^-25 (half the f16 min subnormal: a tie, even is 0)", h},
        {std::ldexp(1.5f, -25), "1.5*2^-25 (rounds up to 2^-24)", h},
        {std::ldexp(1.0f, -133), "2^-133 (bf16 min subnormal)", b},
        {std::ldexp(1.0f, -149), "2^-149 (fp32 min subnormal)", b | s},
        {0.25f, "0.25 (midpoint of 0 and 0.5: a tie, even is 0)", f4},
        {0.75f, "0.75 (midpoint of 0.5 and 1: a tie, even is 1)", f4},
        {5.0f, "5 (midpoint of 4 and 6: a tie, even is 4)", f4},
        {7.0f, "7 (above the e2m1 max 6)", f4},
        {3.0f, "3 (between 2 and 4)", s},
        {0.75f, "0.75 (between 0.5 and 1)", s},
        {std::ldexp(1.0f, 127), "2^127 (e8m0 max)", s},
        {std::ldexp(1.5f, 127), "1.5*2^127 (rounds up past the e8m0 max)", s},
        {std::ldexp(1.0f, -127), "2^-127 (e8m0 min, an fp32 subnormal)", s},
        {-2.0f, "-2 (e8m0 has no sign)", s},
    };
}

std::string doc_statement(CvtOp op, float x) {
    const bool overflow_or_special = std::isnan(x) || std::isinf(x) || std::fabs(x) > 400.0f;
    switch (op) {
        case CvtOp::e4m3_satfinite:
        case CvtOp::e5m2_satfinite:
            if (std::isnan(x)) return "satfinite: a NaN input gives NaN in the destination format (code not specified)";
            if (overflow_or_special)
                return "satfinite: |input| > MAX_NORM gives sign-preserved MAX_NORM (e4m3 448, e5m2 57344); "
                       "otherwise round to nearest even";
            return ".rn: round to nearest, ties to even; subnormals kept";
        case CvtOp::e4m3_nosat_lib:
            if (std::isnan(x)) return "NaN converts to NaN (e4m3 NaN is S.1111.111)";
            return "non-saturating: a rounded magnitude above 448 (inf included) becomes NaN; e4m3 has no inf";
        case CvtOp::e5m2_nosat_lib:
            if (std::isnan(x)) return "NaN converts to NaN";
            return "non-saturating: a rounded magnitude above 57344 becomes inf";
        case CvtOp::f16_rn:
        case CvtOp::bf16_rn:
            if (std::isnan(x)) return "NaN converts to NaN (code not specified)";
            return "IEEE 754 round to nearest even; without .satfinite overflow gives inf; subnormals kept";
        case CvtOp::e2m1_satfinite:
            if (std::isnan(x)) return "e2m1 has no NaN; the documentation does not say what NaN becomes";
            return "satfinite is required: |input| > 6 gives sign-preserved 6; round to nearest even";
        case CvtOp::ue8m0_rz_satfinite:
            if (std::isnan(x)) return "NaN gives the e8m0 NaN 0xFF";
            return "round toward zero to a power of two; satfinite clamps above 2^127 to 0xFE";
        case CvtOp::ue8m0_rp_satfinite:
            if (std::isnan(x)) return "NaN gives the e8m0 NaN 0xFF";
            return "round toward +inf to a power of two; satfinite clamps above 2^127 to 0xFE";
    }
    return "";
}

std::string sweep_statement(CvtOp op) {
    switch (op) {
        case CvtOp::e4m3_satfinite:
        case CvtOp::e5m2_satfinite:
            return ".rn: round to nearest, ties to even, subnormals kept; satfinite: |input| > MAX_NORM gives "
                   "sign-preserved MAX_NORM, NaN gives NaN";
        case CvtOp::e4m3_nosat_lib: return "round to nearest even; overflow (inf included) becomes NaN";
        case CvtOp::e5m2_nosat_lib: return "round to nearest even; overflow becomes inf";
        case CvtOp::f16_rn:
        case CvtOp::bf16_rn: return "IEEE 754 round to nearest even; overflow gives inf; NaN gives NaN";
        case CvtOp::e2m1_satfinite: return "round to nearest even; |input| > 6 gives sign-preserved 6";
        case CvtOp::ue8m0_rz_satfinite: return "2^floor(log2 |x|); above 2^127 gives 0xFE; NaN gives 0xFF";
        case CvtOp::ue8m0_rp_satfinite: return "2^ceil(log2 |x|); above 2^127 gives 0xFE; NaN gives 0xFF";
    }
    return "";
}

std::string doc_source(CvtOp op) {
    switch (op) {
        case CvtOp::e4m3_satfinite:
        case CvtOp::e5m2_satfinite: return std::string(kPtxCvt) + "; " + std::string(kOcpFp8);
        case CvtOp::e4m3_nosat_lib:
        case CvtOp::e5m2_nosat_lib: return std::string(kOcpFp8) + "; " + std::string(kCudaNosat);
        case CvtOp::f16_rn:
        case CvtOp::bf16_rn: return std::string(kPtxCvt) + "; IEEE 754-2019";
        case CvtOp::e2m1_satfinite:
        case CvtOp::ue8m0_rz_satfinite:
        case CvtOp::ue8m0_rp_satfinite: return std::string(kPtxCvt) + "; " + std::string(kOcpMx);
    }
    return "";
}

std::string not_compiled_detail(const FormatDeviceResults& dev, std::string_view needs) {
    return "the code that ran on this device (compute capability " + std::to_string(dev.compute_capability) +
           ", compiled for __CUDA_ARCH__ " + std::to_string(dev.compiled_arch) +
           ") does not contain the instruction; it exists " + std::string(needs) +
           " (decided by a compile-time check in the kernel, reported through a flag)";
}

Finding base(std::string_view path, std::string_view dtype) {
    Finding f;
    f.probe = "cvt_saturation";
    f.path = std::string(path);
    f.dtype = std::string(dtype);
    return f;
}

// One crafted value through one op.
Finding crafted_finding(CvtOp op, const std::string& label, float x, std::uint16_t device) {
    const CvtOpInfo& oi = op_info(op);
    Finding f = base(oi.path, oi.dtype);
    const std::uint16_t want = expected_code(op, x);
    f.quantity = "fp32 " + label + " -> " + std::string(oi.dtype) + " (" + std::string(oi.mode) + ")";
    f.measured = code_text(op, device);
    f.expected = code_text(op, want);
    f.verified = true;
    if (std::isnan(x)) {
        // The documentation says "NaN" but names no code (and no e2m1 result
        // at all): what the device writes is the fill-in, unless it is no NaN.
        const bool device_nan = is_nan_code(op, device);
        if (op == CvtOp::e2m1_satfinite)
            f.relation = DocRelation::fills_in;
        else if (is_e8m0_op(op))
            f.relation = device_nan ? DocRelation::confirms : DocRelation::contradicts;
        else
            f.relation = device_nan ? DocRelation::fills_in : DocRelation::contradicts;
        f.detail = "input " + hex(bits_of(x), 8) + "; the expected column is rigel's host codec's choice";
    } else if (is_e8m0_op(op) && std::signbit(x) && x != 0) {
        f.relation = DocRelation::fills_in;
        f.detail = "the expected column applies the rule to |input| (rigel's host codec)";
    } else {
        f.relation = device == want ? DocRelation::confirms : DocRelation::contradicts;
        f.detail = "input " + hex(bits_of(x), 8);
    }
    f.doc_statement = doc_statement(op, x);
    f.doc_source = doc_source(op);
    return f;
}

}  // namespace

const CvtOpInfo& op_info(CvtOp op) {
    static const std::array<CvtOpInfo, kCvtOps> t{{
        {"cvt.rn.satfinite.e4m3x2.f32", "e4m3", "satfinite", "from sm_89 (PTX ISA 7.8 on sm_90, 8.1 on sm_89)"},
        {"cvt.rn.satfinite.e5m2x2.f32", "e5m2", "satfinite", "from sm_89 (PTX ISA 7.8 on sm_90, 8.1 on sm_89)"},
        {"__nv_cvt_float_to_fp8(__NV_NOSAT, __NV_E4M3) (software)", "e4m3", "non-saturating, software",
         "everywhere (CUDA's emulation)"},
        {"__nv_cvt_float_to_fp8(__NV_NOSAT, __NV_E5M2) (software)", "e5m2", "non-saturating, software",
         "everywhere (CUDA's emulation)"},
        {"cvt.rn.f16.f32", "f16", "rn", "everywhere"},
        {"cvt.rn.bf16.f32", "bf16", "rn", "from sm_80"},
        {"cvt.rn.satfinite.e2m1x2.f32", "e2m1", "satfinite",
         "only for sm_100a/sm_100f-family targets and later (PTX ISA 8.6+)"},
        {"cvt.rz.satfinite.ue8m0x2.f32", "e8m0", "rz satfinite",
         "only for sm_100a/sm_100f-family targets and later (PTX ISA 8.6+)"},
        {"cvt.rp.satfinite.ue8m0x2.f32", "e8m0", "rp satfinite",
         "only for sm_100a/sm_100f-family targets and later (PTX ISA 8.6+)"},
    }};
    return t[static_cast<std::size_t>(op)];
}

const CvtOpInfo& op_info(DecodeOp op) {
    static const std::array<CvtOpInfo, kDecodeOps> t{{
        {"cvt.rn.f16x2.e4m3x2", "e4m3", "exact", "from sm_89"},
        {"cvt.rn.f16x2.e5m2x2", "e5m2", "exact", "from sm_89"},
        {"cvt.rn.f16x2.e2m1x2", "e2m1", "exact", "only for sm_100a/sm_100f-family targets and later"},
        {"cvt.rn.bf16x2.ue8m0x2", "e8m0", "exact", "only for sm_100a/sm_100f-family targets and later"},
    }};
    return t[static_cast<std::size_t>(op)];
}

FormatInputs make_format_inputs(std::uint64_t seed, bool quick) {
    FormatInputs in;
    in.seed = seed;
    for (const Crafted& c : crafted_values()) {
        in.values.push_back(c.value);
        in.labels.emplace_back(c.label);
        in.masks.push_back(c.mask);
    }
    in.crafted = in.values.size();

    // Structured sweep: the exponents where the narrow formats live
    // (fp32 biased 96..160) get 12 (quick: 8) leading mantissa bits, the others 8 (quick: 4);
    // each with low bits 0, 1, the midpoint below and all ones, so that ties,
    // near-ties and sticky bits all occur at every rounding position.
    constexpr int kDenseLo = 96, kDenseHi = 160;
    for (std::uint32_t e = 0; e < 256; ++e) {
        const int lead = (static_cast<int>(e) >= kDenseLo && static_cast<int>(e) <= kDenseHi) ? (quick ? 8 : 12)
                                                                                              : (quick ? 4 : 8);
        const int low_bits = 23 - lead;
        const std::uint32_t low_mask = (1u << low_bits) - 1;
        const std::uint32_t lows[4] = {0, 1, 1u << (low_bits - 1), low_mask};
        for (std::uint32_t sign = 0; sign < 2; ++sign)
            for (std::uint32_t top = 0; top < (1u << lead); ++top)
                for (std::uint32_t low : lows)
                    in.values.push_back(float_of((sign << 31) | (e << 23) | (top << low_bits) | low));
    }
    // Low-discrepancy sweep over all patterns, offset by the seed.
    const std::uint32_t n = quick ? (1u << 16) : (1u << 20);
    const auto offset = static_cast<std::uint32_t>(mix64(seed));
    for (std::uint32_t i = 0; i < n; ++i) in.values.push_back(float_of(i * 0x9E37'79B1u + offset));
    in.sweep = in.values.size() - in.crafted;
    if (in.values.size() % 2) in.values.push_back(1.0f);  // pairs
    return in;
}

std::uint16_t expected_code(CvtOp op, float x) {
    switch (op) {
        case CvtOp::e4m3_satfinite: return f32_to_e4m3(x, Overflow::saturate);
        case CvtOp::e5m2_satfinite: return f32_to_e5m2(x, Overflow::saturate);
        case CvtOp::e4m3_nosat_lib: return f32_to_e4m3(x, Overflow::non_saturate);
        case CvtOp::e5m2_nosat_lib: return f32_to_e5m2(x, Overflow::non_saturate);
        case CvtOp::f16_rn: return f32_to_f16(x);
        case CvtOp::bf16_rn: return f32_to_bf16(x);
        case CvtOp::e2m1_satfinite: return f32_to_e2m1(x);
        case CvtOp::ue8m0_rz_satfinite: return f32_to_e8m0_floor(x);
        case CvtOp::ue8m0_rp_satfinite: return e8m0_ceil_satfinite(x);
    }
    return 0;
}

std::uint16_t decode_operand(DecodeOp op, int c) {
    const auto lo = static_cast<std::uint16_t>(c & 0xFF);
    if (op == DecodeOp::e2m1_to_f16) return lo;  // one byte, two nibbles
    return static_cast<std::uint16_t>(lo | ((255 - c) & 0xFF) << 8);
}

std::uint16_t expected_decode_slot(DecodeOp op, int slot) {
    const int c = slot % 256;
    const bool high = slot >= 256;
    const std::uint16_t operand = decode_operand(op, c);
    switch (op) {
        case DecodeOp::e4m3_to_f16:
            return f32_to_f16(e4m3_to_f32(static_cast<std::uint8_t>(high ? operand >> 8 : operand & 0xFF)));
        case DecodeOp::e5m2_to_f16:
            return f32_to_f16(e5m2_to_f32(static_cast<std::uint8_t>(high ? operand >> 8 : operand & 0xFF)));
        case DecodeOp::e2m1_to_f16:
            return f32_to_f16(e2m1_to_f32(static_cast<std::uint8_t>(high ? (operand >> 4) & 0xF : operand & 0xF)));
        case DecodeOp::ue8m0_to_bf16:
            return f32_to_bf16(e8m0_to_f32(static_cast<std::uint8_t>(high ? operand >> 8 : operand & 0xFF)));
    }
    return 0;
}

bool is_nan_code(CvtOp op, std::uint16_t code) {
    switch (op) {
        case CvtOp::e4m3_satfinite:
        case CvtOp::e4m3_nosat_lib: return (code & 0x7F) == 0x7F;
        case CvtOp::e5m2_satfinite:
        case CvtOp::e5m2_nosat_lib: return (code & 0x7F) > 0x7C;
        case CvtOp::f16_rn: return (code & 0x7FFF) > 0x7C00;
        case CvtOp::bf16_rn: return (code & 0x7FFF) > 0x7F80;
        case CvtOp::e2m1_satfinite: return false;
        case CvtOp::ue8m0_rz_satfinite:
        case CvtOp::ue8m0_rp_satfinite: return code == 0xFF;
    }
    return false;
}

bool decode_is_nan(DecodeOp op, std::uint16_t bits) {
    if (op == DecodeOp::ue8m0_to_bf16) return (bits & 0x7FFF) > 0x7F80;
    return (bits & 0x7FFF) > 0x7C00;
}

std::string code_text(CvtOp op, std::uint16_t code) {
    return hex(code, code_digits(op)) + " (" + num(decoded_value(op, code)) + ")";
}

std::string jit_cvt_ptx(bool e5m2, bool satfinite) {
    // PTX ISA 8.1 is the first to allow the fp8 cvt on sm_89, the lowest
    // target that has it; the driver compiles it for the device it runs on.
    const std::string cvt =
        std::string("cvt.rn") + (satfinite ? ".satfinite" : "") + (e5m2 ? ".e5m2x2" : ".e4m3x2") + ".f32";
    return ".version 8.1\n"
           ".target sm_89\n"
           ".address_size 64\n"
           "\n"
           ".visible .entry rigel_cvt_jit_check(.param .u64 out)\n"
           "{\n"
           "\t.reg .b16 %hv;\n"
           "\t.reg .f32 %fv;\n"
           "\t.reg .b64 %pa;\n"
           "\tmov.f32 %fv, 0f43E80000;\n"  // 464.0
           "\t" + cvt + " %hv, %fv, %fv;\n"
           "\tld.param.u64 %pa, [out];\n"
           "\tcvta.to.global.u64 %pa, %pa;\n"
           "\tst.global.b16 [%pa], %hv;\n"
           "\tret;\n"
           "}\n";
}

std::vector<Finding> analyze_formats(const FormatInputs& in, const FormatDeviceResults& dev) {
    std::vector<Finding> out;
    const std::size_t n = in.values.size();

    // The non-saturating fp8 forms, asked of the device's own PTX JIT.
    for (int k = 0; k < 2; ++k) {
        const JitCheck& j = dev.jit_nosat[static_cast<std::size_t>(k)];
        if (!j.attempted) continue;
        const char* fmt8 = k ? "e5m2x2" : "e4m3x2";
        Finding f = base(std::string("cvt.rn.") + fmt8 + ".f32 (no .satfinite)", k ? "e5m2" : "e4m3");
        f.quantity = std::string("the driver's PTX JIT for this device assembles fp32 -> ") + fmt8 +
                     " without .satfinite";
        f.expected = "rejected (.satfinite is required), while the .satfinite form is accepted";
        f.doc_statement = "cvt.rn.satfinite{.relu}.f8x2type.f32: .satfinite is part of the required syntax; "
                          "there is no non-saturating fp32 -> fp8 cvt";
        f.doc_source = std::string(kPtxCvt);
        if (!j.control_accepted) {
            f.measured = "the .satfinite control form is rejected too";
            f.relation = DocRelation::not_available;
            f.verified = false;
            f.detail = "no fp8 cvt on this device; JIT: " + j.control_log;
        } else {
            f.measured = j.accepted ? "accepted" : "rejected";
            f.relation = j.accepted ? DocRelation::contradicts : DocRelation::confirms;
            f.verified = true;
            f.detail = j.accepted ? "the form without .satfinite assembled"
                                  : "JIT: " + j.log + "; a non-saturating fp8 conversion is software only "
                                    "(CUDA's __NV_NOSAT path, measured below)";
        }
        out.push_back(std::move(f));
    }

    if (!dev.unavailable.empty()) {
        Finding f = base("cvt", "");
        f.quantity = "fp32 <-> narrow-format conversions on this device";
        f.measured = "not run";
        f.relation = DocRelation::not_available;
        f.detail = dev.unavailable;
        out.push_back(std::move(f));
        return out;
    }
    if (dev.cvt_out.size() != static_cast<std::size_t>(kCvtOps) * n ||
        dev.decode_out.size() != static_cast<std::size_t>(kDecodeOps) * kDecodeSlots)
        throw std::logic_error("cvt_saturation: device result sizes do not match the inputs");

    for (int o = 0; o < kCvtOps; ++o) {
        const auto op = static_cast<CvtOp>(o);
        const CvtOpInfo& oi = op_info(op);
        if (!dev.cvt_compiled[static_cast<std::size_t>(o)]) {
            Finding f = base(oi.path, oi.dtype);
            f.quantity = std::string("fp32 -> ") + std::string(oi.dtype) + " (" + std::string(oi.mode) +
                         ") conversion instruction";
            f.measured = "not available";
            f.relation = DocRelation::not_available;
            f.doc_statement = "the instruction exists " + std::string(oi.needs);
            f.doc_source = std::string(kPtxCvt);
            f.detail = not_compiled_detail(dev, oi.needs);
            out.push_back(std::move(f));
            continue;
        }
        const std::uint16_t* got = dev.cvt_out.data() + static_cast<std::size_t>(o) * n;
        for (std::size_t i = 0; i < in.crafted; ++i)
            if (in.masks[i] & op_bit(op)) out.push_back(crafted_finding(op, in.labels[i], in.values[i], got[i]));

        // The sweep: non-NaN results bit for bit; NaN results as a class, with
        // the codes the device chose reported on their own row.
        std::size_t compared = 0, mismatches = 0, skipped_negative = 0;
        std::string examples;
        std::map<std::uint16_t, std::size_t> nan_codes;
        std::set<std::uint16_t> host_nan_codes;
        for (std::size_t i = in.crafted; i < in.crafted + in.sweep; ++i) {
            const float x = in.values[i];
            if (is_e8m0_op(op) && std::signbit(x) && !std::isnan(x)) {
                ++skipped_negative;
                continue;
            }
            ++compared;
            const std::uint16_t want = expected_code(op, x), have = got[i];
            if (std::isnan(x)) {
                if (is_nan_code(op, have)) ++nan_codes[have];
                host_nan_codes.insert(want);
            }
            const bool same = have == want || (is_nan_code(op, have) && is_nan_code(op, want));
            if (!same) {
                if (mismatches < kMaxExamples)
                    examples += (examples.empty() ? "" : "; ") + fp32_text(x) + ": device " + hex(have, code_digits(op)) +
                                ", host " + hex(want, code_digits(op));
                ++mismatches;
            }
        }
        Finding s = base(oi.path, oi.dtype);
        s.quantity = "sweep of " + std::to_string(compared) + " fp32 patterns (seed " + std::to_string(in.seed) +
                     ") -> " + std::string(oi.dtype) + " (" + std::string(oi.mode) + "), against rigel's host codec";
        s.measured = mismatches == 0 ? "all bit-identical"
                                     : std::to_string(mismatches) + " of " + std::to_string(compared) + " differ";
        s.expected = "all bit-identical (any NaN code for a NaN)";
        s.verified = true;
        s.relation = mismatches == 0 ? DocRelation::confirms : DocRelation::contradicts;
        s.doc_statement = sweep_statement(op);
        s.doc_source = doc_source(op);
        s.detail = mismatches == 0 ? "the host codec implements the documented rule" : "first differences: " + examples;
        if (skipped_negative) s.detail += "; " + std::to_string(skipped_negative) + " negative inputs left out (e8m0 is unsigned)";
        out.push_back(std::move(s));

        if (!nan_codes.empty()) {
            Finding c = base(oi.path, oi.dtype);
            c.quantity = "codes written for NaN inputs (all signs and payloads of the sweep)";
            std::string codes, host;
            for (const auto& [code, count] : nan_codes)
                codes += (codes.empty() ? "" : ", ") + hex(code, code_digits(op)) + " x" + std::to_string(count);
            for (std::uint16_t h : host_nan_codes) host += (host.empty() ? "" : ", ") + hex(h, code_digits(op));
            c.measured = codes;
            c.expected = host + " (rigel's host codec)";
            c.verified = true;
            c.relation = DocRelation::fills_in;
            c.doc_statement = "NaN converts to NaN; the code is not specified";
            c.doc_source = doc_source(op);
            c.detail = "the sign and payload of the input NaN are (or are not) kept, as the codes show";
            out.push_back(std::move(c));
        }
    }

    for (int o = 0; o < kDecodeOps; ++o) {
        const auto op = static_cast<DecodeOp>(o);
        const CvtOpInfo& oi = op_info(op);
        const bool bf16_out = op == DecodeOp::ue8m0_to_bf16;
        const std::string dst = bf16_out ? "bf16" : "f16";
        if (!dev.decode_compiled[static_cast<std::size_t>(o)]) {
            Finding f = base(oi.path, oi.dtype);
            f.quantity = std::string(oi.dtype) + " -> " + dst + " decode instruction";
            f.measured = "not available";
            f.relation = DocRelation::not_available;
            f.doc_statement = "the instruction exists " + std::string(oi.needs);
            f.doc_source = std::string(kPtxCvt);
            f.detail = not_compiled_detail(dev, oi.needs);
            out.push_back(std::move(f));
            continue;
        }
        const std::uint16_t* got = dev.decode_out.data() + static_cast<std::size_t>(o) * kDecodeSlots;
        constexpr int slots = kDecodeSlots;
        std::size_t mismatches = 0;
        std::string examples;
        std::set<std::uint16_t> nan_bits;
        for (int slot = 0; slot < slots; ++slot) {
            const std::uint16_t want = expected_decode_slot(op, slot), have = got[slot];
            if (decode_is_nan(op, want) && decode_is_nan(op, have)) nan_bits.insert(have);
            if (have == want || (decode_is_nan(op, have) && decode_is_nan(op, want))) continue;
            if (mismatches < kMaxExamples)
                examples += (examples.empty() ? "" : "; ") + std::string(slot >= 256 ? "high" : "low") + " half of " +
                            hex(decode_operand(op, slot % 256), op == DecodeOp::e2m1_to_f16 ? 2 : 4) + ": device " +
                            hex(have, 4) + ", host " + hex(want, 4);
            ++mismatches;
        }
        const int codes = op == DecodeOp::e2m1_to_f16 ? 16 : 256;
        Finding f = base(oi.path, oi.dtype);
        f.quantity = "every " + std::string(oi.dtype) + " code (" + std::to_string(codes) + ", in both halves of the pair) -> " + dst;
        f.measured = mismatches == 0 ? "all bit-identical" : std::to_string(mismatches) + " of " + std::to_string(slots) + " differ";
        f.expected = "rigel's host decode, rounded to " + dst + " (exact: every code is representable)";
        f.verified = true;
        f.relation = mismatches == 0 ? DocRelation::confirms : DocRelation::contradicts;
        f.doc_statement = "the decode is exact: every " + std::string(oi.dtype) + " value is representable in " + dst;
        f.doc_source = std::string(kPtxCvt) + "; " + std::string(op == DecodeOp::e4m3_to_f16 || op == DecodeOp::e5m2_to_f16 ? kOcpFp8 : kOcpMx);
        f.detail = mismatches == 0 ? "the low half of the result holds the low code of the operand" : "first differences: " + examples;
        if (!nan_bits.empty()) {
            std::string s;
            for (std::uint16_t b : nan_bits) s += (s.empty() ? "" : ", ") + hex(b, 4);
            f.detail += "; NaN codes decode to " + dst + " " + s;
        }
        out.push_back(std::move(f));
    }
    return out;
}

}  // namespace rigel
