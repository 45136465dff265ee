// Attention rung 3: the fused forward pass on wgmma and TMA, warp-specialized
// (the FlashAttention-3 design). What it adds
// over rung 2 (fa2, mma.sync): the products run on Hopper's warpgroup
// instructions, which rung 2's mma.sync cannot reach (the probes measured
// wgmma at about twice mma.sync's rate), and the tiles arrive by TMA, so no
// thread spends instructions on loads.
//
// The grid is persistent: a CTA per SM (its consumers hold all the
// registers, so one fits), each walking work items, a work item 64 C query
// rows of one head (C consumers, Config below; causal: the heaviest row tiles
// first), so that the producer loads the next item's Q (two buffers) and K/V
// tiles (the ring runs on across items) while the consumers finish the last
// one's products and store its O. A grid of one CTA per item paid each CTA's
// start (barriers, Q's and the first tiles' latency) and end (the last P V,
// O's stores) with nothing under them, which weighs most where an item has
// few key tiles: at S = 512 rung 3 ran at 0.71x cuDNN, at S = 16384 (D = 128)
// at 1.00x (2026-12-01_b113314_all_attention.csv).
// Measured with both changes (persistent grid, three consumers at D = 64) at
// 378bea4, S = 4096 against cuDNN in the same run: D = 64 0.97x (0.80x before,
// 449b1f0), causal 0.98x (0.84x); D = 128 1.00x (0.95x, e4a252e), causal 1.00x
// (0.96x) (2026-12-02_378bea4_targets_attention.csv; all 34 checks of
// `rigel attention verify --kernel fa3` passed, _verify_attention_verify.csv).
// Per work item, 1 + C warpgroups:
//   producer (warpgroup 0, one thread): Q, then K and V tiles of 128 keys
//     into a two-stage ring, each tile announced on its own mbarrier (K and V
//     separately, so S = Q K^T starts while V is still arriving) and refilled
//     when every consumer has released it.
//   consumers (warpgroups 1 .. C, 64 rows each), per key tile:
//     S = Q K^T       wgmma m64n128k16, A = Q and B = K both K-major in shared memory
//     mask, online softmax in registers (as rung 2: P = 2^(S scale log2e - m'))
//     O = O 2^(m - m') + P V   wgmma m64nDk16 with A = P from registers (the
//                     accumulator layout of two n8 columns is the A fragment of
//                     one k16 step), B = V N-major (imm-trans-b)
//   then O / l and lse, stored from the registers.
//
// Shared memory, all 128B-swizzled as TMA writes it: each Q buffer as D/64
// boxes of 64 C rows x 64 columns; each K stage as D/64 boxes of 128 keys x 64 columns
// (K-major, like Q); each V stage as D/64 boxes of 128 keys x 64 columns,
// which wgmma reads as an N-major B: the next 64 of N is one box further on
// (LBO), 8 keys are 1024 bytes (SBO), a k16 step is 16 key rows further on.
// The tensor maps are 3-dimensional (column, token, batch), so rows past a
// sequence's end are zero-filled by TMA rather than read from the next batch.
//
// FA3's two overlaps: the consumers take turns issuing their products (named
// barriers), so one's softmax runs while the others' products occupy the
// tensor cores; and inside a consumer, S_j = Q K_j^T and the previous tile's
// P V are issued together, so the softmax of S_j runs under P_{j-1} V_{j-1}
// (its accumulators and P's registers are touched only after that product
// has completed).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/attention/attention_kernels.cuh"
#include "cuda/attention/fa3_common.cuh"
#include "cuda/attention/mma_sync_tiles.cuh"
#include "cuda/check.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/sm90_cluster.cuh"
#include "cuda/hopper/wgmma.cuh"

namespace rigel::cuda::attention {
namespace {

using namespace rigel::cuda::sm90;

constexpr int kKeys = 128;       // keys per K/V tile
constexpr int kStages = 2;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Consumer warpgroups of 64 query rows each: three at D = 64, where a tile's
// products are half as long as at D = 128 for the same softmax, so that the
// K/V tile is shared by 192 rows and a consumer's softmax has two others'
// products to run under (FlashAttention-3's choice for small heads); two at
// D = 128, whose accumulators (O alone 64 registers a thread) need 240
// registers a consumer. The register file (64 K) split by setmaxnreg: the
// producer 24 a thread, the consumers kConsumerRegs.
template <int D>
struct Config {
    static constexpr int kConsumers = D == 64 ? 3 : 2;
    static constexpr int kRows = kConsumers * kWgmmaM;  // query rows per work item
    static constexpr int kThreads = (1 + kConsumers) * kWarpgroup;
    static constexpr int kConsumerRegs = D == 64 ? 160 : 240;
    static_assert(kWarpgroup * (24 + kConsumers * kConsumerRegs) <= 64 * 1024, "the register file");
};

template <int D>
struct Layout {
    static constexpr int kRows = Config<D>::kRows;
    static constexpr int kBoxes = D / kBoxCols;
    static constexpr int kQBox = kRows * kRowBytes;   // bytes of one Q box
    static constexpr int kKvBox = kKeys * kRowBytes;  // bytes of one K or V box
    static constexpr int kQ = 0;                          // [buffer][box]: two work items' Q
    static constexpr int kK = kQ + 2 * kBoxes * kQBox;
    static constexpr int kV = kK + kStages * kBoxes * kKvBox;
    static constexpr int kBarriers = kV + kStages * kBoxes * kKvBox;
    static constexpr int kBytes = kBarriers + 128 + kSwizzleAtom;  // 12 barriers, and room to align the base
    static_assert(kBytes <= 227 * 1024, "the per-block shared-memory limit of sm_90");
};

struct Params {
    __nv_bfloat16* o;
    float* lse;
    std::int64_t ldo;
    int seq, heads;
    float scale_log2;
    bool causal;
    int heads_total;  // B H
    int row_tiles;    // query tiles of Config::kRows rows per head
};

// Work item i of the persistent grid (CTA x takes x, x + gridDim.x, ...): a
// head and a tile of query rows. Causal tiles go heaviest first (the last rows
// see the most keys), so that the static round robin ends on light items.
struct WorkItem {
    int batch, head, row0, key_tiles;
};
template <int Rows>
__device__ __forceinline__ WorkItem work_item(const Params& p, int i) {
    const int bh = i % p.heads_total, tile = i / p.heads_total;
    const int row_tile = p.causal ? p.row_tiles - 1 - tile : tile;
    WorkItem w{.batch = bh / p.heads, .head = bh % p.heads, .row0 = row_tile * Rows, .key_tiles = 0};
    const int key_end = p.causal ? min(p.seq, w.row0 + Rows) : p.seq;
    w.key_tiles = (key_end + kKeys - 1) / kKeys;
    return w;
}

// The named barriers of the consumers' turns: kTurnBarrier + consumer (0 is __syncthreads'); consumer c
// takes its turn when consumer c - 1 (the last for consumer 0) has passed it on.
constexpr int kTurnBarrier = 1;

// Which scores of a tile are masked, for this thread's rows: keys past the
// sequence, and (causal) keys after the query. `active` false: none is.
struct Mask {
    int key0, row, quad, seq;
    bool causal, active;
};

// The running maximum (in the log2 domain of the scaled scores) and the
// thread's partial row sum, for its two rows.
struct RowState {
    float m[2] = {-INFINITY, -INFINITY};
    float l[2] = {0.0f, 0.0f};
};

// One tile's online softmax on the accumulators of S (the wgmma layout: sc[4i],
// sc[4i + 1] are row r, keys 8i + 2 quad + {0, 1}; sc[4i + 2], sc[4i + 3] row
// r + 8): masked scores to -inf, the new row maxima over the quad, sc replaced
// by P = 2^(S scale log2e - m'), the sums updated; returns the factors
// 2^(m - m') by which the two rows' accumulators must be rescaled.
template <int N>
__device__ __forceinline__ float2 softmax_tile(float (&sc)[N / 2], RowState& st, const Mask& mask, float scale_log2) {
    if (mask.active) {
#pragma unroll
        for (int i = 0; i < N / 2; ++i) {
            const int key = mask.key0 + 8 * (i / 4) + 2 * mask.quad + (i % 2);
            const int row = mask.row + 8 * ((i / 2) % 2);
            if (key >= mask.seq || (mask.causal && key > row)) sc[i] = -INFINITY;
        }
    }
    float rescale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int n8 = 0; n8 < N / 8; ++n8) mx = fmaxf(mx, fmaxf(sc[4 * n8 + 2 * h], sc[4 * n8 + 2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(st.m[h], mx * scale_log2);  // scale > 0 keeps the order
        // A row with every key so far masked keeps -inf; subtract 0 then (its P is all 0).
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        rescale[h] = fast_exp2(st.m[h] - base);
        st.m[h] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int n8 = 0; n8 < N / 8; ++n8)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float& x = sc[4 * n8 + 2 * h + e];
                x = fast_exp2(fmaf(x, scale_log2, -base));
                sum += x;
            }
        st.l[h] = st.l[h] * rescale[h] + sum;
    }
    return make_float2(rescale[0], rescale[1]);
}

template <int D>
__global__ void __launch_bounds__(Config<D>::kThreads, 1)
    fa3_forward_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                       const __grid_constant__ CUtensorMap map_v, const Params p) {
#if RIGEL_SM90A_DEVICE
    using L = Layout<D>;
    constexpr int C = Config<D>::kConsumers;
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = align_to_atom(smem_raw);
    auto* bars = reinterpret_cast<std::uint64_t*>(smem + L::kBarriers);
    std::uint64_t* q_full = bars;                  // [2]: a work item's Q
    std::uint64_t* q_empty = q_full + 2;           // [2]
    std::uint64_t* k_full = q_empty + 2;           // [kStages]
    std::uint64_t* v_full = k_full + kStages;      // [kStages]
    std::uint64_t* k_empty = v_full + kStages;     // [kStages]
    std::uint64_t* v_empty = k_empty + kStages;    // [kStages]

    const int wg = static_cast<int>(threadIdx.x) / kWarpgroup;
    const int items = p.heads_total * p.row_tiles;
    const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);

    if (threadIdx.x == 0) {
        for (int b = 0; b < 2; ++b) {
            mbar_init(&q_full[b], 1);
            mbar_init(&q_empty[b], C);  // one arrival per consumer warpgroup
        }
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&k_full[s], 1);
            mbar_init(&v_full[s], 1);
            mbar_init(&k_empty[s], C);
            mbar_init(&v_empty[s], C);
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    // The K/V ring runs on across work items: tile g of the CTA (counted over all its items) sits in
    // stage g % kStages, with parity (g / kStages) & 1.
    if (wg == 0) {
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) {
            int g = 0;
            for (int i = first, n = 0; i < items; i += step, ++n) {
                const WorkItem w = work_item<L::kRows>(p, i);
                const int col0 = w.head * D, qb = n % 2;
                // Q into the buffer the item two before used, once both consumers are done with it.
                mbar_wait(&q_empty[qb], static_cast<std::uint32_t>(((n / 2) & 1) ^ 1));
                mbar_arrive_expect_tx(&q_full[qb], L::kBoxes * L::kQBox);
                for (int b = 0; b < L::kBoxes; ++b)
                    tma_load_3d(smem + L::kQ + (qb * L::kBoxes + b) * L::kQBox, &map_q, &q_full[qb],
                                col0 + b * kBoxCols, w.row0, w.batch);
                for (int j = 0; j < w.key_tiles; ++j, ++g) {
                    const int s = g % kStages;
                    const std::uint32_t free_parity = ((g / kStages) & 1) ^ 1;
                    mbar_wait(&k_empty[s], free_parity);
                    mbar_arrive_expect_tx(&k_full[s], L::kBoxes * L::kKvBox);
                    for (int b = 0; b < L::kBoxes; ++b)
                        tma_load_3d(smem + L::kK + (s * L::kBoxes + b) * L::kKvBox, &map_k, &k_full[s],
                                    col0 + b * kBoxCols, j * kKeys, w.batch);
                    mbar_wait(&v_empty[s], free_parity);
                    mbar_arrive_expect_tx(&v_full[s], L::kBoxes * L::kKvBox);
                    for (int b = 0; b < L::kBoxes; ++b)
                        tma_load_3d(smem + L::kV + (s * L::kBoxes + b) * L::kKvBox, &map_v, &v_full[s],
                                    col0 + b * kBoxCols, j * kKeys, w.batch);
                }
            }
        }
        return;
    }

    setmaxnreg_inc<Config<D>::kConsumerRegs>();
    const int c = wg - 1;  // consumer: rows row0 + 64 c ... of each item
    const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
    const int warp = t / 32, lane = t % 32;
    const int g8 = lane / 4, q4 = lane % 4;

    float o[D / 2];
    float sc[kKeys / 2];
    std::uint32_t pa[kKeys / 16][4];
    const auto stage = [](int g) { return g % kStages; };
    const auto parity = [](int g) { return static_cast<std::uint32_t>((g / kStages) & 1); };
    // The consumers take turns issuing their products (named barriers 1 .. C, consumer
    // 0 first, each passing the turn to the next), item after item: one's softmax runs
    // while the others' products occupy the tensor cores.
    const int my_turn = kTurnBarrier + c, other_turn = kTurnBarrier + (c + 1) % C;
    if (c == C - 1) named_barrier_arrive<2 * kWarpgroup>(kTurnBarrier);

    int g0 = 0;  // the CTA's first K/V tile of this item
    for (int i = first, n = 0; i < items; i += step, ++n) {
        const WorkItem w = work_item<L::kRows>(p, i);
        const int qb = n % 2, kt = w.key_tiles;
        const int wg_row0 = w.row0 + c * kWgmmaM;
        const int my_row = wg_row0 + 16 * warp + g8;  // and my_row + 8
        const unsigned char* const q_smem = smem + L::kQ + qb * L::kBoxes * L::kQBox;
#pragma unroll
        for (int x = 0; x < D / 2; ++x) o[x] = 0.0f;
        RowState rows;

        // S_j = Q K_j^T over D / 16 k-steps, 4 per 64-column box (one commit group).
        const auto issue_s = [&](int j) {
            const int s = stage(g0 + j);
            mbar_wait(&k_full[s], parity(g0 + j));
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const int b = kk / 4, step_k = kk % 4;
                const std::uint64_t dq =
                    desc_k_step(sw128_kmajor_desc(q_smem + b * L::kQBox + c * kWgmmaM * kRowBytes), step_k);
                const std::uint64_t dk =
                    desc_k_step(sw128_kmajor_desc(smem + L::kK + (s * L::kBoxes + b) * L::kKvBox), step_k);
                Wgmma<DType::bf16, kKeys>::mma(sc, dq, dk, kk > 0 ? 1u : 0u);
            }
            wgmma_commit();
        };
        // O += P_j V_j, V N-major: 64 columns of D per box (LBO), 16 keys per k-step (one commit group).
        const auto issue_pv = [&](int j) {
            const int s = stage(g0 + j);
            mbar_wait(&v_full[s], parity(g0 + j));
            const std::uint64_t dv =
                SmemDescriptor{.start_address = smem_u32(smem + L::kV + s * L::kBoxes * L::kKvBox),
                               .leading_byte_offset = static_cast<std::uint32_t>(L::kKvBox),
                               .stride_byte_offset = kSwizzleAtom,
                               .swizzle = Swizzle::b128}
                    .encode();
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < kKeys / 16; ++kk)
                WgmmaRS<DType::bf16, D>::template mma<1>(o, pa[kk], desc_advance(dv, kk * 16 * kRowBytes), 1u);
            wgmma_commit();
        };
        const auto mask_of = [&](int j) {
            const int key0 = j * kKeys;
            return Mask{.key0 = key0, .row = my_row, .quad = q4, .seq = p.seq, .causal = p.causal,
                        .active = key0 + kKeys > p.seq || (p.causal && key0 + kKeys - 1 > wg_row0)};
        };
        // Both consumers are done reading this item's Q once their last S has completed.
        const auto release_q = [&](int j) {
            if (j == kt - 1 && t == 0) mbar_arrive(&q_empty[qb]);
        };

        mbar_wait(&q_full[qb], static_cast<std::uint32_t>((n / 2) & 1));
        named_barrier_sync<2 * kWarpgroup>(my_turn);
        issue_s(0);
        named_barrier_arrive<2 * kWarpgroup>(other_turn);
        wgmma_wait<0>();
        fence_registers(sc);
        if (t == 0) mbar_arrive(&k_empty[stage(g0)]);
        release_q(0);
        softmax_tile<kKeys>(sc, rows, mask_of(0), p.scale_log2);
        pack_p<kKeys>(sc, pa);
        for (int j = 1; j < kt; ++j) {
            // S_j and P_{j-1} V_{j-1} in flight together; the softmax of S_j runs under the latter.
            named_barrier_sync<2 * kWarpgroup>(my_turn);
            issue_s(j);
            issue_pv(j - 1);
            named_barrier_arrive<2 * kWarpgroup>(other_turn);
            wgmma_wait<1>();
            fence_registers(sc);
            if (t == 0) mbar_arrive(&k_empty[stage(g0 + j)]);
            release_q(j);
            const float2 rescale = softmax_tile<kKeys>(sc, rows, mask_of(j), p.scale_log2);
            wgmma_wait<0>();
            fence_registers(o);
            if (t == 0) mbar_arrive(&v_empty[stage(g0 + j - 1)]);
#pragma unroll
            for (int x = 0; x < D / 2; ++x) o[x] *= (x / 2) % 2 ? rescale.y : rescale.x;
            pack_p<kKeys>(sc, pa);
        }
        named_barrier_sync<2 * kWarpgroup>(my_turn);
        issue_pv(kt - 1);
        // The last consumer's last turn of the last item is passed to no one: consumer 0 has no turn left.
        if (c < C - 1 || i + step < items) named_barrier_arrive<2 * kWarpgroup>(other_turn);
        wgmma_wait<0>();
        fence_registers(o);
        if (t == 0) mbar_arrive(&v_empty[stage(g0 + kt - 1)]);
        g0 += kt;

        // O / l in bf16 and lse, straight from the registers (4-byte stores), while the producer is
        // already loading the next item's Q and K/V tiles.
        __nv_bfloat16* oh = p.o + static_cast<std::int64_t>(w.batch) * p.seq * p.ldo + w.head * D;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = rows.l[h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const int row = my_row + 8 * h;
            if (row >= p.seq) continue;
            const float inv = 1.0f / sum;
            __nv_bfloat16* orow = oh + static_cast<std::int64_t>(row) * p.ldo;
#pragma unroll
            for (int n8 = 0; n8 < D / 8; ++n8)
                *reinterpret_cast<std::uint32_t*>(orow + 8 * n8 + 2 * q4) =
                    pack_bf16(o[4 * n8 + 2 * h] * inv, o[4 * n8 + 2 * h + 1] * inv);
            if (p.lse != nullptr && q4 == 0)
                p.lse[(static_cast<std::int64_t>(w.batch) * p.heads + w.head) * p.seq + row] =
                    (rows.m[h] + log2f(sum)) * kLn2;
        }
    }
#else
    trap_without_sm90a("fa3 attention");
#endif
}

template <int D>
void launch(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream,
            Fa3Maps& maps) {
    constexpr int bytes = Layout<D>::kBytes;
    allow_dynamic_smem<fa3_forward_kernel<D>>(bytes);
    const Params p{.o = static_cast<__nv_bfloat16*>(a.o),
                   .lse = a.lse,
                   .ldo = d.ldo,
                   .seq = static_cast<int>(d.seq),
                   .heads = static_cast<int>(d.heads),
                   .scale_log2 = d.scale * kLog2e,
                   .causal = d.causal,
                   .heads_total = static_cast<int>(d.batch * d.heads),
                   .row_tiles = static_cast<int>((d.seq + Layout<D>::kRows - 1) / Layout<D>::kRows)};
    // Persistent: a CTA per SM (its consumers take all the registers), each walking work items.
    const std::int64_t items = static_cast<std::int64_t>(p.heads_total) * p.row_tiles;
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(items, sm90::sm_count())));
    // The plan's desc never changes, so the pointers are the maps' whole key.
    if (maps.qp != a.q) maps.q = token_map(a.q, d, d.ldq, Layout<D>::kRows), maps.qp = a.q;
    if (maps.kp != a.k) maps.k = token_map(a.k, d, d.ldk, kKeys), maps.kp = a.k;
    if (maps.vp != a.v) maps.v = token_map(a.v, d, d.ldv, kKeys), maps.vp = a.v;
    fa3_forward_kernel<D><<<grid, Config<D>::kThreads, bytes, stream>>>(maps.q, maps.k, maps.v, p);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fa3_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream,
                 Fa3Maps& maps) {
    if (d.head_dim == 64)
        launch<64>(d, a, stream, maps);
    else
        launch<128>(d, a, stream, maps);
}

}  // namespace rigel::cuda::attention
