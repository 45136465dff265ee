// k30_wgmma_tma: Hopper's own matrix path. wgmma reads both operands straight
// from shared memory, and TMA fills that memory, so no thread moves data.
// Kernel: k30_kernel in this file (no shared template): one warpgroup loads
// and computes, 128 x 128 x 64 tiles (bf16, f16), a 3-stage ring, 2 CTAs/SM.
// Run alone: rigel ladder --backend cuda --rungs k30_wgmma_tma --dtype bf16 --sizes 4096
//
// Adds over the mma.sync rungs: (1) wgmma.mma_async: one instruction for a
// whole warpgroup (4 warps, 128 threads) computes a 64 x 128 x 16 product (8x
// the work of an m16n8k16 per warp) and reads A and B from shared memory
// through 64-bit descriptors: no ldmatrix, no operand registers. It runs
// asynchronously: issue, then wait for a group. (2) TMA (cp.async.bulk.tensor):
// one thread asks the copy engine for a 128 x 64 tile; the engine computes the
// addresses, zero-fills what lies outside the matrix (M, N, K tails cost no
// code) and writes the tile in the 128-byte swizzle that wgmma reads without
// bank conflicts. Completion is counted in bytes on an mbarrier.
// Shape: one warpgroup per CTA computes a 128 x 128 tile of C as two m64n128k16
// halves (2 x 64 fp32 accumulators per thread), K in steps of 64 through a ring
// of 3 shared stages (32 KB each), so two CTAs fit on an SM and hide each
// other's barriers.
// Why faster: the tensor cores get their operands at shared-memory bandwidth
// without the register file in between, and the load path costs one thread.
// Bottleneck: the same warpgroup loads and computes. Each k-step ends with a
// CTA-wide barrier before the freed stage is refilled, and only one wgmma group
// stays in flight, so the tensor cores idle between groups; the epilogue stores
// straight from registers (8-byte stores). It falls behind most where K is
// long and the power limit lowers the clock.
// Prediction: about 350-450 Tflop/s in bf16 at 8192^3 on the power-limited
// H200 (roughly half to two thirds of cuBLAS), f16 the same. The H200 did
// better than predicted: two CTAs of one warpgroup each kept the tensor cores
// busier than this estimate of their idle time assumed.
// Measured: README.md, "The climb", "4096 x 4096 x 4096" and "Hopper rungs
// against cuBLAS across shapes", rows k30_wgmma_tma.
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/wgmma.cuh"

namespace rigel::cuda {
namespace {

using namespace sm90;

constexpr int kThreads = kWarpgroup;  // one warpgroup: it loads and it computes
constexpr int kBM = 128;              // two m64 halves
constexpr int kBN = 128;              // the wgmma N
constexpr int kStages = 3;
constexpr int kABytes = kBM * kRowBytes;   // 16 KB
constexpr int kBBytes = kBN * kRowBytes;   // 16 KB
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kSmemBytes = kStages * kStageBytes + kSwizzleAtom;  // + alignment slack

static_assert(kBM == 2 * kWgmmaM, "the warpgroup covers the tile's rows as two m64 wgmma halves");
static_assert(kABytes % kSwizzleAtom == 0 && kBBytes % kSwizzleAtom == 0,
              "every tile must start on a 1024-byte swizzle atom");
static_assert(kBN % 8 == 0 && kBN <= 256 && kBM <= 256, "wgmma N and TMA box limits");
static_assert(kStages >= 2, "the refill of stage kt-1 overlaps the wgmma on stage kt");
static_assert(2 * (kSmemBytes + 1024) <= 228 * 1024, "two CTAs per SM");

template <DType T>
__global__ void __launch_bounds__(kThreads, 2)
    k30_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
               float* __restrict__ c, int m, int n, int k, int tiles_m) {
#if RIGEL_SM90A_DEVICE
    constexpr int kBK = kRowBytes / elem_bytes(T);  // 64 elements of K per stage
    constexpr int kAcc = kBN / 2;                   // fp32 accumulators per thread per m64 half
    extern __shared__ unsigned char smem_raw[];
    __shared__ std::uint64_t full[kStages];
    unsigned char* const smem = align_to_atom(smem_raw);
    auto a_tile = [&](int s) { return smem + s * kStageBytes; };
    auto b_tile = [&](int s) { return smem + s * kStageBytes + kABytes; };

    const int row0 = static_cast<int>(blockIdx.x) % tiles_m * kBM;
    const int col0 = static_cast<int>(blockIdx.x) / tiles_m * kBN;
    const int k_tiles = ceil_div(k, kBK);

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);  // one arrival: the expect_tx
        fence_mbarrier_init();
    }
    __syncthreads();

    auto load = [&](int kt, int s) {  // thread 0 only
        mbar_arrive_expect_tx(&full[s], kStageBytes);
        tma_load_2d(a_tile(s), &map_a, &full[s], kt * kBK, row0);
        tma_load_2d(b_tile(s), &map_b, &full[s], kt * kBK, col0);
    };
    if (threadIdx.x == 0) {
        prefetch_tensor_map(&map_a);
        prefetch_tensor_map(&map_b);
        for (int s = 0; s < kStages && s < k_tiles; ++s) load(s, s);
    }

    float acc[2][kAcc];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[h][i] = 0.0f;

    auto ring = PipelineState<kStages>::consumer_start();
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int stage = ring.stage();
        mbar_wait(&full[stage], ring.phase());
        fence_registers(acc[0]);
        fence_registers(acc[1]);
        wgmma_fence();
        const std::uint64_t da = sw128_kmajor_desc(a_tile(stage));
        const std::uint64_t db = sw128_kmajor_desc(b_tile(stage));
