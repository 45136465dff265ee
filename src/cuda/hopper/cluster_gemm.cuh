// The cluster GEMM that k35 and k36 instantiate: k32's warp-specialized,
// persistent pipeline, run by pairs of CTAs (a 2 x 1 thread-block cluster)
// that share their B tile through TMA multicast, with an epilogue that hands
// the output to the copy engine.
//
// Cluster: CTAs rank 0 and 1 compute vertically adjacent 128 x BN tiles
// (tile rows 2p and 2p + 1, the same tile column), so they need the same
// BN x 128-byte B tile at every k-step. Each CTA's producer loads its own A
// tile and HALF of B (rank r: rows r * BN/2 ...), multicast to the same stage
// offset in both CTAs. Each CTA's full barrier thus collects A (16 KB, own) +
// two B halves (own and peer's): L2 delivers 16 + 16 KB per CTA and stage
// instead of 16 + 32 KB, a third less L2 -> SM traffic for the same flops.
// (On the H200 that third less L2 traffic bought no speed on its own: k35's
// opening comment.)
// The price: a producer may refill stage s only when the consumers of BOTH
// CTAs have finished with it, so each empty barrier counts 16 arrivals (the 8
// consumer warps of each CTA; a warp arrives on its own CTA's barrier and,
// through mapa, on its peer's), and the CTAs of a pair move in lockstep.
//
// Phases and rounds are k32's (warp_specialized.cuh); the peer's complete_tx
// for round r of stage s can reach this CTA's full barrier only after this
// CTA's consumers released round r - 1 (the peer producer waits for that), so
// it never lands in the wrong phase.
//
// Tails: a tile row past M (odd number of tile rows) or a B half past N
// loads nothing, and both CTAs leave its bytes out of expect_tx; the
// consumers compute garbage there from stale shared memory and store none of
// it. Partial tiles are zero-filled by TMA as in k30-k34.
//
// Epilogue (Epilogue::tma_store): each consumer writes its 64 x BN fp32 tile
// into shared memory in slabs of 64 rows x 32 columns (128 bytes a row, the
// 128B swizzle of the output tensor map; 8-byte stores, two wavefronts per
// warp store: conflict-free), then one thread hands each slab to the copy
// engine (cp.async.bulk.tensor, shared -> global, clipped at M and N) and the
// warpgroup goes on to the next slab and then to the next tile's main loop
// while the writes drain. Two slab buffers per consumer (32 KB in all) are
// reused once the copy engine has read them (wait_group.read). When N x 4
// bytes is not a multiple of 16 or C is not 16-byte aligned, the launcher
// picks the direct, guarded stores of sm90::store_accumulators instead.
//
// Accumulation: tensor_core as k32/k33. promoted_halves (fp8): each k-tile
// (128 of K) is accumulated by the tensor core in two m64n(BN/2) halves, each
// into one fresh BN/4-register partial that the consumer waits for and adds
// into the fp32 accumulator with FADDs: 128 + 64 accumulator registers
// instead of the 2 x 128 that two full sets would take, so the 128 x 256 tile
// fits. The two consumers issue their halves in turn (named barriers 3, 4).
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/sm90_cluster.cuh"
#include "cuda/hopper/warp_specialized.cuh"
#include "cuda/hopper/wgmma.cuh"

namespace rigel::cuda::sm90 {

enum class Epilogue : std::uint8_t { direct, tma_store };
enum class ClusterAccumulation : std::uint8_t { tensor_core, promoted_halves };

template <DType T, int BN, int Stages, ClusterAccumulation A, Epilogue E>
struct ClusterGemm {
    static constexpr DType kType = T;
    static constexpr int kBN = BN;
    static constexpr int kStages = Stages;
    static constexpr ClusterAccumulation kAccumulation = A;
    static constexpr Epilogue kEpilogue = E;

    static constexpr int kClusterM = 2;                    // CTAs per cluster, stacked along M
    static constexpr int kBM = 2 * kWgmmaM;                // two consumers, 64 rows each
    static constexpr int kBK = kRowBytes / elem_bytes(T);  // K elements per stage: 64 or 128
    static constexpr int kABytes = kBM * kRowBytes;
    static constexpr int kBHalfRows = BN / kClusterM;      // rows of B each CTA loads and multicasts
    static constexpr int kBHalfBytes = kBHalfRows * kRowBytes;
    static constexpr int kBBytes = BN * kRowBytes;
    static constexpr int kStageBytes = kABytes + kBBytes;

    // Epilogue slabs: 64 rows (one consumer) x 32 fp32 columns (128 bytes).
    static constexpr int kSlabCols = kRowBytes / 4;
    static constexpr int kSlabBytes = kWgmmaM * kRowBytes;
    static constexpr int kSlabs = BN / kSlabCols;
    static constexpr int kSlabBuffers = 2;  // per consumer
    static constexpr int kEpilogueBytes = E == Epilogue::tma_store ? 2 * kSlabBuffers * kSlabBytes : 0;

    static constexpr int kSmemBytes = Stages * kStageBytes + kEpilogueBytes + kSwizzleAtom;  // + alignment slack
    static constexpr int kThreads = 3 * kWarpgroup;
    static constexpr int kConsumerWarps = 2 * kWarpgroup / 32;
    static constexpr int kEmptyArrivals = kClusterM * kConsumerWarps;  // both CTAs' consumers free a stage
    static constexpr int kAcc = BN / 2;                                // fp32 accumulators per thread
    static constexpr int kPart = A == ClusterAccumulation::promoted_halves ? BN / 4 : 1;
    static constexpr int kGroupPairs = 4;  // cluster-tile rows (8 tile rows) per raster group
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = 232;

    static_assert(BN % 64 == 0 && BN <= 256, "wgmma N <= 256, and B halves must stay 1024-byte aligned");
    static_assert(kABytes % kSwizzleAtom == 0 && kBHalfBytes % kSwizzleAtom == 0 && kSlabBytes % kSwizzleAtom == 0,
                  "every tile, B half and slab must start on a 1024-byte swizzle atom");
    static_assert(kBHalfRows <= 256, "a TMA box has at most 256 rows");
    // 227 KB per block (sm_90) less the static shared memory of the barriers.
    static_assert(kSmemBytes + 2 * Stages * 8 <= 227 * 1024, "the per-block shared-memory limit of sm_90");
    static_assert(A == ClusterAccumulation::tensor_core || elem_bytes(T) == 1, "promotion is the fp8 remedy");
    static_assert(kWarpgroup * kProducerRegs + 2 * kWarpgroup * kConsumerRegs <= 65536, "register file");
    static_assert(kAcc % 4 == 0 && kSlabs * kSlabCols == BN, "slabs cover the tile");
};

// Thread t of a consumer warpgroup holds d[4j + 2h + e] of the m64nBN
// accumulator at row 16 (t / 32) + (t % 32) / 4 + 8h, column 8j + 2 (t % 4) + e
// (sm90::store_accumulators). In slab s (columns 32s .. 32s + 31) that is
// j = 4s + jj, and the pair (e = 0, 1) is 8 bytes at byte 32 jj + 8 (t % 4) of
// the row, i.e. 16-byte chunk 2 jj + (t % 4) / 2, offset 8 ((t % 4) % 2). The
// 128B swizzle stores chunk c of row r at chunk c ^ (r % 8); r % 8 is
// (t % 32) / 4 for both h.
template <int Acc>
__device__ __forceinline__ void write_slab(const float (&acc)[Acc], int slab, std::uint32_t buf) {
    const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
    const int lane = t % 32;
    const int quad = lane % 4;
    const std::uint32_t xr = static_cast<std::uint32_t>(lane / 4);
    const int r0 = 16 * (t / 32) + lane / 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const std::uint32_t row = buf + static_cast<std::uint32_t>((r0 + 8 * h) * kRowBytes);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int j = 4 * slab + jj;
            const std::uint32_t chunk = (static_cast<std::uint32_t>(2 * jj + quad / 2)) ^ xr;
            st_shared_v2(row + chunk * 16 + static_cast<std::uint32_t>(8 * (quad % 2)), acc[4 * j + 2 * h],
                         acc[4 * j + 2 * h + 1]);
        }
    }
}

// Named barriers: 0 is __syncthreads'; 1 and 2 the epilogues of consumers 0
// and 1; 3 and 4 the turns of the promoted mode's consumers.
constexpr int kTurnOfConsumer0 = 3;
constexpr int kTurnOfConsumer1 = 4;

template <class G>
__global__ void __launch_bounds__(G::kThreads, 1)
    cluster_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        const __grid_constant__ CUtensorMap map_c, float* __restrict__ c, int m, int n, int k,
                        int tiles_m, int tiles_n, int use_tma_store) {
#if RIGEL_SM90A_DEVICE
    constexpr int kStages = G::kStages;
    extern __shared__ unsigned char smem_raw[];
    __shared__ std::uint64_t full[kStages];
    __shared__ std::uint64_t empty[kStages];
    unsigned char* const smem = align_to_atom(smem_raw);
    auto a_tile = [&](int s) { return smem + s * G::kStageBytes; };
    auto b_tile = [&](int s) { return smem + s * G::kStageBytes + G::kABytes; };

    const std::uint32_t rank = cluster_ctarank();
    const int cluster = static_cast<int>(cluster_id_x());
    const int clusters = static_cast<int>(cluster_count_x());
    const int k_tiles = ceil_div(k, G::kBK);
    const int tiles_pm = ceil_div(tiles_m, G::kClusterM);
    const int cluster_tiles = tiles_pm * tiles_n;
    const int warpgroup = static_cast<int>(threadIdx.x) / kWarpgroup;

    init_ring(full, empty, G::kEmptyArrivals);  // every consumer warp of both CTAs releases each stage
    // Both CTAs' barriers are initialized before either producer multicasts
    // into its peer or either consumer arrives remotely. From here on, only
    // mbarriers and per-warpgroup named barriers until the end.
    cluster_sync();

    if (warpgroup == 0) {
        setmaxnreg_dec<G::kProducerRegs>();
        if (threadIdx.x == 0) {
            prefetch_tensor_map(&map_a);
            prefetch_tensor_map(&map_b);
            auto ring = PipelineState<kStages>::producer_start();
            for (int ct = cluster; ct < cluster_tiles; ct += clusters) {
                int pm = 0, tn = 0;
                tile_coords<Schedule::persistent_grouped>(ct, tiles_pm, tiles_n, G::kGroupPairs, pm, tn);
                const int tm = G::kClusterM * pm + static_cast<int>(rank);
                const bool a_valid = tm < tiles_m;
                // Both CTAs compute the same answer for both halves of B.
                const bool b1_valid = tn * G::kBN + G::kBHalfRows < n;
                const bool mine_valid = rank == 0 || b1_valid;
                const std::uint32_t bytes = (a_valid ? G::kABytes : 0) + G::kBHalfBytes * (b1_valid ? 2 : 1);
                for (int kt = 0; kt < k_tiles; ++kt) {
                    const int stage = ring.stage();
                    mbar_wait_hinted(&empty[stage], ring.phase());
                    mbar_arrive_expect_tx(&full[stage], bytes);
                    if (a_valid) tma_load_2d(a_tile(stage), &map_a, &full[stage], kt * G::kBK, tm * G::kBM);
                    if (mine_valid)
                        tma_load_2d_multicast(b_tile(stage) + rank * G::kBHalfBytes, &map_b, &full[stage],
                                              kt * G::kBK, tn * G::kBN + static_cast<int>(rank) * G::kBHalfRows,
                                              static_cast<std::uint16_t>(0x3));
                    ring.advance();
                }
            }
        }
    } else {
        setmaxnreg_inc<G::kConsumerRegs>();
        const int consumer = warpgroup - 1;
        const bool arriving_lane = (threadIdx.x % 32) == 0;
        const bool elected = (threadIdx.x % kWarpgroup) == 0;
        const std::uint32_t a_offset = static_cast<std::uint32_t>(consumer * kWgmmaM * kRowBytes);
        // This consumer's two slab buffers, after the stages.
        const std::uint32_t slab_base =
            smem_u32(smem + kStages * G::kStageBytes + consumer * G::kSlabBuffers * G::kSlabBytes);
        // The empty barriers of both CTAs, as cluster addresses of stage 0.
        const std::uint32_t empty_rank0 = map_to_rank(&empty[0], 0);
        const std::uint32_t empty_rank1 = map_to_rank(&empty[0], 1);
        auto release = [&](int s) {
            if (arriving_lane) {
                mbar_arrive_cluster(empty_rank0 + 8u * static_cast<std::uint32_t>(s));
                mbar_arrive_cluster(empty_rank1 + 8u * static_cast<std::uint32_t>(s));
            }
        };

        float acc[G::kAcc];
#pragma unroll
        for (int i = 0; i < G::kAcc; ++i) acc[i] = 0.0f;
        float part[G::kPart];
#pragma unroll
        for (int i = 0; i < G::kPart; ++i) part[i] = 0.0f;
        auto ring = PipelineState<kStages>::consumer_start();
        int last_buffer = -1;     // the slab buffer of the elected thread's newest store
        bool first_batch = true;  // promoted_halves: consumer 0's first batch waits for no turn
        for (int ct = cluster; ct < cluster_tiles; ct += clusters) {
            int pm = 0, tn = 0;
            tile_coords<Schedule::persistent_grouped>(ct, tiles_pm, tiles_n, G::kGroupPairs, pm, tn);
            const int tm = G::kClusterM * pm + static_cast<int>(rank);
            int prev_stage = 0;
            for (int kt = 0; kt < k_tiles; ++kt) {
                const int stage = ring.stage();
                mbar_wait_hinted(&full[stage], ring.phase());
                const std::uint64_t da = sw128_kmajor_desc(a_tile(stage) + a_offset);
                const std::uint64_t db = sw128_kmajor_desc(b_tile(stage));
                if constexpr (G::kAccumulation == ClusterAccumulation::tensor_core) {
                    fence_registers(acc);
                    wgmma_fence();
#pragma unroll
                    for (int j = 0; j < kKStepsPerTile; ++j)
                        Wgmma<G::kType, G::kBN>::mma(acc, desc_k_step(da, j), desc_k_step(db, j),
                                                     (kt > 0 || j > 0) ? 1u : 0u);
                    wgmma_commit();
                    wgmma_wait<1>();
                    fence_registers(acc);
                    if (kt > 0) release(prev_stage);
                } else {
                    // Left half (columns 0 .. BN/2 - 1, accumulator registers
                    // 0 .. kAcc/2 - 1), then the right half, whose B rows start
                    // BN/2 rows x 128 B further.
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const std::uint64_t dbh = desc_advance(db, half * G::kBHalfBytes);
                        // Take turns: consumer 0 issues a batch, then consumer
                        // 1, then 0 again... so the tensor cores run one
                        // consumer's batch while the other waits for its own
                        // and adds. Left alone, the two would issue together,
                        // finish together and add together, idling the tensor
                        // cores for every promotion.
                        if (consumer == 0) {
                            if (!first_batch) named_barrier_sync<2 * kWarpgroup>(kTurnOfConsumer0);
                        } else {
                            named_barrier_sync<2 * kWarpgroup>(kTurnOfConsumer1);
                        }
                        first_batch = false;
                        fence_registers(part);
                        wgmma_fence();
#pragma unroll
                        for (int j = 0; j < kKStepsPerTile; ++j)
                            Wgmma<G::kType, G::kBN / 2>::mma(part, desc_k_step(da, j), desc_k_step(dbh, j),
                                                             j > 0 ? 1u : 0u);
                        wgmma_commit();
                        named_barrier_arrive<2 * kWarpgroup>(consumer == 0 ? kTurnOfConsumer1 : kTurnOfConsumer0);
                        wgmma_wait<0>();
                        fence_registers(part);
                        if (half == 1) release(stage);
#pragma unroll
                        for (int i = 0; i < G::kPart; ++i) acc[half * G::kPart + i] += part[i];
                    }
                }
                prev_stage = stage;
                ring.advance();
            }
            if constexpr (G::kAccumulation == ClusterAccumulation::tensor_core) {
                wgmma_wait<0>();
                fence_registers(acc);
                release(prev_stage);
            }

            const int row0 = tm * G::kBM + consumer * kWgmmaM;
            const int col0 = tn * G::kBN;
            if (row0 < m) {  // the same for the whole warpgroup
                if (use_tma_store) {
                    const int bar_id = 1 + consumer;
                    // Unrolled: the slab picks accumulator registers, which
                    // only compile-time indices keep out of local memory.
#pragma unroll
                    for (int s = 0; s < G::kSlabs; ++s) {
                        const int b = s % G::kSlabBuffers;
                        const std::uint32_t buf = slab_base + static_cast<std::uint32_t>(b * G::kSlabBytes);
                        // The last store issued from this buffer (of this tile
                        // or the previous one) must have read it: if the newest
                        // store came from the other buffer, this one's is older
                        // and "at most one pending" suffices.
                        if (elected) {
                            if (last_buffer == b)
                                bulk_wait_read<0>();
                            else
                                bulk_wait_read<1>();
                        }
                        named_barrier_sync<kWarpgroup>(bar_id);
                        write_slab(acc, s, buf);
                        fence_proxy_async_smem();
                        named_barrier_sync<kWarpgroup>(bar_id);
                        if (elected && col0 + s * G::kSlabCols < n) {  // slabs past N are not stored
                            tma_store_2d(&map_c, buf, col0 + s * G::kSlabCols, row0);
                            bulk_commit();
                            last_buffer = b;
                        }
                    }
                } else {
                    store_accumulators<G::kBN>(acc, c, m, n, row0, col0);
                }
            }
            if constexpr (G::kAccumulation == ClusterAccumulation::promoted_halves) {
#pragma unroll
                for (int i = 0; i < G::kAcc; ++i) acc[i] = 0.0f;
            }
        }
        if constexpr (G::kAccumulation == ClusterAccumulation::promoted_halves) {
            // Consumer 1 arrived once after each of its batches, the last one
            // included; consumer 0 takes that last turn here so that every
            // arrive has its sync.
            if (consumer == 0 && !first_batch) named_barrier_sync<2 * kWarpgroup>(kTurnOfConsumer0);
        }
        if (elected) bulk_wait<0>();  // this thread's stores are complete before the CTA ends
    }
    // No CTA leaves while its peer may still arrive on its barriers or
    // multicast into its shared memory.
    cluster_sync();
