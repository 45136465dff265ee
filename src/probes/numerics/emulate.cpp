// `rigel emulate`'s library half (emulate.hpp).
#include "probes/numerics/emulate.hpp"
#include "core/host_threads.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>
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

// fp8 wgmma (e4m3): 32 products and C in one step, 13 bits kept, truncation,
// the result truncated to 13 fraction bits, an fp32-subnormal result flushed
// to +0 (the probe's "fp32-subnormal C" row; no sum of fp8 products reaches
// that range, so only a subnormal C shows it). MMA-Sim's published Hopper
// parameters; rigel's probe, once it also tried a result narrower than fp32,
// measured the same model bit-identical on 2048/2048 single and 256/256
// chained instructions (2026-12-01_da76df2_probes.csv; with fp32's 23 bits it
// had matched 1534/2048). One difference left aside: MMA-Sim aligns a
// subnormal factor at the type's smallest normal exponent, this model at its own.
constexpr BlockModel kFp8WgmmaModel{.block = 32,
                                         .frac_bits = 13,
                                         .align = AlignCut::toward_zero,
                                         .out = Rounding::toward_zero,
                                         .c_in_first_block = true,
                                         .subnormal_out = false,
                                         .exp_rule = ExpRule::factors,
                                         .out_frac_bits = 13};
constexpr std::string_view kFp8Source =
    "rigel's accumulation probe (2048/2048 single, 256/256 chained, da76df2), the parameters of MMA-Sim's Hopper model";

constexpr std::array kPaths{
    Path{"mma_sync_bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", DType::bf16, 16, kHalfModel,
         "the mma.sync rungs (k20-k22)"},
    Path{"mma_sync_f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", DType::f16, 16, kHalfModel,
         "the mma.sync rungs (k20-k22)"},
    Path{"wgmma_bf16", "wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16", DType::bf16, 16, kHalfModel,
         "the wgmma rungs (k30-k32, k35, k37) and the GEMM library's 16-bit kernels"},
    Path{"wgmma_f16", "wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16", DType::f16, 16, kHalfModel,
         "the wgmma rungs (k30-k32, k35, k37) and the GEMM library's 16-bit kernels"},
    Path{"wgmma_e4m3", "wgmma.mma_async.sync.aligned.m64nNk32.f32.e4m3.e4m3", DType::e4m3, 32,
         kFp8WgmmaModel, "the fp8 wgmma rungs (k33, k34, k36, k38) and the GEMM library's fp8 kernels", true,
         kFp8Source},
    // e5m2 on the same datapath, as MMA-Sim gives Hopper's fp8 wgmma one model
    // for both types: the accumulation probe's e5m2 path assembled the same
    // parameters from its own answers and matched 2048/2048 single and 256/256
    // chained instructions (2026-12-01_13efe6f_probes.csv), and `rigel emulate`
    // reproduced k33 and k34 on all ten problems (13efe6f).
    Path{"wgmma_e5m2", "wgmma.mma_async.sync.aligned.m64nNk32.f32.e5m2.e5m2", DType::e5m2, 32,
         kFp8WgmmaModel, "the fp8 wgmma rungs (k33, k34, k36, k38) with e5m2 operands", true,
         "rigel's accumulation probe, e5m2 path (2048/2048 single, 256/256 chained, 13efe6f): the e4m3 path's "
         "parameters"},
};

// fp32 a + b, rounded to nearest even (the split-K reduction's adds).
float add_f32(float a, float b) { return a + b; }

// Whether a block's aligned sum is exact in a double: C joins the first
// block's alignment (so every term is a multiple of the step q = 2^(emax -
// frac_bits)), and block + 1 terms each below 2^(frac_bits + 2) q cannot
// carry past 53 bits. Then the chain needs no exact-sum arithmetic.
bool sums_fit_double(const BlockModel& m) {
    return m.c_in_first_block && m.frac_bits <= 40 && std::ldexp(static_cast<double>(m.block + 1), m.frac_bits + 2) < 0x1p53;
}

// probes::exponent_of for a normal nonzero double, from its bits (every
// factor, product and fp32 sum here is one: fp32's smallest subnormal squared
// is 2^-298, far above double's normal range's floor).
int exponent_bits(double x) {
    return static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff) - 1023;
}

