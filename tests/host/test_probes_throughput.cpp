// Host tests of the throughput probe's arithmetic: the checksums its kernels
// must return.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "probes/numerics/numerics_model.hpp"
#include "probes/throughput/throughput_arith.hpp"

using namespace rigel;
using namespace rigel::probes;

TEST(ThroughputArith, FmaChecksumIsWhatTheKernelComputes) {
    for (bool verify : {true, false})
        for (int lanes : {1, 2}) {
            const long long threads = 37, iters = 5;
            const int chains = 3, unroll = 2;
            double total = 0;
            for (long long t = 0; t < threads; ++t)
                for (int j = 0; j < chains; ++j) {
                    double acc = double((t + j) & 7);
                    for (long long it = 0; it < iters; ++it)
                        for (int u = 0; u < unroll; ++u) acc = (acc * 1 + 1) * 1 + (verify ? 1 : -1);
                    total += lanes * acc;
                }
            EXPECT_EQ(fma_checksum(threads, chains, lanes, unroll, iters, verify), total);
        }
}

TEST(ThroughputArith, ProductSumIsTheSumOfTheProductMatrix) {
    SplitMix rng(9);
    const int m = 16, n = 8, k = 32;
    std::vector<double> a(m * k), b(n * k);
    for (auto& x : a) x = rng.uniform(-2, 2);
    for (auto& x : b) x = rng.uniform(-2, 2);
    double brute = 0;
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c)
            for (int kk = 0; kk < k; ++kk) brute += a[r * k + kk] * b[c * k + kk];
    EXPECT_EQ(product_sum(a, m, b, n, k), brute);
    EXPECT_EQ(matrix_checksum(4, brute, 4, 3, true), 4 * 25 * brute);
    EXPECT_EQ(matrix_checksum(4, brute, 4, 1000, false), 4 * brute);
}

TEST(ThroughputArith, ChainStartsAddTheirIndexPerElement) {
    // 3 threads, 4 chains of 2 elements each: every element of chain c holds c.
    double brute = 0;
    for (int t = 0; t < 3; ++t)
        for (int c = 0; c < 4; ++c)
            for (int e = 0; e < 2; ++e) brute += c;
    EXPECT_EQ(chain_start_sum(3, 4, 2), brute);
    EXPECT_EQ(chain_start_sum(5, 1, 8), 0.0);
}

TEST(ThroughputArith, WgmmaOperandSeedsAreThoseOfTheCommittedRuns) {
    // seed * 0x20000 + index * 1000 + N, the index being the type's place in
    // (bf16, f16, tf32, e4m3, s8): the seeds every committed run used.
    EXPECT_EQ(wgmma_operand_seed(1, DType::bf16, 8), 131080u);
    EXPECT_EQ(wgmma_operand_seed(1, DType::f16, 256), 132328u);
    EXPECT_EQ(wgmma_operand_seed(1, DType::tf32, 256), 133328u);
    EXPECT_EQ(wgmma_operand_seed(1, DType::e4m3, 64), 134136u);
    EXPECT_EQ(wgmma_operand_seed(1, DType::i8, 256), 135328u);
    EXPECT_EQ(wgmma_operand_seed(0x1234, DType::e4m3, 128), 0x1234ull * 0x20000 + 3128);
    EXPECT_THROW(wgmma_operand_seed(1, DType::e5m2, 256), std::invalid_argument);
}
