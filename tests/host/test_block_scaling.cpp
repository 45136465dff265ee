// fp8 block scaling (src/core/block_scaling.hpp): each block's largest
// magnitude lands on the type's largest value, every element comes back
// within half a unit of the type's precision times its block's scale, a block
// of zeros gets scale 1, partial blocks at the edges are their own blocks, the
// reference is the float64 product of the dequantized operands, and bad input
// is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/block_scaling.hpp"

using namespace rigel;

namespace {

std::vector<float> random_matrix(std::size_t rows, std::size_t cols, std::uint32_t seed, float spread) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)  // rows of very different magnitudes
            x[r * cols + c] = normal(gen) * std::ldexp(1.0f, static_cast<int>((r * 7) % 9) - 4) * spread;
    return x;
}

}  // namespace

TEST(BlockScaling, ElementsComeBackWithinHalfAUnitOfTheirBlock) {
    const std::size_t rows = 130, cols = 300;  // partial blocks in both directions
    const std::vector<float> x = random_matrix(rows, cols, 7, 3.0f);
    for (const auto& [br, bc] : {std::pair{1, 128}, std::pair{128, 128}}) {
        const BlockScaled q = quantize_blocks(x, rows, cols, br, bc);
        EXPECT_EQ(q.scales.size(), ((rows + br - 1) / br) * 3u);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c) {
                const double v = x[r * cols + c], s = q.scale_of(r, c);
                // e4m3 keeps 3 fraction bits: half a unit is 2^-4 of the value's binade, and
                // below 2^-6 (subnormals) a fixed 2^-10; the fp32 division adds a few ulps.
                const double unit = std::max(std::fabs(v) / s * 0x1p-4, 0x1p-10) * s * 1.001;
                EXPECT_LE(std::fabs(q.dequantized(r, c) - v), unit) << r << ", " << c;
            }
        // Each block's largest magnitude is the type's largest value (448), or within a rounding of it.
        for (std::size_t b = 0; b < q.scales.size(); ++b) EXPECT_GT(q.scales[b], 0.0f);
        double largest = 0;
        for (std::size_t r = 0; r < static_cast<std::size_t>(br); ++r)
            for (std::size_t c = 0; c < 128; ++c) largest = std::max(largest, std::fabs(q.values[r * cols + c]));
        EXPECT_EQ(largest, 448.0) << br << " x " << bc;
    }
}

TEST(BlockScaling, ABlockOfZerosHasScaleOneAndE5m2WorksToo) {
    std::vector<float> x(2 * 256, 0.0f);
    for (std::size_t c = 128; c < 256; ++c) x[c] = 1000.0f + static_cast<float>(c);
    const BlockScaled q = quantize_blocks(x, 2, 256, 1, 128, DType::e5m2);
    EXPECT_EQ(q.scales[0], 1.0f);
    EXPECT_EQ(q.values[0], 0.0);
    EXPECT_EQ(q.scale_of(0, 200), 1255.0f / 57344.0f);
    EXPECT_EQ(q.scales[2], 1.0f);  // the second row: all zeros
}

TEST(BlockScaling, BlockMajorScalesPutOneBlockOfKsRowsSideBySide) {
    // 5 rows of 1 x 128 blocks over K = 300 (3 blocks, the last partial), rows
    // padded to 8: block 0's 5 scales and 3 zeros, then block 1's, then block 2's.
    const std::size_t m = 5, k = 300, ld = 8;
    const BlockScaled a = quantize_blocks(random_matrix(m, k, 3, 1.0f), m, k, 1, 128);
    const std::vector<float> t = a.scales_block_major(ld);
    ASSERT_EQ(a.block_grid_rows(), m);
    ASSERT_EQ(t.size(), ld * 3);
    for (std::size_t b = 0; b < 3; ++b) {
        for (std::size_t r = 0; r < m; ++r) EXPECT_EQ(t[b * ld + r], a.scale_of(r, 128 * b)) << r << ", " << b;
        for (std::size_t r = m; r < ld; ++r) EXPECT_EQ(t[b * ld + r], 0.0f) << r << ", " << b;
    }
    // B's 128 x 128 blocks: 260 rows are 3 blocks of rows.
    const BlockScaled b = quantize_blocks(random_matrix(260, k, 4, 0.01f), 260, k, 128, 128);
    const std::vector<float> tb = b.scales_block_major(4);
    for (std::size_t kb = 0; kb < 3; ++kb)
        for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(tb[kb * 4 + j], b.scale_of(128 * j, 128 * kb)) << j << ", " << kb;
    EXPECT_THROW(a.scales_block_major(4), std::invalid_argument);
}

TEST(BlockScaling, TheReferenceIsTheProductOfTheDequantizedOperands) {
    const std::size_t m = 5, n = 3, k = 300;
    const BlockScaled a = quantize_blocks(random_matrix(m, k, 1, 1.0f), m, k, 1, 128);
    const BlockScaled b = quantize_blocks(random_matrix(n, k, 2, 0.01f), n, k, 128, 128);
    const std::vector<double> d = block_scaled_reference(a, b);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            double want = 0;
            for (std::size_t kk = 0; kk < k; ++kk) want += a.dequantized(i, kk) * b.dequantized(j, kk);
            EXPECT_NEAR(d[i * n + j], want, 1e-12 * (std::fabs(want) + 1e-30)) << i << ", " << j;
        }
}

TEST(BlockScaling, RefusesBadInput) {
    const std::vector<float> x(4, 1.0f);
    EXPECT_THROW(quantize_blocks(x, 2, 2, 1, 128, DType::bf16), std::invalid_argument);
    EXPECT_THROW(quantize_blocks(x, 2, 3, 1, 128), std::invalid_argument);
    EXPECT_THROW(quantize_blocks(x, 2, 2, 0, 128), std::invalid_argument);
    std::vector<float> bad = x;
    bad[1] = NAN;
    EXPECT_THROW(quantize_blocks(bad, 2, 2, 1, 128), std::invalid_argument);
    const BlockScaled a = quantize_blocks(x, 2, 2, 1, 128), b = quantize_blocks(x, 1, 4, 1, 128);
    EXPECT_THROW(block_scaled_reference(a, b), std::invalid_argument);
}
