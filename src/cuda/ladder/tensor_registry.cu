// The tensor rungs' registry table: the classic (pre-Hopper) tensor-core path,
// from the wmma API (k20) to hand-written mma.sync pipelines (k21-k24).
// Adding a rung is one file plus one row here.
#include <array>

#include "cuda/ladder/tensor_rungs.cuh"
#include "cuda/registry_parts.hpp"

namespace rigel::cuda {
namespace {

constexpr std::uint32_t kF16Bf16 = dtype_mask(DType::f16, DType::bf16);
constexpr std::uint32_t kTf32 = dtype_mask(DType::tf32);
constexpr std::uint32_t kE4m3 = dtype_mask(DType::e4m3);
constexpr std::uint32_t kFp4 = dtype_mask(DType::e2m1, DType::mxfp4);

// min_sm: wmma on f16 needs sm_70 but on bf16 sm_80, and a row has one
// minimum, so k20 says 80; mma.sync bf16/tf32 and cp.async need sm_80; fp8
// mma.sync needs sm_89 (PTX ISA, mma: ".e4m3 and .e5m2 ... requires sm_89");
// k24 unpacks fp4 to f16 itself, so f16 mma.sync and cp.async (sm_80) suffice.
const std::array kTensorRungs{
    Rung{.id = "k20_wmma", .backend = Backend::cuda, .group = "tensor", .dtypes = kF16Bf16,
         .b_layout = BLayout::k_by_n, .min_sm = 80,
         .lesson = "tensor cores through the wmma API: 16x16x16 fragments from padded shared tiles",
         .run = k20_wmma, .check = k20_wmma_check},
    Rung{.id = "k21_mma_sync", .backend = Backend::cuda, .group = "tensor", .dtypes = kF16Bf16,
         .b_layout = BLayout::n_by_k, .min_sm = 80,
         .lesson = "mma.sync m16n8k16 + ldmatrix from swizzled smem, 4-stage cp.async, 128x256 tile",
         .run = k21_mma_sync, .check = k21_mma_sync_check},
    Rung{.id = "k22_mma_sync_tf32", .backend = Backend::cuda, .group = "tensor", .dtypes = kTf32,
         .b_layout = BLayout::n_by_k, .min_sm = 80,
         .lesson = "k21's pipeline on tf32 (mma.sync m16n8k8): fp32 data at half the 16-bit rate",
         .run = k22_mma_sync_tf32, .check = k22_mma_sync_tf32_check},
    Rung{.id = "k23_mma_sync_e4m3", .backend = Backend::cuda, .group = "tensor", .dtypes = kE4m3,
         .b_layout = BLayout::n_by_k, .min_sm = 89,
         .lesson = "k21's pipeline on fp8 (mma.sync m16n8k32 e4m3): sm_90 unpacks it to f16 HMMA",
         .run = k23_mma_sync_e4m3, .check = k23_mma_sync_e4m3_check},
    Rung{.id = "k24_mma_sync_fp4", .backend = Backend::cuda, .group = "tensor", .dtypes = kFp4,
         .b_layout = BLayout::n_by_k, .min_sm = 80,
         .lesson = "fp4 (e2m1, MXFP4) unpacked to f16 for mma.sync m16n8k16; MX scales applied per 32-K block",
         .run = k24_mma_sync_fp4, .check = k24_mma_sync_fp4_check},
};

}  // namespace

std::span<const Rung> tensor_rungs() { return kTensorRungs; }

}  // namespace rigel::cuda
