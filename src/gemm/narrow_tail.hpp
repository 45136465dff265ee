// The narrow tail: the ping-pong kernel's last tile columns re-cut into
// narrower tiles, so that the last wave of tiles comes out even.
//
// Why: a persistent kernel of T equal tiles on S SMs runs ceil(T / S) tiles on
// its busiest SM while T / S would do. 4096^3 in 128 x 128 tiles is 1,024
// tiles on 132 SMs: 100 SMs multiply 8 tiles, 32 multiply 7, and 3 % of the
// SMs' time is idle. Splitting the last tiles along K (stream-K's way) evens
// the SMs out but runs slower on the H200 (docs/gemm.md: the split pieces stop
// asking L2 for the same bytes at the same time as their neighbours). Cutting
// along N keeps every tile whole: the last r columns of 128 become
// ceil(r 128 / w) columns of w (a multiple of 8, wgmma's N step), run after all
// the 128-wide tiles, so that each SM's share comes out as close to even as
// the widths allow. At 4096^3 the last 4 columns (512) become 5 of 104: 1,056
// tiles, 8 on every SM, 100 of them multiplying 7 x 128 + 104 columns'
// worth of tile and 32 of them 6 x 128 + 2 x 104, where 100 multiplied
// 8 x 128: the busiest SM's main loops 2.3 % shorter (the model below, with
// its per-tile overhead).
//
// The model: a tile of width w costs an SM w + kTileOverheadCols columns'
// time (its main loop is w / 2 cycles a k-step of m64nwk16 per half; the
// overhead stands for its first stage's wait and its hand-off), units are
// dealt to the CTAs in turn (unit u to CTA u mod CTAs, the persistent
// kernel's order), and a plan is taken only where its busiest CTA's load is
// at least kMinGain below the uniform tiles'. Plain C++, host-tested.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "cuda/hopper/sm90_types.cuh"

