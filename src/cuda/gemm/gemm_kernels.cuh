// The library's kernel registry: every GEMM kernel a plan can launch, as table
// rows keyed by (operand type, layout, tile width, split-K, ping-pong). Each
// kernel is warp_specialized_kernel (src/cuda/hopper/warp_specialized.cuh),
// the ladder's k32 pipeline, or its ping-pong variant (pingpong_gemm.cuh),
// instantiated with the operands' majors and an epilogue policy:
//   fused rows: persistent grouped schedule, FusedEpilogue (fused_epilogue.cuh)
//     applied as the tile leaves; cooperative 128 x 256 tiles (4 stages) or
//     128 x 128 (6 stages), or ping-pong 128 x 128 (6 stages: each consumer
//     its own tile, one's epilogue under the other's main loop), alone or as
//     a 2 x 1 cluster sharing B through TMA multicast (pingpong_cluster);
//   fixed-epilogue rows (bf16 only): the ping-pong kernel once more for each
//     of gemm::kFixedEpilogues with a bf16 D, FixedEpilogue compiled in, with
//     64 x 128 tiles for each of gemm::kShortTileEpilogues, and the
//     cooperative 128 x 256 kernel for each of gemm::kWideEpilogues;
//   narrow-tail rows (bf16 only, "fixed_tail", Choice::tail_n): the fixed ping-pong kernel whose last
//     tile columns are re-cut 104 wide, for each of gemm::kTailEpilogues;
//   128 x 192, 128 x 168 and 128 x 176 rows (bf16 only, "fixed_n192", "fixed_n168", "fixed_n176"; the
//     dispatcher's rules 8 and 9): the fixed ping-pong kernel with wider tiles, for each of
//     gemm::kN192Epilogues;
//   split rows: 128 x 128 tiles, Schedule::split_k, fp32 partial tiles stored
//     to the plan's workspace (StoreF32); epilogue_kernel then sums them and
//     applies the epilogue;
//   ping-pong split rows (fp32 D, no epilogue): the ping-pong kernel over
//     units of (split, tile), each added into D by reductions (AtomicAddF32);
//   split fixed rows (bf16 only): the same units for a bf16 D, each added
//     into a workspace slab, the last unit of a tile reading the sum back and
//     applying the fixed epilogue (SplitFixup).
// fp8 rows accumulate as k34 does (promoted into fp32 every 128 of K) and are
// K-major only.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "cuda/check.cuh"
#include "cuda/gemm/fused_epilogue.cuh"
#include "cuda/hopper/pingpong_gemm.cuh"
#include "cuda/hopper/warp_specialized.cuh"
#include "rigel/gemm.hpp"

