// The GEMM library's named suites: the cases `rigel gemm verify` checks and
// `rigel gemm bench` times, as tables, so that a suite is asked for by name,
// recorded by name in the CSV and the sidecar, and the same on every visit.
// Pure host code, unit-tested (tests/host/test_gemm_suites.cpp): every case
// passes rigel::gemm::check and every refusal is refused for the reason named.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/case_filter.hpp"
#include "rigel/gemm.hpp"

namespace rigel::gemm {

// What a candidate is timed against (the bench CSV's candidate and baseline columns).
enum class Contender : std::uint8_t {
    rigel,             // Plan::run: the fused kernel
    rigel_decomposed,  // Plan::run_decomposed: the GEMM, then a separate epilogue kernel
    cublaslt,          // cuBLASLt with the same layouts, types and epilogue, best of its heuristic's algorithms
    cublas,            // cublasGemmEx: epilogue none, beta 0 (or C == D), bf16/f16 operands only
};
const char* name(Contender c);

// One GEMM of a suite.
struct GemmCase {
    std::string name;        // unique within its suite
    Desc desc{};
    float alpha = 1.0f, beta = 0.0f;  // beta != 0: C is read (a separate buffer, or D itself when in_place)
    bool in_place = false;   // C is D (same pointer and ld)
    bool bgrad_accumulate = false;  // dgelu_bgrad adds its sums into a bgrad that holds random values
                                    // (Args::bgrad_accumulate), checked as added to them
    int count = 1;           // how often the product occurs per training step (gpt2, llama7b); 1 elsewhere
    std::string kernel{};    // a kernel_named() name run instead of the dispatcher's choice; empty: the dispatcher
    int group_m = 0;         // a ping-pong choice's tile order, groups of this many tile rows (Choice::group_m); 0: its own
};
// True where a case runs on the dispatcher's own plan (Plan(desc), with its sub-plans: the residual plan for
// beta != 0, ...): it names neither a kernel nor a tile order, which give a plan on that choice alone.
inline bool on_dispatcher_plan(const GemmCase& c) { return c.kernel.empty() && c.group_m == 0; }

struct GemmSuite {
    std::string_view name;
    std::string_view purpose{};   // one line: what the suite measures, and why
    std::vector<GemmCase> cases{};
    // The baselines rigel is timed against (bench), each where it applies
    // (applies()): rigel_decomposed only with an epilogue, cublas only
    // without one.
    std::vector<Contender> baselines{};
};

// Every suite: gpt2, llama7b, fused, layouts, small (timed), verify (checked only).
std::span<const GemmSuite> gemm_suites();
// nullptr when no suite has that name.
const GemmSuite* find_gemm_suite(std::string_view name);
// The suites `bench --suite all` runs, in order: every suite that names baselines.
std::vector<const GemmSuite*> bench_suites();

// The cases of suite `suite` whose names contain one of the comma-separated
// texts of `filter` (all of them when `filter` is empty), in the suite's
// order: `--cases` of rigel gemm verify and bench, for a short run of a few.
// std::invalid_argument, in one sentence, for an empty text in the list or a
// text that no case's name contains.
std::vector<GemmCase> cases_matching(std::span<const GemmCase> cases, const std::string& filter,
                                     std::string_view suite);
// Its parts, rigel::case_filter_texts and rigel::name_matches, are in core/case_filter.hpp.

// Whether `baseline` computes the same thing as rigel for `c`, so that a pair can be timed.
bool applies(Contender baseline, const GemmCase& c);

// What is wrong with a suite, one sentence each (empty: nothing): no case, a
// case without a name or with a repeated one, a case check() refuses, a count
// below 1, an in-place case that never reads C (beta 0) or whose ldc is not
// ldd, a kernel name kernel_named() refuses for the case's type; rigel as a
// baseline, a repeated baseline, one that applies to no case.
std::vector<std::string> check_gemm_suite(const GemmSuite& s);

// "128x256 splits 1": a plan's kernel as the CSVs name it.
std::string kernel_text(const Choice& c);
// The case's kernel: the one it names, or the dispatcher's for a GPU of `sms` SMs and that DRAM peak, with
// the case's tile order (group_m) where the kernel is a ping-pong one; nullopt where its type has no such
// kernel. Throws where the case names a kernel that is not a ping-pong one and asks for a tile order.
std::optional<Choice> case_choice(const GemmCase& c, int sms, double dram_bytes_per_s = kH200DramBytesPerSecond);

// The refusals the GPU test checks (rigel gemm verify --suite refusals): a
// desc or a call that Plan must refuse before anything is launched, with the
// text the refusal must contain.
enum class Breakage : std::uint8_t {
    none,           // the desc itself is refused (Plan's constructor)
    misaligned_a,   // A starts 2 bytes past a 16-byte boundary
    misaligned_b,
    null_d,
    d_aliases_a,    // D starts inside A
    d_aliases_b,
    c_missing,      // beta != 0 and no C
    bias_missing,   // a bias epilogue without a bias
    aux_missing,    // bias_gelu_aux without aux
    bgrad_missing,  // dgelu_bgrad without bgrad
    c_overlaps_d,   // C starts inside D, not at it
    accumulate_without_bgrad,  // Args::bgrad_accumulate with an epilogue that writes no bgrad
};
struct RefusalCase {
    std::string name;
    Desc desc{};
    Breakage breakage = Breakage::none;
    float beta = 0.0f;
    std::string expect{};  // a part of the refusal's sentence
};
std::span<const RefusalCase> refusal_cases();

// The arguments of a call to `d` (with `beta`) with every buffer it needs,
// at offsets into one allocation that starts at `base` (16-byte aligned),
// then broken as `b` says (Breakage::none: the intact call). Only addresses:
// nothing is dereferenced, so the host tests pass a made-up base and the GPU
// test a real allocation. `d` must pass check().
struct RefusalLayout {
    Args args;
    std::size_t bytes = 0;  // the allocation the buffers need
};
RefusalLayout refusal_layout(const Desc& d, float beta, Breakage b, std::uintptr_t base);

}  // namespace rigel::gemm
