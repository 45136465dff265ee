// The simt rungs' registry table: the CUDA-core climb from k10 to k16 in fp32,
// then the tutorial's tiled-fp16 step (k17). Adding a rung is one file plus one
// row here.
#include <array>

#include "cuda/ladder/simt_rungs.cuh"
#include "cuda/registry_parts.hpp"

namespace rigel::cuda {
namespace {

constexpr std::uint32_t kF32 = dtype_mask(DType::f32);
constexpr std::uint32_t kF32F64 = dtype_mask(DType::f32, DType::f64);
constexpr std::uint32_t kF16 = dtype_mask(DType::f16);

// k10 and k11 fetch every operand from L2 for every FMA; 4096^3 takes a
// fraction of a second per repetition, 8192^3 seconds.
constexpr double kGlobalOnlyMaxWork = 4096.0 * 4096.0 * 4096.0;

const std::array kSimtRungs{
    Rung{"k10_naive", Backend::cuda, "simt", kF32, BLayout::k_by_n, 0, false, VendorRank::none,
         kGlobalOnlyMaxWork, "one thread per output, threadIdx.x along rows: uncoalesced on purpose", k10_naive,
         k10_naive_check},
    Rung{"k11_coalesced", Backend::cuda, "simt", kF32, BLayout::k_by_n, 0, false, VendorRank::none,
         kGlobalOnlyMaxWork, "threadIdx.x along columns: a warp's loads of B and stores of C coalesce",
         k11_coalesced, k11_coalesced_check},
    Rung{"k12_smem_tiled", Backend::cuda, "simt", kF32F64, BLayout::k_by_n, 0, false, VendorRank::none, 0,
         "32x32 tiles staged in shared memory: each global element is used 32 times", k12_smem_tiled,
         k12_smem_tiled_check},
    Rung{"k13_regblock_1d", Backend::cuda, "simt", kF32, BLayout::k_by_n, 0, false, VendorRank::none, 0,
         "8 outputs per thread down a column: one shared load of B feeds 8 FMAs", k13_regblock_1d,
         k13_regblock_1d_check},
    Rung{"k14_regblock_2d", Backend::cuda, "simt", kF32, BLayout::k_by_n, 0, false, VendorRank::none, 0,
         "8x8 outputs per thread, 128x128 block tile: 16 values from shared memory feed 64 FMAs", k14_regblock_2d,
         k14_regblock_2d_check},
    Rung{"k15_vectorized", Backend::cuda, "simt", kF32, BLayout::k_by_n, 0, false, VendorRank::none, 0,
         "float4 global loads and stores, A transposed in shared memory: conflict-free A reads", k15_vectorized,
         k15_vectorized_check},
    Rung{"k16_warptiled", Backend::cuda, "simt", kF32, BLayout::k_by_n, 80, false, VendorRank::none, 0,
         "128x256 block, 8x16 outputs per thread from double-buffered LDS.128 fragments, 4-stage cp.async", k16_warptiled,
         k16_warptiled_check},
    Rung{"k17_tiled_half", Backend::cuda, "simt", kF16, BLayout::k_by_n, 0, false, VendorRank::none, 0,
         "the tutorial's tiled fp16 step: k12 with half operands, fp32 accumulation", k17_tiled_half,
         k17_tiled_half_check},
};

}  // namespace

std::span<const Rung> simt_rungs() { return kSimtRungs; }

}  // namespace rigel::cuda
