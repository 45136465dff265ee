// The ping-pong GEMM: k32's producer and ring, but each consumer warpgroup
// owns a whole 128 x 128 output tile, and the two take turns, so that one
// warpgroup's epilogue runs while the other keeps the tensor cores busy.
//
// Why: in k32's cooperative schedule both consumers share one 128 x 256 tile
// and finish it together; while they run the epilogue (bias, GELU, the bf16
// stores) no wgmma is in flight. With K = 4096 that pause is a few percent of
// the tile; with a transformer's K = 768 (12 k-tiles) it is as long as the
// main loop itself. Here consumer w takes the even (w = 0) or odd (w = 1)
// tiles of its CTA's persistent sequence; the producer loads the tiles'
// k-tiles in that sequence into one ring, and consumer 0's epilogue of tile j
// overlaps consumer 1's main loop of tile j + 1. (CUTLASS calls this schedule
// "ping-pong".)
//
// The main loops take turns (named barriers 4 and 5, an ordered hand-off):
// a consumer waits for the ring's stages of its tile only after the other
// has waited for all of its own. Not for the tensor cores' sake, but for the
// mbarriers': a wait on parity p returns at once while the barrier is still in
// the phase before p - 1, so a consumer that raced ahead by more than a ring's
// length (its first stage is k_tiles uses away) would take an old phase for
// its own and read a stage the producer has not filled. After the hand-off its
// stages are at most one round ahead of what has been filled.
//
//   warpgroup 0 (producer, 40 registers): thread 0 loads the k-tiles of the
//       CTA's tiles in order: A 128 rows and B 128 rows per stage (32 KB).
//   warpgroups 1, 2 (consumers, 232 registers): consumer w multiplies tiles
//       w, w + 2, ... of the CTA with two m64n128 wgmma per k-step (rows 0-63
//       and 64-127 of the tile: 128 accumulator registers), then hands them to
//       the epilogue policy Epi in two 64-row halves. Its place in the ring
//       jumps over the other consumer's k-tiles (PipelineState::advance(n)).
//       Each stage is released by the 4 warps of the consumer that used it.
//
// Operand majors, descriptors and TMA boxes are k32's (warp_specialized.cuh):
// rows 64-127 of an A tile start 8 KB in for either major. The library runs
// it for 16-bit types only: its fp8 path promotes, and stays on the
// cooperative kernel (the promotion's two accumulator sets of a 128 x 128
// tile would not fit beside each other here). fp8 accumulated in the tensor
// core alone (k33's way, K-major operands, k-tiles of 128) runs on it as the
// ladder's rung k39_wgmma_pingpong.
//
// TileM = 64 (the library's "fixed_m64"): a consumer's tile is 64 x 128, one
// m64n128 accumulator (64 registers) and one wgmma per k-step, A's stage 8 KB.
// For products of few tiles: 512^3 has 16 tiles of 128 x 128, so 16 of the
// H200's 132 SMs worked on it, each through all of K; in 64-row tiles 32 do,
// each for half as long. Single CTAs, not split. 512^3 at 0.88x cuBLAS (0.74x
// on 128 x 128 tiles), 1024^3 at 0.92x (0.75x), f1b72cf's visit; 64 x 64
// tiles ran 512^3 no faster (d31041b, dispatch.cpp's rule 7).
//
// TileN = 192 (the library's "fixed_n192"): a consumer's tile is 128 x 192,
// two m64n192 accumulators (192 registers a thread), B's stage 24 KB (192
// rows of 128 bytes K-major, three 64-column boxes MN-major). Why: at
// 4096 x 11008 x 4096 and 4096 x 12288 x 4096 cuBLASLt's fastest kernels
// are ping-pong ones with N-tiles of 144-192, which read 30 % fewer bytes from
// L2 than the 128 x 128 tiles and run the SMs at a 1-2 % higher clock under
// the power cap with as many cycles (docs/gemm.md). A 128 x 192 tile asks L2
// for 40 KB a k-tile for 1.5 times the work of 32 KB: 17 % less a flop. The
// ring keeps 4 stages of 40 KB beside the two 24 KB staging boxes.
//
// TileN = 168 (the library's "fixed_n168"): the same with two m64n168
// accumulators (168 registers a thread). Why: 11008 columns (the 7B MLP's)
// are 65.5 tiles of 168, so 4096 x 11008 makes 2,112 tiles, 16 full waves on
// 132 SMs, where 192 leaves the last column a third full (92.7 % of 15 waves
// used); cuBLASLt's fastest kernels there cut N the same way. A K-major B
// tile is one box of 168 rows (21 KB, still whole 1024-byte swizzle atoms);
// an MN-major one loads three 64-column boxes (24 KB, the last 24 columns
// the next tile's, which the wgmma does not read), so only the K-major
// layouts ask less of L2 per flop than 128 x 128 tiles.
//
// TileN = 176 (the library's "fixed_n176", the dispatcher's rule 9): two
// m64n176 accumulators (176 registers a thread), B's K-major stage one box of
// 176 rows (22 KB), D's last 48 columns of a tile through the unswizzled tail
// box. Why: 12288 columns (the 7B QKV projection's) are 69.8 tiles of 176, so
// 4096 x 12288 makes 2,240 tiles, 16.97 waves on 132 SMs, where 128 x 128
// tiles make 23.3 and need the tail split; cuBLASLt's fastest kernel for that
// product runs 176-wide tiles. fwd_qkv: 0.994x cuBLASLt against 0.979x
// (docs/gemm.md, "128 x 176 tiles").
//
// ClusterM = 2 (the library's "pingpong_cluster"): k35's pairing on top of
// the ping-pong. Two CTAs of a 2 x 1 cluster compute vertically adjacent
// tiles (tile rows 2p and 2p + 1, one tile column) in the same sequence, so
// they need the same B tile at every k-step: each CTA's producer loads its
// own A tile and half of B (64 rows of N, rank r the r-th half) multicast to
// both. L2 then delivers 16 + 8 KB per CTA and stage instead of 16 + 16: a
// 128 x 128 tile's bf16 main loop asks 64 bytes per clock of each SM at the
// tensor cores' rate, and cuBLASLt ran every GPT-2 product on clusters
// (c387d6a's bench names its algorithms). A stage is refilled only when the
// consumer that used it has released it in BOTH CTAs (8 warp arrivals, each
// warp arriving on its own and its peer's barrier), so the pair moves in
// lockstep; a tile row past M or a B half past N loads nothing and both CTAs
// leave its bytes out of expect_tx (cluster_gemm.cuh's rules). With SplitK
// (the library's "fixed_split_pair", rule 2a's units on pairs): every tile
// split, the pair's unit a (split, pair of tiles), each CTA loading the
// unit's k-tiles of its A and half of B. Why: GPT-2's bwd_attn_proj_dw ran
// each CTA's 86 k-tiles 36 % slower on 108 CTAs than on 36 at the same clock
// (docs/gemm.md), where cuBLASLt's kernel on 108 CTAs in multicast clusters
// did not slow down.
//
// SplitK (the library's "pingpong_splitk"): the sequence is of units, not
// tiles: unit u is split s = u / T of tile u % T (T tiles; splits = Epi's
// epi.splits), k-tiles [s kt / splits, (s + 1) kt / splits) of the tile's kt,
// so that a product of few tiles and a long K (a weight gradient) fills whole
// rounds of the 2 x SMs consumers; the epilogue policy adds each unit's partial
// tile into D (AtomicAddF32). Units of one tile lie T apart in the sequence,
// so they rarely add into the same addresses at once. The ring's order is the
// units' order, as for tiles; since units may differ in length by a k-tile,
// each consumer skips the other's next unit by that unit's own count.
// The tail split (a policy whose params set split_tiles > 0): only the last
// split_tiles tiles are split, their units first in the sequence, the other
// tiles following whole (or, with fewer units than CTAs, the whole tiles first:
// the kernel's comment on lead says why). 144 tiles on 132 SMs: the last 12 tiles split 11
// ways are the 132 CTAs' first units (23 of 256 k-tiles each), the other 132
// tiles their second, so each SM multiplies 279 k-tiles where whole tiles
// gave 12 SMs 512 and the rest 256; the split units' fix-up runs under the
// other consumer's whole tile.
// The streamed tail (params' stream, with split_tiles): where the last wave
// holds more tiles than half the CTAs, no whole split gives each CTA one unit
// (4096^3: 1,024 tiles, the last 100 on 132 SMs). Stream-K's idea on that
// wave alone: the tail tiles' k-tiles, end to end, are cut into one run per
// CTA (48 or 49 of 64 at 4096^3), each the start of a tile (the CTA's first
// unit, empty where the run ends inside one tile) and the end of the one
// before (its second), so the busiest SM multiplies 7 x 64 + 49 k-tiles
// instead of 8 x 64. A tile's pieces add into its slab in run order
// (SplitFixup), the first, which starts the tile, published first. Verified
// on the H200 and slower there (a k-tile of a piece costs about a third more
// than one of a whole tile, waits or none: docs/gemm.md), so only the named
// kernels "fixed_split_stream" and "fixed_split_stream_gather" run it.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/sm90_cluster.cuh"
#include "cuda/hopper/warp_specialized.cuh"
#include "cuda/hopper/wgmma.cuh"
#include "gemm/epilogue_spread.hpp"
#include "gemm/narrow_tail.hpp"
#include "gemm/stream_tail.hpp"

namespace rigel::cuda::sm90 {

template <DType T, int Stages, Major MA = Major::k, Major MB = Major::k, int ClusterM = 1, bool SplitK = false,
          int TileM = 128, int TileN = 128, int TailN = 0>
struct PingPong {
    static constexpr DType kType = T;
    static constexpr int kStages = Stages;
    static constexpr Major kMajorA = MA;
    static constexpr Major kMajorB = MB;
    static constexpr int kTransA = MA == Major::mn ? 1 : 0;
    static constexpr int kTransB = MB == Major::mn ? 1 : 0;

    static constexpr int kBM = TileM;                 // one consumer's tile: two m64 halves, or one
    static constexpr int kHalves = TileM / kWgmmaM;
    static constexpr int kBN = TileN;                 // 168, 176, 192: "fixed_n168", "fixed_n176", "fixed_n192"
    static constexpr int kTailN = TailN;              // the narrow tail's tile width, 0 for none (below)
    static constexpr int kBK = kRowBytes / elem_bytes(T);
    static constexpr int kABytes = kBM * kRowBytes;
    // B's rows a stage loads: the tile's (K-major: one box of kBN rows), or whole 64-column boxes (MN-major:
    // a 168-column tile loads three, the last 24 columns the next tile's, which its wgmma does not read).
    static constexpr int kBLoadRows = MB == Major::k ? kBN : (kBN + 63) / 64 * 64;
    static constexpr int kBBytes = kBLoadRows * kRowBytes;
    static constexpr int kStageBytes = kABytes + kBBytes;
    static constexpr int kSmemBytes = Stages * kStageBytes + kSwizzleAtom;
    static constexpr int kThreads = 3 * kWarpgroup;
    static constexpr int kConsumerWarps = kWarpgroup / 32;  // one consumer releases a stage
    static constexpr int kClusterM = ClusterM;               // CTAs stacked along M sharing B
    static constexpr bool kSplitK = SplitK;                  // units of (split, tile) added into D
    static constexpr int kEmptyArrivals = kClusterM * kConsumerWarps;
    static constexpr int kBHalfRows = kBN / 2;               // rows of B a CTA of a pair loads and multicasts
    static constexpr int kBHalfBytes = kBHalfRows * kRowBytes;
    static constexpr int kHalfAcc = kBN / 2;                // fp32 accumulators per thread and m64 half
    static constexpr int kGroupM = 8;  // tile rows of a group in the tile order, unless the launch says otherwise
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = 232;

