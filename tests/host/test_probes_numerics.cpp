// Host tests of the probes' pure logic: the documented fragment layouts, the
// layout probe's judgment (a simulated device that follows the documentation
// passes, one that deviates in a single slot fails), the numerics probe's
// rounding and accumulation models and its inference rules, and the
// throughput probe's arithmetic.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <set>
#include <utility>

#include "cuda/probes/layouts_fragment_maps.hpp"
#include "cuda/probes/numerics_battery.hpp"
#include "cuda/probes/numerics_model.hpp"
#include "cuda/probes/throughput_arith.hpp"

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
            EXPECT_EQ(seen.size(), std::size_t(o.rows) * o.cols) << dtype_name(kind);
            EXPECT_EQ(std::size_t(32) * o.elems, std::size_t(o.rows) * o.cols) << dtype_name(kind);
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
        EXPECT_TRUE(v.ok()) << dtype_name(kind) << ": " << v.first_mismatch;
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
            EXPECT_FALSE(v.ok()) << dtype_name(kind) << " A";
            EXPECT_GT(v.mismatches, 0);
            EXPECT_FALSE(v.first_mismatch.empty());
        }
        FragmentMaps m = doc;
        m.cd = swapped(doc.cd, 31, 0, 1);
        EXPECT_FALSE(judge_layout(kind, simulated_device(kind, m)).ok()) << dtype_name(kind) << " D";
        // B transposed within the fragment: elements of two lanes exchanged.
        m = doc;
        m.b = [base = doc.b](int l, int i) { return base(l == 0 ? 4 : l == 4 ? 0 : l, i); };
        EXPECT_FALSE(judge_layout(kind, simulated_device(kind, m)).ok()) << dtype_name(kind) << " B";
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

// ---- numerics model ------------------------------------------------------------------------

TEST(NumericsModel, Fp32RoundingInEveryMode) {
    const double x = 1.0 + 0x1p-24 + 0x1p-26;  // above the tie
    EXPECT_EQ(round_f32(x, Rounding::nearest_even), 1.0 + 0x1p-23);
    EXPECT_EQ(round_f32(x, Rounding::toward_zero), 1.0);
    EXPECT_EQ(round_f32(-x, Rounding::down), -(1.0 + 0x1p-23));
    EXPECT_EQ(round_f32(-x, Rounding::up), -1.0);
    EXPECT_EQ(round_f32(1.0 + 0x1p-24, Rounding::nearest_even), 1.0);  // tie to even
    EXPECT_EQ(round_f32(1.0 + 0x1p-24, Rounding::nearest_away), 1.0 + 0x1p-23);
    EXPECT_EQ(round_f32(1.0 + 3 * 0x1p-24, Rounding::nearest_even), 1.0 + 0x1p-22);  // tie above an odd number
    // Subnormals: 1.5 * 2^-149 is a tie between 2^-149 and 2^-148.
    EXPECT_EQ(round_f32(1.5 * 0x1p-149, Rounding::nearest_even), 0x1p-148);
    EXPECT_EQ(round_f32(1.5 * 0x1p-149, Rounding::toward_zero), 0x1p-149);
    EXPECT_EQ(round_f32(0x1p-140, Rounding::nearest_even, false), 0.0);
    EXPECT_TRUE(std::signbit(round_f32(-0x1p-140, Rounding::nearest_even, false)));
}

TEST(NumericsModel, ExactSumsRoundLikeTheDoubleRoutineAndBeyondIt) {
    SplitMix rng(5);
    for (int i = 0; i < 2000; ++i) {
        const double a = random_f32(rng, -30, 30), b = std::ldexp(random_f32(rng, -5, 5), -20);
        const double x = a + b;  // a double; exact when the spans allow, which the check below requires
        if (x - a != b) continue;
        const auto s = exact_sum({a, b});
        ASSERT_TRUE(s.has_value());
        for (Rounding r : all_roundings) EXPECT_EQ(round_f32(*s, r), round_f32(x, r)) << x;
    }
    // Wider than a double: 2^40 + 2^-40 needs 81 bits.
    const auto wide = exact_sum({0x1p40, 0x1p-40});
    ASSERT_TRUE(wide.has_value());
    EXPECT_FALSE(to_double(*wide).has_value());
    EXPECT_EQ(round_f32(*wide, Rounding::nearest_even), 0x1p40);
    EXPECT_EQ(round_f32(*wide, Rounding::up), 0x1p40 + 0x1p17);
    EXPECT_EQ(round_f32(*exact_sum({-0x1p40, -0x1p-40}), Rounding::down), -(0x1p40 + 0x1p17));
    EXPECT_FALSE(exact_sum({0x1p100, 0x1p-100}).has_value());
}

TEST(NumericsModel, SplitsProductsIntoNormalFactorsOfTheType) {
    const auto big = split_product(NumType::e4m3, 0x1p16);
    ASSERT_TRUE(big.has_value());
    EXPECT_EQ(big->first * big->second, 0x1p16);
    EXPECT_TRUE(is_normal_in(NumType::e4m3, big->first));
    EXPECT_TRUE(split_product(NumType::e4m3, 0x1p-12).has_value());
    EXPECT_FALSE(split_product(NumType::e4m3, 0x1p-13).has_value());  // below 2^-6 * 2^-6
    EXPECT_FALSE(split_product(NumType::e4m3, 0x1p17).has_value());
    const auto odd = split_product(NumType::f16, -0.75 * 0x1p-20);
    ASSERT_TRUE(odd.has_value());
    EXPECT_EQ(odd->first * odd->second, -0.75 * 0x1p-20);
    EXPECT_FALSE(representable(NumType::e4m3, 17.0));
    EXPECT_TRUE(representable(NumType::tf32, 1.0 + 0x1p-10));
    EXPECT_FALSE(representable(NumType::tf32, 1.0 + 0x1p-11));
}

namespace {

// A stand-in device: the block-FMA model with known parameters, answering
// the probe's crafted cases.
struct ModelDevice {
    BlockModel m;
    int k_inst;
    NumType t;
    double operator()(const DotCase& dc) const { return predict(m, dc, k_inst, t); }
};

DotCase pair_case(NumType t, int k, int p, int j, int e_big, double small) {
    DotCase dc = empty_case(k);
    const auto big = *split_product(t, std::ldexp(1.0, e_big));
    dc.a[p] = big.first, dc.b[p] = big.second;
    dc.a[p + 1] = -big.first, dc.b[p + 1] = big.second;
    const auto s = *split_product(t, small);
    dc.a[j] = s.first, dc.b[j] = s.second;
    return dc;
}

}  // namespace

TEST(NumericsInference, RecoversTheBlockSizeTheBitsAndTheCut) {
    for (int block : {4, 8, 16}) {
        for (int frac : {13, 23, 25}) {
            for (AlignCut cut : {AlignCut::toward_zero, AlignCut::floor, AlignCut::nearest_even}) {
                ModelDevice dev{BlockModel{}, 16, NumType::bf16};
                dev.m.block = block;
                dev.m.frac_bits = frac;
                dev.m.align = cut;
                const int e_big = 20, g_max = 40;
                std::vector<std::vector<bool>> vanished(8, std::vector<bool>(16, false));
                for (int p = 0; p < 16; p += 2)
                    for (int j = 0; j < 16; ++j)
                        if (j != p && j != p + 1)
                            vanished[p / 2][j] =
                                dev(pair_case(NumType::bf16, 16, p, j, e_big, std::ldexp(1.0, e_big - g_max))) == 0.0;
                const BlockInference bi = infer_blocks(16, vanished);
                ASSERT_TRUE(bi.consistent);
                EXPECT_EQ(bi.uniform_size, block);
                EXPECT_EQ(bi.groups.size(), std::size_t(16 / block));

                std::vector<bool> kept;
                for (int g = 1; g <= g_max; ++g) {
                    const double s = std::ldexp(1.0, e_big - g);
                    kept.push_back(dev(pair_case(NumType::bf16, 16, 0, 2, e_big, s)) == s);
                }
                const GapInference gi = infer_gap(kept);
                EXPECT_EQ(gi.last_kept, frac);
                EXPECT_FALSE(gi.all_kept);
                EXPECT_TRUE(gi.monotone);

                const double q = std::ldexp(1.0, e_big - frac);
                const auto found = infer_align_cut(dev(pair_case(NumType::bf16, 16, 0, 2, e_big, 0.75 * q)),
                                                   dev(pair_case(NumType::bf16, 16, 0, 2, e_big, -0.75 * q)),
                                                   dev(pair_case(NumType::bf16, 16, 0, 2, e_big, -0.25 * q)), q);
                ASSERT_TRUE(found.has_value());
                EXPECT_EQ(*found, cut);
            }
        }
    }
}

