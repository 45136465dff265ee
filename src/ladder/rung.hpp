// A rung of the ladder is one function plus one row in a registry table. The
// runner walks the tables; nothing about a particular rung is hard-wired in
// main. A rung declares what it can take (types, layout of B, minimum compute
// capability, shape rules) and the runner checks all of it before launch.
// Registry rows name their fields (C++20 designated initializers) and leave out
// the ones that keep their defaults below.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "harness/backend.hpp"

namespace rigel {

// How B is stored. A is always M x K row-major and C always M x N row-major.
// k_by_n: B is K x N row-major (the textbook layout; "NN" in BLAS terms).
// n_by_k: B is N x K row-major, i.e. K contiguous for every column of C ("TN"),
//         the layout tensor-core paths prefer and fp8 wgmma requires.
enum class BLayout : std::uint8_t { k_by_n, n_by_k };

// One GEMM, C = A * B, as a rung receives it. Pointers are host memory for CPU
// rungs and device memory for CUDA rungs.
struct GemmProblem {
    DType type;
    std::int64_t m, n, k;
    const void* a;
    const void* b;
    void* c;
    int threads = 1;          // CPU rungs that run in parallel use this many
    void* stream = nullptr;   // cudaStream_t for CUDA rungs
};

using RunFn = void (*)(const GemmProblem&);
// Returns an empty string when the rung can take the problem, else the reason
// it refuses (said to the user before anything runs).
using CheckFn = std::string (*)(const GemmProblem&);

constexpr std::uint32_t dtype_bit(DType t) { return 1u << static_cast<unsigned>(t); }
template <typename... T>
constexpr std::uint32_t dtype_mask(T... t) { return (dtype_bit(t) | ...); }

enum class VendorRank : std::uint8_t {
    none,       // an own rung
    primary,    // the vendor library's default path: the "% of vendor" denominator
    variant,    // another configuration of the vendor library (e.g. fp8 fast accumulation)
};

struct Rung {
    std::string_view id;          // kNN_technique, or vendor_library_variant
    Backend backend;
    std::string_view group;       // cpu, simt, tensor, hopper, vendor
    std::uint32_t dtypes;         // dtype_mask(...)
    BLayout b_layout;
    int min_sm = 0;               // minimum compute capability x10 (90 = sm_90); 0 = any
    bool parallel = false;        // CPU: uses GemmProblem::threads
    VendorRank vendor = VendorRank::none;
    // fp8 sums promoted out of the tensor core into fp32 (k34, k36, k38): judged, and paired by --paired,
    // against the vendor's default path; every other own rung against the vendor's variant where the run
    // has one (cuBLASLt's FAST_ACCUM, which keeps the sums in the tensor core as they do).
    bool promotes = false;
    double max_work = 0;          // M*N*K above which the default ladder skips it (too slow); 0 = no limit
    std::string_view lesson;      // one line: what this rung adds over the one below
    RunFn run;
    CheckFn check = nullptr;      // nullptr: any shape
};

// The registries, one per part of the tree. The CUDA one is empty when rigel
// is built without CUDA.
std::span<const Rung> cpu_rungs();
std::span<const Rung> cuda_rungs();

}  // namespace rigel