namespace rigel::cuda::gemm_kernels {

// One launch, as the plan prepared it.
struct Launch {
    CUtensorMap map_a{}, map_b{};
    EpilogueParams epi;          // fused rows
    // Fixed-epilogue rows: D's and aux's maps (64 x 64 boxes) when the epilogue leaves by TMA stores.
    CUtensorMap map_d{}, map_aux{};
    CUtensorMap map_d_tail{};  // tiles whose width is no multiple of 64 (128 x 168): D's last box, unswizzled
    CUtensorMap map_b_tail{};  // narrow-tail rows with a K-major B: B in boxes of the narrow tiles' rows
    bool tma_store = false;
    bool tma_add = false;  // with tma_store, fp32 D (TmaStoreF32): D += the boxes (beta 1, C the same as D)
    CUtensorMap map_c{};  // with tma_store and beta != 0: C's boxes, loaded by TMA (Choice::tma_load_c)
    bool tma_load_c = false;
    int splits = 1;  // the ping-pong split-K's units per tile
    int split_tiles = 0;  // ping-pong split rows: tiles split (the last ones), the others whole; 0: all
    float* workspace = nullptr;  // split rows: splits stacked M x N fp32 slabs; split fixed rows: the halves' slabs
    unsigned* arrivals = nullptr;  // split fixed rows: each half's arrival counter
    bool gather = false;  // ordered split fixed rows: a slab per split, the last unit summing them (SplitFixup)
    bool stream_tail = false;  // split fixed rows with split_tiles: the streamed tail (SplitFixupParams::stream)
    int m = 0, n = 0, k = 0, tiles_m = 0, tiles_n = 0;
    int group_m = 0;  // ping-pong rows: tile rows of a group in the persistent tile order; 0: the kernel's
    int tail_cols = 0;  // narrow-tail rows: columns of narrow tiles after tiles_n of 128 (0: none)
    dim3 grid;
    cudaStream_t stream = nullptr;
};

struct KernelKey {
    Type type;
    gemm::Op a_op, b_op;
    int tile_n;
    bool split;
    bool pingpong;
    int cluster_m = 1;  // CTAs per cluster along M (2: B shared by TMA multicast)
    // A ping-pong kernel with `epilogue` and a bf16 D compiled in (FixedEpilogue); false: any of them.
    bool fixed_epilogue = false;
    Epilogue epilogue = Epilogue::none;
    bool loads_c = false;  // with fixed_epilogue: the kernel that also loads C (and dgelu_bgrad's aux) by TMA
    bool ordered = false;  // with split and fixed_epilogue: SplitFixup's ordered form (Choice::ordered_split)
    int tile_m = 128;      // 64: the ping-pong kernel's 64-row tiles (fixed_epilogue, kShortTileEpilogues)
    int tail_n = 0;        // the narrow tail's tile width compiled in (Choice::tail_n, kTailEpilogues); 0: none
    bool f32_tma = false;  // the ping-pong kernel with an fp32 D by TMA stores (Choice::f32_tma, TmaStoreF32)
    bool operator==(const KernelKey&) const = default;
};

using LaunchFn = void (*)(const Launch&);

struct KernelEntry {
    KernelKey key;
    LaunchFn launch;
    int k_tile;  // K elements per pipeline stage (64 for 16-bit types, 128 for fp8)
};

// One table per translation unit: the 16-bit ones generated from
// gemm_table.cu.in (type x layout, named by the layout's letters), fp8 in
// gemm_fp8.cu. kernel_tables() lists them all.
std::span<const KernelEntry> kernels_bf16_nn();
std::span<const KernelEntry> kernels_bf16_nt();
std::span<const KernelEntry> kernels_bf16_tn();
std::span<const KernelEntry> kernels_bf16_tt();
std::span<const KernelEntry> kernels_f16_nn();
std::span<const KernelEntry> kernels_f16_nt();
std::span<const KernelEntry> kernels_f16_tn();
std::span<const KernelEntry> kernels_f16_tt();
std::span<const KernelEntry> fp8_kernels();
using KernelTable = std::span<const KernelEntry> (*)();
inline constexpr std::array<KernelTable, 9> kernel_tables{
    kernels_bf16_nn, kernels_bf16_nt, kernels_bf16_tn, kernels_bf16_tt, kernels_f16_nn,
    kernels_f16_nt,  kernels_f16_tn,  kernels_f16_tt,  fp8_kernels};

// -- instantiation helpers for the table files ------------------------------------
using sm90::Accumulation;
using sm90::Major;
using sm90::Schedule;
using sm90::WarpSpecialized;

// a_op n: A stored M x K, K-major; t: stored K x M, M-major.
// b_op t: B stored N x K, K-major; n: stored K x N, N-major.
constexpr Major major_a(gemm::Op op) { return op == gemm::Op::n ? Major::k : Major::mn; }
constexpr Major major_b(gemm::Op op) { return op == gemm::Op::t ? Major::k : Major::mn; }

// The kernels' epilogue parameters from the plan's launch: the fused
// policies' EpilogueParams (and the fixed ones' TMA maps); the cooperative
// split's workspace (StoreF32); the ping-pong split-K's D, alpha and units per
// tile (AtomicAddF32: the plan has cleared D or checked that it holds C).
template <class Epi>
typename Epi::Params epilogue_params(const Launch& l) {
    typename Epi::Params params{};
    if constexpr (std::is_same_v<Epi, sm90::StoreF32>) {
        params.c = l.workspace;
    } else if constexpr (std::is_same_v<Epi, AtomicAddF32>) {
        params.d = static_cast<float*>(l.epi.d);
        params.ldd = l.epi.ldd;
        params.alpha = l.epi.alpha;
        params.splits = l.splits;
        params.pairs = l.epi.ldd % 2 == 0 && reinterpret_cast<std::uintptr_t>(l.epi.d) % 8 == 0;
        params.split_tiles = l.split_tiles;
        params.tma = l.tma_store;
        params.map_d = l.map_d;
    } else {
        static_cast<EpilogueParams&>(params) = l.epi;
        if constexpr (std::is_base_of_v<FixedEpilogueParams, typename Epi::Params>) {
            params.map_d = l.map_d;
            params.map_d_tail = l.map_d_tail;
            params.map_aux = l.map_aux;
            params.tma = l.tma_store;
            params.tma_add = l.tma_add;
            params.map_c = l.map_c;
            params.tma_c = l.tma_load_c;
            params.tail_cols = l.tail_cols;
            if constexpr (std::is_same_v<typename Epi::Params, FixedTailParams>) params.map_b_tail = l.map_b_tail;
        }
        if constexpr (std::is_same_v<typename Epi::Params, SplitFixupParams>) {
            params.partials = l.workspace;
            params.arrivals = l.arrivals;
            params.splits = l.splits;
            params.split_tiles = l.split_tiles;
            params.gather = l.gather;
            params.stream = l.stream_tail;
        }
    }
    return params;
}

template <class G, class Epi>
void launch_kernel(const Launch& l) {
    allow_dynamic_smem<sm90::warp_specialized_kernel<G, Epi>>(sm90::kernel_smem_bytes<G, Epi>);
    sm90::warp_specialized_kernel<G, Epi><<<l.grid, G::kThreads, sm90::kernel_smem_bytes<G, Epi>, l.stream>>>(
        l.map_a, l.map_b, epilogue_params<Epi>(l), l.m, l.n, l.k, l.tiles_m, l.tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

template <class G, class Epi = FusedEpilogue>
void launch_pingpong(const Launch& l) {
    allow_dynamic_smem<sm90::pingpong_kernel<G, Epi>>(sm90::pingpong_smem_bytes<G, Epi>);
    sm90::pingpong_kernel<G, Epi><<<l.grid, G::kThreads, sm90::pingpong_smem_bytes<G, Epi>, l.stream>>>(
        l.map_a, l.map_b, epilogue_params<Epi>(l), l.m, l.n, l.k, l.tiles_m, l.tiles_n,
        l.group_m > 0 ? l.group_m : G::kGroupM);
    RIGEL_CUDA_CHECK_LAUNCH();
}

// The ping-pong pair: 2 x 1 clusters, as many as fit at once (the GPCs' SM
// counts decide), each walking tile-row pairs (a split pair: units of a split
// and a pair of tiles, l.splits a tile); the plan's grid is ignored.
template <class G, class Epi = FusedEpilogue>
void launch_pingpong_cluster(const Launch& l) {
    constexpr int kSmem = sm90::pingpong_smem_bytes<G, Epi>;
    const auto kernel = sm90::pingpong_kernel<G, Epi>;
    const std::int64_t pair_units = static_cast<std::int64_t>((l.tiles_m + G::kClusterM - 1) / G::kClusterM) *
                                    l.tiles_n * (G::kSplitK ? l.splits : 1);
    const int ctas = sm90::pingpong_cluster_ctas<G, Epi>(pair_units);
    cudaLaunchAttribute attr{};
    const cudaLaunchConfig_t cfg = sm90::cluster_launch_config(static_cast<unsigned>(ctas), G::kThreads, kSmem,
                                                               l.stream, G::kClusterM, &attr);
    RIGEL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, l.map_a, l.map_b, epilogue_params<Epi>(l), l.m, l.n, l.k,
                                        l.tiles_m, l.tiles_n, l.group_m > 0 ? l.group_m : G::kGroupM));
    RIGEL_CUDA_CHECK_LAUNCH();
}

// The six rows of one 16-bit type and layout: wide fused, narrow fused,
// ping-pong fused (alone and in pairs), split, ping-pong split (reductions).
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr std::array<KernelEntry, 6> half_rows() {
    constexpr Major MA = major_a(OA), MB = major_b(OB);
    using Wide = WarpSpecialized<T, 256, 4, Schedule::persistent_grouped, Accumulation::tensor_core, MA, MB>;
    using Narrow = WarpSpecialized<T, 128, 6, Schedule::persistent_grouped, Accumulation::tensor_core, MA, MB>;
    using Split = WarpSpecialized<T, 128, 6, Schedule::split_k, Accumulation::tensor_core, MA, MB>;
    using Pong = sm90::PingPong<T, 6, MA, MB>;
    using PongPair = sm90::PingPong<T, 6, MA, MB, 2>;
    using PongSplit = sm90::PingPong<T, 6, MA, MB, 1, true>;
    return {KernelEntry{{Tg, OA, OB, 256, false, false}, launch_kernel<Wide, FusedEpilogue>, Wide::kBK},
            KernelEntry{{Tg, OA, OB, 128, false, false}, launch_kernel<Narrow, FusedEpilogue>, Narrow::kBK},
            KernelEntry{{Tg, OA, OB, 128, false, true}, launch_pingpong<Pong>, Pong::kBK},
            KernelEntry{{Tg, OA, OB, 128, false, true, 2}, launch_pingpong_cluster<PongPair>, PongPair::kBK},
            KernelEntry{{Tg, OA, OB, 128, true, false}, launch_kernel<Split, sm90::StoreF32>, Split::kBK},
            KernelEntry{{Tg, OA, OB, 128, true, true}, launch_pingpong<PongSplit, AtomicAddF32>, PongSplit::kBK}};
}

// The row makers below are lambdas templated on the epilogue e and called as make.template operator()<e>();
// nvcc's remark #445 (e not used in the lambda's parameter types) is that design, said once a row per
// table and build, and hid the build's other warnings: silenced up to the table below.
#pragma nv_diag_suppress 445

// One row per epilogue of `Epilogues`, each made by make.template
// operator()<e>(): the kernels compiled per epilogue, for bf16 operands and a
// bf16 D only (none for f16).
template <Type Tg, const auto& Epilogues, class Make>
constexpr auto per_epilogue(Make make) {
    if constexpr (Tg != Type::bf16) {
        return std::array<KernelEntry, 0>{};
    } else {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return std::array<KernelEntry, sizeof...(I)>{make.template operator()<Epilogues[I]>()...};
        }(std::make_index_sequence<Epilogues.size()>{});
    }
}

// The fixed-epilogue rows of one layout: one ping-pong kernel per epilogue of
// `Epilogues` (gemm::kFixedEpilogues, or with LoadsC gemm::kTmaCEpilogues).
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB, const auto& Epilogues, bool LoadsC>
constexpr auto fixed_epilogue_rows() {
    return per_epilogue<Tg, Epilogues>([]<Epilogue e>() {
        using Epi = FixedEpilogue<__nv_bfloat16, e, LoadsC>;
        using Pong = sm90::PingPong<T, Epi::kStages, major_a(OA), major_b(OB)>;
        return KernelEntry{{Tg, OA, OB, 128, false, true, 1, true, e, LoadsC}, launch_pingpong<Pong, Epi>, Pong::kBK};
    });
}

// The short-tile rows of one layout ("fixed_m64"): the fixed-epilogue ping-pong kernel with 64 x 128
// tiles, one m64n128 accumulator a consumer, for each of gemm::kShortTileEpilogues. Its stages are
// 24 KB, so the ring holds 8 (225 KB with the two staging boxes): K = 512 (8 k-tiles) is loaded at
// once, where 6 stages waited for a second round trip to memory for the last two k-tiles. Measured at
// b1420e7: 512^3 at 35.2 Tflop/s against 6 stages' 34.8-35.1 in earlier visits, no change beyond the
// noise (2026-12-02_b1420e7_small_gemm.csv); kept, as it costs nothing.
inline constexpr int kShortTileStages = 8;
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr auto short_tile_rows() {
    return per_epilogue<Tg, gemm::kShortTileEpilogues>([]<Epilogue e>() {
        using Epi = FixedEpilogue<__nv_bfloat16, e>;
        using Pong = sm90::PingPong<T, kShortTileStages, major_a(OA), major_b(OB), 1, false, 64>;
        return KernelEntry{{Tg, OA, OB, 128, false, true, 1, true, e, false, false, 64}, launch_pingpong<Pong, Epi>,
                           Pong::kBK};
    });
}

