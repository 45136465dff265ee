// What the wgmma attention kernels (fa3_forward.cu, fa3_backward.cu) share:
// the 3-D TMA load and tensor map of a token-major tensor, and the repacking
// of a wgmma accumulator into the register A operand of the next product.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/attention/mma_sync_tiles.cuh"
#include "cuda/hopper/sm90.cuh"
#include "rigel/attention.hpp"

namespace rigel::cuda::attention {

constexpr int kBoxCols = 64;     // bf16 columns per 128-byte swizzled row: one TMA box's width
constexpr int kAccBoxCols = 32;  // fp32 columns per 128-byte swizzled row

__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int col, int row,
                                            int batch) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(sm90::smem_u32(dst)),
        "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(batch), "r"(sm90::smem_u32(bar))
        : "memory");
}

// The copy engine adds a box of fp32 from shared memory into the tensor
// (PTX ISA "cp.reduce.async.bulk.tensor", .add, tile mode), elements past the
// tensor's ends left out; completion tracked in bulk groups as the TMA store's
// is (sm90_cluster.cuh: bulk_commit, bulk_wait_read, bulk_wait).
__device__ __forceinline__ void tma_reduce_add_3d(const CUtensorMap* map, std::uint32_t src, int col, int row,
                                                  int batch) {
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                     reinterpret_cast<std::uint64_t>(map)),
                 "r"(src), "r"(col), "r"(row), "r"(batch)
                 : "memory");
}

// An accumulator of N columns in bf16 as the A fragments of the k16 steps of
// a product whose K is those columns (the accumulators of n8 columns 2kk and
// 2kk + 1 are the fragment of step kk): P for P V in the forward pass, P^T
// for P^T dO in the backward.
template <int N>
__device__ __forceinline__ void pack_p(const float (&sc)[N / 2], std::uint32_t (&pa)[N / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) pa[kk][r] = pack_bf16(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
}

// A token-major tensor as TMA sees it: (column, token, batch), boxes of 64
// columns x `rows` tokens, 128B swizzle, zeros past a sequence's end (so no
// tile reads into the next batch).
inline CUtensorMap token_map(const void* base, const rigel::attention::Desc& d, std::int64_t ld, int rows) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d.heads * d.head_dim), static_cast<cuuint64_t>(d.seq),
                                static_cast<cuuint64_t>(d.batch)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * 2, static_cast<cuuint64_t>(d.seq * ld) * 2};
    const cuuint32_t box[3] = {kBoxCols, static_cast<cuuint32_t>(rows), 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUresult r = sm90::tensor_map_encoder()(
        &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(base), dims, strides, box, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                 ") for an attention operand of " + rigel::attention::shape_text(d));
    return map;
}

// The backward pass's fp32 dQ accumulator ([B S][H D], packed) as the same
// (column, token, batch) tensor, boxes of 32 columns (128 bytes, the 128B
// swizzle's span) x `rows` tokens, for the copy engine's reductions into it.
inline CUtensorMap accumulator_map(float* base, const rigel::attention::Desc& d, int rows) {
    CUtensorMap map{};
    const std::int64_t width = d.heads * d.head_dim;
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(width), static_cast<cuuint64_t>(d.seq),
                                static_cast<cuuint64_t>(d.batch)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(width) * 4, static_cast<cuuint64_t>(d.seq * width) * 4};
    const cuuint32_t box[3] = {kAccBoxCols, static_cast<cuuint32_t>(rows), 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUresult r = sm90::tensor_map_encoder()(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                 ") for the dQ accumulator of " + rigel::attention::shape_text(d));
    return map;
}

}  // namespace rigel::cuda::attention
