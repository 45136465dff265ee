// The classic (pre-Hopper) tensor-core rungs: their entry points, the PTX
// wrappers they share (cp.async, ldmatrix), and the multistage mma.sync kernel
// that k21, k22 and k23 instantiate with their own instruction. The registry
// table is in tensor_registry.cu; each rung's file holds its instruction and
// its opening comment. The index maps are in mma_layout.cuh (host-tested).
#pragma once
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/check.cuh"
#include "cuda/ladder/mma_layout.cuh"
#include "ladder/rung.hpp"

namespace rigel::cuda {

void k20_wmma(const GemmProblem& p);
void k21_mma_sync(const GemmProblem& p);
void k22_mma_sync_tf32(const GemmProblem& p);
void k23_mma_sync_e4m3(const GemmProblem& p);
void k24_mma_sync_fp4(const GemmProblem& p);

// All five take any M, N, K >= 1; they refuse only a grid larger than CUDA
// allows, which no output that fits in device memory reaches.
std::string k20_wmma_check(const GemmProblem& p);
std::string k21_mma_sync_check(const GemmProblem& p);
std::string k22_mma_sync_tf32_check(const GemmProblem& p);
std::string k23_mma_sync_e4m3_check(const GemmProblem& p);
std::string k24_mma_sync_fp4_check(const GemmProblem& p);

namespace tensor {

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a - 1) / b + 1; }

inline cudaStream_t stream_of(const GemmProblem& p) { return static_cast<cudaStream_t>(p.stream); }

inline bool aligned(const void* ptr, std::uintptr_t bytes) {
    return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0;
}

// One block per output tile on a one-dimensional grid (gridDim.y stops at
// 65535, gridDim.x at 2^31 - 1).
inline std::string check_tile_grid(const GemmProblem& p, int tile_m, int tile_n) {
    const std::int64_t tiles = ((p.m - 1) / tile_m + 1) * ((p.n - 1) / tile_n + 1);
    if (tiles > INT_MAX)
        return "ceil(M/" + std::to_string(tile_m) + ") * ceil(N/" + std::to_string(tile_n) +
               ") output tiles exceed the 2^31 - 1 blocks of a one-dimensional grid";
    return {};
}

inline unsigned tile_grid(const GemmProblem& p, int tile_m, int tile_n) {
    if (const std::string why = check_tile_grid(p, tile_m, tile_n); !why.empty()) throw std::invalid_argument(why);
    return static_cast<unsigned>(ceil_div(static_cast<int>(p.m), tile_m)) *
           static_cast<unsigned>(ceil_div(static_cast<int>(p.n), tile_n));
}

// Tile rows per raster group (mma::tile_coord).
constexpr int kRasterGroup = 8;

// ---- PTX wrappers (PTX ISA: "cp.async", "ldmatrix") ----

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1 (.cg). Bytes past src_bytes are
// zero-filled: src_bytes = 0 writes a 16-byte zero chunk and reads nothing.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
                 "l"(__cvta_generic_to_global(src)), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most `Pending` of this thread's committed groups are in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

// Four 8x8 b16 matrices; lane 8j + r gives the address of row r of matrix j.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// ---- the multistage mma.sync kernel (k21, k22, k23) ----
//
// Op supplies kElemBytes and mma(d, a, b): one m16n8 x 32-byte-K tensor-core
// instruction with fp32 accumulation. A is M x K row-major, B is N x K
// row-major (n_by_k), C is M x N fp32. kVec: every 16-byte chunk of a row is
// either wholly inside K or wholly outside (K * kElemBytes % 16 == 0, 16-byte
// aligned bases), so chunks go by cp.async with src-size 0 for the outside
// ones; otherwise each element is loaded on its own, zero past M, N or K, and
// the chunk is stored with an ordinary shared store.

