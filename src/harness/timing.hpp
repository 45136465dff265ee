// The one timing harness. A backend supplies "time one repetition" (host clock
// around a CPU call; CUDA events around a launch, after an L2 flush); this file
// turns repetitions into statistics with a warm-up by time.
#pragma once
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace rigel {

// The longest warm-up, and the longest minimum timed span, of one measurement:
// a ladder of about 40 rungs at a few sizes stays within hours even at this
// bound, and a clock or a cache settles in well under a second.
inline constexpr double kMaxMeasureSeconds = 60.0;

// Repetitions go on until both min_time_s and min_reps are reached, or
// max_reps; but none begins once max_time_s has passed since the first: that
// cap wins over min_reps (and over min_time_s, where it is the shorter), so
// that a rung slower than the cap is timed once and the ladder still ends.
struct TimingConfig {
    double warmup_s = 0.2;    // run untimed until this much time has passed (clocks settle)
    double min_time_s = 0.5;  // keep sampling until the samples add up to this...
    int min_reps = 5;         // ...and at least this many were taken
    int max_reps = 2000;
    double max_time_s = 30.0; // begin no repetition after this long (wins over the two above)
};

struct TimingStats {
    double median_s = 0, min_s = 0, p10_s = 0, p90_s = 0, mean_s = 0;
    // Standard deviation / mean; NaN with fewer than two repetitions, which
    // say nothing of the spread (the CSV leaves the cell empty).
    double noise_rel = std::numeric_limits<double>::quiet_NaN();
    int reps = 0;
    // measure(): max_time_s ended the sampling before min_reps or min_time_s
    // was reached.
    bool capped = false;
};

// Throws std::invalid_argument, naming the field, unless warmup_s and
// min_time_s lie in [0, kMaxMeasureSeconds], max_time_s is finite and
// positive, and 1 <= min_reps <= max_reps.
void check_timing_config(const TimingConfig& cfg);

// `sample` runs one repetition and returns its duration in seconds. The
// configuration is checked first (check_timing_config), so that no setting
// can make it run forever.
TimingStats measure(const std::function<double()>& sample, const TimingConfig& cfg);

// Statistics of an arbitrary set of durations (exposed for tests).
TimingStats summarize(std::vector<double> samples);

double gflops(double m, double n, double k, double seconds);

// A rate given in `giga_unit` ("Gflop/s", or "Gop/s" for integer products),
// shown as "612.3 Tflop/s" or "2.41 Gflop/s" ("1417.5 Top/s" for Gop/s).
std::string format_rate(double giga_per_s, std::string_view giga_unit);

}  // namespace rigel
