// `rigel emulate`'s library half (emulate.hpp).
#include "probes/numerics/emulate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace rigel::emulate {
namespace {

using probes::AlignCut;
using probes::BlockModel;
using probes::ExpRule;
using probes::Rounding;

// The 16-bit models the H200 machine measured (FINDINGS.md, "the model
// assembled from these answers": 2048/2048 single and 256/256 chained
// instructions bit-identical for f16 and bf16, on mma.sync and on wgmma):
// 16 products per step, 25 bits kept below the largest term's leading bit,
// alignment by truncation toward zero, the result rounded toward zero, C
// aligned with the first block, products aligned by their factors' exponents.
constexpr BlockModel kHalfModel{.block = 16,
                                .frac_bits = 25,
                                .align = AlignCut::toward_zero,
                                .out = Rounding::toward_zero,
                                .c_in_first_block = true,
                                .exp_rule = ExpRule::factors};

constexpr std::array kPaths{
    Path{"mma_sync_bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", DType::bf16, 16, kHalfModel,
         "the mma.sync rungs (k20-k22)"},
    Path{"mma_sync_f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", DType::f16, 16, kHalfModel,
         "the mma.sync rungs (k20-k22)"},
    Path{"wgmma_bf16", "wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16", DType::bf16, 16, kHalfModel,
         "the wgmma rungs (k30-k32, k35, k37) and the GEMM library's 16-bit kernels"},
    Path{"wgmma_f16", "wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16", DType::f16, 16, kHalfModel,
         "the wgmma rungs (k30-k32, k35, k37) and the GEMM library's 16-bit kernels"},
};

// fp32 a + b, rounded to nearest even (the split-K reduction's adds).
float add_f32(float a, float b) { return a + b; }

}  // namespace

std::span<const Path> paths() { return kPaths; }

const Path* path_named(std::string_view name) {
    for (const Path& p : kPaths)
        if (p.name == name) return &p;
    return nullptr;
}

std::string path_names() {
    std::string out;
    for (const Path& p : kPaths) out += (out.empty() ? "" : ", ") + std::string(p.name);
    return out;
}

float element(const Path& p, std::span<const double> a, std::span<const double> b, KSplit split) {
    const int k = static_cast<int>(a.size());
    if (b.size() != a.size()) throw std::invalid_argument("emulate: the rows of A and B differ in length");
    if (split.splits < 1 || split.k_tile < p.k_inst || split.k_tile % p.k_inst != 0)
        throw std::invalid_argument("emulate: splits must be at least 1 and k-tiles whole instructions");
    const int k_tiles = (k + split.k_tile - 1) / split.k_tile;
    const int splits = std::min(split.splits, std::max(k_tiles, 1));
    const int per_split = k_tiles / splits;
    // One split is the fused path's alpha acc (alpha 1: the chain's value,
    // a negative zero kept); several are summed from 0.0f, as the reduction
    // kernel does (so a negative zero sum reads +0).
    float total = 0.0f, only = 0.0f;
    for (int s = 0; s < splits; ++s) {
        const int begin = s * per_split * split.k_tile;
        const int end = s + 1 == splits ? k : std::min(k, (s + 1) * per_split * split.k_tile);
        // This split's chain, padded with zeros to whole instructions (a
        // partial last k-tile is zero-filled, as TMA fills it).
        const int len = ((end - begin) + p.k_inst - 1) / p.k_inst * p.k_inst;
        probes::DotCase dc{std::vector<double>(static_cast<std::size_t>(len), 0.0),
                           std::vector<double>(static_cast<std::size_t>(len), 0.0), 0.0};
        std::copy(a.begin() + begin, a.begin() + end, dc.a.begin());
        std::copy(b.begin() + begin, b.begin() + end, dc.b.begin());
        const float partial = static_cast<float>(probes::predict(p.model, dc, p.k_inst, p.type));
        total = add_f32(total, partial);
        only = partial;
    }
    return splits == 1 ? only : total;
}

std::vector<float> gemm(const Path& p, std::span<const double> a, std::span<const double> b, int m, int n, int k,
                        KSplit split, int threads) {
    if (m < 1 || n < 1 || k < 1) throw std::invalid_argument("emulate: M, N and K must be at least 1");
    if (a.size() != static_cast<std::size_t>(m) * k || b.size() != static_cast<std::size_t>(n) * k)
        throw std::invalid_argument("emulate: A must hold M x K values and B N x K");
    std::vector<float> d(static_cast<std::size_t>(m) * n);
    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    const int workers = std::max(1, std::min(threads > 0 ? threads : hw, m));
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w)
        pool.emplace_back([&, w] {
            for (int i = w; i < m; i += workers)
                for (int j = 0; j < n; ++j)
                    d[static_cast<std::size_t>(i) * n + j] =
                        element(p, a.subspan(static_cast<std::size_t>(i) * k, static_cast<std::size_t>(k)),
                                b.subspan(static_cast<std::size_t>(j) * k, static_cast<std::size_t>(k)), split);
        });
    for (std::thread& t : pool) t.join();
    return d;
}

}  // namespace rigel::emulate
