// fp8 with block scales, as DeepSeek-V3 trains: the quantization recipe that
// produces the scaled operands, and the float64 reference of a GEMM on them.
//
// An operand is cut into blocks along its rows and K (1 x 128 for the
// activations A, 128 x 128 for the weights B, each stored N x K), and each
// block gets one fp32 scale: s = amax / max(type) in fp32 (1 for a block of
// zeros), the elements q = type(x / s), the division in fp32 and the rounding
// to nearest even, saturating. What the operand stands for is q s. A GEMM on
// two such operands accumulates each 128-wide slice of K in its own sum and
// adds it to the total times s_A s_B, where a kernel promotes (k34's interval
// is the same 128); the reference does the same sums in float64, so it is the
// exact product of the dequantized operands.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/dtype.hpp"

namespace rigel {

struct BlockScaled {
    DType type = DType::e4m3;  // e4m3 or e5m2
    std::size_t rows = 0, cols = 0;  // row-major, K along the columns
    int block_rows = 1, block_cols = 128;
    std::vector<std::uint8_t> bytes;  // the quantized elements, rows x cols
    std::vector<double> values;       // their exact (unscaled) values
    std::vector<float> scales;        // one per block, row-major over the grid of blocks

    std::size_t block_grid_cols() const { return (cols + block_cols - 1) / block_cols; }
    float scale_of(std::size_t r, std::size_t c) const {
        return scales[(r / block_rows) * block_grid_cols() + c / block_cols];
    }
    // The scales in block-column-major order, each column of the grid a row of
    // `ld` >= block_grid_rows() floats (s at b ld + row block, the padding 0):
    // what fp8_block_scaled_gemm reads (src/cuda/hopper/block_scaled.hpp).
    std::size_t block_grid_rows() const { return (rows + block_rows - 1) / block_rows; }
    std::vector<float> scales_block_major(std::size_t ld) const {
        const std::size_t gr = block_grid_rows(), gc = block_grid_cols();
        if (ld < gr) throw std::invalid_argument("scales_block_major: a row stride below the grid's rows");
        std::vector<float> out(gc * ld, 0.0f);
        for (std::size_t r = 0; r < gr; ++r)
            for (std::size_t b = 0; b < gc; ++b) out[b * ld + r] = scales[r * gc + b];
        return out;
    }
    // What element (r, c) stands for: q s, exact in float64.
    double dequantized(std::size_t r, std::size_t c) const {
        return values[r * cols + c] * static_cast<double>(scale_of(r, c));
    }
};

// `x` (rows x cols, row-major, fp32 values) cut into block_rows x block_cols
// blocks (the last ones partial) and quantized to `type` with one fp32 scale
// each. Throws std::invalid_argument for another type, an empty shape, a block
// of 0, or a non-finite input.
BlockScaled quantize_blocks(std::span<const float> x, std::size_t rows, std::size_t cols, int block_rows,
                            int block_cols, DType type = DType::e4m3);

// D (M x N, row-major) = A B^T on the dequantized operands, in float64: A is M x
// K, B is N x K, their K blocks aligned (A's block_cols equal to B's).
std::vector<double> block_scaled_reference(const BlockScaled& a, const BlockScaled& b);

}  // namespace rigel
