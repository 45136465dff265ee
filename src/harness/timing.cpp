// Timing statistics: median of many repetitions, with their spread.
#include "harness/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace rigel {
namespace {

double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0.0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(sorted.size() - 1, lo + 1);
    const double frac = pos - static_cast<double>(lo);
    return sorted[lo] * (1.0 - frac) + sorted[hi] * frac;
}

}  // namespace

TimingStats summarize(std::vector<double> samples) {
    TimingStats s;
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.reps = static_cast<int>(samples.size());
    s.min_s = samples.front();
    s.median_s = quantile(samples, 0.5);
    s.p10_s = quantile(samples, 0.1);
    s.p90_s = quantile(samples, 0.9);
    s.mean_s = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.reps);
    if (s.reps < 2) return s;  // one sample has no spread: noise_rel stays NaN
    double var = 0;
    for (double x : samples) var += (x - s.mean_s) * (x - s.mean_s);
    var /= s.reps - 1;
    s.noise_rel = s.mean_s > 0 ? std::sqrt(var) / s.mean_s : 0.0;
    return s;
}

void check_timing_config(const TimingConfig& cfg) {
    auto seconds = [](const char* what, double v) {
        if (!std::isfinite(v) || v < 0 || v > kMaxMeasureSeconds) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s must be a number of seconds from 0 to %g (got %g)", what,
                          kMaxMeasureSeconds, v);
            throw std::invalid_argument(buf);
        }
    };
    seconds("warm-up", cfg.warmup_s);
    seconds("minimum timed span", cfg.min_time_s);
    if (!std::isfinite(cfg.max_time_s) || cfg.max_time_s <= 0)
        throw std::invalid_argument("the timing cap must be a finite, positive number of seconds");
    if (cfg.min_reps < 1 || cfg.max_reps < cfg.min_reps)
        throw std::invalid_argument("repetitions must satisfy 1 <= min_reps <= max_reps");
}

TimingStats measure(const std::function<double()>& sample, const TimingConfig& cfg) {
    check_timing_config(cfg);
    using clock = std::chrono::steady_clock;
    const auto since = [](clock::time_point t0) {
        return std::chrono::duration<double>(clock::now() - t0).count();
    };
    const auto warm_start = clock::now();
    do {
        sample();
    } while (since(warm_start) < cfg.warmup_s);

    std::vector<double> samples;
    double total = 0;
    bool capped = false;
    const auto start = clock::now();
    while (static_cast<int>(samples.size()) < cfg.max_reps) {
        const double t = sample();
        samples.push_back(t);
        total += t;
        const bool enough = total >= cfg.min_time_s && static_cast<int>(samples.size()) >= cfg.min_reps;
        if (enough) break;
        // The cap wins over min_reps and min_time_s (timing.hpp).
        if (since(start) > cfg.max_time_s) {
            capped = true;
            break;
        }
    }
    TimingStats s = summarize(std::move(samples));
    s.capped = capped;
    return s;
}

double gflops(double m, double n, double k, double seconds) {
    return seconds > 0 ? 2.0 * m * n * k / seconds * 1e-9 : 0.0;
}

std::string format_rate(double giga_per_s, std::string_view giga_unit) {
    // The unit's leading G becomes T from 1000 up: "Gop/s" -> "Top/s".
    const std::string_view rest = giga_unit.substr(giga_unit.starts_with('G') ? 1 : 0);
    char buf[48];
    if (giga_per_s >= 1000 && giga_unit.starts_with('G'))
        std::snprintf(buf, sizeof buf, "%.1f T%.*s", giga_per_s / 1000, static_cast<int>(rest.size()), rest.data());
    else
        std::snprintf(buf, sizeof buf, "%.2f %.*s", giga_per_s, static_cast<int>(giga_unit.size()), giga_unit.data());
    return buf;
}

}  // namespace rigel