// The wide fixed-epilogue rows of one layout ("fixed_wide"): the cooperative
// 128 x 256 kernel once for each of gemm::kWideEpilogues, FixedEpilogue
// compiled in with a 64 x 256 staging box per consumer (32 KB each), so the
// ring has 3 stages of 48 KB.
inline constexpr int kWideFixedStages = 3;
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr auto wide_fixed_rows() {
    return per_epilogue<Tg, gemm::kWideEpilogues>([]<Epilogue e>() {
        using Epi = FixedEpilogue<__nv_bfloat16, e, false, 256>;
        using Wide = WarpSpecialized<T, 256, kWideFixedStages, Schedule::persistent_grouped, Accumulation::tensor_core,
                                     major_a(OA), major_b(OB)>;
        return KernelEntry{{Tg, OA, OB, 256, false, false, 1, true, e, false}, launch_kernel<Wide, Epi>, Wide::kBK};
    });
}

// The split fixed rows of one layout: the ping-pong split-K once for each of
// gemm::kFixedEpilogues, each unit's partial added into the plan's workspace
// (Ordered: summed in split order, gathered from a slab per split or added in
// turn) and the last unit of a tile applying the epilogue (SplitFixup over
// FixedEpilogue).
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB, bool Ordered>
constexpr auto split_fixed_rows() {
    return per_epilogue<Tg, gemm::kFixedEpilogues>([]<Epilogue e>() {
        using Epi = SplitFixup<FixedEpilogue<__nv_bfloat16, e>, Ordered>;
        using Pong = sm90::PingPong<T, Epi::kStages, major_a(OA), major_b(OB), 1, true>;
        return KernelEntry{{Tg, OA, OB, 128, true, true, 1, true, e, false, Ordered}, launch_pingpong<Pong, Epi>,
                           Pong::kBK};
    });
}

