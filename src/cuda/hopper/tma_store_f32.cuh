// An fp32 output tile's half (64 rows) written through shared memory and TMA
// stores: k43's store path (pingpong_rung.cuh) and the library's for an fp32
// D without epilogue (fused_epilogue.cuh, TmaStoreF32).
//
// The half goes out in boxes of 64 rows x 32 floats (128 bytes, the 128B
// swizzle's span) through `map`, two boxes (16 KB, a consumer's staging
// region) at a time. Each thread writes its accumulator pairs, times alpha,
// where the swizzle puts them (16-byte chunk c of row r at chunk c ^ (r % 8):
// a warp's 8-byte stores then fill every bank twice, the fewest passes 256
// bytes take), the warpgroup meets, and one thread hands the boxes to the copy
// engine, which clips them at M and N. Before the staging region is written
// again, that thread waits until the copy engine has read it
// (wait_group.read), so a half's second pair of boxes waits on its first's
// read, not on its writes. Columns past the last whole box (a 104-wide narrow
// tile's last 8) are stored from the registers. The caller's named barrier
// `barrier` (2 or 3: the epilogue's in the ping-pong kernel) is its
// warpgroup's alone; `staging` starts on a swizzle atom.
//
// With `add` (the library's in-place D += alpha A B, beta 1 with C the
// same matrix as D: a training step's dW accumulation), the boxes are added
// into D by the copy engine (cp.reduce.async.bulk.tensor .add) instead of
// written over it, and the columns past the last whole box are read and
// added by the thread. Each element of D gets one add of one fp32 value, so
// the sum is rounded once and is the same from run to run.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/sm90_cluster.cuh"
#include "cuda/hopper/wgmma.cuh"

namespace rigel::cuda::sm90 {

inline constexpr int kF32BoxCols = kRowBytes / 4;        // 32 floats
inline constexpr int kF32BoxBytes = kWgmmaM * kRowBytes;  // 64 rows x 128 bytes
inline constexpr int kF32PassBoxes = 2;
inline constexpr int kF32StagingBytes = kF32PassBoxes * kF32BoxBytes;
static_assert(kF32StagingBytes % kSwizzleAtom == 0, "staging boxes start on swizzle atoms");

// BN: the half's columns (its accumulators' width). c and ldc: the matrix the map describes, for the
// columns past the last whole box. rows_left = m - row0 > 0 for the whole warpgroup.
template <int BN>
__device__ __forceinline__ void store_f32_tma(const CUtensorMap* map, const float (&acc)[BN / 2], float alpha,
                                              float* c, std::int64_t ldc, int m, int n, int row0, int col0,
                                              float* staging, int barrier, bool add = false) {
    constexpr int kBoxes = BN / kF32BoxCols;
    constexpr int kPasses = (kBoxes + kF32PassBoxes - 1) / kF32PassBoxes;
    const int t = tid_x_here() % kWarpgroup;
    const int warp = t / 32, lane = t % 32, q = lane % 4;
    const bool issuer = t == 0;
    // Row r = 16 warp + lane / 4 + 8 h of the half: r % 8 = lane / 4 for both h.
    const std::uint32_t x = static_cast<std::uint32_t>(lane / 4);
    const std::uint32_t row_at = smem_u32(staging) + static_cast<std::uint32_t>((16 * warp + lane / 4) * kRowBytes) +
                                 static_cast<std::uint32_t>((q % 2) * 8);
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
        if (issuer) bulk_wait_read<0>();
        named_barrier_sync<kWarpgroup>(barrier);
#pragma unroll
        for (int bb = 0; bb < kF32PassBoxes; ++bb) {
            const int b = pass * kF32PassBoxes + bb;
            if (b >= kBoxes) break;
#pragma unroll
            for (int jj = 0; jj < kF32BoxCols / 8; ++jj) {  // the box's 8-column groups
                const int j = 4 * b + jj;
                const std::uint32_t chunk = (static_cast<std::uint32_t>(2 * jj + q / 2) ^ x) << 4;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const std::uint32_t at =
                        row_at + static_cast<std::uint32_t>(bb * kF32BoxBytes + 8 * h * kRowBytes) + chunk;
                    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(at), "f"(alpha * acc[4 * j + 2 * h]),
                                 "f"(alpha * acc[4 * j + 2 * h + 1])
                                 : "memory");
                }
            }
        }
        fence_proxy_async_smem();
        named_barrier_sync<kWarpgroup>(barrier);
        if (issuer) {
#pragma unroll
            for (int bb = 0; bb < kF32PassBoxes; ++bb) {
                const int b = pass * kF32PassBoxes + bb;
                if (b >= kBoxes || col0 + kF32BoxCols * b >= n) break;  // boxes past N are not stored
                const std::uint32_t box = smem_u32(staging) + static_cast<std::uint32_t>(bb * kF32BoxBytes);
                if (add)
                    tma_reduce_add_2d(map, box, col0 + kF32BoxCols * b, row0);
                else
                    tma_store_2d(map, box, col0 + kF32BoxCols * b, row0);
            }
            bulk_commit();
        }
    }
    if constexpr (BN % kF32BoxCols != 0) {
        const int rows_left = m - row0;
        const int cols_left = n - col0;
#pragma unroll
        for (int j = kBoxes * kF32BoxCols / 8; j < BN / 8; ++j) {
            const int col = 8 * j + 2 * q;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = 16 * warp + lane / 4 + 8 * h;
                if (r >= rows_left) continue;
                float* const at = c + static_cast<std::int64_t>(row0 + r) * ldc + col0 + col;
                if (col + 1 < cols_left) {  // ldc a multiple of 4 (the map's rule): the pair is 8-byte aligned
                    float2 v = make_float2(alpha * acc[4 * j + 2 * h], alpha * acc[4 * j + 2 * h + 1]);
                    if (add) {
                        const float2 was = *reinterpret_cast<const float2*>(at);
                        v.x += was.x;
                        v.y += was.y;
                    }
                    *reinterpret_cast<float2*>(at) = v;
                } else if (col < cols_left) {
                    const float v = alpha * acc[4 * j + 2 * h];
                    at[0] = add ? at[0] + v : v;
                }
            }
        }
    }
}

// After a consumer's last tile: its copies have read the staging region before the CTA's shared memory
// goes away; their writes are covered by the grid's completion.
__device__ __forceinline__ void store_f32_tma_drain() {
    if (threadIdx.x % kWarpgroup == 0) bulk_wait_read<0>();
}

}  // namespace rigel::cuda::sm90
