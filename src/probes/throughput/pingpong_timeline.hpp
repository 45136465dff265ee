// The host half of the probe "pingpong_timeline" (src/cuda/probes/throughput_pingpong_timeline.cu):
// where each word of a CTA's record lies (Layout, which the kernel's policy Timeline writes by,
// src/cuda/gemm/timeline_epilogue.cuh), a CTA's record read back, and what the probe makes of a run's
// records: each tile's period, hand-off and waits, and the busiest CTA's cycles split into start-up,
// first tile, the excess between tiles and tail (which add up to its cycles exactly).
// Host-tested by tests/host/test_probes_throughput.cpp.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "cuda/host_device.hpp"

namespace rigel::probes::timeline {

// The words of one tile's record, in the order of sm90::TimelineEvent (timeline_epilogue.cuh asserts
// that they agree): clock readings, then two counts.
enum Word : int { kTurn, kData, kIssued, kDrained, kStored, kStarvedCycles, kStarvedKtiles, kWords };

// One CTA's record, in 64-bit words: kCtaHeader words, then one block per consumer of
// kConsumerHeader words and `slots` tiles of kWords.
struct Layout {
    // smid, global timer at the start, clock at the start, clock as the producer issues its first load.
    static constexpr int kCtaHeader = 4;
    // clock at the consumer's end, global timer at its end, tiles it ran.
    static constexpr int kConsumerHeader = 3;
    static constexpr RIGEL_HOST_DEVICE std::int64_t consumer_words(int slots) {
        return kConsumerHeader + std::int64_t{slots} * kWords;
    }
    static constexpr RIGEL_HOST_DEVICE std::int64_t cta_words(int slots) {
        return kCtaHeader + 2 * consumer_words(slots);
    }
    static constexpr RIGEL_HOST_DEVICE std::int64_t consumer_base(int cta, int consumer, int slots) {
        return cta * cta_words(slots) + kCtaHeader + consumer * consumer_words(slots);
    }
    static constexpr RIGEL_HOST_DEVICE std::int64_t event_word(int cta, int consumer, int tile, int event, int slots) {
        return consumer_base(cta, consumer, slots) + kConsumerHeader + std::int64_t{tile} * kWords + event;
    }
};

// The q-quantile of v, linear between neighbours; NaN for none.
inline double quantile(std::vector<double> v, double q) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(v.begin(), v.end());
    const double at = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(at);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}
inline double mean(const std::vector<double>& v) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// One CTA's record of one run, its tiles in the order they ran (consumer 0's first, consumer 1's, ...).
struct CtaTimeline {
    std::uint64_t start = 0, producer = 0, end = 0, start_ns = 0, end_ns = 0;
    std::vector<std::array<std::uint64_t, kWords>> tiles;
};

inline CtaTimeline read_cta(const std::vector<std::uint64_t>& w, int cta, int slots) {
    CtaTimeline t;
    const std::int64_t base = cta * Layout::cta_words(slots);
    t.start_ns = w[base + 1];
    t.start = w[base + 2];
    t.producer = w[base + 3];
    int ran[2] = {0, 0};
    for (int c = 0; c < 2; ++c) {
        const std::int64_t cb = Layout::consumer_base(cta, c, slots);
        t.end = std::max<std::uint64_t>(t.end, w[cb]);
        t.end_ns = std::max<std::uint64_t>(t.end_ns, w[cb + 1]);
        ran[c] = static_cast<int>(std::min<std::uint64_t>(w[cb + 2], static_cast<std::uint64_t>(slots)));
    }
    for (int j = 0; j < ran[0] + ran[1]; ++j) {
        std::array<std::uint64_t, kWords> e{};
        for (int ev = 0; ev < kWords; ++ev)
            e[ev] = w[Layout::event_word(cta, j % 2, j / 2, ev, slots)];
        t.tiles.push_back(e);
    }
    return t;
}

// Signed difference of two clock readings of one SM, in cycles.
inline double cycles(std::uint64_t later, std::uint64_t earlier) {
    return static_cast<double>(static_cast<std::int64_t>(later - earlier));
}

