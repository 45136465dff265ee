// k12_smem_tiled: the tutorial's 32 x 32 tiled kernel (TILE_SIZE 32).
// Run alone: rigel ladder --backend cuda --rungs k12_smem_tiled --dtype f32 --sizes 4096
//
// Adds over k11: a block of 32 x 32 threads first copies a 32 x 32 tile of A and
// one of B into shared memory (each thread one element of each, coalesced), waits
// at a barrier, then runs 32 multiply-adds out of shared memory before the next
// pair of tiles. Each element fetched from global memory is now used 32 times by
// the block instead of once, so global traffic falls 32x.
// Why the two barriers: the first so no thread reads a tile before all of it is
// written; the second so no thread overwrites a tile another is still reading
// (the tutorial's "wrong results from a misplaced barrier").
// Bottleneck: shared-memory loads. ptxas fetches a thread's row of a_tile
// with LDS.128 (a broadcast: the whole warp shares the row), but b_tile is one
// LDS per FMA: 40 loads per 32 FMAs in the SASS, so the FMA pipes idle more
// than half the time; the barriers also stall the block.
// Prediction: 1.5-2x k11, about 5-8 Tflop/s in fp32 at 4096^3 (the tutorial's
// Apple M3 Pro reached about 1.8 Tflop/s with the same kernel). In fp64 (the
// SIMT fp64 roofline rung: the H200 has half as many fp64 pipes as fp32) it
// should reach a similar share of the lower fp64 peak.
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k12_smem_tiled, f32 and f64).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTile = 32;  // TILE_SIZE: 32 x 32 threads, 32 x 32 tiles of A, B and C

template <typename T>
__global__ void __launch_bounds__(kTile * kTile)
    k12_kernel(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
               int tiles_n) {
    __shared__ T a_tile[kTile][kTile];
    __shared__ T b_tile[kTile][kTile];
    const int tx = static_cast<int>(threadIdx.x);  // along N: coalesced loads of B, stores of C
    const int ty = static_cast<int>(threadIdx.y);
    const int row = static_cast<int>(blockIdx.x) / tiles_n * kTile + ty;
    const int col = static_cast<int>(blockIdx.x) % tiles_n * kTile + tx;
    const bool row_in = row < m;
    const bool col_in = col < n;
    const T* a_row = a + static_cast<std::size_t>(row_in ? row : 0) * k;

    T acc = 0;
    const int k_tiles = simt::ceil_div(k, kTile);
    for (int t = 0; t < k_tiles; ++t) {
        const int k0 = t * kTile;
        // Outside the matrix the tiles hold zeros, which add nothing: any M, N, K.
        a_tile[ty][tx] = (row_in && k0 + tx < k) ? a_row[k0 + tx] : T(0);
        b_tile[ty][tx] = (col_in && k0 + ty < k) ? b[static_cast<std::size_t>(k0 + ty) * n + col] : T(0);
        __syncthreads();
#pragma unroll
        for (int i = 0; i < kTile; ++i) acc += a_tile[ty][i] * b_tile[i][tx];
        __syncthreads();
    }
    if (row_in && col_in) c[static_cast<std::size_t>(row) * n + col] = acc;
}

template <typename T>
void launch(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTile, kTile);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTile);
    k12_kernel<T><<<blocks, dim3(kTile, kTile), 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const T*>(p.a),
        static_cast<const T*>(p.b), static_cast<T*>(p.c), tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::string k12_smem_tiled_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTile, kTile); }

void k12_smem_tiled(const GemmProblem& p) {
    if (p.type == DType::f64)
        launch<double>(p);
    else
        launch<float>(p);
}

}  // namespace rigel::cuda
