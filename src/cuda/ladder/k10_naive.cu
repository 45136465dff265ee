// k10_naive: the first GPU rung. One thread per output element, each a dot
// product of a row of A with a column of B read straight from global memory.
// Run alone: rigel ladder --backend cuda --rungs k10_naive --dtype f32 --sizes 4096
//
// Adds over the CPU rungs: thousands of threads instead of one loop; the H200's
// 132 SMs and 4.8 TB/s of HBM make even this careless kernel beat the naive CPU.
// The mistake on purpose (siboehm's kernel 1): threadIdx.x runs along the ROWS
// of C. The 32 threads of a warp then hold 32 different rows: every load of A is
// 32 addresses K floats apart (32 sectors for 128 useful bytes), the load of B
// is one address broadcast, and each store of C is 32 scattered words.
// Bottleneck: memory transactions, not arithmetic; L1/L2 hide part of it because
// the same rows of A are reused along k.
// Prediction: well under 1 Tflop/s at 4096^3 (a few hundred Gflop/s), about 1 %
// of the fp32 peak; k11 changes only the thread mapping and should be 5-10x.
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k10_naive).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTile = 32;  // a 32 x 32 block of threads computes a 32 x 32 tile of C

__global__ void __launch_bounds__(kTile * kTile)
    k10_kernel(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
               float* __restrict__ c, int tiles_m) {
    const int tile_row = static_cast<int>(blockIdx.x) % tiles_m;
    const int tile_col = static_cast<int>(blockIdx.x) / tiles_m;
    // x along rows: consecutive lanes of a warp own consecutive rows (uncoalesced).
    const int row = tile_row * kTile + static_cast<int>(threadIdx.x);
    const int col = tile_col * kTile + static_cast<int>(threadIdx.y);
    if (row >= m || col >= n) return;
    const float* a_row = a + static_cast<std::size_t>(row) * k;
    const float* b_col = b + col;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc = fmaf(a_row[i], b_col[static_cast<std::size_t>(i) * n], acc);
    c[static_cast<std::size_t>(row) * n + col] = acc;
}

}  // namespace

std::string k10_naive_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTile, kTile); }

void k10_naive(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTile, kTile);
    const int tiles_m = simt::ceil_div(static_cast<int>(p.m), kTile);
    k10_kernel<<<blocks, dim3(kTile, kTile), 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const float*>(p.a),
        static_cast<const float*>(p.b), static_cast<float*>(p.c), tiles_m);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda
