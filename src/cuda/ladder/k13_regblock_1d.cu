// k13_regblock_1d: 1D register blocking. Each thread computes a column of
// kThreadM = 8 outputs instead of one (siboehm's kernel 4).
// Run alone: rigel ladder --backend cuda --rungs k13_regblock_1d --dtype f32 --sizes 4096
//
// Adds over k12: in the inner loop a thread loads one element of B from shared
// memory into a register and reuses it for 8 multiply-adds against 8 elements
// of A (broadcast to the whole warp). In the SASS a k-slice of 64 FMAs takes 8
// LDS of B plus 16 LDS.128 of A: 0.375 shared loads per FMA, k12 needed 1.25.
// A block of 512 threads now covers a 64 x 64 tile, so each global element
// feeds 64 FMAs instead of 32. The k-slice is short (kTileK = 8) so the tiles
// stay small: 4 KB of shared memory per block.
// Bottleneck: still shared-memory issue and latency, and a barrier pair per
// 8-deep k-slice (8 FMAs per thread between barriers).
// Prediction: about 2-3x k12 (siboehm: 2.8x on an A6000), 15-20 Tflop/s.
// Measured: README.md, "4096 x 4096 x 4096" (k13_regblock_1d).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTileM = 64;   // rows of C per block
constexpr int kTileN = 64;   // columns of C per block
constexpr int kTileK = 8;    // depth of one shared-memory k-slice
constexpr int kThreadM = 8;  // rows of C per thread
constexpr int kThreads = kTileM * kTileN / kThreadM;
static_assert(kThreads == 512);
static_assert(kTileM * kTileK == kThreads, "one element of the A tile per thread");
static_assert(kTileK * kTileN == kThreads, "one element of the B tile per thread");
static_assert(kTileN % 32 == 0, "a warp must lie in one row group so that A is a broadcast");

__global__ void __launch_bounds__(kThreads)
    k13_kernel(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
               float* __restrict__ c, int tiles_n) {
    __shared__ float a_tile[kTileM][kTileK];
    __shared__ float b_tile[kTileK][kTileN];
    const int t = static_cast<int>(threadIdx.x);
    const int m0 = static_cast<int>(blockIdx.x) / tiles_n * kTileM;
    const int n0 = static_cast<int>(blockIdx.x) % tiles_n * kTileN;

    // This thread's outputs: rows m0 + out_row0 .. + kThreadM - 1 of column n0 + out_col.
    const int out_col = t % kTileN;
    const int out_row0 = t / kTileN * kThreadM;

    // This thread's share of the tile copies.
    const int a_r = t / kTileK, a_c = t % kTileK;  // A tile: kTileK consecutive k per row
    const int b_r = t / kTileN, b_c = t % kTileN;  // B tile: a warp reads 32 consecutive n
    const bool a_row_in = m0 + a_r < m;
    const bool b_col_in = n0 + b_c < n;
    const float* a_src = a + static_cast<std::size_t>(a_row_in ? m0 + a_r : 0) * k;
    const float* b_src = b + (b_col_in ? n0 + b_c : 0);

    float acc[kThreadM] = {};
    const int k_tiles = simt::ceil_div(k, kTileK);
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int k0 = kt * kTileK;
        a_tile[a_r][a_c] = (a_row_in && k0 + a_c < k) ? a_src[k0 + a_c] : 0.0f;
        b_tile[b_r][b_c] = (b_col_in && k0 + b_r < k) ? b_src[static_cast<std::size_t>(k0 + b_r) * n] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTileK; ++kk) {
            const float bv = b_tile[kk][out_col];
#pragma unroll
            for (int i = 0; i < kThreadM; ++i) acc[i] = fmaf(a_tile[out_row0 + i][kk], bv, acc[i]);
        }
        __syncthreads();
    }

    const int col = n0 + out_col;
    if (col >= n) return;
#pragma unroll
    for (int i = 0; i < kThreadM; ++i) {
        const int row = m0 + out_row0 + i;
        if (row < m) c[static_cast<std::size_t>(row) * n + col] = acc[i];
    }
}

}  // namespace

std::string k13_regblock_1d_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTileM, kTileN); }

void k13_regblock_1d(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTileM, kTileN);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTileN);
    k13_kernel<<<blocks, kThreads, 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const float*>(p.a),
        static_cast<const float*>(p.b), static_cast<float*>(p.c), tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda
