// k38_wgmma_fp8_block_scaled: k34 with DeepSeek-V3's block scales applied at
// each promotion.
// Kernel: warp_specialized.cuh, Schedule::persistent_grouped,
// Accumulation::block_scaled, 128 x 128 x 128 tiles (e4m3, e5m2), 6 stages,
// one producer and 2 consumer warpgroups, one CTA per SM.
// Run alone: rigel ladder --backend cuda --rungs k38_wgmma_fp8_block_scaled --dtype e4m3 --sizes 4096
// With real scales: rigel gemm blockscaled --m 1000 --n 1030 --k 1104
//
// Adds over k34: what DeepSeek-V3 trains with. Each operand carries one fp32
// scale per block (A per 1 x 128: a row and 128 of K; B per 128 x 128), so an
// fp8 tensor can span a range no single scale could (src/core/block_scaling.hpp
// makes them: s = amax / max(type) per block). A k-tile is one block of K:
// its partial sum, promoted out of the tensor core as in k34, is added to the
// fp32 total times s_A(row) s_B(tile) with one FFMA where k34 has an FADD.
// The scales are k-block-major (block_scaled.hpp): the producer loads each
// k-tile's 128 A scales and B's by TMA into its stage beside the operands,
// under the same full barrier, and each consumer thread reads its two rows'
// and the tile's from there after the promotion before (tied to that partial
// sum so that ptxas keeps the reads and the scale products out of the turn's
// wgmma issue).
// Why a rung of its own: the scales are the one thing the ladder's GemmProblem
// does not carry. In the ladder k38 runs with every scale 1.0 (so its numbers
// and its error are k34's, the scale loads and the FFMA being its whole cost);
// `rigel gemm blockscaled` runs it on operands quantized with real block
// scales and holds D to float64 of the dequantized operands.
// Prediction: within 5 % of k34 at 4096^3 and 8192^3 (the scales are 516
// bytes a stage against 32 KB of operands; the FFMA costs what the FADD did).
// Measured: 0.885x and 0.885x k34 at 4096^3 and 8192^3 in paired samples
// with real scales (e4m3; e5m2 0.884x, 0.884x), 0.87x and 0.85x cuBLASLt's
// default fp8 (results/h200/2026-12-04_25ee3fc_blockscaled_e4m3.csv and
// _ladder.csv; ed269c6's visit read the same): the prediction failed, by
// about 11 %. Against cuBLASLt's own block-scaled fp8 (VEC128_32F for A,
// BLK128x128_32F for B, which cuBLASLt 13.1 runs on the H200 once the scale
// pointers are set): 0.949x [0.935, 0.963] at 4096^3, and cuBLASLt's block
// scaling took its kernel 15 % longer than its unscaled fp8
// (2026-12-05_97b822c_blockscaled_e4m3.csv; docs/gemm.md).
// How it got there (results/h200/experiments/README.md has every run): with
// the scales read from global memory (row-major A scales) k38 ran at 0.78x
// and 0.73x k34, and neither loading them a k-tile ahead, nor two, nor
// copying them into shared memory by a second producer warp, nor editing the
// FFMAs' SASS bits moved it. Four builds chosen at run time (3b40581) split
// the cost: an FADD promotion with the loads kept 0.80x and 0.75x k34; the
// FFMA times a run-time 1.0 with no loads 0.95x and 0.93x. Nsight Compute's
// source page put the largest stall on the scales' first use after the wait
// (a long scoreboard), on loads issued a whole k-tile earlier: under the
// operands' TMA traffic a load from L2 outlasted a k-tile. Loaded by TMA with
// their stage, as far ahead as the ring reaches, the scales cost 0.89x
// (43f705a, ed269c6; where in the turn they are read made no difference).
// What is left: the FFMA, about 5 % against k34's FADD in every build that
// has one (its third register operand, beside a running wgmma), and about
// 5 % more that comes with the scales' TMA traffic itself: a build whose
// consumers left the TMA'd scales unread ran 0.90x and 0.89x k34 in calls
// alternating with this one's 0.88x and 0.89x (f5cf42b), where the build
// with no scale traffic at all ran 0.95x and 0.93x. Two more TMA boxes a
// stage (512 and 16 bytes) were what to look at next, and neither is it:
// prefetching their maps' descriptors changed nothing (aa2bb48), nor did B's
// scales loaded once a tile by the consumers instead of a 16-byte box a stage,
// nor the boxes issued after the operands' (122c841), nor the maps' L2
// promotion, none to 256 bytes (7be9420). What 122c841 did show: the same
// kernel with three uniform run-time branches and a shuffle in its promotion
// ran 8-9 % slower than without them, so k38's rate hangs on the few
// instructions around the promotion, not on bytes moved. Nsight Compute's
// source page summed over the whole kernel (5086db5, k34 beside k38 at
// 4096^3): k38's 14 % more warp-state samples are dispatch stalls more than
// anything else (771 of the 1,433 extra), and among the busiest lines of both
// kernels those sit on the promotion's FADDs or FFMAs, issued beside the other
// k-tile's wgmma; instruction-fetch stalls are the same in both. An FFMA reads
// three registers where the FADD reads two, so the next try cut the reads:
// the FFMAs' control bits edited in the binary so that each run issues
// without yielding and reads its scale from the operand cache (two register
// reads an FFMA) ran 5 % and 9 % slower at 4096^3 and 8192^3, and the
// opposite edit (every FFMA yields, none caches) 3 % and 6 % slower (bacebc4,
// `scripts/h200_visit.sh sass_edit`), and runs of 3, 4 and 8 FFMAs between
// yields -0.8 %, -1.8 % and -4.7 % at 8192^3 (ca3fdfa): ptxas's schedule,
// which alternates the two, is the best, and register reads are not the cost. The
// shape of the schedule was tried last (902962b): DeepGEMM's one partial sum a
// consumer (issue a k-tile, wait for it, promote, then the next) ran at 0.73x
// and 0.65x cuBLASLt against 0.87x and 0.86x as built, in alternating calls.
// k38's two consumers share each tile and wait on the same full barrier, so
// they reach their promotions together and the tensor pipe idles through
// both; the second partial sum, in flight during the promotion, is what keeps
// it fed. Two more builds on an H100 (5b9fa28, taken out in d86407c; ladder
// calls in the order built, own barrier, FADD, twice, each rung paired with
// cuBLASLt's default fp8, unit scales, so the builds meet through that
// baseline, not in pairs of their own): the scales landing on a barrier of
// their own, so that a k-tile's wgmma waited for its operands only and the
// consumers waited for the scales where they read them, ran 4 % slower
// (0.813x and 0.767x cuBLASLt at 4096^3 and 8192^3, against 0.849x and
// 0.803x as built): one more wait in the turn cost more than the scales'
// arrival did. k34's FADD in place of the FFMA, the scales still loaded and
// read (a diagnosis, which fails the real-scale check as it must), ran
// 0.875x and 0.808x: the FFMA is 3 % at 4096^3 and under 1 % at 8192^3, and
// the rest of the gap to k34 (0.952x and 0.87x-0.90x in the same calls)
// comes with the scales' loads and reads in each turn. Nor is it the 11
// instructions that stand between the wgmma wait and the first FFMA (the
// two scale products and their tie to the partial sum): builds that took
// the products a turn early, or untied (8a688d2, 6cb7745, taken out in
// e2dce8f), put the FFMA right after the wait and ran level with this one
// on an H100 (0.839x-0.851x cuBLASLt at 4096^3 against 0.843x-0.844x,
// 0.789x at 8192^3 against 0.794x-0.795x; docs/gemm.md).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/hopper/block_scaled.hpp"
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/rung_launch.cuh"
#include "cuda/hopper/warp_specialized.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K38 = sm90::WarpSpecialized<T, 128, 6, sm90::Schedule::persistent_grouped, sm90::Accumulation::block_scaled>;

