// vendor_cublaslt_{e4m3,e4m3_fastacc,e5m2}: cuBLASLt's fp8 GEMM, the vendor
// baseline for fp8 (cublasGemmEx takes no fp8).
//
// What it is: cublasLtMatmul with fp8 A and B, CUBLAS_COMPUTE_32F, fp32 scale
// type, and fp32 C and D (fp8 inputs with fp32 C/D are a documented cuBLASLt
// combination, so rigel's fp32 output needs no conversion kernel). No scale
// pointers: every scale is 1. cuBLASLt's fp8 kernels on Hopper take only "TN"
// (A transposed, B not, in column-major terms), i.e. both operands K-major;
// rigel's B is therefore N x K (kTensorLayout) and A is already M x K.
// The default row keeps cuBLASLt's default accumulation, in which partial sums
// are periodically promoted to full fp32; the fastacc variant sets
// CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1, which skips that promotion ("faster but at
// the cost of lower accuracy", cublasLt.h), so it may fail rigel's fp32-accumulator
// tolerance at large K: that is a finding, not a bug.
// e5m2 x e5m2: cuBLASLt documents fp8 pairs with at least one e4m3 operand; the
// row asks cuBLASLt's heuristic at run time and refuses with its answer, so the
// table shows by measurement whether this library version on this GPU has one.
// Why it is fast: Hopper's fp8 wgmma (QGMMA in SASS) at twice the 16-bit rate.
// Expected bottleneck: tensor-core issue under the 700 W power limit.
// Prediction at 8192^3 on the H200: e4m3 1150-1450 Tflop/s (datasheet 1979),
// fastacc 5-15 % above it.
// Measured on the H200: see results/h200 (README ladder table)
#include <cstdint>
#include <map>
#include <stdexcept>
#include <tuple>

#include "cuda/check.cuh"
#include "cuda/device_cache.hpp"
#include "cuda/vendor/vendor.cuh"

namespace rigel::cuda::vendor {

namespace {

// Trivially destructible, like cuBLAS's state: release_cublaslt() frees it.
LtContext lt_state{};

void release_cublaslt() noexcept;

}  // namespace

LtContext cublaslt() {
    if (!lt_state.handle) {
        register_release(&release_cublaslt);
        LtContext c{};
        RIGEL_CUBLAS_CHECK(cublasLtCreate(&c.handle));
        RIGEL_CUDA_CHECK(cudaMalloc(&c.workspace, kWorkspaceBytes));
        c.workspace_bytes = kWorkspaceBytes;
        lt_state = c;
    }
    return lt_state;
}

namespace {

// Descriptors and the chosen algorithm for one (type, accumulation, shape),
// made once: the heuristic query costs tens of microseconds on the host, which
// would otherwise fall between the timing events.
struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::string refusal;  // non-empty: cuBLASLt has no algorithm for it
};

using PlanKey = std::tuple<int, bool, std::int64_t, std::int64_t, std::int64_t>;

// Plans live until release_cublaslt() destroys their descriptors.
std::map<PlanKey, Plan> plans;

const Plan& plan_for(const GemmProblem& p, cudaDataType fp8, bool fast_accum) {
    const PlanKey key{static_cast<int>(fp8), fast_accum, p.m, p.n, p.k};
    if (auto it = plans.find(key); it != plans.end()) return it->second;

    const LtContext lt = cublaslt();
    const ColumnMajorGemm g = column_major(p, kTensorLayout);
    Plan plan;
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_first = g.op_first, op_second = g.op_second;
    const std::int8_t fast = fast_accum ? 1 : 0;
    RIGEL_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
    RIGEL_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    // Layouts describe storage before op(): B (N x K row-major) is K x N
    // column-major, A (M x K row-major) is K x M, C^T is N x M.
    RIGEL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.first, fp8, static_cast<std::uint64_t>(g.k),
                                                  static_cast<std::uint64_t>(g.m), g.ld_first));
    RIGEL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.second, fp8, static_cast<std::uint64_t>(g.k),
                                                  static_cast<std::uint64_t>(g.n), g.ld_second));
    RIGEL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.out, CUDA_R_32F, static_cast<std::uint64_t>(g.m),
                                                  static_cast<std::uint64_t>(g.n), g.ldc));

    cublasLtMatmulPreference_t pref = nullptr;
    RIGEL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = lt.workspace_bytes;
    RIGEL_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt.handle, plan.desc, plan.first, plan.second, plan.out,
                                                             plan.out, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        plan.refusal = std::string("cuBLASLt offers no algorithm for ") + (fp8 == CUDA_R_8F_E4M3 ? "e4m3" : "e5m2") +
                       " x " + (fp8 == CUDA_R_8F_E4M3 ? "e4m3" : "e5m2") + " with fp32 output at this shape " +
                       "(cublasLtMatmulAlgoGetHeuristic: " +
                       (st == CUBLAS_STATUS_SUCCESS ? std::string("0 results") : cublas_status_text(st)) + ")";
    } else {
        plan.algo = result.algo;
    }
    return plans.emplace(key, plan).first->second;
}

