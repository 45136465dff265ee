// k37_wgmma_splitk: k32/k33 with K split across CTAs when the output has too
// few tiles to occupy the GPU.
// Kernel: warp_specialized.cuh, Schedule::split_k, Accumulation::tensor_core,
// 128 x 256 x 64 tiles (bf16, f16) or 128 x 256 x 128 (e4m3, e5m2), 4 stages,
// one producer and 2 consumer warpgroups, then a reduction kernel in this
// file; with one split, k32's/k33's persistent_grouped configuration.
// Run alone: rigel ladder --backend cuda --rungs k37_wgmma_splitk --dtype bf16 --sizes 16x4096x4096
//
// Adds over k32 (bf16, f16) and k33 (e4m3, e5m2), same 128 x 256 tile and
// 4-stage warp-specialized ring (warp_specialized.cuh, Schedule::split_k): the
// grid is tiles x splits. CTA (tile, s) multiplies only its share of K, a
// contiguous run of whole k-tiles (64 of K for bf16/f16, 128 for fp8; the last
// split also takes the rest, ragged end included), and stores its fp32 partial
// tile into slab s of a workspace [splits][M][N]. A second small kernel then
// adds the slabs in the fixed order 0, 1, ..., splits - 1 and writes every
// element of C, so the result does not depend on which CTA finished first (no
// atomics). It is launched as a programmatic dependent of the GEMM (the GEMM
// lets it be scheduled at once; it waits in griddepcontrol.wait until the
// GEMM's stores are visible), so no launch gap sits between the two. A
// consumer whose 64 rows all lie past M (M <= 64) issues no wgmma: the 128-row
// tile then costs the tensor cores what a 64-row tile would, without a second
// tile shape.
// Splits (k37_split_count, k37_splits.hpp): 1 when the tiles fill the machine (then k37
// is k32/k33 itself, persistent grid); otherwise
//     splits = max(1, min(floor(SMs / tiles), floor(k_tiles / 4)))
// with SMs queried from the device. One CTA fits per SM (192 KB of stages, the
// whole register file), so tiles x splits <= SMs keeps the grid to one wave:
// ceil(SMs / tiles) would start a second wave of a few CTAs that costs as much
// as the first. Each split keeps at least 4 k-tiles, one pass of the ring, so
// the pipeline still fills. The workspace is sized once for the largest case
// (splits x M x N <= SMs x 128 x 256 floats, 17 MB on 132 SMs) and reused.
// Why: at 128 x 256 a skinny LLM shape has few tiles: 16 x 4096 x 4096 has 16,
// 128 x 7168 x 16384 has 28, so k30-k35 leave 104-116 of the 132 SMs idle
// on them. Split 8 and 4 ways, 128 and 112 SMs work.
// Prediction (H200, ~4.8 TB/s HBM): 16 x 4096 x 4096 bf16 is bound by reading
// B once, 32 MB in about 7 us, plus the ring's first fill and the reduction
// (2 MB, from L2): 10-14 us, 40-55 Tflop/s, at or above cuBLAS; e4m3 reads
// half the bytes: 60-90 Tflop/s. 128 x 7168 x 16384: B is 235 MB in bf16,
// about 49 us, while each of the 112 CTAs has 64 k-tiles of tensor work
// (~40-47 us at 1.75 GHz), so 450-550 Tflop/s; e4m3 reads 117 MB (~25 us) for
// 32 k-tiles a CTA: 800-1000 Tflop/s. On shapes whose tiles fill the GPU,
// k32's and k33's numbers.
// Bottleneck: HBM on the skinniest shapes; with floor(SMs / tiles) splits up
// to tiles - 1 SMs stay idle (28 tiles: 112 of 132 SMs busy); a stream-K
// division of the k-tiles would use them all. On the skinniest shape 16 rows
// use 1/8 of each 128-row tile (the idle-consumer skip halves that waste at
// best), and the reduction kernel's pass over splits x M x N is not free:
// there the H200 stayed below the prediction.
// Measured: README.md, "Hopper rungs against cuBLAS across shapes", rows
// k37_wgmma_splitk (skinny shapes), and "4096 x 4096 x 4096".
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/device_cache.hpp"
#include "cuda/hopper/k37_splits.hpp"
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/warp_specialized.cuh"

namespace rigel::cuda {
namespace {

using namespace sm90;

template <DType T>
using SplitK = WarpSpecialized<T, 256, 4, Schedule::split_k, Accumulation::tensor_core>;
// k32's (bf16, f16) and k33's (e4m3, e5m2) configuration: problems whose tiles
// fill the GPU run it unchanged.
template <DType T>
using Whole = WarpSpecialized<T, 256, 4, Schedule::persistent_grouped, Accumulation::tensor_core>;

constexpr int kSumThreads = 256;

// The partial tiles' home, allocated on first use at its largest size (the
// heuristic keeps splits x tiles <= SMs and a tile holds 128 x 256 floats), so
// no timed call allocates; freed by cuda::release_device_caches().
float* split_parts = nullptr;
std::size_t split_floats = 0;

void release_split_workspace() noexcept {
    if (split_parts) (void)cudaFree(split_parts);
    split_parts = nullptr;
    split_floats = 0;
}

float* split_workspace(std::size_t floats_needed, int sms, std::size_t tile_floats) {
    if (split_parts == nullptr) {
        register_release(&release_split_workspace);
        split_floats = static_cast<std::size_t>(sms) * tile_floats;
        RIGEL_CUDA_CHECK(cudaMalloc(&split_parts, split_floats * sizeof(float)));
    }
    if (floats_needed > split_floats)
        throw std::logic_error("k37_wgmma_splitk: the split workspace is smaller than splits x M x N");
    return split_parts;
}

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float4 add(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// c[i] = parts[0][i] + parts[1][i] + ... + parts[splits - 1][i], in that order,
// for all `count` elements (V = float4 when M x N is a multiple of 4 and C is
// 16-byte aligned, else float). Every element of C is written.
template <class V>
__global__ void __launch_bounds__(kSumThreads)
    sum_splits_kernel(const V* __restrict__ parts, V* __restrict__ c, std::int64_t count, int splits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent: wait until the GEMM grid has
    // finished and its partial tiles are visible (a no-op otherwise).
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        V sum = parts[i];
        for (int s = 1; s < splits; ++s) sum = add(sum, parts[s * count + i]);
        c[i] = sum;
    }
}

template <class V>
void launch_sum_splits(const float* parts, float* c, std::int64_t elems, int splits, int sms, cudaStream_t stream) {
    const std::int64_t count = elems / static_cast<std::int64_t>(sizeof(V) / sizeof(float));
    const std::int64_t blocks = std::min<std::int64_t>((count - 1) / kSumThreads + 1, std::int64_t{8} * sms);
    cudaLaunchAttribute attr[1]{};
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(blocks));
    cfg.blockDim = dim3(kSumThreads);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    RIGEL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, sum_splits_kernel<V>, reinterpret_cast<const V*>(parts),
                                        reinterpret_cast<V*>(c), count, splits));
}

template <DType T>
void run_split_k(const GemmProblem& p, const char* rung) {
    using G = SplitK<T>;
    static TensorMapCache maps_a, maps_b;
    const int sms = prepare_warp_specialized<G>();

    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int tiles_m = ceil_div(m, G::kBM);
    const int tiles_n = ceil_div(n, G::kBN);
    const std::int64_t tiles = static_cast<std::int64_t>(tiles_m) * tiles_n;
    const int splits = k37_split_count(tiles, ceil_div(k, G::kBK), sms);
    if (splits == 1) return launch_warp_specialized<Whole<T>>(p, rung);  // writes all of C itself

    require_alignment(p, rung);
    const std::int64_t elems = static_cast<std::int64_t>(m) * n;
    float* const parts =
        split_workspace(static_cast<std::size_t>(splits) * static_cast<std::size_t>(elems), sms,
                        static_cast<std::size_t>(G::kBM) * G::kBN);
    const CUtensorMap& ma = maps_a.get(p.a, T, p.m, p.k, G::kBM);
    const CUtensorMap& mb = maps_b.get(p.b, T, p.n, p.k, G::kBN);
    const cudaStream_t stream = stream_of(p);
    // One wave: tiles x splits <= SMs, so splits x M <= SMs x 128 stays far
    // below the kernel's 2^31 limit on slab rows.
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
    warp_specialized_kernel<G><<<grid, G::kThreads, G::kSmemBytes, stream>>>(ma, mb, StoreF32::Params{parts}, m, n, k,
                                                                             tiles_m, tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();

    float* const c = static_cast<float*>(p.c);
    const bool vec4 = elems % 4 == 0 && reinterpret_cast<std::uintptr_t>(c) % 16 == 0;  // slabs are then aligned too
    if (vec4)
        launch_sum_splits<float4>(parts, c, elems, splits, sms, stream);
    else
        launch_sum_splits<float>(parts, c, elems, splits, sms, stream);
}

}  // namespace

void k37_wgmma_splitk(const GemmProblem& p) {
    constexpr const char* kId = "k37_wgmma_splitk";
    switch (p.type) {
        case DType::bf16: return run_split_k<DType::bf16>(p, kId);
        case DType::f16: return run_split_k<DType::f16>(p, kId);
        case DType::e4m3: return run_split_k<DType::e4m3>(p, kId);
        case DType::e5m2: return run_split_k<DType::e5m2>(p, kId);
        default:
            throw std::invalid_argument(std::string(kId) + " takes bf16, f16, e4m3 and e5m2, not " +
                                        std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