// probes::predict for a chain over a[0, len) and b[0, len) (a partial last
// instruction zero-filled), C = 0, for a model whose sums fit a double: the
// same steps, the aligned terms added in double (exact), no allocation.
double chain_fast(const Path& p, const double* a, const double* b, int len) {
    const BlockModel& m = p.model;
    const double sub_limit = std::ldexp(1.0, probes::facts(p.type).emin);
    const auto input = [&](double x) { return (!m.subnormal_in && std::fabs(x) < sub_limit) ? 0.0 : x; };
    double v[65];
    int e[65];
    double acc = 0.0;
    for (int k0 = 0; k0 < len; k0 += p.k_inst)
        for (int b0 = k0; b0 < k0 + p.k_inst; b0 += m.block) {
            int n = 0, emax = INT32_MIN;
            for (int k = b0; k < std::min({b0 + m.block, k0 + p.k_inst, len}); ++k) {
                const double x = input(a[k]), y = input(b[k]);
                const double prod = x * y;
                if (prod == 0) continue;
                v[n] = prod;
                e[n] = m.exp_rule == ExpRule::factors ? exponent_bits(x) + exponent_bits(y) : exponent_bits(prod);
                emax = std::max(emax, e[n]);
                ++n;
            }
            if (acc != 0) {
                v[n] = acc;
                e[n] = exponent_bits(acc);
                emax = std::max(emax, e[n]);
                ++n;
            }
            // A block of zero products still rounds the running sum alone
            // (probes::predict); with nothing at all the sum is +0.
            if (n == 0) {
                acc = 0.0;
                continue;
            }
            const double q = std::ldexp(1.0, emax - m.frac_bits);
            double s = 0.0;
            for (int i = 0; i < n; ++i) s += probes::detail::cut(v[i], q, m.align);
            // An exact zero is +0, as the exact sum's rounding gives it.
            acc = s == 0 ? 0.0 : probes::round_f32(s, m.out, m.subnormal_out, m.out_frac_bits);
        }
    return acc;
}

// [begin, end) of each split's share of K (elements).
std::vector<std::pair<int, int>> ranges(int k, const KSplit& split) {
    const int k_tiles = (k + split.k_tile - 1) / split.k_tile;
    const int splits = std::min(split.splits, std::max(k_tiles, 1));
    const int per_split =
        split.share == Share::floor ? k_tiles / splits : (k_tiles + splits - 1) / splits;
    std::vector<std::pair<int, int>> out;
    for (int s = 0; s < splits; ++s) {
        const int begin = std::min(k, s * per_split * split.k_tile);
        const int end = s + 1 == splits ? k : std::min(k, (s + 1) * per_split * split.k_tile);
        if (begin < end || s == 0) out.emplace_back(begin, end);
    }
    return out;
}

// The partials [lo, hi) as a balanced tree of fp32 adds.
float pairwise(std::span<const float> p) {
    if (p.size() == 1) return p[0];
    const std::size_t half = p.size() / 2;
    return add_f32(pairwise(p.first(half)), pairwise(p.subspan(half)));
}

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

std::string describe(const KSplit& s) {
    if (s.splits == 1) return "K not split";
    return "K split " + std::to_string(s.splits) + " ways in k-tiles of " + std::to_string(s.k_tile) + " (" +
           (s.share == Share::floor ? "floor" : "ceil") + " shares), partials added " +
           (s.reduction == Reduction::serial ? "in split order" : "pairwise");
}

float element(const Path& p, std::span<const double> a, std::span<const double> b, KSplit split) {
    const int k = static_cast<int>(a.size());
    if (b.size() != a.size()) throw std::invalid_argument("emulate: the rows of A and B differ in length");
    if (split.splits < 1 || split.k_tile < p.k_inst || split.k_tile % p.k_inst != 0)
        throw std::invalid_argument("emulate: splits must be at least 1 and k-tiles whole instructions");
    const auto parts = ranges(k, split);
    std::vector<float> partials;
    partials.reserve(parts.size());
    const bool fast = p.model.block <= 64 && sums_fit_double(p.model) && p.k_inst % p.model.block == 0;
    for (const auto& [begin, end] : parts) {
        if (fast) {
            partials.push_back(static_cast<float>(chain_fast(p, a.data() + begin, b.data() + begin, end - begin)));
            continue;
        }
        // This split's chain, padded with zeros to whole instructions (a
        // partial last k-tile is zero-filled, as TMA fills it).
        const int len = ((end - begin) + p.k_inst - 1) / p.k_inst * p.k_inst;
        probes::DotCase dc{std::vector<double>(static_cast<std::size_t>(len), 0.0),
                           std::vector<double>(static_cast<std::size_t>(len), 0.0), 0.0};
        std::copy(a.begin() + begin, a.begin() + end, dc.a.begin());
        std::copy(b.begin() + begin, b.begin() + end, dc.b.begin());
        partials.push_back(static_cast<float>(probes::predict(p.model, dc, p.k_inst, p.type)));
    }
    // One split is the fused path's alpha acc (alpha 1: the chain's value,
    // a negative zero kept); several are summed from 0.0f, as the reduction
    // kernel does (so a negative zero sum reads +0).
    if (partials.size() == 1) return partials[0];
    if (split.reduction == Reduction::pairwise) return add_f32(0.0f, pairwise(partials));
    float total = 0.0f;
    for (float v : partials) total = add_f32(total, v);
    return total;
}