// The 128 x 192, 128 x 168 and 128 x 176 rows of one layout ("fixed_n192", "fixed_n168", "fixed_n176"; the
// dispatcher's rules 8 and 9 take the 192 and 176 ones): the fixed ping-pong kernel with TileN-column tiles,
// two m64nTileN accumulators a consumer, for each of gemm::kN192Epilogues. A stage is 40 KB (K-major B: 168,
// 37 KB; 176, 38 KB) and each consumer's staging box 24 KB (three 64 x 64 boxes; 168 and 176 columns use 40
// and 48 of the third), so the ring holds 4 stages (209 KB in all at 192).
inline constexpr int kN192Stages = 4;
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB, int TileN>
constexpr auto wide_n_rows() {
    return per_epilogue<Tg, gemm::kN192Epilogues>([]<Epilogue e>() {
        using Epi = FixedEpilogue<__nv_bfloat16, e, false, TileN>;
        using Pong = sm90::PingPong<T, kN192Stages, major_a(OA), major_b(OB), 1, false, 128, TileN>;
        return KernelEntry{{Tg, OA, OB, TileN, false, true, 1, true, e}, launch_pingpong<Pong, Epi>, Pong::kBK};
    });
}

// The narrow-tail rows of one layout ("fixed_tail", named only): the fixed kernel with a narrow tail of
// gemm::kTailTileN columns (pingpong_gemm.cuh, TailN), for each of gemm::kTailEpilogues. A narrow tile's
// halves leave through one 64-column box and an unswizzled one of 40 (p.map_d_tail, as the 168-column
// tiles' last box), in the 128-column tiles' staging box. With a K-major B (NT, TT) a narrow tile
// loads only its 104 rows of B (FixedTailEpilogue's map); an MN-major B comes in whole 64-column boxes.
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr auto tail_rows() {
    return per_epilogue<Tg, gemm::kTailEpilogues>([]<Epilogue e>() {
        using Epi = std::conditional_t<major_b(OB) == Major::k, FixedTailEpilogue<__nv_bfloat16, e>,
                                       FixedEpilogue<__nv_bfloat16, e>>;
        using Pong = sm90::PingPong<T, Epi::kStages, major_a(OA), major_b(OB), 1, false, 128, 128, gemm::kTailTileN>;
        return KernelEntry{{Tg, OA, OB, 128, false, true, 1, true, e, false, false, 128, gemm::kTailTileN},
                           launch_pingpong<Pong, Epi>, Pong::kBK};
    });
}

// The pair rows of one layout ("fixed_pair", named only): the unsplit fixed kernel on 2 x 1 clusters
// sharing B, once for each of gemm::kPairEpilogues.
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr auto pair_rows() {
    return per_epilogue<Tg, gemm::kPairEpilogues>([]<Epilogue e>() {
        using Epi = FixedEpilogue<__nv_bfloat16, e>;
        using Pong = sm90::PingPong<T, Epi::kStages, major_a(OA), major_b(OB), 2>;
        return KernelEntry{{Tg, OA, OB, 128, false, true, 2, true, e}, launch_pingpong_cluster<Pong, Epi>, Pong::kBK};
    });
}

