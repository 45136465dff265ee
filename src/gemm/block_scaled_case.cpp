// fp8 block-scaled problems and their gate (block_scaled_case.hpp).
#include "gemm/block_scaled_case.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/recipe.hpp"

namespace rigel::gemm {

BlockScaledCase make_block_scaled_case(DType type, int m, int n, int k, std::uint64_t seed) {
    if (type != DType::e4m3 && type != DType::e5m2)
        throw std::invalid_argument("a block-scaled problem is e4m3 or e5m2, not " + std::string(name(type)));
    if (m < 1 || n < 1 || k < 1) throw std::invalid_argument("a block-scaled problem needs M, N and K of at least 1");
    const int k_blocks = (k + 127) / 128;
    // One power of two per block: A's blocks are (row, 128 of K), B's (128 rows, 128 of K).
    const auto blocky = [&](int rows, int block_rows, std::uint64_t stream) {
        Rng rng(seed * 0x9E3779B97F4A7C15ull + stream);
        const int grid_rows = (rows + block_rows - 1) / block_rows;
        std::vector<float> exponent(static_cast<std::size_t>(grid_rows) * k_blocks);
        for (float& e : exponent) e = std::ldexp(1.0f, static_cast<int>(rng.next() % 17) - 8);
        std::vector<float> x(static_cast<std::size_t>(rows) * k);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < k; ++c)
                x[static_cast<std::size_t>(r) * k + c] =
                    static_cast<float>(rng.normal()) * exponent[static_cast<std::size_t>(r / block_rows) * k_blocks + c / 128];
        return quantize_blocks(x, static_cast<std::size_t>(rows), static_cast<std::size_t>(k), block_rows, 128, type);
    };
    BlockScaledCase c;
    c.type = type, c.m = m, c.n = n, c.k = k;
    c.a = blocky(m, 1, 1);
    c.b = blocky(n, 128, 2);
    return c;
}

Verdict judge_block_scaled(const BlockScaledCase& c, std::span<const float> d, std::uint64_t seed, int threads) {
    if (d.size() != static_cast<std::size_t>(c.m) * c.n)
        throw std::invalid_argument("judge_block_scaled: D must hold M x N values");
    const std::size_t m = static_cast<std::size_t>(c.m), n = static_cast<std::size_t>(c.n),
                      k = static_cast<std::size_t>(c.k);
    std::vector<double> a(m * k), b_t(k * n);  // A as it stands, and B transposed to K x N
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t p = 0; p < k; ++p) a[i * k + p] = c.a.dequantized(i, p);
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t p = 0; p < k; ++p) b_t[p * n + j] = c.b.dequantized(j, p);
    const Reference ref = compute_reference(a, b_t, c.m, c.n, c.k, seed, threads);
    return verify(c.type, d.data(), ref);
}

}  // namespace rigel::gemm
