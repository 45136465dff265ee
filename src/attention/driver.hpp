// The GPU side of `rigel attention`: one case verified (Q, K, V uploaded from
// the reference's random inputs, O and lse poisoned, the kernel run, the bytes
// checked against float64) and one case timed against cuDNN in paired samples,
// each contender verified before it is timed. Plain C++; the CUDA
// implementation is src/cuda/attention/attention_driver.cu, and a build without
// CUDA throws from every call (the CLI says "skipped" before it gets here).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attention/suites.hpp"
#include "harness/executor.hpp"
#include "harness/paired.hpp"
#include "rigel/attention.hpp"

namespace rigel::attention {

// Who computed an output: rigel's kernel of the plan; rung 2 (fa2) or rung 1
// (decomposed) as a rung below it; rigel's deterministic backward (Desc::deterministic,
// dQ in a pass of its own) beside the plan's atomic one; or cuDNN's fused SDPA. none is a
// bench row's baseline when rigel had nothing to be paired with.
enum class Contender : std::uint8_t { rigel, rigel_fa2, rigel_decomposed, rigel_deterministic, cudnn, none };
inline const char* name(Contender c) {
    switch (c) {
        case Contender::rigel: return "rigel";
        case Contender::rigel_fa2: return "rigel_fa2";
        case Contender::rigel_decomposed: return "rigel_decomposed";
        case Contender::rigel_deterministic: return "rigel_deterministic";
        case Contender::cudnn: return "cudnn";
        case Contender::none: return "none";
    }
    return "?";
}

// One contender's forward pass of one case against float64 (a row of the verify CSV).
struct VerifyRow {
    std::string case_name;
    Desc desc{};  // defaults filled in
    Contender who = Contender::rigel;
    std::string kernel{};  // rigel's kernel name, or cuDNN's version
    bool backward = false;  // the backward pass (dQ, dK, dV checked, on rigel's O and lse)
    bool pass = false;
    double err_max_scaled = 0;  // of the allowance; <= 1 passes
    std::int64_t checked_heads = 0, checked_rows = 0;
    std::string reason{};  // the first failure
};

// One timed pair (a row of the bench CSV): rigel against cuDNN, or against
// rung 2 (rigel_fa2) when it runs a higher rung; or, with nothing to pair
// with, rigel alone (baseline none, stats.a only).
struct BenchRow {
    std::string case_name;
    Desc desc{};
    std::string kernel{};
    bool backward = false;  // flops: backward_flops, else forward_flops
    Contender baseline = Contender::cudnn;
    PairedStats stats{};    // side A rigel, side B the baseline
    DeviceSample sample{};  // clocks, power and temperature over the pairs
    double candidate_tflops = 0, baseline_tflops = 0;  // flops / median time
};

struct BenchOutcome {
    std::vector<VerifyRow> verified;   // rigel's output and each baseline's, checked before any timing
    std::vector<BenchRow> rows;        // a pair for each baseline that computes the case and passed, else rigel alone
    std::vector<std::string> skipped;  // "cudnn: why"
};

// Verifies rigel's `kernel` on `c`, forward, then the backward pass on its O
// and lse (and cuDNN's forward and backward too when `baselines`).
std::vector<VerifyRow> verify_case(Executor& ex, const AttentionCase& c, Kernel kernel, bool baselines,
                                   std::uint64_t seed, int threads);

// Verifies rigel's `kernel`, cuDNN and (when `kernel` is not fa2) rung 2 on
// `c`, then times rigel against each of them that passed, in pairs; then the
// same for the backward pass against cuDNN's.
BenchOutcome bench_case(Executor& ex, const AttentionCase& c, Kernel kernel, const PairedConfig& timing,
                        std::uint64_t seed, int threads);

}  // namespace rigel::attention
