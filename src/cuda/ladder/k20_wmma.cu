// k20_wmma: the first tensor-core rung, through CUDA's wmma API, in f16 and
// bf16 (fp32 accumulation, fp32 C). B is K x N (BLayout::k_by_n), as on the
// SIMT rungs.
// Run alone: rigel ladder --backend cuda --rungs k20_wmma --dtype f16 --sizes 4096
//
// Adds over the SIMT rungs: the multiply-adds move from the FMA pipes to the
// tensor cores. A warp multiplies 16x16x16 fragments (wmma::mma_sync, two
// HMMA.16816 in SASS: 4096 multiply-adds) loaded from shared memory. Around
// it, the SIMT rungs' structure: a 128 x 128 block tile, K32 per step, 8 warps
// each owning 64 x 32 of C (4 x 2 accumulator fragments), two shared buffers
// with the next tile fetched into registers while the current one is
// multiplied (16-byte path; one barrier per K step), rows padded by 16 bytes so that
// fragment loads do not conflict on banks.
// The API hides what the loads become. SASS (nvcc 13.0, sm_90a): f16
// fragments load with LDSM (ldmatrix, .MT88 for B), but bf16 ones with generic
// 32-bit LD.E plus MOVM transposes: the PTX is wmma.load...bf16 on a generic
// address (f16 gets the shared one), so bf16 spends 4x the load instructions
// of f16 here. k21 controls this by hand.
// Tails: tiles are zero-filled in shared memory past M, N and K, and each
// accumulator goes through a per-warp shared scratch tile, from which only the
// in-range part is copied to C; whole fragments inside C go straight to global
// memory when N % 8 == 0 (store_matrix_sync wants 32-byte aligned rows).
// Global loads are 16-byte vectors when K % 8 == 0 and N % 8 == 0, element by
// element otherwise.
// Why faster: the tensor cores' rate; the fragment layout stays opaque.
// Bottleneck: with one fragment load per 16x16 tile, shared-memory traffic per
// mma is high and global latency is covered only by one register-staged tile
// and two blocks per SM (one for bf16, below); the tensor cores idle much of
// the time.
// Prediction: f16 150-300 Tflop/s at 4096^3 (20-40 % of cuBLAS), bf16 below
// f16 (its loads, and half the warps per SM); both far above the SIMT rungs,
// far below k21.
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k20_wmma, f16 and bf16).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "cuda/ladder/tensor_rungs.cuh"

namespace rigel::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kBM = 128;
constexpr int kBN = 128;
constexpr int kBK = 32;
constexpr int kWarpsM = 2;
constexpr int kWarpsN = 4;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kFrag = 16;                       // wmma m16n16k16
constexpr int kWarpM = kBM / kWarpsM;           // 64
constexpr int kWarpN = kBN / kWarpsN;           // 32
constexpr int kFragsM = kWarpM / kFrag;         // 4
constexpr int kFragsN = kWarpN / kFrag;         // 2
constexpr int kVecElems = 8;                    // 16 bytes of 16-bit elements
// 8 elements (16 bytes) of padding: row strides of 80 and 272 bytes put the 8
// rows of a fragment load in 8 different 16-byte bank groups.
constexpr int kPad = 8;
constexpr int kALd = kBK + kPad;
constexpr int kBLd = kBN + kPad;
constexpr int kAVecs = kBM * kBK / kVecElems / kThreads;  // per thread per tile
constexpr int kBVecs = kBK * kBN / kVecElems / kThreads;

static_assert(kBM % (kWarpsM * kFrag) == 0 && kBN % (kWarpsN * kFrag) == 0 && kBK % kFrag == 0,
              "warp tiles are whole fragments");
static_assert(kBM * kBK % (kVecElems * kThreads) == 0 && kBK * kBN % (kVecElems * kThreads) == 0,
              "every thread moves the same number of 16-byte pieces");
static_assert((kALd * 2) % 16 == 0 && (kBLd * 2) % 16 == 0, "wmma::load_matrix_sync wants ldm a multiple of 16 bytes");

