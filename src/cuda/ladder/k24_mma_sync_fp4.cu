// k24_mma_sync_fp4: fp4 on Hopper, which has no fp4 matrix instruction:
// e2m1 operands, and MXFP4 (OCP MX v1.0: blocks of 32 e2m1 along K sharing
// one e8m0 power-of-two scale), unpacked in the kernel to f16 and multiplied
// by mma.sync.m16n8k16 with fp32 accumulation. A is M x K, B is N x K
// (BLayout::n_by_k), C is M x N fp32; storage as core/dtype.hpp says (packed
// nibbles, then mxfp4's scale bytes, in one buffer per operand).
// Run alone: rigel ladder --backend cuda --rungs k24_mma_sync_fp4 --dtype e2m1 --sizes 4096
//
// Adds over k21: a quarter of f16's bytes moved from memory and through
// shared memory (a 64-byte row of a stage holds 128 elements of K), paid for
// by unpacking in registers. A lane reads 4 bytes of a row per 32-element
// block (plain 32-bit shared loads from 64-byte rows, swizzled like k23's: no
// bank conflicts; no ldmatrix) and turns the 8 nibbles into four f16x2
// fragment registers, two per k16 step, with 4 integer operations and 2 byte
// permutes per step (fp4_fragments.cuh: e2m1 times 2^-14 is an exact f16 bit
// pattern, e2m1's 0.5 an f16 subnormal, which mma.sync keeps exactly on the
// H200; the epilogue multiplies by 2^28). A lane's 8 elements are a
// permutation of the mma's K index, the same for A and B, so no data moves
// between lanes.
// MXFP4: each 32-element block is one chunk of a stage and two k16 steps. Its
// products go into a temporary fp32 accumulator (the first mma adds to zero),
// which is then multiplied by 2^(scale_a + scale_b - 254) and added to the
// main accumulator in one fused multiply-add: the per-block promotion that an
// MX tensor core does in hardware, here 2 fp32 instructions per accumulator
// per block. The partial sum is exact, so this is exact up to the one
// rounding of the add, unless the scaled partial leaves fp32's range (scale
// products beyond 2^+-127, or |C| below 2^-98 where the running sum, kept
// times 2^-28, turns subnormal); rigel's recipes stay far inside. Scales are
// read with ordinary loads one tile ahead, converted once to fp32 factors,
// and staged in shared memory with their tile.
// Pipeline: 8 warps, 4 stages of 128 elements of K, one barrier per stage,
// tiles rastered in groups of 8 tile rows (k21's order). e2m1: k21's 128 x 256
// block tile of 64 x 64 warp tiles (24 KB a stage); mxfp4 needs 64 more
// registers for the partial sums: 128 x 128 of 64 x 32 (16 KB of nibbles and
// 4 KB of factors a stage).
// Tails: any M, N, K >= 1. K % 32 == 0 (rows of whole 16-byte chunks) from
// 16-byte aligned bases runs on cp.async, zero-filling rows past M or N and
// chunks past K; any other K, odd K included (a row then starts in the middle
// of a byte), loads each chunk from the bytes that hold it, shifted by a
// nibble when needed, zeros past K (slower, same math).
// Bottleneck: issue slots, not the tensor cores. ptxas for sm_90a (cp.async
// path, no spills): e2m1 issues 3.3 other instructions per HMMA.16816 (208
// registers), mxfp4 9.7 (198 registers; 4 of them the promotion's FMUL and
// FFMA). At the mma.sync rate (about 2/3 of wgmma's) one HMMA.16816 occupies a
// scheduler for about 6 clocks.
// Prediction: "footprint only": compute stays at the f16 mma.sync rate at
// best, with a quarter of the operand bytes: e2m1 0.8-1.0x k21's f16
// Tflop/s; mxfp4 0.5-0.8x (issue-bound).
// On the H200 e2m1 landed in that range and mxfp4 below it: the promotion and
// the scale loads cost more issue slots than estimated. Verdict: footprint
// only (rigel's rule wants >= 1.5x the fp16 rate): on Hopper fp4 buys a
// quarter of the bytes, not speed.
// Measured: README.md, "4096 x 4096 x 4096" and "8192 x 8192 x 8192"
// (k24_mma_sync_fp4, e2m1 and mxfp4).
#include <cuda_runtime.h>

#include "cuda/ladder/fp4_fragments.cuh"
#include "cuda/ladder/tensor_rungs.cuh"

namespace rigel::cuda {
namespace {

// Shared layout per stage: A's kBM rows and B's kBN rows of 64 bytes (128
// elements of K: kChunks = 4 MX blocks of 16 bytes), swizzled as
// TileConfig::smem_offset; for mxfp4 then the fp32 factors, block-major:
// factor of block j of A row r at [j][r], of B row n at [j][kBM + n].
template <class TileCfg, bool Scaled>
struct Fp4Config {
    using Cfg = TileCfg;
    static constexpr bool kScaled = Scaled;
    static constexpr int kBlocksPerStage = Cfg::kChunks;
    static constexpr int kElemsPerStage = kBlocksPerStage * fp4::kBlockElems;
    static constexpr int kFactorLines = Cfg::kBM + Cfg::kBN;
    static constexpr int kStageBytes = Cfg::kStageBytes + (kScaled ? kBlocksPerStage * kFactorLines * 4 : 0);
    static constexpr int kSmemBytes = Cfg::kStages * kStageBytes;
    static_assert(Cfg::kRowBytes == kBlocksPerStage * fp4::kBlockBytes, "a chunk is one MX block");
    static_assert(!kScaled || Cfg::kThreads == kFactorLines,
                  "one thread loads the scales of one row of A or B per stage");
};
// e2m1: k21's 128 x 256 block tile of 64 x 64 warp tiles (128 accumulators a
// thread, fewer unpacks per mma). mxfp4 needs a second set of accumulators for
// the block's partial sums: 128 x 128 of 64 x 32 (k23's tile).
using E2m1Config = Fp4Config<mma::TileConfig<128, 256, 64, 2, 4, 4>, false>;
using Mxfp4Config = Fp4Config<mma::TileConfig<128, 128, 64, 2, 4, 4>, true>;

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, d += a * b, and the form
// with C = 0 that starts a block's partial sum.
__device__ __forceinline__ void mma_f16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_f16_from_zero(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %10, %10, %10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

__device__ __forceinline__ std::uint32_t lds32(std::uint32_t addr) {
    std::uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}
__device__ __forceinline__ float lds_f32(std::uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}
__device__ __forceinline__ float2 lds_f32x2(std::uint32_t addr) {
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr));
    return v;
}

template <class Config, bool kVec>
__global__ void __launch_bounds__(Config::Cfg::kThreads, 1)
    fp4_mma_kernel(const std::uint8_t* __restrict__ a, const std::uint8_t* __restrict__ b, float* __restrict__ c,
                   int m, int n, std::int64_t k, int tiles_m, int tiles_n, bool pair_store) {
    using Cfg = typename Config::Cfg;
    constexpr bool kScaled = Config::kScaled;
    constexpr int kStageBytes = Config::kStageBytes;
    constexpr int kBlocksPerStage = Config::kBlocksPerStage;
    constexpr int kElemsPerStage = Config::kElemsPerStage;
    constexpr int kFactorLines = Config::kFactorLines;
    extern __shared__ __align__(128) std::uint8_t smem[];

    const int tid = static_cast<int>(threadIdx.x);
    const int lane = tid % mma::kWarpSize;
    const int warp = tid / mma::kWarpSize;
    const int g = mma::lane_group(lane);
    const int q = mma::lane_quad(lane);
    const mma::TileCoord tile = mma::tile_coord(static_cast<int>(blockIdx.x), tiles_m, tiles_n, tensor::kRasterGroup);
    const std::int64_t m0 = static_cast<std::int64_t>(tile.m) * Cfg::kBM;
    const std::int64_t n0 = static_cast<std::int64_t>(tile.n) * Cfg::kBN;
    const int k_tiles = static_cast<int>((k - 1) / kElemsPerStage + 1);
    const std::uint32_t smem0 = tensor::smem_addr(smem);

    // ---- loading: this thread's chunk column and rows, as in k21 ----
    const int row0 = Cfg::load_row(tid, 0);
    const int chunk = Cfg::load_chunk(tid, 0);
    const std::uint32_t dst0 = static_cast<std::uint32_t>(Cfg::smem_offset(row0, chunk));
    const int a_rows_left = static_cast<int>(m - m0) - row0;
    const int b_rows_left = static_cast<int>(n - n0) - row0;

    // One chunk (one MX block of one row) of K tile kt into shared address dst.
    auto load_chunk = [&](std::uint32_t dst, const std::uint8_t* base, std::int64_t row, bool row_in, int kt) {
        const std::int64_t k0 = static_cast<std::int64_t>(kt) * kElemsPerStage + chunk * fp4::kBlockElems;
        if constexpr (kVec) {
            // K % 32 == 0: rows are k / 2 bytes, chunks 16-byte aligned and wholly inside or outside K.
            const bool in = row_in && k0 < k;
            const std::uintptr_t src = reinterpret_cast<std::uintptr_t>(base) +
                                       static_cast<std::uintptr_t>(in ? row * (k / 2) + k0 / 2 : 0);
            tensor::cp_async_16(dst, reinterpret_cast<const void*>(src), in ? fp4::kBlockBytes : 0);
        } else {
            std::uint32_t w[4] = {0, 0, 0, 0};
            if (row_in) fp4::load_nibble_chunk(base, row * k, k0, k, w);
            *reinterpret_cast<uint4*>(smem + (dst - smem0)) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    };
    auto load_tile = [&](int kt) {
        const std::uint32_t dst = smem0 + static_cast<std::uint32_t>(Cfg::stage_of(kt) * kStageBytes) + dst0;
        constexpr int kStepBytes = Cfg::kLoadRowStep * Cfg::kRowBytes;
        // The element-wise path stays rolled (its loads would take the registers).
        constexpr int kUnroll = kVec ? Cfg::kAChunksPerThread : 1;
#pragma unroll kUnroll
        for (int i = 0; i < Cfg::kAChunksPerThread; ++i)
            load_chunk(dst + i * kStepBytes, a, m0 + row0 + i * Cfg::kLoadRowStep, i * Cfg::kLoadRowStep < a_rows_left,
                       kt);
#pragma unroll kUnroll
        for (int i = 0; i < Cfg::kBChunksPerThread; ++i)
            load_chunk(dst + Cfg::kATileBytes + i * kStepBytes, b, n0 + row0 + i * Cfg::kLoadRowStep,
                       i * Cfg::kLoadRowStep < b_rows_left, kt);
    };

    // ---- mxfp4 scales: thread t owns row t of A (t < kBM) or row t - kBM of B ----
    const std::int64_t k_blocks = (k - 1) / fp4::kBlockElems + 1;
    const bool owns_a = tid < Cfg::kBM;
    const std::int64_t scale_line = owns_a ? m0 + tid : n0 + (tid - Cfg::kBM);
    const bool scale_line_in = scale_line < (owns_a ? m : n);
    // The scale bytes follow the nibbles: at ceil(lines * K / 2).
    const std::uint8_t* scale_base =
        owns_a ? a + (static_cast<std::int64_t>(m) * k + 1) / 2 : b + (static_cast<std::int64_t>(n) * k + 1) / 2;
    // The codes of this thread's line for K tile kt, byte j = block j of the
    // tile; code 0 (any finite factor would do) where the elements are zeros.
    auto load_scale_codes = [&](int kt) -> std::uint32_t {
        std::uint32_t codes = 0;
        if (scale_line_in) {
#pragma unroll
            for (int j = 0; j < kBlocksPerStage; ++j) {
                const std::int64_t blk = static_cast<std::int64_t>(kt) * kBlocksPerStage + j;
                if (blk < k_blocks) codes |= static_cast<std::uint32_t>(scale_base[scale_line * k_blocks + blk]) << (8 * j);
            }
        }
        return codes;
    };
    auto store_factors = [&](int kt, std::uint32_t codes) {
        float* f = reinterpret_cast<float*>(smem + Cfg::stage_of(kt) * kStageBytes + Cfg::kStageBytes);
#pragma unroll
        for (int j = 0; j < kBlocksPerStage; ++j) f[j * kFactorLines + tid] = fp4::block_scale_factor((codes >> (8 * j)) & 0xFFu);
    };

    // ---- fragments: lane (g, q) reads bytes [4q, 4q + 4) of its rows' block ----
    // Rows g and g + 8 of each m16 tile of A, row g of each n8 tile of B; warp
    // origins and tile offsets are multiples of 8, so the swizzle is that of g.
    const std::uint32_t lane_off = static_cast<std::uint32_t>(g * Cfg::kRowBytes + 4 * q);
    const std::uint32_t lane_swz = static_cast<std::uint32_t>(Cfg::swizzle(g) * mma::kChunkBytes);
    const std::uint32_t a_warp_off = static_cast<std::uint32_t>(Cfg::warp_m0(warp) * Cfg::kRowBytes) + lane_off;
    const std::uint32_t b_warp_off =
        static_cast<std::uint32_t>(Cfg::kATileBytes + Cfg::warp_n0(warp) * Cfg::kRowBytes) + lane_off;

    float acc[Cfg::kMTiles][Cfg::kNTiles][4];
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
        for (int nj = 0; nj < Cfg::kNTiles; ++nj)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[mi][nj][i] = 0.0f;

    // Prologue: tiles 0 .. kStages - 2, one commit group each (empty past the end).
#pragma unroll
    for (int s = 0; s < Cfg::kStages - 1; ++s) {
        if (s < k_tiles) {
            load_tile(s);
            if constexpr (kScaled) store_factors(s, load_scale_codes(s));
        }
        tensor::cp_async_commit();
    }

    for (int kt = 0; kt < k_tiles; ++kt) {
        // Tile kt has landed (groups 0..kt of the kStages - 1 + kt committed),
        // and every warp is done with tile kt - 1, whose stage is refilled now.
        tensor::cp_async_wait<Cfg::kStages - 2>();
        __syncthreads();
        const int next = kt + Cfg::kStages - 1;
        [[maybe_unused]] std::uint32_t next_codes = 0;
        if (next < k_tiles) {
            if constexpr (kScaled) next_codes = load_scale_codes(next);  // stored after the math
            load_tile(next);
        }
        tensor::cp_async_commit();

        const std::uint32_t stage = smem0 + static_cast<std::uint32_t>(Cfg::stage_of(kt) * kStageBytes);
#pragma unroll
        for (int blk = 0; blk < kBlocksPerStage; ++blk) {
            const std::uint32_t chunk_off = static_cast<std::uint32_t>(blk * mma::kChunkBytes) ^ lane_swz;
            std::uint32_t aw[Cfg::kMTiles][2];
            std::uint32_t bw[Cfg::kNTiles];
#pragma unroll
            for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    aw[mi][h] = lds32(stage + a_warp_off + (mi * mma::kMmaM + 8 * h) * Cfg::kRowBytes + chunk_off);
#pragma unroll
            for (int nj = 0; nj < Cfg::kNTiles; ++nj)
                bw[nj] = lds32(stage + b_warp_off + nj * mma::kMmaN * Cfg::kRowBytes + chunk_off);

            float part[Cfg::kMTiles][Cfg::kNTiles][4];
#pragma unroll
            for (int step = 0; step < 2; ++step) {
                std::uint32_t af[Cfg::kMTiles][4];
                std::uint32_t bf[Cfg::kNTiles][2];
#pragma unroll
                for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
                    std::uint32_t lo[2], hi[2];  // rows g and g + 8
                    fp4::e2m1x8_to_f16x2(aw[mi][0], step, lo);
                    fp4::e2m1x8_to_f16x2(aw[mi][1], step, hi);
                    af[mi][0] = lo[0];
                    af[mi][1] = hi[0];
                    af[mi][2] = lo[1];
                    af[mi][3] = hi[1];
                }
#pragma unroll
                for (int nj = 0; nj < Cfg::kNTiles; ++nj) fp4::e2m1x8_to_f16x2(bw[nj], step, bf[nj]);
#pragma unroll
                for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
                    for (int nn = 0; nn < Cfg::kNTiles; ++nn) {
                        const int nj = (mi % 2) ? Cfg::kNTiles - 1 - nn : nn;  // serpentine: reuse B registers
                        if constexpr (kScaled) {
                            if (step == 0)
                                mma_f16_from_zero(part[mi][nj], af[mi], bf[nj]);
                            else
                                mma_f16(part[mi][nj], af[mi], bf[nj]);
                        } else {
                            mma_f16(acc[mi][nj], af[mi], bf[nj]);
                        }
                    }
            }

            if constexpr (kScaled) {
                // The block's promotion: factors of rows g, g + 8 and columns 2q, 2q + 1.
                const std::uint32_t factors =
                    stage + static_cast<std::uint32_t>(Cfg::kStageBytes + blk * kFactorLines * 4);
                float fa[Cfg::kMTiles][2];
                float2 fb[Cfg::kNTiles];
#pragma unroll
                for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        fa[mi][h] = lds_f32(factors + 4 * (Cfg::warp_m0(warp) + mi * mma::kMmaM + 8 * h + g));
#pragma unroll
                for (int nj = 0; nj < Cfg::kNTiles; ++nj)
                    fb[nj] = lds_f32x2(factors + 4 * (Cfg::kBM + Cfg::warp_n0(warp) + nj * mma::kMmaN + 2 * q));
#pragma unroll
                for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
                    for (int nj = 0; nj < Cfg::kNTiles; ++nj)
#pragma unroll
                        for (int i = 0; i < 4; ++i)
                            acc[mi][nj][i] = fp4::promote_block(acc[mi][nj][i], part[mi][nj][i], fa[mi][i >> 1],
                                                                (i & 1) ? fb[nj].y : fb[nj].x);
            }
        }

        // The scales of tile `next` go to the stage of tile kt - 1, free since
        // this iteration's barrier; they are read after the next one.
        if constexpr (kScaled)
            if (next < k_tiles) store_factors(next, next_codes);
    }
    tensor::cp_async_wait<0>();

    // Epilogue: the accumulators hold C * 2^-28 (both operands carried 2^-14);
    // c0 c1 (and c2 c3) are adjacent columns: one 8-byte store when N is even.
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
        for (int nj = 0; nj < Cfg::kNTiles; ++nj)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const std::int64_t row = m0 + Cfg::warp_m0(warp) + mi * mma::kMmaM + mma::acc_row(lane, 2 * h);
                const std::int64_t col = n0 + Cfg::warp_n0(warp) + nj * mma::kMmaN + mma::acc_col(lane, 2 * h);
                if (row >= m) continue;
                float* out = c + row * n + col;
                const float v0 = acc[mi][nj][2 * h] * fp4::kProductUnscale;
                const float v1 = acc[mi][nj][2 * h + 1] * fp4::kProductUnscale;
                if (pair_store && col + 1 < n) {
                    *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
                } else {
                    if (col < n) out[0] = v0;
                    if (col + 1 < n) out[1] = v1;
                }
            }
}

template <class Config, bool kVec>
void launch(const GemmProblem& p) {
    using Cfg = typename Config::Cfg;
    auto* kernel = &fp4_mma_kernel<Config, kVec>;
    // Above 48 KB a block's dynamic shared memory must be opted into, once.
    static const bool opted_in = [kernel] {
        RIGEL_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Config::kSmemBytes));
        return true;
    }();
    (void)opted_in;
    const int tiles_m = tensor::ceil_div(static_cast<int>(p.m), Cfg::kBM);
    const int tiles_n = tensor::ceil_div(static_cast<int>(p.n), Cfg::kBN);
    const bool pair_store = p.n % 2 == 0 && tensor::aligned(p.c, 8);
    kernel<<<tensor::tile_grid(p, Cfg::kBM, Cfg::kBN), Cfg::kThreads, Config::kSmemBytes, tensor::stream_of(p)>>>(
        static_cast<const std::uint8_t*>(p.a), static_cast<const std::uint8_t*>(p.b), static_cast<float*>(p.c),
        static_cast<int>(p.m), static_cast<int>(p.n), p.k, tiles_m, tiles_n, pair_store);
    RIGEL_CUDA_CHECK_LAUNCH();
}

// cp.async when every row is whole 16-byte chunks (K % 32 == 0) from 16-byte
// aligned bases; chunk by chunk from the bytes otherwise.
template <class Config>
void launch_for_k(const GemmProblem& p) {
    if (p.k % fp4::kBlockElems == 0 && tensor::aligned(p.a, 16) && tensor::aligned(p.b, 16))
        launch<Config, true>(p);
    else
        launch<Config, false>(p);
}

}  // namespace

std::string k24_mma_sync_fp4_check(const GemmProblem& p) {
    if (p.type == DType::e2m1) return tensor::check_tile_grid(p, E2m1Config::Cfg::kBM, E2m1Config::Cfg::kBN);
    return tensor::check_tile_grid(p, Mxfp4Config::Cfg::kBM, Mxfp4Config::Cfg::kBN);
}

void k24_mma_sync_fp4(const GemmProblem& p) {
    if (p.type == DType::e2m1)
        launch_for_k<E2m1Config>(p);
    else if (p.type == DType::mxfp4)
        launch_for_k<Mxfp4Config>(p);
    else
        throw std::invalid_argument("k24_mma_sync_fp4 takes e2m1 and mxfp4, not " + std::string(name(p.type)));
}

}  // namespace rigel::cuda
