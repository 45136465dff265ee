// The elementwise epilogue pass: the split-K reduction (sum the fp32 slabs,
// then the epilogue) and the decomposed path's second kernel (read D, apply
// the epilogue, write D). Blocks of 32 x 8 threads cover 32 columns x 64 rows:
// a warp reads 32 consecutive elements of a row (coalesced), and bgrad's
// column sums are combined across the block's 8 row-threads in shared memory
// before one atomic add per column and block.
//
// The decomposed path's pass is what a program without fusion runs after its
// GEMM, so it is written as such a program would write it: where D's rows and
// the epilogue's pointers allow 16-byte accesses (EpilogueParams::octets) and
// N is a multiple of 8, each thread takes 8 adjacent columns (a block 256
// columns x 64 rows), loads four rows' worth before it stores any (D and aux
// are not restrict pointers, so a load issued after a store waits for it), and
// runs one instance of the element loop per epilogue. Elsewhere, one element
// at a time as above.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/check.cuh"
#include "cuda/gemm/gemm_kernels.cuh"

namespace rigel::cuda::gemm_kernels {
namespace {

constexpr int kCols = 32;
constexpr int kRowThreads = 8;
constexpr int kRowsPerBlock = 64;  // at least; more when M needs over 65535 blocks of rows
constexpr unsigned kMaxGridY = 65535;

template <class T>
__global__ void __launch_bounds__(kCols* kRowThreads)
    epilogue_kernel(const EpilogueParams p, const float* __restrict__ slabs, int splits, int m, int n,
                    int rows_per_block) {
    __shared__ float sums[kRowThreads][kCols];
    const int col = static_cast<int>(blockIdx.x) * kCols + static_cast<int>(threadIdx.x);
    const int row0 = static_cast<int>(blockIdx.y) * rows_per_block;
    const int row_end = min(row0 + rows_per_block, m);
    const std::int64_t slab = static_cast<std::int64_t>(m) * n;
    float sum = 0.0f;
    if (col < n) {
        for (int r = row0 + static_cast<int>(threadIdx.y); r < row_end; r += kRowThreads) {
            float acc = 0.0f;
            if (slabs) {
                const float* src = slabs + static_cast<std::int64_t>(r) * n + col;
                for (int s = 0; s < splits; ++s) acc += src[s * slab];
            } else {
                acc = Elem<T>::load(p.d, static_cast<std::int64_t>(r) * p.ldd + col);
            }
            sum += epilogue_element<T>(p, acc, r, col);
        }
    }
    if (p.kind != Epilogue::dgelu_bgrad) return;  // uniform across the block
    sums[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < n) {
        float total = 0.0f;
        for (int y = 0; y < kRowThreads; ++y) total += sums[y][threadIdx.x];
        atomicAdd(p.bgrad + col, total);
    }
}

constexpr int kOctetCols = kCols * 8;  // a block's columns in the 16-byte path
constexpr int kRowBatch = 4;             // rows a thread loads before it stores

// This thread's 8 columns from `col` over its rows of [row0, row_end) (every
// kRowThreads-th from row0 + threadIdx.y), through epilogue K; adds each
// column's values of D (before D's rounding) into `sum`. D holds the product
// in D's type; alpha and beta were applied by the GEMM (launch_epilogue's
// caller passes 1 and 0).
template <class T, Epilogue K>
__device__ __forceinline__ void octet_rows(const EpilogueParams& p, int col, int row0, int row_end, float (&sum)[8]) {
    using V = Vec8<T>;
    typename V::Packed bias{};
    if constexpr (takes_bias(K)) bias = V::load(p.bias, col);
    for (int first = row0 + static_cast<int>(threadIdx.y); first < row_end; first += kRowThreads * kRowBatch) {
        typename V::Packed dv[kRowBatch]{}, av[kRowBatch]{};
#pragma unroll
        for (int b = 0; b < kRowBatch; ++b) {
            const std::int64_t r = first + b * kRowThreads;
            if (r >= row_end) break;
            dv[b] = V::load(p.d, r * p.ldd + col);
            if constexpr (K == Epilogue::dgelu_bgrad) av[b] = V::load(p.aux, r * p.ldaux + col);
        }
#pragma unroll
        for (int b = 0; b < kRowBatch; ++b) {
            const std::int64_t r = first + b * kRowThreads;
            if (r >= row_end) break;
            float v[8], pre[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                const float bias_e = takes_bias(K) ? V::get(bias, e) : 0.0f;
                const float aux_e = K == Epilogue::dgelu_bgrad ? V::get(av[b], e) : 0.0f;
                pre[e] = 0.0f;
                v[e] = finish(K, p.alpha * V::get(dv[b], e), bias_e, aux_e, pre[e]);
                sum[e] += v[e];
            }
            if constexpr (K == Epilogue::bias_gelu_aux) V::store(p.aux, r * p.ldaux + col, pre);
            V::store(p.d, r * p.ldd + col, v);
        }
    }
}

template <class T>
__global__ void __launch_bounds__(kCols* kRowThreads)
    epilogue_octets_kernel(const EpilogueParams p, int m, int n, int rows_per_block) {
    __shared__ float sums[kRowThreads][kOctetCols];
    const int col = (static_cast<int>(blockIdx.x) * kCols + static_cast<int>(threadIdx.x)) * 8;
    const int row0 = static_cast<int>(blockIdx.y) * rows_per_block;
    const int row_end = min(row0 + rows_per_block, m);
    float sum[8] = {};
    if (col < n) with_epilogue(p.kind, [&]<Epilogue K>() { octet_rows<T, K>(p, col, row0, row_end, sum); });
    if (p.kind != Epilogue::dgelu_bgrad) return;  // uniform across the block
#pragma unroll
    for (int e = 0; e < 8; ++e) sums[threadIdx.y][threadIdx.x * 8 + e] = sum[e];
    __syncthreads();
    // The block's 256 threads, one column each.
    const int t = static_cast<int>(threadIdx.y) * kCols + static_cast<int>(threadIdx.x);
    const int c = static_cast<int>(blockIdx.x) * kOctetCols + t;
    if (c < n) {
        float total = 0.0f;
        for (int y = 0; y < kRowThreads; ++y) total += sums[y][t];
        atomicAdd(p.bgrad + c, total);
    }
}

template <class T>
void launch_as(const EpilogueParams& p, const float* slabs, int splits, int m, int n, cudaStream_t stream) {
    const dim3 block(kCols, kRowThreads);
    const int rows_per_block = std::max(kRowsPerBlock, static_cast<int>((m + kMaxGridY - 1) / kMaxGridY));
    const unsigned row_blocks = static_cast<unsigned>((m + rows_per_block - 1) / rows_per_block);
    if (!slabs && p.octets && p.beta == 0.0f && n % 8 == 0) {
        const dim3 grid(static_cast<unsigned>((n + kOctetCols - 1) / kOctetCols), row_blocks);
        epilogue_octets_kernel<T><<<grid, block, 0, stream>>>(p, m, n, rows_per_block);
    } else {
        const dim3 grid(static_cast<unsigned>((n + kCols - 1) / kCols), row_blocks);
        epilogue_kernel<T><<<grid, block, 0, stream>>>(p, slabs, splits, m, n, rows_per_block);
    }
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_epilogue(const EpilogueParams& p, const float* slabs, int splits, int m, int n, cudaStream_t stream) {
    switch (p.d_type) {
        case Type::bf16: return launch_as<__nv_bfloat16>(p, slabs, splits, m, n, stream);
        case Type::f16: return launch_as<__half>(p, slabs, splits, m, n, stream);
        default: return launch_as<float>(p, slabs, splits, m, n, stream);
    }
}

}  // namespace rigel::cuda::gemm_kernels