TEST(NumericsInference, InconsistentGroupsAreRejected) {
    std::vector<std::vector<bool>> vanished(4, std::vector<bool>(8, false));
    vanished[0][2] = vanished[0][3] = true;  // the pair at 0 sees 0-3
    EXPECT_TRUE(infer_blocks(8, vanished).consistent);
    EXPECT_EQ(infer_blocks(8, vanished).uniform_size, 0);  // 0-3, then 4-5 and 6-7: not uniform
    vanished[1][4] = true;                                 // ... but the pair at 2 sees 2-4
    EXPECT_FALSE(infer_blocks(8, vanished).consistent);
    vanished[1][4] = false;
    vanished[0][5] = true;  // 0-3 plus 5: not a run
    EXPECT_FALSE(infer_blocks(8, vanished).consistent);
    const GapInference gi = infer_gap({true, true, false, true});
    EXPECT_EQ(gi.last_kept, 2);
    EXPECT_FALSE(gi.monotone);
}

TEST(NumericsInference, TheRoundingCasesTellAllFiveModesApart) {
    for (Rounding mode : all_roundings) {
        ModelDevice dev{BlockModel{}, 16, NumType::f16};
        dev.m.frac_bits = 26;
        dev.m.out = mode;
        std::vector<DotCase> cases;
        std::vector<double> got;
        for (double sign : {1.0, -1.0})
            for (int x : rounding_offsets) {
                cases.push_back(rounding_case(16, x, sign));
                got.push_back(dev(cases.back()));
            }
        const auto modes = consistent_roundings(cases, got);
        ASSERT_EQ(modes.size(), 1u) << name(mode);
        EXPECT_EQ(modes.front(), mode);
    }
}

TEST(NumericsModel, HostileSumAndTheFamousCheck) {
    DotCase famous = empty_case(128);
    famous.a[0] = 448, famous.b[0] = 1;
    for (int k = 1; k < 128; ++k) famous.a[k] = 0.0625, famous.b[k] = 1;
    EXPECT_EQ(*exact_dot(famous), 455.9375);
    EXPECT_EQ(predict_fp16_sequential(famous), 448.0);
    EXPECT_EQ(predict_fp32_sequential(famous), 455.9375);
    // A 13-bit aligner loses 127 terms 14 binades down; fp32 in any order keeps them.
    BlockModel narrow;
    narrow.block = 32;
    narrow.frac_bits = 13;
    DotCase h = empty_case(128);
    h.a[0] = 256, h.b[0] = 256;
    for (int k = 1; k < 128; ++k) h.a[k] = 2, h.b[k] = 2;  // 2^2 = 2^(16-14)
    EXPECT_EQ(predict(narrow, h, 32, NumType::e4m3), 65536.0);
    EXPECT_EQ(predict_fp32_sequential(h), *exact_dot(h));
    BlockModel wide = narrow;
    wide.frac_bits = 25;
    EXPECT_EQ(predict(wide, h, 32, NumType::e4m3), *exact_dot(h));
}

TEST(NumericsModel, AlignmentWithoutNormalizationIsNotMonotone) {
    BlockModel m;
    m.block = 16;
    m.frac_bits = 24;
    m.c_in_first_block = true;
    const int e = 20;
    const auto run = [&](double c) {
        DotCase dc = empty_case(16);
        dc.c = c;
        const auto s = *split_product(NumType::f16, std::ldexp(1.0, e - 1 - m.frac_bits));
        for (int k = 0; k < 16; ++k) dc.a[k] = s.first, dc.b[k] = s.second;
        return predict(m, dc, 16, NumType::f16);
    };
    const double lower = std::ldexp(1.0, e) - std::ldexp(1.0, e - 24);
    EXPECT_GT(run(lower), run(std::ldexp(1.0, e)));  // the larger C gives the smaller sum
}

TEST(NumericsModel, SubnormalHandlingAndPassThrough) {
    BlockModel m;
    DotCase dc = empty_case(16);
    dc.a[0] = 0x1p-24, dc.b[0] = 0x1p15;  // smallest f16 subnormal
    EXPECT_EQ(predict(m, dc, 16, NumType::f16), 0x1p-9);
    m.subnormal_in = false;
    EXPECT_EQ(predict(m, dc, 16, NumType::f16), 0.0);
    DotCase c_only = empty_case(16);
    c_only.c = 1.0 + 0x1p-23;
    m.frac_bits = 13;  // even a narrow aligner leaves C alone when nothing is added to it
    EXPECT_EQ(predict(m, c_only, 16, NumType::f16), 1.0 + 0x1p-23);
}

// ---- the accumulation battery against a model device ------------------------------------------

namespace {

// A tensor core that follows the block-FMA model exactly: every element of D
// is the model's answer for its row of A, column of B and element of C.
struct ModelGpu {
    NumPath path;
    BlockModel model;

    std::optional<std::vector<float>> operator()(const Batch& bt, int k_total) const {
        const NumType t = path.type;
        const int eb = facts(t).elem_bytes;
        const auto value = [&](const std::vector<std::uint8_t>& v, std::size_t at) {
            std::uint32_t bits = 0;
            for (int i = 0; i < eb; ++i) bits |= std::uint32_t(v[at + i]) << (8 * i);
            return decode(t, bits);
        };
        std::vector<float> out(std::size_t(bt.count) * path.m * path.n);
        for (int e = 0; e < bt.count; ++e)
            for (int m = 0; m < path.m; ++m) {
                DotCase dc = empty_case(k_total);
                bool row_zero = true;
                for (int k = 0; k < k_total; ++k) {
                    dc.a[k] = value(bt.a, ((std::size_t(e) * path.m + m) * k_total + k) * eb);
                    row_zero = row_zero && dc.a[k] == 0;
                }
                for (int n = 0; n < path.n; ++n) {
                    const std::size_t at = (std::size_t(e) * path.m + m) * path.n + n;
                    dc.c = bt.c[at];
                    if (!row_zero)  // a zero row contributes no products whatever B holds
                        for (int k = 0; k < k_total; ++k)
                            dc.b[k] = value(bt.b, ((std::size_t(e) * path.n + n) * k_total + k) * eb);
                    out[at] = static_cast<float>(predict(model, dc, path.k_inst, t));
                }
            }
        return out;
    }
};

const NumPath& path_of(PathId id) {
    for (const NumPath& p : paths)
        if (p.id == id) return p;
    throw std::logic_error("no such path");
}

std::vector<Finding> run_battery(PathId id, const BlockModel& m) {
    ProbeContext ctx;
    ctx.quick = true;
    ctx.seed = 3;
    const NumPath& p = path_of(id);
    PathProbe probe(p, ctx, ModelGpu{p, m});
    EXPECT_TRUE(probe.available());
    std::vector<Finding> out;
    probe.run_all(out);
    return out;
}

const Finding& find(const std::vector<Finding>& fs, const std::string& quantity_start) {
    for (const Finding& f : fs)
        if (f.quantity.rfind(quantity_start, 0) == 0) return f;
    throw std::logic_error("no finding whose quantity starts with: " + quantity_start);
}

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST(AccumulationBattery, RecoversEveryParameterOfAModelTensorCore) {
    struct Config {
        PathId path;
        int block, frac;
        Rounding out;
        bool c_in;
    };
    const Config configs[] = {{PathId::mma_f16, 4, 24, Rounding::toward_zero, true},
                              {PathId::mma_bf16, 16, 26, Rounding::nearest_even, true},
                              {PathId::mma_tf32, 4, 23, Rounding::toward_zero, false},
                              {PathId::mma_e4m3, 32, 13, Rounding::toward_zero, true},
                              {PathId::wgmma_e4m3, 16, 13, Rounding::toward_zero, true}};
    for (const Config& c : configs) {
        BlockModel m;
        m.block = c.block;
        m.frac_bits = c.frac;
        m.out = c.out;
        m.c_in_first_block = c.c_in;
        const auto fs = run_battery(c.path, m);
        const std::string what = std::string(path_of(c.path).ptx) + " block " + std::to_string(c.block);
        for (const Finding& f : fs)
            EXPECT_EQ(f.detail.find("WARNING"), std::string::npos) << what << ": " << f.quantity;

        EXPECT_TRUE(starts(find(fs, "product of two inputs").measured, "exact")) << what;
        EXPECT_TRUE(starts(find(fs, "subnormal ").measured, "kept")) << what;
        EXPECT_TRUE(starts(find(fs, "D = C when A*B = 0").measured, std::to_string(path_of(c.path).m * 8) + "/"))
            << what;

        const Finding& blocks = find(fs, "products fused per alignment step");
        const std::string block_text = c.block == path_of(c.path).k_inst ? " (all products" : " consecutive";
        EXPECT_TRUE(starts(blocks.measured, std::to_string(c.block) + block_text)) << what << blocks.measured;
        if (path_of(c.path).k_inst / c.block > 1) {
            EXPECT_NE(blocks.detail.find("the steps run in sequence"), std::string::npos) << what;
        }

        const Finding& bits = find(fs, "bits kept below");
        EXPECT_TRUE(starts(bits.measured, std::to_string(c.frac) + " bits")) << what << bits.measured;
        EXPECT_TRUE(bits.verified) << what;
        EXPECT_TRUE(starts(find(fs, "how alignment cuts").measured, "truncation toward zero")) << what;
        EXPECT_TRUE(starts(find(fs, "C aligned together").measured, c.c_in ? "yes" : "no")) << what;
        if (c.frac >= 23) {
            EXPECT_TRUE(starts(find(fs, "rounding of the fp32 result").measured, name(c.out))) << what;
        }

        const Finding& hostile = find(fs, "RIGEL's hostile sum");
        EXPECT_EQ(hostile.relation, c.frac >= 23 ? DocRelation::confirms : DocRelation::contradicts)
            << what << hostile.measured;
        const Finding& famous = find(fs, "448 + 127 x 0.0625");
        EXPECT_EQ(famous.measured, "455.9375") << what;
        EXPECT_EQ(famous.relation, DocRelation::confirms);

        if (c.c_in) {
            EXPECT_TRUE(starts(find(fs, "monotonicity").measured, "not monotone"))
                << what << find(fs, "monotonicity").detail;
        }

        const Finding& model = find(fs, "the model assembled");
        EXPECT_TRUE(starts(model.measured, "256/256 single, 32/32 chained"))
            << what << ": " << model.measured << " " << model.detail;
    }
}

TEST(AccumulationBattery, ReportsFlushingAndACutToMinusInfinity) {
    BlockModel m;
    m.block = 8;
    m.frac_bits = 24;
    m.align = AlignCut::floor;
    m.subnormal_in = false;
    m.subnormal_out = false;
    const auto fs = run_battery(PathId::mma_bf16, m);
    EXPECT_TRUE(starts(find(fs, "subnormal ").measured, "flushed to zero"));
    EXPECT_TRUE(starts(find(fs, "product in fp32's subnormal range").measured, "flushed to zero"));
    EXPECT_TRUE(starts(find(fs, "fp32-subnormal C").measured, "flushed to zero"));
    EXPECT_TRUE(starts(find(fs, "how alignment cuts").measured, "truncation toward -inf"));
    EXPECT_TRUE(starts(find(fs, "the model assembled").measured, "256/256 single, 32/32 chained"))
        << find(fs, "the model assembled").detail;
}

// ---- throughput arithmetic ---------------------------------------------------------------------

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