    // fp8 (k39, the ladder's rung): accumulated in the tensor core, K-major operands only (fp8 wgmma's rule).
    static_assert(elem_bytes(T) == 2 || (MA == Major::k && MB == Major::k && TileN == 128 && !SplitK),
                  "the ping-pong kernel is for f16/bf16, and fp8 with K-major operands on 128 x 128 tiles");
    static_assert(ClusterM == 1 || ClusterM == 2, "a ping-pong cluster is one CTA or a pair");
    // A split pair ("fixed_split_pair"): every tile split, each pair's two CTAs the two tile rows of one
    // unit's pair of tiles (the same split), so that they load the same k-tiles of B.
    static_assert(TileM == 2 * kWgmmaM || (TileM == kWgmmaM && ClusterM == 1 && !SplitK),
                  "128-row tiles, or 64-row ones on single CTAs without split-K");
    static_assert(TileN == 128 ||
                      ((TileN == 168 || TileN == 176 || TileN == 192) && TileM == 128 && ClusterM == 1 && !SplitK),
                  "128-column tiles, or 168-, 176- and 192-column ones on single CTAs of 128-row tiles without split-K");
    // The narrow tail loads a whole kBN-row (or -column) B box at the narrow tile's first column and
    // multiplies its first kTailN: the same stage, the same descriptors, a narrower wgmma.
    static_assert(TailN == 0 || (TailN % 8 == 0 && TailN < TileN && TileN == 128 && TileM == 128 && ClusterM == 1 &&
                                 !SplitK && elem_bytes(T) == 2),
                  "a narrow tail: a multiple of 8 narrower than 128 x 128 tiles of a 16-bit type, single CTAs, no split");
    static_assert(ClusterM == 1 || kBHalfRows == 64,
                  "an MN-major B half is one 64-column box, as a K-major one is one 64-row box");
    static_assert(kSmemBytes <= 227 * 1024, "the per-block shared-memory limit of sm_90");
    static_assert(kWarpgroup * kProducerRegs + 2 * kWarpgroup * kConsumerRegs <= 65536, "register file");
};

// The moments the probe "pingpong_timeline" reads the SM's clock at, where the epilogue policy asks for
// them (Epi::kTimeline, src/cuda/gemm/timeline_epilogue.cuh): for each tile of a consumer, its turn (the
// other consumer's main loop has issued its last k-tile), its first stage full, its last k-tile issued,
// its accumulators drained (the last wgmma done) and its tile stored, then the cycles its main loop spent
// waiting for stages after the first and how many of its k-tiles did; the consumer's end after the
// epilogue's drain. Every other policy compiles none of it.
enum class TimelineEvent : int { turn, data, issued, drained, stored, starved_cycles, starved_ktiles };

template <class G, class Epi>
inline constexpr int pingpong_smem_bytes = G::kSmemBytes + 2 * Epi::kStagingBytes;

// An epilogue policy that loads boxes (C's or aux's) for a tile when its consumer takes it
// (FixedEpilogue with LoadsC: Epi::begin_tile, and a phase a tile to wait on in its store).
template <class Epi>
inline constexpr bool prefetches_loads = [] {
    if constexpr (requires { Epi::kPrefetchesLoads; }) return Epi::kPrefetchesLoads;
    else return false;
}();

// The first N / 2 of a half's accumulators, as the array an m64nN wgmma and an N-wide store take (the
// narrow tail's tiles use the leading part of the kBN-wide arrays).
template <int N, int Size>
__device__ __forceinline__ auto leading(float (&acc)[Size]) -> float (&)[N / 2] {
    static_assert(N / 2 <= Size, "a wider tile than the accumulators hold");
    return *reinterpret_cast<float(*)[N / 2]>(&acc[0]);
}

// A tile's two halves (or its one) handed to the epilogue policy as N-wide tiles: each half this
// unit stores, with spread_ns between stores where the policy spreads them (Epi::kSpreadNs).
// loads_parity: the phase of the boxes begin_tile loaded (prefetches_loads).
template <class G, class Epi, int N, int Top, int Bottom>
__device__ __forceinline__ void store_halves(const typename Epi::Params& epi, float (&top)[Top], float (&bottom)[Bottom],
                                             bool store_top, bool store_bottom, int m, int n, int row0, int col0,
                                             float* staging, [[maybe_unused]] int spread_ns,
                                             [[maybe_unused]] std::uint32_t loads_parity = 0) {
    if constexpr (prefetches_loads<Epi>) {
        static_assert(!G::kSplitK && G::kHalves == 2, "boxes loaded for a whole tile's two halves");
        if (store_top) Epi::template store<N>(epi, leading<N>(top), m, n, row0, col0, staging, spread_ns, loads_parity);
        if (store_bottom)
            Epi::template store<N>(epi, leading<N>(bottom), m, n, row0 + kWgmmaM, col0, staging, spread_ns,
                                   loads_parity);
    } else if constexpr (!G::kSplitK && requires { Epi::kSpreadNs; }) {
        if (store_top) Epi::template store<N>(epi, leading<N>(top), m, n, row0, col0, staging, spread_ns);
        if constexpr (G::kHalves == 2)
            if (store_bottom)
                Epi::template store<N>(epi, leading<N>(bottom), m, n, row0 + kWgmmaM, col0, staging, spread_ns);
    } else {
        if (store_top) Epi::template store<N>(epi, leading<N>(top), m, n, row0, col0, staging);
        if constexpr (G::kHalves == 2)
            if (store_bottom) Epi::template store<N>(epi, leading<N>(bottom), m, n, row0 + kWgmmaM, col0, staging);
    }
}

template <class G, class Epi>
__global__ void __launch_bounds__(G::kThreads, 1)
    pingpong_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                    const __grid_constant__ typename Epi::Params epi, int m, int n, int k, int tiles_m,
                    int tiles_n, int group_m) {
#if RIGEL_SM90A_DEVICE
    constexpr int kStages = G::kStages;
    extern __shared__ unsigned char smem_raw[];
    __shared__ std::uint64_t full[kStages];
    __shared__ std::uint64_t empty[kStages];
    unsigned char* const smem = align_to_atom(smem_raw);
    auto a_tile = [&](int s) { return smem + s * G::kStageBytes; };
    auto b_tile = [&](int s) { return smem + s * G::kStageBytes + G::kABytes; };

    constexpr bool kPair = G::kClusterM > 1;
    // A pair walks tile-row pairs: sequence index `tile` is the pair's tile
    // (pm, tn), and this CTA's is row 2 pm + rank of it.
    const std::uint32_t rank = kPair ? cluster_ctarank() : 0u;
    const int tiles_pm = ceil_div(tiles_m, G::kClusterM);
    // The narrow tail (G::kTailN > 0 and epi.tail_cols columns, gemm/narrow_tail.hpp): tiles_n columns of
    // kBN-wide tiles first in the tile order, then tail_cols columns of kTailN-wide ones.
    int tail_cols = 0;
    if constexpr (G::kTailN > 0) tail_cols = epi.tail_cols;
    const int wide_tiles = tiles_pm * tiles_n;
    const int num_tiles = wide_tiles + tiles_m * tail_cols;
    [[maybe_unused]] const auto is_narrow = [&](int tile) { return G::kTailN > 0 && tile >= wide_tiles; };
    // Warp-uniform by a shuffle from lane 0: ptxas then knows it (and the ring's stage and phase, the
    // tile loop and the operand descriptors derived from it) is the same in every lane, and keeps them
    // in uniform registers; from threadIdx.x alone it computed them per thread and moved each wgmma's
    // descriptors into uniform registers one R2UR at a time (103 SASS instructions a k-tile).
    const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / kWarpgroup, 0);
    const int first = kPair ? static_cast<int>(cluster_id_x()) : static_cast<int>(blockIdx.x);
    const int stride = kPair ? static_cast<int>(cluster_count_x()) : static_cast<int>(gridDim.x);
    // SplitK: units of (split, tile) and each unit's k-tiles; else a unit is a tile and all of K.
    // Split unit v (0 .. split_units - 1) is split v / split_tiles of tile whole_tiles + v % split_tiles;
    // the first whole_tiles tiles run whole, all of K. Where the split units give every CTA one (a
    // split of every tile, the MLP dW's tail of 132 units), they come first and the whole tiles after
    // them, so that a tile's later splits wait for their turn under the other consumer's whole tile.
    // Where they are fewer than the CTAs (lead > 0: the 7B fwd_qkv's 36 tail tiles split 3 ways on 132
    // CTAs), the whole tiles come first: had 108 CTAs started with a split unit and 24 with a whole
    // tile, the waves of whole tiles after them would run out of step, and the SMs of a wave would
    // stop loading the same k-tiles at about the same time (docs/gemm.md: at 4096 x 12288 x 4096 L2
    // then delivered 23 % more sectors and the kernel took 9.7 % more cycles than the unsplit one).
    // The streamed tail (a policy whose params set stream): the split units are two pieces a CTA of
    // its run of the tail's k-tiles, unit v < 2 stride a piece of CTA v % stride's run (Span below).
    int splits = 1, split_tiles = num_tiles;
    bool stream = false;
    if constexpr (G::kSplitK) {
        splits = epi.splits;
        if constexpr (requires { epi.split_tiles; })
            if (epi.split_tiles > 0) split_tiles = epi.split_tiles;
        if constexpr (requires { epi.stream; }) stream = epi.stream;
    }
    const int whole_tiles = num_tiles - split_tiles;
    const int split_units = stream ? 2 * stride : split_tiles * splits;
    const int num_units = G::kSplitK ? split_units + whole_tiles : num_tiles;
    const int lead = ::rigel::gemm::split_units_lead(whole_tiles, split_units, stride, stream);
    [[maybe_unused]] const auto is_split = [&](int unit) { return unit >= lead && unit - lead < split_units; };
    const int k_tiles = ceil_div(k, G::kBK);
    // A unit's tile (in the tile order), its k-tiles [kb, ke), and its place among the tile's units
    // (split of splits; the fix-up adds them in that order): unit_span (src/gemm/stream_tail.hpp,
    // host-tested). The streamed tail: stream_piece cuts the tail's k-tiles into one run per CTA, each
    // CTA's first unit the start of a tile (split 0, which waits on no other), its second the end of the
    // tile before.
    using Span = ::rigel::gemm::UnitSpan;
    [[maybe_unused]] const auto span = [&](int unit) -> Span {
        return ::rigel::gemm::unit_span(unit, lead, split_units, whole_tiles, split_tiles, splits, k_tiles, stream,
                                        stride);
    };
    // A tile's place in the grouped tile order (a pair's: its tile row pair and column).
    // A narrow tile's (gemm/narrow_tail.hpp): tn is then its first column of D, not a tile column.
    const auto coords = [&](int tile, int& tm, int& tn) {
        if (is_narrow(tile)) {
            const ::rigel::gemm::NarrowTile t = ::rigel::gemm::narrow_tile(tile - wide_tiles, tiles_m, tail_cols,
                                                                           group_m, tiles_n * G::kBN, G::kTailN);
            tm = t.tm;
            tn = t.col0;
            return;
        }
        int pm = 0;
        tile_coords<Schedule::persistent_grouped>(tile, tiles_pm, tiles_n, group_m / G::kClusterM, pm, tn);
        tm = G::kClusterM * pm + static_cast<int>(rank);
    };
    // A tile's first column of D (and row of a K-major B, column of an MN-major one).
    const auto first_col = [&](int tile, int tn) { return is_narrow(tile) ? tn : tn * G::kBN; };

    // The tensor maps' descriptors fetched while the barriers are set up: the first TMA load (and the
    // epilogue's first TMA store) would otherwise wait for that fetch. A product of one tile a CTA
    // (512^3: 32 CTAs, 8 k-tiles each) has nothing to hide it under.
    constexpr bool kTimeline = requires { Epi::kTimeline; };
    if constexpr (kTimeline) Epi::mark_start(epi);
    if (threadIdx.x == kWarpgroup) {
        prefetch_tensor_map(&map_a);
        prefetch_tensor_map(&map_b);
        if constexpr (requires { epi.map_b_tail; }) prefetch_tensor_map(&epi.map_b_tail);
        if constexpr (requires { Epi::prefetch(epi); }) Epi::prefetch(epi);
    }
    init_ring(full, empty, G::kEmptyArrivals);  // the 4 warps of the consumer that used the stage (of both CTAs)
    if constexpr (requires { Epi::init(); }) Epi::init();  // the epilogue's own barriers, where it has any
    if constexpr (kPair) {
        cluster_sync();  // both CTAs' barriers exist before either multicasts or arrives remotely
    } else {
        __syncthreads();
    }

    if (warpgroup == 0) {
        setmaxnreg_dec<G::kProducerRegs>();
        if (threadIdx.x == 0) {
            if constexpr (kTimeline) Epi::mark_producer(epi);
            auto ring = PipelineState<kStages>::producer_start();
            for (int unit = first; unit < num_units; unit += stride) {
                int tm = 0, tn = 0;
                if constexpr (G::kSplitK && !kPair) {
                    const Span sp = span(unit);
                    coords(sp.tile, tm, tn);
                    load_tile<G>(ring, full, empty, smem, &map_a, &map_b, tm, tn, tn * G::kBN, sp.kb, sp.ke * G::kBK);
                } else if constexpr (!kPair) {
                    coords(unit, tm, tn);
                    // A narrow tile through the policy's B map of kTailN-row boxes, where it has one
                    // (k40's, the library's fixed_tail with a K-major B): the stage then holds only the
                    // B rows its wgmma reads.
                    if constexpr (requires { epi.map_b_tail; }) {
                        static_assert(G::kTailN > 0 && G::kMajorB == Major::k, "a narrow B box is a K-major B's");
                        if (is_narrow(unit)) {
                            load_tile<G>(ring, full, empty, smem, &map_a, &epi.map_b_tail, tm, tn, tn, 0, k, nullptr,
                                         nullptr, G::kABytes + G::kTailN * kRowBytes);
                            continue;
                        }
                    }
                    load_tile<G>(ring, full, empty, smem, &map_a, &map_b, tm, tn, first_col(unit, tn), 0, k);
                } else {
                    // A split pair: the unit's k-tiles [kb, ke); else all of K.
                    int kb = 0, k_end = k;
                    if constexpr (G::kSplitK) {
                        const Span sp = span(unit);
                        coords(sp.tile, tm, tn);
                        kb = sp.kb;
                        k_end = sp.ke * G::kBK;
                    } else {
                        coords(unit, tm, tn);
                    }
                    const bool a_valid = tm < tiles_m;
                    const bool b1_valid = tn * G::kBN + G::kBHalfRows < n;  // both CTAs agree on both halves
                    const bool mine_valid = rank == 0 || b1_valid;
                    const std::uint32_t bytes = (a_valid ? G::kABytes : 0) + G::kBHalfBytes * (b1_valid ? 2 : 1);
                    const int b_row = tn * G::kBN + static_cast<int>(rank) * G::kBHalfRows;
                    for (int kt = kb; kt * G::kBK < k_end; ++kt) {  // k itself: load_tile's reason
                        const int stage = ring.stage();
                        mbar_wait(&empty[stage], ring.phase());
                        mbar_arrive_expect_tx(&full[stage], bytes);
                        if (a_valid)
                            tma_load_operand<G::kMajorA, G::kBM, G::kBK>(a_tile(stage), &map_a, &full[stage], kt,
                                                                        tm * G::kBM);
                        if (mine_valid) {
                            unsigned char* const dst = b_tile(stage) + rank * G::kBHalfBytes;
                            if constexpr (G::kMajorB == Major::k)
                                tma_load_2d_multicast(dst, &map_b, &full[stage], kt * G::kBK, b_row, 0x3);
                            else  // stored K x N: the half is one box of 64 K-rows x 64 columns
                                tma_load_2d_multicast(dst, &map_b, &full[stage], b_row, kt * G::kBK, 0x3);
                        }
                        ring.advance();
                    }
                }
            }
        }
    } else {
        setmaxnreg_inc<G::kConsumerRegs>();
        const int consumer = warpgroup - 1;
        const bool arriving_lane = (threadIdx.x % 32) == 0;
        float* const staging = reinterpret_cast<float*>(smem + kStages * G::kStageBytes + consumer * Epi::kStagingBytes);
        static_assert(pingpong_smem_bytes<G, Epi> <= 227 * 1024, "the per-block shared-memory limit of sm_90");
        static_assert(!prefetches_loads<Epi> || (G::kTailN == 0 && !G::kSplitK),
                      "boxes loaded a whole tile ahead: for the kernel without a narrow tail or splits");
        constexpr std::uint32_t kLowerHalf = kWgmmaM * kRowBytes;  // rows 64-127 of the A tile: 8 KB in

        // The hand-off: consumer c waits on barrier kTurn + c before its main
        // loop (consumer 0 not before its first) and, when the other has a
        // next tile, passes the turn on barrier kTurn + 1 - c after it; both
        // sides of each barrier thus meet equally often.
        constexpr int kTurn = 4;  // 0: __syncthreads; 2, 3: the epilogue's (FusedEpilogue)
        float top[G::kHalfAcc], bottom[G::kHalves == 2 ? G::kHalfAcc : 1];  // bottom: rows 64-127, if the tile has them
        const auto fence_accumulators = [&] {
            fence_registers(top);
            if constexpr (G::kHalves == 2) fence_registers(bottom);
        };
        // A stage goes back to the producers of every CTA of the cluster.
        const std::uint32_t empty_rank0 = kPair ? map_to_rank(&empty[0], 0) : 0u;
        const std::uint32_t empty_rank1 = kPair ? map_to_rank(&empty[0], 1) : 0u;
        const auto release = [&](int s) {
            if (!arriving_lane) return;
            if constexpr (kPair) {
                mbar_arrive_cluster(empty_rank0 + 8u * static_cast<std::uint32_t>(s));
                mbar_arrive_cluster(empty_rank1 + 8u * static_cast<std::uint32_t>(s));
            } else {
                mbar_arrive(&empty[s]);
            }
        };
        // The timeline's marks (kTimeline only): `traced` counts this consumer's tiles.
        [[maybe_unused]] int traced = 0;
        [[maybe_unused]] std::uint64_t starved_cycles = 0, starved_ktiles = 0;
        const auto mark = [&]([[maybe_unused]] TimelineEvent event, [[maybe_unused]] std::uint64_t value = 0) {
            if constexpr (kTimeline) Epi::mark(epi, consumer, traced, static_cast<int>(event), value);
        };
        auto ring = PipelineState<kStages>::consumer_start();
        // A unit's k-tile count (SplitK: the ring jumps over the other consumer's units by theirs).
        [[maybe_unused]] const auto k_count = [&](int unit) {
            const Span sp = span(unit);
            return sp.ke - sp.kb;
        };
        if constexpr (G::kSplitK) {
            if (consumer == 1 && first < num_units) ring.advance(k_count(first));
        } else {
            ring.advance(consumer * ceil_div(k, G::kBK));  // consumer 1 starts after consumer 0's first tile
        }
        for (int tile = first + consumer * stride; tile < num_units; tile += 2 * stride) {
            // The epilogue's loads for this tile, issued before the turn so that they arrive under the
            // other consumer's main loop and this one's (prefetches_loads).
            if constexpr (prefetches_loads<Epi>) {
                int pm = 0, pn = 0;
                coords(tile, pm, pn);
                Epi::begin_tile(epi, m, n, pm * G::kBM, first_col(tile, pn), staging);
            }
            if (consumer == 1 || tile != first) named_barrier_sync<2 * kWarpgroup>(kTurn + consumer);
            mark(TimelineEvent::turn);
            int tm = 0, tn = 0;
            int prev_stage = 0;
            // The loop tests the parameter k (a constant-bank operand), not a
            // k-tile count: the count would live across the epilogue, where
            // ptxas spills it, and be reloaded from local memory ahead of the
            // k-tile's last wgmma in every iteration.
            // SplitK: the unit's k-tiles [kb, ke); else from 0 while kt * kBK < k.
            int kb = 0, ke = 0;
            if constexpr (G::kSplitK) {
                const Span sp = span(tile);
                coords(sp.tile, tm, tn);
                kb = sp.kb;
                ke = sp.ke;
            } else {
                coords(tile, tm, tn);
            }
            const auto more = [&](int kt) {
                if constexpr (G::kSplitK) return kt < ke;
                else return kt * G::kBK < k;
            };
            // The main loop, for the tile's wgmma width N: kBN, or a narrow tile's kTailN on the first
            // kTailN / 2 accumulators of each half. Returns the k-tile it stopped at.
            const auto main_loop = [&]<int N>() {
                int kt = kb;
                for (; more(kt); ++kt) {
                    const int stage = ring.stage();
                    if constexpr (kTimeline) {
                        if (kt > kb && !mbar_ready(&full[stage], ring.phase())) {
                            const std::uint64_t t0 = sm_clock();
                            mbar_wait(&full[stage], ring.phase());
                            starved_cycles += sm_clock() - t0;
                            ++starved_ktiles;
                        } else {
                            mbar_wait(&full[stage], ring.phase());
                        }
                        if (kt == kb) mark(TimelineEvent::data);
                    } else {
                        mbar_wait(&full[stage], ring.phase());
                    }
                    const std::uint64_t da = operand_desc<G::kMajorA, G::kBK>(a_tile(stage));
                    const std::uint64_t da_low = operand_desc<G::kMajorA, G::kBK>(a_tile(stage) + kLowerHalf);
                    const std::uint64_t db = operand_desc<G::kMajorB, G::kBK>(b_tile(stage));
                    fence_accumulators();
                    wgmma_fence();
#pragma unroll
                    for (int j = 0; j < kKStepsPerTile; ++j) {
                        const std::uint32_t accumulate = (kt > kb || j > 0) ? 1u : 0u;  // 0: acc = A*B
                        const std::uint64_t b_step = operand_k_step<G::kMajorB>(db, j);
                        Wgmma<G::kType, N>::template mma<G::kTransA, G::kTransB>(
                            leading<N>(top), operand_k_step<G::kMajorA>(da, j), b_step, accumulate);
                        if constexpr (G::kHalves == 2)
                            Wgmma<G::kType, N>::template mma<G::kTransA, G::kTransB>(
                                leading<N>(bottom), operand_k_step<G::kMajorA>(da_low, j), b_step, accumulate);
                    }
                    wgmma_commit();
                    // One k-tile's group in flight beside the one being issued. Two (wait_group 2, the stage
                    // of the one before last released) measured slower on nearly every product (1b9ce84:
                    // GPT-2's fwd_lm_head 0.876x cuBLASLt against 0.921x, bwd_attn_proj_dw 0.833x against
                    // 0.883x, NT 4096^3 0.986x against 1.00x; docs/gemm.md).
                    wgmma_wait<1>();  // the previous k-tile's group is done: its stage goes back
                    fence_accumulators();
                    if (kt > kb) release(prev_stage);
                    prev_stage = stage;
                    ring.advance();
                }
                return kt;
            };
            [[maybe_unused]] const bool narrow = is_narrow(tile);
            int kt = kb;
            if constexpr (G::kTailN > 0) {
                kt = narrow ? main_loop.template operator()<G::kTailN>() : main_loop.template operator()<G::kBN>();
            } else {
                kt = main_loop.template operator()<G::kBN>();
            }
            mark(TimelineEvent::issued);
            if (tile + stride < num_units) named_barrier_arrive<2 * kWarpgroup>(kTurn + 1 - consumer);
            wgmma_wait<0>();
            fence_accumulators();
            mark(TimelineEvent::drained);
            if (!G::kSplitK || kt > kb) release(prev_stage);  // an empty piece (streamed tail) used no stage
            if constexpr (G::kSplitK) {
                if (tile + stride < num_units) ring.advance(k_count(tile + stride));  // the other's next unit
                if (kt == kb) continue;  // an empty piece: nothing to add or store
            } else {
                ring.advance(kt);  // the other consumer's next tile (kt = its k-tile count)
            }
            const int row0 = tm * G::kBM, col0 = first_col(tile, tn);
            // A split-K policy whose last unit of a half stores it (SplitFixup): both partials leave the
            // registers first, then each half this unit came last to is read back into its accumulators
            // (the sum of all splits) and stored as a whole tile's half is. A whole tile (the tail
            // split's) is stored at once. One inlined store per half, as in the unsplit kernel: with a
            // second one for the sums, ptxas kept the ring's stage and phase in local memory inside the
            // k-loop.
            bool store_top = true, store_bottom = G::kHalves == 2;
            if constexpr (requires { Epi::kUnitStore; }) {
                if (is_split(tile)) {
                    // The split tiles' halves (split_half): the policy's workspace holds slabs for them
                    // alone (a tail split's few, not all tiles').
                    const Span sp = span(tile);
                    const int half =
                        ::rigel::gemm::split_half(sp.tile, whole_tiles, G::kClusterM, static_cast<int>(rank), 0);
                    store_top = Epi::template publish<G::kBN>(epi, top, m, row0, half, sp.split, sp.splits);
                    store_bottom =
                        Epi::template publish<G::kBN>(epi, bottom, m, row0 + kWgmmaM, half + 1, sp.split, sp.splits);
                    if (store_top) Epi::template reload<G::kBN>(epi, top, half, sp.splits);
                    if (store_bottom) Epi::template reload<G::kBN>(epi, bottom, half + 1, sp.splits);
                }
            }
            // A policy that spreads its stores (Epi::kSpreadNs) does so where the other consumer's main loop
            // runs beside this epilogue and is long enough to cover the sleeps (gemm/epilogue_spread.hpp). The
            // timeline probe at 4096^3 (5184c77 and after, against six calls before): drain-to-drain 33.4 k
            // cycles a tile against 33.5-33.6 k, 34.2 k with bias + GELU against 34.3-34.5 k, the busiest CTA
            // 0.4-1.0 % fewer cycles (docs/gemm.md, "Spreading the epilogue's stores").
            int spread_ns = 0;
            if constexpr (!G::kSplitK && requires { Epi::kSpreadNs; })
                if (::rigel::gemm::spread_epilogue(tile, stride, num_units, ceil_div(k, G::kBK))) spread_ns = Epi::kSpreadNs;
            // A narrow tile stores its first kTailN columns.
            if constexpr (G::kTailN > 0) {
                if (narrow)
                    store_halves<G, Epi, G::kTailN>(epi, top, bottom, store_top, store_bottom, m, n, row0, col0, staging,
                                                    spread_ns);
                else
                    store_halves<G, Epi, G::kBN>(epi, top, bottom, store_top, store_bottom, m, n, row0, col0, staging,
                                                 spread_ns);
            } else {
                // The phase of this consumer's boxes: its tiles come 2 stride apart from first + consumer stride.
                const auto loads_parity = static_cast<std::uint32_t>((tile - first) / (2 * stride)) & 1u;
                store_halves<G, Epi, G::kBN>(epi, top, bottom, store_top, store_bottom, m, n, row0, col0, staging,
                                             spread_ns, loads_parity);
            }
            mark(TimelineEvent::stored);
            mark(TimelineEvent::starved_cycles, starved_cycles);
            mark(TimelineEvent::starved_ktiles, starved_ktiles);
            starved_cycles = starved_ktiles = 0;
            ++traced;
        }
        Epi::drain(epi);
        if constexpr (kTimeline) Epi::mark_end(epi, consumer, traced);
    }
    if constexpr (kPair) cluster_sync();  // no CTA leaves while its peer may multicast into it or arrive on it
#else
    (void)map_a, (void)map_b, (void)epi, (void)m, (void)n, (void)k, (void)tiles_m, (void)tiles_n, (void)group_m;
    trap_without_sm90a("pingpong_kernel");
#endif
}

// A pair kernel's grid: one cluster a unit of `units` (tile-row pairs, or with a split, pairs and
// splits), up to as many clusters as fit on the GPU at once (the GPCs' SM counts decide); in CTAs.
template <class G, class Epi>
int pingpong_cluster_ctas(std::int64_t units) {
    static const int fit = max_active_clusters(pingpong_kernel<G, Epi>, G::kThreads, pingpong_smem_bytes<G, Epi>,
                                               G::kClusterM);
    return G::kClusterM * static_cast<int>(std::min<std::int64_t>(units, fit));
}

}  // namespace rigel::cuda::sm90
