// Probe fp8_gemm_overflow: what cuBLASLt's fp8 GEMM writes when the result
// overflows its output type (e4m3, e5m2, f16, bf16, f32): saturated, inf or
// NaN, set beside the float64 value of the same bytes, and what amax_D
// reports. The crafted operands, the expectations and the verdicts live in
// src/probes/formats/gemm_overflow.cpp; this file only runs cuBLASLt and copies D
// back. A combination cuBLASLt refuses becomes a not_available row with its
// status: the device's answer, never an assumption about it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/probes/cublaslt_objects.cuh"
#include "probes/formats/gemm_overflow.hpp"

namespace rigel::cuda {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;
// D is poisoned with each of these before one of two identical runs: an
// output the GEMM did not write keeps a different byte in each, so
// comparing the runs proves every output was written (no code of D is
// reserved for "unwritten", since NaN and inf are themselves answers here).
constexpr unsigned char kPoisonA = 0x5A;
constexpr unsigned char kPoisonB = 0xA5;
constexpr float kAmaxPoison = -1.0f;

cudaDataType_t cuda_type(DType t) {
    switch (t) {
        case DType::e4m3: return CUDA_R_8F_E4M3;
        case DType::e5m2: return CUDA_R_8F_E5M2;
        case DType::f16: return CUDA_R_16F;
        case DType::bf16: return CUDA_R_16BF;
        case DType::f32: return CUDA_R_32F;
        default: break;
    }
    throw std::invalid_argument("fp8_gemm_overflow: no cuBLASLt type for " + std::string(name(t)));
}

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

std::string status_text(cublasStatus_t s) {
    return "cublasStatus " + std::to_string(static_cast<int>(s)) + " (" + cublas_status_text(s) + ")";
}

// A refusal that means "this combination is not offered", as opposed to an
// error of rigel's or of the device.
bool is_refusal(cublasStatus_t s) { return s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE; }

class DeviceBytes {
public:
    explicit DeviceBytes(std::size_t n) : n_(n) { RIGEL_CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n, 1))); }
    ~DeviceBytes() { cudaFree(p_); }
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    void* get() const { return p_; }
    std::size_t size() const { return n_; }
private:
    void* p_ = nullptr;
    std::size_t n_;
};

// One attempt at the case's GEMM, with or without amax_D. Returns the status
// of the first refusal (heuristic or matmul), or success with D and amax
// filled in. Errors that are not refusals throw.
cublasStatus_t attempt(cublasLtHandle_t lt, const GemmOverflowCase& c, bool with_amax, const DeviceBytes& a,
                       const DeviceBytes& b, const DeviceBytes& cbuf, const DeviceBytes& d, const DeviceBytes& amax,
                       const DeviceBytes& workspace, GemmOverflowDevice& out) {
    LtDesc desc;
    // cuBLASLt is column-major; the fp8 kernels want A transposed ("TN"): A is
    // stored K x M (M x K row-major), B K x N (N x K row-major).
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (with_amax) {
        void* p = amax.get();
        RIGEL_CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &p, sizeof p));
    }
    const LtLayout la(CUDA_R_8F_E4M3, c.k, c.m, c.k);
    const LtLayout lb(c.b_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3, c.k, c.n, c.k);
    const LtLayout lc(cuda_type(c.c_type), c.m, c.n, c.m);
    const LtLayout ld(cuda_type(c.d_type), c.m, c.n, c.m);
    for (const LtLayout* l : {&la, &lb, &lc, &ld}) RIGEL_CUBLAS_CHECK(l->status());
    LtPreference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(kWorkspaceBytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t h =
        cublasLtMatmulAlgoGetHeuristic(lt, desc.get(), la.get(), lb.get(), lc.get(), ld.get(), pref.get(), 1, &result,
                                       &found);
    if (is_refusal(h)) return h;
    RIGEL_CUBLAS_CHECK(h);
    if (found == 0) return CUBLAS_STATUS_NOT_SUPPORTED;

    const float alpha = c.alpha, beta = 0.0f;
    std::vector<std::vector<std::uint8_t>> runs;
    for (unsigned char poison : {kPoisonA, kPoisonB}) {
        RIGEL_CUDA_CHECK(cudaMemset(d.get(), poison, d.size()));
        RIGEL_CUDA_CHECK(cudaMemcpy(amax.get(), &kAmaxPoison, sizeof kAmaxPoison, cudaMemcpyHostToDevice));
        const cublasStatus_t s =
            cublasLtMatmul(lt, desc.get(), &alpha, a.get(), la.get(), b.get(), lb.get(), &beta, cbuf.get(), lc.get(),
                           d.get(), ld.get(), &result.algo, workspace.get(), workspace.size(), nullptr);
        if (is_refusal(s)) return s;
        RIGEL_CUBLAS_CHECK(s);
        RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
        runs.emplace_back(d.size());
        RIGEL_CUDA_CHECK(cudaMemcpy(runs.back().data(), d.get(), d.size(), cudaMemcpyDeviceToHost));
    }
    if (runs[0] != runs[1])
        throw std::runtime_error("fp8_gemm_overflow: " + c.label +
                                 ": D differs between two identical runs with different poisons (an output was not "
                                 "written, or the GEMM is not deterministic)");
    out.ran = true;
    out.d = std::move(runs[0]);
    out.amax_supported = with_amax;
    if (with_amax) RIGEL_CUDA_CHECK(cudaMemcpy(&out.amax, amax.get(), sizeof out.amax, cudaMemcpyDeviceToHost));
    out.detail = "cuBLASLt heuristic algorithm, workspace " + std::to_string(result.workspaceSize) +
                 " bytes, fast accumulation off (the default)";
    return CUBLAS_STATUS_SUCCESS;
}

