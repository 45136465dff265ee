// fp8 with DeepSeek-V3's block scales (k38_wgmma_fp8_block_scaled.cu), as a
// call a host program makes. Plain C++: the kernel is in the .cu file; a build
// without CUDA links a stub that throws (src/cuda/no_cuda.cpp).
#pragma once
#include "ladder/rung.hpp"

namespace rigel::cuda {

// D (M x N, fp32, row-major) = sum over the 128-wide blocks b of K of
// (A_b B_b^T) s_A[row][b] s_B[column / 128][b]: A is M x K and B is N x K, both
// K-major e4m3 or e5m2 (gemm.type); scale_a holds M x ceil(K / 128) fp32 scales,
// scale_b ceil(N / 128) x ceil(K / 128), row-major, on the device.
struct BlockScaledProblem {
    GemmProblem gemm;
    const float* scale_a = nullptr;
    const float* scale_b = nullptr;
};

// Launches on gemm.stream; throws std::invalid_argument, one sentence, for a
// missing scale pointer, a type other than e4m3/e5m2, or a K or pointer that
// TMA cannot address.
void fp8_block_scaled_gemm(const BlockScaledProblem& p);

}  // namespace rigel::cuda
