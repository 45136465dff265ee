// cuBLASLt's fp8 GEMM with DeepSeek-V3's block scales: the problem of `rigel gemm blockscaled`
// (src/cuda/hopper/block_scaled.hpp: A per 1 x 128, B per 128 x 128, fp32 scales, an fp32 D) as
// cublasLtMatmul takes it, through CUBLASLT_MATMUL_DESC_A_SCALE_MODE and _B_SCALE_MODE. Plain C++:
// the CUDA side is in cublaslt_gemm.cu (it shares the plain baseline's tuning), and the layouts
// below are inline so that the host tests check them (tests/host/test_cublaslt_mapping.cpp).
//
// The scale layouts. cublasLt.h names the modes (VEC128_32F: "a dedicated CUDA_R_32F scaling factor
// for each 128-element block in the innermost dimension"; BLK128x128_32F: "for each 128x128-element
// block") and leaves the layout to the documentation. What rigel takes it to be, for an operand
// stored as cuBLASLt reads it here (K the storage rows, "inner"; M or N the columns, "outer"), as
// NVIDIA's own callers lay the scales out (Transformer Engine's GEMM-ready block scales, the cuBLASMp
// tests' model of cuBLASLt's layout; PyTorch's scaled_mm checks agree where outer is a multiple of 4):
//   VEC128_32F:      s[j][kb] at kb * round4(outer) + j        (outer-major, each k-block a row of
//                                                                outer scales padded to 4 floats)
//   BLK128x128_32F:  s[jb][kb] at jb * round4(ceil(K / 128)) + kb  (k-block-major within each outer
//                                                                block, padded to 4 floats)
// rigel's A scales (k38's layout, b scale_ld(M) + row) are the first as they are; rigel's B scales
// (b scale_ld(ceil(N / 128)) + j) are the transpose of the second, so B's are repacked
// (lt_block_scales). If these assumptions are wrong, cuBLASLt computes another product from the
// same bytes, and the float64 check of its D (the gate rigel's k38 is held to) fails the row.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/block_scaling.hpp"
#include "rigel/gemm.hpp"

namespace rigel::cuda::vendor {

constexpr std::int64_t kLtScaleBlock = 128;

constexpr std::int64_t lt_round4(std::int64_t x) { return (x + 3) / 4 * 4; }
constexpr std::int64_t lt_k_blocks(std::int64_t k) { return (k + kLtScaleBlock - 1) / kLtScaleBlock; }

// VEC128_32F: the scale of outer row j and k-block kb, of an operand with `outer` rows of K.
constexpr std::int64_t lt_vec128_index(std::int64_t j, std::int64_t kb, std::int64_t outer) {
    return kb * lt_round4(outer) + j;
}
constexpr std::int64_t lt_vec128_count(std::int64_t outer, std::int64_t k) { return lt_k_blocks(k) * lt_round4(outer); }

// BLK128x128_32F: the scale of outer block jb (rows 128 jb ...) and k-block kb.
constexpr std::int64_t lt_blk128_index(std::int64_t jb, std::int64_t kb, std::int64_t k) {
    return jb * lt_round4(lt_k_blocks(k)) + kb;
}
constexpr std::int64_t lt_blk128_count(std::int64_t outer, std::int64_t k) {
    return (outer + kLtScaleBlock - 1) / kLtScaleBlock * lt_round4(lt_k_blocks(k));
}

enum class LtScaleMode : std::uint8_t { vec128, blk128x128 };

inline const char* lt_scale_mode_name(LtScaleMode m) {
    return m == LtScaleMode::vec128 ? "VEC128_32F" : "BLK128x128_32F";
}

// The mode of an operand's blocks: 1 x 128 is VEC128_32F, 128 x 128 BLK128x128_32F; cuBLASLt has no
// other fp32 block shape.
inline LtScaleMode lt_scale_mode_of(const BlockScaled& x) {
    if (x.block_cols == kLtScaleBlock && x.block_rows == 1) return LtScaleMode::vec128;
    if (x.block_cols == kLtScaleBlock && x.block_rows == kLtScaleBlock) return LtScaleMode::blk128x128;
    throw std::invalid_argument("cuBLASLt takes fp32 block scales of 1 x 128 or 128 x 128 elements, not " +
                                std::to_string(x.block_rows) + " x " + std::to_string(x.block_cols));
}

// Which of cuBLASLt's operands gets which mode. rigel's row-major D = A B^T is cuBLASLt's
// column-major D^T = B A^T (cublaslt_gemm.hpp): its A is rigel's B, its B rigel's A.
struct LtBlockScaleModes {
    LtScaleMode a, b;  // cuBLASLt's A (rigel's B) and B (rigel's A)
};
inline LtBlockScaleModes lt_block_scale_modes(const BlockScaled& rigel_a, const BlockScaled& rigel_b) {
    return {.a = lt_scale_mode_of(rigel_b), .b = lt_scale_mode_of(rigel_a)};
}
// DeepSeek-V3's recipe (A per 1 x 128, B per 128 x 128) in those terms: what the baseline asks for.
inline constexpr LtBlockScaleModes kLtDeepSeekModes{.a = LtScaleMode::blk128x128, .b = LtScaleMode::vec128};

// x's scales (rows x cols, K along the columns) in the layout of its mode, the padding 0.
inline std::vector<float> lt_block_scales(const BlockScaled& x) {
    const auto outer = static_cast<std::int64_t>(x.rows), k = static_cast<std::int64_t>(x.cols);
    const std::int64_t gr = static_cast<std::int64_t>(x.block_grid_rows()),
                       gc = static_cast<std::int64_t>(x.block_grid_cols());
    const LtScaleMode mode = lt_scale_mode_of(x);
    std::vector<float> out(static_cast<std::size_t>(mode == LtScaleMode::vec128 ? lt_vec128_count(outer, k)
                                                                                  : lt_blk128_count(outer, k)),
                           0.0f);
    for (std::int64_t r = 0; r < gr; ++r)
        for (std::int64_t b = 0; b < gc; ++b)
            out[static_cast<std::size_t>(mode == LtScaleMode::vec128 ? lt_vec128_index(r, b, outer)
                                                                     : lt_blk128_index(r, b, k))] =
                x.scales[static_cast<std::size_t>(r * gc + b)];
    return out;
}

// One block-scaled problem on the device: D (M x N fp32, row-major) = sum over the 128-wide blocks
// kb of K of (A_kb B_kb^T) s_A s_B, A M x K and B N x K, both K-major, e4m3 or e5m2.
struct LtBlockScaled {
    gemm::Type type = gemm::Type::e4m3;
    std::int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    const void* b = nullptr;
    const float* a_scales = nullptr;  // 1 x 128 blocks, VEC128_32F's layout (k38's scale_a is)
    const float* b_scales = nullptr;  // 128 x 128 blocks, BLK128x128_32F's layout (lt_block_scales)
    float* d = nullptr;
};

// Empty when cuBLASLt's heuristic offers an algorithm for `p` (asked with p's scale pointers set,
// cuBLASLt's A in BLK128x128_32F and its B in VEC128_32F); else one sentence naming what it
// answered, its status included, and what it answers for the same question with a bf16 D. Cached per
// type and shape.
std::string cublaslt_block_scaled_support(const LtBlockScaled& p);

// Launches `p` on `s` (not waited for), the fastest of the heuristic's algorithms chosen on the
// first call as cublaslt_gemm chooses (timed after the benchmark's L2 flush, interleaved rounds, the
// median). Throws std::invalid_argument with the support sentence, or for a missing pointer or a
// type other than e4m3/e5m2, and std::runtime_error (naming the cuBLAS status) when a launch fails.
void cublaslt_block_scaled(const LtBlockScaled& p, gemm::Stream s);

// The line of the algorithm the latest tuning for p's type and shape chose; empty before it.
std::string cublaslt_block_scaled_algorithm(const LtBlockScaled& p);

}  // namespace rigel::cuda::vendor
