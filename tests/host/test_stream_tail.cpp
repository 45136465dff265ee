// The streamed tail's partition (src/gemm/stream_tail.hpp), checked on the
// host for every shape the dispatcher can hand the kernel and some it cannot:
// the pieces cover each k-tile of each tail tile exactly once, a tile's
// pieces are its splits 0 .. splits - 1 in k order, and a CTA's first unit
// only ever starts a tile, so that every chain of the fix-up's waits ends at
// a split 0 (the kernel's argument against deadlock); and the most pieces a
// tile has, which sizes the gathered fix-up's slabs.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "gemm/stream_tail.hpp"

namespace {

using rigel::gemm::StreamPiece;
using rigel::gemm::stream_piece;

void check_partition(int ctas, int tiles, int k_tiles) {
    SCOPED_TRACE(::testing::Message() << ctas << " CTAs, " << tiles << " tiles of " << k_tiles << " k-tiles");
    std::vector<std::vector<StreamPiece>> by_tile(static_cast<std::size_t>(tiles));
    std::vector<int> cover(static_cast<std::size_t>(tiles) * static_cast<std::size_t>(k_tiles), 0);
    for (int c = 0; c < ctas; ++c) {
        int run_length = 0;
        for (int unit : {c, ctas + c}) {
            const StreamPiece p = stream_piece(unit, ctas, tiles, k_tiles);
            if (p.kb == p.ke) continue;
            ASSERT_LT(p.kb, p.ke);
            ASSERT_GE(p.tile, 0);
            ASSERT_LT(p.tile, tiles);
            ASSERT_GE(p.kb, 0);
            ASSERT_LE(p.ke, k_tiles);
            if (unit < ctas) {
                EXPECT_EQ(p.kb, 0) << "a CTA's first unit starts a tile";
                EXPECT_EQ(p.split, 0);
            }
            run_length += p.ke - p.kb;
            for (int kt = p.kb; kt < p.ke; ++kt) ++cover[static_cast<std::size_t>(p.tile) * k_tiles + kt];
            by_tile[static_cast<std::size_t>(p.tile)].push_back(p);
        }
        // Runs of equal length within one.
        const long long w = static_cast<long long>(tiles) * k_tiles;
        EXPECT_GE(run_length, w / ctas);
        EXPECT_LE(run_length, (w + ctas - 1) / ctas);
    }
    for (int v : cover) ASSERT_EQ(v, 1) << "every k-tile once";
    std::size_t most = 0;
    for (const auto& pieces : by_tile) most = std::max(most, pieces.size());
    EXPECT_EQ(rigel::gemm::stream_max_pieces(ctas, tiles, k_tiles), static_cast<int>(most));
    for (const auto& pieces : by_tile) {
        ASSERT_FALSE(pieces.empty());
        const int splits = pieces.front().splits;
        ASSERT_EQ(static_cast<int>(pieces.size()), splits);
        std::vector<const StreamPiece*> in_order(static_cast<std::size_t>(splits), nullptr);
        for (const StreamPiece& p : pieces) {
            ASSERT_EQ(p.splits, splits);
            ASSERT_GE(p.split, 0);
            ASSERT_LT(p.split, splits);
            ASSERT_EQ(in_order[static_cast<std::size_t>(p.split)], nullptr) << "split " << p.split << " twice";
            in_order[static_cast<std::size_t>(p.split)] = &p;
        }
        int at = 0;
        for (const StreamPiece* p : in_order) {
            EXPECT_EQ(p->kb, at) << "splits in k order";
            at = p->ke;
        }
        EXPECT_EQ(at, k_tiles);
    }
}

TEST(StreamTail, PiecesCoverTheTailOnceInSplitOrder) {
    // The dispatcher's shapes on the H200's 132 SMs: 4096^3 (100 of 64), 7B's fwd_down (100 of 172),
    // GPT-2's bwd_qkv_dw (108 of 256) and the K = 3072 products (108 of 48), the verify suite's
    // (76 of 48), and bwd_attn_proj_dw by name (36 of 256: four or five pieces a tile).
    for (const auto& [tiles, k_tiles] : std::vector<std::tuple<int, int>>{
             {100, 64}, {100, 172}, {108, 256}, {108, 48}, {76, 48}, {36, 256}, {11, 256}, {131, 16}, {67, 33}})
        check_partition(132, tiles, k_tiles);
    // Small and uneven cases: runs of one k-tile, runs exactly a tile, tiles not dividing anything.
    for (int ctas = 1; ctas <= 13; ++ctas)
        for (int tiles = 1; tiles < ctas; ++tiles)
            for (int k_tiles = 1; k_tiles <= 9; ++k_tiles)
                if (tiles * k_tiles >= ctas) check_partition(ctas, tiles, k_tiles);
}

}  // namespace

// The split kernels' unit order (split_units_lead): split units first where every CTA has one, the
// whole tiles first where the units are fewer, never for a streamed tail (its pieces are a CTA's
// first units, which the deadlock argument above needs).
using rigel::gemm::split_units_lead;

TEST(StreamTail, SplitUnitsLeadOnlyWhereFewerThanTheCtas) {
    EXPECT_EQ(split_units_lead(132, 132, 132, false), 0);    // GPT-2's MLP dW: 12 tiles x 11 splits
    EXPECT_EQ(split_units_lead(0, 108, 132, false), 0);      // rule 2a: every tile split, no whole tiles
    EXPECT_EQ(split_units_lead(3036, 108, 132, false), 3036);  // the 7B fwd_qkv: 36 tiles x 3 splits
    EXPECT_EQ(split_units_lead(132, 66, 132, false), 132);   // the verify suite's 1544 x 1400 x 6152
    EXPECT_EQ(split_units_lead(924, 264, 132, true), 0);     // 4096^3 streamed: two pieces a CTA
    EXPECT_EQ(split_units_lead(924, 100, 132, true), 0);     // streamed, whatever the count
}