#else
    (void)map_a, (void)map_b, (void)map_c, (void)c, (void)m, (void)n, (void)k, (void)tiles_m, (void)tiles_n,
        (void)use_tma_store;
    trap_without_sm90a("cluster_gemm_kernel (k35, k36)");
#endif
}

// Launches G on problem p; `rung` names it in errors. Operand types are
// checked by the caller.
template <class G>
void launch_cluster_gemm(const GemmProblem& p, const char* rung) {
    static TensorMapCache maps_a, maps_b;
    static OutputMapCache maps_c;
    static const int max_clusters =
        max_active_clusters(cluster_gemm_kernel<G>, G::kThreads, G::kSmemBytes, G::kClusterM);
    require_alignment(p, rung);
    const CUtensorMap& ma = maps_a.get(p.a, G::kType, p.m, p.k, G::kBM);
    const CUtensorMap& mb = maps_b.get(p.b, G::kType, p.n, p.k, G::kBHalfRows);
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const bool tma_store = G::kEpilogue == Epilogue::tma_store && n % 4 == 0 &&
                           reinterpret_cast<std::uintptr_t>(p.c) % 16 == 0;
    const CUtensorMap mc = tma_store ? maps_c.get(p.c, p.m, p.n, kWgmmaM) : CUtensorMap{};
    const int tiles_m = ceil_div(m, G::kBM);
    const int tiles_n = ceil_div(n, G::kBN);
    const std::int64_t cluster_tiles = static_cast<std::int64_t>(ceil_div(tiles_m, G::kClusterM)) * tiles_n;
    if (cluster_tiles > INT32_MAX)
        throw std::invalid_argument(std::string(rung) + ": more than 2^31 - 1 output tile pairs");
    const std::int64_t clusters = std::min<std::int64_t>(cluster_tiles, max_clusters);
    cudaLaunchAttribute attr{};
    const cudaLaunchConfig_t cfg = cluster_launch_config(static_cast<unsigned>(G::kClusterM * clusters), G::kThreads,
                                                         G::kSmemBytes, stream_of(p), G::kClusterM, &attr);
    RIGEL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, cluster_gemm_kernel<G>, ma, mb, mc, static_cast<float*>(p.c), m, n, k,
                                        tiles_m, tiles_n, tma_store ? 1 : 0));
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda::sm90
