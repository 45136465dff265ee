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
    Rung{"k20_wmma", Backend::cuda, "tensor", kF16Bf16, BLayout::k_by_n, 80, false, VendorRank::none, 0,
         "tensor cores through the wmma API: 16x16x16 fragments from padded shared tiles", k20_wmma,
         k20_wmma_check},
    Rung{"k21_mma_sync", Backend::cuda, "tensor", kF16Bf16, BLayout::n_by_k, 80, false, VendorRank::none, 0,
         "mma.sync m16n8k16 + ldmatrix from swizzled smem, 4-stage cp.async, 128x256 tile", k21_mma_sync,
         k21_mma_sync_check},
    Rung{"k22_mma_sync_tf32", Backend::cuda, "tensor", kTf32, BLayout::n_by_k, 80, false, VendorRank::none, 0,
         "k21's pipeline on tf32 (mma.sync m16n8k8): fp32 data at half the 16-bit rate", k22_mma_sync_tf32,
         k22_mma_sync_tf32_check},
    Rung{"k23_mma_sync_e4m3", Backend::cuda, "tensor", kE4m3, BLayout::n_by_k, 89, false, VendorRank::none, 0,
         "k21's pipeline on fp8 (mma.sync m16n8k32 e4m3): sm_90 unpacks it to f16 HMMA", k23_mma_sync_e4m3,
         k23_mma_sync_e4m3_check},
    Rung{"k24_mma_sync_fp4", Backend::cuda, "tensor", kFp4, BLayout::n_by_k, 80, false, VendorRank::none, 0,
         "fp4 (e2m1, MXFP4) unpacked to f16 for mma.sync m16n8k16; MX scales applied per 32-K block",
         k24_mma_sync_fp4, k24_mma_sync_fp4_check},
};

}  // namespace

std::span<const Rung> tensor_rungs() { return kTensorRungs; }

}  // namespace rigel::cuda
