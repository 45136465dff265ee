// vendor_cublas_{f32,tf32,f16,bf16,f64,i8}: cuBLAS's GEMM, the vendor baseline
// every own rung of the same type is measured against ("% of vendor").
//
// What it is: cublasGemmEx (cublasDgemm for fp64) on rigel's row-major operands,
// mapped onto column-major cuBLAS without copies (vendor.cuh). Each type names
// its compute type explicitly and the handle keeps CUBLAS_DEFAULT_MATH, so fp32
// is true fp32 (no TF32), TF32 is asked for only by the tf32 row, and the 16-bit
// types accumulate in fp32 and write fp32 C (A/B CUDA_R_16F or _16BF, C
// CUDA_R_32F, CUBLAS_COMPUTE_32F is a documented cublasGemmEx combination).
// Why it is fast: NVIDIA's per-architecture kernels (on Hopper, wgmma with TMA
// and warp specialization for the tensor-core types), chosen by heuristics per
// shape, with split-K for skinny problems.
// Expected bottleneck: the tensor cores' issue rate held down by the 700 W
// power limit (clocks near 1.5 GHz under sustained load) for the tensor types;
// the FMA pipes for fp32; the fp64 tensor cores for fp64.
// Prediction at 8192^3 on the H200 (dense datasheet peaks in brackets): fp32
// 45-55 Tflop/s (67), tf32 330-420 (495), fp16/bf16 620-760 (989), fp64 50-60
// (67), int8 900-1400 Tops (1979).
// Measured on the H200: see results/h200 (README ladder table)
#include <cstdint>

#include "cuda/check.cuh"
#include "cuda/device_cache.hpp"
#include "cuda/vendor/vendor.cuh"

namespace rigel::cuda::vendor {

namespace {

// Trivially destructible, so nothing runs at exit after the CUDA context is
// gone; release_cublas() frees what it holds while the context lives.
struct CublasState {
    cublasHandle_t handle = nullptr;
    void* workspace = nullptr;
    cudaStream_t stream = nullptr;
    bool bound = false;
};
CublasState cublas_state;

void release_cublas() noexcept {
    if (cublas_state.handle) (void)cublasDestroy(cublas_state.handle);
    if (cublas_state.workspace) (void)cudaFree(cublas_state.workspace);
    cublas_state = CublasState{};
}

}  // namespace

cublasHandle_t cublas_on(cudaStream_t stream) {
    CublasState* const s = &cublas_state;
    if (!s->handle) {
        register_release(&release_cublas);
        RIGEL_CUDA_CHECK(cudaMalloc(&s->workspace, kWorkspaceBytes));
        RIGEL_CUBLAS_CHECK(cublasCreate(&s->handle));
        RIGEL_CUBLAS_CHECK(cublasSetMathMode(s->handle, CUBLAS_DEFAULT_MATH));
    }
    if (!s->bound || s->stream != stream) {
        // cublasSetStream resets the workspace to cuBLAS's own pool: set ours after it.
        RIGEL_CUBLAS_CHECK(cublasSetStream(s->handle, stream));
        RIGEL_CUBLAS_CHECK(cublasSetWorkspace(s->handle, s->workspace, kWorkspaceBytes));
        s->stream = stream;
        s->bound = true;
    }
    return s->handle;
}

namespace {

void gemm_ex(const GemmProblem& p, BLayout layout, cudaDataType ab_type, cudaDataType c_type,
             cublasComputeType_t compute, const void* alpha, const void* beta) {
    const ColumnMajorGemm g = column_major(p, layout);
    RIGEL_CUBLAS_CHECK(cublasGemmEx_64(cublas_on(stream_of(p)), g.op_first, g.op_second, g.m, g.n, g.k, alpha,
                                       g.first, ab_type, g.ld_first, g.second, ab_type, g.ld_second, beta, g.c,
                                       c_type, g.ldc, compute, CUBLAS_GEMM_DEFAULT));
}

constexpr float kOneF = 1.0f;
constexpr float kZeroF = 0.0f;

}  // namespace

void cublas_f32(const GemmProblem& p) {
    gemm_ex(p, kSimtLayout, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &kOneF, &kZeroF);
}

void cublas_tf32(const GemmProblem& p) {
    gemm_ex(p, kTensorLayout, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, &kOneF, &kZeroF);
}

void cublas_f16(const GemmProblem& p) {
    gemm_ex(p, kTensorLayout, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &kOneF, &kZeroF);
}

void cublas_bf16(const GemmProblem& p) {
    gemm_ex(p, kTensorLayout, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, &kOneF, &kZeroF);
}

void cublas_f64(const GemmProblem& p) {
    const ColumnMajorGemm g = column_major(p, kSimtLayout);
    const double one = 1.0, zero = 0.0;
    RIGEL_CUBLAS_CHECK(cublasDgemm_64(cublas_on(stream_of(p)), g.op_first, g.op_second, g.m, g.n, g.k, &one,
                                      static_cast<const double*>(g.first), g.ld_first,
                                      static_cast<const double*>(g.second), g.ld_second, &zero,
                                      static_cast<double*>(g.c), g.ldc));
}

void cublas_i8(const GemmProblem& p) {
    const std::int32_t one = 1, zero = 0;  // CUBLAS_COMPUTE_32I takes int32 scalars
    gemm_ex(p, kTensorLayout, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, &one, &zero);
}

// The library's m and k are rigel's N and K, and the leading dimensions are
// K (A and B, both K-major) and N (C).
std::string cublas_i8_check(const GemmProblem& p) {
    if (p.n % 4 != 0 || p.k % 4 != 0)
        return "N and K must be multiples of 4: cuBLAS int8 (IMMA) kernels need m, k and all leading dimensions "
               "in multiples of 4 (cuBLAS docs, IMMA requirements; cuBLAS's m, k are rigel's N, K)";
    return {};
}

}  // namespace rigel::cuda::vendor
