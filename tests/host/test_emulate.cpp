// `rigel emulate`'s library (src/probes/numerics/emulate.hpp): on inputs whose
// sums are exact in fp32 every path returns the exact product, split or not;
// a split is its chains' fp32 partials added from zero in split order; the
// measured model's truncation shows where rounding to nearest would not; bad
// shapes are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/recipe.hpp"
#include "probes/numerics/emulate.hpp"

using namespace rigel;

namespace {

double exact_dot(const std::vector<double>& a, const std::vector<double>& b, int row, int col, int k) {
    double s = 0;
    for (int i = 0; i < k; ++i) s += a[static_cast<std::size_t>(row) * k + i] * b[static_cast<std::size_t>(col) * k + i];
    return s;
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
    const auto chain = [&](int begin, int end) {
        const std::vector<double> ra(a.values.begin() + begin, a.values.begin() + end),
            rb(b.values.begin() + begin, b.values.begin() + end);
        return emulate::element(p, ra, rb);
    };
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
    EXPECT_EQ(emulate::path_named("wgmma_e4m3"), nullptr);
    EXPECT_NE(emulate::path_names().find("wgmma_bf16"), std::string::npos);
}
