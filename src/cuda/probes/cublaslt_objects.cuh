// Owners of cuBLASLt's objects for the probes that drive cuBLASLt directly
// (fp8_overflow, alignment): each creates its object, releases it once, and
// hands the raw handle to the cuBLASLt calls. A matrix layout records the
// status of its creation instead of throwing, so that a probe can report a
// layout cuBLASLt refuses as a finding.
#pragma once
#include <cublasLt.h>

#include <cstdint>

#include "cuda/check.cuh"

namespace rigel::cuda {

class LtLayout {
public:
    LtLayout(cudaDataType t, std::int64_t rows, std::int64_t cols, std::int64_t ld)
        : status_(cublasLtMatrixLayoutCreate(&l_, t, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols),
                                             ld)) {}
    ~LtLayout() {
        if (l_) cublasLtMatrixLayoutDestroy(l_);
    }
    LtLayout(const LtLayout&) = delete;
    LtLayout& operator=(const LtLayout&) = delete;
    cublasLtMatrixLayout_t get() const { return l_; }
    cublasStatus_t status() const { return status_; }

private:
    cublasLtMatrixLayout_t l_ = nullptr;
    cublasStatus_t status_;
};

class LtDesc {
public:
    LtDesc() { RIGEL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d_, CUBLAS_COMPUTE_32F, CUDA_R_32F)); }
    ~LtDesc() { cublasLtMatmulDescDestroy(d_); }
    LtDesc(const LtDesc&) = delete;
    LtDesc& operator=(const LtDesc&) = delete;
    cublasLtMatmulDesc_t get() const { return d_; }

private:
    cublasLtMatmulDesc_t d_ = nullptr;
};

class LtPreference {
public:
    LtPreference() { RIGEL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p_)); }
    ~LtPreference() { cublasLtMatmulPreferenceDestroy(p_); }
    LtPreference(const LtPreference&) = delete;
    LtPreference& operator=(const LtPreference&) = delete;
    template <typename T>
    void set(cublasLtMatmulPreferenceAttributes_t a, T v) {
        RIGEL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p_, a, &v, sizeof v));
    }
    cublasLtMatmulPreference_t get() const { return p_; }

private:
    cublasLtMatmulPreference_t p_ = nullptr;
};

class LtHandle {
public:
    LtHandle() { RIGEL_CUBLAS_CHECK(cublasLtCreate(&h_)); }
    ~LtHandle() { cublasLtDestroy(h_); }
    LtHandle(const LtHandle&) = delete;
    LtHandle& operator=(const LtHandle&) = delete;
    cublasLtHandle_t get() const { return h_; }

private:
    cublasLtHandle_t h_ = nullptr;
};

}  // namespace rigel::cuda
