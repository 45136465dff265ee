// The narrow tail (src/gemm/narrow_tail.hpp): the plans the ping-pong kernel takes for the shapes
// it was made for, none where the uniform tiles already come out even, and on every shape it
// plans for, columns that cover N exactly once with no narrow column wholly past it.
#include <gtest/gtest.h>

#include "gemm/narrow_tail.hpp"

namespace {

using rigel::gemm::busiest_cta_load;
using rigel::gemm::kMinGain;
using rigel::gemm::plan_narrow_tail;

constexpr int kSms = 132;

TEST(NarrowTail, Square4096CutsTheLastFourColumnsIntoFiveOf104) {
    const auto p = plan_narrow_tail(32, 4096, 128, 104, kSms);
    EXPECT_EQ(p.wide_cols, 28);
    EXPECT_EQ(p.narrow_cols, 5);
    // 100 CTAs: 8 x 132 uniform; with the tail 7 x 132 + 108.
    EXPECT_EQ(p.uniform_load, 8 * 132);
    EXPECT_EQ(p.busiest_load, 7 * 132 + 108);
}

TEST(NarrowTail, NoneWhereTheWavesAreWhole) {
    // 2048^3: 256 tiles on 132 SMs leave 8 SMs a tile short, which no re-cut of 16 columns mends by 1 %.
    EXPECT_EQ(plan_narrow_tail(16, 2048, 128, 104, kSms).narrow_cols, 0);
    // 4097 x 1000: 33 x 8 = 264 tiles, two whole waves.
    EXPECT_EQ(plan_narrow_tail(33, 1000, 128, 104, kSms).narrow_cols, 0);
    // GPT-2's 16384 x 768: 768 tiles, 5.8 waves, which no tail of 104 evens out.
    EXPECT_EQ(plan_narrow_tail(128, 768, 128, 104, kSms).narrow_cols, 0);
}

TEST(NarrowTail, RefusesNonsense) {
    EXPECT_EQ(plan_narrow_tail(0, 4096, 128, 104, kSms).narrow_cols, 0);
    EXPECT_EQ(plan_narrow_tail(32, 4096, 128, 128, kSms).narrow_cols, 0);
    EXPECT_EQ(plan_narrow_tail(32, 4096, 128, 104, 0).narrow_cols, 0);
}

TEST(NarrowTail, LoadModelDealsUnitsInTurn) {
    // 10 units on 4 CTAs: CTAs 0, 1 take 3, CTAs 2, 3 take 2.
    EXPECT_EQ(busiest_cta_load(10, 5, 0, 0, 4), 15);
    // 6 wide (cost 10) then 3 narrow (cost 1) on 4 CTAs: CTA 0 gets wide 0, wide 4, narrow 8.
    EXPECT_EQ(busiest_cta_load(6, 10, 3, 1, 4), 21);
    // Fewer units than CTAs: one each.
    EXPECT_EQ(busiest_cta_load(3, 7, 0, 0, 132), 7);
}

TEST(NarrowTail, EveryPlanCoversNOnceAndGains) {
    int planned = 0;
    for (int m = 64; m <= 16384; m += 577)
        for (std::int64_t n = 100; n <= 20000; n += 389) {
            const int tiles_m = (m + 127) / 128;
            const auto p = plan_narrow_tail(tiles_m, n, 128, 104, kSms);
            const std::int64_t tiles_n = (n + 127) / 128;
            if (p.narrow_cols == 0) {
                EXPECT_EQ(p.wide_cols, tiles_n);
                EXPECT_EQ(p.busiest_load, p.uniform_load);
                continue;
            }
            ++planned;
            const std::int64_t rest = n - std::int64_t{p.wide_cols} * 128;
            ASSERT_GT(rest, 0) << m << " x " << n;
            EXPECT_GE(std::int64_t{p.narrow_cols} * 104, rest) << m << " x " << n;      // all of N covered
            EXPECT_LT(std::int64_t{p.narrow_cols - 1} * 104, rest) << m << " x " << n;  // no column past it
            EXPECT_LE(static_cast<double>(p.busiest_load), (1.0 - kMinGain) * static_cast<double>(p.uniform_load));
        }
    EXPECT_GT(planned, 10);  // the sweep reaches shapes that take a tail
}

}  // namespace
