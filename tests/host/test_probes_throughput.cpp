// Host tests of the throughput probe's arithmetic: the checksums its kernels
// must return.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "probes/numerics/numerics_model.hpp"
#include "probes/throughput/pingpong_timeline.hpp"
#include "probes/throughput/wgmma_corun.hpp"
#include "probes/throughput/tma_box_rate.hpp"
#include "probes/throughput/wgmma_operand_layout.hpp"
#include "probes/throughput/throughput_arith.hpp"

using namespace rigel;
using namespace rigel::probes;

namespace {

// What fma_kernel returns, summed over its threads, when its loop makes
// `trips` trips: the chains, then the trips each thread adds.
double fma_kernel_result(long long threads, int chains, int lanes, int unroll, long long trips, bool verify) {
    double total = 0;
    for (long long t = 0; t < threads; ++t) {
        double s = 0;
        for (int j = 0; j < chains; ++j) {
            double acc = double((t + j) & 7);
            for (long long it = 0; it < trips; ++it)
                for (int u = 0; u < unroll; ++u) acc = (acc * 1 + 1) * 1 + (verify ? 1 : -1);
            s += lanes * acc;
        }
        total += s + double(trips);
    }
    return total;
}

}  // namespace

TEST(ThroughputArith, FmaChecksumIsWhatTheKernelComputes) {
    for (bool verify : {true, false})
        for (int lanes : {1, 2}) {
            const long long threads = 37, iters = 5;
            const int chains = 3, unroll = 2;
            EXPECT_EQ(fma_checksum(threads, chains, lanes, unroll, iters, verify),
                      fma_kernel_result(threads, chains, lanes, unroll, iters, verify));
        }
}

// The timed run's steps cancel, so only the trips each thread adds tie its
// checksum to the iteration count: a kernel that made fewer trips fails.
TEST(ThroughputArith, TimedChecksumsDependOnTheIterationCount) {
    const long long threads = 37, n = 1000;
    const int chains = 3, unroll = 2;
    for (int lanes : {1, 2}) {
        const double want = fma_checksum(threads, chains, lanes, unroll, n, false);
        EXPECT_NE(want, fma_checksum(threads, chains, lanes, unroll, n + 1, false));
        EXPECT_EQ(fma_kernel_result(threads, chains, lanes, unroll, n, false), want);
        for (long long fewer : {n - 1, n / 2, 0LL})
            EXPECT_NE(fma_kernel_result(threads, chains, lanes, unroll, fewer, false), want) << fewer << " trips";
    }

    // A matrix kernel: its accumulators (matrix_checksum, chain_start_sum)
    // come out the same for any count in the timed run; the trips do not.
    const double ab_sum = -7, warps = 4, accumulators = warps * 4;
    const long long mma_threads = 128;
    const auto expected = [&](long long iters) {
        return matrix_checksum(accumulators, ab_sum, 1, iters, false) + chain_start_sum(mma_threads, 4, 4) +
               loop_trips_sum(mma_threads, iters);
    };
    EXPECT_EQ(matrix_checksum(accumulators, ab_sum, 1, n, false), matrix_checksum(accumulators, ab_sum, 1, 0, false));
    EXPECT_NE(expected(n), expected(n + 1));
    for (long long fewer : {n - 1, 0LL})
        EXPECT_NE(expected(n), matrix_checksum(accumulators, ab_sum, 1, fewer, false) +
                                   chain_start_sum(mma_threads, 4, 4) + double(mma_threads) * double(fewer));
    EXPECT_EQ(loop_trips_sum(mma_threads, n), 128000.0);
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

// -- the ping-pong timeline's host half (probes/throughput/pingpong_timeline.hpp) --------------

namespace {

namespace tl = rigel::probes::timeline;

// A record of one CTA (slots 3): consumer 0 ran tiles 0 and 2 of the CTA's sequence, consumer 1 tile 1.
// `shift` moves every clock reading, `stretch` lengthens each tile's main loop (the CTA's cycles).
std::vector<std::uint64_t> one_cta_record(std::uint64_t shift, std::uint64_t stretch) {
    constexpr int slots = 3;
    std::vector<std::uint64_t> w(static_cast<std::size_t>(tl::Layout::cta_words(slots)), 0);
    w[1] = 10;             // global timer at the start
    w[2] = 1000 + shift;   // clock at the start
    w[3] = 1400 + shift;   // the producer's first load
    // turn, data, issued, drained, stored, starved cycles, starved k-tiles
    const std::uint64_t s = stretch;
    const std::uint64_t tiles[3][7] = {
        {1400, 5000, 37000 + s, 37500 + s, 40000 + s, 100, 1},
        {37200 + s, 37700 + s, 70000 + 2 * s, 70600 + 2 * s, 73000 + 2 * s, 50, 1},
        {70300 + 2 * s, 70900 + 2 * s, 103000 + 3 * s, 103700 + 3 * s, 106000 + 3 * s, 0, 0}};
    for (int j = 0; j < 3; ++j)
        for (int e = 0; e < tl::kWords; ++e) {
            const bool clock = e < tl::kStarvedCycles;
            w[tl::Layout::event_word(0, j % 2, j / 2, e, slots)] = tiles[j][e] + (clock ? shift : 0);
        }
    const auto consumer_end = [&](int c, std::uint64_t clock, std::uint64_t ns, std::uint64_t ran) {
        const std::int64_t b = tl::Layout::consumer_base(0, c, slots);
        w[b] = clock + shift;
        w[b + 1] = ns;
        w[b + 2] = ran;
    };
    consumer_end(0, 106500 + 3 * s, 100, 2);
    consumer_end(1, 73500 + 2 * s, 50, 1);
    return w;
}

}  // namespace

TEST(PingPongTimeline, LayoutGivesEveryWordOnePlace) {
    constexpr int slots = 4;
    std::vector<int> owners(static_cast<std::size_t>(2 * tl::Layout::cta_words(slots)), 0);
    for (int cta = 0; cta < 2; ++cta) {
        for (int h = 0; h < tl::Layout::kCtaHeader; ++h)
            ++owners[static_cast<std::size_t>(cta * tl::Layout::cta_words(slots) + h)];
        for (int c = 0; c < 2; ++c) {
            for (int h = 0; h < tl::Layout::kConsumerHeader; ++h)
                ++owners[static_cast<std::size_t>(tl::Layout::consumer_base(cta, c, slots) + h)];
            for (int t = 0; t < slots; ++t)
                for (int e = 0; e < tl::kWords; ++e)
                    ++owners[static_cast<std::size_t>(tl::Layout::event_word(cta, c, t, e, slots))];
        }
    }
    for (int o : owners) EXPECT_EQ(o, 1);
}

TEST(PingPongTimeline, TheBusiestCtasPartsAddUpToItsCycles) {
    const std::vector<std::uint64_t> w = one_cta_record(1u << 20, 0);
    const tl::CtaTimeline t = tl::read_cta(w, 0, 3);
    ASSERT_EQ(t.tiles.size(), 3u);  // consumer 0's first, consumer 1's, consumer 0's second
    EXPECT_EQ(t.tiles[1][tl::kTurn], 37200u + (1u << 20));
    const tl::Summary s = tl::summarize({{t}}, 32000.0);
    EXPECT_EQ(s.busiest.tiles, 3.0);
    EXPECT_EQ(s.busiest.startup, 4000.0);
    EXPECT_EQ(s.busiest.first, 500.0);     // 37,500 - 5,000 - 32,000
    EXPECT_EQ(s.busiest.between, 2200.0);  // two periods of 33,100
    EXPECT_EQ(s.busiest.tail, 2800.0);
    EXPECT_EQ(s.busiest.total, 105500.0);
    EXPECT_EQ(s.busiest.startup + (s.busiest.first + 32000.0) + (s.busiest.between + 2 * 32000.0) + s.busiest.tail,
              s.busiest.total);
    EXPECT_EQ(s.busiest.starved, 150.0);
    EXPECT_EQ(s.period, (std::vector<double>{33100.0, 33100.0}));
    EXPECT_EQ(s.handoff, (std::vector<double>{700.0, 900.0}));  // the last issue before to the first full stage
    EXPECT_EQ(s.turn_lag, (std::vector<double>{200.0, 300.0}));
    EXPECT_EQ(s.idle, (std::vector<double>{200.0, 300.0}));     // the previous drain to the first full stage
    EXPECT_EQ(s.to_first_load, (std::vector<double>{400.0}));
    EXPECT_EQ(s.first_load_to_data, (std::vector<double>{3600.0}));
    EXPECT_EQ(s.tail, (std::vector<double>{2800.0}));
}

TEST(PingPongTimeline, TheMedianRunsBusiestCtaIsReported) {
    std::vector<std::vector<tl::CtaTimeline>> runs;
    for (std::uint64_t stretch : {900u, 0u, 300u}) runs.push_back({tl::read_cta(one_cta_record(0, stretch), 0, 3)});
    const tl::Summary s = tl::summarize(runs, 32000.0);
    EXPECT_EQ(s.busiest.total, 105500.0 + 3 * 300.0);
    EXPECT_EQ(s.busiest.between, 2200.0 + 2 * 300.0);
}

// -- the wgmma co-runner probe's host half (probes/throughput/wgmma_corun.hpp) -----------------

namespace corun = rigel::probes::corun;

TEST(WgmmaCorun, CountedSumIsTheChainsStartsPlusTheirSteps) {
    // A thread's 8 chains start at 0..7 and each step adds 1: after n loop iterations every chain
    // gained kUnroll n, so the sum is 28 + 64 n.
    EXPECT_EQ(corun::counted_sum(corun::Kind::ffma, 0), 28.0);
    EXPECT_EQ(corun::counted_sum(corun::Kind::ffma, 1), 28.0 + 64.0);
    EXPECT_EQ(corun::counted_sum(corun::Kind::fadd, 1000), 28.0 + 64000.0);
    EXPECT_EQ(corun::counted_sum(corun::Kind::ffma_64k, 2), 28.0 + 2 * 4096.0);
    EXPECT_EQ(corun::counted_sum(corun::Kind::ffma_16k, 1), 28.0 + 1024.0);
    double by_hand = 0;
    for (int j = 0; j < corun::kChains; ++j) by_hand += j + corun::unroll(corun::Kind::ffma) * 37.0;
    EXPECT_EQ(corun::counted_sum(corun::Kind::ffma, 37), by_hand);
}

TEST(WgmmaCorun, LostCyclesAreTheExtraOverTheSteps) {
    EXPECT_DOUBLE_EQ(corun::cycles_lost_per_step(1000.0, 1500.0, 250.0), 2.0);
    EXPECT_DOUBLE_EQ(corun::cycles_lost_per_step(1000.0, 1000.0, 250.0), 0.0);
    EXPECT_DOUBLE_EQ(corun::cycles_lost_per_step(1000.0, 990.0, 100.0), -0.1);  // faster reads as negative
    EXPECT_DOUBLE_EQ(corun::cycles_lost_per_step(1000.0, 1500.0, 0.0), 0.0);    // no steps, no rate
}

TEST(WgmmaCorun, KindsAreListedInTheirEnumsOrder) {
    for (std::size_t i = 0; i < corun::kKinds.size(); ++i)
        EXPECT_EQ(static_cast<std::size_t>(corun::kKinds[i].kind), i) << corun::kKinds[i].name;
    EXPECT_DOUBLE_EQ(corun::kIdealCyclesPerWgmma, 64.0);
    // The long FFMA loops' code, 16 bytes an FFMA, is the size their names say.
    EXPECT_EQ(corun::steps_per_iteration(corun::Kind::ffma_16k) * 16, 16 * 1024);
    EXPECT_EQ(corun::steps_per_iteration(corun::Kind::ffma_64k) * 16, 64 * 1024);
    EXPECT_TRUE(corun::is_ffma(corun::Kind::ffma_32k));
    EXPECT_FALSE(corun::is_ffma(corun::Kind::fadd));
    EXPECT_EQ(corun::wgmmas(2000), 16001);
}

// -- the operand-layout probe's host half (probes/throughput/wgmma_operand_layout.hpp) -------------

namespace oplayout = rigel::probes::oplayout;

namespace {
// The 128B swizzle as the hardware applies it to a 1024-aligned tile's byte address: the 16-byte chunk
// bits [4,7) XOR the row-in-atom bits [7,10).
unsigned swizzled(unsigned address) { return address ^ (((address >> 7) & 7u) << 4); }
}  // namespace

TEST(WgmmaOperandLayout, TheSwizzleIsTheAddressBitsXor) {
    for (int row = 0; row < 64; ++row)
        for (int col = 0; col < 128; ++col)
            EXPECT_EQ(oplayout::sw128_offset(row, col), swizzled(unsigned(row * 128 + col))) << row << " " << col;
}

TEST(WgmmaOperandLayout, ImagesFollowTheDescriptorsFields) {
    // Before the swizzle, element (i, k) sits where the descriptor's fields put it: a K-major operand's
    // 8-row groups SBO apart, a row's 128 bytes along K; an MN-major one's 64-column slabs LBO apart,
    // its 8-row groups of K SBO apart. One k16 step is the fields' advance.
    const auto k = oplayout::desc_fields(oplayout::Major::k);
    const auto mn = oplayout::desc_fields(oplayout::Major::mn);
    for (int i = 0; i < 256; ++i)
        for (int kk = 0; kk < oplayout::kDepth; ++kk) {
            const unsigned k_plain = unsigned((i / 8) * k.sbo + (i % 8) * 128 + kk * 2);
            const unsigned mn_plain = unsigned((i / 64) * mn.lbo + (kk / 8) * mn.sbo + (kk % 8) * 128 + (i % 64) * 2);
            ASSERT_EQ(oplayout::operand_offset(oplayout::Major::k, i, kk), swizzled(k_plain));
            ASSERT_EQ(oplayout::operand_offset(oplayout::Major::mn, i, kk), swizzled(mn_plain));
            if (kk + 16 < oplayout::kDepth) {
                EXPECT_EQ(unsigned((i / 8) * k.sbo + (i % 8) * 128 + (kk + 16) * 2) - k_plain, k.k_step_bytes);
                EXPECT_EQ(oplayout::operand_offset(oplayout::Major::mn, i, kk + 16) -
                              oplayout::operand_offset(oplayout::Major::mn, i, kk),
                          mn.k_step_bytes);
            }
        }
}

TEST(WgmmaOperandLayout, EveryElementHasItsOwnSlotAndTheLastSlabIsPadded) {
    for (const int rows : {64, 104, 168, 256})
        for (const auto major : {oplayout::Major::k, oplayout::Major::mn}) {
            std::vector<std::uint16_t> bits(std::size_t(rows) * oplayout::kDepth);
            for (std::size_t e = 0; e < bits.size(); ++e) bits[e] = static_cast<std::uint16_t>(e + 1);  // never 0
            const std::vector<std::uint8_t> img = oplayout::operand_image(major, rows, bits);
            ASSERT_EQ(img.size(), std::size_t(oplayout::operand_bytes(major, rows)));
            std::vector<int> seen(img.size() / 2, 0);
            for (int i = 0; i < rows; ++i)
                for (int kk = 0; kk < oplayout::kDepth; ++kk) {
                    const unsigned o = oplayout::operand_offset(major, i, kk);
                    ASSERT_EQ(o % 2, 0u);
                    ++seen[o / 2];
                    EXPECT_EQ(img[o] | (img[o + 1] << 8), bits[std::size_t(i) * oplayout::kDepth + kk]);
                }
            std::size_t used = 0, zero = 0;
            for (std::size_t s = 0; s < seen.size(); ++s) {
                EXPECT_LE(seen[s], 1);
                used += std::size_t(seen[s]);
                if (!seen[s] && img[2 * s] == 0 && img[2 * s + 1] == 0) ++zero;
            }
            EXPECT_EQ(used, std::size_t(rows) * oplayout::kDepth);
            EXPECT_EQ(used + zero, seen.size());  // whatever no element fills is zero
        }
    EXPECT_EQ(oplayout::operand_bytes(oplayout::Major::mn, 104), 2 * 8192);  // 64 + 40 columns: two slabs
    EXPECT_EQ(oplayout::operand_bytes(oplayout::Major::k, 104), 104 * 128);
    EXPECT_THROW(oplayout::operand_image(oplayout::Major::k, 12, std::vector<std::uint16_t>(12 * 64)),
                 std::invalid_argument);
}

TEST(WgmmaOperandLayout, ChecksumsWeighEveryElementOfD) {
    // D = A B^T by hand for a B of 8 rows: the weighted sum, and what a launch adds up to.
    SplitMix rng(5);
    std::vector<double> a(std::size_t(oplayout::kM) * oplayout::kDepth), b(8 * std::size_t(oplayout::kDepth));
    for (auto& x : a) x = small_int(rng);
    for (auto& x : b) x = small_int(rng);
    double want = 0, swapped = 0;
    for (int r = 0; r < oplayout::kM; ++r)
        for (int c = 0; c < 8; ++c) {
            double d = 0, d_other = 0;
            for (int k = 0; k < oplayout::kDepth; ++k) {
                d += a[std::size_t(r) * 64 + k] * b[std::size_t(c) * 64 + k];
                d_other += a[std::size_t(r) * 64 + k] * b[std::size_t(c ^ 1) * 64 + k];
            }
            want += d * oplayout::weight(r, c);
            swapped += d_other * oplayout::weight(r, c);  // B's rows read in the wrong order
        }
    EXPECT_EQ(oplayout::weighted_product(a, b, 8), want);
    EXPECT_NE(oplayout::weighted_product(a, b, 8), swapped);
    // Two CTAs of two chains, 3 iterations: 128 threads a chain each add 3.
    EXPECT_EQ(oplayout::launch_checksum(2, want, 3, false), 4 * (want + 128.0 * 3));
    EXPECT_EQ(oplayout::launch_checksum(2, want, 3, true), 4 * (7 * want + 128.0 * 3));
    EXPECT_EQ(oplayout::wgmmas_per_chain(3), 28);
    EXPECT_DOUBLE_EQ(oplayout::sm_cycles_per_wgmma(28 * 2 * 64.0, 3), 64.0);
    EXPECT_DOUBLE_EQ(oplayout::ideal_cycles(104), 52.0);
}

TEST(WgmmaOperandLayout, LayoutsAreNamedAsTheLibraryNamesThem) {
    EXPECT_EQ(oplayout::layout_name(oplayout::Major::k, oplayout::Major::k), "NT");
    EXPECT_EQ(oplayout::layout_name(oplayout::Major::k, oplayout::Major::mn), "NN");
    EXPECT_EQ(oplayout::layout_name(oplayout::Major::mn, oplayout::Major::k), "TT");
    EXPECT_EQ(oplayout::layout_name(oplayout::Major::mn, oplayout::Major::mn), "TN");
}

// -- the TMA box-rate probe's host half (probes/throughput/tma_box_rate.hpp) -----------------------

namespace tmarate = rigel::probes::tmarate;

TEST(TmaBoxRate, EveryBoxStaysInsideTheMatrixAndItsValuesAreExactInBf16) {
    for (const auto& c : tmarate::kCases)
        for (int cta = 0; cta < 264; ++cta) {
            const int col0 = tmarate::first_col(cta, c.offset);
            EXPECT_LE(col0 + tmarate::kTileCols, tmarate::kDim) << c.name;  // the step's 128 columns (or rows)
        }
    EXPECT_LE(tmarate::kKSteps * 64, tmarate::kDim);
    for (int r = 0; r < tmarate::kDim; r += 7)
        for (int c = 0; c < tmarate::kDim; c += 5) EXPECT_LE(std::abs(tmarate::value(r, c)), 128);  // 8 bits
    EXPECT_EQ(tmarate::kCases[3].offset * 2 % 128, 80);  // 80 bytes past a line, as 3688 is
    EXPECT_EQ(3688 % 64, 40);
    // What the walks read fits one of the L2's two 25 MB partitions, and every CTA of 132 shares its tile
    // column with others.
    for (const auto& c : tmarate::kCases) EXPECT_LT(tmarate::footprint_bytes(c.offset), 25e6) << c.name;
    EXPECT_LT(tmarate::kTileColumns, 132 / 4);
}

TEST(TmaBoxRate, AStepFillsItsStageOnceWithTheBoxesElements) {
    for (const bool mn : {true, false}) {
        std::vector<int> seen(tmarate::kStepBytes / 2, 0);
        for (int i = 0; i < tmarate::kStepBytes / 2; ++i) {
            const auto e = tmarate::step_element(mn, i, 3688, 4032);
            ASSERT_LT(e.offset, unsigned(tmarate::kStepBytes));
            ++seen[e.offset / 2];
            if (mn) {  // rows of K, columns of N: the two boxes' 128 columns from 3688
                EXPECT_GE(e.row, 4032);
                EXPECT_LT(e.row, 4096);
                EXPECT_GE(e.col, 3688);
                EXPECT_LT(e.col, 3688 + 128);
            } else {  // rows of N, columns of K
                EXPECT_GE(e.col, 4032);
                EXPECT_LT(e.row, 3688 + 128);
            }
        }
        for (const int s : seen) EXPECT_EQ(s, 1);
    }
    // The MN-major step's second box is the column 64 further on, one 8 KB slab into the stage.
    const auto a = tmarate::step_element(true, 64, 0, 0), b = tmarate::step_element(true, 0, 0, 0);
    EXPECT_EQ(a.col - b.col, 64);
    EXPECT_EQ(a.offset - b.offset, unsigned(tmarate::kBoxBytes));
    EXPECT_DOUBLE_EQ(tmarate::cta_bytes(2), 2.0 * 64 * 16384);
}
