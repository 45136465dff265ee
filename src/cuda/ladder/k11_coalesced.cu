// k11_coalesced: k10 with the thread mapping turned: threadIdx.x runs along the
// COLUMNS of C.
// Run alone: rigel ladder --backend cuda --rungs k11_coalesced --dtype f32 --sizes 4096
//
// Adds over k10: the 32 lanes of a warp now hold 32 consecutive columns of one
// row. Each load of B is 128 contiguous bytes (one request, 4 sectors), the load
// of A is one address broadcast to the warp, and each store of C is one 128-byte
// line. Same arithmetic, same algorithm, a fraction of the memory transactions.
// Bottleneck: still global-memory (L1/L2) bandwidth: every FMA needs a fresh
// load of B and every element of A and B is fetched from L2 by many blocks;
// there is no reuse inside the SM beyond what L1 happens to keep.
// Prediction: 5-10x k10, a few Tflop/s at 4096^3 (siboehm measured 6.4x on an
// A6000).
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k11_coalesced).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile * kTile)
    k11_kernel(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
               float* __restrict__ c, int tiles_n) {
    const int tile_row = static_cast<int>(blockIdx.x) / tiles_n;
    const int tile_col = static_cast<int>(blockIdx.x) % tiles_n;
    // x along columns: a warp is 32 consecutive columns of one row.
    const int row = tile_row * kTile + static_cast<int>(threadIdx.y);
    const int col = tile_col * kTile + static_cast<int>(threadIdx.x);
    if (row >= m || col >= n) return;
    const float* a_row = a + static_cast<std::size_t>(row) * k;
    const float* b_col = b + col;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc = fmaf(a_row[i], b_col[static_cast<std::size_t>(i) * n], acc);
    c[static_cast<std::size_t>(row) * n + col] = acc;
}

}  // namespace

std::string k11_coalesced_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTile, kTile); }

void k11_coalesced(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTile, kTile);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTile);
    k11_kernel<<<blocks, dim3(kTile, kTile), 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const float*>(p.a),
        static_cast<const float*>(p.b), static_cast<float*>(p.c), tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda
