// Paired timing against synthetic clocks: a drift that biases each side's
// median leaves the per-pair ratio right, the order alternates so that a
// penalty for running second cancels, and nonsense settings are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "harness/paired.hpp"
#include "harness/timing.hpp"

using namespace rigel;

namespace {

// Timing only from the returned samples: no wall-clock warm-up, a fixed span.
constexpr PairedConfig kFast{.warmup_s = 0, .min_time_s = 0, .min_pairs = 40, .max_pairs = 40, .max_time_s = 30};

// A device whose clock slows by `drift` per call (a card heating under its
// power cap): a computation of true duration t returns t * (1 + drift * call).
struct DriftingDevice {
    double drift;
    int calls = 0;
    double run(double true_s) { return true_s * (1.0 + drift * calls++); }
};

constexpr double kTrueA = 1e-3, kTrueB = 1.25e-3;  // A is 1.25x as fast as B

}  // namespace

TEST(Paired, DriftBiasesEachMedianButNotThePairedRatio) {
    DriftingDevice dev{.drift = 0.002};
    const PairedStats s = measure_paired([&] { return dev.run(kTrueA); }, [&] { return dev.run(kTrueB); }, kFast);
    EXPECT_EQ(s.pairs, 40);
    EXPECT_EQ(s.a.reps, 40);
    EXPECT_EQ(s.b.reps, 40);
    // Each side's median has drifted about 8 % off its true duration...
    EXPECT_GT(s.a.median_s / kTrueA, 1.05);
    EXPECT_GT(s.b.median_s / kTrueB, 1.05);
    // ...while the per-pair ratio stays within the drift of one call.
    EXPECT_NEAR(s.ratio_median, kTrueB / kTrueA, 1.25 * 0.003);
    EXPECT_LE(s.ratio_p10, s.ratio_median);
    EXPECT_GE(s.ratio_p90, s.ratio_median);
}

TEST(Paired, TwoSeparateMeasurementsOnTheSameDeviceAreBiased) {
    // What the pairing replaces: A measured, then B, each with its own median.
    DriftingDevice dev{.drift = 0.002};
    const TimingConfig one{.warmup_s = 0, .min_time_s = 0, .min_reps = 40, .max_reps = 40, .max_time_s = 30};
    const double ta = measure([&] { return dev.run(kTrueA); }, one).median_s;
    const double tb = measure([&] { return dev.run(kTrueB); }, one).median_s;
    EXPECT_GT(std::abs(tb / ta / (kTrueB / kTrueA) - 1.0), 0.05);
}

TEST(Paired, OrderAlternatesSoThatRunningSecondCancels) {
    // Whichever side runs second in a pair is 5 % slower (a clock that drops
    // after the first launch of a pair, say). With one fixed order the ratio
    // would be 1.25 * 1.05; alternating, half the pairs see each penalty.
    std::vector<char> order;
    int in_pair = 0;
    const auto side = [&](char name, double t) {
        order.push_back(name);
        const double out = in_pair == 1 ? t * 1.05 : t;
        in_pair = (in_pair + 1) % 2;
        return out;
    };
    const PairedStats s = measure_paired([&] { return side('A', kTrueA); }, [&] { return side('B', kTrueB); }, kFast);
    // The warm-up's one pair (A then B), then A B, B A, A B, ...
    ASSERT_EQ(order.size(), 2u + 2u * 40u);
    for (std::size_t pair = 0; pair < 40; ++pair) {
        const char first = order[2 + 2 * pair], second = order[3 + 2 * pair];
        EXPECT_EQ(first, pair % 2 == 0 ? 'A' : 'B') << pair;
        EXPECT_NE(first, second) << pair;
    }
    const double fixed_order_ratio = 1.25 * 1.05;
    EXPECT_NEAR(s.ratio_median, 1.25, 0.005);
    EXPECT_GT(fixed_order_ratio - s.ratio_median, 0.05);
}

TEST(Paired, StopsAfterTheMinimumSpanAndAnEvenPairCount) {
    int calls = 0;
    const PairedConfig cfg{.warmup_s = 0, .min_time_s = 0.01, .min_pairs = 3, .max_pairs = 1000, .max_time_s = 30};
    const PairedStats s = measure_paired([&] { ++calls; return 0.001; }, [&] { ++calls; return 0.001; }, cfg);
    // 0.01 s of samples is 5 pairs; the run ends on the next even count.
    EXPECT_EQ(s.pairs, 6);
    EXPECT_EQ(calls, 2 + 2 * 6);
    EXPECT_DOUBLE_EQ(s.ratio_median, 1.0);
}

