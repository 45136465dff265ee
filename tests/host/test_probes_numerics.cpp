// Host tests of the numerics probe's logic: its rounding and accumulation
// models, its inference rules, and the whole accumulation battery against a
// model tensor core.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <stdexcept>

#include "probes/numerics/numerics_battery.hpp"
#include "probes/numerics/numerics_model.hpp"

using namespace rigel;
using namespace rigel::probes;

TEST(NumericsModel, Fp32RoundingInEveryMode) {
    const double x = 1.0 + 0x1p-24 + 0x1p-26;  // above the tie
    EXPECT_EQ(round_f32(x, Rounding::nearest_even), 1.0 + 0x1p-23);
    EXPECT_EQ(round_f32(x, Rounding::toward_zero), 1.0);
    EXPECT_EQ(round_f32(-x, Rounding::down), -(1.0 + 0x1p-23));
    EXPECT_EQ(round_f32(-x, Rounding::up), -1.0);
    EXPECT_EQ(round_f32(1.0 + 0x1p-24, Rounding::nearest_even), 1.0);  // tie to even
    EXPECT_EQ(round_f32(1.0 + 0x1p-24, Rounding::nearest_away), 1.0 + 0x1p-23);
    EXPECT_EQ(round_f32(1.0 + 3 * 0x1p-24, Rounding::nearest_even), 1.0 + 0x1p-22);  // tie above an odd number
    // Subnormals: 1.5 * 2^-149 is a tie between 2^-149 and 2^-148.
    EXPECT_EQ(round_f32(1.5 * 0x1p-149, Rounding::nearest_even), 0x1p-148);
    EXPECT_EQ(round_f32(1.5 * 0x1p-149, Rounding::toward_zero), 0x1p-149);
    EXPECT_EQ(round_f32(0x1p-140, Rounding::nearest_even, false), 0.0);
    EXPECT_TRUE(std::signbit(round_f32(-0x1p-140, Rounding::nearest_even, false)));
}

TEST(NumericsModel, ExactSumsRoundLikeTheDoubleRoutineAndBeyondIt) {
    SplitMix rng(5);
    for (int i = 0; i < 2000; ++i) {
        const double a = random_f32(rng, -30, 30), b = std::ldexp(random_f32(rng, -5, 5), -20);
        const double x = a + b;  // a double; exact when the spans allow, which the check below requires
        if (x - a != b) continue;
        const auto s = exact_sum({a, b});
        ASSERT_TRUE(s.has_value());
        for (Rounding r : all_roundings) EXPECT_EQ(round_f32(*s, r), round_f32(x, r)) << x;
    }
    // Wider than a double: 2^40 + 2^-40 needs 81 bits.
    const auto wide = exact_sum({0x1p40, 0x1p-40});
    ASSERT_TRUE(wide.has_value());
    EXPECT_FALSE(to_double(*wide).has_value());
    EXPECT_EQ(round_f32(*wide, Rounding::nearest_even), 0x1p40);
    EXPECT_EQ(round_f32(*wide, Rounding::up), 0x1p40 + 0x1p17);
    EXPECT_EQ(round_f32(*exact_sum({-0x1p40, -0x1p-40}), Rounding::down), -(0x1p40 + 0x1p17));
    EXPECT_FALSE(exact_sum({0x1p100, 0x1p-100}).has_value());
}

// A narrower result (MMA-Sim's e8m13 output of Hopper's fp8 wgmma): the
// same rounding at 13 fraction bits, the exact-sum and double routines alike,
// and a model with it gives results of at most 13 fraction bits.
TEST(NumericsModel, ANarrowerResultKeepsItsFractionBits) {
    const double x = 1.0 + 0x1p-13 + 0x1p-20;
    EXPECT_EQ(round_f32(x, Rounding::toward_zero, true, 13), 1.0 + 0x1p-13);
    EXPECT_EQ(round_f32(-x, Rounding::toward_zero, true, 13), -(1.0 + 0x1p-13));
    EXPECT_EQ(round_f32(1.0 + 0x1p-14 + 0x1p-20, Rounding::nearest_even, true, 13), 1.0 + 0x1p-13);
    EXPECT_EQ(round_f32(x, Rounding::toward_zero), static_cast<double>(static_cast<float>(x)));
    const auto s = exact_sum({1.0, 0x1p-13, 0x1p-20});
    ASSERT_TRUE(s);
    EXPECT_EQ(round_f32(*s, Rounding::toward_zero, true, 13), 1.0 + 0x1p-13);

    BlockModel m{.block = 32, .frac_bits = 13, .exp_rule = ExpRule::factors, .out_frac_bits = 13};
    EXPECT_NE(m.describe().find("the result kept to 13 fraction bits"), std::string::npos);
    DotCase dc = empty_case(32);
    for (int k = 0; k < 32; ++k) {
        dc.a[k] = 1.0 + 0.125 * (k % 8);            // e4m3 values 1 .. 1.875
        dc.b[k] = std::ldexp(1.0, -(k % 7)) * 1.5;  // and 1.5 2^-j
    }
    dc.c = 0.3;
    const double d = predict(m, dc, 32, DType::e4m3);
    const double scaled = std::ldexp(d, 13 - exponent_of(d));
    EXPECT_EQ(scaled, std::trunc(scaled)) << d;
    m.out_frac_bits = 23;
    EXPECT_NE(predict(m, dc, 32, DType::e4m3), d);  // this case needs more than 13 bits
}

