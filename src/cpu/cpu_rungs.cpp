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
    Rung{"k01_cpu_naive", Backend::cpu, "cpu", kF32F64, BLayout::k_by_n, 0, false, VendorRank::none,
         kNaiveMaxWork, "the textbook i-j-k triple loop: the floor", cpu::k01_naive, nullptr},
    Rung{"k02_cpu_ikj", Backend::cpu, "cpu", kF32F64, BLayout::k_by_n, 0, false, VendorRank::none, kLoopMaxWork,
         "i-k-j order: the inner loop runs along rows of B and C, contiguous, so the compiler vectorizes it",
         cpu::k02_ikj, nullptr},
    Rung{"k03_cpu_blocked", Backend::cpu, "cpu", kF32F64, BLayout::k_by_n, 0, false, VendorRank::none, kLoopMaxWork,
         "cache tiles of i, k, j: a tile of B stays in L2 for many rows of A, cutting B's memory traffic",
         cpu::k03_blocked, nullptr},
    Rung{"k04_cpu_packed_simd", Backend::cpu, "cpu", kF32F64, BLayout::k_by_n, 0, false, VendorRank::none, 0,
         "packed panels + an AVX-512/AVX2 register-tile microkernel (picked at run time): FMA-bound, one core",
         cpu::k04_packed_simd, nullptr},
    Rung{"k05_cpu_threads", Backend::cpu, "cpu", kF32F64, BLayout::k_by_n, 0, true, VendorRank::none, 0,
         "k04 on every core: threads pack each shared block together, then split its register tiles",
         cpu::k05_threads, nullptr},
#if RIGEL_HAVE_OPENBLAS
    Rung{"vendor_openblas", Backend::cpu, "vendor", kF32F64, BLayout::k_by_n, 0, false, VendorRank::primary, 0,
         "OpenBLAS sgemm/dgemm on one thread: the single-core baseline", cpu::vendor_openblas, nullptr},
    Rung{"vendor_openblas_mt", Backend::cpu, "vendor", kF32F64, BLayout::k_by_n, 0, true, VendorRank::primary, 0,
         "OpenBLAS sgemm/dgemm on all threads: the multi-core baseline", cpu::vendor_openblas_mt, nullptr},
#endif
};

}  // namespace

std::span<const Rung> cpu_rungs() { return kCpuRungs; }

}  // namespace rigel
