// How each rung of the CUDA ladder divides K, which `rigel emulate --against
// RUNG` must follow to the bit (src/cli/emulate_commands.cpp). Host-only and
// header-only, so that tests/host/test_emulate_rungs.cpp holds it without the
// CLI or a GPU.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda/hopper/k37_splits.hpp"
#include "core/dtype.hpp"
#include "probes/numerics/emulate.hpp"

namespace rigel::cli {

inline constexpr std::string_view kSplitKRung = "k37_wgmma_splitk";

// k37_wgmma_splitk's split count for an M x N x K problem on `sms` SMs: the
// rung's own k37_split_count (cuda/hopper/k37_splits.hpp) over its 128 x 256
// tiles and k-tiles of 128 bytes of K (64 elements of bf16/f16, 128 of fp8).
inline int k37_splits(DType t, int m, int n, int k, int sms) {
    if (m < 1 || n < 1 || k < 1 || sms < 1)
        throw std::invalid_argument("k37_splits: M, N, K and the SM count must be at least 1");
    const std::int64_t tiles = std::int64_t{(m + 127) / 128} * ((n + 255) / 256);
    const int k_tile = 1024 / info(t).storage_bits;
    return cuda::k37_split_count(tiles, (k + k_tile - 1) / k_tile, sms);
}

struct RungSplit {
    emulate::KSplit split;
    // The partials are added from the first one rather than from zero
    // (k37's reduction kernel): partials that are all -0 then sum to -0.
    bool from_first = false;
};

// The promoted fp8 rungs restart the tensor core's sum every 128 of K and add
// each partial into an fp32 total from zero (warp_specialized.cuh,
// cluster_gemm.cuh): the serial split into k-tiles of 128. k37 splits K into
// k37_splits() contiguous runs of whole k-tiles, the last taking the rest
// (warp_specialized.cuh, k_tile_range: floor shares), and adds the partials
// in split order from the first. Every other rung chains all of K. `sms` is
// read for k37 only.
inline RungSplit rung_split(std::string_view rung, DType t, int m, int n, int k, int sms) {
    for (std::string_view promoted :
         {"k34_wgmma_fp8_promoted", "k36_wgmma_fp8_promoted_cluster", "k38_wgmma_fp8_block_scaled"})
        if (rung == promoted) return {.split = {.splits = (k + 127) / 128, .k_tile = 128}};
    if (rung == kSplitKRung)
        return {.split = {.splits = k37_splits(t, m, n, k, sms), .k_tile = 1024 / info(t).storage_bits},
                .from_first = true};
    return {};
}

// Turns D as emulate::gemm() gives it (the partials added from +0) into the
// sum from the first partial. The two differ only where every partial is -0:
// from +0 the sum is +0, from the first partial -0. So only the +0 elements
// are looked at again, each split's chain recomputed alone (emulate::element
// over that split's range of K, which is the partial emulate::gemm() added).
// Floor shares only, as k37 cuts K.
inline void sum_from_first(const emulate::Path& p, std::span<const double> a, std::span<const double> b, int m, int n,
                           int k, const emulate::KSplit& split, std::vector<float>& d) {
    if (split.share != emulate::Share::floor || split.reduction != emulate::Reduction::serial)
        throw std::invalid_argument("sum_from_first: k37's split has floor shares added serially");
    if (d.size() != static_cast<std::size_t>(m) * n)
        throw std::invalid_argument("sum_from_first: D must hold M x N values");
    // The splits' ranges of K, as emulate::gemm() cuts them.
    const int k_tiles = (k + split.k_tile - 1) / split.k_tile;
    const int splits = std::min(split.splits, std::max(k_tiles, 1));
    if (splits < 2) return;
    const int per_split = k_tiles / splits;
    std::vector<std::pair<int, int>> ranges;
    for (int s = 0; s < splits; ++s) {
        const int begin = std::min(k, s * per_split * split.k_tile);
        const int end = s + 1 == splits ? k : std::min(k, (s + 1) * per_split * split.k_tile);
        if (begin < end || s == 0) ranges.emplace_back(begin, end);
    }
    const emulate::KSplit whole{.splits = 1, .k_tile = split.k_tile};
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float& out = d[static_cast<std::size_t>(i) * n + j];
            std::uint32_t bits = 0;
            std::memcpy(&bits, &out, 4);
            if (bits != 0) continue;  // not +0
            bool all_negative_zero = true;
            for (const auto& [begin, end] : ranges) {
                const auto row = [&](std::span<const double> x, int r) {
                    return x.subspan(static_cast<std::size_t>(r) * k + begin, static_cast<std::size_t>(end - begin));
                };
                const float part = emulate::element(p, row(a, i), row(b, j), whole);
                std::memcpy(&bits, &part, 4);
                if (bits != 0x80000000u) {
                    all_negative_zero = false;
                    break;
                }
            }
            if (all_negative_zero) out = -0.0f;
        }
}

}  // namespace rigel::cli
