// When the ping-pong kernel's epilogue spreads its stores (src/gemm/epilogue_spread.hpp): on every
// tile of a CTA but its last, and only beside main loops of at least kSpreadMinKTiles k-tiles, so
// that the kernel's tail and the short-K products (GPT-2's K = 768) are never slowed by the sleeps.
#include <gtest/gtest.h>

#include "gemm/epilogue_spread.hpp"

namespace {

using rigel::gemm::kSpreadMinKTiles;
using rigel::gemm::spread_epilogue;

// The units a CTA runs (first, first + stride, ...), counted with and without a spread epilogue.
struct Counts {
    int units = 0, spread = 0;
    int last_unit = -1;
    bool last_spread = false;
};
Counts walk(int first, int stride, int units, int k_tiles) {
    Counts c;
    for (int u = first; u < units; u += stride) {
        const bool s = spread_epilogue(u, stride, units, k_tiles);
        ++c.units;
        c.spread += s ? 1 : 0;
        c.last_unit = u;
        c.last_spread = s;
    }
    return c;
}

TEST(EpilogueSpread, EveryTileButTheCtasLastBesideALongMainLoop) {
    // 4096^3 on 128 x 128 tiles: 1,024 tiles on 132 CTAs, 64 k-tiles each.
    for (int cta = 0; cta < 132; ++cta) {
        const Counts c = walk(cta, 132, 1024, 64);
        ASSERT_GE(c.units, 7);
        EXPECT_EQ(c.spread, c.units - 1) << "CTA " << cta;
        EXPECT_FALSE(c.last_spread) << "CTA " << cta << ": its last epilogue is the kernel's tail";
    }
}

TEST(EpilogueSpread, NeverBesideAShortMainLoop) {
    for (int k_tiles : {1, 12, 48, kSpreadMinKTiles - 1}) {
        const Counts c = walk(0, 132, 2000, k_tiles);
        EXPECT_EQ(c.spread, 0) << k_tiles << " k-tiles";
    }
    EXPECT_EQ(walk(0, 132, 2000, kSpreadMinKTiles).spread, walk(0, 132, 2000, kSpreadMinKTiles).units - 1);
}

TEST(EpilogueSpread, OneTileACtaNeverSpreads) {
    // 512^3-like: fewer tiles than CTAs, each CTA's only tile is its last.
    for (int cta = 0; cta < 100; ++cta) EXPECT_EQ(walk(cta, 132, 100, 200).spread, 0);
}

}  // namespace
