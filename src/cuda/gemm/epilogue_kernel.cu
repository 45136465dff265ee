// The elementwise epilogue pass: the split-K reduction (sum the fp32 slabs,
// then the epilogue) and the decomposed path's second kernel (read D, apply
// the epilogue, write D). Blocks of 32 x 8 threads cover 32 columns x 64 rows:
// a warp reads 32 consecutive elements of a row (coalesced), and bgrad's
// column sums are combined across the block's 8 row-threads in shared memory
// before one atomic add per column and block.
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

template <class T>
void launch_as(const EpilogueParams& p, const float* slabs, int splits, int m, int n, cudaStream_t stream) {
    const dim3 block(kCols, kRowThreads);
    const int rows_per_block = std::max(kRowsPerBlock, static_cast<int>((m + kMaxGridY - 1) / kMaxGridY));
    const dim3 grid(static_cast<unsigned>((n + kCols - 1) / kCols),
                    static_cast<unsigned>((m + rows_per_block - 1) / rows_per_block));
    epilogue_kernel<T><<<grid, block, 0, stream>>>(p, slabs, splits, m, n, rows_per_block);
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
