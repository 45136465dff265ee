// Host tests of the layout probe's logic: the documented fragment layouts and
// the probe's judgment (a simulated device that follows the documentation
// passes, one that deviates in a single slot fails).
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "probes/layouts/fragment_maps.hpp"

using namespace rigel;
using namespace rigel::probes;

namespace {

constexpr MmaKind all_kinds[] = {MmaKind::f16_m16n8k16,  MmaKind::bf16_m16n8k16, MmaKind::tf32_m16n8k8,
                                 MmaKind::e4m3_m16n8k32, MmaKind::s8_m16n8k32,   MmaKind::f64_m8n8k4};

// Runs every layout experiment through a simulated device with `maps`.
std::vector<double> simulated_device(MmaKind kind, const FragmentMaps& maps) {
    const MmaShape s = shape_of(kind);
    const std::vector<double> zero_c(std::size_t(32) * s.d_elems, 0.0);
    std::vector<double> out;
    for (int e = 0; e < layout_experiments(kind); ++e) {
        const LayoutInputs in = layout_inputs(kind, e);
        const auto d = simulate_mma(kind, maps, in.a, in.b, zero_c);
        out.insert(out.end(), d.begin(), d.end());
    }
    return out;
}

// The documented maps with two elements of one lane exchanged.
CoordMap swapped(CoordMap base, int lane, int i, int j) {
    return [=](int l, int x) {
        if (l == lane && x == i) return base(l, j);
        if (l == lane && x == j) return base(l, i);
        return base(l, x);
    };
}

}  // namespace

TEST(FragmentMaps, EveryDocumentedMapCoversItsMatrixOnce) {
    for (MmaKind kind : all_kinds) {
        const MmaShape s = shape_of(kind);
        const struct {
            Operand op;
            int elems, rows, cols;
        } ops[] = {
            {Operand::a, s.a_elems, s.m, s.k}, {Operand::b, s.b_elems, s.k, s.n}, {Operand::cd, s.d_elems, s.m, s.n}};
        for (const auto& o : ops) {
            std::set<std::pair<int, int>> seen;
            for (int lane = 0; lane < 32; ++lane)
                for (int i = 0; i < o.elems; ++i) {
                    const Coord c = doc_coord(kind, o.op, lane, i);
                    ASSERT_GE(c.row, 0);
                    ASSERT_LT(c.row, o.rows);
                    ASSERT_GE(c.col, 0);
                    ASSERT_LT(c.col, o.cols);
                    seen.insert({c.row, c.col});
                }
            EXPECT_EQ(seen.size(), std::size_t(o.rows) * o.cols) << name(operand_type(kind));
            EXPECT_EQ(std::size_t(32) * o.elems, std::size_t(o.rows) * o.cols) << name(operand_type(kind));
        }
    }
}

TEST(FragmentMaps, SpotChecksAgainstThePtxIsaTables) {
    // m16n8k16 A: lane 5 (g 1, t 1) element 6 -> row g+8, col 2t+8.
    EXPECT_EQ(doc_coord(MmaKind::f16_m16n8k16, Operand::a, 5, 6), (Coord{9, 10}));
    // m16n8k16 B: lane 6 (g 1, t 2) element 3 -> row 2t+1+8, col g.
    EXPECT_EQ(doc_coord(MmaKind::f16_m16n8k16, Operand::b, 6, 3), (Coord{13, 1}));
    // m16n8k32 8-bit A: element 12 -> row g+8, col 4t+0+16.
    EXPECT_EQ(doc_coord(MmaKind::e4m3_m16n8k32, Operand::a, 7, 12), (Coord{9, 28}));
    // m16n8k8 tf32 A: a1 -> (g+8, t), a2 -> (g, t+4).
    EXPECT_EQ(doc_coord(MmaKind::tf32_m16n8k8, Operand::a, 3, 1), (Coord{8, 3}));
    EXPECT_EQ(doc_coord(MmaKind::tf32_m16n8k8, Operand::a, 3, 2), (Coord{0, 7}));
    // wgmma D: thread 37 (warp 1, lane 5: g 1, t 1), register 6 -> row 16+1+8, col 8+2+0.
    EXPECT_EQ(wgmma_d_coord(37, 6), (Coord{25, 10}));
}

TEST(FragmentMaps, WgmmaAccumulatorMapCoversEveryN) {
    for (int n : {8, 16, 32, 64, 128, 256}) {
        std::set<std::pair<int, int>> seen;
        for (int tid = 0; tid < 128; ++tid)
            for (int i = 0; i < n / 2; ++i) {
                const Coord c = wgmma_d_coord(tid, i);
                ASSERT_LT(c.row, 64);
                ASSERT_LT(c.col, n);
                seen.insert({c.row, c.col});
            }
        EXPECT_EQ(seen.size(), std::size_t(64) * n);
    }
}

TEST(FragmentMaps, KMajorSharedLayoutIsTheCanonicalOne) {
    // ((8,m),(T,2k)):((1T,SBO),(1,LBO)) in bytes, SBO = 128, LBO = rows * 16.
    for (int elem : {1, 2, 4}) {
        const int rows = 64, k = 64 / elem, t = 16 / elem;
        std::set<unsigned> seen;
        for (int r = 0; r < rows; ++r)
            for (int kk = 0; kk < k; ++kk) {
                const unsigned off = kmajor_offset(r, kk, rows, elem);
                const unsigned canonical =
                    unsigned((r % 8) * 16 + (r / 8) * 128 + (kk % t) * elem + (kk / t) * rows * 16);
                EXPECT_EQ(off, canonical);
                seen.insert(off);
            }
        EXPECT_EQ(seen.size(), std::size_t(rows) * k);
        EXPECT_EQ(*seen.rbegin(), unsigned(rows * k * elem - elem));
    }
}

TEST(FragmentMaps, PackingPutsEachElementInItsDocumentedBits) {
    const auto value = [](int r, int c) { return double(r * 3 + c % 5 + 1); };  // small exact integers
    const auto words = pack_fragments(MmaKind::f16_m16n8k16, Operand::a, value);
    ASSERT_EQ(words.size(), std::size_t(32) * 4);
    for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 8; ++i) {
            const std::uint32_t w = words[std::size_t(lane) * 4 + i / 2];
            const auto bits = static_cast<std::uint16_t>(w >> (16 * (i % 2)));
            const Coord c = doc_coord(MmaKind::f16_m16n8k16, Operand::a, lane, i);
            EXPECT_EQ(f16_to_f32(bits), value(c.row, c.col));
        }
    const auto b8 = pack_fragments(MmaKind::s8_m16n8k32, Operand::b, [](int r, int c) { return double(r - c); });
    for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 8; ++i) {
            const auto byte = static_cast<std::int8_t>(b8[std::size_t(lane) * 2 + i / 4] >> (8 * (i % 4)));
            const Coord c = doc_coord(MmaKind::s8_m16n8k32, Operand::b, lane, i);
            EXPECT_EQ(byte, c.row - c.col);
        }
}

TEST(FragmentMaps, EncodingRefusesValuesTheTypeCannotHold) {
    EXPECT_THROW(encode_element(MmaKind::e4m3_m16n8k32, 17.0), std::invalid_argument);
    EXPECT_THROW(encode_element(MmaKind::f16_m16n8k16, 1.0 + std::ldexp(1.0, -11)), std::invalid_argument);
    EXPECT_THROW(encode_element(MmaKind::s8_m16n8k32, 128.0), std::invalid_argument);
    EXPECT_EQ(encode_element(MmaKind::e4m3_m16n8k32, 16.0), 0x58u);
    EXPECT_EQ(encode_element(MmaKind::bf16_m16n8k16, 1.0), 0x3F80u);
}

TEST(LayoutProbe, DigitsAreExactAndNameTheSlot) {
    for (MmaKind kind : all_kinds) {
        const MmaShape s = shape_of(kind);
        for (int e = 0; e < layout_experiments(kind); e += 7) {
            const LayoutInputs in = layout_inputs(kind, e);
            for (double v : in.a) EXPECT_NO_THROW(encode_element(kind, v));
            int ones = 0;
            for (double v : in.b) ones += v == 1.0;
            EXPECT_EQ(ones, 1);
            EXPECT_EQ(in.b.size(), std::size_t(32) * s.b_elems);
        }
    }
}

