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
    Rung{.id = "k10_naive", .backend = Backend::cuda, .group = "simt", .dtypes = kF32,
         .b_layout = BLayout::k_by_n, .max_work = kGlobalOnlyMaxWork,
         .lesson = "one thread per output, threadIdx.x along rows: uncoalesced on purpose",
         .run = k10_naive, .check = k10_naive_check},
    Rung{.id = "k11_coalesced", .backend = Backend::cuda, .group = "simt", .dtypes = kF32,
         .b_layout = BLayout::k_by_n, .max_work = kGlobalOnlyMaxWork,
         .lesson = "threadIdx.x along columns: a warp's loads of B and stores of C coalesce",
         .run = k11_coalesced, .check = k11_coalesced_check},
    Rung{.id = "k12_smem_tiled", .backend = Backend::cuda, .group = "simt", .dtypes = kF32F64,
         .b_layout = BLayout::k_by_n,
         .lesson = "32x32 tiles staged in shared memory: each global element is used 32 times",
         .run = k12_smem_tiled, .check = k12_smem_tiled_check},
    Rung{.id = "k13_regblock_1d", .backend = Backend::cuda, .group = "simt", .dtypes = kF32,
         .b_layout = BLayout::k_by_n,
         .lesson = "8 outputs per thread down a column: one shared load of B feeds 8 FMAs",
         .run = k13_regblock_1d, .check = k13_regblock_1d_check},
    Rung{.id = "k14_regblock_2d", .backend = Backend::cuda, .group = "simt", .dtypes = kF32,
         .b_layout = BLayout::k_by_n,
         .lesson = "8x8 outputs per thread, 128x128 block tile: 16 values from shared memory feed 64 FMAs",
         .run = k14_regblock_2d, .check = k14_regblock_2d_check},
    Rung{.id = "k15_vectorized", .backend = Backend::cuda, .group = "simt", .dtypes = kF32,
         .b_layout = BLayout::k_by_n,
         .lesson = "float4 global loads and stores, A transposed in shared memory: conflict-free A reads",
         .run = k15_vectorized, .check = k15_vectorized_check},
    Rung{.id = "k16_warptiled", .backend = Backend::cuda, .group = "simt", .dtypes = kF32,
         .b_layout = BLayout::k_by_n, .min_sm = 80,
         .lesson = "128x256 block, 8x16 outputs per thread from double-buffered LDS.128 fragments, 4-stage cp.async",
         .run = k16_warptiled, .check = k16_warptiled_check},
    Rung{.id = "k17_tiled_half", .backend = Backend::cuda, .group = "simt", .dtypes = kF16,
         .b_layout = BLayout::k_by_n,
         .lesson = "the tutorial's tiled fp16 step: k12 with half operands, fp32 accumulation",
         .run = k17_tiled_half, .check = k17_tiled_half_check},
};

}  // namespace

std::span<const Rung> simt_rungs() { return kSimtRungs; }

}  // namespace rigel::cuda
