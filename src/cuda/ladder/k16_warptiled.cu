// k16_warptiled: warp tiling and a multi-stage cp.async pipeline, the best
// CUDA-core fp32 kernel of the ladder (siboehm's kernel 10 idea, CUTLASS's SIMT
// hierarchy: block tile -> warp tile -> thread tile).
// Run alone: rigel ladder --backend cuda --rungs k16_warptiled --dtype f32 --sizes 4096
//
// Adds over k15:
// - Warp tiling. The 128 x 256 block tile is split into 8 warp tiles of
//   32 x 128; inside a warp the 32 lanes form a 4 x 8 grid, and each lane's
//   8 x 16 outputs are 2 x 4 sub-tiles of 4 x 4 placed 16 rows and 32 columns
//   apart. For each k a lane reads 2 LDS.128 of A and 4 of B for 128 FMA (k15:
//   4 for 64); across the warp the A reads are 4 distinct 16-byte words and
//   the B reads 8 distinct, contiguous ones: every LDS.128 is a single
//   conflict-free shared-memory wavefront (k15's B reads needed four).
// - Pipelining. Tiles arrive by cp.async (Ampere's asynchronous copy, kept on
//   Hopper) into kStages shared-memory stages: while the warps multiply one
//   stage, the copies of the next kStages - 1 tiles are in flight, so global
//   latency is hidden instead of being paid at every barrier as in k12-k15.
//   cp.async writes shared memory without passing through registers, and its
//   ignore-src predicate zero-fills copies that fall outside the matrix.
// - Fragments double-buffered in registers (k21's order): step k + 1's are
//   read while step k's 128 FMA run, and the next tile's first right after the
//   barrier that publishes it, before the current tile's last step.
// - A is transposed on the way in with 4-byte copies laid out so that a warp's
//   32 stores hit 32 different banks (a_tile rows padded to 132 words) and its
//   global reads are 4 rows x 32 bytes, whole sectors. B uses 16-byte copies
//   when N % 4 == 0 and B, C are 16-byte aligned; otherwise the same kernel
//   copies B in 4 bytes and writes C a word at a time (a template flag), so
//   any M, N, K runs. A needs no alignment beyond its 4-byte elements.
// - Tile order: blocks walk the output in groups of kGroupM tile rows, so the
//   blocks resident at one time share rows of A and columns of B in L2.
// - The k-slice is 8 deep (k15's): the unrolled main loop stays near 1100
//   instructions (18 KB of code, as in the first version); 16 deep would halve
//   the barriers but double the loop the instruction caches must stream.
// Why 8 x 16 per thread: the first version (128 x 128 tile, 8 x 8 per thread,
// 128 registers, two blocks per SM) stayed well short of the predicted share
// of cuBLAS with a main loop 87 % FFMA. Its 4 LDS.128 per 64 FMA bring 2 KB
// into a warp's registers; at the full FMA rate of all four sub-partitions
// that is 128 bytes per clock, the SM's whole shared-memory data path if
// broadcasts save bank reads but not delivery (a suspicion, not measured). Here 6 LDS.128 feed 128 FMA, a
// quarter less data per FMA, and the loop is 91 % FFMA, paid for with one
// block of 8 warps per SM (128 accumulators need about 230 registers): the
// fragment double buffer and 4 stages keep those warps fed, and each has 128
// independent FMA per k.
// Bottleneck: instruction issue on the FMA pipe. ptxas (CUDA 13.0): 229
// registers (211 on the scalar path), no spills, 48.5 KB of shared memory, one
// block of 8 warps per SM; the main loop is 1024 FFMA among 1126 instructions
// per 8-deep tile (48 LDS.128, 6 LDGSTS, the rest addresses, predicates and
// the barrier), so issue caps it near 91 % of the fp32 peak; the barrier (one
// block per SM: nothing else issues while it waits) and register-bank
// conflicts among FFMA operands take some more.
// Prediction: 0.90-0.97 of cuBLAS fp32 at 4096^3, about 46-50 Tflop/s
// (69-75 % of the fp32 peak).
// Measured: README.md, "The climb" and "4096 x 4096 x 4096" (k16_warptiled).
#include "cuda/check.cuh"
#include "cuda/ladder/simt_rungs.cuh"

namespace rigel::cuda {
namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 256;
constexpr int kTileK = 8;
constexpr int kStages = 4;
constexpr int kWarpsM = 4;
constexpr int kWarpsN = 2;
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kWarpTileM = kTileM / kWarpsM;  // 32
constexpr int kWarpTileN = kTileN / kWarpsN;  // 128
constexpr int kLanesM = 4;                    // a warp's lanes as a 4 x 8 grid, n fastest
constexpr int kLanesN = 8;
constexpr int kFrag = 4;                                        // a 4 x 4 sub-tile: one LDS.128 per operand
constexpr int kRepM = kWarpTileM / (kLanesM * kFrag);           // 2 sub-tiles down
constexpr int kRepN = kWarpTileN / (kLanesN * kFrag);           // 4 sub-tiles across
// Tile rows per group of the block order: at N = 4096 a group is 8 x 16 = 128
// tiles, about one wave of the 132 blocks (1 per SM) resident at once.
constexpr int kGroupM = 8;
// a_tile is [k][m] with rows of kTileM + 4 words: 132 = 4 (mod 32 banks), so the
// stores of lanes (k, m) = (lane % 8, lane / 8) land in bank 4 k + m: all 32
// different. 132 words is also a multiple of 16 bytes, as LDS.128 needs.
constexpr int kALd = kTileM + 4;
constexpr int kAStage = kTileK * kALd;    // floats
constexpr int kBStage = kTileK * kTileN;  // floats
constexpr std::size_t kSmemBytes = sizeof(float) * kStages * (kAStage + kBStage);
// A copies: a warp copies 4 rows x 8 consecutive k per instruction.
constexpr int kACopies = kTileM * kTileK / kThreads;           // 4 per thread per tile
constexpr int kARowStep = kThreads / 32 / (kTileK / 8) * 4;    // rows between a thread's copies: 32
// B copies: 16-byte chunks, a warp copies half of a 1 KB row of the tile per instruction.
constexpr int kBVecCopies = kTileK * kTileN / 4 / kThreads;     // 2
constexpr int kBVecRowStep = kThreads / (kTileN / 4);           // 4
constexpr int kBScalarCopies = kTileK * kTileN / kThreads;      // 8 on the scalar path
constexpr int kBScalarRowStep = kThreads / kTileN;              // 1

static_assert(kThreads == 256);
static_assert(kWarpTileM == kRepM * kLanesM * kFrag && kWarpTileN == kRepN * kLanesN * kFrag);
static_assert(kLanesM * kLanesN == 32);
static_assert(kTileK % 8 == 0 && (kThreads / 32) % (kTileK / 8) == 0,
              "the A copy layout: each warp owns one 8-wide k group in every copy step");
static_assert(kACopies * kARowStep == kTileM);
static_assert(kBVecCopies * kBVecRowStep == kTileK && kBScalarCopies * kBScalarRowStep == kTileK);
static_assert(kALd % 32 == 4 && kALd % 4 == 0);
static_assert((sizeof(float) * kAStage) % 16 == 0 && (sizeof(float) * kBStage) % 16 == 0,
              "every stage must start on 16 bytes for the 16-byte copies and LDS.128");
static_assert(kStages >= 2 && kTileK >= 2, "the fragment double buffer crosses the barrier inside a tile");
static_assert(kSmemBytes <= 227 * 1024, "the stages must fit in one SM's shared memory");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// PTX ISA, cp.async: with the ignore-src predicate set, the copy writes zeros
// to shared memory and reads nothing, so a tile element outside the matrix
// costs no bounds branch. The source is passed as a global address (an
// integer): a skipped copy may name an address past the matrix, which is
// never read, and no out-of-range pointer is formed in C++.
__device__ __forceinline__ void cp_async_4(float* dst, std::uint64_t src, bool valid) {
    asm volatile(
        "{\n .reg .pred skip;\n setp.eq.u32 skip, %2, 0;\n"
        " cp.async.ca.shared.global [%0], [%1], 4, skip;\n}\n" ::"r"(smem_addr(dst)),
        "l"(src), "r"(static_cast<unsigned>(valid))
        : "memory");
}

__device__ __forceinline__ void cp_async_16(float* dst, std::uint64_t src, bool valid) {
    asm volatile(
        "{\n .reg .pred skip;\n setp.eq.u32 skip, %2, 0;\n"
        " cp.async.cg.shared.global [%0], [%1], 16, skip;\n}\n" ::"r"(smem_addr(dst)),
        "l"(src), "r"(static_cast<unsigned>(valid))
        : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

template <bool kVector>
__global__ void __launch_bounds__(kThreads, 1)
    k16_kernel(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b,
               float* __restrict__ c, int tiles_m, int tiles_n) {
    extern __shared__ __align__(16) float smem[];
    float* const a_tiles = smem;                       // kStages x [kTileK][kALd]
    float* const b_tiles = smem + kStages * kAStage;   // kStages x [kTileK][kTileN]

    const int t = static_cast<int>(threadIdx.x);
    const int warp = t / 32;
    const int lane = t % 32;

    // Grouped block order: kGroupM tile rows at a time, down the rows first.
    const int bid = static_cast<int>(blockIdx.x);
    const int per_group = kGroupM * tiles_n;
    const int first_m = bid / per_group * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    const int in_group = bid % per_group;
    const int m0 = (first_m + in_group % group_rows) * kTileM;
    const int n0 = in_group / group_rows * kTileN;

    // This thread's A copies: rows a_row + s * kARowStep of the tile, column a_k
    // of its k-slice. Addresses are kept as integers (see cp_async_4) and step
    // along k by one tile per copy_tile call.
    const int a_row = warp / (kTileK / 8) * 4 + lane / 8;
    const int a_k = warp % (kTileK / 8) * 8 + lane % 8;
    const int a_rows_left = m - m0 - a_row;  // copy s is inside M when s * kARowStep < a_rows_left
    std::uint64_t a_addr = reinterpret_cast<std::uint64_t>(a) +
                           sizeof(float) * (static_cast<std::uint64_t>(m0 + a_row) * k + a_k);
    const std::uint64_t a_step = sizeof(float) * static_cast<std::uint64_t>(kARowStep) * k;

    // This thread's B copies: rows b_row + s * (row step), columns b_col (.. + 3).
    constexpr int b_row_step = kVector ? kBVecRowStep : kBScalarRowStep;
    const int b_row = kVector ? t / (kTileN / 4) : t / kTileN;
    const int b_col = kVector ? t % (kTileN / 4) * 4 : t % kTileN;
    const bool b_col_in = n0 + b_col < n;  // vector path: N % 4 == 0, so all four columns or none
    std::uint64_t b_addr = reinterpret_cast<std::uint64_t>(b) +
                           sizeof(float) * (static_cast<std::uint64_t>(b_row) * n + n0 + b_col);
    const std::uint64_t b_step = sizeof(float) * static_cast<std::uint64_t>(b_row_step) * n;
    const std::uint64_t b_tile_step = sizeof(float) * static_cast<std::uint64_t>(kTileK) * n;

    // Copies the next tile along k into `stage` and advances the addresses.
    // copy_k_left counts down (K minus the tile's first k) so that it never
    // passes 2^31 - 1 when K is near it.
    int copy_k_left = k;
    auto copy_tile = [&](int stage) {
        float* const a_dst = a_tiles + stage * kAStage + a_k * kALd + a_row;
        const int a_left = a_k < copy_k_left ? a_rows_left : 0;
        std::uint64_t src = a_addr;
#pragma unroll
        for (int s = 0; s < kACopies; ++s) {
            cp_async_4(a_dst + s * kARowStep, src, s * kARowStep < a_left);
            src += a_step;
        }
        float* const b_dst = b_tiles + stage * kBStage + b_row * kTileN + b_col;
        const int b_rows_left = b_col_in ? copy_k_left - b_row : 0;  // rows of this column still inside K
        src = b_addr;
#pragma unroll
        for (int s = 0; s < kTileK / b_row_step; ++s) {
            if constexpr (kVector)
                cp_async_16(b_dst + s * b_row_step * kTileN, src, s * b_row_step < b_rows_left);
            else
                cp_async_4(b_dst + s * b_row_step * kTileN, src, s * b_row_step < b_rows_left);
            src += b_step;
        }
        a_addr += sizeof(float) * kTileK;
        b_addr += b_tile_step;
        copy_k_left -= kTileK;
    };

    // This lane's fragments: rows frag_m + {0, 16} and columns frag_n + {0, 32, 64, 96} of the block tile.
    const int lane_m = lane / kLanesN;
    const int lane_n = lane % kLanesN;
    const int frag_m = warp / kWarpsN * kWarpTileM + lane_m * kFrag;
    const int frag_n = warp % kWarpsN * kWarpTileN + lane_n * kFrag;

    // Fragments are double-buffered: those of step kk + 1 are read while step
    // kk's 128 FFMA run, so shared-memory latency hides behind arithmetic, and
    // the next tile's first ones are read right after the barrier that makes
    // it visible, before the current tile's last step.
    float4 a_frag[2][kRepM];
    float4 b_frag[2][kRepN];
    auto load_frags = [&](int buf, int stage, int kk) {
        const float* const a_src = a_tiles + stage * kAStage + kk * kALd + frag_m;
        const float* const b_src = b_tiles + stage * kBStage + kk * kTileN + frag_n;
#pragma unroll
        for (int r = 0; r < kRepM; ++r) a_frag[buf][r] = *reinterpret_cast<const float4*>(a_src + r * kLanesM * kFrag);
#pragma unroll
        for (int r = 0; r < kRepN; ++r) b_frag[buf][r] = *reinterpret_cast<const float4*>(b_src + r * kLanesN * kFrag);
    };

    float acc[kRepM][kRepN][kFrag][kFrag] = {};

    const int k_tiles = simt::ceil_div(k, kTileK);
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < k_tiles) copy_tile(s);
        cp_async_commit();  // empty groups keep the count uniform for the waits below
    }
    cp_async_wait<kStages - 2>();  // tile 0 has landed
    __syncthreads();
    load_frags(0, 0, 0);

    // Stage of tile kt, and of tile kt + kStages - 1 (the stage tile kt - 1 used).
    int read_stage = 0;
    int write_stage = kStages - 1;
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int next_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
#pragma unroll
        for (int kk = 0; kk < kTileK; ++kk) {
            if (kk == kTileK - 1) {
                // kStages - 1 + kt + 1 groups are committed; allowing kStages - 2
                // in flight means tile kt + 1 has landed. After the barrier it is
                // visible to all, and every thread has read its last fragments
                // of tile kt (at kk = kTileK - 2) and of tile kt - 1.
                cp_async_wait<kStages - 2>();
                __syncthreads();
            }
            // Past the last tile this reads a stale stage, never used.
            if (kk + 1 < kTileK)
                load_frags((kk + 1) % 2, read_stage, kk + 1);
            else
                load_frags((kk + 1) % 2, next_stage, 0);
            if (kk == 0) {
                // Into the stage of tile kt - 1, last read before the barrier of iteration kt - 1.
                if (kt + kStages - 1 < k_tiles) copy_tile(write_stage);
                cp_async_commit();
            }
            const float4* const af = a_frag[kk % 2];
            const float4* const bf = b_frag[kk % 2];
#pragma unroll
            for (int rm = 0; rm < kRepM; ++rm) {
                const float av[kFrag] = {af[rm].x, af[rm].y, af[rm].z, af[rm].w};
#pragma unroll
                for (int rn = 0; rn < kRepN; ++rn) {
                    const float bv[kFrag] = {bf[rn].x, bf[rn].y, bf[rn].z, bf[rn].w};
#pragma unroll
                    for (int i = 0; i < kFrag; ++i)
#pragma unroll
                        for (int j = 0; j < kFrag; ++j) acc[rm][rn][i][j] = fmaf(av[i], bv[j], acc[rm][rn][i][j]);
                }
            }
        }
        read_stage = next_stage;
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
    }
    cp_async_wait<0>();  // only empty groups remain; leave nothing in flight at exit

#pragma unroll
    for (int rm = 0; rm < kRepM; ++rm)
#pragma unroll
        for (int i = 0; i < kFrag; ++i) {
            const int row = m0 + frag_m + rm * kLanesM * kFrag + i;
            if (row >= m) continue;
            float* const c_row = c + static_cast<std::size_t>(row) * n;
#pragma unroll
            for (int rn = 0; rn < kRepN; ++rn) {
                const int col = n0 + frag_n + rn * kLanesN * kFrag;
                const float* v = acc[rm][rn][i];
                if constexpr (kVector) {
                    if (col < n) *reinterpret_cast<float4*>(c_row + col) = make_float4(v[0], v[1], v[2], v[3]);
                } else {
#pragma unroll
                    for (int j = 0; j < kFrag; ++j)
                        if (col + j < n) c_row[col + j] = v[j];
                }
            }
        }
}

template <bool kVector>
void launch(const GemmProblem& p, unsigned blocks, int tiles_m, int tiles_n) {
    // More than 48 KB of dynamic shared memory must be opted into, once per kernel.
    static const bool opted_in = [] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(k16_kernel<kVector>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(kSmemBytes)));
        return true;
    }();
    (void)opted_in;
    k16_kernel<kVector><<<blocks, kThreads, kSmemBytes, simt::stream_of(p)>>>(
        static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<const float*>(p.a),
        static_cast<const float*>(p.b), static_cast<float*>(p.c), tiles_m, tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::string k16_warptiled_check(const GemmProblem& p) { return simt::check_tile_grid(p, kTileM, kTileN); }

void k16_warptiled(const GemmProblem& p) {
    const unsigned blocks = simt::tile_grid(p, kTileM, kTileN);
    const int tiles_m = simt::ceil_div(static_cast<int>(p.m), kTileM);
    const int tiles_n = simt::ceil_div(static_cast<int>(p.n), kTileN);
    const bool vector = p.n % 4 == 0 && simt::aligned16(p.b) && simt::aligned16(p.c);
    if (vector)
        launch<true>(p, blocks, tiles_m, tiles_n);
    else
        launch<false>(p, blocks, tiles_m, tiles_n);
}

}  // namespace rigel::cuda