TEST(Paired, SummarizesTheRatioOfEachPair) {
    const PairedStats s = summarize_pairs({1.0, 2.0, 4.0}, {2.0, 2.0, 2.0});
    EXPECT_EQ(s.pairs, 3);
    EXPECT_DOUBLE_EQ(s.ratio_median, 1.0);  // ratios 2, 1, 0.5
    EXPECT_DOUBLE_EQ(s.ratio_p10, 0.6);
    EXPECT_DOUBLE_EQ(s.ratio_p90, 1.8);
    EXPECT_DOUBLE_EQ(s.a.median_s, 2.0);
    EXPECT_THROW(summarize_pairs({1.0}, {1.0, 2.0}), std::logic_error);
}

TEST(Paired, RefusesNonsenseSettingsAndSamples) {
    const auto one = [] { return 1e-3; };
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (double bad : {-1.0, inf, nan, kMaxMeasureSeconds + 1}) {
        EXPECT_THROW(measure_paired(one, one, PairedConfig{.warmup_s = bad}), std::invalid_argument) << bad;
        EXPECT_THROW(measure_paired(one, one, PairedConfig{.min_time_s = bad}), std::invalid_argument) << bad;
    }
    EXPECT_THROW(measure_paired(one, one, PairedConfig{.max_time_s = inf}), std::invalid_argument);
    EXPECT_THROW(measure_paired(one, one, PairedConfig{.max_time_s = 0}), std::invalid_argument);
    EXPECT_THROW(measure_paired(one, one, PairedConfig{.min_pairs = 0}), std::invalid_argument);
    EXPECT_THROW(measure_paired(one, one, PairedConfig{.min_pairs = 10, .max_pairs = 5}), std::invalid_argument);
    EXPECT_NO_THROW(check_paired_config(PairedConfig{.warmup_s = kMaxMeasureSeconds, .min_time_s = 0}));
    for (double bad : {-1.0, inf, nan, kMaxMeasureSeconds + 1})
        EXPECT_THROW(measure_paired(one, one, PairedConfig{.pause_s = bad}), std::invalid_argument) << bad;
    // A pause goes before single samples; blocks run theirs back to back.
    EXPECT_THROW(check_paired_config(PairedConfig{.block_s = 0.1, .pause_s = 0.1}), std::invalid_argument);

    // A duration of zero, a negative one or NaN gives no ratio: refused.
    for (double bad : {0.0, -1e-3, nan, inf}) {
        const auto broken = [bad] { return bad; };
        EXPECT_THROW(measure_paired(one, broken, kFast), std::runtime_error) << bad;
        EXPECT_THROW(measure_paired(broken, one, kFast), std::runtime_error) << bad;
    }
}

// A pause: the host sleeps before every timed sample (not the warm-up's), so
// each launch starts on an idle device; the ratio is still taken per pair.
TEST(Paired, PausesBeforeEveryTimedSample) {
    using Clock = std::chrono::steady_clock;
    std::vector<Clock::time_point> calls;
    const auto side = [&](double t) {
        return [&calls, t] {
            calls.push_back(Clock::now());
            return t;
        };
    };
    PairedConfig cfg = kFast;
    cfg.min_pairs = cfg.max_pairs = 4;
    cfg.pause_s = 0.005;
    const PairedStats s = measure_paired(side(kTrueA), side(kTrueB), cfg);
    EXPECT_EQ(s.pairs, 4);
    EXPECT_DOUBLE_EQ(s.ratio_median, kTrueB / kTrueA);
    // One warm-up pair (warmup_s 0 still runs one), then 8 timed samples.
    ASSERT_EQ(calls.size(), 10u);
    for (std::size_t i = 2; i < calls.size(); ++i)
        EXPECT_GE(std::chrono::duration<double>(calls[i] - calls[i - 1]).count(), cfg.pause_s) << i;
}

// Blocked timing: a device whose clock follows the power of what ran lately.
// Each side has a true duration at the full clock and a power; a sample runs at
// a clock that is the mean of the last `memory` samples' clock factors, each
// side's factor falling with its power (a cap that slows the hungrier side).
// Alternating single samples, both sides run at one shared clock and the ratio
// is the true one; in blocks each settles to its own clock.
namespace {
struct PowerCappedDevice {
    int memory = 8;
    std::vector<double> recent;  // clock factors of the last samples
    double run(double true_s, double own_factor) {
        double f = own_factor;
        if (!recent.empty()) {
            double sum = 0;
            for (double r : recent) sum += r;
            f = sum / static_cast<double>(recent.size());
        }
        recent.push_back(own_factor);
        if (static_cast<int>(recent.size()) > memory) recent.erase(recent.begin());
        return true_s / f;
    }
};
}  // namespace

