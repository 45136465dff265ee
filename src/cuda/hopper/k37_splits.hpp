// k37's split count (k37_wgmma_splitk.cu says why), plain C++ so that
// `rigel emulate --against k37_wgmma_splitk` models the split k37 runs.
#pragma once
#include <algorithm>
#include <cstdint>

namespace rigel::cuda {

// Every split keeps at least this many k-tiles: one pass of the ring.
inline constexpr int kK37MinKTilesPerSplit = 4;

// 1 when the tiles fill the SMs; else as many splits as keep tiles x splits
// within one wave, each with at least kK37MinKTilesPerSplit k-tiles.
inline int k37_split_count(std::int64_t tiles, int k_tiles, int sms) {
    if (tiles >= sms) return 1;
    const int by_sms = sms / static_cast<int>(tiles);
    const int by_k = k_tiles / kK37MinKTilesPerSplit;
    return std::max(1, std::min(by_sms, by_k));
}

}  // namespace rigel::cuda
