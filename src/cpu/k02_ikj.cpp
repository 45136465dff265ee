// k02_cpu_ikj: the naive loop with its two inner loops swapped, i-k-j.
// Run alone: rigel ladder --backend cpu --rungs k02_cpu_ikj --dtype f32 --sizes 2048
//
// Adds over k01: the innermost loop now runs along a row of B and a row of C,
// both contiguous, so every cache line fetched is used in full and the loop
// has no dependency between iterations: the compiler vectorizes it. It is
// built for x86-64-v4 (AVX-512), v3 (AVX2) and baseline SSE2 with GCC's
// target_clones and chosen when the program loads, never with -march=native;
// in the v3/v4 clones GCC fuses the multiply and add into one FMA.
// Bottleneck: per vector of C, two loads and a store, so the FMA units idle
// most of the time; and for every row of A all of B (K x N) streams through
// the caches again: from the L3 while B fits there (16 MB at N=2048 in f32),
// from DRAM beyond.
// Prediction: 10-30x the naive loop at N=2048; under a tenth of the FMA peak.
// Measured: README.md, "The climb" and "2048 x 2048 x 2048" (k02_cpu_ikj).
#include <algorithm>
#include <cstdint>

#include "cpu/cpu_rungs.hpp"

namespace rigel::cpu {
namespace {

template <typename T>
[[gnu::always_inline]] inline void ikj(const GemmProblem& p) {
    const auto* a = static_cast<const T*>(p.a);
    const auto* b = static_cast<const T*>(p.b);
    auto* c = static_cast<T*>(p.c);
    const std::int64_t n = p.n, k = p.k;
    for (std::int64_t i = 0; i < p.m; ++i) {
        T* __restrict crow = c + i * n;
        std::fill(crow, crow + n, T(0));
        for (std::int64_t kk = 0; kk < k; ++kk) {
            const T aik = a[i * k + kk];
            const T* __restrict brow = b + kk * n;
            for (std::int64_t j = 0; j < n; ++j) crow[j] += aik * brow[j];
        }
    }
}

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
void ikj_f32(const GemmProblem& p) { ikj<float>(p); }

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
void ikj_f64(const GemmProblem& p) { ikj<double>(p); }

}  // namespace

void k02_ikj(const GemmProblem& p) {
    if (p.type == DType::f64)
        ikj_f64(p);
    else
        ikj_f32(p);
}

}  // namespace rigel::cpu
