// The CPU half of the ladder, in climbing order. One row per rung: adding a
// rung is one file plus one row here.
#include "cpu/cpu_rungs.hpp"

#include <array>

namespace rigel {
namespace {

constexpr std::uint32_t kF32F64 = dtype_mask(DType::f32, DType::f64);

// The naive loop runs at a few Gflop/s: 2048^3 takes seconds, 4096^3 minutes.
constexpr double kNaiveMaxWork = 2048.0 * 2048.0 * 2048.0;
// The unblocked/compiler-vectorized loops run at tens of Gflop/s: 4096^3 takes seconds.
constexpr double kLoopMaxWork = 4096.0 * 4096.0 * 4096.0;

const std::array kCpuRungs{
    Rung{.id = "k01_cpu_naive", .backend = Backend::cpu, .group = "cpu", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n, .max_work = kNaiveMaxWork,
         .lesson = "the textbook i-j-k triple loop: the floor",
         .run = cpu::k01_naive},
    Rung{.id = "k02_cpu_ikj", .backend = Backend::cpu, .group = "cpu", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n, .max_work = kLoopMaxWork,
         .lesson = "i-k-j order: the inner loop runs along rows of B and C, contiguous, so the compiler vectorizes it",
         .run = cpu::k02_ikj},
    Rung{.id = "k03_cpu_blocked", .backend = Backend::cpu, .group = "cpu", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n, .max_work = kLoopMaxWork,
         .lesson = "cache tiles of i, k, j: a tile of B stays in L2 for many rows of A, cutting B's memory traffic",
         .run = cpu::k03_blocked},
    Rung{.id = "k04_cpu_packed_simd", .backend = Backend::cpu, .group = "cpu", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n,
         .lesson = "packed panels + an AVX-512/AVX2 register-tile microkernel (picked at run time): FMA-bound, one "
                   "core",
         .run = cpu::k04_packed_simd},
    Rung{.id = "k05_cpu_threads", .backend = Backend::cpu, .group = "cpu", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n, .parallel = true,
         .lesson = "k04 on every core: threads pack each shared block together, then split its register tiles",
         .run = cpu::k05_threads},
#if RIGEL_HAVE_OPENBLAS
    Rung{.id = "vendor_openblas", .backend = Backend::cpu, .group = "vendor", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n, .vendor = VendorRank::primary,
         .lesson = "OpenBLAS sgemm/dgemm on one thread: the single-core baseline",
         .run = cpu::vendor_openblas},
    Rung{.id = "vendor_openblas_mt", .backend = Backend::cpu, .group = "vendor", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n, .parallel = true, .vendor = VendorRank::primary,
         .lesson = "OpenBLAS sgemm/dgemm on all threads: the multi-core baseline",
         .run = cpu::vendor_openblas_mt},
#endif
};

}  // namespace

std::span<const Rung> cpu_rungs() { return kCpuRungs; }

}  // namespace rigel
