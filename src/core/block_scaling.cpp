// fp8 block scaling (block_scaling.hpp).
#include "core/block_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/formats.hpp"

namespace rigel {

namespace {

float type_max(DType t) {
    if (t == DType::e4m3) return 448.0f;
    if (t == DType::e5m2) return 57344.0f;
    throw std::invalid_argument("block scaling quantizes to e4m3 or e5m2");
}

std::uint8_t encode(DType t, float v) {
    return t == DType::e4m3 ? f32_to_e4m3(v, Overflow::saturate) : f32_to_e5m2(v, Overflow::saturate);
}

float decode(DType t, std::uint8_t b) { return t == DType::e4m3 ? e4m3_to_f32(b) : e5m2_to_f32(b); }

}  // namespace

BlockScaled quantize_blocks(std::span<const float> x, std::size_t rows, std::size_t cols, int block_rows,
                            int block_cols, DType type) {
    const float fmax = type_max(type);
    if (rows == 0 || cols == 0 || x.size() != rows * cols)
        throw std::invalid_argument("quantize_blocks: the values must fill a nonempty rows x cols matrix");
    if (block_rows < 1 || block_cols < 1) throw std::invalid_argument("quantize_blocks: blocks must be at least 1 x 1");
    BlockScaled out;
    out.type = type, out.rows = rows, out.cols = cols, out.block_rows = block_rows, out.block_cols = block_cols;
    out.bytes.resize(rows * cols);
    out.values.resize(rows * cols);
    const std::size_t grid_rows = (rows + block_rows - 1) / block_rows, grid_cols = out.block_grid_cols();
    out.scales.assign(grid_rows * grid_cols, 1.0f);
    for (std::size_t br = 0; br < grid_rows; ++br)
        for (std::size_t bc = 0; bc < grid_cols; ++bc) {
            const std::size_t r0 = br * block_rows, r1 = std::min(rows, r0 + block_rows);
            const std::size_t c0 = bc * block_cols, c1 = std::min(cols, c0 + block_cols);
            float amax = 0.0f;
            for (std::size_t r = r0; r < r1; ++r)
                for (std::size_t c = c0; c < c1; ++c) {
                    const float v = x[r * cols + c];
                    if (!std::isfinite(v)) throw std::invalid_argument("quantize_blocks: a non-finite input");
                    amax = std::max(amax, std::fabs(v));
                }
            const float s = amax > 0.0f ? amax / fmax : 1.0f;  // fp32 division, rounded to nearest
            out.scales[br * grid_cols + bc] = s;
            for (std::size_t r = r0; r < r1; ++r)
                for (std::size_t c = c0; c < c1; ++c) {
                    const std::uint8_t q = encode(type, x[r * cols + c] / s);  // fp32 division, then the type
                    out.bytes[r * cols + c] = q;
                    out.values[r * cols + c] = decode(type, q);
                }
        }
    return out;
}

std::vector<double> block_scaled_reference(const BlockScaled& a, const BlockScaled& b) {
    if (a.cols != b.cols) throw std::invalid_argument("block_scaled_reference: A and B differ in K");
    if (a.block_cols != b.block_cols)
        throw std::invalid_argument("block_scaled_reference: A's and B's K blocks differ");
    const std::size_t m = a.rows, n = b.rows, k = a.cols;
    std::vector<double> d(m * n, 0.0);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            double total = 0.0;
            for (std::size_t k0 = 0; k0 < k; k0 += static_cast<std::size_t>(a.block_cols)) {
                const std::size_t k1 = std::min(k, k0 + static_cast<std::size_t>(a.block_cols));
                double slice = 0.0;  // exact: products of 4-bit significands, far from overflow and underflow
                for (std::size_t kk = k0; kk < k1; ++kk) slice += a.values[i * k + kk] * b.values[j * k + kk];
                total += slice * static_cast<double>(a.scale_of(i, k0)) * static_cast<double>(b.scale_of(j, k0));
            }
            d[i * n + j] = total;
        }
    return d;
}

}  // namespace rigel