struct Tiles {
    std::uint16_t a[2][kBM][kALd];
    std::uint16_t b[2][kBK][kBLd];
};
constexpr int kScratchFloats = kFrag * kFrag;  // one fragment per warp in the epilogue
static_assert(sizeof(Tiles) >= sizeof(float) * kScratchFloats * kThreads / 32, "scratch fits in the tiles");
static_assert(sizeof(Tiles) <= 48 * 1024, "static shared memory");

// 8 consecutive elements of a row, zero from `limit` on.
__device__ __forceinline__ uint4 load8_elementwise(const std::uint16_t* row, std::int64_t at, std::int64_t limit) {
    std::uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const std::uint32_t lo = at + 2 * i < limit ? row[at + 2 * i] : 0u;
        const std::uint32_t hi = at + 2 * i + 1 < limit ? row[at + 2 * i + 1] : 0u;
        w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// Two blocks of 8 warps per SM need at most 128 registers per thread. f16
// fits; bf16's generic fragment loads and MOVM transposes (see the top) spill
// at 128, so bf16 runs one block per SM with the registers it needs.
template <class T>
constexpr int kMinBlocks = std::is_same_v<T, __half> ? 2 : 1;

// T: __half or __nv_bfloat16 (the fragment type; operands are moved as bits).
// kVec: K % 8 == 0, N % 8 == 0 and 16-byte aligned bases.
template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads, kMinBlocks<T>)
    k20_kernel(const std::uint16_t* __restrict__ a, const std::uint16_t* __restrict__ b, float* __restrict__ c,
               int m, int n, int k, int tiles_m, int tiles_n, bool direct_store) {
    __shared__ __align__(128) unsigned char raw[sizeof(Tiles)];
    Tiles& s = *reinterpret_cast<Tiles*>(raw);

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid / 32;
    const int lane = tid % 32;
    const mma::TileCoord tile =
        mma::tile_coord(static_cast<int>(blockIdx.x), tiles_m, tiles_n, tensor::kRasterGroup);
    // Unsigned: a row index past the last tile's end may pass 2^31 - 1 (M up
    // to 2^31 - 1 is allowed), never 2^32; 64-bit costs registers here.
    const unsigned m0 = static_cast<unsigned>(tile.m) * kBM;
    const unsigned n0 = static_cast<unsigned>(tile.n) * kBN;
    const unsigned um = static_cast<unsigned>(m);
    const unsigned un = static_cast<unsigned>(n);
    const int wm0 = (warp % kWarpsM) * kWarpM;
    const int wn0 = (warp / kWarpsM) * kWarpN;
    const int k_tiles = tensor::ceil_div(k, kBK);

    // Tile kt of A (kBM x kBK) and B (kBK x kBN) into registers, zero outside.
    uint4 ra[kAVecs];
    uint4 rb[kBVecs];
    auto fetch = [&](int kt) {
#pragma unroll
        for (int i = 0; i < kAVecs; ++i) {
            const int q = tid + i * kThreads;
            const unsigned row = m0 + q / (kBK / kVecElems);
            const int col = kt * kBK + (q % (kBK / kVecElems)) * kVecElems;
            const std::uint16_t* src = a + static_cast<std::int64_t>(row) * k;
            if (row >= um)
                ra[i] = make_uint4(0, 0, 0, 0);
            else if constexpr (kVec)
                ra[i] = col < k ? *reinterpret_cast<const uint4*>(src + col) : make_uint4(0, 0, 0, 0);
            else
                ra[i] = load8_elementwise(src, col, k);
        }
#pragma unroll
        for (int i = 0; i < kBVecs; ++i) {
            const int q = tid + i * kThreads;
            const int row = kt * kBK + q / (kBN / kVecElems);
            const unsigned col = n0 + (q % (kBN / kVecElems)) * kVecElems;
            const std::uint16_t* src = b + static_cast<std::int64_t>(row) * n;
            if (row >= k)
                rb[i] = make_uint4(0, 0, 0, 0);
            else if constexpr (kVec)
                rb[i] = col < un ? *reinterpret_cast<const uint4*>(src + col) : make_uint4(0, 0, 0, 0);
            else
                rb[i] = load8_elementwise(src, col, n);
        }
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int i = 0; i < kAVecs; ++i) {
            const int q = tid + i * kThreads;
            *reinterpret_cast<uint4*>(&s.a[buf][q / (kBK / kVecElems)][(q % (kBK / kVecElems)) * kVecElems]) = ra[i];
        }
#pragma unroll
        for (int i = 0; i < kBVecs; ++i) {
            const int q = tid + i * kThreads;
            *reinterpret_cast<uint4*>(&s.b[buf][q / (kBN / kVecElems)][(q % (kBN / kVecElems)) * kVecElems]) = rb[i];
        }
    };

    wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> acc[kFragsM][kFragsN];
