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
// Each consumer thread holds two rows of its 64-row slice, so it reads two A
// scales and the tile's one B scale per k-tile (12 bytes, from L2), loaded
// one k-tile ahead of their use. Issued beside the k-tile's own wgmma
// instead, k38 ran at 0.85x k34 (4096^3: 888 against 1047 Tflop/s,
// 2026-12-01_740373c_ladder.csv); loading them a k-tile ahead changed
// nothing (849 against 1006, 0.84x, 2026-12-01_da76df2_ladder.csv), so the
// L2 round trip is not what k38 pays for.
// Why a rung of its own: the scales are the one thing the ladder's GemmProblem
// does not carry. In the ladder k38 runs with every scale 1.0 (so its numbers
// and its error are k34's, the scale loads and the FFMA being its whole cost);
// `rigel gemm blockscaled` runs it on operands quantized with real block
// scales and holds D to float64 of the dequantized operands.
// Prediction: within 5 % of k34 at 4096^3 and 8192^3 (the loads are 12 bytes
// per thread per 128 of K against 32 KB of operands per stage; the FFMA costs
// what the FADD did).
// Measured: 0.81x k34 at 4096^3 and 0.78x at 8192^3 in paired samples with
// real block scales (e4m3; e5m2 the same), 0.69x and 0.64x cuBLASLt's default
// fp8 (2026-12-01_da76df2_blockscaled_e4m3.csv): the prediction (within 5 %)
// failed.
// Where the scales come from does not matter (results/h200/experiments/,
// 2026-12-02, all 16 block-scaled checks passing in each): a second producer
// warp copying each stage's scales beside the ring (cp.async, its landing an
// arrival on the full barrier) and the consumers reading them from shared
// memory ran at 0.82x and 0.77x k34 (4096^3, 8192^3; e96cb6b, a build of bb4cbeb), and read at
// each promotion instead 0.79x and 0.74x (11db1ff), as from global memory
// here. What the promotion's instruction costs: k34 built to promote with an
// FFMA times a run-time 1.0 ran at 0.92x and 0.91x cuBLASLt's default fp8
// (paired, 4096^3 and 8192^3; aa0e6ed), where its FADD build ran at 0.97x and
// 0.97x in the calls before and after (70b3261, 11db1ff): about 5 %,
// and k38 promoting with an FMUL then an FADD ran slower than with the FFMA
// (879 against 941-950 Tflop/s at 4096^3). Nsight Compute (70b3261, 4096^3):
// the tensor pipe 55 % active against k34's 73 %, the same FMA-pipe work, no
// stall reason standing out on any line. So the FFMA with three per-thread
// register operands, issued while the other partial sum's wgmma runs, is the
// suspect: DeepGEMM reports 10 % and more from editing the yield and reuse
// bits of exactly these FFMAs in the SASS, which is the next experiment. In
// this file's SASS (CUDA 13.0, sm_90a; cuobjdump -sass) 181 of the e4m3
// kernel's 256 FFMAs carry an operand-reuse flag with control bit 45 set and
// 65 have bit 45 clear; k34's 256 FADDs have no reuse flag, 64 with bit 45
// clear. scripts/sass_ffma_yield.py makes the edit in a built binary
// (docs/gemm.md says how to time it). Timed on dbf9f68's binary with those
// 181 FFMAs edited in both k38 kernels (reuse flags and bit 45 cleared,
// nothing else): every block-scaled check passed, and k38 ran at 0.745x and
// 0.694x k34 (paired, 4096^3 and 8192^3), where the unedited kernel ran at
// 0.778x and 0.727x in 1020efd's call
// (experiments/2026-12-02_dbf9f68_k38_sass_edit_blockscaled_e4m3.csv). Not
// paired with the unedited kernel, but no gain: the bits are not what k38
// lacks, and the build keeps ptxas's SASS.
// The shared-memory form was taken out again: same speed, more machinery.
// One partial sum at a time instead of two in turn (DeepGEMM's order: issue,
// wait, promote, the other consumer's wgmma filling the gap; 128 accumulator
// registers a thread instead of 192) ran slower: 0.72x and 0.70x k34
// (ce2b677, experiments/2026-12-02_ce2b677_blockscaled_e4m3.csv).
#include <cuda_runtime.h>

#include <cstdint>
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

// The map of a k-block-major scale array (block_scaled.hpp): k_blocks rows of
// `count` fp32 scales, row stride scale_ld(count), boxes of `box` scales of one
// block of K, unswizzled; scales past `count` read as 0.
CUtensorMap make_scale_map(const float* base, std::int64_t count, std::int64_t k_blocks, int box) {
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(count), static_cast<cuuint64_t>(k_blocks)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(scale_ld(count)) * sizeof(float)};
    const cuuint32_t boxes[2] = {static_cast<cuuint32_t>(box), 1};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUresult r = sm90::tensor_map_encoder()(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(base), dims, strides, boxes, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                 ") for block scales of " + std::to_string(count) + " x " + std::to_string(k_blocks));
    return map;
}

template <class G>
void launch(const GemmProblem& p, const float* scale_a, const float* scale_b, const char* rung) {
    static sm90::TensorMapCache maps_a, maps_b;
    static const int sms = [] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(sm90::warp_specialized_kernel<G, StoreF32Scaled>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              sm90::kernel_smem_bytes<G, StoreF32Scaled>));
        return sm90::sm_count();
    }();
    const sm90::RungLaunch l = sm90::prepare_rung_launch<G>(p, maps_a, maps_b, sms, rung);
    const int k_blocks = sm90::ceil_div(l.k, G::kBK);
    // The scale maps are encoded per call (about a microsecond of host work,
    // inside the timed region), keyed on nothing: the pointers change per call.
    const StoreF32Scaled::Params params{static_cast<float*>(p.c), k_blocks,
                                        make_scale_map(scale_a, l.m, k_blocks, G::kBM),
                                        make_scale_map(scale_b, l.tiles_n, k_blocks, 4)};
    sm90::warp_specialized_kernel<G, StoreF32Scaled>
        <<<l.grid, G::kThreads, sm90::kernel_smem_bytes<G, StoreF32Scaled>, sm90::stream_of(p)>>>(
            *l.map_a, *l.map_b, params, l.m, l.n, l.k, l.tiles_m, l.tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

void dispatch(const GemmProblem& p, const float* scale_a, const float* scale_b, const char* rung) {
    switch (p.type) {
        case DType::e4m3: return launch<K38<DType::e4m3>>(p, scale_a, scale_b, rung);
        case DType::e5m2: return launch<K38<DType::e5m2>>(p, scale_a, scale_b, rung);
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