TEST(NumericsModel, SplitsProductsIntoNormalFactorsOfTheType) {
    const auto big = split_product(DType::e4m3, 0x1p16);
    ASSERT_TRUE(big.has_value());
    EXPECT_EQ(big->first * big->second, 0x1p16);
    EXPECT_TRUE(is_normal_in(DType::e4m3, big->first));
    EXPECT_TRUE(split_product(DType::e4m3, 0x1p-12).has_value());
    EXPECT_FALSE(split_product(DType::e4m3, 0x1p-13).has_value());  // below 2^-6 * 2^-6
    EXPECT_FALSE(split_product(DType::e4m3, 0x1p17).has_value());
    const auto odd = split_product(DType::f16, -0.75 * 0x1p-20);
    ASSERT_TRUE(odd.has_value());
    EXPECT_EQ(odd->first * odd->second, -0.75 * 0x1p-20);
    EXPECT_FALSE(representable(DType::e4m3, 17.0));
    EXPECT_TRUE(representable(DType::tf32, 1.0 + 0x1p-10));
    EXPECT_FALSE(representable(DType::tf32, 1.0 + 0x1p-11));
    // e5m2: 2 fraction bits, normals from 2^-14, subnormals down to 2^-16, largest 57344.
    EXPECT_TRUE(representable(DType::e5m2, 1.75));
    EXPECT_FALSE(representable(DType::e5m2, 1.125));
    EXPECT_TRUE(representable(DType::e5m2, 0x1p-16));
    EXPECT_FALSE(representable(DType::e5m2, 0x1p-17));
    EXPECT_TRUE(representable(DType::e5m2, 57344.0));
    EXPECT_EQ(decode(DType::e5m2, *encode(DType::e5m2, -0.375)), -0.375);
}

TEST(NumericsModel, TypesOutsideTheTensorCorePathsAreRefused) {
    for (DType t : {DType::f32, DType::f64, DType::i8, DType::e2m1}) {
        EXPECT_THROW(facts(t), std::invalid_argument) << name(t);
        EXPECT_THROW(encode(t, 1.0), std::invalid_argument) << name(t);
        EXPECT_THROW(decode(t, 0), std::invalid_argument) << name(t);
    }
}

namespace {

// A stand-in device: the block-FMA model with known parameters, answering
// the probe's crafted cases.
struct ModelDevice {
    BlockModel m;
    int k_inst;
    DType t;
    double operator()(const DotCase& dc) const { return predict(m, dc, k_inst, t); }
};

DotCase pair_case(DType t, int k, int p, int j, int e_big, double small) {
    DotCase dc = empty_case(k);
    const auto big = *split_product(t, std::ldexp(1.0, e_big));
    dc.a[p] = big.first, dc.b[p] = big.second;
    dc.a[p + 1] = -big.first, dc.b[p + 1] = big.second;
    const auto s = *split_product(t, small);
    dc.a[j] = s.first, dc.b[j] = s.second;
    return dc;
}

}  // namespace

TEST(NumericsInference, RecoversTheBlockSizeTheBitsAndTheCut) {
    for (int block : {4, 8, 16}) {
        for (int frac : {13, 23, 25}) {
            for (AlignCut cut : {AlignCut::toward_zero, AlignCut::floor, AlignCut::nearest_even}) {
                ModelDevice dev{BlockModel{}, 16, DType::bf16};
                dev.m.block = block;
                dev.m.frac_bits = frac;
                dev.m.align = cut;
                const int e_big = 20, g_max = 40;
                std::vector<std::vector<bool>> vanished(8, std::vector<bool>(16, false));
                for (int p = 0; p < 16; p += 2)
                    for (int j = 0; j < 16; ++j)
                        if (j != p && j != p + 1)
                            vanished[p / 2][j] =
                                dev(pair_case(DType::bf16, 16, p, j, e_big, std::ldexp(1.0, e_big - g_max))) == 0.0;
                const BlockInference bi = infer_blocks(16, vanished);
                ASSERT_TRUE(bi.consistent);
                EXPECT_EQ(bi.uniform_size, block);
                EXPECT_EQ(bi.groups.size(), std::size_t(16 / block));

                std::vector<bool> kept;
                for (int g = 1; g <= g_max; ++g) {
                    const double s = std::ldexp(1.0, e_big - g);
                    kept.push_back(dev(pair_case(DType::bf16, 16, 0, 2, e_big, s)) == s);
                }
                const GapInference gi = infer_gap(kept);
                EXPECT_EQ(gi.last_kept, frac);
                EXPECT_FALSE(gi.all_kept);
                EXPECT_TRUE(gi.monotone);

                const double q = std::ldexp(1.0, e_big - frac);
                const auto found = infer_align_cut(dev(pair_case(DType::bf16, 16, 0, 2, e_big, 0.75 * q)),
                                                   dev(pair_case(DType::bf16, 16, 0, 2, e_big, -0.75 * q)),
                                                   dev(pair_case(DType::bf16, 16, 0, 2, e_big, -0.25 * q)), q);
                ASSERT_TRUE(found.has_value());
                EXPECT_EQ(*found, cut);
            }
        }
    }
}

