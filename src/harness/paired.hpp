// Paired timing: a head-to-head ratio of two computations, measured so that the
// device's drift cancels. Under a power cap the SM clock wanders with
// temperature (back-to-back runs of one cuBLAS call differ by up to 10 % on the
// H200 machine), so two medians taken a minute apart are biased by whichever
// ran cooler. Here A and B share one warm-up, then alternate, one sample of
// each per pair, the order flipped every pair (A B, B A, A B, ...): a drift
// within a pair then favours A and B equally often. The ratio is taken per
// pair, where both sides saw the same clock, and summarized by its median and
// spread.
#pragma once
#include <functional>

#include "harness/timing.hpp"

namespace rigel {

struct PairedConfig {
    double warmup_s = 0.5;    // A and B alternately, untimed, until this much wall time has passed
    double min_time_s = 1.0;  // keep pairing until the samples of both sides add up to this...
    int min_pairs = 10;       // ...and at least this many pairs were taken
    int max_pairs = 2000;     // the run ends after an even number of pairs, unless this cap is odd
    double max_time_s = 30.0; // no pair is begun after this much wall time (never before min_time_s)
    // 0: single samples in turn, as above. Otherwise blocked timing: each side runs
    // alone for this many seconds of samples, the sides taking turns by blocks
    // (A B, B A, A B, ...), and the ratio is taken per pair of blocks. Under a power
    // cap single samples in turn share one clock, set by the two sides' mean power;
    // a block lasts long enough for the clock to settle to its own side's draw, as
    // in a run of one kernel after another. min_pairs and max_pairs count samples
    // of paired timing only; blocked timing takes at least 2 pairs of blocks.
    double block_s = 0;
    // Paired timing only (block_s 0): the host sleeps this many seconds before
    // each timed sample, the device idle meanwhile (a sample returns once its
    // launch has finished). Back to back under a power cap, the clock is set by
    // the sides' sustained draw; after a long enough pause each launch starts
    // cool, at the clock it gets alone, so the ratio compares the launches'
    // cycles rather than their energy. 0 (the default): no pause.
    double pause_s = 0;
};

struct PairedStats {
    TimingStats a, b;  // each side's samples, as measure() summarizes them
    // rate_A / rate_B = t_B / t_A per pair: above 1, A is faster.
    double ratio_median = 0, ratio_p10 = 0, ratio_p90 = 0;
    int pairs = 0;
};

// Throws std::invalid_argument, naming the field, unless warmup_s, min_time_s
// block_s and pause_s lie in [0, kMaxMeasureSeconds], at most one of block_s
// and pause_s is set, max_time_s is finite and positive, and
// 1 <= min_pairs <= max_pairs.
void check_paired_config(const PairedConfig& cfg);

// `a` and `b` each run one repetition and return its duration in seconds (on
// the GPU: CUDA events around one launch after an L2 flush, Executor::time_once).
// The configuration is checked first. A sample that is not a finite positive
// number of seconds is an error (std::runtime_error): a ratio cannot be
// taken of it.
PairedStats measure_paired(const std::function<double()>& a, const std::function<double()>& b,
                           const PairedConfig& cfg);

// Blocked timing (cfg.block_s > 0; measure_paired calls it): after the common
// warm-up, blocks of each side alone in turns A B, B A, ..., each block's
// samples adding up to block_s. A block's duration is the median of its samples
// after its first quarter (by their sum: the clock settling to that side's
// draw); the result's ratio statistics are over the pairs of blocks (pairs:
// their count, even, at least 2, ending once the samples add up to min_time_s
// or max_time_s of wall time has passed), a and b over every sample kept.
// on_block, where given, is called before (begin true) and after each timed
// block with its side (0: A, 1: B), e.g. to read the device's clock and power
// for each side apart.
using BlockHook = std::function<void(int side, bool begin)>;
PairedStats measure_blocked(const std::function<double()>& a, const std::function<double()>& b,
                            const PairedConfig& cfg, const BlockHook& on_block = {});

// The pairs' statistics from their samples, a[i] and b[i] taken in pair i
// (exposed for tests).
PairedStats summarize_pairs(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace rigel
