// The warp-specialized wgmma GEMM that k31-k34 instantiate: one producer
// warpgroup that only issues TMA, two consumer warpgroups that only issue
// wgmma, a ring of shared-memory stages between them, and full/empty mbarriers
// instead of CTA-wide barriers.
//
//   warpgroup 0 (producer, 40 registers): thread 0 loops over the k-tiles of its
//       output tiles; for each it waits until the stage is empty, announces the
//       stage's bytes on its full barrier (expect_tx) and starts two TMA copies
//       (a 128-row tile of A and a BN-row tile of B, 128 bytes of K per row).
//   warpgroups 1, 2 (consumers, 232 registers): consumer c computes rows
//       64c..64c+63 of the 128 x BN tile with m64nBN wgmma. For each k-tile:
//       wait until the stage is full, issue 4 wgmma k-steps (32 bytes of K
//       each), commit, and once the stage's wgmma have finished reading it,
//       arrive on its empty barrier (one arrival per consumer warp, 8 in all).
//
// Phases: each side keeps its position in the ring as a PipelineState
// (sm90_types.cuh): the consumers wait on full[s] with parity r & 1 in round
// r, the producer on empty[s] one phase behind, which passes at once in round
// 0 and later when the consumers have released round r - 1. Both sides walk
// the same sequence of (tile, k-tile), so their states stay in step.
//
// Schedules: one_tile_per_cta (k31: grid = number of tiles, tile = blockIdx.x,
// M fastest) or persistent_grouped (k32-k34: grid = number of SMs; CTA b takes
// tiles b, b + grid, ...; tiles are numbered in groups of kGroupM tile rows so
// that the ~132 tiles in flight share a few rows of A and columns of B in L2)
// or split_k (k37: grid = tiles x splits, tile = blockIdx.x as in
// one_tile_per_cta, split = blockIdx.y; the split multiplies only its share of
// the k-tiles (k_tile_range) and writes its partial tile to the split-th M x N
// slab of c, which is then k37's workspace (splits x M < 2^31); a consumer
// whose 64 rows all lie past M issues no wgmma; the launch is k37's own).
//
// Operand order (Major): k, as every ladder rung takes them (A stored M x K,
// B stored N x K: 128 bytes of K per tile row, one TMA box per tile), or mn,
// which the GEMM library (src/cuda/gemm/) uses for transposed operands of
// f16/bf16: the operand is stored K x M (or K x N), so a tile arrives as
// BM/64 (BN/64) boxes of 64 K-rows x 128 bytes (64 elements of M or N), each
// 8 KB and swizzled like the K-major rows. wgmma reads it with imm-trans set
// and an MN-major descriptor: SBO 1024 (8 K-rows), LBO 8 KB (the next 64
// columns), each k-step 16 K-rows = 2 KB further on. fp8 wgmma has no
// transpose, so fp8 is K-major only.
//
// Epilogue (Epi): what the consumers do with a finished tile. StoreF32 (the
// ladder's): guarded fp32 stores of the accumulators; the library's fused
// epilogues: src/cuda/gemm/fused_epilogue.cuh. The kernel takes Epi::Params
// by value, and gives each consumer Epi::kStagingBytes of shared memory after
// the ring (kernel_smem_bytes<G, Epi>); where the policy has them, Epi::init()
// sets up its barriers before the kernel's __syncthreads and each consumer
// calls Epi::drain(epi) after its last tile (FixedEpilogue's TMA stores, the
// library's "fixed_wide").
//
// Accumulation: tensor_core keeps one accumulator set and one wgmma group in
// flight. promoted (fp8 only) accumulates each k-tile (128 of K = 4 wgmma
// k-steps) into a fresh register set inside the tensor core, waits, and adds
// it into a separate fp32 accumulator with ordinary FADDs (two such sets in
// turn, so that the next k-tile's product runs while one is added): DeepSeek-V3's
// remedy (report, section 3.3.2) for Hopper's fp8 accumulator, which keeps
// only about 14 fraction bits. DeepSeek multiplies each partial by the block
// scales of A and B there (an FFMA, the same cost); rigel's fp8 inputs are
// unscaled, so those scales are 1.0 and the multiply is left out.
// block_scaled (k38) is promoted with that multiply: each k-tile is one
// 128-wide block of K, and its partial is added as an FFMA times s_A(row,
// block) s_B(column / 128, block), the scales loaded by TMA into each stage
// beside its operands (their layouts: block_scaled.hpp) and read from there.
// The scales' tensor maps travel in the epilogue's parameters
// (Epi::Params::map_scale_a, map_scale_b: the kernel's one by-value struct);
// BN is 128, one B block per tile.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/wgmma.cuh"

namespace rigel::cuda::sm90 {

enum class Accumulation : std::uint8_t { tensor_core, promoted, block_scaled };
enum class Major : std::uint8_t { k, mn };

template <DType T, int BN, int Stages, Schedule S, Accumulation A, Major MA = Major::k, Major MB = Major::k,
          int ScaleChunk = 0>
struct WarpSpecialized {
    static constexpr DType kType = T;
    static constexpr int kBN = BN;
    static constexpr int kStages = Stages;
    static constexpr Schedule kSchedule = S;
    static constexpr Accumulation kAccumulation = A;
    static constexpr Major kMajorA = MA;
    static constexpr Major kMajorB = MB;
    static constexpr int kTransA = MA == Major::mn ? 1 : 0;  // wgmma imm-trans-a
    static constexpr int kTransB = MB == Major::mn ? 1 : 0;

    static constexpr int kBM = 2 * kWgmmaM;                  // two consumers, 64 rows each
    static constexpr int kBK = kRowBytes / elem_bytes(T);    // K elements per stage: 64 or 128
    static constexpr int kABytes = kBM * kRowBytes;
    static constexpr int kBLoadRows = BN;  // B's rows a stage loads (load_tile): the tile's
    static constexpr int kBBytes = BN * kRowBytes;
    static constexpr int kStageBytes = kABytes + kBBytes;
    // block_scaled: each stage's scales after the ring, by TMA with its operands: A's 128 (one per
    // tile row, 512 bytes) and a 16-byte box of B's holding the tile's, padded to 640 bytes per
    // stage so that every box starts on 128 bytes.
    static constexpr int kScaleABytes = kBM * 4;
    static constexpr int kScaleBBytes = 16;
    static constexpr int kScaleStageBytes = A == Accumulation::block_scaled && ScaleChunk == 0 ? kScaleABytes + 128 : 0;
    // EXPERIMENT (ScaleChunk > 0): the scales of ScaleChunk k-tiles of a tile in one TMA pair, into
    // one of two buffers after the ring (A's [ScaleChunk][128], then B's [ScaleChunk][4]), on the
    // full barrier of the chunk's first k-tile; the consumers free a buffer once they have read
    // its last k-tile's scales.
    static constexpr int kScaleChunk = ScaleChunk;
    static constexpr int kScaleChunkABytes = ScaleChunk * kBM * 4;
    static constexpr int kScaleChunkBBytes = ScaleChunk * 16;
    static constexpr int kScaleChunkBytes = 2 * (kScaleChunkABytes + kScaleChunkBBytes);
    static constexpr int kSmemBytes =
        Stages * (kStageBytes + kScaleStageBytes) + kScaleChunkBytes + kSwizzleAtom;  // + alignment slack
    static constexpr int kThreads = 3 * kWarpgroup;
    static constexpr int kConsumerWarps = 2 * kWarpgroup / 32;  // arrivals that free a stage
    static constexpr int kAcc = BN / 2;                         // fp32 accumulators per thread
    static constexpr int kGroupM = 8;                           // tile rows per raster group
    // 128 x 40 + 256 x 232 = 64512 <= 65536 registers of the SM (one CTA per SM).
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = 232;

