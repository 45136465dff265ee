// `rigel emulate`'s library (src/probes/numerics/emulate.hpp): on inputs whose
// sums are exact in fp32 every path returns the exact product, split or not;
// a split is its chains' fp32 partials added from zero in split order (or
// pairwise, in ceil shares, as named); infer() recovers a hidden split from D
// alone; the
// measured model's truncation shows where rounding to nearest would not; bad
// shapes are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/recipe.hpp"
#include "probes/numerics/emulate.hpp"
#include "probes/numerics/numerics_model.hpp"

using namespace rigel;

namespace {

double exact_dot(const std::vector<double>& a, const std::vector<double>& b, int row, int col, int k) {
    double s = 0;
    for (int i = 0; i < k; ++i) s += a[static_cast<std::size_t>(row) * k + i] * b[static_cast<std::size_t>(col) * k + i];
    return s;
}

// One unsplit chain over [begin, end) of K, of row 0 of A and of B.
float chain_of(const emulate::Path& p, const Operand& a, const Operand& b, int begin, int end) {
    const std::vector<double> ra(a.values.begin() + begin, a.values.begin() + end),
        rb(b.values.begin() + begin, b.values.begin() + end);
    return emulate::element(p, ra, rb);
}

}  // namespace

TEST(Emulate, EveryPathIsExactWhereFp32SumsAre) {
    const int m = 7, n = 9, k = 300;  // a partial last k-tile and instruction
    for (const emulate::Path& p : emulate::paths()) {
        const Operand a = make_operand(p.type, Recipe::small_int, 3, 0, m, k, KAxis::cols);
        const Operand b = make_operand(p.type, Recipe::small_int, 3, 1, n, k, KAxis::cols);
        for (const int splits : {1, 3}) {
            const std::vector<float> d = emulate::gemm(p, a.values, b.values, m, n, k, {.splits = splits}, 2);
            for (int i = 0; i < m; ++i)
                for (int j = 0; j < n; ++j)
                    EXPECT_EQ(d[static_cast<std::size_t>(i) * n + j], exact_dot(a.values, b.values, i, j, k))
                        << p.name << " splits " << splits << " at " << i << ", " << j;
        }
    }
}

TEST(Emulate, ASplitIsItsChainsAddedInFp32FromZero) {
    const emulate::Path& p = *emulate::path_named("wgmma_bf16");
    const int k = 200;  // 4 k-tiles of 64 (the last partial): two splits of 2
    const Operand a = make_operand(p.type, Recipe::normal, 5, 0, 1, k, KAxis::cols);
    const Operand b = make_operand(p.type, Recipe::normal, 5, 1, 1, k, KAxis::cols);
    const auto chain = [&](int begin, int end) { return chain_of(p, a, b, begin, end); };
    const float first = chain(0, 128), second = chain(128, k);
    const float two = emulate::element(p, a.values, b.values, {.splits = 2});
    EXPECT_EQ(two, (0.0f + first) + second);
    // Unsplit, the chain runs on through all of K: not in general the same bits.
    EXPECT_EQ(emulate::element(p, a.values, b.values), chain(0, k));
}

TEST(Emulate, TheMeasuredTruncationWhereRoundingToNearestWouldRoundUp) {
    // 1 + 3 2^-25: the model keeps 25 bits below 1's leading bit, so the sum is
    // exact inside the instruction, then rounded toward zero to fp32: 1. An
    // fp32 sum rounded to nearest gives 1 + 2^-23.
    const emulate::Path& p = *emulate::path_named("mma_sync_bf16");
    std::vector<double> a(16, 0.0), b(16, 0.0);
    a[0] = 1.0, b[0] = 1.0;
    a[1] = 3 * std::ldexp(1.0, -25), b[1] = 1.0;
    EXPECT_EQ(emulate::element(p, a, b), 1.0f);
    EXPECT_EQ(static_cast<float>(1.0 + 3 * std::ldexp(1.0, -25)), 1.0f + std::ldexp(1.0f, -23));
}

TEST(Emulate, RefusesBadShapesAndUnknownPaths) {
    const emulate::Path& p = emulate::paths().front();
    const std::vector<double> four(4, 1.0), three(3, 1.0);
    EXPECT_THROW(emulate::gemm(p, four, three, 2, 1, 2), std::invalid_argument);
    EXPECT_THROW(emulate::gemm(p, four, four, 0, 2, 2), std::invalid_argument);
    EXPECT_THROW(emulate::element(p, four, three), std::invalid_argument);
    EXPECT_THROW(emulate::element(p, four, four, {.splits = 0}), std::invalid_argument);
    EXPECT_EQ(emulate::path_named("wgmma_e5m2_x"), nullptr);
    // The fp8 wgmma model: reproduced by the accumulation probe on the H200 machine
    // for e4m3 and for e5m2 (the same parameters).
    ASSERT_NE(emulate::path_named("wgmma_e4m3"), nullptr);
    EXPECT_TRUE(emulate::path_named("wgmma_e4m3")->measured);
    ASSERT_NE(emulate::path_named("wgmma_e5m2"), nullptr);
    EXPECT_TRUE(emulate::path_named("wgmma_e5m2")->measured);
    EXPECT_TRUE(emulate::path_named("wgmma_bf16")->measured);
    EXPECT_NE(emulate::path_names().find("wgmma_bf16"), std::string::npos);
}

TEST(Emulate, SharesAndReductionsCutAndAddAsNamed) {
    const emulate::Path& p = *emulate::path_named("wgmma_bf16");
    const int k = 5 * 64;  // 5 k-tiles in 3 splits: floor 1, 1, 3; ceil 2, 2, 1
    const Operand a = make_operand(p.type, Recipe::normal, 9, 0, 1, k, KAxis::cols);
    const Operand b = make_operand(p.type, Recipe::normal, 9, 1, 1, k, KAxis::cols);
    const auto chain = [&](int begin, int end) { return chain_of(p, a, b, begin, end); };
    using emulate::Reduction;
    using emulate::Share;
    EXPECT_EQ(emulate::element(p, a.values, b.values, {.splits = 3}),
              ((0.0f + chain(0, 64)) + chain(64, 128)) + chain(128, k));
    EXPECT_EQ(emulate::element(p, a.values, b.values, {.splits = 3, .share = Share::ceil}),
              ((0.0f + chain(0, 128)) + chain(128, 256)) + chain(256, k));
    EXPECT_EQ(emulate::element(p, a.values, b.values,
                               {.splits = 3, .share = Share::ceil, .reduction = Reduction::pairwise}),
              0.0f + (chain(0, 128) + (chain(128, 256) + chain(256, k))));
    EXPECT_EQ(emulate::describe({.splits = 3, .k_tile = 128, .share = Share::ceil, .reduction = Reduction::pairwise}),
              "K split 3 ways in k-tiles of 128 (ceil shares), partials added pairwise");
}

// infer() finds a hidden way of splitting K from D alone, and says so when
// nothing in its space explains D.
TEST(Emulate, InferFindsAHiddenSplitFromTheOutputAlone) {
    const emulate::Path* p = emulate::path_named("wgmma_bf16");
    const int m = 24, n = 20, k = 1000;
    const Operand a = make_operand(p->type, Recipe::normal, 11, 0, m, k, KAxis::cols);
    const Operand b = make_operand(p->type, Recipe::normal, 11, 1, n, k, KAxis::cols);
    const emulate::KSplit hidden{.splits = 5, .k_tile = 32, .share = emulate::Share::ceil,
                                 .reduction = emulate::Reduction::pairwise};
    const std::vector<float> d = emulate::gemm(*p, a.values, b.values, m, n, k, hidden, 2);
    const emulate::Path* const candidates[] = {p};
    const auto fits = emulate::infer(candidates, a.values, b.values, m, n, k, d, 64, 3, 32, 2);
    ASSERT_FALSE(fits.empty());
    EXPECT_EQ(fits[0].identical, 64);
    EXPECT_EQ(fits[0].sampled, 64);
    // The winner computes every element of D as the hidden split does (an
    // equivalent cut of K may win: the same ranges named another way).
    EXPECT_EQ(emulate::gemm(*p, a.values, b.values, m, n, k, fits[0].split, 2), d);
    EXPECT_LT(fits.back().identical, 64);

    // D rounded to nearest from the exact sums: no chain of truncating instructions gives all of it.
    std::vector<float> exact(d.size());
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
            exact[static_cast<std::size_t>(i) * n + j] = static_cast<float>(exact_dot(a.values, b.values, i, j, k));
    const auto none = emulate::infer(candidates, a.values, b.values, m, n, k, exact, 64, 3, 32, 2);
    EXPECT_LT(none[0].identical, 64);
    EXPECT_THROW(emulate::infer(candidates, a.values, b.values, m, n, k, std::vector<float>(3), 8), std::invalid_argument);
}

// element()'s chain adds each block's aligned terms in a double where the
// model allows it (exact there); it must give the model's exact-sum
// prediction bit for bit, hostile exponent spreads and partial instructions
// included.
TEST(Emulate, TheFastChainIsTheMeasuredModelBitForBit) {
    int checked = 0;
    for (const emulate::Path& p : emulate::paths())
        for (const Recipe r : {Recipe::normal, Recipe::hostile, Recipe::uniform})
            for (std::uint64_t seed = 1; seed <= 200; ++seed) {
                const int k = 1 + static_cast<int>((seed * 37) % 300);
                const Operand a = make_operand(p.type, r, seed, 0, 1, k, KAxis::cols);
                const Operand b = make_operand(p.type, r, seed, 1, 1, k, KAxis::cols);
                const float fast = emulate::element(p, a.values, b.values);
                const int len = (k + p.k_inst - 1) / p.k_inst * p.k_inst;
                probes::DotCase dc{std::vector<double>(static_cast<std::size_t>(len), 0.0),
                                   std::vector<double>(static_cast<std::size_t>(len), 0.0), 0.0};
                std::copy(a.values.begin(), a.values.end(), dc.a.begin());
                std::copy(b.values.begin(), b.values.end(), dc.b.begin());
                const float model = static_cast<float>(probes::predict(p.model, dc, p.k_inst, p.type));
                ASSERT_EQ(std::memcmp(&fast, &model, sizeof fast), 0)
                    << p.name << " recipe " << name(r) << " seed " << seed << ": " << fast << " vs " << model;
                ++checked;
            }
    EXPECT_EQ(checked, static_cast<int>(emulate::paths().size()) * 3 * 200);
}

// An instruction with no products still passes its C through the path's
// output rule, as the H200 machine's "D = C when A*B = 0" rows measured: the
// fp8 wgmma model truncates C to 13 fraction bits toward zero and flushes an
// fp32-subnormal C to +0; the 16-bit models return C = -0 as +0 and keep
// every other C.
TEST(Emulate, CWithoutProductsGoesThroughThePathsRounding) {
    const auto c_only = [](const emulate::Path& p, double c) {
        probes::DotCase dc = probes::empty_case(p.k_inst);
        dc.c = c;
        return probes::predict(p.model, dc, p.k_inst, p.type);
    };
    for (const char* fp8 : {"wgmma_e4m3", "wgmma_e5m2"}) {
        const emulate::Path& p = *emulate::path_named(fp8);
        EXPECT_EQ(static_cast<float>(c_only(p, -9.26857217e+27f)), -9.2682298e+27f) << fp8;  // the device's answer
        probes::SplitMix rng(7);
        for (int i = 0; i < 1000; ++i) {
            const double c = probes::random_f32(rng, -126, 127);
            const int e = probes::exponent_of(c);
            EXPECT_EQ(c_only(p, c), std::ldexp(std::trunc(std::ldexp(c, 13 - e)), e - 13)) << fp8 << " " << c;
        }
        for (const double c : {0x1p-140, -3 * 0x1p-145, -0.0}) {
            EXPECT_EQ(c_only(p, c), 0.0) << fp8 << " " << c;
            EXPECT_FALSE(std::signbit(c_only(p, c))) << fp8 << " " << c;
        }
    }
    for (const char* half : {"mma_sync_bf16", "mma_sync_f16", "wgmma_bf16", "wgmma_f16"}) {
        const emulate::Path& p = *emulate::path_named(half);
        EXPECT_FALSE(std::signbit(c_only(p, -0.0))) << half;
        for (const double c : {0x1p-149, 0x1p-126 - 0x1p-149, 1.0 + 0x1p-23, -0x1.fffffep127, double(-9.26857217e+27f)})
            EXPECT_EQ(c_only(p, c), c) << half << " " << c;
    }
}

// A chain with whole instructions of zeros inside it: the fast chain rounds
// the running sum through them as probes::predict does.
TEST(Emulate, TheFastChainRoundsThroughInstructionsOfZeros) {
    for (const emulate::Path& p : emulate::paths())
        for (std::uint64_t seed = 1; seed <= 50; ++seed) {
            const int k = 6 * p.k_inst;
            Operand a = make_operand(p.type, Recipe::normal, seed, 0, 1, k, KAxis::cols);
            const Operand b = make_operand(p.type, Recipe::normal, seed, 1, 1, k, KAxis::cols);
            for (const int inst : {0, 2, 5})
                if ((seed >> (inst % 3)) & 1) std::fill_n(a.values.begin() + inst * p.k_inst, p.k_inst, 0.0);
            const float fast = emulate::element(p, a.values, b.values);
            probes::DotCase dc{a.values, b.values, 0.0};
            const float model = static_cast<float>(probes::predict(p.model, dc, p.k_inst, p.type));
            ASSERT_EQ(std::memcmp(&fast, &model, sizeof fast), 0) << p.name << " seed " << seed;
        }
}
