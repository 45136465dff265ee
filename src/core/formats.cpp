// Bit-exact encoders and decoders for rigel's low-precision number formats.
// One rounding routine serves every narrow format: it takes the exact value
// sig * 2^exp2 and rounds it, ties to even, onto a grid with the format's
// mantissa width and minimum normal exponent. NaN codes, and what NaN becomes
// in a format without NaN, match CUDA's host conversions (cuda_fp16.hpp,
// cuda_bf16.hpp, cuda_fp8.hpp, cuda_fp4.hpp), which the tests hold us to.
#include "core/formats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace rigel {
namespace {

// A binary format as the rounding routine sees it: mantissa bits, the unbiased
// exponent of its smallest normal, and its largest finite magnitude code.
struct Grid {
    int mant_bits;
    int emin;
    std::uint32_t max_code;
};

constexpr Grid f16_grid{10, -14, 0x7BFF};
constexpr Grid bf16_grid{7, -126, 0x7F7F};
constexpr Grid e4m3_grid{3, -6, 0x7E};
constexpr Grid e5m2_grid{2, -14, 0x7B};
constexpr Grid e2m1_grid{1, 0, 0x7};

constexpr std::uint32_t f32_abs_mask = 0x7FFF'FFFFu;
constexpr std::uint32_t f32_inf_bits = 0x7F80'0000u;
constexpr std::uint32_t f32_frac_mask = 0x007F'FFFFu;
constexpr std::uint32_t f32_canonical_nan = 0x7FFF'FFFFu;  // what CUDA's host decoders return

// CUDA's canonical NaN codes (host conversions, CUDA 13.0): always positive.
constexpr std::uint16_t f16_nan = 0x7FFF;
constexpr std::uint16_t bf16_nan = 0x7FFF;
constexpr std::uint8_t e4m3_nan = 0x7F;
constexpr std::uint8_t e5m2_nan = 0x7F;
constexpr std::uint8_t e8m0_nan = 0xFF;

constexpr int e2m1_emax = 2;     // exponent of 6 = 1.5 * 2^2
constexpr int e8m0_bias = 127;
constexpr int e8m0_min_exp = -127;

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

bool is_nan_bits(std::uint32_t u) { return (u & f32_abs_mask) > f32_inf_bits; }

// A finite, nonzero |x| as sig * 2^exp2 with sig < 2^24.
struct Exact {
    std::uint32_t sig;
    int exp2;
};

Exact decompose(std::uint32_t abs_bits) {
    const int biased = static_cast<int>(abs_bits >> 23);
    const std::uint32_t frac = abs_bits & f32_frac_mask;
    if (biased == 0) return {frac, -149};
    return {frac | 0x0080'0000u, biased - 150};
}

// floor(log2(sig * 2^exp2)) for sig != 0.
int floor_log2(Exact v) { return v.exp2 + static_cast<int>(std::bit_width(v.sig)) - 1; }

// Rounds sig * 2^exp2 (sig != 0) to the grid, ties to even. Returns the
// magnitude code, which exceeds g.max_code on overflow. The code of a value
// is (exponent steps above the subnormal range << mant_bits) + the rounded
// significand, so a carry out of the significand lands on the next binade.
std::uint32_t round_to_grid(Exact v, const Grid& g) {
    const int e = floor_log2(v);
    const int top = std::max(e, g.emin);
    const int quantum = top - g.mant_bits;  // exponent of one unit in the last place
    const int shift = quantum - v.exp2;
    std::uint64_t r = 0;
    if (shift <= 0) {
        r = static_cast<std::uint64_t>(v.sig) << -shift;
    } else if (shift < 32) {
        const std::uint64_t sig = v.sig;
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        const std::uint64_t rem = sig & ((half << 1) - 1);
        r = sig >> shift;
        if (rem > half || (rem == half && (r & 1u) != 0)) ++r;
    }  // else: below half the smallest subnormal, rounds to zero
    const std::uint64_t code = (static_cast<std::uint64_t>(top - g.emin) << g.mant_bits) + r;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(code, 0xFFFF'FFFFu));
}

// Exact value of a magnitude code on the grid (no specials).
float grid_value(std::uint32_t code, const Grid& g) {
    const std::uint32_t mant_mask = (1u << g.mant_bits) - 1;
    const int biased = static_cast<int>(code >> g.mant_bits);
    const std::uint32_t mant = code & mant_mask;
    if (biased == 0) return std::ldexp(static_cast<float>(mant), g.emin - g.mant_bits);
    const std::uint32_t sig = mant | (1u << g.mant_bits);
    return std::ldexp(static_cast<float>(sig), biased - 1 + g.emin - g.mant_bits);
}

float with_sign(float magnitude, bool negative) { return negative ? -magnitude : magnitude; }

// Encodes a finite float; overflow_code is used when the rounded magnitude
// exceeds the grid. Returns the magnitude code; the caller adds the sign.
std::uint32_t encode_finite(std::uint32_t abs_bits, const Grid& g, std::uint32_t overflow_code) {
    if (abs_bits == 0) return 0;
    const std::uint32_t code = round_to_grid(decompose(abs_bits), g);
    return code > g.max_code ? overflow_code : code;
}

}  // namespace

std::uint16_t f32_to_f16(float x) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return f16_nan;
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    constexpr std::uint32_t inf_code = 0x7C00;
    const std::uint32_t abs_bits = u & f32_abs_mask;
    const std::uint32_t code = abs_bits == f32_inf_bits ? inf_code : encode_finite(abs_bits, f16_grid, inf_code);
    return static_cast<std::uint16_t>(sign | code);
}

float f16_to_f32(std::uint16_t bits) {
    const bool negative = (bits & 0x8000u) != 0;
    const std::uint32_t mag = bits & 0x7FFFu;
    if (mag >= 0x7C00u) {
        if (mag > 0x7C00u) return float_of(f32_canonical_nan);
        return with_sign(float_of(f32_inf_bits), negative);
    }
    return with_sign(grid_value(mag, f16_grid), negative);
}

std::uint16_t f32_to_bf16(float x) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return bf16_nan;
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    constexpr std::uint32_t inf_code = 0x7F80;
    const std::uint32_t abs_bits = u & f32_abs_mask;
    const std::uint32_t code = abs_bits == f32_inf_bits ? inf_code : encode_finite(abs_bits, bf16_grid, inf_code);
    return static_cast<std::uint16_t>(sign | code);
}

// bf16 is the top half of fp32, so decoding is a shift (NaN payloads kept,
// as CUDA's host decoder does).
float bf16_to_f32(std::uint16_t bits) { return float_of(static_cast<std::uint32_t>(bits) << 16); }

float f32_to_tf32(float x) {
    constexpr int dropped = 13;
    constexpr std::uint32_t dropped_mask = (1u << dropped) - 1;
    const std::uint32_t u = bits_of(x);
    if ((u & f32_abs_mask) >= f32_inf_bits) return x;  // inf and NaN unchanged
    // Adding half an ulp minus one, plus the kept lsb, rounds to nearest even;
    // a carry runs into the exponent, and past the largest finite value to inf.
    const std::uint32_t lsb = (u >> dropped) & 1u;
    return float_of((u + (dropped_mask >> 1) + lsb) & ~dropped_mask);
}

std::uint8_t f32_to_e4m3(float x, Overflow mode) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return e4m3_nan;
    const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
    // No inf in e4m3: inf is an overflow like any other.
    const std::uint32_t overflow_code = mode == Overflow::saturate ? e4m3_grid.max_code : e4m3_nan;
    const std::uint32_t abs_bits = u & f32_abs_mask;
    const std::uint32_t code = abs_bits == f32_inf_bits ? overflow_code : encode_finite(abs_bits, e4m3_grid, overflow_code);
    return static_cast<std::uint8_t>(sign | code);
}

float e4m3_to_f32(std::uint8_t bits) {
    const std::uint32_t mag = bits & 0x7Fu;
    if (mag == 0x7Fu) return float_of(f32_canonical_nan);
    return with_sign(grid_value(mag, e4m3_grid), (bits & 0x80u) != 0);
}

std::uint8_t f32_to_e5m2(float x, Overflow mode) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return e5m2_nan;
    const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
    constexpr std::uint32_t inf_code = 0x7C;
    // Saturation applies to inf inputs too (cvt ... .satfinite maps inf to MAX_NORM).
    const std::uint32_t overflow_code = mode == Overflow::saturate ? e5m2_grid.max_code : inf_code;
    const std::uint32_t abs_bits = u & f32_abs_mask;
    const std::uint32_t code = abs_bits == f32_inf_bits ? overflow_code : encode_finite(abs_bits, e5m2_grid, overflow_code);
    return static_cast<std::uint8_t>(sign | code);
}

float e5m2_to_f32(std::uint8_t bits) {
    const bool negative = (bits & 0x80u) != 0;
    const std::uint32_t mag = bits & 0x7Fu;
    if (mag >= 0x7Cu) {
        if (mag > 0x7Cu) return float_of(f32_canonical_nan);
        return with_sign(float_of(f32_inf_bits), negative);
    }
    return with_sign(grid_value(mag, e5m2_grid), negative);
}

std::uint8_t f32_to_e2m1(float x) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return static_cast<std::uint8_t>(e2m1_grid.max_code);  // +6, sign dropped
    const auto sign = static_cast<std::uint8_t>((u >> 28) & 0x8u);
    const std::uint32_t abs_bits = u & f32_abs_mask;
    const std::uint32_t code = abs_bits == f32_inf_bits ? e2m1_grid.max_code : encode_finite(abs_bits, e2m1_grid, e2m1_grid.max_code);
    return static_cast<std::uint8_t>(sign | code);
}

float e2m1_to_f32(std::uint8_t nibble) {
    return with_sign(grid_value(nibble & 0x7u, e2m1_grid), (nibble & 0x8u) != 0);
}

// The e8m0 code of |x| rounded down to a power of two is its fp32 biased
// exponent; subnormals and zero clamp to 2^-127 (code 0), inf to 2^127.
std::uint8_t f32_to_e8m0_floor(float x) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return e8m0_nan;
    const std::uint32_t biased = (u & f32_abs_mask) >> 23;
    return static_cast<std::uint8_t>(std::min<std::uint32_t>(biased, 0xFE));
}

float e8m0_to_f32(std::uint8_t bits) {
    if (bits == e8m0_nan) return float_of(f32_canonical_nan);
    return std::ldexp(1.0f, static_cast<int>(bits) - e8m0_bias);
}

// Blocks holding NaN or inf get the NaN scale (the whole block reads as NaN)
// and zero elements; an all-zero block gets scale code 0 (2^-127).
Mxfp4Block encode_mxfp4(const float* values32) {
    constexpr int block = 32;
    Mxfp4Block out{};
    std::uint32_t amax_bits = 0;
    for (int i = 0; i < block; ++i) {
        const std::uint32_t abs_bits = bits_of(values32[i]) & f32_abs_mask;
        if (abs_bits >= f32_inf_bits) {
            out.scale = e8m0_nan;
            return out;
        }
        amax_bits = std::max(amax_bits, abs_bits);  // fp32 order is integer order for |x|
    }
    int shared_exp = e8m0_min_exp;
    if (amax_bits != 0) shared_exp = std::max(floor_log2(decompose(amax_bits)) - e2m1_emax, e8m0_min_exp);
    out.scale = static_cast<std::uint8_t>(shared_exp + e8m0_bias);
    for (int i = 0; i < block; ++i) {
        const std::uint32_t u = bits_of(values32[i]);
        const std::uint32_t abs_bits = u & f32_abs_mask;
        std::uint32_t code = 0;
        if (abs_bits != 0) {
            // Divide by the scale exactly by moving the exponent, then round once.
            Exact v = decompose(abs_bits);
            v.exp2 -= shared_exp;
            code = std::min(round_to_grid(v, e2m1_grid), e2m1_grid.max_code);
        }
        code |= (u >> 28) & 0x8u;
        const int shift = (i & 1) * 4;
        out.packed[static_cast<std::size_t>(i / 2)] |= static_cast<std::uint8_t>(code << shift);
    }
    return out;
}

void decode_mxfp4(const Mxfp4Block& block, float* values32) {
    const float scale = e8m0_to_f32(block.scale);
    for (int i = 0; i < 32; ++i) {
        const std::uint8_t byte = block.packed[static_cast<std::size_t>(i / 2)];
        const auto nibble = static_cast<std::uint8_t>((i & 1) != 0 ? byte >> 4 : byte & 0xFu);
        values32[i] = e2m1_to_f32(nibble) * scale;  // one exact product, or inf past 2^128
    }
}

}  // namespace rigel
