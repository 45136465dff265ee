// Host tests of how `rigel emulate --against RUNG` follows a rung's division
// of K (src/cli/emulate_rungs.hpp): k37's split count, as its launcher
// chooses it, and its sum of the partials from the first one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "cli/emulate_rungs.hpp"
#include "probes/numerics/emulate.hpp"

using namespace rigel;
using namespace rigel::cli;

namespace {

std::uint32_t bits(float v) {
    std::uint32_t u = 0;
    std::memcpy(&u, &v, 4);
    return u;
}

}  // namespace

// choose_splits in src/cuda/hopper/k37_wgmma_splitk.cu on the shapes its
// opening comment works through, and on the emulate command's default.
TEST(EmulateRungs, K37SplitsAsItsLauncherChooses) {
    // 1000 x 1030: 8 x 5 = 40 tiles of 128 x 256; 132 / 40 = 3, and 18 k-tiles of 64 allow 4.
    EXPECT_EQ(k37_splits(DType::bf16, 1000, 1030, 1104, 132), 3);
    EXPECT_EQ(k37_splits(DType::bf16, 1000, 1030, 1104, 114), 2);  // fewer SMs, fewer splits
    EXPECT_EQ(k37_splits(DType::bf16, 16, 4096, 4096, 132), 8);     // 16 tiles
    EXPECT_EQ(k37_splits(DType::bf16, 128, 7168, 16384, 132), 4);   // 28 tiles
    EXPECT_EQ(k37_splits(DType::e4m3, 16, 4096, 4096, 132), 8);     // 32 k-tiles of 128: 4 each
    EXPECT_EQ(k37_splits(DType::e5m2, 16, 4096, 1024, 132), 2);     // 8 k-tiles of 128
    EXPECT_EQ(k37_splits(DType::f16, 16, 4096, 1024, 132), 4);      // 16 k-tiles of 64
    EXPECT_EQ(k37_splits(DType::bf16, 16, 4096, 100, 132), 1);      // 2 k-tiles: fewer than 4 a split
    EXPECT_EQ(k37_splits(DType::bf16, 4096, 4096, 4096, 132), 1);   // 512 tiles fill the SMs
    EXPECT_EQ(k37_splits(DType::bf16, 1408, 3072, 8192, 132), 1);   // exactly 132 tiles
    EXPECT_THROW(k37_splits(DType::bf16, 16, 16, 16, 0), std::invalid_argument);
}

TEST(EmulateRungs, EachRungsSplitOfK) {
    const RungSplit k37 = rung_split("k37_wgmma_splitk", DType::bf16, 1000, 1030, 1104, 132);
    EXPECT_EQ(k37.split.splits, 3);
    EXPECT_EQ(k37.split.k_tile, 64);
    EXPECT_EQ(k37.split.share, emulate::Share::floor);
    EXPECT_EQ(k37.split.reduction, emulate::Reduction::serial);
    EXPECT_TRUE(k37.from_first);
    EXPECT_EQ(rung_split("k37_wgmma_splitk", DType::e4m3, 16, 4096, 4096, 132).split.k_tile, 128);
    EXPECT_EQ(rung_split("k37_wgmma_splitk", DType::bf16, 4096, 4096, 4096, 132).split.splits, 1);

    const RungSplit promoted = rung_split("k34_wgmma_fp8_promoted", DType::e4m3, 1000, 1030, 1104, 0);
    EXPECT_EQ(promoted.split.splits, 9);  // a k-tile of 128 each, the last partial
    EXPECT_EQ(promoted.split.k_tile, 128);
    EXPECT_FALSE(promoted.from_first);
    const RungSplit whole = rung_split("k32_wgmma_persistent", DType::bf16, 1000, 1030, 1104, 0);
    EXPECT_EQ(whole.split.splits, 1);
    EXPECT_FALSE(whole.from_first);
}

// The sum from the first partial differs from the sum from +0 only where
// every partial is -0. wgmma_bf16's chain gives -0 where its products are all
// negative and below fp32's range (rounded toward zero).
TEST(EmulateRungs, SumFromTheFirstPartialKeepsANegativeZero) {
    const emulate::Path* p = emulate::path_named("wgmma_bf16");
    ASSERT_NE(p, nullptr);
    const int m = 3, n = 2, k = 256;
    const emulate::KSplit split{.splits = 2, .k_tile = 64};  // K 0..127 and 128..255
    const double tiny = std::ldexp(1.0, -80);                // its products: 2^-160
    std::vector<double> a(static_cast<std::size_t>(m) * k, tiny), b(static_cast<std::size_t>(n) * k, -tiny);
    for (int kk = 128; kk < k; ++kk) a[static_cast<std::size_t>(1) * k + kk] = 0;  // row 1: second partial +0
    a[static_cast<std::size_t>(2) * k + 200] = 1;                                   // row 2: second partial -2^-80
    std::vector<float> d = emulate::gemm(*p, a, b, m, n, k, split, 1);
    for (int j = 0; j < n; ++j) {
        EXPECT_EQ(bits(d[static_cast<std::size_t>(j)]), 0u) << "from +0: -0 + -0 reads +0";
        EXPECT_EQ(bits(d[static_cast<std::size_t>(n) + j]), 0u);
    }
    const float row2 = d[static_cast<std::size_t>(2) * n];
    ASSERT_LT(row2, 0.0f);

    sum_from_first(*p, a, b, m, n, k, split, d);
    for (int j = 0; j < n; ++j) {
        EXPECT_EQ(bits(d[static_cast<std::size_t>(j)]), 0x80000000u) << "every partial -0: the sum is -0";
        EXPECT_EQ(bits(d[static_cast<std::size_t>(n) + j]), 0u) << "-0 + +0 is +0 in either order";
        EXPECT_EQ(bits(d[static_cast<std::size_t>(2) * n + j]), bits(row2)) << "a nonzero sum is untouched";
    }

    // Unsplit, nothing changes.
    std::vector<float> whole = emulate::gemm(*p, a, b, m, n, k, {}, 1);
    const std::vector<float> before = whole;
    sum_from_first(*p, a, b, m, n, k, {}, whole);
    EXPECT_EQ(std::memcmp(whole.data(), before.data(), whole.size() * sizeof(float)), 0);
    EXPECT_THROW(sum_from_first(*p, a, b, m, n, k, {.splits = 2, .share = emulate::Share::ceil}, d),
                 std::invalid_argument);
}
