// fp8 with DeepSeek-V3's block scales (k38_wgmma_fp8_block_scaled.cu), as a
// call a host program makes. Plain C++: the kernel is in the .cu file; a build
// without CUDA links a stub that throws (src/cuda/no_cuda.cpp).
#pragma once
#include <cstdint>

#include "ladder/rung.hpp"

namespace rigel::cuda {

// D (M x N, fp32, row-major) = sum over the 128-wide blocks b of K of
// (A_b B_b^T) s_A[row][b] s_B[column / 128][b]: A is M x K and B is N x K, both
// K-major e4m3 or e5m2 (gemm.type). The scales are fp32 on the device, 16-byte
// aligned, k-block-major: block b's scales side by side in a row of
// scale_ld(count) floats (count rounded up to 4, so that every row starts on
// 16 bytes, as TMA needs), rows b = 0 .. ceil(K / 128) - 1:
//   scale_a: s_A[row][b] at b scale_ld(M) + row;
//   scale_b: s_B[j][b] at b scale_ld(ceil(N / 128)) + j.
// That is the order a quantizer writes as it walks K, and it lets the kernel
// load each k-tile's scales by TMA with its operands.
// BlockScaled::scales_block_major(scale_ld(rows)) gives host scales in it.
constexpr std::int64_t scale_ld(std::int64_t count) { return (count + 3) / 4 * 4; }

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
