// The CPU half of the ladder, in climbing order. One row per rung: adding a
// rung is one file plus one row here.
#include "cpu/cpu_rungs.hpp"

#include <array>

namespace rigel {
namespace {

constexpr std::uint32_t kF32F64 = dtype_mask(DType::f32, DType::f64);

// The naive loop runs at a few Gflop/s: 2048^3 takes seconds, 4096^3 minutes.
constexpr double kNaiveMaxWork = 2048.0 * 2048.0 * 2048.0;

const std::array kCpuRungs{
    Rung{"k01_cpu_naive", Backend::cpu, "cpu", kF32F64, BLayout::k_by_n, 0, false, VendorRank::none,
         kNaiveMaxWork, "the textbook i-j-k triple loop: the floor", cpu::k01_naive, nullptr},
};

}  // namespace

std::span<const Rung> cpu_rungs() { return kCpuRungs; }

}  // namespace rigel
