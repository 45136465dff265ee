// k15_vectorized: k14 with 16-byte (float4) memory accesses everywhere, and A
// transposed in shared memory on the way in (siboehm's kernel 6).
// Run alone: rigel ladder --backend cuda --rungs k15_vectorized --dtype f32 --sizes 4096
//
// Adds over k14: each thread copies its share of the A and B tiles with one
// LDG.128 each instead of four LDG.32, and writes C with STG.128. A is stored
// transposed (a_tile[k][m]), so for each k a thread's 8 values of A are
// contiguous along m: still 2 LDS.128, but the two rows of A that a warp reads
// now sit in different banks (k14: same banks, two wavefronts). Fewer load
// instructions and addresses also bring ptxas to about 125 registers (k14:
// 150), so two blocks, 16 warps, share an SM instead of one.
// The vector path needs 16-byte alignment: rows of A start on 16 bytes only
// when K % 4 == 0, rows of B and C only when N % 4 == 0, and the base pointers
// must be 16-byte aligned. Otherwise the same kernel runs its scalar path (a
// template flag): same tiles, same inner loop, 4-byte copies with per-element
// bounds, so any shape runs.
// Bottleneck: the inner loop is 64 FFMA to 4 LDS.128, near the issue limit;
// what remains is the copy of each tile (global latency exposed at every
// barrier, since copies and compute do not overlap) and the B reads, still 4
// wavefronts where 2 would do; k16's warp tiling and pipeline remove both.
// Prediction: 1.1-1.4x k14, 25-40 Tflop/s at 4096^3 in the vector path.
// Measured: README.md, "4096 x 4096 x 4096" (k15_vectorized).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 8;
constexpr int kThreadM = 8;
constexpr int kThreadN = 8;
constexpr int kThreadsN = kTileN / kThreadN;
constexpr int kThreads = (kTileM / kThreadM) * kThreadsN;
// a_tile rows are padded by 4 words: the transposed stores of lanes that hold
// k and k + 4 of one row then land in different banks, and a row stays a
// multiple of 16 bytes for the LDS.128 reads.
constexpr int kATileLd = kTileM + 4;
constexpr int kVecA = kTileM * kTileK / 4 / kThreads;  // float4 copies of A per thread
constexpr int kVecB = kTileK * kTileN / 4 / kThreads;
constexpr int kScalarA = kTileM * kTileK / kThreads;   // 4-byte copies per thread on the scalar path
constexpr int kScalarB = kTileK * kTileN / kThreads;
static_assert(kThreads == 256);
static_assert(kVecA == 1 && kVecB == 1, "one float4 of each tile per thread");
static_assert(kTileK % 4 == 0 && kTileN % 4 == 0 && kThreadM % 4 == 0 && kThreadN % 4 == 0);
static_assert(kATileLd % 4 == 0, "a_tile rows must stay 16-byte aligned");
static_assert(kThreads % kTileK == 0 && kThreads % kTileN == 0);

template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    k15_kernel(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
               float* __restrict__ c, int tiles_n) {
    __shared__ __align__(16) float a_tile[kTileK][kATileLd];  // transposed: [k][m]
    __shared__ __align__(16) float b_tile[kTileK][kTileN];
    const int t = static_cast<int>(threadIdx.x);
    const int m0 = static_cast<int>(blockIdx.x) / tiles_n * kTileM;
    const int n0 = static_cast<int>(blockIdx.x) % tiles_n * kTileN;
    const int out_row0 = t / kThreadsN * kThreadM;
    const int out_col0 = t % kThreadsN * kThreadN;

    // Vector copies: A as 128 rows x 2 float4, B as 8 rows x 32 float4.
    const int va_r = t / (kTileK / 4), va_c = t % (kTileK / 4) * 4;
    const int vb_r = t / (kTileN / 4), vb_c = t % (kTileN / 4) * 4;
    const bool va_row_in = m0 + va_r < m;
    const bool vb_col_in = n0 + vb_c < n;  // N % 4 == 0: all four columns or none
    const float* va_src = a + static_cast<std::size_t>(va_row_in ? m0 + va_r : 0) * k + va_c;
    const float* vb_src = b + (vb_col_in ? n0 + vb_c : 0);

    float acc[kThreadM][kThreadN] = {};
    const int k_tiles = simt::ceil_div(k, kTileK);
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int k0 = kt * kTileK;
        if constexpr (kVector) {
            // K % 4 == 0: a float4 along k is wholly inside or wholly outside K.
            const float4 av = (va_row_in && k0 + va_c < k) ? *reinterpret_cast<const float4*>(va_src + k0)
                                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            a_tile[va_c + 0][va_r] = av.x;
            a_tile[va_c + 1][va_r] = av.y;
            a_tile[va_c + 2][va_r] = av.z;
            a_tile[va_c + 3][va_r] = av.w;
            const float4 bv = (vb_col_in && k0 + vb_r < k)
                                  ? *reinterpret_cast<const float4*>(vb_src + static_cast<std::size_t>(k0 + vb_r) * n)
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            *reinterpret_cast<float4*>(&b_tile[vb_r][vb_c]) = bv;
        } else {
#pragma unroll
            for (int s = 0; s < kScalarA; ++s) {
                const int r = s * (kThreads / kTileK) + t / kTileK;
                const int kk = t % kTileK;
                a_tile[kk][r] =
                    (m0 + r < m && k0 + kk < k) ? a[static_cast<std::size_t>(m0 + r) * k + k0 + kk] : 0.0f;
            }
#pragma unroll
            for (int s = 0; s < kScalarB; ++s) {
                const int r = s * (kThreads / kTileN) + t / kTileN;
                const int col = t % kTileN;
                b_tile[r][col] =
                    (n0 + col < n && k0 + r < k) ? b[static_cast<std::size_t>(k0 + r) * n + n0 + col] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTileK; ++kk) {
            float a_reg[kThreadM];
            float b_reg[kThreadN];
#pragma unroll
            for (int i = 0; i < kThreadM; i += 4)
                *reinterpret_cast<float4*>(&a_reg[i]) = *reinterpret_cast<const float4*>(&a_tile[kk][out_row0 + i]);
#pragma unroll
            for (int j = 0; j < kThreadN; j += 4)
                *reinterpret_cast<float4*>(&b_reg[j]) = *reinterpret_cast<const float4*>(&b_tile[kk][out_col0 + j]);
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
        for (int j = 0; j < kThreadN; j += 4) {
            const int col = n0 + out_col0 + j;
            if constexpr (kVector) {
                if (col < n)
                    *reinterpret_cast<float4*>(c_row + col) =
                        make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < n) c_row[col + q] = acc[i][j + q];
            }
        }
    }
}

}  // namespace

std::string k15_vectorized_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTileM, kTileN); }

void k15_vectorized(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTileM, kTileN);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTileN);
    const bool vector = p.k % 4 == 0 && p.n % 4 == 0 && simt::aligned16(p.a) && simt::aligned16(p.b) &&
                        simt::aligned16(p.c);
    const auto kernel = vector ? k15_kernel<true> : k15_kernel<false>;
    kernel<<<blocks, kThreads, 0, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const float*>(p.a),
        static_cast<const float*>(p.b), static_cast<float*>(p.c), tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda
