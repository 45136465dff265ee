// Number formats, bit-exact. Every encoder rounds to nearest, ties to even, the
// way the hardware's cvt.rn does; overflow follows the chosen mode. Decoders are
// exact (every value of these formats is representable in float).
// Facts: OCP 8-bit floating point spec (e4m3, e5m2), OCP MX v1.0 (e2m1, e8m0,
// MXFP4), IEEE 754 (f16), and the PTX ISA cvt instruction.
#pragma once
#include <array>
#include <cstdint>

namespace rigel {

enum class Overflow : std::uint8_t {
    saturate,      // clamp to the largest finite value, inf included (cvt ... .satfinite)
    non_saturate,  // e4m3 -> NaN, e5m2/f16/bf16 -> inf
};

// IEEE binary16. Overflow to inf (the IEEE default); NaN stays NaN. NaN codes
// are CUDA's canonical ones: fp32 NaN -> 0x7FFF (sign dropped) in f16 and bf16,
// and every decoder here but bf16's returns fp32 NaN as 0x7FFFFFFF.
std::uint16_t f32_to_f16(float x);
float f16_to_f32(std::uint16_t bits);

// bfloat16: the top 16 bits of fp32, rounded to nearest even.
std::uint16_t f32_to_bf16(float x);
float bf16_to_f32(std::uint16_t bits);

// tf32: fp32 with the low 13 mantissa bits cleared after rounding to nearest
// even (cvt.rna is the other hardware mode; rigel uses RNE). Returns the fp32
// value that holds the tf32 number.
float f32_to_tf32(float x);

// fp8 e4m3 (bias 7, max 448, no inf, NaN 0x7F/0xFF). NaN input -> 0x7F.
std::uint8_t f32_to_e4m3(float x, Overflow mode);
float e4m3_to_f32(std::uint8_t bits);

// fp8 e5m2 (bias 15, max 57344, inf 0x7C/0xFC). NaN input -> 0x7F.
std::uint8_t f32_to_e5m2(float x, Overflow mode);
float e5m2_to_f32(std::uint8_t bits);

// fp4 e2m1 in the low nibble (values 0, 0.5, 1, 1.5, 2, 3, 4, 6; no inf/NaN).
// It has no NaN: out-of-range values saturate to +-6 whatever the mode; NaN
// input encodes as +6 (what CUDA's __nv_cvt_float_to_fp4 does is what the
// tests hold this to).
std::uint8_t f32_to_e2m1(float x);
float e2m1_to_f32(std::uint8_t nibble);

// e8m0 scale: 2^(bits-127), 0xFF is NaN. Encoding rounds the exponent of a
// positive power-of-two-ish value; rigel uses it only for MX block scales.
std::uint8_t f32_to_e8m0_floor(float x);  // 2^floor(log2 x), clamped to the range
float e8m0_to_f32(std::uint8_t bits);

// MXFP4 (OCP MX v1.0): 32 e2m1 elements sharing one e8m0 scale. The scale is
// 2^(floor(log2(amax)) - 2), 2 being the exponent of e2m1's largest value,
// at least 2^-127; elements saturate to +-6. An all-zero block gets scale code
// 0; a block holding inf or NaN gets the NaN scale 0xFF (it decodes as NaN).
struct Mxfp4Block {
    std::uint8_t scale;                 // e8m0
    std::array<std::uint8_t, 16> packed;  // element 2i in the low nibble of byte i
};
Mxfp4Block encode_mxfp4(const float* values32);
void decode_mxfp4(const Mxfp4Block& block, float* values32);

}  // namespace rigel
