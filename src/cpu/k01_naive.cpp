// k01_cpu_naive: the textbook triple loop, i-j-k, one dot product per output.
// Run alone: rigel ladder --backend cpu --rungs k01_cpu_naive --dtype f32 --sizes 1024
//
// Adds: nothing; it is the floor every other rung is measured against (the
// tutorial's first step).
// Bottleneck: the inner loop walks B down a column, a stride of N elements, so
// nearly every load of B misses the cache and the loop is latency-bound; the
// dependent additions into one accumulator also serialize on FMA latency.
// Measured: README.md, "The climb" and "2048 x 2048 x 2048" (k01_cpu_naive).
#include <cstdint>

#include "cpu/cpu_rungs.hpp"

namespace rigel::cpu {
namespace {

template <typename T>
void naive(const GemmProblem& p) {
    const auto* a = static_cast<const T*>(p.a);
    const auto* b = static_cast<const T*>(p.b);
    auto* c = static_cast<T*>(p.c);
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.n; ++j) {
            T acc = 0;
            for (std::int64_t kk = 0; kk < p.k; ++kk) acc += a[i * p.k + kk] * b[kk * p.n + j];
            c[i * p.n + j] = acc;
        }
}

}  // namespace

void k01_naive(const GemmProblem& p) {
    if (p.type == DType::f64)
        naive<double>(p);
    else
        naive<float>(p);
}

}  // namespace rigel::cpu
