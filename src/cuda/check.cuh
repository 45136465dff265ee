// The one header of error-check macros for CUDA code. Each names the
// expression, the error's name and text, and the file and line, and throws:
// only main turns an exception into an exit code.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace rigel::cuda {

[[noreturn]] inline void throw_cuda_error(const char* what, const std::string& name, const char* text, const char* file,
                                          int line) {
    throw std::runtime_error(std::string(what) + " failed: " + name + " (" + text + ") at " + file + ":" +
                             std::to_string(line));
}

inline const char* cublas_status_text(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return "success";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
        case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
        case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
        case CUBLAS_STATUS_MAPPING_ERROR: return "mapping error";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
        case CUBLAS_STATUS_LICENSE_ERROR: return "license error";
        default: return "unknown status";
    }
}

}  // namespace rigel::cuda

#define RIGEL_CUDA_CHECK(expr)                                                                         \
    do {                                                                                               \
        const cudaError_t rigel_err_ = (expr);                                                         \
        if (rigel_err_ != cudaSuccess)                                                                 \
            ::rigel::cuda::throw_cuda_error(#expr, cudaGetErrorName(rigel_err_),                       \
                                            cudaGetErrorString(rigel_err_), __FILE__, __LINE__);       \
    } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define RIGEL_CUDA_CHECK_LAUNCH() RIGEL_CUDA_CHECK(cudaGetLastError())

// Driver-API results (functions reached through cudaGetDriverEntryPointByVersion;
// rigel does not link libcuda, so the code is reported by number).
#define RIGEL_CU_CHECK(expr)                                                                           \
    do {                                                                                               \
        const CUresult rigel_res_ = (expr);                                                            \
        if (rigel_res_ != CUDA_SUCCESS)                                                                \
            ::rigel::cuda::throw_cuda_error(#expr, "CUresult " + std::to_string(int(rigel_res_)),      \
                                            "driver API error", __FILE__, __LINE__);                   \
    } while (0)

#define RIGEL_CUBLAS_CHECK(expr)                                                                       \
    do {                                                                                               \
        const cublasStatus_t rigel_st_ = (expr);                                                       \
        if (rigel_st_ != CUBLAS_STATUS_SUCCESS)                                                        \
            ::rigel::cuda::throw_cuda_error(#expr, "cublasStatus " + std::to_string(int(rigel_st_)),   \
                                            ::rigel::cuda::cublas_status_text(rigel_st_), __FILE__,    \
                                            __LINE__);                                                 \
    } while (0)

namespace rigel::cuda {

// Lets `Kernel` take `bytes` of dynamic shared memory (past the default 48 KB),
// checked, once per kernel: the static belongs to the instantiation.
template <auto Kernel>
void allow_dynamic_smem(int bytes) {
    static const bool configured = [bytes] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
        return true;
    }();
    (void)configured;
}

}  // namespace rigel::cuda

namespace rigel::cuda {

// cudaMalloc of the library's own scratch (a plan's workspace, the decomposed
// attention's S x S rows), refused first in one sentence naming `what`, the
// bytes it needs and the bytes free when the device cannot hold it: bad input
// (a shape too large for the memory), not a failed CUDA call.
inline void* alloc_or_refuse(std::size_t bytes, const std::string& what) {
    std::size_t free = 0, total = 0;
    RIGEL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    if (bytes > free) {
        char text[96];
        std::snprintf(text, sizeof text, " needs %.2f GB of device memory and %.2f GB are free",
                      static_cast<double>(bytes) / 1e9, static_cast<double>(free) / 1e9);
        throw std::invalid_argument(what + text);
    }
    void* p = nullptr;
    RIGEL_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

}  // namespace rigel::cuda
