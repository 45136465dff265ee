// The arithmetic of k24_mma_sync_fp4 that is not a copy: how one 32-bit word
// of eight e2m1 nibbles becomes f16x2 mma fragment registers, which element
// of a 32-element MX block each mma k index is, the per-block scale factors,
// and the element-wise loader of tails and odd K. They compile as CUDA and as
// plain C++, so tests/host/test_mxfp4_operand.cpp runs these same functions on
// the CPU against rigel's codecs (core/formats.hpp) and a plain product.
//
// The f16 trick: put e2m1's three magnitude bits (e1 e0 m) in f16 bits 11..9
// (the exponent's two low bits and the mantissa's top bit) and its sign in
// bit 15; every other bit zero. For e1 e0 != 0 that f16 is
// 2^(E - 15) (1 + m/2) = e2m1 * 2^-14, and for E = 0 it is the f16 subnormal
// m * 2^-15 = e2m1 * 2^-14 too: every e2m1 value, times 2^-14, exactly. The
// tensor cores keep subnormal f16 inputs exactly on the H200 (FINDINGS.md,
// probe `accumulation`), so no fix-up multiply is needed; products carry
// 2^-28, which the kernel's epilogue takes back. The f16's low byte is zero,
// so an element is one byte, h(x) = sign << 7 | magnitude << 1, and a fragment
// register [0, h(x0), 0, h(x1)] is one byte permute (PRMT) of a word of such
// bytes.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/ladder/mma_layout.cuh"

#if defined(__CUDA_ARCH__)
#define RIGEL_FP4_UNROLL _Pragma("unroll")
#else
#define RIGEL_FP4_UNROLL
#endif

namespace rigel::fp4 {

// Elements of one MX block, and its bytes of packed nibbles (one 16-byte chunk).
constexpr int kBlockElems = 32;
constexpr int kBlockBytes = 16;
// Each operand's f16 is the e2m1 value times 2^kF16Exp2; a product carries twice that.
constexpr int kF16Exp2 = -14;
constexpr float kProductUnscale = 268435456.0f;  // 2^28 = 2^(-2 * kF16Exp2)

// For every byte of x, its high nibble (s e1 e0 m) turned into h = s << 7 |
// (e1 e0 m) << 1: (x >> 3) brings bits 4..6 to 1..3, and the sign is bit 7
// already.
RIGEL_HOST_DEVICE constexpr std::uint32_t f16_high_bytes_of_high_nibbles(std::uint32_t x) {
    return ((x >> 3) & 0x0E0E0E0Eu) | (x & 0x80808080u);
}

// PRMT (CUDA __byte_perm): byte i of the result is byte selector[4i + 2 : 4i]
// of the 8 bytes {y:x} (x is bytes 0-3).
RIGEL_HOST_DEVICE inline std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, std::uint32_t selector) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(x, y, selector);
#else
    const std::uint64_t v = (static_cast<std::uint64_t>(y) << 32) | x;
    std::uint32_t r = 0;
    for (int i = 0; i < 4; ++i)
        r |= static_cast<std::uint32_t>((v >> (8 * ((selector >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
    return r;
#endif
}

// Word w holds elements 0..7 of a thread's slice (element e in bits 4e..4e+3,
// the packed order). The two k16 steps of a block take half of them each:
// step 0: r[0] = (e0, e2), r[1] = (e4, e6); step 1: r[0] = (e1, e3),
// r[1] = (e5, e7), low half first. Step 0 shifts the low nibbles up to reuse
// the same byte map. 4 integer operations per word and step, then one PRMT
// per register (zero bytes from the constant 0).
RIGEL_HOST_DEVICE inline void e2m1x8_to_f16x2(std::uint32_t w, int step, std::uint32_t (&r)[2]) {
    const std::uint32_t h = f16_high_bytes_of_high_nibbles(step == 0 ? w << 4 : w);
    r[0] = byte_perm(h, 0u, 0x1404u);  // [0, h byte 0, 0, h byte 1]
    r[1] = byte_perm(h, 0u, 0x3424u);  // [0, h byte 2, 0, h byte 3]
}

// The fragment maps of mma.m16n8k16 (PTX ISA 9.7.14.5.8, mma_layout.cuh): A
// register j of lane (g, q) holds k = 8 (j >> 1) + 2q + half, B register j
// holds k = 8 j + 2q + half. Lane quad q reads bytes [4q, 4q + 4) of its row's
// block, elements 8q .. 8q + 7, so the mma's k index kk of step s is block
// element 8q + s + 4 (kk >> 3) + 2 (kk & 1), q = (kk & 7) >> 1: the same map
// for A and B, so the sum over k is the sum over the block, permuted.
RIGEL_HOST_DEVICE constexpr int block_element(int step, int kk) {
    return 8 * ((kk & 7) >> 1) + step + 4 * (kk >> 3) + 2 * (kk & 1);
}

// One operand's factor for a block of scale code `code`: 2^(code - 127), an
// fp32 for every code (2^-127 is subnormal, exact), NaN for the NaN code 0xFF.
// A row's factor times B's column factor is 2^(sa + sb - 254), exact unless it
// leaves fp32's range.
RIGEL_HOST_DEVICE inline float block_scale_factor(std::uint32_t code) {
    std::uint32_t bits = 0x7FC00000u;  // NaN
    if (code == 0) bits = 0x00400000u;  // 2^-127
    else if (code < 0xFFu) bits = code << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// The per-block promotion: acc + partial * (fa * fb), with partial a block's
// fp32 sum of products of 2^-14-scaled operands, exact (at most 32 products
// of e2m1 pairs, multiples of 2^-2 * 2^-28 below 2^11 * 2^-28). The product
// with the power of two and the add are one fused operation, one rounding.
RIGEL_HOST_DEVICE inline float promote_block(float acc, float partial, float fa, float fb) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(partial, fa * fb, acc);
#else
    return std::fma(partial, fa * fb, acc);
#endif
}

// Elements [k0, k0 + 32) of the line whose first element is nibble `line0`
// of `base` (packed as dtype.hpp says; with odd K a line starts mid-byte),
// zeros past K, as the 16 bytes the vector path would have copied. Reads
// only the bytes that hold those elements.
RIGEL_HOST_DEVICE inline void load_nibble_chunk(const std::uint8_t* base, std::int64_t line0, std::int64_t k0,
                                                std::int64_t k, std::uint32_t (&w)[4]) {
    w[0] = w[1] = w[2] = w[3] = 0;
    if (k0 >= k) return;
    const int valid = k - k0 < kBlockElems ? static_cast<int>(k - k0) : kBlockElems;
    const std::int64_t first = line0 + k0;  // nibble index of element k0
    const std::uint8_t* src = base + (first >> 1);
    const int shift = static_cast<int>(first & 1) * 4;
    const int last_byte = (shift / 4 + valid - 1) >> 1;  // relative to src
    RIGEL_FP4_UNROLL
    for (int j = 0; j < 4; ++j) {
        std::uint64_t v = 0;
        RIGEL_FP4_UNROLL
        for (int t = 0; t < 5; ++t) {
            const int at = 4 * j + t;
            if (at <= last_byte) v |= static_cast<std::uint64_t>(src[at]) << (8 * t);
        }
        const int in_word = valid - 8 * j;  // elements of this word inside K
        const std::uint32_t mask = in_word >= 8 ? 0xFFFFFFFFu : in_word <= 0 ? 0u : (1u << (4 * in_word)) - 1u;
        w[j] = static_cast<std::uint32_t>(v >> shift) & mask;
    }
}

}  // namespace rigel::fp4
