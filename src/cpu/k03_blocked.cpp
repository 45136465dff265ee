// k03_cpu_blocked: the i-k-j loop of k02 over cache-sized tiles of i, k and j.
// Run alone: rigel ladder --backend cpu --rungs k03_cpu_blocked --dtype f32 --sizes 2048
//
// Adds over k02: in k02 every row of A streams all of B (K x N) through the
// caches once more. Here C is computed tile by tile: a kTileK x kTileN tile of
// B (128 KB in f32) stays in the L2 while it is used by the kTileM rows of a
// tile of A, and the kTileN-wide strip of a row of C (1 KB in f32) stays in
// the L1 across the kTileK updates it receives. Traffic for B from beyond the
// L2 falls by a factor of kTileM; the inner loop is still k02's, vectorized by
// the compiler (target_clones: AVX-512, AVX2, SSE2).
// Bottleneck: the inner loop still loads and stores C for every vector FMA
// (two loads and a store per 16 flops in AVX-512 f32) and reads B from the
// L2, so it is bound by the load/store ports and the L2, not by the FMAs.
// Prediction: 1.5-2x k02 at N=2048, where B (16 MB) still fits a server's L3
// and k02 is not yet DRAM-bound; more once B outgrows the L3. A tenth of the
// FMA peak: register blocking (k04) is the step that reaches the FMA units.
// Measured: README.md, "The climb" and "2048 x 2048 x 2048" (k03_cpu_blocked).
#include <algorithm>
#include <cstdint>

#include "cpu/cpu_rungs.hpp"

namespace rigel::cpu {
namespace {

// Sizes in elements. A tile of B (kTileK x kTileN) is 128 KB in f32, 256 KB in
// f64: within any x86 L2 of the last decade (256 KB - 2 MB). Other shapes
// (32 x 256 x 512, 256 x 32 x 256, ...) ran the same within noise on a
// Sapphire Rapids core.
constexpr std::int64_t kTileM = 64;
constexpr std::int64_t kTileK = 128;
constexpr std::int64_t kTileN = 256;
static_assert(kTileN % 16 == 0, "a strip of C is whole AVX-512 vectors of f32");

template <typename T>
[[gnu::always_inline]] inline void blocked(const GemmProblem& p) {
    const auto* a = static_cast<const T*>(p.a);
    const auto* b = static_cast<const T*>(p.b);
    auto* c = static_cast<T*>(p.c);
    const std::int64_t m = p.m, n = p.n, k = p.k;
    std::fill(c, c + m * n, T(0));
    for (std::int64_t j0 = 0; j0 < n; j0 += kTileN) {
        const std::int64_t j1 = std::min(n, j0 + kTileN);
        for (std::int64_t k0 = 0; k0 < k; k0 += kTileK) {
            const std::int64_t k1 = std::min(k, k0 + kTileK);
            for (std::int64_t i0 = 0; i0 < m; i0 += kTileM) {
                const std::int64_t i1 = std::min(m, i0 + kTileM);
                for (std::int64_t i = i0; i < i1; ++i) {
                    T* __restrict crow = c + i * n;
                    for (std::int64_t kk = k0; kk < k1; ++kk) {
                        const T aik = a[i * k + kk];
                        const T* __restrict brow = b + kk * n;
                        for (std::int64_t j = j0; j < j1; ++j) crow[j] += aik * brow[j];
                    }
                }
            }
        }
    }
}

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
void blocked_f32(const GemmProblem& p) { blocked<float>(p); }

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
void blocked_f64(const GemmProblem& p) { blocked<double>(p); }

}  // namespace

void k03_blocked(const GemmProblem& p) {
    if (p.type == DType::f64)
        blocked_f64(p);
    else
        blocked_f32(p);
}

}  // namespace rigel::cpu
