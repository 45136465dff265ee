// The GPU side of `rigel gemm`: one case verified (device buffers filled from
// the reference's random inputs, the outputs poisoned, the plan run, the bytes
// checked against float64), one case timed against its baselines in paired
// samples, and one refusal checked (refused before anything is launched, not
// a byte written). Plain C++; the CUDA implementation is
// src/cuda/gemm/gemm_driver.cu, and a build without CUDA throws from every
// call (the CLI says "skipped" before it gets here).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gemm/suites.hpp"
#include "harness/executor.hpp"
#include "harness/paired.hpp"
#include "rigel/gemm.hpp"

namespace rigel::gemm {

// One path of one case against float64 (a row of the verify CSV).
struct VerifyRow {
    std::string case_name;
    Desc desc{};  // leading dimensions filled in
    Contender path = Contender::rigel;
    // kernel_text of the plan's choice ("+ epilogue kernel" on the decomposed
    // path); a baseline's algorithm as its library names it.
    std::string kernel{};
    bool pass = false;
    double err_max_scaled = 0, tolerance = 0;
    std::string reason{};  // the first failure, or the refusal's sentence
    // Where a baseline runs the product otherwise than the desc says, as a user of it would (cuBLASLt:
    // "bias gradient in bf16, cuBLASLt's only type for it"); empty where it does not.
    std::string note{};
};

// One timed pair (a row of the bench CSV): rigel against one baseline.
struct BenchRow {
    std::string case_name;
    Desc desc{};
    Contender candidate = Contender::rigel, baseline = Contender::cublaslt;
    std::string kernel{};   // the candidate's plan, kernel_text
    std::string baseline_note{};  // VerifyRow::note of the baseline: how it was run where not as the desc says
    PairedStats stats{};    // side A the candidate, side B the baseline
    DeviceSample sample{};  // clocks, power and temperature over the pairs
    // Blocked timing (PairedConfig::block_s > 0): each side's own, the median over its blocks
    // of each block's reading; invalid in paired timing, where both sides share one clock.
    DeviceSample candidate_sample{}, baseline_sample{};
    double candidate_tflops = 0, baseline_tflops = 0;  // 2 M N K / median time
};

struct BenchOutcome {
    std::vector<VerifyRow> verified;   // every contender's output checked once before any timing
    std::vector<BenchRow> rows;        // a pair for each baseline that applies, runs here and passed
    std::vector<std::string> skipped;  // "cublaslt: why", a baseline that cannot compute the case
};

// Verifies the fused path of `c` (Plan::run), and the decomposed one
// (Plan::run_decomposed) when the case has an epilogue. `seed` makes the
// inputs and picks the sampled rows; `threads` computes the reference.
std::vector<VerifyRow> verify_case(Executor& ex, const GemmCase& c, std::uint64_t seed, int threads);

// Checks that Plan refuses `r` with a sentence containing r.expect, and that
// nothing was launched: a refused call leaves every byte of its buffers as
// they were. pass is false, with the reason, otherwise.
VerifyRow check_refusal(Executor& ex, const RefusalCase& r);

// Verifies rigel and each baseline of `baselines` that applies to `c`
// (applies()), then times rigel against each that passed, in pairs.
// cuBLASLt runs as a user of it would (cuda::vendor::LtConfig::as_a_user):
// where it refuses rigel's f32 bias gradient, with the gradient in its own
// type in a buffer of its own, checked there (at that type's rounding, against
// the column sums of D) besides D, and the rows say so (VerifyRow::note,
// BenchRow::baseline_note).
BenchOutcome bench_case(Executor& ex, const GemmCase& c, std::span<const Contender> baselines,
                        const PairedConfig& timing, std::uint64_t seed, int threads);

// One launch of a vendor baseline (cuBLASLt or cuBLAS) on the caller's
// buffers on stream s, tuned as a bench case tunes it, cuBLASLt with rigel's
// types exactly and every output in the caller's buffers (LtConfig::same)
// (not waited for: the caller synchronizes, and a timed call measures the
// launch alone); returns its algorithm as the library names it (cuBLASLt: the
// tuned choice, split-K included; cuBLAS: "cublasGemmEx").
std::string run_baseline(Contender who, const Desc& d, const Args& args, Stream s);

// Empty when vendor baseline `who` can compute `d` on this GPU as run_baseline
// runs it (cuBLASLt's heuristic asked for 256-byte aligned pointers); else one
// sentence why not.
std::string baseline_support(Contender who, const Desc& d);

}  // namespace rigel::gemm