TEST(NumericsInference, InconsistentGroupsAreRejected) {
    std::vector<std::vector<bool>> vanished(4, std::vector<bool>(8, false));
    vanished[0][2] = vanished[0][3] = true;  // the pair at 0 sees 0-3
    EXPECT_TRUE(infer_blocks(8, vanished).consistent);
    EXPECT_EQ(infer_blocks(8, vanished).uniform_size, 0);  // 0-3, then 4-5 and 6-7: not uniform
    vanished[1][4] = true;                                 // ... but the pair at 2 sees 2-4
    EXPECT_FALSE(infer_blocks(8, vanished).consistent);
    vanished[1][4] = false;
    vanished[0][5] = true;  // 0-3 plus 5: not a run
    EXPECT_FALSE(infer_blocks(8, vanished).consistent);
    const GapInference gi = infer_gap({true, true, false, true});
    EXPECT_EQ(gi.last_kept, 2);
    EXPECT_FALSE(gi.monotone);
}

TEST(NumericsInference, TheRoundingCasesTellAllFiveModesApart) {
    for (Rounding mode : all_roundings) {
        ModelDevice dev{BlockModel{}, 16, DType::f16};
        dev.m.frac_bits = 26;
        dev.m.out = mode;
        std::vector<DotCase> cases;
        std::vector<double> got;
        for (double sign : {1.0, -1.0})
            for (int x : rounding_offsets) {
                cases.push_back(rounding_case(16, x, sign));
                got.push_back(dev(cases.back()));
            }
        const auto modes = consistent_roundings(cases, got);
        ASSERT_EQ(modes.size(), 1u) << name(mode);
        EXPECT_EQ(modes.front(), mode);
    }
}

TEST(NumericsModel, HostileSumAndTheFamousCheck) {
    DotCase famous = empty_case(128);
    famous.a[0] = 448, famous.b[0] = 1;
    for (int k = 1; k < 128; ++k) famous.a[k] = 0.0625, famous.b[k] = 1;
    EXPECT_EQ(*exact_dot(famous), 455.9375);
    EXPECT_EQ(predict_fp16_sequential(famous), 448.0);
    EXPECT_EQ(predict_fp32_sequential(famous), 455.9375);
    // A 13-bit aligner loses 127 terms 14 binades down; fp32 in any order keeps them.
    BlockModel narrow;
    narrow.block = 32;
    narrow.frac_bits = 13;
    DotCase h = empty_case(128);
    h.a[0] = 256, h.b[0] = 256;
    for (int k = 1; k < 128; ++k) h.a[k] = 2, h.b[k] = 2;  // 2^2 = 2^(16-14)
    EXPECT_EQ(predict(narrow, h, 32, DType::e4m3), 65536.0);
    EXPECT_EQ(predict_fp32_sequential(h), *exact_dot(h));
    BlockModel wide = narrow;
    wide.frac_bits = 25;
    EXPECT_EQ(predict(wide, h, 32, DType::e4m3), *exact_dot(h));
}

TEST(NumericsModel, AlignmentWithoutNormalizationIsNotMonotone) {
    BlockModel m;
    m.block = 16;
    m.frac_bits = 24;
    m.c_in_first_block = true;
    const int e = 20;
    const auto run = [&](double c) {
        DotCase dc = empty_case(16);
        dc.c = c;
        const auto s = *split_product(DType::f16, std::ldexp(1.0, e - 1 - m.frac_bits));
        for (int k = 0; k < 16; ++k) dc.a[k] = s.first, dc.b[k] = s.second;
        return predict(m, dc, 16, DType::f16);
    };
    const double lower = std::ldexp(1.0, e) - std::ldexp(1.0, e - 24);
    EXPECT_GT(run(lower), run(std::ldexp(1.0, e)));  // the larger C gives the smaller sum
}

TEST(NumericsModel, SubnormalHandlingAndPassThrough) {
    BlockModel m;
    DotCase dc = empty_case(16);
    dc.a[0] = 0x1p-24, dc.b[0] = 0x1p15;  // smallest f16 subnormal
    EXPECT_EQ(predict(m, dc, 16, DType::f16), 0x1p-9);
    m.subnormal_in = false;
    EXPECT_EQ(predict(m, dc, 16, DType::f16), 0.0);
    // With no products C still goes through the step: a 13-bit aligner cuts it.
    DotCase c_only = empty_case(16);
    c_only.c = 1.0 + 0x1p-23;
    m.frac_bits = 13;
    EXPECT_EQ(predict(m, c_only, 16, DType::f16), 1.0);
    m.frac_bits = 25;
    EXPECT_EQ(predict(m, c_only, 16, DType::f16), 1.0 + 0x1p-23);
}

// Mixed operands: each is flushed by its own type's smallest normal. 2^-9 is
// subnormal in e4m3 and normal in e5m2; 2^-16 is subnormal in e5m2.
TEST(NumericsModel, EachOperandIsFlushedByItsOwnType) {
    BlockModel m;
    m.block = 32;
    m.subnormal_in = false;
    DotCase dc = empty_case(32);
    dc.a[0] = 256, dc.b[0] = 0x1p-9;
    EXPECT_EQ(predict(m, dc, 32, DType::e4m3, DType::e5m2), 0.5);
    EXPECT_EQ(predict(m, dc, 32, DType::e4m3), 0.0);  // both read as e4m3
    dc.b[0] = 0x1p-16;
    EXPECT_EQ(predict(m, dc, 32, DType::e4m3, DType::e5m2), 0.0);
    dc.a[0] = 0x1p-9, dc.b[0] = 256;
    EXPECT_EQ(predict(m, dc, 32, DType::e4m3, DType::e5m2), 0.0);
}

