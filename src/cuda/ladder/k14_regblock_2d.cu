// k14_regblock_2d: 2D register blocking. Each thread computes an 8 x 8 block of
// outputs; a block of 256 threads covers a 128 x 128 tile of C (siboehm's
// kernel 5; the tutorial's "4x4 accumulators per thread" step, made larger).
// Run alone: rigel ladder --backend cuda --rungs k14_regblock_2d --dtype f32 --sizes 4096
//
// Adds over k13: per k the thread loads 8 values of A and 8 of B into
// registers and does their 64-term outer product. Both runs of 8 are
// contiguous in shared memory (A along k in a_tile's rows, B along n), so
// ptxas fetches them with LDS.128: 32 LDS.128 per 512 FMAs, 0.0625 shared
// loads per FMA (k13: 0.375). The 128 x 128 tile doubles the reuse of every
// global element again (128 FMAs each).
// Bottleneck: the loads conflict: the 8 x 8 blocks of neighbouring threads
// are 8 words apart, so the B reads of a warp take 4 wavefronts where 2 would
// do and the two A rows of a warp (64 words apart) share banks. The global
// copies are 4-byte loads (8 per thread per k-slice) exposed at every barrier,
// the stores 4-byte. Registers: 64 accumulators, 16 operands and addresses
// come to 150 per thread (ptxas), so only one block of 8 warps fits an SM and
// latency shows (capping at 128 to fit two blocks spills).
// Prediction: 1.5-2x k13, 20-30 Tflop/s at 4096^3 (siboehm: 1.9x on an A6000).
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k14_regblock_2d).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 8;
constexpr int kThreadM = 8;
constexpr int kThreadN = 8;
constexpr int kThreadsN = kTileN / kThreadN;  // 16 threads across a row of the tile
constexpr int kThreads = (kTileM / kThreadM) * kThreadsN;
constexpr int kLoadsA = kTileM * kTileK / kThreads;  // elements of the A tile each thread copies
constexpr int kLoadsB = kTileK * kTileN / kThreads;
static_assert(kThreads == 256);
static_assert(kTileM * kTileK % kThreads == 0 && kTileK * kTileN % kThreads == 0);
static_assert(kThreads % kTileK == 0 && kThreads % kTileN == 0,
              "each copy step must cover whole rows so that every thread keeps one column");

__global__ void __launch_bounds__(kThreads)
    k14_kernel(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
               float* __restrict__ c, int tiles_n) {
    __shared__ float a_tile[kTileM][kTileK];
    __shared__ float b_tile[kTileK][kTileN];
    const int t = static_cast<int>(threadIdx.x);
    const int m0 = static_cast<int>(blockIdx.x) / tiles_n * kTileM;
    const int n0 = static_cast<int>(blockIdx.x) % tiles_n * kTileN;
    const int out_row0 = t / kThreadsN * kThreadM;
    const int out_col0 = t % kThreadsN * kThreadN;

    // Copy step s of the A tile covers rows s * (kThreads / kTileK) + t / kTileK;
    // each thread keeps column t % kTileK. Same for B with kTileN.
    constexpr int a_row_step = kThreads / kTileK;
    constexpr int b_row_step = kThreads / kTileN;
    const int a_c = t % kTileK;
    const int b_c = t % kTileN;
    const bool b_col_in = n0 + b_c < n;

    float acc[kThreadM][kThreadN] = {};
    float a_reg[kThreadM];
    float b_reg[kThreadN];
    const int k_tiles = simt::ceil_div(k, kTileK);
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int k0 = kt * kTileK;
#pragma unroll
        for (int s = 0; s < kLoadsA; ++s) {
            const int r = s * a_row_step + t / kTileK;
            a_tile[r][a_c] =
                (m0 + r < m && k0 + a_c < k) ? a[static_cast<std::size_t>(m0 + r) * k + k0 + a_c] : 0.0f;
        }
#pragma unroll
        for (int s = 0; s < kLoadsB; ++s) {
            const int r = s * b_row_step + t / kTileN;
            b_tile[r][b_c] =
                (b_col_in && k0 + r < k) ? b[static_cast<std::size_t>(k0 + r) * n + n0 + b_c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTileK; ++kk) {
#pragma unroll
            for (int i = 0; i < kThreadM; ++i) a_reg[i] = a_tile[out_row0 + i][kk];
#pragma unroll
            for (int j = 0; j < kThreadN; ++j) b_reg[j] = b_tile[kk][out_col0 + j];
#pragma unroll
            for (int i = 0; i < kThreadM; ++i)
#pragma unroll
                for (int j = 0; j < kThreadN; ++j) acc[i][j] = fmaf(a_reg[i], b_reg[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < kThreadM; ++i) {
        const int row = m0 + out_row0 + i;
        if (row >= m) continue;
        float* c_row = c + static_cast<std::size_t>(row) * n;
#pragma unroll
        for (int j = 0; j < kThreadN; ++j) {
            const int col = n0 + out_col0 + j;
            if (col < n) c_row[col] = acc[i][j];
        }
    }
}

}  // namespace

std::string k14_regblock_2d_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTileM, kTileN); }

void k14_regblock_2d(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTileM, kTileN);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTileN);
    k14_kernel<<<blocks, kThreads, 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const float*>(p.a),
        static_cast<const float*>(p.b), static_cast<float*>(p.c), tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda
