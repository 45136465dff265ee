// k21_mma_sync: the warp-level tensor-core path done properly, in f16 and bf16
// (fp32 accumulation, fp32 C). B is N x K (BLayout::n_by_k).
// Run alone: rigel ladder --backend cuda --rungs k21_mma_sync --dtype bf16 --sizes 4096
//
// Adds over k20 (wmma): the instruction under wmma, mma.sync.m16n8k16, issued
// by hand with the fragments loaded by ldmatrix.x4 from XOR-swizzled shared
// memory (no padding, no bank conflicts), fed by a 4-stage cp.async pipeline
// (16-byte cp.async.cg, L1 bypassed, tiles arriving while three others are
// being multiplied), a 128 x 256 block tile of 8 warps each owning 64 x 64 of
// C (128 fp32 accumulators per thread), 128 bytes of K (K64) per stage, so
// four k16 steps per barrier, fragments double-buffered across the k16 steps
// (step s + 1's ldmatrix issued before step s's mma, the next tile's first
// right after the barrier), and tiles rastered in groups of 8 tile rows for
// L2 reuse. Per k16 step a warp issues 8 ldmatrix.x4 for 32 mma (k20's
// 64 x 32 warp tile: 6 for 16 on f16, and 32-bit generic loads on bf16).
// Why faster: wmma hides the fragment layout and loads each 16x16 fragment
// separately, with no control over the shared-memory layout or the overlap of
// copies and math; here global latency is covered by the stages and
// shared-memory latency by the fragment double buffer.
// Tails: any M, N (chunks outside M or N are zero-filled by cp.async with
// src-size 0; stores are guarded). K * 2 % 16 == 0 runs on cp.async; other K
// (127, 4097, ...) or unaligned bases load element by element into the same
// shared layout (slower, same math).
// Bottleneck: the mma.sync rate of the tensor cores (on Hopper about 2/3 of
// wgmma's, as the FlashAttention-3 paper reports), then shared-memory
// bandwidth: per k16 step and SM, 32 KB of ldmatrix and 12 KB of cp.async
// writes take 344 clocks at 128 bytes per clock, against 384 for the 256 mma
// at that 2/3 rate; and, at 1 block of 8 warps per SM, the barriers.
// This path cannot reach the wgmma peak: cuBLAS uses wgmma with TMA, and the
// card holds both at its 700 W limit, so the ratio also carries the clocks.
// Prediction: 0.61-0.65 of cuBLAS in bf16 and f16 at 4096^3 (about 415-440
// Tflop/s). K64 stages (192 KB) halve the barriers per mma against 64-byte
// stages and double the bytes in flight; the loader keeps one address per
// operand instead of one per row (ptxas: 248 registers, no spills).
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k21_mma_sync), and
// "8192 x 8192 x 8192".
#include <cuda_runtime.h>

#include "cuda/ladder/tensor_rungs.cuh"

namespace rigel::cuda {
namespace {

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (PTX ISA
// 9.7.14.5.8): a = four .b32 of two 16-bit elements each, b = two, c/d = four
// f32. Fragment maps: see mma_layout.cuh.
struct MmaF16 {
    static constexpr int kElemBytes = 2;
    __device__ __forceinline__ static void mma(float (&d)[4], const std::uint32_t (&a)[4],
                                               const std::uint32_t (&b)[2]) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

struct MmaBf16 {
    static constexpr int kElemBytes = 2;
    __device__ __forceinline__ static void mma(float (&d)[4], const std::uint32_t (&a)[4],
                                               const std::uint32_t (&b)[2]) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

using Cfg = mma::MmaSyncTileConfig;

}  // namespace

std::string k21_mma_sync_check(const GemmProblem& p) { return tensor::check_tile_grid(p, Cfg::kBM, Cfg::kBN); }

void k21_mma_sync(const GemmProblem& p) {
    if (p.type == DType::f16)
        tensor::launch_mma_sync<Cfg, MmaF16>(p);
    else if (p.type == DType::bf16)
        tensor::launch_mma_sync<Cfg, MmaBf16>(p);
    else
        throw std::invalid_argument("k21_mma_sync takes f16 and bf16, not " + std::string(name(p.type)));
}

}  // namespace rigel::cuda