#pragma unroll
        for (int j = 0; j < kKStepsPerTile; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)  // rows 64h..64h+63 start 64 rows x 128 B = 8 KB further
                Wgmma<T, kBN>::mma(acc[h], desc_k_step(desc_advance(da, h * kWgmmaM * kRowBytes), j),
                                   desc_k_step(db, j), 1);
        wgmma_commit();
        // Keep this group in flight; the one before it (stage kt-1) is done
        // after this wait, so that stage may be refilled with tile kt-1+S.
        wgmma_wait<1>();
        fence_registers(acc[0]);
        fence_registers(acc[1]);
        if (kt >= 1 && kt - 1 + kStages < k_tiles) {  // the same for every thread
            // Every warp has passed its wait: no wgmma still reads that stage.
            __syncthreads();
            if (threadIdx.x == 0) load(kt - 1 + kStages, ring.previous_stage());
        }
        ring.advance();
    }
    wgmma_wait<0>();
    fence_registers(acc[0]);
    fence_registers(acc[1]);

    store_accumulators<kBN>(acc[0], c, m, n, row0, col0);
    store_accumulators<kBN>(acc[1], c, m, n, row0 + kWgmmaM, col0);
#else
    (void)map_a, (void)map_b, (void)c, (void)m, (void)n, (void)k, (void)tiles_m;
    trap_without_sm90a("k30_wgmma_tma");
#endif
}

template <DType T>
void launch(const GemmProblem& p) {
    static TensorMapCache maps_a, maps_b;
    static const bool configured = [] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(k30_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
        return true;
    }();
    (void)configured;
    require_alignment(p, "k30_wgmma_tma");
    const CUtensorMap& ma = maps_a.get(p.a, T, p.m, p.k, kBM);
    const CUtensorMap& mb = maps_b.get(p.b, T, p.n, p.k, kBN);
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int tiles_m = ceil_div(m, kBM);
    const unsigned blocks = static_cast<unsigned>(tiles_m) * static_cast<unsigned>(ceil_div(n, kBN));
    k30_kernel<T><<<blocks, kThreads, kSmemBytes, stream_of(p)>>>(ma, mb, static_cast<float*>(p.c), m, n, k, tiles_m);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void k30_wgmma_tma(const GemmProblem& p) {
    switch (p.type) {
        case DType::bf16: return launch<DType::bf16>(p);
        case DType::f16: return launch<DType::f16>(p);
        default: throw std::invalid_argument("k30_wgmma_tma takes bf16 and f16, not " + std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