// The 16 bytes of a row starting at byte kb, element by element; zero past
// k_bytes (K elements of E bytes each).
template <int E>
__device__ __forceinline__ uint4 load_chunk_elementwise(const std::uint8_t* row, std::int64_t kb,
                                                        std::int64_t k_bytes) {
    std::uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < mma::kChunkBytes / E; ++e) {
        const std::int64_t at = kb + static_cast<std::int64_t>(e) * E;
        std::uint32_t v = 0;
        if (at < k_bytes) {
            if constexpr (E == 4)
                v = *reinterpret_cast<const std::uint32_t*>(row + at);
            else if constexpr (E == 2)
                v = *reinterpret_cast<const std::uint16_t*>(row + at);
            else
                v = row[at];
        }
        const int bit = e * E * 8;  // little-endian: element e at byte e * E
        w[bit / 32] |= v << (bit % 32);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <class Cfg, class Op, bool kVec>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    mma_sync_kernel(const std::uint8_t* __restrict__ a, const std::uint8_t* __restrict__ b, float* __restrict__ c,
                    int m, int n, std::int64_t k_bytes, int tiles_m, int tiles_n, bool pair_store) {
    constexpr int E = Op::kElemBytes;
    static_assert(mma::kChunkBytes % E == 0, "elements do not straddle chunks");
    extern __shared__ __align__(128) std::uint8_t smem[];

    const int tid = static_cast<int>(threadIdx.x);
    const int lane = tid % mma::kWarpSize;
    const int warp = tid / mma::kWarpSize;
    const mma::TileCoord tile = mma::tile_coord(static_cast<int>(blockIdx.x), tiles_m, tiles_n, kRasterGroup);
    // 64-bit: a row index past the last tile's end may pass 2^31 - 1.
    const std::int64_t m0 = static_cast<std::int64_t>(tile.m) * Cfg::kBM;
    const std::int64_t n0 = static_cast<std::int64_t>(tile.n) * Cfg::kBN;
    const int k_tiles = static_cast<int>((k_bytes - 1) / Cfg::kRowBytes + 1);
    const std::uint32_t smem0 = smem_addr(smem);

    // This thread's chunks: rows row0 + i * kLoadRowStep of the A and B tiles,
    // all in one chunk column. Row starts are kept as integer addresses: a row
    // past M or N is never read (its copy reads nothing and stores zeros), and
    // no pointer past the matrix is formed. kLoadRowStep is a whole number of
    // swizzle periods, so copy i lands i * kLoadRowStep rows below copy 0.
    const int row0 = Cfg::load_row(tid, 0);
    const int chunk = Cfg::load_chunk(tid, 0);
    const std::uintptr_t a_row0 = reinterpret_cast<std::uintptr_t>(a) + (m0 + row0) * k_bytes;
    const std::uintptr_t b_row0 = reinterpret_cast<std::uintptr_t>(b) + (n0 + row0) * k_bytes;
    const std::int64_t row_step = Cfg::kLoadRowStep * k_bytes;
    // Copy i is inside M when i * kLoadRowStep < a_rows_left (above -kBM: the tile starts inside M).
    const int a_rows_left = static_cast<int>(m - m0) - row0;
    const int b_rows_left = static_cast<int>(n - n0) - row0;
    const std::uint32_t dst0 = static_cast<std::uint32_t>(Cfg::smem_offset(row0, chunk));

    // One 16-byte chunk: bytes [kb, kb + 16) of the row at `row` into shared
    // address dst; zeros where the row is outside the matrix or past K.
    auto load_chunk = [&](std::uint32_t dst, std::uintptr_t row, bool row_in, std::int64_t kb,
                          const std::uint8_t* base) {
        if constexpr (kVec) {
            const bool in = row_in && kb < k_bytes;
            cp_async_16(dst, in ? reinterpret_cast<const std::uint8_t*>(row + kb) : base, in ? mma::kChunkBytes : 0);
        } else {
            const uint4 v = row_in ? load_chunk_elementwise<E>(reinterpret_cast<const std::uint8_t*>(row), kb, k_bytes)
                                   : make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(smem + (dst - smem0)) = v;
        }
    };

    // Copy K tile kt (bytes [kt * kRowBytes, +kRowBytes) of every row) into its stage.
    auto load_tile = [&](int kt) {
        const std::uint32_t dst = smem0 + static_cast<std::uint32_t>(Cfg::stage_of(kt) * Cfg::kStageBytes) + dst0;
        const std::int64_t kb = static_cast<std::int64_t>(kt) * Cfg::kRowBytes + chunk * mma::kChunkBytes;
        constexpr int kStepBytes = Cfg::kLoadRowStep * Cfg::kRowBytes;  // shared bytes between copies
        // The element-wise path stays rolled: unrolled, its loads of all
        // chunks at once would need more registers than the accumulators leave.
        constexpr int kUnroll = kVec ? Cfg::kBChunksPerThread : 1;
#pragma unroll kUnroll
        for (int i = 0; i < Cfg::kAChunksPerThread; ++i)
            load_chunk(dst + i * kStepBytes, a_row0 + static_cast<std::uintptr_t>(i * row_step),
                       i * Cfg::kLoadRowStep < a_rows_left, kb, a);
#pragma unroll kUnroll
        for (int i = 0; i < Cfg::kBChunksPerThread; ++i)
            load_chunk(dst + Cfg::kATileBytes + i * kStepBytes, b_row0 + static_cast<std::uintptr_t>(i * row_step),
                       i * Cfg::kLoadRowStep < b_rows_left, kb, b);
    };

    // ldmatrix row addresses inside a stage: the warp tile origin's rows are
    // multiples of 8, so the swizzle of row (origin + r) is that of r; the
    // lane's offset for k-step ks is its step-0 offset XOR ks * 32 bytes
    // (TileConfig::kstep_offset), one register per operand for all steps.
    const std::uint32_t a_lane_off = static_cast<std::uint32_t>(
        Cfg::warp_m0(warp) * Cfg::kRowBytes + Cfg::smem_offset(mma::a_ldsm_row(lane), mma::a_ldsm_chunk(lane, 0)));
    const std::uint32_t b_lane_off = static_cast<std::uint32_t>(
        Cfg::warp_n0(warp) * Cfg::kRowBytes + Cfg::smem_offset(mma::b_ldsm_row(lane), mma::b_ldsm_chunk(lane, 0)));

    std::uint32_t af[2][Cfg::kMTiles][4];
    std::uint32_t bf[2][Cfg::kNTiles][2];
    auto load_frags = [&](int buf, int kt, int ks) {
        const std::uint32_t stage = smem0 + static_cast<std::uint32_t>(Cfg::stage_of(kt) * Cfg::kStageBytes);
#pragma unroll
        for (int mi = 0; mi < Cfg::kMTiles; ++mi)
            ldmatrix_x4(af[buf][mi], stage + Cfg::kstep_offset(a_lane_off, ks) + mi * mma::kMmaM * Cfg::kRowBytes);
#pragma unroll
        for (int p = 0; p < Cfg::kNTiles / 2; ++p) {
            std::uint32_t r[4];
            ldmatrix_x4(r, stage + Cfg::kATileBytes + Cfg::kstep_offset(b_lane_off, ks) +
                               p * 2 * mma::kMmaN * Cfg::kRowBytes);
#pragma unroll
            for (int j = 0; j < 4; ++j) bf[buf][2 * p + mma::b_x4_tile(j)][mma::b_x4_half(j)] = r[j];
        }
    };

    float acc[Cfg::kMTiles][Cfg::kNTiles][4];
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
        for (int nj = 0; nj < Cfg::kNTiles; ++nj)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[mi][nj][i] = 0.0f;

    // Prologue: tiles 0 .. kStages-2 in flight, one commit group each (empty
    // groups past the last tile keep the count uniform).
#pragma unroll
    for (int s = 0; s < Cfg::kStages - 1; ++s) {
        if (s < k_tiles) load_tile(s);
        cp_async_commit();
    }
    cp_async_wait<Cfg::kStages - 2>();
    __syncthreads();
    load_frags(0, 0, 0);

    // Main loop. Groups committed before the wait in iteration kt:
    // (kStages - 1) + (kt + 1); tile kt + 1 is group kt + 1, so allowing
    // kStages - 2 in flight means it has landed. The tile loaded in iteration
    // kt goes to the stage of tile kt - 1, whose last fragments were read
    // before the barrier in the last k-step of iteration kt - 1
    // (tests/host/test_mma_layout.cpp replays this order with a model of
    // cp.async groups and barriers).
    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
        for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
            if (ks == Cfg::kKSteps - 1) {
                cp_async_wait<Cfg::kStages - 2>();
                __syncthreads();
            }
            // Fragments for the next k-step (the next tile's first after the
            // last one; past the last tile this reads a stale stage, unused).
            const int next_ks = (ks + 1) % Cfg::kKSteps;
            load_frags((ks + 1) % 2, next_ks == 0 ? kt + 1 : kt, next_ks);
            if (ks == 0) {
                if (kt + Cfg::kStages - 1 < k_tiles) load_tile(kt + Cfg::kStages - 1);
                cp_async_commit();
            }
#pragma unroll
            for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
                for (int nn = 0; nn < Cfg::kNTiles; ++nn) {
                    const int nj = (mi % 2) ? Cfg::kNTiles - 1 - nn : nn;  // serpentine: reuse B registers
                    Op::mma(acc[mi][nj], af[ks % 2][mi], bf[ks % 2][nj]);
                }
        }
    }
    cp_async_wait<0>();

    // Epilogue: straight from the accumulators, c0 c1 (and c2 c3) are two
    // adjacent columns: one 8-byte store when N is even.
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
                const float v0 = acc[mi][nj][2 * h];
                const float v1 = acc[mi][nj][2 * h + 1];
                if (pair_store && col + 1 < n) {
                    *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
                } else {
                    if (col < n) out[0] = v0;
                    if (col + 1 < n) out[1] = v1;
                }
            }
}