TEST(LayoutProbe, ADeviceThatFollowsTheDocumentationPasses) {
    for (MmaKind kind : all_kinds) {
        const auto device = simulated_device(kind, documented_maps(kind));
        const LayoutVerdict v = judge_layout(kind, device);
        EXPECT_TRUE(v.ok()) << name(operand_type(kind)) << ": " << v.first_mismatch;
        const MmaShape s = shape_of(kind);
        EXPECT_EQ(v.pairs_expected, long(32) * s.b_elems * s.m);  // every B slot meets one A slot per row
        // The recovered relation names exactly the documented A slot.
        const auto slots = recover_a_slots(kind, device);
        for (int b = 0; b < 32 * s.b_elems; ++b)
            for (int j = 0; j < 32 * s.d_elems; ++j) {
                const int got = slots[std::size_t(b) * 32 * s.d_elems + j];
                const Coord bk = doc_coord(kind, Operand::b, b / s.b_elems, b % s.b_elems);
                const Coord dc = doc_coord(kind, Operand::cd, j / s.d_elems, j % s.d_elems);
                if (bk.col != dc.col) {
                    EXPECT_EQ(got, -1);
                    continue;
                }
                ASSERT_GE(got, 0);
                EXPECT_EQ(doc_coord(kind, Operand::a, got / s.a_elems, got % s.a_elems), (Coord{dc.row, bk.row}));
            }
    }
}

TEST(LayoutProbe, ADeviceThatDeviatesInOneSlotFails) {
    for (MmaKind kind : all_kinds) {
        const MmaShape s = shape_of(kind);
        const FragmentMaps doc = documented_maps(kind);
        if (s.a_elems > 1) {
            FragmentMaps m = doc;
            m.a = swapped(doc.a, 13, 0, 1);
            const LayoutVerdict v = judge_layout(kind, simulated_device(kind, m));
            EXPECT_FALSE(v.ok()) << name(operand_type(kind)) << " A";
            EXPECT_GT(v.mismatches, 0);
            EXPECT_FALSE(v.first_mismatch.empty());
        }
        FragmentMaps m = doc;
        m.cd = swapped(doc.cd, 31, 0, 1);
        EXPECT_FALSE(judge_layout(kind, simulated_device(kind, m)).ok()) << name(operand_type(kind)) << " D";
        // B transposed within the fragment: elements of two lanes exchanged.
        m = doc;
        m.b = [base = doc.b](int l, int i) { return base(l == 0 ? 4 : l == 4 ? 0 : l, i); };
        EXPECT_FALSE(judge_layout(kind, simulated_device(kind, m)).ok()) << name(operand_type(kind)) << " B";
    }
}

TEST(LayoutProbe, WgmmaJudgmentPassesTheDocumentedMapAndFailsOthers) {
    for (int n : {8, 64, 256}) {
        const int regs = n / 2;
        std::vector<double> rows(std::size_t(128) * regs), cols(rows.size());
        for (int tid = 0; tid < 128; ++tid)
            for (int i = 0; i < regs; ++i) {
                const Coord c = wgmma_d_coord(tid, i);
                rows[std::size_t(tid) * regs + i] = 16.0 * (c.row + 1);
                cols[std::size_t(tid) * regs + i] = 16.0 * (c.col + 1);
            }
        EXPECT_TRUE(judge_wgmma_layout(n, rows, cols).ok()) << n;
        auto moved = cols;
        std::swap(moved[0], moved[1]);
        const WgmmaLayoutVerdict v = judge_wgmma_layout(n, rows, moved);
        EXPECT_FALSE(v.ok());
        EXPECT_EQ(v.mismatches, 2);
        auto garbage = rows;
        garbage[5] = 17.0;
        EXPECT_FALSE(judge_wgmma_layout(n, garbage, cols).ok());
    }
}
