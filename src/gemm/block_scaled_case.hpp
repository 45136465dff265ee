// One problem for fp8 with block scales (DeepSeek-V3's recipe: A per 1 x 128,
// B per 128 x 128; src/core/block_scaling.hpp) and its verification gate:
// what `rigel gemm blockscaled` runs on the device (k38's kernel) and the host
// tests hold to a D computed here.
#pragma once
#include <cstdint>
#include <span>

#include "core/block_scaling.hpp"
#include "core/reference.hpp"

namespace rigel::gemm {

struct BlockScaledCase {
    DType type = DType::e4m3;
    int m = 0, n = 0, k = 0;
    BlockScaled a;  // M x K, 1 x 128 blocks
    BlockScaled b;  // N x K, 128 x 128 blocks
};

// Fresh inputs whose size changes from block to block (each block of A and of
// B its own power of two, 2^-8 .. 2^8, times normal values), so that a scale
// applied to the wrong block shows in D; quantized with the recipe. Throws
// std::invalid_argument for a type other than e4m3/e5m2 or a shape below 1.
BlockScaledCase make_block_scaled_case(DType type, int m, int n, int k, std::uint64_t seed);

// D (M x N fp32, row-major) against float64 of the dequantized operands
// (q s, exact), rows sampled as the ladder samples them for large problems,
// with the ladder's gate for the type (element_tolerance, the poison and NaN
// counts): the block-scaled sum and the plain product of the dequantized
// operands are the same number in exact arithmetic.
Verdict judge_block_scaled(const BlockScaledCase& c, std::span<const float> d, std::uint64_t seed, int threads);

}  // namespace rigel::gemm