// An instruction whose products are all zero still passes C through the
// path's output rule, as the H200 machine's "D = C when A*B = 0" rows show:
// fp8 wgmma truncates C to 13 fraction bits toward zero and flushes an
// fp32-subnormal C to +0; the 16-bit paths return C = -0 as +0.
TEST(NumericsModel, AnInstructionWithoutProductsStillRoundsC) {
    const BlockModel fp8{.block = 32,
                         .frac_bits = 13,
                         .subnormal_out = false,
                         .exp_rule = ExpRule::factors,
                         .out_frac_bits = 13};
    const BlockModel half{.block = 16, .frac_bits = 25, .exp_rule = ExpRule::factors};
    const auto c_only = [](int k, double c) {
        DotCase dc = empty_case(k);
        dc.c = c;
        return dc;
    };
    // The device's first change on fp8 wgmma (every committed run).
    EXPECT_EQ(static_cast<float>(predict(fp8, c_only(32, -9.26857217e+27f), 32, DType::e4m3)), -9.2682298e+27f);
    SplitMix rng(11);
    for (int i = 0; i < 500; ++i) {
        const double c = random_f32(rng, -120, 120);
        const double cut = std::ldexp(std::trunc(std::ldexp(c, 13 - exponent_of(c))), exponent_of(c) - 13);
        EXPECT_EQ(predict(fp8, c_only(32, c), 32, DType::e4m3), cut) << c;
        EXPECT_EQ(predict(fp8, c_only(32, c), 32, DType::e5m2), cut) << c;
        EXPECT_EQ(predict(half, c_only(16, c), 16, DType::bf16), c) << c;
        // Chained: an instruction of zeros after one with products changes
        // nothing more (its C already has 13 fraction bits).
        DotCase one = c_only(32, c), chain = c_only(64, c);
        one.a[0] = chain.a[0] = 1.5;
        one.b[0] = chain.b[0] = 2;
        EXPECT_EQ(predict(fp8, chain, 32, DType::e4m3), predict(fp8, one, 32, DType::e4m3)) << c;
    }
    for (const double c : {0x1p-140, -3 * 0x1p-145, -0.0}) {
        const double d = predict(fp8, c_only(32, c), 32, DType::e4m3);
        EXPECT_EQ(d, 0.0) << c;
        EXPECT_FALSE(std::signbit(d)) << c;
    }
    for (const DType t : {DType::f16, DType::bf16, DType::tf32}) {
        const int k = t == DType::tf32 ? 8 : 16;
        const double z = predict(half, c_only(k, -0.0), k, t);
        EXPECT_EQ(z, 0.0);
        EXPECT_FALSE(std::signbit(z)) << name(t);
        EXPECT_EQ(predict(half, c_only(k, 0x1p-140), k, t), 0x1p-140);  // subnormals kept
        EXPECT_EQ(predict(half, c_only(k, -0x1.fffffep127), k, t), -0x1.fffffep127);
    }
    // mma.sync fp8 as sm_90 runs it: C added to the steps' +0 by an fp32 add, -0 becomes +0 too.
    LoweredModel lm;
    lm.step = half;
    EXPECT_FALSE(std::signbit(predict(lm, c_only(32, -0.0), 32)));
}

// Overflow past fp32's range (IEEE 754, 7.4): to nearest gives infinity;
// toward zero the largest finite number; down and up each give infinity on
// their own side and the largest finite number on the other.
TEST(NumericsModel, DirectedRoundingOverflowGivesTheLargestFinite) {
    const double max32 = 0x1.fffffep127, max13 = std::ldexp(2.0 - 0x1p-13, 127);
    const double over = 0x1p128 + 0x1p110;
    const auto s = exact_sum({0x1.fffffep127, 0x1.fffffep127});
    ASSERT_TRUE(s);
    for (const double x : {over, 2 * max32}) {
        EXPECT_EQ(round_f32(x, Rounding::toward_zero), max32);
        EXPECT_EQ(round_f32(-x, Rounding::toward_zero), -max32);
        EXPECT_EQ(round_f32(x, Rounding::down), max32);
        EXPECT_EQ(round_f32(-x, Rounding::down), -INFINITY);
        EXPECT_EQ(round_f32(x, Rounding::up), INFINITY);
        EXPECT_EQ(round_f32(-x, Rounding::up), -max32);
        EXPECT_EQ(round_f32(x, Rounding::nearest_even), INFINITY);
        EXPECT_EQ(round_f32(-x, Rounding::nearest_away), -INFINITY);
        EXPECT_EQ(round_f32(x, Rounding::toward_zero, true, 13), max13);
    }
    EXPECT_EQ(round_f32(*s, Rounding::toward_zero), max32);
    EXPECT_EQ(round_f32(*s, Rounding::toward_zero, true, 13), max13);
    EXPECT_EQ(round_f32(*s, Rounding::down), max32);
    EXPECT_EQ(round_f32(*s, Rounding::up), INFINITY);
    EXPECT_EQ(round_f32(*s, Rounding::nearest_even), INFINITY);
    const auto neg = exact_sum({-0x1.fffffep127, -0x1.fffffep127});
    ASSERT_TRUE(neg);
    EXPECT_EQ(round_f32(*neg, Rounding::toward_zero), -max32);
    EXPECT_EQ(round_f32(*neg, Rounding::up), -max32);
    EXPECT_EQ(round_f32(*neg, Rounding::down), -INFINITY);
    // Just below 2^128 toward zero is no overflow; to nearest it rounds up into one.
    EXPECT_EQ(round_f32(0x1p128 - 0x1p100, Rounding::toward_zero), max32);
    EXPECT_EQ(round_f32(0x1p128 - 0x1p100, Rounding::nearest_even), INFINITY);
    // The model's sum, past the range, truncated: the largest finite number.
    BlockModel m;
    DotCase dc = empty_case(16);
    dc.c = max32;
    dc.a[0] = 0x1p120, dc.b[0] = 0x1p7;
    EXPECT_EQ(predict(m, dc, 16, DType::bf16), max32);
}

