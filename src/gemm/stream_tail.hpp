// The split kernels' partition of the work into units (pingpong_gemm.cuh
// runs it): which k-tiles of which tile each unit multiplies, where it stands
// among its tile's units, in which order a CTA meets them, and which
// workspace halves it adds into; among them the streamed tail's (the
// dispatcher's rule 3b). Plain C++, compiled into the ping-pong kernel and
// into the host tests, which check on many shapes that the units cover every
// k-tile once and that every chain of the fix-up's waits ends at a piece that
// waits on none.
//
// The tail's `tiles` x `k_tiles` k-tiles, laid end to end (tile by tile), are
// cut into `ctas` runs of equal length (within one): CTA c takes
// [c w / ctas, (c + 1) w / ctas), w = tiles x k_tiles. With fewer tiles than
// CTAs each run is at most a tile long, so it covers the end of one tile
// (piece 0) and the start of the next (piece 1, empty where the run ends
// inside the first). A tile's pieces, in run order, are its splits 0, 1, ...
// (the run holding k-tile p is ((p + 1) ctas - 1) / w). Unit u < ctas is
// piece 1 of run u, unit ctas + c piece 0 of run c: a piece that starts a
// tile (split 0, which waits on no other) is thus its CTA's first unit, and
// every later split is a CTA's second, waiting on the split before it, which
// is split 0 or again a second unit: every chain of waits ends at a split 0.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define RIGEL_STREAM_HD __host__ __device__ __forceinline__
#else
#define RIGEL_STREAM_HD inline
#endif

namespace rigel::gemm {

struct StreamPiece {
    int tile = 0;    // in the tail, 0 .. tiles - 1
    int kb = 0;      // the piece's k-tiles [kb, ke) of its tile; kb == ke: an empty piece
    int ke = 0;
    int split = 0;   // its place among the tile's pieces
    int splits = 1;  // the tile's pieces
};

// Unit `unit` (0 .. 2 ctas - 1) of a tail of `tiles` tiles of `k_tiles` k-tiles on `ctas` CTAs;
// tiles < ctas and tiles x k_tiles >= ctas (each run one k-tile at least, at most a tile).
RIGEL_STREAM_HD StreamPiece stream_piece(int unit, int ctas, int tiles, int k_tiles) {
    const std::int64_t w = static_cast<std::int64_t>(tiles) * k_tiles;
    const int run = unit % ctas, piece = 1 - unit / ctas;
    const std::int64_t lo = run * w / ctas, hi = (run + 1) * w / ctas;
    const std::int64_t t = lo / k_tiles + piece, start = t * k_tiles;
    const std::int64_t b = lo > start ? lo : start, e = hi < start + k_tiles ? hi : start + k_tiles;
    if (e <= b) return {};  // an empty piece: no k-tiles, no fix-up
    const auto holder = [&](std::int64_t p) { return static_cast<int>(((p + 1) * ctas - 1) / w); };
    const int run0 = holder(start);
    return {static_cast<int>(t), static_cast<int>(b - start), static_cast<int>(e - start), run - run0,
            holder(start + k_tiles - 1) - run0 + 1};
}

// How many whole tiles a split kernel's CTAs run before its split units (pingpong_gemm.cuh's lead):
// none where every CTA has a split unit (a split of every tile, a tail split into as many units as
// CTAs, a streamed tail), so that a tile's later splits wait for their turn under the other
// consumer's whole tile; all of them where the units are fewer than the CTAs, so that the waves of
// whole tiles start together and keep step (docs/gemm.md, "Split units after the whole tiles").
RIGEL_STREAM_HD int split_units_lead(int whole_tiles, int split_units, int ctas, bool stream) {
    return stream || split_units >= ctas ? 0 : whole_tiles;
}

// A split kernel's unit (pingpong_gemm.cuh, SplitK): its tile in the kernel's tile order, its k-tiles
// [kb, ke), and its place among the tile's units (split of splits; the fix-up adds them in that order).
struct UnitSpan {
    int tile = 0, kb = 0, ke = 0, split = 0, splits = 1;
};

// Unit `unit` of a split kernel whose last `split_tiles` tiles are split (after `whole_tiles` whole
// ones): the first `lead` units (split_units_lead) are whole tiles 0 .. lead - 1, the next
// `split_units` the split units, the rest the other whole tiles, all of K. Split unit v is split
// v / split_tiles of tile whole_tiles + v % split_tiles, k-tiles [s kt / splits, (s + 1) kt / splits);
// streamed (split_units = 2 ctas), the piece stream_piece gives (kb == ke: an empty piece).
RIGEL_STREAM_HD UnitSpan unit_span(int unit, int lead, int split_units, int whole_tiles, int split_tiles, int splits,
                                   int k_tiles, bool stream, int ctas) {
    if (unit < lead || unit - lead >= split_units) return {unit < lead ? unit : unit - split_units, 0, k_tiles, 0, 1};
    const int v = unit - lead;
    if (!stream) {
        const int s = v / split_tiles;
        return {whole_tiles + v % split_tiles, s * k_tiles / splits, (s + 1) * k_tiles / splits, s, splits};
    }
    const StreamPiece p = stream_piece(v, ctas, split_tiles, k_tiles);
    return {whole_tiles + p.tile, p.kb, p.ke, p.split, p.splits};
}

// The workspace half (of 2 per split tile) that the upper (h = 0) or lower (h = 1) 64 rows of a split
// unit's tile add into: split tiles numbered from 0 after the whole ones; a split pair's CTAs (cluster_m
// 2, `tile` the pair's) the two tile rows of it, 2 tile + rank.
RIGEL_STREAM_HD int split_half(int tile, int whole_tiles, int cluster_m, int rank, int h) {
    return 2 * (cluster_m * (tile - whole_tiles) + rank) + h;
}

// The most pieces any tile of such a tail has (the gathered fix-up's slabs per half).
inline int stream_max_pieces(int ctas, int tiles, int k_tiles) {
    int most = 1;
    for (int unit = 0; unit < 2 * ctas; ++unit) {
        const StreamPiece p = stream_piece(unit, ctas, tiles, k_tiles);
        if (p.kb < p.ke && p.splits > most) most = p.splits;
    }
    return most;
}

}  // namespace rigel::gemm
