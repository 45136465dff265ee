// What a persistent Hopper rung's launch prepares before its kernel, whatever
// the kernel (k38's cooperative one, k39's ping-pong): the alignment check,
// both operands' tensor maps (packed, K-major, boxes of a tile's rows) and
// the tile grid, one CTA per SM at most.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/hopper/sm90.cuh"

namespace rigel::cuda::sm90 {

struct RungLaunch {
    const CUtensorMap* map_a;
    const CUtensorMap* map_b;
    int m, n, k, tiles_m, tiles_n;
    unsigned grid;  // min(tiles, sms)
};

// G: the kernel's tile shape (kType, kBM, kBN); maps_a and maps_b: the rung's
// own caches, which keep the maps the returned pointers point into.
template <class G>
RungLaunch prepare_rung_launch(const GemmProblem& p, TensorMapCache& maps_a, TensorMapCache& maps_b, int sms,
                               const char* rung) {
    require_alignment(p, rung);
    RungLaunch l{&maps_a.get(p.a, G::kType, p.m, p.k, G::kBM), &maps_b.get(p.b, G::kType, p.n, p.k, G::kBN),
                 static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), 0, 0, 0};
    l.tiles_m = ceil_div(l.m, G::kBM);
    l.tiles_n = ceil_div(l.n, G::kBN);
    l.grid = static_cast<unsigned>(std::min<std::int64_t>(static_cast<std::int64_t>(l.tiles_m) * l.tiles_n, sms));
    return l;
}

}  // namespace rigel::cuda::sm90