void run_fp8(const GemmProblem& p, cudaDataType fp8, bool fast_accum) {
    const Plan& plan = plan_for(p, fp8, fast_accum);
    if (!plan.refusal.empty()) throw std::runtime_error(plan.refusal);
    const LtContext lt = cublaslt();
    const ColumnMajorGemm g = column_major(p, kTensorLayout);
    const float one = 1.0f, zero = 0.0f;
    // beta = 0: C is not read; D is written in place of it with the same layout.
    RIGEL_CUBLAS_CHECK(cublasLtMatmul(lt.handle, plan.desc, &one, g.first, plan.first, g.second, plan.second, &zero,
                                      g.c, plan.out, g.c, plan.out, &plan.algo, lt.workspace, lt.workspace_bytes,
                                      stream_of(p)));
}

std::string check_fp8(const GemmProblem& p, cudaDataType fp8, bool fast_accum) {
    // cuBLASLt's tensor-core rules (cuBLAS docs, Tensor Core Usage, which the fp8
    // requirements make mandatory): every operand row 16-byte aligned. A and B
    // rows are K fp8 bytes, C and D rows N fp32 words.
    if (p.k % 16 != 0 || p.n % 4 != 0)
        return "K must be a multiple of 16 and N of 4: cuBLASLt fp8 needs 16-byte aligned rows "
               "(K bytes of A and B, N fp32 of C; cuBLAS docs, fp8 and Tensor Core Usage requirements)";
    try {
        return plan_for(p, fp8, fast_accum).refusal;
    } catch (const std::exception& e) {
        return std::string("cuBLASLt could not be set up: ") + e.what();
    }
}

void release_cublaslt() noexcept {
    for (auto& [key, plan] : plans) {
        if (plan.desc) (void)cublasLtMatmulDescDestroy(plan.desc);
        for (cublasLtMatrixLayout_t l : {plan.first, plan.second, plan.out})
            if (l) (void)cublasLtMatrixLayoutDestroy(l);
    }
    plans.clear();
    if (lt_state.handle) (void)cublasLtDestroy(lt_state.handle);
    if (lt_state.workspace) (void)cudaFree(lt_state.workspace);
    lt_state = LtContext{};
}

}  // namespace

void cublaslt_e4m3(const GemmProblem& p) { run_fp8(p, CUDA_R_8F_E4M3, false); }
void cublaslt_e4m3_fastacc(const GemmProblem& p) { run_fp8(p, CUDA_R_8F_E4M3, true); }
void cublaslt_e5m2(const GemmProblem& p) { run_fp8(p, CUDA_R_8F_E5M2, false); }

std::string cublaslt_e4m3_check(const GemmProblem& p) { return check_fp8(p, CUDA_R_8F_E4M3, false); }
std::string cublaslt_e4m3_fastacc_check(const GemmProblem& p) { return check_fp8(p, CUDA_R_8F_E4M3, true); }
std::string cublaslt_e5m2_check(const GemmProblem& p) { return check_fp8(p, CUDA_R_8F_E5M2, false); }

}  // namespace rigel::cuda::vendor