    static_assert(BN % 64 == 0 && BN <= 256, "wgmma N <= 256, and B tiles must stay 1024-byte aligned");
    static_assert(kABytes % kSwizzleAtom == 0 && kBBytes % kSwizzleAtom == 0,
                  "every tile must start on a 1024-byte swizzle atom");
    static_assert(kSmemBytes <= 227 * 1024, "the per-block shared-memory limit of sm_90");
    static_assert(A == Accumulation::tensor_core || elem_bytes(T) == 1, "promotion is the fp8 remedy");
    static_assert(A != Accumulation::block_scaled || (BN == 128 && kBK == 128),
                  "block scales: a k-tile is one 128-wide block of K, a tile one 128-row block of B");
    static_assert(A == Accumulation::tensor_core || 3 * kAcc <= 192,
                  "promotion needs three accumulator sets (the total, two partial sums) within the consumers' registers");
    static_assert((MA == Major::k && MB == Major::k) || elem_bytes(T) == 2,
                  "only f16/bf16 wgmma reads M- or N-major operands");
    static_assert(kWarpgroup * kProducerRegs + 2 * kWarpgroup * kConsumerRegs <= 65536, "register file");
    static_assert(ScaleChunk == 0 || (A == Accumulation::block_scaled && ScaleChunk <= 256),
                  "scale chunks: block_scaled only, at most a TMA box's 256 rows");
};

// EXPERIMENT: the k-tiles of scales a block-scaled kernel loads in one TMA pair (0: each stage its own).
template <class G>
__host__ __device__ constexpr int scale_chunk() {
    if constexpr (requires { G::kScaleChunk; }) return G::kScaleChunk;
    else return 0;
}

// tile_coords (the output tile of a linear tile index): sm90_types.cuh.

// The k-tiles [begin, end) this CTA multiplies for each of its tiles: all of
// them, except under split_k, where split blockIdx.y of gridDim.y takes an equal
// share of whole k-tiles (so its first TMA box starts on a k-tile boundary) and
// the last split also takes the remainder, including a partial last k-tile.
// The launcher makes at most k_tiles splits, so no split is empty.
template <Schedule S>
__device__ __forceinline__ void k_tile_range(int k_tiles, int& begin, int& end) {
    if constexpr (S == Schedule::split_k) {
        const int splits = static_cast<int>(gridDim.y);
        const int split = static_cast<int>(blockIdx.y);
        const int per_split = k_tiles / splits;
        begin = split * per_split;
        end = split + 1 == splits ? k_tiles : begin + per_split;
    } else {
        begin = 0;
        end = k_tiles;
    }
}

// The ladder's epilogue: the fp32 accumulators stored as they are.
struct StoreF32 {
    struct Params {
        float* c;
    };
    static constexpr int kStagingBytes = 0;
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* /*staging*/) {
        store_accumulators<BN>(acc, p.c, m, n, row0, col0);
    }
};

// Dynamic shared memory of warp_specialized_kernel<G, Epi>: the ring and
// each consumer's epilogue staging.
template <class G, class Epi>
inline constexpr int kernel_smem_bytes = G::kSmemBytes + 2 * Epi::kStagingBytes;

// One k-tile of an operand into shared memory: one box of `rows` x 128 bytes
// (K-major), or rows/64 boxes of 64 K-rows x 128 bytes (MN-major), 8 KB apart.
template <Major M, int Rows, int BK>
__device__ __forceinline__ void tma_load_operand(unsigned char* dst, const CUtensorMap* map, std::uint64_t* bar,
                                                 int kt, int row) {
    if constexpr (M == Major::k) {
        tma_load_2d(dst, map, bar, kt * BK, row);
    } else {
#pragma unroll
        for (int q = 0; q < Rows / 64; ++q) tma_load_2d(dst + q * BK * kRowBytes, map, bar, row + 64 * q, kt * BK);
    }
}

// The wgmma descriptor of an operand tile (K-major: sw128_kmajor_desc) and
// its k-step j: 32 bytes along each row (K-major) or 16 K-rows further on
// (MN-major: 16 x 128 bytes).
template <Major M, int BK>
__device__ __forceinline__ std::uint64_t operand_desc(const unsigned char* tile) {
    if constexpr (M == Major::k) {
        return sw128_kmajor_desc(tile);
    } else {
        return SmemDescriptor{.start_address = smem_u32(tile),
                              .leading_byte_offset = static_cast<std::uint32_t>(BK * kRowBytes),
                              .stride_byte_offset = kSwizzleAtom,
                              .swizzle = Swizzle::b128}
            .encode();
    }
}
template <Major M>
__device__ __forceinline__ std::uint64_t operand_k_step(std::uint64_t desc, int j) {
    if constexpr (M == Major::k) {
        return desc_k_step(desc, j);
    } else {
        return desc_advance(desc, j * 16 * kRowBytes);
    }
}

// Thread 0 sets up the ring's barriers: full[s] completes on the producer's
// expect_tx and the bytes it announced, empty[s] on `releases` consumer-warp
// arrivals. The caller makes them visible (a CTA or cluster barrier).
template <int Stages>
__device__ __forceinline__ void init_ring(std::uint64_t (&full)[Stages], std::uint64_t (&empty)[Stages],
                                          std::uint32_t releases) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < Stages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], releases);
        }
        fence_mbarrier_init();
    }
}

// The producer's work for one output tile (tm, tn): k-tiles [kt_begin,
// kt_end) of A's tile row and B's tile column into the ring, each stage once
// the consumers have released it. G is a kernel configuration with k32's
// stage layout (A tile, then B tile).
// True for a kernel whose stages carry block scales (WarpSpecialized's block_scaled; the
// ping-pong kernel, which shares load_tile, has no Accumulation).
template <class G>
constexpr bool loads_block_scales() {
    if constexpr (requires { G::kAccumulation; }) return G::kAccumulation == Accumulation::block_scaled;
    else return false;
}

template <class G>
__device__ __forceinline__ void load_tile(PipelineState<G::kStages>& ring, std::uint64_t* full, std::uint64_t* empty,
                                          unsigned char* smem, const CUtensorMap* map_a, const CUtensorMap* map_b,
                                          int tm, int tn, int b_row, int kt_begin, int k_end,
                                          const CUtensorMap* map_scale_a = nullptr,
                                          const CUtensorMap* map_scale_b = nullptr,
                                          std::uint32_t stage_bytes = G::kStageBytes,
                                          std::uint64_t* chunk_empty = nullptr, PipelineState<2>* chunks = nullptr) {
    // k_end in elements of K, not k-tiles: the ping-pong kernel passes its
    // parameter k itself, which the loop test reads from the constant bank
    // (a k-tile count computed from it would be spilled across the epilogue
    // and reloaded from local memory in every k-iteration). b_row: the tile's
    // first row of a K-major B (column of an MN-major one), tn kBN apart
    // except in the ping-pong kernel's narrow tail. stage_bytes: the bytes a
    // stage's loads bring, less than kStageBytes where map_b's boxes are
    // narrower than the tile (the narrow tail's B map).
    for (int kt = kt_begin; kt * G::kBK < k_end; ++kt) {
        const int stage = ring.stage();
        unsigned char* const a_tile = smem + stage * G::kStageBytes;
        mbar_wait(&empty[stage], ring.phase());
        if constexpr (loads_block_scales<G>() && scale_chunk<G>() > 0) {
            // EXPERIMENT: a chunk's scales with its first k-tile, once its buffer is free.
            if ((kt - kt_begin) % G::kScaleChunk == 0) {
                const int buf = chunks->stage();
                mbar_wait(&chunk_empty[buf], chunks->phase());
                unsigned char* const area = smem + G::kStages * G::kStageBytes;
                mbar_arrive_expect_tx(&full[stage], G::kStageBytes + G::kScaleChunkABytes + G::kScaleChunkBBytes);
                tma_load_2d(area + buf * G::kScaleChunkABytes, map_scale_a, &full[stage], tm * G::kBM, kt);
                tma_load_2d(area + 2 * G::kScaleChunkABytes + buf * G::kScaleChunkBBytes, map_scale_b, &full[stage],
                            tn & ~3, kt);
                chunks->advance();
            } else {
                mbar_arrive_expect_tx(&full[stage], G::kStageBytes);
            }
        } else if constexpr (loads_block_scales<G>()) {
            // The k-tile's scales (block_scaled.hpp's layouts: k-block-major), in the same
            // transaction: A's for the tile's rows and the 4 B blocks around the tile's.
            unsigned char* const scales = smem + G::kStages * G::kStageBytes + stage * G::kScaleStageBytes;
            mbar_arrive_expect_tx(&full[stage], G::kStageBytes + G::kScaleABytes + G::kScaleBBytes);
            tma_load_2d(scales, map_scale_a, &full[stage], tm * G::kBM, kt);
            tma_load_2d(scales + G::kScaleABytes, map_scale_b, &full[stage], tn & ~3, kt);
        } else {
            mbar_arrive_expect_tx(&full[stage], stage_bytes);
        }
        tma_load_operand<G::kMajorA, G::kBM, G::kBK>(a_tile, map_a, &full[stage], kt, tm * G::kBM);
        tma_load_operand<G::kMajorB, G::kBLoadRows, G::kBK>(a_tile + G::kABytes, map_b, &full[stage], kt, b_row);
        ring.advance();
    }
}

template <class G, class Epi = StoreF32>
__global__ void __launch_bounds__(G::kThreads, 1)
    warp_specialized_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                            const __grid_constant__ typename Epi::Params epi, int m, int n, int k, int tiles_m,
                    int tiles_n) {
#if RIGEL_SM90A_DEVICE
    constexpr int kStages = G::kStages;
    extern __shared__ unsigned char smem_raw[];
    __shared__ std::uint64_t full[kStages];
    __shared__ std::uint64_t empty[kStages];
    __shared__ std::uint64_t chunk_empty[2];  // EXPERIMENT: scale_chunk<G>() > 0 only
    unsigned char* const smem = align_to_atom(smem_raw);
    auto a_tile = [&](int s) { return smem + s * G::kStageBytes; };
    auto b_tile = [&](int s) { return smem + s * G::kStageBytes + G::kABytes; };

    int kt_begin = 0, kt_end = 0;
    k_tile_range<G::kSchedule>(ceil_div(k, G::kBK), kt_begin, kt_end);
    const int num_tiles = tiles_m * tiles_n;
    const int warpgroup = static_cast<int>(threadIdx.x) / kWarpgroup;

    init_ring(full, empty, G::kConsumerWarps);  // every consumer warp releases each stage
    if constexpr (scale_chunk<G>() > 0) {
        if (threadIdx.x == 0) {
            for (auto& b : chunk_empty) mbar_init(&b, G::kConsumerWarps);
            fence_mbarrier_init();
        }
    }
    if constexpr (requires { Epi::init(); }) Epi::init();  // the epilogue's own barriers, where it has any
    __syncthreads();  // the last CTA-wide barrier: from here on only mbarriers
    if constexpr (G::kSchedule == Schedule::split_k) {
        // k37's reduction kernel, launched as a programmatic dependent, may be
        // scheduled from now on; it waits for this grid to finish (and its
        // stores to be visible) before it reads anything.
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }

    if (warpgroup == 0) {
        setmaxnreg_dec<G::kProducerRegs>();
        if (threadIdx.x == 0) {
            prefetch_tensor_map(&map_a);
            prefetch_tensor_map(&map_b);
            auto ring = PipelineState<kStages>::producer_start();
            auto chunks = PipelineState<2>::producer_start();
            for (int tile = static_cast<int>(blockIdx.x); tile < num_tiles; tile += static_cast<int>(gridDim.x)) {
                int tm = 0, tn = 0;
                tile_coords<G::kSchedule>(tile, tiles_m, tiles_n, G::kGroupM, tm, tn);
                if constexpr (G::kAccumulation == Accumulation::block_scaled)
                    load_tile<G>(ring, full, empty, smem, &map_a, &map_b, tm, tn, tn * G::kBN, kt_begin, kt_end * G::kBK,
                                 &epi.map_scale_a, &epi.map_scale_b, G::kStageBytes, chunk_empty, &chunks);
                else
                    load_tile<G>(ring, full, empty, smem, &map_a, &map_b, tm, tn, tn * G::kBN, kt_begin, kt_end * G::kBK);
            }
        }
    } else {
        setmaxnreg_inc<G::kConsumerRegs>();
        const int consumer = warpgroup - 1;
        const bool arriving_lane = (threadIdx.x % 32) == 0;
        float* const staging = reinterpret_cast<float*>(smem + kStages * (G::kStageBytes + G::kScaleStageBytes) +
                                                        G::kScaleChunkBytes + consumer * Epi::kStagingBytes);
        static_assert(kernel_smem_bytes<G, Epi> <= 227 * 1024, "the per-block shared-memory limit of sm_90");
        // Rows 64c..64c+63 of the A tile start 8 KB in: 64 rows x 128 B
        // (K-major), or the second box of 64 K-rows x 128 B (MN-major, BK = 64).
        const std::uint32_t a_offset = static_cast<std::uint32_t>(consumer * kWgmmaM * kRowBytes);
        static_assert(G::kMajorA == Major::k || G::kBK == kWgmmaM, "MN-major A: one 8 KB box per consumer");

        float acc[G::kAcc];
#pragma unroll
        for (int i = 0; i < G::kAcc; ++i) acc[i] = 0.0f;
        // The promoted modes' partial sums: two sets, so that the next k-tile's
        // wgmma is in flight while this one's is promoted (unused, and removed
        // by the compiler, in tensor_core mode).
        float part0[G::kAcc], part1[G::kAcc];
#pragma unroll
        for (int i = 0; i < G::kAcc; ++i) part0[i] = part1[i] = 0.0f;

        // block_scaled: this thread's scales for one k-tile, its two rows r,
        // r + 8 (past M: 0 from TMA's fill, never stored) and the tile's B
        // block, read from the k-tile's stage once it is full (the producer
        // loads them by TMA with the operands, as far ahead as the ring reaches:
        // read from global memory a k-tile or two ahead instead, the loads took
        // longer than the k-tiles between, and the promotion waited for them).
        struct Scales {
            float a0 = 0.0f, a1 = 0.0f, b = 0.0f;
            int release = -1;  // EXPERIMENT (chunks): the buffer this k-tile's promotion frees, or -1
        };
        // EXPERIMENT (chunks): the parity of the chunks before this tile's (a tile has
        // ceil(k-tiles / kScaleChunk) of them; buffers alternate).
        int chunk_parity = 0;
        // tie(v): 0, computed from v's bits and a zero the compiler cannot
        // prove is one (k_blocks > 0, so k_blocks >> 31 is 0). Added to an
        // address or OR-ed into an operand, it makes an instruction wait for v
        // without changing it, so that ptxas does not hoist the scales' reads
        // and products between a turn's wgmma instructions, whose issue they
        // held up (their scoreboard counts every load in flight).
        const auto tie = [&](float v) -> std::uint32_t {
            if constexpr (G::kAccumulation == Accumulation::block_scaled)
                return __float_as_uint(v) & (static_cast<std::uint32_t>(epi.k_blocks) >> 31);
            else
                return 0;
        };
        // The reads wait for `after` (tie).
        const auto scales_of = [&](int stage, int kt_of, int tile_n, Scales& sc, float after) {
            if constexpr (scale_chunk<G>() > 0) {
                constexpr int C = G::kScaleChunk;
                const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
                const int local = kt_of - kt_begin;
                const int buf = (chunk_parity + local / C) & 1;
                const unsigned char* const area = smem + kStages * G::kStageBytes + tie(after);
                const float* const sa =
                    reinterpret_cast<const float*>(area + buf * G::kScaleChunkABytes + (local % C) * G::kScaleABytes);
                const float* const sb = reinterpret_cast<const float*>(area + 2 * G::kScaleChunkABytes +
                                                                       buf * G::kScaleChunkBBytes + (local % C) * 16);
                const int r = consumer * kWgmmaM + 16 * (t / 32) + (t % 32) / 4;
                sc.a0 = sa[r];
                sc.a1 = sa[r + 8];
                sc.b = sb[tile_n & 3];
                sc.release = (local % C == C - 1 || kt_of + 1 == kt_end) ? buf : -1;
                (void)stage;
            } else if constexpr (G::kAccumulation == Accumulation::block_scaled) {
                (void)kt_of;
                const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
                const float* const sa = reinterpret_cast<const float*>(
                    smem + kStages * G::kStageBytes + stage * G::kScaleStageBytes + tie(after));
                const int r = consumer * kWgmmaM + 16 * (t / 32) + (t % 32) / 4;
                sc.a0 = sa[r];
                sc.a1 = sa[r + 8];
                sc.b = sa[G::kBM + (tile_n & 3)];
            }
        };

        auto ring = PipelineState<kStages>::consumer_start();
        // Promoted modes: k-tile kt's product into a fresh partial sum (4
        // wgmma k-steps, one commit group); returns the stage it reads.
        const auto issue_partial = [&](float (&part)[G::kAcc]) {
            const int stage = ring.stage();
            mbar_wait(&full[stage], ring.phase());
            const std::uint64_t da = operand_desc<G::kMajorA, G::kBK>(a_tile(stage) + a_offset);
            const std::uint64_t db = operand_desc<G::kMajorB, G::kBK>(b_tile(stage));
            fence_registers(part);
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < kKStepsPerTile; ++j)  // fp8: K-major
                Wgmma<G::kType, G::kBN>::mma(part, desc_k_step(da, j), desc_k_step(db, j), j > 0 ? 1u : 0u);
            wgmma_commit();
            ring.advance();
            return stage;
        };
        // ... and, once its group is complete, the promotion: its stage goes
        // back to the producer and the partial sum into the fp32 total (an
        // FADD each, or an FFMA times the block scales).
        const auto promote = [&](float (&part)[G::kAcc], int stage, const Scales& sc) {
            fence_registers(part);
            if (arriving_lane) mbar_arrive(&empty[stage]);
            if constexpr (G::kAccumulation == Accumulation::block_scaled) {
                // The products wait for the partial sum (tie).
                const float b = __uint_as_float(__float_as_uint(sc.b) | tie(part[0]));
                const float s0 = sc.a0 * b, s1 = sc.a1 * b;
                // Accumulator i holds row r + 8 ((i % 4) / 2) (store_accumulators' layout).
#pragma unroll
                for (int i = 0; i < G::kAcc; ++i) acc[i] = fmaf(part[i], (i % 4) < 2 ? s0 : s1, acc[i]);
                if constexpr (scale_chunk<G>() > 0) {
                    if (arriving_lane && sc.release >= 0) mbar_arrive(&chunk_empty[sc.release]);
                }
            } else {
#pragma unroll
                for (int i = 0; i < G::kAcc; ++i) acc[i] += part[i];
            }
        };

        for (int tile = static_cast<int>(blockIdx.x); tile < num_tiles; tile += static_cast<int>(gridDim.x)) {
            int tm = 0, tn = 0;
            tile_coords<G::kSchedule>(tile, tiles_m, tiles_n, G::kGroupM, tm, tn);
            // split_k: a consumer with no rows inside M (M <= 64) keeps the
            // ring in step but computes nothing; its tile part is never stored.
            const bool has_rows = G::kSchedule != Schedule::split_k || tm * G::kBM + consumer * kWgmmaM < m;
            if constexpr (G::kAccumulation == Accumulation::tensor_core) {
                int prev_stage = 0;
                for (int kt = kt_begin; kt < kt_end; ++kt) {
                    const int stage = ring.stage();
                    mbar_wait(&full[stage], ring.phase());
                    const std::uint64_t da = operand_desc<G::kMajorA, G::kBK>(a_tile(stage) + a_offset);
                    const std::uint64_t db = operand_desc<G::kMajorB, G::kBK>(b_tile(stage));
                    if (has_rows) {
                        fence_registers(acc);
                        wgmma_fence();
#pragma unroll
                        for (int j = 0; j < kKStepsPerTile; ++j)  // scale_d 0 on a tile's first step: acc = A*B
                            Wgmma<G::kType, G::kBN>::template mma<G::kTransA, G::kTransB>(
                                acc, operand_k_step<G::kMajorA>(da, j), operand_k_step<G::kMajorB>(db, j),
                                (kt > kt_begin || j > 0) ? 1u : 0u);
                        wgmma_commit();
                        // This k-tile's group stays in flight; the previous one has
                        // finished reading its stage, which goes back to the producer.
                        wgmma_wait<1>();
                        fence_registers(acc);
                    }
                    if (kt > kt_begin && arriving_lane) mbar_arrive(&empty[prev_stage]);
                    prev_stage = stage;
                    ring.advance();
                }
                wgmma_wait<0>();
                fence_registers(acc);
                if (arriving_lane) mbar_arrive(&empty[prev_stage]);
            } else {
                // Two partial sums in turn: k-tile kt + 1 is issued before
                // k-tile kt is waited for and promoted, so this warpgroup's
                // tensor-core work never pauses for its own promotion (the
                // other consumer's used to be all that filled that gap). The
                // sums are added in k order, as before: the same bits.
                int kt = kt_begin;
                Scales sc0, sc1;
                int stage0 = issue_partial(part0), stage1 = 0;
                scales_of(stage0, kt_begin, tn, sc0, 0.0f);
                // One turn: k-tile kt is in `cur`; issue kt + 1 into `next` (unless kt is the
                // last), then promote kt. True when the tile's k-tiles are done.
                const auto turn = [&](float(&cur)[G::kAcc], int& cur_stage, Scales& cur_sc, float(&next)[G::kAcc],
                                      int& next_stage, Scales& next_sc) {
                    if (kt + 1 == kt_end) {
                        wgmma_wait<0>();
                        promote(cur, cur_stage, cur_sc);
                        return true;
                    }
                    next_stage = issue_partial(next);
                    wgmma_wait<1>();
                    promote(cur, cur_stage, cur_sc);
                    // k-tile kt + 1's scales, for its promotion in the next turn: read
                    // after this one (its stage is held until then).
                    scales_of(next_stage, kt + 1, tn, next_sc, cur[0]);
                    ++kt;
                    return false;
                };
                while (!turn(part0, stage0, sc0, part1, stage1, sc1) && !turn(part1, stage1, sc1, part0, stage0, sc0)) {
                }
            }

            // The producer is already filling the ring for the next tile while
            // this warpgroup stores (persistent schedule).
            // split_k: c is splits stacked M x N slabs, and this split's starts
            // at row blockIdx.y * m. (Passing c itself, not a pointer offset
            // to the slab, is what keeps this kernel free of register spills.)
            const int slab_row = G::kSchedule == Schedule::split_k ? static_cast<int>(blockIdx.y) * m : 0;
            Epi::template store<G::kBN>(epi, acc, slab_row + m, n, slab_row + tm * G::kBM + consumer * kWgmmaM,
                                        tn * G::kBN, staging);
            if constexpr (G::kAccumulation != Accumulation::tensor_core) {
#pragma unroll
                for (int i = 0; i < G::kAcc; ++i) acc[i] = 0.0f;
            }
            if constexpr (scale_chunk<G>() > 0) chunk_parity ^= ceil_div(kt_end - kt_begin, G::kScaleChunk) & 1;
        }
        // An epilogue whose copies may still be reading shared memory waits for them before the CTA ends.
        if constexpr (requires { Epi::drain(epi); }) Epi::drain(epi);
    }
