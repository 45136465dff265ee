// The narrow tail (src/gemm/narrow_tail.hpp): the plans the ping-pong kernel takes for the shapes
// it was made for, none where the uniform tiles already come out even, and on every shape it
// plans for, columns that cover N exactly once with no narrow column wholly past it.
#include <gtest/gtest.h>

#include "gemm/narrow_tail.hpp"

#include <vector>

#include "cuda/hopper/sm90_types.cuh"

namespace {

using rigel::gemm::busiest_cta_load;
using rigel::gemm::kMinGain;
using rigel::gemm::narrow_tile;
using rigel::gemm::plan_narrow_tail;
using rigel::gemm::plan_wave_fit;

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

TEST(WaveFit, Square3072TakesTheWideTiles) {
    // 24 x 16 = 384 tiles of 192: 3 on the busiest SM (588 columns' worth), where k40's tail leaves 612.
    const auto f = plan_wave_fit(24, 3072, 128, 192, 104, kSms);
    EXPECT_TRUE(f.wide);
    EXPECT_EQ(f.wide_load, 3 * 196);
    EXPECT_EQ(f.tail.busiest_load, 612);
}

TEST(WaveFit, KeepsTheNarrowTailWhereItFitsAsWell) {
    // 4096^3: 22 columns of 192 (the last 64 wide) make 704 tiles, 6 on the busiest SM: 1,176 against
    // the tail's 1,032. 8192^3: 4,116 against 4,128 is under 1 %. 2048^3: 392 against 264.
    for (int s : {2048, 4096, 6144, 8192, 16384}) {
        const auto f = plan_wave_fit(s / 128, s, 128, 192, 104, kSms);
        EXPECT_FALSE(f.wide) << s;
        EXPECT_EQ(f.tail.busiest_load, plan_narrow_tail(s / 128, s, 128, 104, kSms).busiest_load) << s;
    }
    const auto f = plan_wave_fit(64, 8192, 128, 192, 104, kSms);
    EXPECT_EQ(f.wide_load, 21 * 196);
    EXPECT_EQ(f.tail.busiest_load, 4128);
}

TEST(WaveFit, WideOnlyWhereItGainsAndRefusesNonsense) {
    for (int m = 64; m <= 16384; m += 769)
        for (std::int64_t n = 100; n <= 20000; n += 457) {
            const auto f = plan_wave_fit((m + 127) / 128, n, 128, 192, 104, kSms);
            if (f.wide) {
                EXPECT_LE(f.wide_load, (1.0 - kMinGain) * f.tail.busiest_load) << m << " x " << n;
            }
        }
    EXPECT_FALSE(plan_wave_fit(0, 3072, 128, 192, 104, kSms).wide);
    EXPECT_FALSE(plan_wave_fit(24, 3072, 128, 128, 104, kSms).wide);
    EXPECT_FALSE(plan_wave_fit(24, 3072, 128, 192, 104, 0).wide);
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

// The ping-pong kernel's tiles under a plan, as it walks them (pingpong_gemm.cuh's coords: the wide
// tiles by tile_coords over tiles_m x wide_cols, then narrow_tile's): every element of D in exactly
// one tile, every narrow tile starting inside N.
void expect_exact_cover(int m, int n, int group_m = 8, int narrow_bn = 104) {
    const int tiles_m = (m + 127) / 128;
    const auto p = plan_narrow_tail(tiles_m, n, 128, narrow_bn, kSms);
    ASSERT_GT(p.narrow_cols, 0) << m << " x " << n << " takes no narrow tail";
    std::vector<int> covered(static_cast<std::size_t>(tiles_m) * n, 0);  // per tile row and column
    const auto mark = [&](int tm, int col0, int width) {
        ASSERT_GE(tm, 0);
        ASSERT_LT(tm, tiles_m);
        ASSERT_LT(col0, n);
        for (int c = col0; c < col0 + width && c < n; ++c) ++covered[static_cast<std::size_t>(tm) * n + c];
    };
    for (int t = 0; t < tiles_m * p.wide_cols; ++t) {
        int tm = 0, tn = 0;
        rigel::cuda::sm90::tile_coords<rigel::cuda::sm90::Schedule::persistent_grouped>(t, tiles_m, p.wide_cols,
                                                                                         group_m, tm, tn);
        mark(tm, tn * 128, 128);
    }
    for (int t = 0; t < tiles_m * p.narrow_cols; ++t) {
        const auto nt = narrow_tile(t, tiles_m, p.narrow_cols, group_m, p.wide_cols * 128, narrow_bn);
        mark(nt.tm, nt.col0, narrow_bn);
    }
    for (std::size_t i = 0; i < covered.size(); ++i)
        ASSERT_EQ(covered[i], 1) << m << " x " << n << ": tile row " << i / n << ", column " << i % n;
}

TEST(NarrowTail, TheKernelsTilesCoverDExactlyOnce) {
    expect_exact_cover(4096, 4096);
    expect_exact_cover(8192, 8192);
    expect_exact_cover(3001, 3001);  // the GPU test's odd shapes: a last narrow column of 17
    expect_exact_cover(2500, 2100);
    expect_exact_cover(3001, 3001, 1);
    expect_exact_cover(6144, 6144, 16);
    // 64-wide tails: 3072^3 and the odd 3001^2 (a last narrow column of 57), as k42 takes them, and 6144^3.
    expect_exact_cover(3072, 3072, 8, 64);
    expect_exact_cover(3001, 3001, 8, 64);
    expect_exact_cover(6144, 6144, 8, 64);
}

TEST(TailFit, Square3072TakesTheSlabWideTail) {
    // The last 2 columns of 128 as 4 of 64: 528 wide tiles (4 waves), then 96 narrow: 4 x 132 + 68.
    const auto f = rigel::gemm::plan_tail_fit(24, 3072, 128, kSms);
    EXPECT_EQ(f.narrow_bn, 64);
    EXPECT_EQ(f.tail.wide_cols, 22);
    EXPECT_EQ(f.tail.narrow_cols, 4);
    EXPECT_EQ(f.tail.busiest_load, 4 * 132 + 68);
    EXPECT_EQ(plan_narrow_tail(24, 3072, 128, 104, kSms).busiest_load, 612);  // k40's
    // The odd verify shapes reach both widths: 3001^2 the 64-wide tail, 2500 x 2100 the 104-wide one.
    EXPECT_EQ(rigel::gemm::plan_tail_fit(24, 3001, 128, kSms).narrow_bn, 64);
    EXPECT_EQ(rigel::gemm::plan_tail_fit(20, 2100, 128, kSms).narrow_bn, 104);
    EXPECT_GT(rigel::gemm::plan_tail_fit(20, 2100, 128, kSms).tail.narrow_cols, 0);
    // 6144^3: 64 columns would leave the busiest SM 2,316 columns' worth against 104's 2,328, under the 1 %
    // a narrower tail must gain on the wider one: it keeps k40's.
    EXPECT_EQ(plan_narrow_tail(48, 6144, 128, 64, kSms).busiest_load, 2316);
    EXPECT_EQ(plan_narrow_tail(48, 6144, 128, 104, kSms).busiest_load, 2328);
    EXPECT_EQ(rigel::gemm::plan_tail_fit(48, 6144, 128, kSms).narrow_bn, 104);
}

TEST(TailFit, KeepsK40sTailWhereItIsAtLeastAsGood) {
    for (int s : {2048, 4096, 8192, 16384}) {
        const auto f = rigel::gemm::plan_tail_fit(s / 128, s, 128, kSms);
        EXPECT_EQ(f.narrow_bn, 104) << s;
        EXPECT_EQ(f.tail.busiest_load, plan_narrow_tail(s / 128, s, 128, 104, kSms).busiest_load) << s;
    }
    // Over a sweep of shapes: never worse than k40's width, within kMinGain of every width (a narrower
    // one is taken only where it gains that much), and strictly better than k40's where it differs.
    for (int m = 64; m <= 16384; m += 769)
        for (std::int64_t n = 100; n <= 20000; n += 457) {
            const int tm = (m + 127) / 128;
            const auto f = rigel::gemm::plan_tail_fit(tm, n, 128, kSms);
            const std::int64_t k40s = plan_narrow_tail(tm, n, 128, 104, kSms).busiest_load;
            EXPECT_LE(f.tail.busiest_load, k40s) << m << " x " << n;
            if (f.narrow_bn != 104) {
                EXPECT_LE(static_cast<double>(f.tail.busiest_load), (1.0 - rigel::gemm::kMinGain) * k40s)
                    << m << " x " << n;
            }
            for (const int w : rigel::gemm::kTailFitWidths)
                EXPECT_LE((1.0 - rigel::gemm::kMinGain) * f.tail.busiest_load,
                          plan_narrow_tail(tm, n, 128, w, kSms).busiest_load)
                    << m << " x " << n;
            EXPECT_EQ(f.tail.busiest_load, plan_narrow_tail(tm, n, 128, f.narrow_bn, kSms).busiest_load);
        }
}

}  // namespace