// EXPERIMENT: RIGEL_K38_SCALES=chunk loads the scales of 16 k-tiles of a tile in one TMA pair
// (A's 16 x 128, B's 16 x 4) into one of two buffers, in place of a pair of boxes every stage.
template <DType T>
using K38Chunk = sm90::WarpSpecialized<T, 128, 6, sm90::Schedule::persistent_grouped,
                                       sm90::Accumulation::block_scaled, sm90::Major::k, sm90::Major::k, 16>;
// Any other value is refused, so that a misspelt setting cannot time the default build under the
// experiment's name.
bool scales_in_chunks() {
    static const bool chunk = [] {
        const char* e = std::getenv("RIGEL_K38_SCALES");
        const std::string v = e != nullptr ? e : "";
        if (!v.empty() && v != "chunk")
            throw std::invalid_argument("RIGEL_K38_SCALES is '" + v + "': it takes chunk, or is unset");
        return v == "chunk";
    }();
    return chunk;
}

// StoreF32 with the block scales' tensor maps beside it: the kernel's by-value
// parameters carry them to the producer (warp_specialized.cuh, block_scaled).
struct StoreF32Scaled {
    struct Params {
        float* c;
        int k_blocks;
        CUtensorMap map_scale_a;  // k_blocks x M, boxes of 128 (a tile's rows)
        CUtensorMap map_scale_b;  // k_blocks x ceil(N / 128), boxes of 4
    };
    static constexpr int kStagingBytes = 0;
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* /*staging*/) {
        sm90::store_accumulators<BN>(acc, p.c, m, n, row0, col0);
    }
};