struct Summary {
    std::vector<double> to_first_load, first_load_to_data;
    std::vector<double> startup, first_excess, period, handoff, turn_lag, setup, idle, epilogue, tail, total, end_ns;
    std::vector<double> starved_cycles, starved_ktiles;
    // The busiest CTA of the median run (the runs ranked by their busiest CTA's cycles) and its parts.
    struct Busiest {
        double total = -1, tiles = 0, startup = 0, first = 0, between = 0, tail = 0, starved = 0;
    };
    Busiest busiest;
    double clock_mhz = 0, tile_cycles = 0;
    double span_ns = 0;  // first start to last end over the grid, by the global timer
};

inline Summary summarize(const std::vector<std::vector<CtaTimeline>>& runs, double tile_cycles) {
    Summary s;
    s.tile_cycles = tile_cycles;
    std::vector<Summary::Busiest> busiest_of_run;
    std::vector<double> clocks;
    for (const auto& run : runs) {
        Summary::Busiest busiest;
        double span_lo = 1e300, span_hi = 0;
        for (const CtaTimeline& t : run) {
            if (t.tiles.empty()) continue;
            const auto& first = t.tiles.front();
            const double startup = cycles(first[kData], t.start);
            s.to_first_load.push_back(cycles(t.producer, t.start));
            s.first_load_to_data.push_back(cycles(first[kData], t.producer));
            const double first_main = cycles(first[kDrained], first[kData]);
            double between = 0, starved_total = 0;
            for (std::size_t j = 0; j < t.tiles.size(); ++j) {
                s.epilogue.push_back(cycles(t.tiles[j][kStored], t.tiles[j][kDrained]));
                s.starved_cycles.push_back(static_cast<double>(t.tiles[j][kStarvedCycles]));
                s.starved_ktiles.push_back(static_cast<double>(t.tiles[j][kStarvedKtiles]));
                starved_total += static_cast<double>(t.tiles[j][kStarvedCycles]);
                if (j == 0) continue;
                const auto& prev = t.tiles[j - 1];
                const double period = cycles(t.tiles[j][kDrained], prev[kDrained]);
                s.period.push_back(period);
                between += period - tile_cycles;
                s.handoff.push_back(cycles(t.tiles[j][kData], prev[kIssued]));
                s.turn_lag.push_back(cycles(t.tiles[j][kTurn], prev[kIssued]));
                s.setup.push_back(cycles(t.tiles[j][kData], t.tiles[j][kTurn]));
                s.idle.push_back(std::max(0.0, cycles(t.tiles[j][kData], prev[kDrained])));
            }
            const double tail = cycles(t.end, t.tiles.back()[kDrained]);
            const double total = cycles(t.end, t.start);
            s.startup.push_back(startup);
            s.first_excess.push_back(first_main - tile_cycles);
            s.tail.push_back(tail);
            s.total.push_back(total);
            span_lo = std::min(span_lo, static_cast<double>(t.start_ns));
            span_hi = std::max(span_hi, static_cast<double>(t.end_ns));
            if (t.end_ns > t.start_ns) clocks.push_back(total / static_cast<double>(t.end_ns - t.start_ns) * 1e3);
            if (total > busiest.total)
                busiest = {total, static_cast<double>(t.tiles.size()), startup, first_main - tile_cycles, between, tail,
                           starved_total};
        }
        busiest_of_run.push_back(busiest);
        s.span_ns += (span_hi - span_lo) / static_cast<double>(runs.size());
        for (const CtaTimeline& t : run)
            if (!t.tiles.empty()) s.end_ns.push_back(static_cast<double>(t.end_ns) - span_lo);
    }
    std::sort(busiest_of_run.begin(), busiest_of_run.end(),
              [](const Summary::Busiest& x, const Summary::Busiest& y) { return x.total < y.total; });
    if (!busiest_of_run.empty()) s.busiest = busiest_of_run[busiest_of_run.size() / 2];
    s.clock_mhz = quantile(clocks, 0.5);
    return s;
}


}  // namespace rigel::probes::timeline