template <class Cfg, class Op, bool kVec>
void launch_mma_sync_vec(const GemmProblem& p, std::int64_t k_bytes) {
    auto* kernel = &mma_sync_kernel<Cfg, Op, kVec>;
    // Above 48 KB a block's dynamic shared memory must be opted into, once.
    static const bool opted_in = [kernel] {
        RIGEL_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
        return true;
    }();
    (void)opted_in;
    const int tiles_m = ceil_div(static_cast<int>(p.m), Cfg::kBM);
    const int tiles_n = ceil_div(static_cast<int>(p.n), Cfg::kBN);
    const bool pair_store = p.n % 2 == 0 && aligned(p.c, 8);
    kernel<<<tile_grid(p, Cfg::kBM, Cfg::kBN), Cfg::kThreads, Cfg::kSmemBytes, stream_of(p)>>>(
        static_cast<const std::uint8_t*>(p.a), static_cast<const std::uint8_t*>(p.b), static_cast<float*>(p.c),
        static_cast<int>(p.m), static_cast<int>(p.n), k_bytes, tiles_m, tiles_n, pair_store);
    RIGEL_CUDA_CHECK_LAUNCH();
}

// cp.async when every row is a whole number of 16-byte chunks from 16-byte
// aligned bases; element-wise loads otherwise (K = 127, 4097, ...).
template <class Cfg, class Op>
void launch_mma_sync(const GemmProblem& p) {
    const std::int64_t k_bytes = p.k * Op::kElemBytes;
    if (k_bytes % mma::kChunkBytes == 0 && aligned(p.a, mma::kChunkBytes) && aligned(p.b, mma::kChunkBytes))
        launch_mma_sync_vec<Cfg, Op, true>(p, k_bytes);
    else
        launch_mma_sync_vec<Cfg, Op, false>(p, k_bytes);
}

}  // namespace tensor
}  // namespace rigel::cuda