// ---- the accumulation battery against a model device ------------------------------------------

namespace {

// A tensor core that follows the block-FMA model exactly: every element of D
// is the model's answer for its row of A, column of B and element of C.
struct ModelGpu {
    NumPath path;
    BlockModel model;

    std::optional<std::vector<float>> operator()(const Batch& bt, int k_total) const {
        const DType t = path.type;
        const int eb = facts(t).elem_bytes;
        const auto value = [&](const std::vector<std::uint8_t>& v, std::size_t at, DType type) {
            std::uint32_t bits = 0;
            for (int i = 0; i < eb; ++i) bits |= std::uint32_t(v[at + i]) << (8 * i);
            return decode(type, bits);
        };
        std::vector<float> out(std::size_t(bt.count) * path.m * path.n);
        for (int e = 0; e < bt.count; ++e)
            for (int m = 0; m < path.m; ++m) {
                DotCase dc = empty_case(k_total);
                bool row_zero = true;
                for (int k = 0; k < k_total; ++k) {
                    dc.a[k] = value(bt.a, ((std::size_t(e) * path.m + m) * k_total + k) * eb, t);
                    row_zero = row_zero && dc.a[k] == 0;
                }
                for (int n = 0; n < path.n; ++n) {
                    const std::size_t at = (std::size_t(e) * path.m + m) * path.n + n;
                    dc.c = bt.c[at];
                    if (!row_zero)  // a zero row contributes no products whatever B holds
                        for (int k = 0; k < k_total; ++k)
                            dc.b[k] = value(bt.b, ((std::size_t(e) * path.n + n) * k_total + k) * eb, b_type(path));
                    out[at] = static_cast<float>(predict(model, dc, path.k_inst, t, b_type(path)));
                }
            }
        return out;
    }
};

const NumPath& path_of(PathId id) {
    for (const NumPath& p : paths)
        if (p.id == id) return p;
    throw std::logic_error("no such path");
}

std::vector<Finding> run_battery(PathId id, const BlockModel& m, std::uint64_t seed = 3) {
    ProbeContext ctx;
    ctx.quick = true;
    ctx.seed = seed;
    const NumPath& p = path_of(id);
    PathProbe probe(p, ctx, ModelGpu{p, m});
    EXPECT_TRUE(probe.available());
    std::vector<Finding> out;
    probe.run_all(out);
    return out;
}

const Finding& find(const std::vector<Finding>& fs, const std::string& quantity_start) {
    for (const Finding& f : fs)
        if (f.quantity.rfind(quantity_start, 0) == 0) return f;
    throw std::logic_error("no finding whose quantity starts with: " + quantity_start);
}

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST(AccumulationBattery, RecoversEveryParameterOfAModelTensorCore) {
    struct Config {
        PathId path;
        int block, frac;
        Rounding out;
        bool c_in;
    };
    const Config configs[] = {{PathId::mma_f16, 4, 24, Rounding::toward_zero, true},
                              {PathId::mma_bf16, 16, 26, Rounding::nearest_even, true},
                              {PathId::mma_tf32, 4, 23, Rounding::toward_zero, false},
                              {PathId::mma_e4m3, 32, 13, Rounding::toward_zero, true},
                              {PathId::wgmma_e4m3, 16, 13, Rounding::toward_zero, true},
                              {PathId::mma_e5m2, 32, 13, Rounding::toward_zero, true},
                              {PathId::wgmma_e5m2, 16, 13, Rounding::toward_zero, true},
                              {PathId::mma_e4m3_e5m2, 32, 13, Rounding::toward_zero, true},
                              {PathId::wgmma_e4m3_e5m2, 16, 13, Rounding::toward_zero, true}};
    for (const Config& c : configs) {
        BlockModel m;
        m.block = c.block;
        m.frac_bits = c.frac;
        m.out = c.out;
        m.c_in_first_block = c.c_in;
        const auto fs = run_battery(c.path, m);
        const std::string what = std::string(path_of(c.path).ptx) + " block " + std::to_string(c.block);
        for (const Finding& f : fs)
            EXPECT_EQ(f.detail.find("WARNING"), std::string::npos) << what << ": " << f.quantity;

        EXPECT_TRUE(starts(find(fs, "product of two inputs").measured, "exact")) << what;
        EXPECT_TRUE(starts(find(fs, "subnormal ").measured, "kept")) << what;
        // C alone is still aligned and rounded: -0 becomes +0, and 13 kept bits cut a random C.
        const Finding& pass = find(fs, "D = C when A*B = 0");
        const int n_c = path_of(c.path).m * 8;
        if (c.frac >= 23) {
            EXPECT_EQ(pass.measured, std::to_string(n_c - 1) + "/" + std::to_string(n_c) + " bit-identical") << what;
            EXPECT_EQ(pass.detail, "first change: C -0 came back as 0") << what;
        } else {
            EXPECT_LT(std::stoi(pass.measured), n_c / 2) << what << pass.measured;
        }

        const Finding& blocks = find(fs, "products fused per alignment step");
        const std::string block_text = c.block == path_of(c.path).k_inst ? " (all products" : " consecutive";
        EXPECT_TRUE(starts(blocks.measured, std::to_string(c.block) + block_text)) << what << blocks.measured;
        if (path_of(c.path).k_inst / c.block > 1) {
            EXPECT_NE(blocks.detail.find("the steps run in sequence"), std::string::npos) << what;
        }

        const Finding& bits = find(fs, "bits kept below");
        EXPECT_TRUE(starts(bits.measured, std::to_string(c.frac) + " bits")) << what << bits.measured;
        EXPECT_TRUE(bits.verified) << what;
        EXPECT_TRUE(starts(find(fs, "how alignment cuts").measured, "truncation toward zero")) << what;
        EXPECT_TRUE(starts(find(fs, "C aligned together").measured, c.c_in ? "yes" : "no")) << what;
        if (c.frac >= 23) {
            EXPECT_TRUE(starts(find(fs, "rounding of the fp32 result").measured, name(c.out))) << what;
        }

        const Finding& hostile = find(fs, "RIGEL's hostile sum");
        EXPECT_EQ(hostile.relation, c.frac >= 23 ? DocRelation::confirms : DocRelation::contradicts)
            << what << hostile.measured;
        const Finding& famous = find(fs, "448 + 127 x 0.0625");
        EXPECT_EQ(famous.measured, "455.9375") << what;
        // 13 kept bits pass it too: it confirms "at least single precision" only beside the hostile sum.
        EXPECT_EQ(famous.relation, c.frac >= 23 ? DocRelation::confirms : DocRelation::fills_in) << what;
        EXPECT_NE(famous.relation, DocRelation::contradicts) << what;

        if (c.c_in) {
            EXPECT_TRUE(starts(find(fs, "monotonicity").measured, "not monotone"))
                << what << find(fs, "monotonicity").detail;
        }

        const Finding& model = find(fs, "the model assembled");
        EXPECT_TRUE(starts(model.measured, "256/256 single, 32/32 chained"))
            << what << ": " << model.measured << " " << model.detail;
        // The same model as typed columns (reproduce/mmasim_report.py reads these).
        ASSERT_TRUE(model.model.has_value()) << what;
        EXPECT_EQ(model.model->block, c.block) << what;
        EXPECT_EQ(model.model->frac_bits, c.frac) << what;
        EXPECT_EQ(model.model->align, "truncation toward zero") << what;
        EXPECT_EQ(model.model->c_joins, c.c_in ? "C aligned with the first block" : "C added after the first block")
            << what;
        EXPECT_TRUE(model.model->lowering.empty()) << what;
        EXPECT_EQ(model.model->single_ok, model.model->single_n) << what;
        EXPECT_EQ(model.model->chain_ok, model.model->chain_n) << what;
    }
}

TEST(AccumulationBattery, ReportsFlushingAndACutToMinusInfinity) {
    BlockModel m;
    m.block = 8;
    m.frac_bits = 24;
    m.align = AlignCut::floor;
    m.subnormal_in = false;
    m.subnormal_out = false;
    const auto fs = run_battery(PathId::mma_bf16, m);
    EXPECT_TRUE(starts(find(fs, "subnormal ").measured, "flushed to zero"));
    EXPECT_TRUE(starts(find(fs, "product in fp32's subnormal range").measured, "flushed to zero"));
    EXPECT_TRUE(starts(find(fs, "fp32-subnormal C").measured, "flushed to zero"));
    EXPECT_TRUE(starts(find(fs, "how alignment cuts").measured, "truncation toward -inf"));
    EXPECT_TRUE(starts(find(fs, "the model assembled").measured, "256/256 single, 32/32 chained"))
        << find(fs, "the model assembled").detail;
}

// RIGEL's check against a narrow accumulator: 13 kept bits return 455.9375,
// which rules out fp16 but says nothing of single precision; the hostile row
// contradicts the statement and the check must not confirm it. An fp16-like
// 11-bit accumulator fails it: a contradiction.
TEST(AccumulationBattery, TheFamousCheckClaimsOnlyWhatItShows) {
    BlockModel m;
    m.block = 32;
    m.frac_bits = 13;
    m.exp_rule = ExpRule::factors;
    m.out_frac_bits = 13;
    const auto fs = run_battery(PathId::wgmma_e4m3, m);
    EXPECT_EQ(find(fs, "RIGEL's hostile sum: ").relation, DocRelation::contradicts);
    const Finding& famous = find(fs, "448 + 127 x 0.0625");
    EXPECT_EQ(famous.measured, "455.9375");
    EXPECT_EQ(famous.relation, DocRelation::fills_in);
    EXPECT_NE(famous.detail.find("rules out an fp16 accumulator"), std::string::npos) << famous.detail;

    m.block = 16;
    m.frac_bits = 10;
    m.out_frac_bits = 23;
    const auto narrow = run_battery(PathId::wgmma_bf16, m);
    EXPECT_NE(find(narrow, "448 + 127 x 0.0625").measured, "455.9375");
    EXPECT_EQ(find(narrow, "448 + 127 x 0.0625").relation, DocRelation::contradicts);
}

// The committed H200 rows (results/h200/*_probes.csv, seed 1), reproduced by
// the battery against the models `rigel emulate` uses: fp8 wgmma changes all
// 512 C, the first (a random C) truncated to 13 fraction bits, and flushes an
// fp32-subnormal C to +0; the 16-bit paths change only C = -0, to +0.
TEST(AccumulationBattery, ReproducesTheDevicesRowsForCWithoutProducts) {
    const BlockModel fp8{.block = 32,
                         .frac_bits = 13,
                         .subnormal_out = false,
                         .exp_rule = ExpRule::factors,
                         .out_frac_bits = 13};
    for (const PathId id : {PathId::wgmma_e4m3, PathId::wgmma_e5m2, PathId::wgmma_e4m3_e5m2}) {
        const auto fs = run_battery(id, fp8, 1);
        const std::string what = path_of(id).ptx;
        EXPECT_EQ(find(fs, "D = C when A*B = 0").measured, "0/512 bit-identical") << what;
        EXPECT_EQ(find(fs, "D = C when A*B = 0").detail,
                  "first change: C -9.26857217e+27 came back as -9.2682298e+27")
            << what;
        EXPECT_EQ(find(fs, "fp32-subnormal C").measured, "flushed to zero: 0; 0") << what;
        // The flush is read from C (no fp8 product reaches fp32's subnormals)
        // and kept in the model, which then matches its own device throughout.
        const Finding& model = find(fs, "the model assembled");
        EXPECT_TRUE(starts(model.measured, "256/256 single, 32/32 chained")) << what << model.detail;
        EXPECT_EQ(model.model->out_frac_bits, 13) << what;
    }
    const BlockModel half{.block = 16, .frac_bits = 25, .exp_rule = ExpRule::factors};
    for (const PathId id : {PathId::mma_f16, PathId::mma_bf16, PathId::wgmma_bf16}) {
        const auto fs = run_battery(id, half, 1);
        const int n = path_of(id).m * 8;
        EXPECT_EQ(find(fs, "D = C when A*B = 0").measured,
                  std::to_string(n - 1) + "/" + std::to_string(n) + " bit-identical");
        EXPECT_EQ(find(fs, "D = C when A*B = 0").detail, "first change: C -0 came back as 0");
        EXPECT_EQ(find(fs, "fp32-subnormal C").measured, "kept (exact): 7.17464814e-43; -6.72623263e-44");
    }
}

// e4m3 x e5m2: the subnormal-input row puts each type's own subnormal in its
// operand (2^-9 in A, e5m2's 2^-16 in B), so a device that flushes subnormal
// inputs flushes all three cases.
TEST(AccumulationBattery, MixedOperandsGetSubnormalsOfTheirOwnType) {
    for (const PathId id : {PathId::mma_e4m3_e5m2, PathId::wgmma_e4m3_e5m2}) {
        BlockModel m;
        m.block = 32;
        m.frac_bits = 13;
        const auto kept = run_battery(id, m);
        const Finding& k = find(kept, "subnormal inputs");
        EXPECT_NE(k.quantity.find("e4m3 2^-9 and its largest subnormal in A, e5m2 2^-16 in B"), std::string::npos)
            << k.quantity;
        EXPECT_EQ(k.measured, "kept (exact): 0.5; 3.5; 0.00390625");
        m.subnormal_in = false;
        const auto flushed = run_battery(id, m);
        EXPECT_TRUE(starts(find(flushed, "subnormal inputs").measured, "flushed to zero"))
            << find(flushed, "subnormal inputs").measured;
        EXPECT_TRUE(starts(find(flushed, "the model assembled").measured, "256/256 single, 32/32 chained"));
    }
    // One type: the row's words as before.
    BlockModel m;
    const auto fs = run_battery(PathId::mma_bf16, m);
    EXPECT_EQ(find(fs, "subnormal bf16 inputs").quantity,
              "subnormal bf16 inputs (2^-133 and the largest subnormal, in A and in B) times 2^100");
}

TEST(AccumulationBattery, TheHostileSumHasOneRowPerGap) {
    const std::string per_gap = "RIGEL's hostile sum at one gap";
    for (const int frac : {24, 13}) {
        BlockModel m;
        m.block = 16;
        m.frac_bits = frac;
        const auto fs = run_battery(PathId::wgmma_e4m3, m);
        const Finding& summary = find(fs, "RIGEL's hostile sum: ");
        const int g_max = std::stoi(summary.quantity.substr(summary.quantity.rfind("..") + 2));
        std::vector<const Finding*> rows;
        for (const Finding& f : fs)
            if (starts(f.quantity, per_gap)) rows.push_back(&f);
        ASSERT_EQ(rows.size(), std::size_t(g_max)) << frac;
        int first_inexact = 0;
        for (int g = 1; g <= g_max; ++g) {
            const Finding& f = *rows[std::size_t(g - 1)];
            EXPECT_EQ(f.swept, g);
            EXPECT_EQ(f.path, summary.path);
            EXPECT_EQ(f.dtype, summary.dtype);
            EXPECT_EQ(f.relation, DocRelation::fills_in);
            EXPECT_TRUE(f.verified);
            // %.9g round-trips an fp32 number, %.17g a float64 one.
            const double got = static_cast<float>(std::stod(f.measured)), sum = std::stod(f.expected);
            EXPECT_DOUBLE_EQ(f.value, std::abs(got - sum) / sum) << "gap " << g;
            if (f.value != 0 && !first_inexact) first_inexact = g;
        }
        // Any fp32 order is exact up to gap 23; 13 kept bits lose the small terms well before it.
        if (frac >= 23)
            EXPECT_TRUE(first_inexact == 0 || first_inexact > 23) << first_inexact;
        else
            EXPECT_TRUE(first_inexact > 0 && first_inexact <= frac + 2) << first_inexact;
        EXPECT_TRUE(std::isnan(summary.swept));  // the summary row is no point of the sweep
    }
}

// mma.sync with fp8 operands as sm_90 runs it: f16 HMMA steps, then C by an
// fp32 add. C is never aligned with the products (the probe's "C survived"),
// a step truncates, and the final add rounds to nearest.
namespace {

// mma.sync fp8 as sm_90 runs it: f16 HMMA steps of 16 products, each the f16 path's measured model.
LoweredModel lowered_f16_steps() {
    LoweredModel lm;
    lm.step.block = 16;
    lm.step.frac_bits = 25;
    lm.step.out = Rounding::toward_zero;
    lm.step.exp_rule = ExpRule::factors;
    return lm;
}

}  // namespace

TEST(NumericsModel, TheLoweredFp8MmaKeepsCApartAndTruncatesEachStep) {
    LoweredModel lm = lowered_f16_steps();
    // C = 2^-12 beside a cancelling pair +-2^16: survives the lowering, lost by one 32-wide aligner.
    DotCase c_apart = empty_case(32);
    c_apart.a[0] = 256, c_apart.b[0] = 256;
    c_apart.a[1] = -256, c_apart.b[1] = 256;
    c_apart.c = std::ldexp(1.0, -12);
    EXPECT_EQ(predict(lm, c_apart, 32), std::ldexp(1.0, -12));
    BlockModel one_step;
    one_step.block = 32;
    one_step.frac_bits = 25;
    EXPECT_EQ(predict(one_step, c_apart, 32, DType::e4m3), 0.0);
    // The step result truncates (1 + 2^-24 + 2^-25 in 24 bits: 1 + 2^-23 is not reached), the add to C = 0 is exact.
    DotCase tail = empty_case(32);
    tail.a[0] = 1, tail.b[0] = 1;
    tail.a[1] = std::ldexp(1.0, -12), tail.b[1] = std::ldexp(1.0, -12);
    tail.a[2] = std::ldexp(1.0, -12), tail.b[2] = std::ldexp(1.0, -13);
    EXPECT_EQ(predict(lm, tail, 32), 1.0);
    // Each step's fp32 result is the next step's C, aligned with its products: 2^-10 alone in the
    // lower half, then a cancelling pair +-2^16 in the upper half truncate it away; taken the
    // other way round (upper half first) the pair cancels first and 2^-10 survives.
    DotCase halves = empty_case(32);
    halves.a[0] = std::ldexp(1.0, -5), halves.b[0] = std::ldexp(1.0, -5);
    halves.a[16] = 256, halves.b[16] = 256;
    halves.a[17] = -256, halves.b[17] = 256;
    EXPECT_EQ(predict(lm, halves, 32), 0.0);
    LoweredModel upper_first = lm;
    upper_first.reversed = true;
    EXPECT_EQ(predict(upper_first, halves, 32), std::ldexp(1.0, -10));
}

TEST(NumericsModel, TheLoweredFp8MmaCanSplitByFragmentRegisterHalves) {
    // k = 0 in the low 16 bits of a fragment register, k = 2 and 3 in its high 16 bits: split by
    // register halves, the high halves' step (first) cancels the pair and 2^-10 survives the
    // next; split into contiguous runs all three share a step and 2^-10 is truncated away.
    LoweredModel lm = lowered_f16_steps();
    lm.reversed = true;
    DotCase dc = empty_case(32);
    dc.a[0] = std::ldexp(1.0, -5), dc.b[0] = std::ldexp(1.0, -5);
    dc.a[2] = 256, dc.b[2] = 256;
    dc.a[3] = -256, dc.b[3] = 256;
    EXPECT_EQ(predict(lm, dc, 32), 0.0);
    lm.split = StepSplit::register_halves;
    EXPECT_EQ(predict(lm, dc, 32), std::ldexp(1.0, -10));
    // The halves cover every k once: products 1 at all 32 k sum exactly.
    lm.reversed = false;
    DotCase ones = empty_case(32);
    for (int k = 0; k < 32; ++k) ones.a[k] = 1, ones.b[k] = std::ldexp(1.0, k % 8);
    EXPECT_EQ(predict(lm, ones, 32), 4.0 * 255.0);
}
