// cuBLASLt as the baseline of rigel's GEMM library: the same
// D = epilogue(alpha op(A) op(B) + beta C) as include/rigel/gemm.hpp defines it (layouts, types,
// epilogue, leading dimensions), computed by cublasLtMatmul with the fastest of the algorithms its
// heuristic offers. Plain C++: the CUDA side is in cublaslt_gemm.cu, and the mapping below is
// inline so that the host tests check it on any machine (tests/host/test_cublaslt_mapping.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "rigel/gemm.hpp"

namespace rigel::cuda::vendor {

// Empty when cuBLASLt (this library version on this GPU) can compute `d` with the same layouts,
// types and epilogue; else one sentence why not. Asks cuBLASLt's heuristic (needs the GPU) for
// 256-byte aligned pointers; the answer is cached per desc.
std::string cublaslt_gemm_support(const gemm::Desc& d);

// Runs D = epilogue(alpha op(A) op(B) + beta C) exactly as gemm.hpp defines it, on `s`.
// The first call for a desc (and again for each new alignment of its pointers, and for C being D
// or not: beta 0 or in place) asks the heuristic for up to 8 algorithms, times each on the given
// arguments (one warm-up, then a few timed runs, on `s` with CUDA events) and keeps the fastest.
// Later calls check the arguments and launch.
// Throws std::invalid_argument with one sentence for an unsupported desc or bad arguments
// (gemm::check_args' rules), std::runtime_error when a CUDA or cuBLAS call fails.
// One workspace serves every call: calls on different streams must not overlap.
void cublaslt_gemm(const gemm::Desc& d, const gemm::Args& args, gemm::Stream s);

// One line naming the algorithm the latest tuning chose for `d` (id, tile, stages, split-K,
// cluster...) and how many candidates were timed; empty before the first call.
std::string cublaslt_gemm_algorithm(const gemm::Desc& d);

// One matrix as cuBLASLt reads it: column-major, rows x cols, columns ld elements apart.
struct LtMatrix {
    std::int64_t rows = 0, cols = 0, ld = 0;
};

// rigel's row-major GEMM as the column-major one cuBLASLt computes, with no copies.
// A row-major R x C matrix with row stride ld is, read column-major, its transpose: the C x R
// matrix with column stride ld. So rigel's D (M x N) is cuBLASLt's N x M matrix D^T, and
// D^T = op(B)^T op(A)^T: cuBLASLt's first operand is rigel's B, its second rigel's A, and its
// m, n, k are rigel's N, M, K. Each operand, as cuBLASLt reads rigel's storage:
//   B op n: stored K x N, read as N x K = op(B)^T itself      -> cuBLASLt op N
//   B op t: stored N x K, read as K x N = op(B)                -> cuBLASLt op T
//   A op n: stored M x K, read as K x M = op(A)^T itself      -> cuBLASLt op N
//   A op t: stored K x M, read as M x K = op(A)                -> cuBLASLt op T
// So cuBLASLt's transa is rigel's b_op and its transb rigel's a_op, and rigel's fp8 layout NT is
// cuBLASLt's "TN", the one layout its fp8 kernels take. C, D and aux are N x M with ldc, ldd,
// ldaux; bias and bgrad, one element per column of rigel's D, are one per row of cuBLASLt's.
struct LtGemm {
    bool trans_a = false, trans_b = false;  // cuBLASLt's: op T when true
    std::int64_t m = 0, n = 0, k = 0;       // cuBLASLt's: rigel's N, M, K
    LtMatrix a, b;                          // rigel's B and A as stored (before op)
    LtMatrix c, d, aux;
};

inline LtGemm lt_gemm(const gemm::Desc& desc) {
    const gemm::Desc d = gemm::with_packed_leading_dimensions(desc);
    const bool b_t = d.b_op == gemm::Op::t, a_t = d.a_op == gemm::Op::t;
    LtGemm g;
    g.trans_a = b_t;
    g.trans_b = a_t;
    g.m = d.n;
    g.n = d.m;
    g.k = d.k;
    g.a = b_t ? LtMatrix{d.k, d.n, d.ldb} : LtMatrix{d.n, d.k, d.ldb};
    g.b = a_t ? LtMatrix{d.m, d.k, d.lda} : LtMatrix{d.k, d.m, d.lda};
    g.c = {d.n, d.m, d.ldc};
    g.d = {d.n, d.m, d.ldd};
    g.aux = {d.n, d.m, d.ldaux};
    return g;
}

}  // namespace rigel::cuda::vendor
