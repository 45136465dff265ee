// Paired timing: one common warm-up, then pairs in alternating order.
#include "harness/paired.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace rigel {
namespace {

double checked_sample(const std::function<double()>& f, const char* side) {
    const double t = f();
    if (!std::isfinite(t) || t <= 0) {
        char buf[120];
        std::snprintf(buf, sizeof buf, "paired timing: side %s returned %g s, not a finite positive duration", side, t);
        throw std::runtime_error(buf);
    }
    return t;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The common warm-up: A and B alternately, untimed, until `seconds` have passed (at least one pair).
void warm_up(const std::function<double()>& a, const std::function<double()>& b, double seconds) {
    const auto start = Clock::now();
    do {
        a();
        b();
    } while (seconds_since(start) < seconds);
}

}  // namespace

void check_paired_config(const PairedConfig& cfg) {
    // The same bounds as a single measurement's, so that no setting runs forever.
    check_timing_config(TimingConfig{.warmup_s = cfg.warmup_s,
                                     .min_time_s = cfg.min_time_s,
                                     .min_reps = 1,
                                     .max_reps = 1,
                                     .max_time_s = cfg.max_time_s});
    for (const auto& [name, v] : {std::pair{"block_s", cfg.block_s}, std::pair{"pause_s", cfg.pause_s}}) {
        if (!(v >= 0 && v <= kMaxMeasureSeconds)) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "%s must lie in [0, %g] seconds", name, kMaxMeasureSeconds);
            throw std::invalid_argument(buf);
        }
    }
    if (cfg.block_s > 0 && cfg.pause_s > 0)
        throw std::invalid_argument("block_s and pause_s exclude each other: a pause is taken before single samples "
                                    "in turn, a block runs its samples back to back");
    if (cfg.min_pairs < 1 || cfg.max_pairs < cfg.min_pairs)
        throw std::invalid_argument("pairs must satisfy 1 <= min_pairs <= max_pairs");
}

PairedStats summarize_pairs(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) throw std::logic_error("summarize_pairs: the two sides have different sample counts");
    std::vector<double> ratios(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) ratios[i] = b[i] / a[i];
    // The ratios' order statistics are those of any sample set.
    const TimingStats r = summarize(std::move(ratios));
    PairedStats s;
    s.a = summarize(a);
    s.b = summarize(b);
    s.ratio_median = r.median_s;
    s.ratio_p10 = r.p10_s;
    s.ratio_p90 = r.p90_s;
    s.pairs = r.reps;
    return s;
}

PairedStats measure_paired(const std::function<double()>& a, const std::function<double()>& b,
                           const PairedConfig& cfg) {
    check_paired_config(cfg);
    if (cfg.block_s > 0) return measure_blocked(a, b, cfg);
    warm_up(a, b, cfg.warmup_s);

    std::vector<double> ta, tb;
    double total = 0;
    const auto start = Clock::now();
    const double cap_s = std::max(cfg.max_time_s, cfg.min_time_s);
    // One timed sample, after the pause where one is asked for (the device idle: a sample returns once done).
    const auto sample = [&cfg](const std::function<double()>& f, const char* side) {
        if (cfg.pause_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(cfg.pause_s));
        return checked_sample(f, side);
    };
    while (static_cast<int>(ta.size()) < cfg.max_pairs) {
        // Even pairs A then B, odd pairs B then A.
        const bool a_first = ta.size() % 2 == 0;
        double x = 0, y = 0;
        if (a_first) {
            x = sample(a, "A");
            y = sample(b, "B");
        } else {
            y = sample(b, "B");
            x = sample(a, "A");
        }
        ta.push_back(x);
        tb.push_back(y);
        total += x + y;
        // Stop only after a B-first pair: each order then has as many pairs,
        // and a penalty for running second cancels in the median.
        if (ta.size() % 2 != 0) continue;
        const bool enough = total >= cfg.min_time_s && static_cast<int>(ta.size()) >= cfg.min_pairs;
        if (enough || seconds_since(start) > cap_s) break;
    }
    return summarize_pairs(ta, tb);
}

PairedStats measure_blocked(const std::function<double()>& a, const std::function<double()>& b,
                            const PairedConfig& cfg, const BlockHook& on_block) {
    check_paired_config(cfg);
    if (!(cfg.block_s > 0)) throw std::invalid_argument("blocked timing needs block_s > 0");
    warm_up(a, b, cfg.warmup_s);

    // One block of a side: samples until they add up to block_s, those begun in
    // its first quarter dropped (all of them, where samples are long: then the
    // last one stands for the block).
    std::vector<double> kept_a, kept_b;
    const auto block = [&](const std::function<double()>& f, int index, std::vector<double>& kept, double& span) {
        const char* const side = index == 0 ? "A" : "B";
        if (on_block) on_block(index, true);
        std::vector<double> settled;
        double sum = 0, last = 0;
        while (sum < cfg.block_s) {
            last = checked_sample(f, side);
            if (sum >= cfg.block_s / 4) settled.push_back(last);
            sum += last;
        }
        span += sum;
        if (on_block) on_block(index, false);
        if (settled.empty()) settled.push_back(last);
        kept.insert(kept.end(), settled.begin(), settled.end());
        return summarize(std::move(settled)).median_s;
    };
    std::vector<double> block_a, block_b;
    double total = 0;
    const auto start = Clock::now();
    const double cap_s = std::max(cfg.max_time_s, cfg.min_time_s);
    for (;;) {
        const bool a_first = block_a.size() % 2 == 0;  // A B, then B A, ...
        double x = 0, y = 0;
        if (a_first) {
            x = block(a, 0, kept_a, total);
            y = block(b, 1, kept_b, total);
        } else {
            y = block(b, 1, kept_b, total);
            x = block(a, 0, kept_a, total);
        }
        block_a.push_back(x);
        block_b.push_back(y);
        if (block_a.size() % 2 != 0) continue;
        if ((total >= cfg.min_time_s && block_a.size() >= 2) || seconds_since(start) > cap_s) break;
    }
    PairedStats s = summarize_pairs(block_a, block_b);
    s.a = summarize(std::move(kept_a));
    s.b = summarize(std::move(kept_b));
    return s;
}

}  // namespace rigel
