// Host tests of rigel's fp4 operands and of the fp4 rung's arithmetic:
// - mxfp4 operands (OCP MX v1.0): each 32-element block along K gets the scale
//   2^(floor(log2 amax) - 2), its elements round to nearest even and saturate
//   at 6, the last block of a line may be partial, Operand::values are the
//   exact values of the stored bytes, and transposed() carries the scales;
// - e2m1 operands with odd element counts and odd row lengths;
// - the functions of src/cuda/ladder/fp4_fragments.cuh that k24_mma_sync_fp4
//   runs on the device (nibble-to-f16 unpacking, the permutation of K inside a
//   block, the per-block scale factors and promotion, the loader of odd K),
//   replayed on the CPU up to a whole GEMM read from the device buffer layout.
// The expected values come from an independent transcription of the rules
// here (a plain nearest-even search over the e2m1 grid), not from the code
// under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/dtype.hpp"
#include "core/formats.hpp"
#include "core/recipe.hpp"
#include "cuda/ladder/fp4_fragments.cuh"

using namespace rigel;

namespace {

// The e2m1 magnitudes by code 0..7.
constexpr double kE2m1Grid[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// Round |y| to the e2m1 grid, nearest, ties to the even code, saturating at 6.
double round_e2m1(double y) {
    const double a = std::fabs(y);
    if (a >= 6.0) return std::copysign(6.0, y);
    int best = 0;
    for (int c = 1; c < 8; ++c) {
        const double d = std::fabs(a - kE2m1Grid[c]), db = std::fabs(a - kE2m1Grid[best]);
        if (d < db || (d == db && c % 2 == 0)) best = c;
    }
    return std::copysign(kE2m1Grid[best], y);
}

unsigned nibble_at(const std::vector<unsigned char>& bytes, std::size_t i) {
    return (bytes[i / 2] >> ((i % 2) * 4)) & 0xFu;
}

double e2m1_value(unsigned nibble) {
    const double v = kE2m1Grid[nibble & 7u];
    return (nibble & 8u) ? -v : v;
}

// Element (r, c) of an mxfp4 operand decoded from its bytes by the layout of
// dtype.hpp, with nothing from recipe.cpp.
double decode_mxfp4_element(const Operand& op, std::size_t r, std::size_t c) {
    const std::size_t elements = (op.count + 1) / 2;
    std::size_t scale_at = 0;
    if (op.k_axis == KAxis::cols)
        scale_at = elements + r * ((op.cols + 31) / 32) + c / 32;
    else
        scale_at = elements + (r / 32) * op.cols + c;
    const int code = op.bytes.at(scale_at);
    return std::ldexp(e2m1_value(nibble_at(op.bytes, r * op.cols + c)), code - 127);
}

// Checks every block of an mxfp4 operand against the unquantized draws (an
// f64 operand from the same recipe, seed and stream) and returns how many
// elements saturated.
int check_mxfp4_blocks(const Operand& op, const Operand& raw) {
    int saturated = 0;
    const bool k_cols = op.k_axis == KAxis::cols;
    const std::size_t lines = k_cols ? op.rows : op.cols, k = k_cols ? op.cols : op.rows;
    for (std::size_t line = 0; line < lines; ++line)
        for (std::size_t k0 = 0; k0 < k; k0 += 32) {
            const std::size_t len = std::min<std::size_t>(32, k - k0);
            auto index = [&](std::size_t j) { return k_cols ? line * op.cols + k0 + j : (k0 + j) * op.cols + line; };
            double amax = 0;
            for (std::size_t j = 0; j < len; ++j)
                amax = std::max(amax, std::fabs(static_cast<double>(static_cast<float>(raw.values[index(j)]))));
            const int e = amax == 0 ? -127 : std::max(-127, static_cast<int>(std::floor(std::log2(amax))) - 2);
            const std::size_t r = k_cols ? line : k0, c = k_cols ? k0 : line;
            EXPECT_EQ(op.bytes[mxfp4_scale_offset(op, r, c)], e + 127) << "line " << line << " block " << k0 / 32;
            for (std::size_t j = 0; j < len; ++j) {
                const double x = static_cast<float>(raw.values[index(j)]);
                const double expected = std::ldexp(round_e2m1(std::ldexp(x, -e)), e);
                EXPECT_EQ(op.values[index(j)], expected) << "element " << index(j);
                const std::size_t rr = k_cols ? line : k0 + j, cc = k_cols ? k0 + j : line;
                EXPECT_EQ(decode_mxfp4_element(op, rr, cc), op.values[index(j)]) << "bytes and values disagree";
                saturated += std::fabs(std::ldexp(x, -e)) > 6.0;
            }
        }
    return saturated;
}

}  // namespace

TEST(DTypeFp4, TableAndSizes) {
    ASSERT_EQ(parse_dtype("mxfp4"), DType::mxfp4);
    ASSERT_EQ(parse_dtype("e2m1"), DType::e2m1);
    EXPECT_EQ(name(DType::mxfp4), "mxfp4");
    EXPECT_EQ(info(DType::mxfp4).out, OutType::f32);
    EXPECT_EQ(storage_bytes(DType::e2m1, 7), 4u);
    EXPECT_EQ(storage_bytes(DType::mxfp4, 7), 4u);  // elements only
    EXPECT_EQ(operand_bytes(DType::e2m1, 3, 45), 68u);
    EXPECT_EQ(operand_bytes(DType::mxfp4, 3, 45), 68u + 3u * 2u);  // ceil(135/2) + 3 lines x 2 blocks
    EXPECT_EQ(operand_bytes(DType::mxfp4, 5, 64), 160u + 5u * 2u);
    EXPECT_EQ(operand_bytes(DType::f16, 3, 45), 270u);
}

TEST(Mxfp4Operand, BlocksAlongColumnsWithPartialLastBlock) {
    // K = 45: blocks of 32 and 13; K = 1: a block of one element.
    for (std::size_t k : {45u, 1u, 64u, 97u}) {
        const Operand op = make_operand(DType::mxfp4, Recipe::uniform, 5, 0, 7, k, KAxis::cols);
        const Operand raw = make_operand(DType::f64, Recipe::uniform, 5, 0, 7, k, KAxis::cols);
        EXPECT_EQ(op.bytes.size(), operand_bytes(DType::mxfp4, 7, k));
        check_mxfp4_blocks(op, raw);
    }
}

TEST(Mxfp4Operand, BlocksAlongRowsForBAsKByN) {
    const Operand op = make_operand(DType::mxfp4, Recipe::normal, 9, 1, 70, 11, KAxis::rows);
    const Operand raw = make_operand(DType::f64, Recipe::normal, 9, 1, 70, 11, KAxis::rows);
    EXPECT_EQ(op.bytes.size(), operand_bytes(DType::mxfp4, 11, 70));
    check_mxfp4_blocks(op, raw);
}

TEST(Mxfp4Operand, SaturationHappensAndIsExact) {
    // amax / 2^e lies in [4, 8): a block's largest element saturates to 6 when
    // it is above 7 (and rounds to 6 in [5, 7)); uniform draws hit both.
    const Operand op = make_operand(DType::mxfp4, Recipe::uniform, 2, 0, 64, 256, KAxis::cols);
    const Operand raw = make_operand(DType::f64, Recipe::uniform, 2, 0, 64, 256, KAxis::cols);
    EXPECT_GT(check_mxfp4_blocks(op, raw), 20);
}

TEST(Mxfp4Operand, HostileAndSmallIntRecipes) {
    for (Recipe r : {Recipe::hostile, Recipe::small_int}) {
        const Operand op = make_operand(DType::mxfp4, r, 4, 0, 9, 100, KAxis::cols);
        const Operand raw = make_operand(DType::f64, r, 4, 0, 9, 100, KAxis::cols);
        check_mxfp4_blocks(op, raw);
        if (r == Recipe::small_int) {  // integers in [-4, 4] are exact in every block
            for (std::size_t i = 0; i < op.count; ++i) EXPECT_EQ(op.values[i], raw.values[i]);
        }
    }
}

TEST(Mxfp4Operand, CountFormAndQuantizeIntoRefuseMxfp4) {
    EXPECT_THROW(make_operand(DType::mxfp4, Recipe::uniform, 1, 0, 64), std::invalid_argument);
    Operand one;
    one.type = DType::mxfp4;
    one.bytes.assign(8, 0);
    one.values.resize(1);
    EXPECT_THROW(quantize_into(DType::mxfp4, 1.0, 0, one), std::logic_error);
}

TEST(Mxfp4Operand, TransposeCarriesScales) {
    const std::size_t k = 45, n = 7;
    const Operand b = make_operand(DType::mxfp4, Recipe::uniform, 3, 1, k, n, KAxis::rows);
    const Operand t = transposed(b, k, n);
    EXPECT_EQ(t.rows, n);
    EXPECT_EQ(t.cols, k);
    EXPECT_EQ(t.k_axis, KAxis::cols);
    EXPECT_EQ(t.bytes.size(), operand_bytes(DType::mxfp4, n, k));
    for (std::size_t r = 0; r < k; ++r)
        for (std::size_t c = 0; c < n; ++c) {
            EXPECT_EQ(t.values[c * k + r], b.values[r * n + c]);
            EXPECT_EQ(nibble_at(t.bytes, c * k + r), nibble_at(b.bytes, r * n + c));
            EXPECT_EQ(t.bytes[mxfp4_scale_offset(t, c, r)], b.bytes[mxfp4_scale_offset(b, r, c)]);
            // The device layout: N x K, ceil(K/32) scale bytes per row after the nibbles.
            EXPECT_EQ(decode_mxfp4_element(t, c, r), b.values[r * n + c]);
        }
    // And back.
    const Operand back = transposed(t, n, k);
    EXPECT_EQ(back.bytes, b.bytes);
    EXPECT_EQ(back.values, b.values);
    EXPECT_EQ(back.k_axis, KAxis::rows);
    EXPECT_THROW(transposed(b, n, k), std::invalid_argument);
}

TEST(Mxfp4Operand, ShapedFormMatchesCountFormForOtherTypes) {
    for (DType t : {DType::f32, DType::f16, DType::e4m3, DType::e2m1, DType::i8}) {
        const Operand flat = make_operand(t, Recipe::normal, 6, 1, 13 * 9);
        const Operand shaped = make_operand(t, Recipe::normal, 6, 1, 13, 9, KAxis::rows);
        EXPECT_EQ(flat.bytes, shaped.bytes) << name(t);
        EXPECT_EQ(flat.values, shaped.values) << name(t);
    }
}

TEST(E2m1Operand, OddCountsPackTwoPerByte) {
    const Operand op = make_operand(DType::e2m1, Recipe::uniform, 1, 0, 7);
    ASSERT_EQ(op.bytes.size(), 4u);
    EXPECT_EQ(op.bytes[3] >> 4, 0) << "the unused high nibble of the last byte stays zero";
    for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(e2m1_value(nibble_at(op.bytes, i)), op.values[i]);
    // Odd rows: 3 x 5, row 1 starts in the high nibble of byte 2.
    const Operand m = make_operand(DType::e2m1, Recipe::normal, 2, 0, 3, 5, KAxis::cols);
    ASSERT_EQ(m.bytes.size(), 8u);
    const Operand t = transposed(m, 3, 5);
    ASSERT_EQ(t.bytes.size(), 8u);
    for (std::size_t r = 0; r < 3; ++r)
        for (std::size_t c = 0; c < 5; ++c) {
            EXPECT_EQ(nibble_at(t.bytes, c * 3 + r), nibble_at(m.bytes, r * 5 + c));
            EXPECT_EQ(t.values[c * 3 + r], m.values[r * 5 + c]);
            EXPECT_EQ(e2m1_value(nibble_at(t.bytes, c * 3 + r)), t.values[c * 3 + r]);
        }
    EXPECT_EQ(t.bytes[7] >> 4, 0);
}

// ---- the rung's arithmetic (fp4_fragments.cuh) ----

TEST(Fp4Fragments, EveryNibbleUnpacksToItsValueTimes2PowMinus14) {
    std::mt19937 gen(3);
    for (int trial = 0; trial < 2000; ++trial) {
        std::uint32_t w = static_cast<std::uint32_t>(gen());
        if (trial < 16) w = 0x11111111u * static_cast<std::uint32_t>(trial);  // every code in every position
        for (int step = 0; step < 2; ++step) {
            std::uint32_t r[2];
            fp4::e2m1x8_to_f16x2(w, step, r);
            // step 0: (e0, e2), (e4, e6); step 1: (e1, e3), (e5, e7).
            for (int j = 0; j < 2; ++j)
                for (int half = 0; half < 2; ++half) {
                    const int e = step + 4 * j + 2 * half;
                    const auto bits = static_cast<std::uint16_t>(r[j] >> (16 * half));
                    const double expected = std::ldexp(e2m1_value((w >> (4 * e)) & 0xFu), fp4::kF16Exp2);
                    EXPECT_EQ(static_cast<double>(f16_to_f32(bits)), expected) << std::hex << w << " element " << e;
                }
        }
    }
}

TEST(Fp4Fragments, BlockElementIsAPermutationOfTheBlock) {
    std::set<int> seen;
    for (int step = 0; step < 2; ++step)
        for (int kk = 0; kk < 16; ++kk) {
            const int e = fp4::block_element(step, kk);
            EXPECT_GE(e, 0);
            EXPECT_LT(e, 32);
            seen.insert(e);
            // The lane that holds mma k index kk (quad (kk & 7) >> 1) read bytes [4q, 4q + 4).
            EXPECT_EQ(e / 8, (kk & 7) >> 1);
        }
    EXPECT_EQ(seen.size(), 32u);
}

TEST(Fp4Fragments, ScaleFactorsArePowersOfTwo) {
    for (std::uint32_t code = 0; code < 255; ++code)
        EXPECT_EQ(static_cast<double>(fp4::block_scale_factor(code)), std::ldexp(1.0, static_cast<int>(code) - 127));
    EXPECT_TRUE(std::isnan(fp4::block_scale_factor(0xFF)));
    // The promotion is exact for a block partial times 2^(sa + sb - 254) in range.
    std::mt19937 gen(5);
    for (int trial = 0; trial < 1000; ++trial) {
        const int partial_q = static_cast<int>(gen() % 9217) - 4608;  // a block sum: multiple of 1/4, |.| <= 1152
        const float partial = std::ldexp(static_cast<float>(partial_q), -2 - 28);
        const std::uint32_t sa = 100 + gen() % 50, sb = 100 + gen() % 50;
        const float out = fp4::promote_block(0.0f, partial, fp4::block_scale_factor(sa), fp4::block_scale_factor(sb));
        EXPECT_EQ(static_cast<double>(out) * fp4::kProductUnscale,
                  std::ldexp(static_cast<double>(partial_q), static_cast<int>(sa + sb) - 254 - 2));
    }
}

TEST(Fp4Fragments, OneBlockOfMmaEqualsThePlainProduct) {
    // A 16 x 32 and B (N x K) 8 x 32 e2m1 blocks, rows of 16 packed bytes. Every
    // lane unpacks its words, the fragments go where mma.m16n8k16 takes them
    // (PTX ISA 9.7.14.5.8: A register j of lane (g, q) is row g + 8 (j & 1),
    // k = 8 (j >> 1) + 2q + half; B register j is column g, k = 8j + 2q + half),
    // and two k16 steps must give the exact product over the 32 elements.
    std::mt19937 gen(8);
    for (int trial = 0; trial < 50; ++trial) {
        std::uint8_t a[16][16], b[8][16];
        for (auto& row : a)
            for (auto& byte : row) byte = static_cast<std::uint8_t>(gen());
        for (auto& row : b)
            for (auto& byte : row) byte = static_cast<std::uint8_t>(gen());
        auto word = [](const std::uint8_t* row, int q) {
            std::uint32_t w;
            std::memcpy(&w, row + 4 * q, 4);
            return w;
        };
        double d[16][8] = {};
        for (int step = 0; step < 2; ++step) {
            double am[16][16], bm[16][8];  // the mma's operands in f16 values
            for (int lane = 0; lane < 32; ++lane) {
                const int g = lane >> 2, q = lane & 3;
                std::uint32_t lo[2], hi[2], bf[2];
                fp4::e2m1x8_to_f16x2(word(a[g], q), step, lo);
                fp4::e2m1x8_to_f16x2(word(a[g + 8], q), step, hi);
                fp4::e2m1x8_to_f16x2(word(b[g], q), step, bf);
                const std::uint32_t af[4] = {lo[0], hi[0], lo[1], hi[1]};
                for (int j = 0; j < 4; ++j)
                    for (int half = 0; half < 2; ++half)
                        am[g + 8 * (j & 1)][8 * (j >> 1) + 2 * q + half] =
                            f16_to_f32(static_cast<std::uint16_t>(af[j] >> (16 * half)));
                for (int j = 0; j < 2; ++j)
                    for (int half = 0; half < 2; ++half)
                        bm[8 * j + 2 * q + half][g] = f16_to_f32(static_cast<std::uint16_t>(bf[j] >> (16 * half)));
            }
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 8; ++j)
                    for (int kk = 0; kk < 16; ++kk) d[i][j] += am[i][kk] * bm[kk][j];
        }
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 8; ++j) {
                double exact = 0;
                for (int e = 0; e < 32; ++e) {
                    const unsigned na = (a[i][e / 2] >> ((e % 2) * 4)) & 0xFu;
                    const unsigned nb = (b[j][e / 2] >> ((e % 2) * 4)) & 0xFu;
                    exact += e2m1_value(na) * e2m1_value(nb);
                }
                EXPECT_EQ(d[i][j] * fp4::kProductUnscale, exact) << i << "," << j;
            }
    }
}

TEST(Fp4Fragments, ChunkLoaderHandlesOddKAndTails) {
    for (std::int64_t k : {1, 7, 31, 33, 45, 127, 128}) {
        const std::size_t rows = 5;
        const Operand op = make_operand(DType::e2m1, Recipe::normal, 1, 0, rows, static_cast<std::size_t>(k), KAxis::cols);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::int64_t k0 = 0; k0 < k + 64; k0 += 32) {
                std::uint32_t w[4];
                fp4::load_nibble_chunk(op.bytes.data(), static_cast<std::int64_t>(r) * k, k0, k, w);
                for (int e = 0; e < 32; ++e) {
                    const unsigned got = (w[e / 8] >> (4 * (e % 8))) & 0xFu;
                    const std::int64_t kk = k0 + e;
                    const unsigned want = kk < k ? nibble_at(op.bytes, r * static_cast<std::size_t>(k) + kk) : 0u;
                    EXPECT_EQ(got, want) << "K " << k << " row " << r << " element " << kk;
                }
            }
    }
}

TEST(Fp4Fragments, GemmFromTheDeviceBuffersMatchesTheReference) {
    // The kernel's arithmetic on the CPU: each (row, column) walks the 32-wide
    // blocks, takes both operands' chunks with the loader from the buffers the
    // runner uploads (A as M x K, B transposed to N x K, nibbles then scales),
    // forms the block partial from unpacked f16 values as the two mma steps
    // would (exact in fp32), promotes it with the factors and scales by 2^28.
    const std::int64_t m = 9, n = 6, k = 77;
    for (DType type : {DType::mxfp4, DType::e2m1}) {
        const Operand a = make_operand(type, Recipe::normal, 12, 0, m, k, KAxis::cols);
        const Operand b = transposed(make_operand(type, Recipe::normal, 12, 1, k, n, KAxis::rows), k, n);
        const std::int64_t blocks = (k + 31) / 32;
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                float acc = 0.0f;
                double ref = 0, ref_abs = 0;
                for (std::int64_t kk = 0; kk < k; ++kk) {
                    ref += a.values[i * k + kk] * b.values[j * k + kk];
                    ref_abs += std::fabs(a.values[i * k + kk] * b.values[j * k + kk]);
                }
                for (std::int64_t blk = 0; blk < blocks; ++blk) {
                    std::uint32_t wa[4], wb[4];
                    fp4::load_nibble_chunk(a.bytes.data(), i * k, blk * 32, k, wa);
                    fp4::load_nibble_chunk(b.bytes.data(), j * k, blk * 32, k, wb);
                    float partial = 0.0f;
                    for (int q = 0; q < 4; ++q)
                        for (int step = 0; step < 2; ++step) {
                            std::uint32_t ra[2], rb[2];
                            fp4::e2m1x8_to_f16x2(wa[q], step, ra);
                            fp4::e2m1x8_to_f16x2(wb[q], step, rb);
                            for (int r = 0; r < 2; ++r)
                                for (int half = 0; half < 2; ++half)
                                    partial += f16_to_f32(static_cast<std::uint16_t>(ra[r] >> (16 * half))) *
                                               f16_to_f32(static_cast<std::uint16_t>(rb[r] >> (16 * half)));
                        }
                    if (type == DType::mxfp4) {
                        const std::size_t sa_at = (static_cast<std::size_t>(m * k) + 1) / 2 + i * blocks + blk;
                        const std::size_t sb_at = (static_cast<std::size_t>(n * k) + 1) / 2 + j * blocks + blk;
                        acc = fp4::promote_block(acc, partial, fp4::block_scale_factor(a.bytes.at(sa_at)),
                                                 fp4::block_scale_factor(b.bytes.at(sb_at)));
                    } else {
                        acc += partial;
                    }
                }
                const double c = static_cast<double>(acc) * fp4::kProductUnscale;
                EXPECT_LE(std::fabs(c - ref), 0x1p-22 * ref_abs) << name(type) << " " << i << "," << j;
            }
    }
}

TEST(Fp4Fragments, FragmentLoadsAreFreeOfBankConflicts) {
    // One warp's 32-bit loads of a block (chunk blk) of rows g (+ 8) at bytes
    // 4q of 64-byte swizzled rows: 32 lanes, 32 distinct banks.
    using Cfg = mma::TileConfig<128, 128, 64, 2, 4, 4>;
    for (int blk = 0; blk < 4; ++blk)
        for (int base_row : {0, 8, 16, 64}) {
            std::set<int> banks;
            for (int lane = 0; lane < 32; ++lane) {
                const int g = lane >> 2, q = lane & 3;
                const int row = base_row + g;
                const int addr = row * Cfg::kRowBytes + ((blk * 16) ^ (Cfg::swizzle(g) * 16)) + 4 * q;
                EXPECT_EQ(addr, Cfg::smem_offset(row, blk) + 4 * q);
                banks.insert((addr / 4) % 32);
            }
            EXPECT_EQ(banks.size(), 32u) << "block " << blk << " rows from " << base_row;
        }
}