// Every split kernel's units (unit_span, as pingpong_gemm.cuh walks them): the tiles run whole cover all
// of K once, each split tile's units cover its k-tiles once as splits 0 .. splits - 1 in k order, and the
// workspace halves (split_half) of the split tiles, single CTAs or pairs, are distinct and inside the
// plan's 2 per split tile.
using rigel::gemm::split_half;
using rigel::gemm::unit_span;
using rigel::gemm::UnitSpan;

namespace {

void check_units(int tiles, int split_tiles, int splits, int k_tiles, int ctas, bool stream) {
    SCOPED_TRACE(::testing::Message() << tiles << " tiles, the last " << split_tiles << " split " << splits
                                      << " ways, " << k_tiles << " k-tiles, " << ctas << " CTAs"
                                      << (stream ? ", streamed" : ""));
    const int whole = tiles - split_tiles;
    const int split_units = stream ? 2 * ctas : split_tiles * splits;
    const int lead = split_units_lead(whole, split_units, ctas, stream);
    std::vector<int> cover(static_cast<std::size_t>(tiles) * static_cast<std::size_t>(k_tiles), 0);
    std::vector<std::vector<UnitSpan>> by_tile(static_cast<std::size_t>(tiles));
    for (int unit = 0; unit < split_units + whole; ++unit) {
        const UnitSpan u = unit_span(unit, lead, split_units, whole, split_tiles, splits, k_tiles, stream, ctas);
        ASSERT_GE(u.tile, 0);
        ASSERT_LT(u.tile, tiles);
        ASSERT_LE(u.kb, u.ke);
        ASSERT_LE(u.ke, k_tiles);
        if (u.kb == u.ke) continue;  // a streamed tail's empty piece
        if (u.tile < whole) {
            EXPECT_EQ(u.splits, 1) << "unit " << unit;  // a whole tile: all of K
            EXPECT_EQ(u.ke - u.kb, k_tiles) << "unit " << unit;
        } else if (!stream) {
            EXPECT_EQ(u.splits, splits) << "unit " << unit;
        }
        for (int kt = u.kb; kt < u.ke; ++kt) ++cover[static_cast<std::size_t>(u.tile) * k_tiles + kt];
        by_tile[static_cast<std::size_t>(u.tile)].push_back(u);
    }
    for (std::size_t i = 0; i < cover.size(); ++i) ASSERT_EQ(cover[i], 1) << "tile " << i / k_tiles << ", k-tile " << i % k_tiles;
    for (auto& units : by_tile) {
        std::sort(units.begin(), units.end(), [](const UnitSpan& a, const UnitSpan& b) { return a.kb < b.kb; });
        for (std::size_t s = 0; s < units.size(); ++s) {
            EXPECT_EQ(units[s].split, static_cast<int>(s));
            EXPECT_EQ(units[s].splits, static_cast<int>(units.size()));
        }
    }
}

}  // namespace

TEST(SplitUnits, CoverEveryKTileOnceInSplitOrder) {
    check_units(144, 12, 11, 256, 132, false);   // GPT-2's MLP dW: the tail split, its units first
    check_units(3072, 36, 3, 64, 132, false);    // the 7B fwd_qkv: the whole tiles first
    check_units(36, 36, 3, 256, 108, false);     // rule 2a's bwd_attn_proj_dw: every tile split
    check_units(143, 11, 12, 256, 132, false);   // the verify suite's 1544 x 1400 x 16384
    check_units(1024, 100, 2, 64, 132, true);    // 4096^3 streamed
    check_units(36, 36, 2, 256, 132, true);      // bwd_attn_proj_dw streamed over every SM
    for (int tiles = 1; tiles <= 9; ++tiles)
        for (int split_tiles = 1; split_tiles <= tiles; ++split_tiles)
            for (int splits = 2; splits <= 5; ++splits)
                for (int k_tiles : {splits, 7, 13})
                    for (int ctas : {2, 5, 11}) check_units(tiles, split_tiles, splits, k_tiles, ctas, false);
}

TEST(SplitUnits, HalvesOfSplitTilesAreDistinctAndInsideTheWorkspace) {
    // Single CTAs: the tail's tiles after 132 whole ones; a split pair: 18 pair tiles of 2 tile rows
    // (bwd_attn_proj_dw, 36 tiles), every tile split.
    for (const auto& [tiles, whole, cluster_m] : std::vector<std::tuple<int, int, int>>{{144, 132, 1}, {36, 0, 1}, {18, 0, 2}}) {
        const int split_tiles = (tiles - whole) * cluster_m;
        std::vector<int> seen(static_cast<std::size_t>(2 * split_tiles), 0);
        for (int tile = whole; tile < tiles; ++tile)
            for (int rank = 0; rank < cluster_m; ++rank)
                for (int h = 0; h < 2; ++h) {
                    const int half = split_half(tile, whole, cluster_m, rank, h);
                    ASSERT_GE(half, 0);
                    ASSERT_LT(half, 2 * split_tiles);
                    ++seen[static_cast<std::size_t>(half)];
                }
        for (int n : seen) EXPECT_EQ(n, 1);
    }
}
