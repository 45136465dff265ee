// Shared pieces of the vendor rungs: the cuBLAS and cuBLASLt handles (made once,
// on first use), their workspaces, the row-major to column-major mapping, and the
// run and check functions the registry table (cublas_rungs.cu) names.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ladder/rung.hpp"

namespace rigel::cuda::vendor {

// cuBLAS's guidance for Hopper is a 32 MiB workspace; one is allocated once per
// library and never grown, so no call allocates while it is timed.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// The cuBLAS handle bound to `stream` with rigel's workspace. Math mode is
// CUBLAS_DEFAULT_MATH for good: TF32 and other reduced-precision paths are asked
// for only through a compute type, never switched on behind a row's back.
cublasHandle_t cublas_on(cudaStream_t stream);

struct LtContext {
    cublasLtHandle_t handle;
    void* workspace;
    std::size_t workspace_bytes;
};
LtContext cublaslt();
// Both are made on first use and freed, with their workspaces and cached plans,
// by cuda::release_device_caches() (device_cache.hpp); the next call makes them again.

// The layout of B each row asks for; the table and the run functions read the
// same constants. fp32 and fp64 take the textbook K x N layout the SIMT rungs
// use; the tensor-core types take B as N x K (both operands K-major), the layout
// the tensor-core rungs use and the one int8 and fp8 cuBLAS kernels require.
constexpr BLayout kSimtLayout = BLayout::k_by_n;
constexpr BLayout kTensorLayout = BLayout::n_by_k;

inline cudaStream_t stream_of(const GemmProblem& p) { return static_cast<cudaStream_t>(p.stream); }

// rigel's row-major C = A * B seen by a column-major library, with no copies:
// a row-major R x C matrix is the column-major C x R matrix, its transpose, so
// C^T (N x M, ld N) = op(B) * A^T, where A^T is A's storage read column-major
// (K x M, ld K) and op(B) is B's storage read as B^T (N x K): untransposed when
// B is K x N row-major (ld N), transposed when it is N x K row-major (ld K).
struct ColumnMajorGemm {
    cublasOperation_t op_first, op_second;
    std::int64_t m, n, k;  // the library's m, n, k: rigel's N, M, K
    const void* first;     // rigel's B
    std::int64_t ld_first;
    const void* second;    // rigel's A
    std::int64_t ld_second;
    void* c;
    std::int64_t ldc;
};

inline ColumnMajorGemm column_major(const GemmProblem& p, BLayout b_layout) {
    const bool nk = b_layout == BLayout::n_by_k;
    return {nk ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, p.b, nk ? p.k : p.n, p.a, p.k, p.c, p.n};
}

// cuBLAS (cublas_gemm.cu).
void cublas_f32(const GemmProblem& p);
void cublas_tf32(const GemmProblem& p);
void cublas_f16(const GemmProblem& p);
void cublas_bf16(const GemmProblem& p);
void cublas_f64(const GemmProblem& p);
void cublas_i8(const GemmProblem& p);
std::string cublas_i8_check(const GemmProblem& p);

// cuBLASLt fp8 (cublaslt_fp8.cu).
void cublaslt_e4m3(const GemmProblem& p);
void cublaslt_e4m3_fastacc(const GemmProblem& p);
void cublaslt_e5m2(const GemmProblem& p);
std::string cublaslt_e4m3_check(const GemmProblem& p);
std::string cublaslt_e4m3_fastacc_check(const GemmProblem& p);
std::string cublaslt_e5m2_check(const GemmProblem& p);

}  // namespace rigel::cuda::vendor