namespace rigel::gemm {

inline constexpr int kTailTileN = 104;  // the narrow tiles' width: k40's, and the library's "fixed_tail"
inline constexpr int kTileOverheadCols = 4;
inline constexpr double kMinGain = 0.01;
inline constexpr int kMaxNarrowedCols = 8;  // the last columns of 128 a plan may re-cut

struct NarrowTail {
    int wide_cols = 0;    // tile columns of the kernel's own width, first in the tile order
    int narrow_cols = 0;  // columns of the narrow width after them (0: no narrow tail, all tiles wide)
    std::int64_t busiest_load = 0;  // the model's load of the busiest CTA, in columns
    std::int64_t uniform_load = 0;  // the same for the uniform tiles
};

// The busiest CTA's load when `wide` units of cost `wide_cost` and then `narrow` units of cost
// `narrow_cost` are dealt in turn to min(units, ctas) CTAs.
inline std::int64_t busiest_cta_load(std::int64_t wide, std::int64_t wide_cost, std::int64_t narrow,
                                     std::int64_t narrow_cost, int ctas) {
    const std::int64_t units = wide + narrow;
    const std::int64_t g = std::min<std::int64_t>(units, ctas);
    // Units below `end` that CTA c is dealt: c, c + g, ...
    const auto dealt = [g](std::int64_t c, std::int64_t end) { return end > c ? (end - c + g - 1) / g : 0; };
    std::int64_t busiest = 0;
    for (std::int64_t c = 0; c < g; ++c) {
        const std::int64_t w = dealt(c, wide), nw = dealt(c, units) - w;
        busiest = std::max(busiest, w * wide_cost + nw * narrow_cost);
    }
    return busiest;
}

// The plan for an output of tiles_m tile rows and n columns, tiles `bn` wide, a narrow width
// `narrow_bn` (< bn) and `ctas` CTAs at most (the SMs). No narrow tail where none beats the
// uniform tiles by kMinGain.
inline NarrowTail plan_narrow_tail(int tiles_m, std::int64_t n, int bn, int narrow_bn, int ctas) {
    NarrowTail best;
    if (tiles_m <= 0 || n <= 0 || bn <= 0 || narrow_bn <= 0 || narrow_bn >= bn || ctas <= 0) return best;
    const std::int64_t tiles_n = (n + bn - 1) / bn;
    best.wide_cols = static_cast<int>(tiles_n);
    best.uniform_load = busiest_cta_load(tiles_m * tiles_n, bn + kTileOverheadCols, 0, 0, ctas);
    best.busiest_load = best.uniform_load;
    std::int64_t chosen = best.uniform_load;
    for (std::int64_t r = 1; r < tiles_n && r <= kMaxNarrowedCols; ++r) {
        const std::int64_t rest = n - (tiles_n - r) * bn;  // the columns the narrow tiles cover
        const std::int64_t cols = (rest + narrow_bn - 1) / narrow_bn;
        const std::int64_t load = busiest_cta_load(tiles_m * (tiles_n - r), bn + kTileOverheadCols,
                                                   tiles_m * cols, narrow_bn + kTileOverheadCols, ctas);
        if (load < chosen) {
            chosen = load;
            best.wide_cols = static_cast<int>(tiles_n - r);
            best.narrow_cols = static_cast<int>(cols);
            best.busiest_load = load;
        }
    }
    if (best.narrow_cols > 0 && static_cast<double>(chosen) > (1.0 - kMinGain) * static_cast<double>(best.uniform_load)) {
        best.wide_cols = static_cast<int>(tiles_n);
        best.narrow_cols = 0;
        best.busiest_load = best.uniform_load;
    }
    return best;
}

// The wave fit (k41): the tile width per shape. A 192-column tile is as many columns' work on one SM
// as 1.5 of 128 (the model's cost is its width plus kTileOverheadCols, as above), so the two widths
// cut the same N into different numbers of tiles and waves. 3072^3: 576 tiles of 128 leave the fifth
// wave 48 of 132 SMs (k40's narrow tail brings the busiest SM to 612 columns' worth), while 384 tiles
// of 192 are 2.91 waves: 588. The 192-wide tiles are taken where their busiest CTA's load is at
// least kMinGain below the narrow-tail plan's (or the uniform 128-wide tiles' where no tail is taken).
inline constexpr int kWaveFitWideN = 192;
struct WaveFit {
    bool wide = false;                // true: uniform tiles kWaveFitWideN wide, no narrow tail
    NarrowTail tail;                  // the 128-wide plan (k40's), taken where wide is false
    std::int64_t wide_load = 0;       // the busiest CTA's load on the wide tiles, in columns
};
inline WaveFit plan_wave_fit(int tiles_m, std::int64_t n, int bn, int wide_bn, int narrow_bn, int ctas) {
    WaveFit f;
    f.tail = plan_narrow_tail(tiles_m, n, bn, narrow_bn, ctas);
    if (tiles_m <= 0 || n <= 0 || bn <= 0 || wide_bn <= bn || ctas <= 0) return f;
    const std::int64_t wide_tiles = tiles_m * ((n + wide_bn - 1) / wide_bn);
    f.wide_load = busiest_cta_load(wide_tiles, wide_bn + kTileOverheadCols, 0, 0, ctas);
    f.wide = static_cast<double>(f.wide_load) <= (1.0 - kMinGain) * static_cast<double>(f.tail.busiest_load);
    return f;
}

// The tail fit (k42): the narrow tail's width chosen per shape among kTailFitWidths, the one whose
// plan leaves the busiest CTA the least work; a width listed later replaces an earlier one only where
// it gains kMinGain on it too, since the model counts neither the narrower tiles' extra bytes a flop
// nor m64n64's slightly lower rate (6144^3: 64 columns would gain 0.5 % on 104; it keeps 104). No
// tail where none gains kMinGain on the uniform tiles. 3072^3: k40's 104-wide tail re-cuts the last 8 columns of 128 into 10 of 104 and leaves
// the busiest SM 612 columns' worth; 64-wide tiles re-cut only the last 2 columns, into 4, so that the
// 528 wide tiles are exactly 4 waves and 96 of the 132 SMs take one narrow tile after them: 596.
// Among the sweep's squares only 3072^3 changes (4096^3 and 8192^3 keep 104: 1,032 against 1,056 and
// 4,128 against 4,160). 64 is also a whole 64-column slab of an MN-major B.
inline constexpr std::array<int, 2> kTailFitWidths{kTailTileN, 64};
struct TailFit {
    int narrow_bn = kTailFitWidths[0];
    NarrowTail tail;
};
inline TailFit plan_tail_fit(int tiles_m, std::int64_t n, int bn, int ctas) {
    TailFit best{kTailFitWidths[0], plan_narrow_tail(tiles_m, n, bn, kTailFitWidths[0], ctas)};
    for (std::size_t i = 1; i < kTailFitWidths.size(); ++i) {
        const NarrowTail t = plan_narrow_tail(tiles_m, n, bn, kTailFitWidths[i], ctas);
        if (static_cast<double>(t.busiest_load) <= (1.0 - kMinGain) * static_cast<double>(best.tail.busiest_load))
            best = {kTailFitWidths[i], t};
    }
    return best;
}

// A narrow tile's place, the kernel's and the host tests' (tile: its index among the narrow tiles):
// the narrow columns walked in the wide tiles' grouped order (tile rows in groups of group_m), the
// first starting at column `first_col` (the wide columns' end).
struct NarrowTile {
    int tm = 0;    // tile row
    int col0 = 0;  // first column of D (and row of a K-major B)
};
RIGEL_HOST_DEVICE constexpr NarrowTile narrow_tile(int tile, int tiles_m, int narrow_cols, int group_m, int first_col,
                                                   int narrow_bn) {
    NarrowTile t;
    int tn = 0;
    ::rigel::cuda::sm90::tile_coords<::rigel::cuda::sm90::Schedule::persistent_grouped>(tile, tiles_m, narrow_cols,
                                                                                         group_m, t.tm, tn);
    t.col0 = first_col + tn * narrow_bn;
    return t;
}

}  // namespace rigel::gemm