#else
    (void)map_a, (void)map_b, (void)epi, (void)m, (void)n, (void)k, (void)tiles_m, (void)tiles_n;
    trap_without_sm90a("warp_specialized_kernel (k31-k34)");
#endif
}

// Lets warp_specialized_kernel<G> use its dynamic shared memory (once per
// configuration) and returns the device's SM count.
template <class G, class Epi = StoreF32>
int prepare_warp_specialized() {
    static const int sms = [] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(warp_specialized_kernel<G, Epi>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, kernel_smem_bytes<G, Epi>));
        return sm_count();
    }();
    return sms;
}

// Launches G on problem p; `rung` names it in errors. Operand types are
// checked by the caller.
template <class G>
void launch_warp_specialized(const GemmProblem& p, const char* rung) {
    static_assert(G::kSchedule != Schedule::split_k, "split_k needs a workspace and a reduction: k37 launches it");
    static TensorMapCache maps_a, maps_b;
    const int sms = prepare_warp_specialized<G>();
    require_alignment(p, rung);
    const CUtensorMap& ma = maps_a.get(p.a, G::kType, p.m, p.k, G::kBM);
    const CUtensorMap& mb = maps_b.get(p.b, G::kType, p.n, p.k, G::kBN);
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int tiles_m = ceil_div(m, G::kBM);
    const int tiles_n = ceil_div(n, G::kBN);
    const std::int64_t tiles = static_cast<std::int64_t>(tiles_m) * tiles_n;
    if (tiles > INT32_MAX) throw std::invalid_argument(std::string(rung) + ": more than 2^31 - 1 output tiles");
    const std::int64_t grid = G::kSchedule == Schedule::one_tile_per_cta ? tiles : std::min<std::int64_t>(tiles, sms);
    warp_specialized_kernel<G><<<static_cast<unsigned>(grid), G::kThreads, G::kSmemBytes, stream_of(p)>>>(
        ma, mb, StoreF32::Params{static_cast<float*>(p.c)}, m, n, k, tiles_m, tiles_n);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda::sm90