std::vector<Fit> infer(std::span<const Path* const> candidates, std::span<const double> a, std::span<const double> b,
                       int m, int n, int k, std::span<const float> d, int samples, std::uint64_t seed,
                       int max_splits, int threads) {
    if (m < 1 || n < 1 || k < 1 || samples < 1 || max_splits < 1)
        throw std::invalid_argument("emulate: M, N, K, the samples and the splits must be at least 1");
    if (a.size() != static_cast<std::size_t>(m) * k || b.size() != static_cast<std::size_t>(n) * k ||
        d.size() != static_cast<std::size_t>(m) * n)
        throw std::invalid_argument("emulate: A must hold M x K values, B N x K and D M x N");
    // The sampled elements: a fixed draw (splitmix64), repeats allowed.
    std::vector<std::pair<int, int>> at;
    std::uint64_t x = seed;
    for (int i = 0; i < samples; ++i) {
        x += 0x9E3779B97F4A7C15ull;
        std::uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        at.emplace_back(static_cast<int>(z % static_cast<std::uint64_t>(m)),
                        static_cast<int>((z >> 32) % static_cast<std::uint64_t>(n)));
    }
    // The hypotheses, each way of cutting and adding K once.
    std::vector<Fit> fits;
    for (const Path* p : candidates) {
        std::vector<std::pair<std::vector<std::pair<int, int>>, Reduction>> seen;
        const auto add = [&](KSplit s) {
            // Two partials add alike either way: (0 + p0) + p1 and 0 + (p0 + p1).
            std::vector<std::pair<int, int>> cut = ranges(k, s);
            const Reduction r = cut.size() <= 2 ? Reduction::serial : s.reduction;
            auto key = std::make_pair(std::move(cut), r);
            if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
            seen.push_back(std::move(key));
            fits.push_back({.path = p, .split = s});
        };
        add({.splits = 1, .k_tile = p->k_inst});
        for (int k_tile = 16; k_tile <= 256; k_tile *= 2) {
            if (k_tile < p->k_inst || k_tile % p->k_inst != 0) continue;
            for (int s = 2; s <= max_splits; ++s)
                for (Share share : {Share::floor, Share::ceil})
                    for (Reduction r : {Reduction::serial, Reduction::pairwise})
                        add({.splits = s, .k_tile = k_tile, .share = share, .reduction = r});
        }
    }
    // Scored in parallel, a hypothesis per task.
    const int hw = default_host_threads();
    const int workers = std::max(1, std::min(threads > 0 ? threads : hw, static_cast<int>(fits.size())));
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w)
        pool.emplace_back([&, w] {
            for (std::size_t h = static_cast<std::size_t>(w); h < fits.size(); h += static_cast<std::size_t>(workers)) {
                Fit& f = fits[h];
                for (const auto& [i, j] : at) {
                    const float v = element(*f.path, a.subspan(static_cast<std::size_t>(i) * k, static_cast<std::size_t>(k)),
                                            b.subspan(static_cast<std::size_t>(j) * k, static_cast<std::size_t>(k)),
                                            f.split);
                    const float want = d[static_cast<std::size_t>(i) * n + j];
                    f.identical += std::memcmp(&v, &want, sizeof v) == 0;
                    ++f.sampled;
                }
            }
        });
    for (std::thread& t : pool) t.join();
    std::stable_sort(fits.begin(), fits.end(), [](const Fit& x, const Fit& y) {
        if (x.identical != y.identical) return x.identical > y.identical;
        return x.split.splits < y.split.splits;
    });
    return fits;
}

std::vector<float> gemm(const Path& p, std::span<const double> a, std::span<const double> b, int m, int n, int k,
                        KSplit split, int threads) {
    if (m < 1 || n < 1 || k < 1) throw std::invalid_argument("emulate: M, N and K must be at least 1");
    if (a.size() != static_cast<std::size_t>(m) * k || b.size() != static_cast<std::size_t>(n) * k)
        throw std::invalid_argument("emulate: A must hold M x K values and B N x K");
    std::vector<float> d(static_cast<std::size_t>(m) * n);
    const int hw = default_host_threads();
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