template <class G>
void launch(const GemmProblem& p, const float* scale_a, const float* scale_b, const char* rung) {
    // The scale arrays' maps (block_scaled.hpp's layout): k_blocks rows of M or
    // ceil(N / 128) scales, row stride scale_ld of that, unswizzled boxes of a
    // tile's 128 rows and of 4 B blocks, no L2 promotion (make_map_128b);
    // scales past the end read as 0.
    static sm90::TensorMapCache maps_a, maps_b, maps_scale_a, maps_scale_b;
    constexpr CUtensorMapL2promotion kNoPromotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
    static const int sms = [] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(sm90::warp_specialized_kernel<G, StoreF32Scaled>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              sm90::kernel_smem_bytes<G, StoreF32Scaled>));
        return sm90::sm_count();
    }();
    const sm90::RungLaunch l = sm90::prepare_rung_launch<G>(p, maps_a, maps_b, sms, rung);
    const int k_blocks = sm90::ceil_div(l.k, G::kBK);
    const int box_k = std::max(1, sm90::scale_chunk<G>());  // k-blocks a scale box spans
    const StoreF32Scaled::Params params{
        static_cast<float*>(p.c), k_blocks,
        maps_scale_a.get(scale_a, DType::f32, k_blocks, l.m, scale_ld(l.m), box_k, G::kBM, kNoPromotion),
        maps_scale_b.get(scale_b, DType::f32, k_blocks, l.tiles_n, scale_ld(l.tiles_n), box_k, 4, kNoPromotion)};
    sm90::warp_specialized_kernel<G, StoreF32Scaled>
        <<<l.grid, G::kThreads, sm90::kernel_smem_bytes<G, StoreF32Scaled>, sm90::stream_of(p)>>>(
            *l.map_a, *l.map_b, params, l.m, l.n, l.k, l.tiles_m, l.tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

void dispatch(const GemmProblem& p, const float* scale_a, const float* scale_b, const char* rung) {
    switch (p.type) {
        case DType::e4m3:
            if (scales_in_chunks()) return launch<K38Chunk<DType::e4m3>>(p, scale_a, scale_b, rung);
            return launch<K38<DType::e4m3>>(p, scale_a, scale_b, rung);
        case DType::e5m2:
            if (scales_in_chunks()) return launch<K38Chunk<DType::e5m2>>(p, scale_a, scale_b, rung);
            return launch<K38<DType::e5m2>>(p, scale_a, scale_b, rung);
        default:
            throw std::invalid_argument(std::string(rung) + " takes e4m3 and e5m2, not " + std::string(name(p.type)));
    }
}

// Scales of 1.0 for the ladder, one device buffer per count, kept for the
// process (the rung's timed calls then allocate nothing).
const float* unit_scales(std::size_t count) {
    static std::map<std::size_t, float*> buffers;
    auto it = buffers.find(count);
    if (it == buffers.end()) {
        float* d = nullptr;
        RIGEL_CUDA_CHECK(cudaMalloc(&d, count * sizeof(float)));
        const std::vector<float> ones(count, 1.0f);
        RIGEL_CUDA_CHECK(cudaMemcpy(d, ones.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        it = buffers.emplace(count, d).first;
    }
    return it->second;
}

}  // namespace

void k38_wgmma_fp8_block_scaled(const GemmProblem& p) {
    const std::int64_t k_blocks = (p.k + 127) / 128, n_blocks = (p.n + 127) / 128;
    const float* ones = unit_scales(static_cast<std::size_t>(scale_ld(std::max(p.m, n_blocks)) * k_blocks));
    dispatch(p, ones, ones, "k38_wgmma_fp8_block_scaled");
}

void fp8_block_scaled_gemm(const BlockScaledProblem& p) {
    if (p.scale_a == nullptr || p.scale_b == nullptr)
        throw std::invalid_argument("fp8_block_scaled_gemm: the block scales of A and of B are both needed");
    for (const float* s : {p.scale_a, p.scale_b})
        if (reinterpret_cast<std::uintptr_t>(s) % 16 != 0)
            throw std::invalid_argument("fp8_block_scaled_gemm: a block-scale array is not 16-byte aligned (TMA reads it)");
    if (const std::string why = hopper_tma_check(p.gemm); !why.empty())
        throw std::invalid_argument("fp8_block_scaled_gemm: " + why);
    dispatch(p.gemm, p.scale_a, p.scale_b, "fp8_block_scaled_gemm");
}

}  // namespace rigel::cuda
