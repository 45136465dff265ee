// cuBLASLt as the baseline of rigel's GEMM library: the same
// D = epilogue(alpha op(A) op(B) + beta C) as include/rigel/gemm.hpp defines it (layouts, types,
// epilogue, leading dimensions), computed by cublasLtMatmul with the fastest of the algorithms its
// heuristic offers. Plain C++: the CUDA side is in cublaslt_gemm.cu, and the mapping below is
// inline so that the host tests check it on any machine (tests/host/test_cublaslt_mapping.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "rigel/gemm.hpp"

namespace rigel::cuda::vendor {

// How the baseline runs a desc.
enum class LtConfig : std::uint8_t {
    // rigel's types exactly, every output where gemm.hpp puts it: what a caller that goes on to read
    // the outputs needs (the trainer's vendor mode).
    same,
    // As a user of cuBLASLt would run the product where cuBLASLt lacks rigel's configuration: the bias
    // gradient in the type cuBLASLt takes for it (lt_own_bgrad_type), written to a buffer of the
    // baseline's own (cublaslt_gemm_own_bgrad) while args.bgrad is left alone. What the bench times.
    as_a_user,
};

// Empty when cuBLASLt (this library version on this GPU) can compute `d` with the same layouts,
// types and epilogue (as_a_user: or with the bias gradient in its own type); else one sentence why
// not. Asks cuBLASLt's heuristic (needs the GPU) for 256-byte aligned pointers; the answer is cached
// per desc and config.
std::string cublaslt_gemm_support(const gemm::Desc& d, LtConfig config = LtConfig::same);

// Runs D = epilogue(alpha op(A) op(B) + beta C) exactly as gemm.hpp defines it, on `s`.
// The first call for a desc (and again for each new alignment of its pointers, and for C being D
// or not: beta 0 or in place) asks the heuristic for up to 8 algorithms, times each on the given
// arguments as the benchmark times a call (CUDA events on `s`, each timed run after the same L2
// flush as Executor::time_once; one warm-up each, then interleaved rounds, the median kept) and
// keeps the fastest. Later calls check the arguments and launch.
// Throws std::invalid_argument with one sentence for an unsupported desc or bad arguments
// (gemm::check_args' rules), std::runtime_error when a CUDA or cuBLAS call fails.
// One workspace serves every call: calls on different streams must not overlap.
void cublaslt_gemm(const gemm::Desc& d, const gemm::Args& args, gemm::Stream s, LtConfig config = LtConfig::same);

// One line naming the algorithm the latest tuning chose for `d` (id, tile, stages, split-K,
// cluster...) and how many candidates were timed; empty before the first call.
std::string cublaslt_gemm_algorithm(const gemm::Desc& d, LtConfig config = LtConfig::same);

// Where the config departs from rigel's desc, one phrase for the row that times it ("bias gradient
// in bf16, cuBLASLt's only type for it"); empty where it does not, or before support was asked.
std::string cublaslt_gemm_note(const gemm::Desc& d, LtConfig config);

// The as_a_user plan's own bias-gradient buffer for `d`: `count` (N) elements of `type`, on the
// device, made when its support was first asked and kept until release_device_caches(). Empty (a
// null `data`) where the plan writes args.bgrad itself, or before support was asked.
struct LtOwnBgrad {
    void* data = nullptr;
    gemm::Type type = gemm::Type::f32;
    std::int64_t count = 0;
};
LtOwnBgrad cublaslt_gemm_own_bgrad(const gemm::Desc& d);

// cuBLASLt's type for the bias or bias-gradient vector when CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE is
// left unset (cublasLt.h): D's type, except beside fp8 operands and an f32 D, where the cuBLAS
// documentation gives it bf16.
inline gemm::Type lt_default_vector_type(const gemm::Desc& d) {
    const bool fp8 = d.a_type == gemm::Type::e4m3 || d.a_type == gemm::Type::e5m2;
    return fp8 && d.d_type == gemm::Type::f32 ? gemm::Type::bf16 : d.d_type;
}

// rigel's (gemm.hpp): the bias in D's type (f32 beside an f32 D), the bias gradient always f32.
inline gemm::Type rigel_vector_type(const gemm::Desc& d) {
    return d.epilogue == gemm::Epilogue::dgelu_bgrad ? gemm::Type::f32 : d.d_type;
}

// The type as_a_user asks cuBLASLt for the bias gradient in when it refuses rigel's f32: its
// default, the one a user who sets nothing gets. Empty where there is nothing to fall back to (no
// bias gradient, or a default of f32). Only the gradient: a bias is an input of rigel's type, and a
// user would not convert it for one call.
inline std::optional<gemm::Type> lt_own_bgrad_type(const gemm::Desc& d) {
    if (!gemm::traits(d.epilogue).bgrad) return std::nullopt;
    const gemm::Type t = lt_default_vector_type(d);
    if (t == rigel_vector_type(d)) return std::nullopt;
    return t;
}

// The note of a row whose baseline writes the bias gradient in `t`.
inline std::string lt_own_bgrad_note(gemm::Type t) {
    return std::string("bias gradient in ") + gemm::name(t) + ", cuBLASLt's only type for it";
}

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
