// The one timing harness. A backend supplies "time one repetition" (host clock
// around a CPU call; CUDA events around a launch, after an L2 flush); this file
// turns repetitions into statistics with a warm-up by time.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace rigel {

struct TimingConfig {
    double warmup_s = 0.2;    // run untimed until this much time has passed (clocks settle)
    double min_time_s = 0.5;  // keep sampling until the samples add up to this...
    int min_reps = 5;         // ...and at least this many were taken
    int max_reps = 2000;
    double max_time_s = 30.0; // stop early for very slow rungs
};

struct TimingStats {
    double median_s = 0, min_s = 0, p10_s = 0, p90_s = 0, mean_s = 0;
    double noise_rel = 0;  // standard deviation / mean
    int reps = 0;
};

// `sample` runs one repetition and returns its duration in seconds.
TimingStats measure(const std::function<double()>& sample, const TimingConfig& cfg);

// Statistics of an arbitrary set of durations (exposed for tests).
TimingStats summarize(std::vector<double> samples);

double gflops(double m, double n, double k, double seconds);

// "612.3 Tflop/s" or "2.41 Gflop/s".
std::string format_rate(double gflops);

}  // namespace rigel
