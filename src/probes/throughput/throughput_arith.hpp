// The throughput probe's host arithmetic (plain C++): the exact checksums its
// kernels must return and the work they do, so that a ceiling is only
// reported for a kernel that provably did all of it.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "probes/numerics/numerics_model.hpp"

namespace rigel::probes {

// The timed runs' steps cancel (below), so their accumulators end where they
// started whatever the iteration count: alone they would pass a kernel that
// skipped its loop. So every thread of a ceiling kernel also adds to its
// result the trips its loop made: `iters` each, exact in a double (an integer
// far below 2^53 in every sum). The verifying run's short loop, the same
// code, shows that each trip does its work.
inline double loop_trips_sum(long long threads, long long iters) { return double(threads) * double(iters); }

// Scalar FMA kernel: accumulator j of thread t starts at (t + j) & 7 and each
// iteration applies (x*1 + ce) then (x*1 + co), `unroll` times. Verifying run:
// ce = co = 1, so every step adds 1; timed run: ce = 1, co = -1, so the pairs
// cancel. `lanes` values per accumulator (2 for f16x2 / bf16x2). Each thread
// adds its loop's trips (loop_trips_sum).
inline double fma_checksum(long long threads, int chains, int lanes, int unroll, long long iters, bool verify) {
    double total = 0;
    const double step = verify ? 2.0 * unroll * double(iters) : 0.0;
    for (long long t = 0; t < threads; ++t)
        for (int j = 0; j < chains; ++j) total += lanes * (double((t + j) & 7) + step);
    return total + loop_trips_sum(threads, iters);
}

// The sum of all elements of A * B for A (rows_a x k, row-major) and B given
// as n rows of k (K-major, B(k, n) = b[n * k + kk]): sum_k colsum_A(k) * colsum_B(k).
inline double product_sum(const std::vector<double>& a, int rows_a, const std::vector<double>& b_nk, int n, int k) {
    double total = 0;
    for (int kk = 0; kk < k; ++kk) {
        double ca = 0, cb = 0;
        for (int r = 0; r < rows_a; ++r) ca += a[std::size_t(r) * k + kk];
        for (int c = 0; c < n; ++c) cb += b_nk[std::size_t(c) * k + kk];
        total += ca * cb;
    }
    return total;
}

// Small integers in {-2, -1, 1, 2}: exact in every type, never zero (so the
// operands toggle like data, not like a constant).
inline double small_int(SplitMix& rng) {
    const int v = rng.uniform(0, 3);
    return v == 0 ? -2.0 : v == 1 ? -1.0 : v == 2 ? 1.0 : 2.0;
}

// Matrix kernels: per accumulator, `pairs` x (B, -B) per iteration and one
// final B: the verifying run (B- = B) accumulates (2 pairs iters + 1) A*B,
// the timed run exactly A*B. The accumulators' part only: the ceiling
// kernels' threads add their loop's trips to it (loop_trips_sum).
inline double matrix_checksum(double accumulators, double ab_sum, int pairs, long long iters, bool verify) {
    const double factor = verify ? 2.0 * pairs * double(iters) + 1.0 : 1.0;
    return accumulators * factor * ab_sum;
}

// What the starting values add to an mma.sync checksum: every element of
// chain c starts at c, `elems` accumulator elements per thread and chain.
inline double chain_start_sum(long long threads, int chains, int elems) {
    return double(threads) * elems * (double(chains) * (chains - 1) / 2);
}

// The seed of a wgmma workload's random operands. The type's index is the
// position the type had in the probe's own wgmma type list (bf16, f16, tf32,
// e4m3, s8), which seeded the operands of every committed throughput run:
// the data stays bit for bit what those runs measured.
inline std::uint64_t wgmma_operand_seed(std::uint64_t seed, DType t, int n) {
    std::uint64_t index = 0;
    switch (t) {
        case DType::bf16: index = 0; break;
        case DType::f16: index = 1; break;
        case DType::tf32: index = 2; break;
        case DType::e4m3: index = 3; break;
        case DType::i8: index = 4; break;
        default: throw std::invalid_argument("throughput: no wgmma workload for " + std::string(name(t)));
    }
    return seed * 0x20000 + index * 1000 + static_cast<std::uint64_t>(n);
}

}  // namespace rigel::probes