#pragma unroll
    for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    fetch(0);
    stash(0);
    __syncthreads();
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int buf = kt % 2;
        // 16-byte loads are in flight while this tile is multiplied; the
        // element-wise fallback loads after it (its 32 scalar loads held
        // across the math would cost more registers than a block has).
        if constexpr (kVec)
            if (kt + 1 < k_tiles) fetch(kt + 1);
#pragma unroll
        for (int kk = 0; kk < kBK; kk += kFrag) {
            // B fragments for the whole step, A one at a time: two blocks of
            // 8 warps fit on an SM only below 128 registers per thread.
            wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::row_major> bf[kFragsN];
#pragma unroll
            for (int j = 0; j < kFragsN; ++j)
                wmma::load_matrix_sync(bf[j], reinterpret_cast<const T*>(&s.b[buf][kk][wn0 + j * kFrag]), kBLd);
#pragma unroll
            for (int i = 0; i < kFragsM; ++i) {
                wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major> af;
                wmma::load_matrix_sync(af, reinterpret_cast<const T*>(&s.a[buf][wm0 + i * kFrag][kk]), kALd);
#pragma unroll
                for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], af, bf[j], acc[i][j]);
            }
        }
        // The other buffer was last read before the previous barrier.
        if (kt + 1 < k_tiles) {
            if constexpr (!kVec) fetch(kt + 1);
            stash((kt + 1) % 2);
        }
        __syncthreads();
    }

    // Epilogue. The loop ended on a barrier, so the tiles are free for the
    // per-warp scratch.
    float* scratch = reinterpret_cast<float*>(raw) + warp * kScratchFloats;
#pragma unroll
    for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) {
            const unsigned row0 = m0 + wm0 + i * kFrag;
            const unsigned col0 = n0 + wn0 + j * kFrag;
            if (direct_store && row0 + kFrag <= um && col0 + kFrag <= un) {
                wmma::store_matrix_sync(c + static_cast<std::int64_t>(row0) * n + col0, acc[i][j],
                                        static_cast<unsigned>(n), wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(scratch, acc[i][j], kFrag, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < kScratchFloats; e += 32) {
                    const unsigned row = row0 + e / kFrag;
                    const unsigned col = col0 + e % kFrag;
                    if (row < um && col < un) c[static_cast<std::int64_t>(row) * n + col] = scratch[e];
                }
                __syncwarp();
            }
        }
}

template <class T>
void launch(const GemmProblem& p) {
    const bool vec = p.k % kVecElems == 0 && p.n % kVecElems == 0 && tensor::aligned(p.a, 16) &&
                     tensor::aligned(p.b, 16);
    const bool direct_store = p.n % 8 == 0 && tensor::aligned(p.c, 32);
    const unsigned blocks = tensor::tile_grid(p, kBM, kBN);
    const int tiles_m = tensor::ceil_div(static_cast<int>(p.m), kBM);
    const int tiles_n = tensor::ceil_div(static_cast<int>(p.n), kBN);
    auto* kernel = vec ? &k20_kernel<T, true> : &k20_kernel<T, false>;
    kernel<<<blocks, kThreads, 0, tensor::stream_of(p)>>>(
        static_cast<const std::uint16_t*>(p.a), static_cast<const std::uint16_t*>(p.b), static_cast<float*>(p.c),
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), tiles_m, tiles_n, direct_store);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::string k20_wmma_check(const GemmProblem& p) { return tensor::check_tile_grid(p, kBM, kBN); }

void k20_wmma(const GemmProblem& p) {
    if (p.type == DType::f16)
        launch<__half>(p);
    else if (p.type == DType::bf16)
        launch<__nv_bfloat16>(p);
    else
        throw std::invalid_argument("k20_wmma takes f16 and bf16, not " + std::string(name(p.type)));
}

}  // namespace rigel::cuda
