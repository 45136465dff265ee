// k17_tiled_half: the tutorial's tiled-fp16 step: k12's 32 x 32 tiled kernel
// with half-precision operands (dtype f16), fp32 output.
// Run alone: rigel ladder --backend cuda --rungs k17_tiled_half --dtype f16 --sizes 4096
//
// Adds over k12: operands of 2 bytes instead of 4, so every tile moved from
// global to shared memory is half the bytes and a shared tile pair takes 4 KB
// instead of 8. The arithmetic stays on the fp32 FMA pipes: each half is
// widened to float before the multiply-add (a product of two halves, 11 x 11
// significant bits, is exact in float).
// Accumulator: the tutorial's Metal kernel accumulated in half. rigel
// accumulates in float because its verification gate is float64 on the same
// bytes with an fp32-accumulation tolerance (2K * 2^-24). A half accumulator
// (u = 2^-11, 8192 times coarser) fails that gate at any useful K, and once the
// running sum is large it drops every term smaller than half its last place.
// Only the operands are half.
// Bottleneck: as k12, shared-memory loads and barriers, plus two half-to-float
// conversions per FMA competing for issue slots; the narrower operands help
// only the global side, which k12 had already cut 32x.
// Prediction: within about 20 % of k12's fp32 speed either way. The tutorial's
// 1.9x fp16-over-fp32 gain came from Apple's faster half arithmetic, which
// this kernel does not use: the H200's fp16 speed is on the tensor cores (the
// tensor rungs).
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k17_tiled_half).
#include <cuda_fp16.h>

#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile * kTile)
    k17_kernel(int m, int n, int k, const __half* __restrict__ a, const __half* __restrict__ b,
               float* __restrict__ c, int tiles_n) {
    __shared__ __half a_tile[kTile][kTile];
    __shared__ __half b_tile[kTile][kTile];
    const int tx = static_cast<int>(threadIdx.x);
    const int ty = static_cast<int>(threadIdx.y);
    const int row = static_cast<int>(blockIdx.x) / tiles_n * kTile + ty;
    const int col = static_cast<int>(blockIdx.x) % tiles_n * kTile + tx;
    const bool row_in = row < m;
    const bool col_in = col < n;
    const __half* a_row = a + static_cast<std::size_t>(row_in ? row : 0) * k;
    const __half zero = __float2half(0.0f);

    float acc = 0.0f;
    const int k_tiles = simt::ceil_div(k, kTile);
    for (int t = 0; t < k_tiles; ++t) {
        const int k0 = t * kTile;
        a_tile[ty][tx] = (row_in && k0 + tx < k) ? a_row[k0 + tx] : zero;
        b_tile[ty][tx] = (col_in && k0 + ty < k) ? b[static_cast<std::size_t>(k0 + ty) * n + col] : zero;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < kTile; ++i)
            acc = fmaf(__half2float(a_tile[ty][i]), __half2float(b_tile[i][tx]), acc);
        __syncthreads();
    }
    if (row_in && col_in) c[static_cast<std::size_t>(row) * n + col] = acc;
}

}  // namespace

std::string k17_tiled_half_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTile, kTile); }

void k17_tiled_half(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTile, kTile);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTile);
    k17_kernel<<<blocks, dim3(kTile, kTile), 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const __half*>(p.a),
        static_cast<const __half*>(p.b), static_cast<float*>(p.c), tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda
