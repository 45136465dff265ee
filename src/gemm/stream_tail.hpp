// The streamed tail's partition (the dispatcher's rule 3b; pingpong_gemm.cuh
// runs it): which k-tiles of which tail tile each unit of a CTA multiplies,
// and where that piece stands among its tile's pieces. Plain C++, compiled
// into the ping-pong kernel and into the host tests, which check on many
// shapes that the pieces cover every k-tile once and that every chain of the
// fix-up's waits ends at a piece that waits on none.
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
