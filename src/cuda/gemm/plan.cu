// rigel::gemm::Plan on the GPU: finds the plan's kernels in the registry
// (gemm_kernels.cuh), keeps its tensor maps and split-K workspace, and
// launches. The shape and argument checks and the dispatcher are host code
// (src/gemm/dispatch.cpp); nothing here runs before they have passed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "cuda/check.cuh"
#include "cuda/gemm/gemm_kernels.cuh"
#include "gemm/narrow_tail.hpp"
#include "gemm/stream_tail.hpp"
#include "rigel/gemm.hpp"

namespace rigel::gemm {

using cuda::gemm_kernels::EpilogueParams;
using cuda::gemm_kernels::KernelEntry;
using cuda::gemm_kernels::KernelKey;
using cuda::gemm_kernels::Launch;

namespace {

DType dtype_of(Type t) {
    switch (t) {
        case Type::bf16: return DType::bf16;
        case Type::f16: return DType::f16;
        case Type::e4m3: return DType::e4m3;
        case Type::e5m2: return DType::e5m2;
        case Type::f32: break;
    }
    return DType::f32;
}

const KernelEntry* find_kernel(const KernelKey& key) {
    for (const auto table : cuda::gemm_kernels::kernel_tables)
        for (const KernelEntry& e : table())
            if (e.key == key) return &e;
    return nullptr;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The split fixed kernels' workspace: a slab of 64 x 128 floats per 64-row half of a split tile, into
// which its units add by reductions or in turn (gathered: a slab per half and split, which each split
// stores), then each half's arrival counter (SplitFixup in fused_epilogue.cuh); zeroed once, the
// counters left zeroed by every run.
constexpr std::size_t kHalfSlabFloats = 64 * 128;
// Ordered units gather (a slab per split, summed by the last) where every tile is split (one wave of
// units, or both consumers' units of every tile, or a streamed tail that is every tile, or a tail whose
// Choice::tail_gather says so), and add in turn into one slab under a tail split, whose fix-ups run
// beside the other consumer's whole tiles (SplitFixupParams::gather): with no whole tiles to run
// meanwhile, a chain of turns would wait out one L2 round trip per split after the last main loop, where
// gathering reads the slabs once.
bool gathers(const Choice& c, std::int64_t tiles) {
    return c.ordered_split && (c.split_tiles == 0 || c.tail_gather || (c.stream_tail && c.split_tiles == tiles));
}
// The halves that have a slab (and a counter): those of the split tiles, out of `tiles`.
std::size_t split_fixup_halves(const Choice& c, std::int64_t tiles) {
    return static_cast<std::size_t>(2 * (c.split_tiles > 0 ? c.split_tiles : tiles));
}
// Slabs per half: gathered, the most units a tile has (a streamed tail's pieces vary from tile to tile).
int split_fixup_slabs_per_half(const Choice& c, std::int64_t tiles, std::int64_t k_tiles) {
    if (!gathers(c, tiles)) return 1;
    return c.stream_tail ? stream_max_pieces(c.ctas, c.split_tiles, static_cast<int>(k_tiles)) : c.splits;
}

bool aligned(const void* p, std::uintptr_t to) { return reinterpret_cast<std::uintptr_t>(p) % to == 0; }

}  // namespace

struct Plan::State {
    const KernelEntry* kernel = nullptr;
    // Choice::tma_load_c: the kernel that loads C by TMA, for the calls with beta != 0 (dgelu_bgrad's
    // `kernel` is that one already: it loads aux so at beta 0).
    const KernelEntry* c_kernel = nullptr;
    // What run_decomposed launches: `kernel`, or where that has its epilogue compiled in, the same kernel
    // compiled for no epilogue.
    const KernelEntry* gemm_only_kernel = nullptr;
    const KernelEntry* gemm_only_c_kernel = nullptr;  // and its c_kernel's
    cuda::sm90::TensorMapCache maps_a, maps_b;
    cuda::sm90::TensorMapCache maps_d, maps_aux;  // the fixed-epilogue kernels' TMA stores
    cuda::sm90::TensorMapCache maps_d_tail;       // and D's last box of a 168-column tile
    cuda::sm90::TensorMapCache maps_b_tail;       // the narrow tail's B boxes (a K-major B)
    cuda::sm90::TensorMapCache maps_c;            // and their TMA loads of C (Choice::tma_load_c)
    float* workspace = nullptr;
    std::size_t workspace_bytes = 0;
    int slabs_per_half = 1;  // the split fixed kernels' workspace: slabs per half (split_fixup_slabs_per_half)
    int sms = 0;
    rigel::gemm::NarrowTail tail;  // Choice::tail_n: the narrow tail's plan (narrow_cols 0: the uniform tiles)
    // The dispatcher's ping-pong split-K (allow_atomics): the plan without atomics, for the calls
    // whose beta and C it cannot add into D (adds_into_d); its workspace is taken on its first run.
    std::unique_ptr<Plan> without_atomics;
    // The wide-N tiles (128 x 192 and 128 x 176: rules 8 and 9; 128 x 168 by name), the narrow tail and rule
    // 14's cooperative 128 x 256 tiles, whose kernels have no path for C by TMA: the plan on rule 4's 128 x 128
    // kernel that loads C (gemm::residual_choice), for the calls with beta != 0.
    std::unique_ptr<Plan> residual;
    // The dispatcher's fp32 D on TMA stores (rule 11): the plan on the kernel the rule replaced (the
    // ping-pong kernel, its D staged), for the calls whose D the TMA stores cannot take (tma_stores).
    std::unique_ptr<Plan> staged;

    ~State() {
        if (workspace) cudaFree(workspace);  // an error here (context already gone) changes nothing
    }
};


Plan::Plan(const Desc& d) : Plan(d, choose(d, cuda::sm90::sm_count(), cuda::sm90::dram_bytes_per_second())) {
    if (choice_.splits > 1 && choice_.pingpong && !choice_.fixed_epilogue) {
        Desc plain = d;
        plain.allow_atomics = false;
        state_->without_atomics = std::make_unique<Plan>(plain);
    }
    if (choice_.f32_tma) {
        Choice plain = choice_;
        plain.f32_tma = false;
        plain.why = "the ping-pong kernel with staged stores, for the calls of an fp32-D product whose D the TMA "
                    "stores cannot take";
        state_->staged = std::make_unique<Plan>(d, plain);
    }
    if (const std::optional<Choice> with_c = residual_choice(d, choice_, cuda::sm90::dram_bytes_per_second()))
        state_->residual = std::make_unique<Plan>(d, *with_c);
}

Plan::Plan(const Desc& d, const Choice& forced) : desc_(with_packed_leading_dimensions(d)), choice_(forced) {
    if (const std::string why = check(d); !why.empty()) throw std::invalid_argument(why);
    const bool split = forced.splits > 1;
    // The ping-pong split-K adds partial tiles into D: an f32 D and no epilogue; or, compiled for a
    // fixed epilogue, into the plan's workspace, the last unit of a tile storing D.
    if (split && forced.pingpong && !forced.fixed_epilogue &&
        (desc_.d_type != Type::f32 || desc_.epilogue != Epilogue::none))
        throw std::invalid_argument(std::string("the ping-pong split-K adds fp32 partial tiles into D: it takes an f32 D "
                                                "and no epilogue, not a ") +
                                    name(desc_.d_type) + " D with epilogue " + name(desc_.epilogue));
    const bool wide_fixed = forced.fixed_epilogue && !forced.pingpong;
    if (wide_fixed && !(forced.tile_n == 256 && forced.cluster_m == 1 && !split && has_wide_kernel(desc_)))
        throw std::invalid_argument(std::string("no cooperative 128 x 256 kernel compiled for epilogue ") +
                                    name(desc_.epilogue) + " with " + name(desc_.a_type) + " operands and a " +
                                    name(desc_.d_type) +
                                    " D (those of gemm::kWideEpilogues, bf16 operands and D, single CTAs, K not split)");
    if (wide_n_tiles(forced) &&
        !(forced.fixed_epilogue && forced.cluster_m == 1 && forced.tile_m == 128 && !split && has_n192_kernel(desc_)))
        throw std::invalid_argument("no ping-pong kernel with 128 x " + std::to_string(forced.tile_n) +
                                    " tiles for epilogue " +
                                    name(desc_.epilogue) + " with " + name(desc_.a_type) + " operands and a " +
                                    name(desc_.d_type) +
                                    " D (those of gemm::kN192Epilogues, bf16 operands and D, single CTAs, K not split)");
    if (forced.tail_n > 0 && !(forced.pingpong && forced.fixed_epilogue && forced.tile_m == 128 &&
                               forced.tile_n == 128 && forced.cluster_m == 1 && !split && has_tail_kernel(desc_)))
        throw std::invalid_argument(std::string("no ping-pong kernel with a narrow tail for epilogue ") +
                                    name(desc_.epilogue) + " with " + name(desc_.a_type) + " operands and a " +
                                    name(desc_.d_type) +
                                    " D (those of gemm::kTailEpilogues, bf16 operands and D, 128 x 128 tiles, "
                                    "single CTAs, K not split)");
    if (forced.fixed_epilogue && !wide_fixed && forced.cluster_m > 1 && !split && !has_pair_kernel(desc_))
        throw std::invalid_argument(std::string("no ping-pong pair compiled for epilogue ") + name(desc_.epilogue) +
                                    " with " + name(desc_.a_type) + " operands and a " + name(desc_.d_type) +
                                    " D (those of gemm::kPairEpilogues, bf16 operands and D, K not split)");
    if (forced.fixed_epilogue && !wide_fixed &&
        !((forced.cluster_m == 1 || split == forced.ordered_split) && has_fixed_epilogue_kernel(desc_)))
        throw std::invalid_argument(std::string("no ping-pong kernel compiled for epilogue ") + name(desc_.epilogue) +
                                    " with " + name(desc_.a_type) + " operands and a " + name(desc_.d_type) +
                                    " D (those of gemm::kFixedEpilogues, bf16 operands and D, single CTAs)");
    if (forced.cluster_m > 1 && split &&
        (forced.split_tiles != 0 || ceil_div(desc_.m, forced.tile_m) % forced.cluster_m != 0))
        throw std::invalid_argument("a split pair splits every tile, and M must hold an even number of " +
                                    std::to_string(forced.tile_m) + "-row tiles (" + std::to_string(desc_.m) +
                                    " rows hold " + std::to_string(ceil_div(desc_.m, forced.tile_m)) + ")");
    if (split && forced.fixed_epilogue && forced.tma_load_c)
        throw std::invalid_argument("the split fixed kernels do not load C by TMA");
    if (forced.tma_load_c && !(forced.fixed_epilogue && has_tma_c_kernel(desc_)))
        throw std::invalid_argument(std::string("no kernel loads C by TMA for epilogue ") + name(desc_.epilogue) +
                                    " (those of gemm::kTmaCEpilogues, on the fixed kernels)");
    // The tile order walks groups of group_m tile rows (group_m / cluster_m pairs in a cluster kernel).
    if (forced.group_m < 0 || (forced.group_m > 0 && forced.group_m % std::max(forced.cluster_m, 1) != 0))
        throw std::invalid_argument("group_m must be 0 (the kernel's own) or a positive multiple of the cluster's " +
                                    std::to_string(forced.cluster_m) + " tile rows, not " +
                                    std::to_string(forced.group_m));
    if (forced.ordered_split && !(split && forced.pingpong && forced.fixed_epilogue))
        throw std::invalid_argument("an ordered split is the split fixed kernel's (splits > 1, ping-pong, fixed epilogue)");
    if (forced.split_tiles != 0 && !(split && forced.pingpong && forced.split_tiles > 0))
        throw std::invalid_argument("a tail split is the ping-pong split-K's (splits > 1, ping-pong) and splits at "
                                    "least one tile");
    if (forced.f32_tma && !(forced.pingpong && !split && forced.cluster_m == 1 && !forced.fixed_epilogue &&
                            forced.tile_m == 128 && forced.tile_n == 128 && forced.tail_n == 0 &&
                            has_f32_tma_kernel(desc_)))
        throw std::invalid_argument("the fp32-D TMA-store kernel is the unsplit 128 x 128 ping-pong kernel's, for "
                                    "bf16 or f16 operands, an f32 D and no epilogue");
    const bool loads_c = forced.fixed_epilogue && forced.tma_load_c;
    KernelKey key{desc_.a_type,     desc_.a_op,           desc_.b_op,
                  forced.tile_n,    split,                forced.pingpong,
                  forced.cluster_m, forced.fixed_epilogue, forced.fixed_epilogue ? desc_.epilogue : Epilogue::none,
                  loads_c && desc_.epilogue == Epilogue::dgelu_bgrad, forced.ordered_split, forced.tile_m,
                  forced.tail_n,    forced.f32_tma};
    state_ = std::make_unique<State>();
    state_->kernel = find_kernel(key);
    if (loads_c) {
        KernelKey c_key = key;
        c_key.loads_c = true;
        state_->c_kernel = find_kernel(c_key);
    }
    KernelKey gemm_only_key = key;
    gemm_only_key.epilogue = Epilogue::none;
    state_->gemm_only_kernel = find_kernel(gemm_only_key);
    if (loads_c) {
        gemm_only_key.loads_c = true;
        state_->gemm_only_c_kernel = find_kernel(gemm_only_key);
    }
    if (!state_->kernel || (loads_c && !state_->c_kernel) || forced.splits < 1)
        throw std::invalid_argument("no " + std::string(name(desc_.a_type)) + " " +
                                    layout_name(desc_.a_op, desc_.b_op) + " kernel with " +
                                    std::to_string(forced.tile_m) + " x " + std::to_string(forced.tile_n) +
                                    (forced.pingpong ? " ping-pong" : "") + " tiles" + (split ? " and split-K" : "") +
                                    (forced.cluster_m > 1 ? " in clusters of " + std::to_string(forced.cluster_m) : ""));
    const std::int64_t k_tiles = ceil_div(desc_.k, state_->kernel->k_tile);
    if (forced.splits > k_tiles)
        throw std::invalid_argument(std::to_string(forced.splits) + " splits exceed the " + std::to_string(k_tiles) +
                                    " k-tiles of K = " + std::to_string(desc_.k));
    state_->sms = cuda::sm90::sm_count();
    const std::int64_t tiles = ceil_div(desc_.m, choice_.tile_m) * ceil_div(desc_.n, choice_.tile_n);
    if (forced.split_tiles > tiles)
        throw std::invalid_argument("a tail split of " + std::to_string(forced.split_tiles) + " tiles, but the product has " +
                                    std::to_string(tiles));
    const std::int64_t units = forced.split_tiles > 0 ? tiles - forced.split_tiles + forced.split_tiles * forced.splits
                                                      : tiles * forced.splits;
    choice_.ctas = static_cast<int>(split && !forced.pingpong ? units : std::min<std::int64_t>(units, state_->sms));
    if (forced.tail_n > 0) {
        const int tiles_m = static_cast<int>(ceil_div(desc_.m, forced.tile_m));
        state_->tail = rigel::gemm::plan_narrow_tail(tiles_m, desc_.n, forced.tile_n, forced.tail_n, state_->sms);
        const rigel::gemm::NarrowTail& t = state_->tail;
        const std::int64_t tail_units = static_cast<std::int64_t>(tiles_m) * (t.wide_cols + t.narrow_cols);
        choice_.ctas = static_cast<int>(std::min<std::int64_t>(tail_units, state_->sms));
        const int recut = static_cast<int>(ceil_div(desc_.n, forced.tile_n)) - t.wide_cols;
        choice_.why += t.narrow_cols > 0
                           ? "; the last " + std::to_string(recut) + " tile columns re-cut into " +
                                 std::to_string(t.narrow_cols) + " of " + std::to_string(forced.tail_n) +
                                 " (the busiest SM's share of tiles " + std::to_string(t.busiest_load) +
                                 " columns' worth, against " + std::to_string(t.uniform_load) + ")"
                           : "; no narrow tail: no re-cut of the last columns evens out the last wave by " +
                                 std::to_string(static_cast<int>(rigel::gemm::kMinGain * 100)) + " %";
    }
    if (forced.stream_tail) {
        // Each CTA's run must hold a k-tile at least and cover at most two tiles (fewer split tiles than CTAs).
        if (!(forced.ordered_split && forced.split_tiles > 0 && forced.splits == 2))
            throw std::invalid_argument("a streamed tail is the ordered tail split's (ordered_split, split_tiles > 0, "
                                        "splits 2: the pieces per CTA)");
        if (forced.split_tiles >= choice_.ctas || forced.split_tiles * k_tiles < choice_.ctas)
            throw std::invalid_argument("a streamed tail of " + std::to_string(forced.split_tiles) + " tiles of " +
                                        std::to_string(k_tiles) + " k-tiles cannot be cut into one run of at least a "
                                        "k-tile and at most a tile for each of " + std::to_string(choice_.ctas) +
                                        " CTAs");
    }
    if (split && !forced.pingpong) state_->workspace_bytes = static_cast<std::size_t>(forced.splits) * desc_.m * desc_.n * sizeof(float);
    if (split && forced.pingpong && forced.fixed_epilogue) {
        state_->slabs_per_half = split_fixup_slabs_per_half(choice_, tiles, k_tiles);
        state_->workspace_bytes = split_fixup_halves(forced, tiles) * static_cast<std::size_t>(state_->slabs_per_half) *
                                      kHalfSlabFloats * sizeof(float) +
                                  split_fixup_halves(forced, tiles) * sizeof(unsigned);
    }
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

std::size_t Plan::workspace_bytes() const {
    if (!state_) return 0;
    return state_->workspace_bytes + (state_->without_atomics ? state_->without_atomics->workspace_bytes() : 0) +
           (state_->residual ? state_->residual->workspace_bytes() : 0) +
           (state_->staged ? state_->staged->workspace_bytes() : 0);
}

namespace {

// Launches the GEMM with epilogue `p` (fused, or through the split path).
void launch_gemm(const Desc& d, const Choice& c, Plan::State& s, const KernelEntry& kernel, const Args& args,
                 const EpilogueParams& p, cudaStream_t stream) {
    const DType t = dtype_of(d.a_type);
    const int k_tile = kernel.k_tile;
    Launch l;
    // K-major operands come in boxes of a tile's rows x 128 bytes; MN-major
    // ones (stored K x M or K x N) in boxes of k_tile K-rows x 128 bytes.
    l.map_a = d.a_op == Op::n ? s.maps_a.get(args.a, t, d.m, d.k, d.lda, c.tile_m)
                              : s.maps_a.get(args.a, t, d.k, d.m, d.lda, k_tile);
    // A cluster's CTAs each load half of a K-major B tile (its rows) and multicast it.
    l.map_b = d.b_op == Op::t ? s.maps_b.get(args.b, t, d.n, d.k, d.ldb, c.tile_n / c.cluster_m)
                              : s.maps_b.get(args.b, t, d.k, d.n, d.ldb, k_tile);
    l.m = static_cast<int>(d.m);
    l.n = static_cast<int>(d.n);
    l.k = static_cast<int>(d.k);
    l.tiles_m = static_cast<int>(ceil_div(d.m, c.tile_m));
    l.tiles_n = static_cast<int>(ceil_div(d.n, c.tile_n));
    if (c.tail_n > 0) {  // the narrow tail: tiles_n wide columns, then tail_cols narrow ones
        l.tiles_n = s.tail.wide_cols;
        l.tail_cols = s.tail.narrow_cols;
        if (d.b_op == Op::t) l.map_b_tail = s.maps_b_tail.get(args.b, t, d.n, d.k, d.ldb, c.tail_n);
    }
    l.group_m = c.group_m;
    l.stream = stream;
    // The fixed-epilogue kernels' TMA stores (and loads of C, aux) where the call allows them.
    const auto tma_maps = [&] {
        // The kernel at hand decides whether C (or dgelu_bgrad's aux) can come by TMA.
        Choice with = c;
        with.tma_load_c = kernel.key.loads_c;
        if (kernel.key.f32_tma) {  // TmaStoreF32's boxes: 64 rows x 32 floats
            if (!tma_stores(d, with, Epilogue::none, args)) return;
            l.tma_store = true;
            l.tma_add = args.beta != 0.0f;  // tma_stores allows beta 1 only with C the same matrix as D
            l.map_d = s.maps_d.get(args.d, DType::f32, d.m, d.n, d.ldd, 64);
            return;
        }
        if (!kernel.key.fixed_epilogue || !tma_stores(d, with, kernel.key.epilogue, args)) return;
        constexpr int kBoxRows = 64;  // FixedEpilogue's staging boxes: 64 rows x 64 bf16
        l.tma_store = true;
        l.map_d = s.maps_d.get(args.d, DType::bf16, d.m, d.n, d.ldd, kBoxRows);
        // 128 x 168 tiles: their last 40 columns through an unswizzled box; so do the narrow tail's tiles.
        const int tail_box = c.tile_n % 64 != 0 ? c.tile_n % 64 : l.tail_cols > 0 ? c.tail_n % 64 : 0;
        if (tail_box > 0) l.map_d_tail = s.maps_d_tail.get(args.d, DType::bf16, d.m, d.n, d.ldd, kBoxRows, tail_box);
        // aux: bias_gelu_aux stores it, dgelu_bgrad loads it (tma_stores allows that with tma_load_c).
        if (kernel.key.epilogue == Epilogue::bias_gelu_aux || kernel.key.epilogue == Epilogue::dgelu_bgrad)
            l.map_aux = s.maps_aux.get(args.aux, DType::bf16, d.m, d.n, d.ldaux, kBoxRows);
        if (args.beta != 0.0f) {  // tma_stores allows it only with c.tma_load_c
            l.tma_load_c = true;
            l.map_c = s.maps_c.get(args.c, DType::bf16, d.m, d.n, d.ldc, kBoxRows);
        }
    };
    if (c.splits > 1 && c.pingpong && kernel.key.fixed_epilogue) {
        // Units add into the workspace's slabs; the last of each tile stores D through the epilogue.
        const std::int64_t tiles = static_cast<std::int64_t>(l.tiles_m) * l.tiles_n;
        const std::size_t slabs = split_fixup_halves(c, tiles) * static_cast<std::size_t>(s.slabs_per_half);
        if (!s.workspace) {
            s.workspace = static_cast<float*>(cuda::alloc_or_refuse(
                s.workspace_bytes,
                "the split-K workspace (" + std::to_string(slabs) + " fp32 slabs of 64 x 128 and their counters)"));
            RIGEL_CUDA_CHECK(cudaMemsetAsync(s.workspace, 0, s.workspace_bytes, stream));
        }
        l.workspace = s.workspace;
        l.arrivals = reinterpret_cast<unsigned*>(s.workspace + slabs * kHalfSlabFloats);
        l.gather = gathers(c, tiles);
        l.epi = p;
        l.splits = l.gather && c.stream_tail ? s.slabs_per_half : c.splits;  // gathered: the slabs of a half
        l.split_tiles = c.split_tiles;
        l.stream_tail = c.stream_tail;
        tma_maps();
        l.grid = dim3(static_cast<unsigned>(c.ctas));
        kernel.launch(l);
        return;
    }
    if (c.splits > 1 && c.pingpong) {
        // Units add into D: D must hold C already (beta 1, C the same matrix) or be cleared here (beta 0).
        if (!adds_into_d(d, args))
            throw std::invalid_argument(
                "the ping-pong split-K adds into D: beta must be 0, or 1 with C the same matrix as D");
        if (args.beta == 0.0f)
            RIGEL_CUDA_CHECK(cudaMemset2DAsync(args.d, static_cast<std::size_t>(d.ldd) * sizeof(float), 0,
                                               static_cast<std::size_t>(d.n) * sizeof(float),
                                               static_cast<std::size_t>(d.m), stream));
        l.epi = p;
        l.splits = c.splits;
        l.split_tiles = c.split_tiles;
        // The units' halves added into D by the copy engine where its boxes can address D; else by
        // reductions from the registers.
        if (d.d_type == Type::f32 && f32_boxes_fit(d, args)) {
            l.tma_store = true;
            l.map_d = s.maps_d.get(args.d, DType::f32, d.m, d.n, d.ldd, 64);
        }
        l.grid = dim3(static_cast<unsigned>(c.ctas));
        kernel.launch(l);
        return;
    }
    if (c.splits == 1) {
        l.epi = p;
        tma_maps();
        l.grid = dim3(static_cast<unsigned>(c.ctas));
        kernel.launch(l);
        return;
    }
    if (!s.workspace)
        s.workspace = static_cast<float*>(
            cuda::alloc_or_refuse(s.workspace_bytes, "the split-K workspace (" + std::to_string(c.splits) +
                                                         " fp32 slabs of " + std::to_string(d.m) + " x " +
                                                         std::to_string(d.n) + ")"));
    l.workspace = s.workspace;
    l.grid = dim3(static_cast<unsigned>(l.tiles_m * l.tiles_n), static_cast<unsigned>(c.splits));
    kernel.launch(l);
    cuda::gemm_kernels::launch_epilogue(p, s.workspace, c.splits, l.m, l.n, stream);
}

EpilogueParams epilogue_params(const Desc& d, const Args& a) {
    // Two elements at a time wherever every row of every output-shaped matrix
    // starts on a pair boundary.
    const std::uintptr_t pair = 2 * static_cast<std::uintptr_t>(type_bytes(d.d_type));
    const bool paired = d.ldd % 2 == 0 && d.ldc % 2 == 0 && d.ldaux % 2 == 0 && aligned(a.d, pair) &&
                        (a.beta == 0.0f || aligned(a.c, pair)) && (!a.bias || aligned(a.bias, pair)) &&
                        (!a.aux || aligned(a.aux, pair));
    // Eight at a time (16-byte accesses) where every such row and pointer is 16-byte aligned.
    const bool octets = paired && d.ldd % 8 == 0 && d.ldc % 8 == 0 && d.ldaux % 8 == 0 && aligned(a.d, 16) &&
                        (a.beta == 0.0f || aligned(a.c, 16)) && (!a.bias || aligned(a.bias, 16)) &&
                        (!a.aux || aligned(a.aux, 16));
    return {.d = a.d, .c = a.c, .bias = a.bias, .aux = a.aux, .bgrad = a.bgrad,
            .ldd = d.ldd, .ldc = d.ldc, .ldaux = d.ldaux, .alpha = a.alpha, .beta = a.beta,
            .kind = d.epilogue, .d_type = d.d_type, .paired = paired, .octets = octets};
}

void refuse_bad_args(const Desc& d, const Args& args) {
    if (const std::string why = check_args(d, args); !why.empty()) throw std::invalid_argument(why);
}

// The sub-plan (Plan::State: without_atomics, residual, staged) that takes these args in this plan's
// place, or null where this plan runs them itself.
Plan* sub_plan_for(Plan::State& st, const Desc& d, const Choice& c, const Args& args) {
    if (st.without_atomics && !adds_into_d(d, args)) return st.without_atomics.get();
    if (st.residual && args.beta != 0.0f) return st.residual.get();
    if (st.staged && !tma_stores(d, c, Epilogue::none, args)) return st.staged.get();
    return nullptr;
}

// Every path sums bgrad by atomic adds into what it holds: zeroed first unless the call adds into it.
void zero_bgrad_unless_accumulating(const Desc& d, const Args& args, cudaStream_t s) {
    if (d.epilogue == Epilogue::dgelu_bgrad && !args.bgrad_accumulate)
        RIGEL_CUDA_CHECK(cudaMemsetAsync(args.bgrad, 0, static_cast<std::size_t>(d.n) * sizeof(float), s));
}

}  // namespace

const Choice& Plan::choice_for(const Args& args) const {
    if (Plan* sub = sub_plan_for(*state_, desc_, choice_, args)) return sub->choice_for(args);
    return choice_;
}

void Plan::run(const Args& args, Stream stream) {
    if (Plan* sub = sub_plan_for(*state_, desc_, choice_, args)) return sub->run(args, stream);
    refuse_bad_args(desc_, args);
    const auto s = static_cast<cudaStream_t>(stream);
    zero_bgrad_unless_accumulating(desc_, args, s);
    const KernelEntry& kernel = state_->c_kernel && args.beta != 0.0f ? *state_->c_kernel : *state_->kernel;
    launch_gemm(desc_, choice_, *state_, kernel, args, epilogue_params(desc_, args), s);
}

void Plan::run_decomposed(const Args& args, Stream stream) {
    if (Plan* sub = sub_plan_for(*state_, desc_, choice_, args)) return sub->run_decomposed(args, stream);
    if (const std::string why = check_decomposed_args(desc_, args); !why.empty()) throw std::invalid_argument(why);
    const auto s = static_cast<cudaStream_t>(stream);
    EpilogueParams gemm_only = epilogue_params(desc_, args);
    gemm_only.kind = Epilogue::none;
    const KernelEntry& kernel = state_->gemm_only_c_kernel && args.beta != 0.0f ? *state_->gemm_only_c_kernel
                                                                                : *state_->gemm_only_kernel;
    launch_gemm(desc_, choice_, *state_, kernel, args, gemm_only, s);
    if (desc_.epilogue == Epilogue::none) return;
    zero_bgrad_unless_accumulating(desc_, args, s);
    EpilogueParams second = epilogue_params(desc_, args);
    second.alpha = 1.0f;
    second.beta = 0.0f;
    cuda::gemm_kernels::launch_epilogue(second, nullptr, 1, static_cast<int>(desc_.m), static_cast<int>(desc_.n), s);
}

}  // namespace rigel::gemm