GemmOverflowDevice run_case(cublasLtHandle_t lt, const GemmOverflowCase& c, const DeviceBytes& workspace) {
    GemmOverflowDevice out;
    const std::size_t outputs = static_cast<std::size_t>(c.m) * static_cast<std::size_t>(c.n);
    DeviceBytes a(c.a.size()), b(c.b.size());
    DeviceBytes cbuf(outputs * static_cast<std::size_t>(gemm_out_bytes(c.c_type)));
    DeviceBytes d(outputs * static_cast<std::size_t>(gemm_out_bytes(c.d_type)));
    DeviceBytes amax(sizeof(float));
    RIGEL_CUDA_CHECK(cudaMemcpy(a.get(), c.a.data(), c.a.size(), cudaMemcpyHostToDevice));
    RIGEL_CUDA_CHECK(cudaMemcpy(b.get(), c.b.data(), c.b.size(), cudaMemcpyHostToDevice));
    RIGEL_CUDA_CHECK(cudaMemset(cbuf.get(), 0, cbuf.size()));  // beta = 0; C only has to be a valid matrix

    out.amax_requested = is_fp8(c.d_type);
    cublasStatus_t s = attempt(lt, c, out.amax_requested, a, b, cbuf, d, amax, workspace, out);
    if (s != CUBLAS_STATUS_SUCCESS && out.amax_requested) {
        // Refused with amax: ask once more without it, so that the overflow
        // answer does not depend on the amax support.
        out.amax_status = "refused with amax_D set: " + status_text(s);
        s = attempt(lt, c, false, a, b, cbuf, d, amax, workspace, out);
    }
    if (s != CUBLAS_STATUS_SUCCESS) out.unsupported = "cuBLASLt refused " + c.label + ": " + status_text(s);
    return out;
}

}  // namespace

std::vector<Finding> run_fp8_gemm_overflow(const ProbeContext& ctx) {
    const std::vector<GemmOverflowCase> cases = make_gemm_overflow_cases(ctx.seed);
    LtHandle lt;
    DeviceBytes workspace(kWorkspaceBytes);
    std::vector<GemmOverflowDevice> device;
    for (const GemmOverflowCase& c : cases) {
        if (ctx.progress) ctx.progress("fp8_gemm_overflow: " + c.label);
        device.push_back(run_case(lt.get(), c, workspace));
    }
    return analyze_gemm_overflow(cases, device);
}

}  // namespace rigel::cuda
