// fp8 with DeepSeek-V3's block scales (k38_wgmma_fp8_block_scaled.cu), as a
// call a host program makes. Plain C++: the kernel is in the .cu file; a build
// without CUDA links a stub that throws (src/cuda/no_cuda.cpp).
#pragma once
#include "ladder/rung.hpp"

namespace rigel::cuda {

// D (M x N, fp32, row-major) = sum over the 128-wide blocks b of K of
// (A_b B_b^T) s_A[row][b] s_B[column / 128][b]: A is M x K and B is N x K, both
// K-major e4m3 or e5m2 (gemm.type). On the device, fp32: scale_a holds
// ceil(K / 128) x M scales, block-column-major (s_A[row][b] at b M + row: the
// M scales of one block of K side by side, the order a quantizer writes as it
// walks K, and the one the kernel reads in whole cache lines);
// scale_b ceil(N / 128) x ceil(K / 128), row-major (s_B[j][b] at j ceil(K / 128) + b).
// BlockScaled::scales_block_major() gives A's host scales in that order.
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