// The split pair (bf16 only): the ordered split fixed kernel on 2 x 1 clusters sharing B, epilogue none
// ("fixed_split_pair", named only).
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr auto split_pair_rows() {
    if constexpr (Tg != Type::bf16) {
        return std::array<KernelEntry, 0>{};
    } else {
        using Epi = SplitFixup<FixedEpilogue<__nv_bfloat16, Epilogue::none>, true>;
        using Pong = sm90::PingPong<T, Epi::kStages, major_a(OA), major_b(OB), 2, true>;
        return std::array<KernelEntry, 1>{KernelEntry{{Tg, OA, OB, 128, true, true, 2, true, Epilogue::none, false, true},
                                                      launch_pingpong_cluster<Pong, Epi>, Pong::kBK}};
    }
}

// The fp32-D row of one 16-bit type and layout (Choice::f32_tma): the unsplit ping-pong kernel with
// TmaStoreF32, 6 stages beside the two 16 KB staging regions.
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr std::array<KernelEntry, 1> f32_tma_rows() {
    using Pong = sm90::PingPong<T, TmaStoreF32::kStages, major_a(OA), major_b(OB)>;
    return {KernelEntry{{Tg, OA, OB, 128, false, true, 1, false, Epilogue::none, false, false, 128, 0, true},
                        launch_pingpong<Pong, TmaStoreF32>, Pong::kBK}};
}

#pragma nv_diag_default 445

// The table of one 16-bit type and layout: half_rows, fixed_epilogue_rows, short_tile_rows, wide_fixed_rows,
// split_fixed_rows, pair_rows, split_pair_rows, wide_n_rows (192, 168, 176), tail_rows, f32_tma_rows.
template <DType T, Type Tg, gemm::Op OA, gemm::Op OB>
constexpr auto table_rows() {
    constexpr auto a = half_rows<T, Tg, OA, OB>();
    constexpr auto b = fixed_epilogue_rows<T, Tg, OA, OB, gemm::kFixedEpilogues, false>();
    constexpr auto c = fixed_epilogue_rows<T, Tg, OA, OB, gemm::kTmaCEpilogues, true>();
    constexpr auto w = wide_fixed_rows<T, Tg, OA, OB>();
    constexpr auto f = split_fixed_rows<T, Tg, OA, OB, false>();
    constexpr auto o = split_fixed_rows<T, Tg, OA, OB, true>();
    constexpr auto s = short_tile_rows<T, Tg, OA, OB>();
    constexpr auto p = pair_rows<T, Tg, OA, OB>();
    constexpr auto q = split_pair_rows<T, Tg, OA, OB>();
    constexpr auto r = wide_n_rows<T, Tg, OA, OB, 192>();
    constexpr auto n = wide_n_rows<T, Tg, OA, OB, 168>();
    constexpr auto t = wide_n_rows<T, Tg, OA, OB, 176>();
    constexpr auto x = tail_rows<T, Tg, OA, OB>();
    constexpr auto y = f32_tma_rows<T, Tg, OA, OB>();
    std::array<KernelEntry, a.size() + b.size() + c.size() + s.size() + w.size() + f.size() + o.size() + p.size() +
                                q.size() + r.size() + n.size() + t.size() + x.size() + y.size()>
        out{};
    std::size_t at = 0;
    for (const auto& part : {std::span<const KernelEntry>(a), std::span<const KernelEntry>(b),
                             std::span<const KernelEntry>(c), std::span<const KernelEntry>(s),
                             std::span<const KernelEntry>(w), std::span<const KernelEntry>(f),
                             std::span<const KernelEntry>(o), std::span<const KernelEntry>(p),
                             std::span<const KernelEntry>(q), std::span<const KernelEntry>(r),
                             std::span<const KernelEntry>(n), std::span<const KernelEntry>(t),
                             std::span<const KernelEntry>(x), std::span<const KernelEntry>(y)})
        for (const KernelEntry& e : part) out[at++] = e;
    return out;
}

// -- the elementwise pass (epilogue_kernel.cu) ---------------------------------------
// Applies p's epilogue to every element of an M x N matrix: the sum of
// `splits` fp32 slabs (slabs != nullptr: the split-K reduction; alpha and
// beta apply), or D itself in D's type (slabs == nullptr: the decomposed
// path's second kernel; p.alpha 1, p.beta 0). bgrad, if asked for, must be
// zeroed before.
void launch_epilogue(const EpilogueParams& p, const float* slabs, int splits, int m, int n, cudaStream_t stream);

}  // namespace rigel::cuda::gemm_kernels
