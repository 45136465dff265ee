// The block-scaled fp8 problem and its gate (src/gemm/block_scaled_case.hpp):
// a D summed as k38 sums it (each 128-wide block of K in fp32, added to the
// total by an FFMA times s_A s_B) passes; a D that takes one K block's A scales
// for another's, or leaves an element unwritten, fails; the inputs' blocks
// really differ in size; bad input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "gemm/block_scaled_case.hpp"

using namespace rigel;

namespace {

// D as k38 computes it, up to the tensor core's own rounding inside a block:
// each block's partial rounded to fp32, then acc = fma(partial, s_A s_B, acc).
// `a_block_of` names the K block whose A scale each block uses (the identity
// for the kernel, a wrong map for a flawed one).
std::vector<float> kernel_like(const gemm::BlockScaledCase& c, int (*a_block_of)(int)) {
    std::vector<float> d(static_cast<std::size_t>(c.m) * c.n);
    const int k_blocks = (c.k + 127) / 128;
    for (int i = 0; i < c.m; ++i)
        for (int j = 0; j < c.n; ++j) {
            float acc = 0.0f;
            for (int kb = 0; kb < k_blocks; ++kb) {
                double slice = 0.0;
                for (int p = 128 * kb; p < std::min(c.k, 128 * kb + 128); ++p)
                    slice += c.a.values[static_cast<std::size_t>(i) * c.k + p] *
                             c.b.values[static_cast<std::size_t>(j) * c.k + p];
                const float s = c.a.scale_of(i, 128 * a_block_of(kb)) * c.b.scale_of(j, 128 * kb);
                acc = std::fma(static_cast<float>(slice), s, acc);
            }
            d[static_cast<std::size_t>(i) * c.n + j] = acc;
        }
    return d;
}

int same_block(int kb) { return kb; }
int first_block(int) { return 0; }

}  // namespace

TEST(BlockScaledCase, AKernelLikeSumPassesAndAWrongScaleFails) {
    // 3 blocks of K (the last partial), B's rows in 3 blocks (the last partial), odd M.
    const gemm::BlockScaledCase c = gemm::make_block_scaled_case(DType::e4m3, 37, 260, 300, 5);
    ASSERT_EQ(c.a.scales.size(), 37u * 3);
    ASSERT_EQ(c.b.scales.size(), 3u * 3);
    const Verdict good = gemm::judge_block_scaled(c, kernel_like(c, same_block), 1, 2);
    EXPECT_TRUE(good.pass) << good.reason;
    EXPECT_LT(good.err_max_scaled, good.tolerance);
    const Verdict wrong = gemm::judge_block_scaled(c, kernel_like(c, first_block), 1, 2);
    EXPECT_FALSE(wrong.pass);

    std::vector<float> unwritten = kernel_like(c, same_block);
    std::memcpy(&unwritten[77], &kPoisonWord, 4);
    EXPECT_FALSE(gemm::judge_block_scaled(c, unwritten, 1, 2).pass);
}

TEST(BlockScaledCase, BlocksDifferInSizeAndBadInputIsRefused) {
    const gemm::BlockScaledCase c = gemm::make_block_scaled_case(DType::e5m2, 4, 300, 512, 9);
    float lo = INFINITY, hi = 0;
    for (float s : c.a.scales) lo = std::min(lo, s), hi = std::max(hi, s);
    EXPECT_GE(hi / lo, 16.0f);  // 2^-8 .. 2^8 per block: a spread no one scale would serve
    EXPECT_THROW(gemm::make_block_scaled_case(DType::bf16, 4, 4, 128, 1), std::invalid_argument);
    EXPECT_THROW(gemm::make_block_scaled_case(DType::e4m3, 0, 4, 128, 1), std::invalid_argument);
    EXPECT_THROW(gemm::judge_block_scaled(c, std::vector<float>(3), 1, 1), std::invalid_argument);
}