TEST(Blocked, EachSideSettlesToItsOwnClockWherePairsShareOne) {
    // A and B take equal cycles; B draws less power, so alone it runs 4 % faster.
    const auto measure_both = [](const PairedConfig& cfg) {
        PowerCappedDevice dev;
        return measure_paired([&] { return dev.run(1e-3, 1.00); }, [&] { return dev.run(1e-3, 1.04); }, cfg);
    };
    const PairedStats paired = measure_both(kFast);
    EXPECT_NEAR(paired.ratio_median, 1.0, 0.01);  // one shared clock: the cycles alone
    const PairedStats blocked = measure_both(
        PairedConfig{.warmup_s = 0, .min_time_s = 0.2, .min_pairs = 1, .max_pairs = 1, .max_time_s = 30, .block_s = 0.05});
    EXPECT_NEAR(blocked.ratio_median, 1.0 / 1.04, 1e-9);  // B's own clock: rate A / rate B
    EXPECT_EQ(blocked.pairs, 2);  // 0.2 s of samples in blocks of 0.05 s: 2 pairs of blocks
    EXPECT_NEAR(blocked.a.median_s, 1e-3, 1e-12);
    EXPECT_NEAR(blocked.b.median_s, 1e-3 / 1.04, 1e-12);
    // Each block kept its samples after its first quarter: about 37 of 50.
    EXPECT_GT(blocked.a.reps, 2 * 35);
    EXPECT_LT(blocked.a.reps, 2 * 40);
}

TEST(Blocked, BlocksTakeTurnsSoThatDriftCancels) {
    // The device slows by 0.2 % a call: blocks in one order would give the
    // side that runs second a slower clock in every pair.
    std::vector<char> order;
    DriftingDevice dev{.drift = 0.002};
    const PairedConfig cfg{.warmup_s = 0, .min_time_s = 0.04, .min_pairs = 1, .max_pairs = 1, .max_time_s = 30,
                           .block_s = 0.005};
    const PairedStats s = measure_paired([&] { order.push_back('A'); return dev.run(kTrueA); },
                                         [&] { order.push_back('B'); return dev.run(kTrueB); }, cfg);
    EXPECT_EQ(s.pairs % 2, 0);
    EXPECT_GE(s.pairs, 2);
    // After the warm-up's A B: a block of A (5 samples of 1 ms), then B B (4 of
    // 1.25 ms each), A A, ...: the second pair's order turned, so the runs of one
    // side after the first are two blocks long (in one order they would be 5, 4, 5).
    std::vector<std::size_t> runs;
    for (std::size_t i = 2; i < order.size(); ++i) {
        if (i == 2 || order[i] != order[i - 1]) runs.push_back(0);
        ++runs.back();
    }
    ASSERT_GE(runs.size(), 3u);
    EXPECT_EQ(order[2], 'A');
    EXPECT_EQ(runs[0], 5u);
    EXPECT_GE(runs[1], 7u);
    EXPECT_GE(runs[2], 9u);
    EXPECT_NEAR(s.ratio_median, 1.25, 0.02);
}

TEST(Blocked, CallsItsHookAroundEveryBlockWithItsSide) {
    std::string events;  // A/B a sample, [ and ] a block's begin and end with its side
    const PairedConfig cfg{.warmup_s = 0, .min_time_s = 0.004, .min_pairs = 1, .max_pairs = 1, .max_time_s = 30,
                           .block_s = 0.001};
    const PairedStats s = measure_blocked([&] { events += 'A'; return 0.0005; }, [&] { events += 'B'; return 0.0005; },
                                          cfg, [&](int side, bool begin) {
                                              events += begin ? '[' : ']';
                                              events += side == 0 ? 'a' : 'b';
                                          });
    EXPECT_EQ(s.pairs, 2);
    // The warm-up's pair unhooked, then blocks of two samples: A B, then B A.
    EXPECT_EQ(events, "AB[aAA]a[bBB]b[bBB]b[aAA]a");
}

TEST(Blocked, RefusesABlockLengthOutOfRange) {
    const auto one = [] { return 1e-3; };
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (double bad : {-1.0, inf, nan, kMaxMeasureSeconds + 1})
        EXPECT_THROW(measure_paired(one, one, PairedConfig{.block_s = bad}), std::invalid_argument) << bad;
    EXPECT_THROW(measure_blocked(one, one, PairedConfig{.block_s = 0}), std::invalid_argument);
}
