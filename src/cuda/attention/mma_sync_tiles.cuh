// What rigel's attention kernels share on the mma.sync side (fa2_forward.cu,
// fa2_backward.cu; fa3_forward.cu takes the conversions): bf16 tiles of
// token rows in shared memory, XOR-swizzled so that ldmatrix's eight row
// addresses fall in eight different bank groups; the warp-level products
// of m16n8k16 tiles; and the conversion of accumulators into A fragments.
//
// Fragment facts (PTX ISA, mma.m16n8k16 with .bf16): with g = lane / 4 and
// t = lane % 4, an accumulator tile holds (row g, columns 2t, 2t + 1) in c[0],
// c[1] and (row g + 8, the same columns) in c[2], c[3]; an A fragment holds
// (row g, k 2t, 2t + 1), (row g + 8, ...), (row g, k 2t + 8, 2t + 9),
// (row g + 8, ...). So accumulator tiles 2kk and 2kk + 1 (16 columns) are,
// rounded to bf16, the A fragment of k16 step kk: a product's result feeds the
// next product without a trip through shared memory.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/ladder/tensor_rungs.cuh"

namespace rigel::cuda::attention {

using tensor::cp_async_16;
using tensor::cp_async_commit;
using tensor::cp_async_wait;
using tensor::ldmatrix_x4;
using tensor::smem_addr;

// Element offset of (row, col) in a swizzled tile W elements wide: 16-byte
// chunk c of row r is stored at c ^ (r mod 8) (W >= 64), or at
// c ^ ((r / 2) mod 4) when a row is only 64 bytes (W = 32: two rows per
// 128 bytes of banks).
template <int W>
__device__ __forceinline__ int swizzled(int row, int col) {
    static_assert(W == 32 || W % 64 == 0, "rows of 64 bytes or of multiples of 128");
    const int x = W == 32 ? (row >> 1) & 3 : row & 7;
    return row * W + (((col >> 3) ^ x) << 3) + (col & 7);
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// D += A B on one m16n8k16 tile, bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (lo) in the low half: the lower column
    return *reinterpret_cast<const std::uint32_t*>(&v);
}

// 2^x by the SFU in one instruction (ex2.approx.ftz: a relative error of a
// few units in the last place, and results below 2^-126 flushed to zero,
// which the float64 gate's allowance for the exponential covers).
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Rows [row0, row0 + R) of one head of a [B S, ld] tensor into a swizzled
// tile D wide, by the CTA's Threads threads; rows past the sequence are
// zero-filled. The caller commits the group.
template <int D, int R, int Threads>
__device__ __forceinline__ void load_rows(__nv_bfloat16* tile, const __nv_bfloat16* head, std::int64_t ld, int row0,
                                          int seq) {
    constexpr int kChunks = D / 8;
    for (int i = static_cast<int>(threadIdx.x); i < R * kChunks; i += Threads) {
        const int r = i / kChunks, c = i % kChunks;
        const int row = row0 + r;
        const bool inside = row < seq;
        const __nv_bfloat16* src = head + static_cast<std::int64_t>(inside ? row : 0) * ld + c * 8;
        cp_async_16(smem_addr(tile + swizzled<D>(r, c * 8)), src, inside ? 16 : 0);
    }
}

// Step j of a K/V ring of two stages (tiles Keys rows each, at sk and sv +
// stage * Keys * D): the next tile's rows into the other stage, then a wait
// for this one; the caller syncs the CTA before reading it.
template <int D, int Keys, int Threads>
__device__ __forceinline__ void kv_ring_step(__nv_bfloat16* sk, __nv_bfloat16* sv, const __nv_bfloat16* kh,
                                             std::int64_t ldk, const __nv_bfloat16* vh, std::int64_t ldv, int j,
                                             int tiles, int seq) {
    const int stage = j & 1;
    if (j + 1 < tiles) {
        load_rows<D, Keys, Threads>(sk + (stage ^ 1) * Keys * D, kh, ldk, (j + 1) * Keys, seq);
        load_rows<D, Keys, Threads>(sv + (stage ^ 1) * Keys * D, vh, ldv, (j + 1) * Keys, seq);
        cp_async_commit();
        cp_async_wait<1>();
    } else {
        cp_async_wait<0>();
    }
}

// acc (16 x N) += A B^T for one warp: A is rows [a_row0, a_row0 + 16) of tile
// `a`, B is rows [0, N) of tile `b`, both K long, both tiles W wide (rows as
// stored: the "col" operand of mma is B's rows).
template <int K, int N, int W>
__device__ __forceinline__ void warp_product_abt(float (&acc)[N / 8][4], const __nv_bfloat16* a, int a_row0,
                                                 const __nv_bfloat16* b, int lane) {
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
        std::uint32_t af[4];
        ldmatrix_x4(af, smem_addr(a + swizzled<W>(a_row0 + (lane & 15), kk * 16 + (lane >> 4) * 8)));
#pragma unroll
        for (int np = 0; np < N / 16; ++np) {
            std::uint32_t bf[4];
            ldmatrix_x4(bf, smem_addr(b + swizzled<W>(np * 16 + (lane & 7) + (lane >> 4) * 8,
                                                      kk * 16 + ((lane >> 3) & 1) * 8)));
            mma_bf16(acc[2 * np], af, bf[0], bf[1]);
            mma_bf16(acc[2 * np + 1], af, bf[2], bf[3]);
        }
    }
}

// acc (16 x N) += A B for one warp: A (16 x K) in registers as A fragments, B
// the K x N tile `b` (W wide) read transposed by ldmatrix.trans.
template <int K, int N, int W>
__device__ __forceinline__ void warp_product_ab(float (&acc)[N / 8][4], const std::uint32_t (&a)[K / 16][4],
                                                const __nv_bfloat16* b, int lane) {
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk)
#pragma unroll
        for (int dp = 0; dp < N / 16; ++dp) {
            std::uint32_t bf[4];
            ldmatrix_x4_trans(bf, smem_addr(b + swizzled<W>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                            dp * 16 + (lane >> 4) * 8)));
            mma_bf16(acc[2 * dp], a[kk], bf[0], bf[1]);
            mma_bf16(acc[2 * dp + 1], a[kk], bf[2], bf[3]);
        }
}

// Accumulator tiles (16 x N) rounded to bf16 as the A fragments of N / 16 k16 steps.
template <int N>
__device__ __forceinline__ void accumulators_to_a(const float (&acc)[N / 8][4], std::uint32_t (&a)[N / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
        a[kk][0] = pack_bf16(acc[2 * kk][0], acc[2 * kk][1]);
        a[kk][1] = pack_bf16(acc[2 * kk][2], acc[2 * kk][3]);
        a[kk][2] = pack_bf16(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
        a[kk][3] = pack_bf16(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
    }
}

}  // namespace rigel::cuda::attention
