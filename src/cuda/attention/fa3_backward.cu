// Attention's backward pass on wgmma and TMA, warp-specialized: rung 3's
// backward (the FlashAttention-3 algorithm, without its warpgroup ping-pong yet).
//
// What it adds over fa2_backward.cu (mma.sync): the five products of a tile
// run on Hopper's warpgroup instructions, and Q, dO, K and V arrive by TMA.
// fa2_backward's warps each own 16 keys and read the whole Q and dO tile from
// shared memory for every product, so its loads, not its tensor cores, set its
// pace (about 130 Tflop/s at S = 4096 against cuDNN's 450-570,
// 2026-12-01_ededb02_targets_attention.csv); a wgmma reads each operand tile
// once per 64 keys.
//
// A CTA owns 128 keys of one head and walks the query tiles (128 rows at
// D = 64, 64 at D = 128), as fa2_backward does, so that dK and dV stay in
// registers and are written once. Three warpgroups:
//   producer (warpgroup 0, one thread): K and V once, then Q and dO of each
//     query tile into a two-stage ring (TMA, 128B swizzle, zeros past S),
//     a stage refilled when both consumers have released it.
//   consumers (warpgroups 1 and 2, 64 keys each), per query tile:
//     S^T  = K Q^T            wgmma m64nRk16, A = K and B = Q both K-major
//     dP^T = V dO^T           the same with V and dO
//     P^T  = 2^(S^T scale log2e - lse log2e), masked keys 0
//     dS^T = P^T (dP^T - Dl)  (Dl = rowsum(dO * O), fa2_backward.cu)
//     dV  += P^T dO           wgmma with A = P^T from registers, B = dO N-major
//     dK  += dS^T Q           A = dS^T from registers, B = Q N-major
//     dS^T in bf16 to shared memory (both consumers' 64 keys: 128 x R)
//     dQ_b = dS K             a 64 x 64 block of the tile's dQ over all 128
//                             keys: A = dS M-major (dS^T read transposed), B =
//                             K N-major; consumer c takes rows 64c.. (D = 64) or
//                             columns 64c.. (D = 128)
//     dQ_b to shared memory (fp32, 128B-swizzled), and one thread of the
//     consumer has the copy engine add it into the fp32 accumulator
//     (cp.reduce.async.bulk.tensor), two boxes of 32 columns.
//   The two consumers meet once per tile (a named barrier) after writing dS^T,
//   which is double-buffered, as are the rows' lse and Dl in shared memory.
//   Inside a consumer, P^T is computed while dP^T's wgmma still runs, and dV
//   and dK are issued before dS^T's stores and the meeting, so that they run
//   under both.
//
// dQ is accumulated as fa2_backward's atomic mode does (every key tile adds
// into every query row), but by the copy engine from shared memory: the
// consumer stores its block there and goes on to the next tile while the
// adds run, instead of issuing 16 8-byte atomic adds a thread and tile (the
// first form); each consumer's staging box is free again once
// the reduction has read it (bulk_wait_read, checked before the next tile's
// block is stored). dK, dV are deterministic. A deterministic desc runs
// fa2_backward (its dQ pass) instead.
//
// Measured, first form (every product after the whole softmax; the two
// consumers meeting before dV and dK): at S = 4096, D = 128 274 Tflop/s,
// 0.50x cuDNN (2026-12-01_da76df2_targets_attention.csv). With P^T under
// dP^T's wgmma and dV, dK issued before the meeting: 302 Tflop/s, 0.55x cuDNN
// and 1.82x fa2_backward (causal 0.62x); D = 64 197 Tflop/s, 0.43x (causal
// 0.50x), 1.13x; GPT-2's S = 1024, D = 64, causal 139 Tflop/s, 0.62x, 1.11x
// (2026-12-01_2e246c5_targets_attention.csv, _gpt2_attention.csv). What it
// still lacks against cuDNN: the two consumers work in lockstep on one tile,
// so the tensor cores idle while both compute P^T and dS^T; nothing of the
// next tile's S^T is issued under this tile's dQ. With dQ added by the copy
// engine instead of by every thread's atomics (b8126a2): D = 64, S = 4096
// 308 Tflop/s, 0.73x cuDNN (0.61x before; 2026-12-02_c952acb_targets_attention.csv),
// and GPT-2's training step's attention_backward 4.88 -> 4.23 ms. Issuing
// the next tile's S^T under this tile's dQ made ptxas serialize every wgmma
// (docs/attention.md, Next).
//
// The lockstep is not what costs, measured twice: each consumer computing the
// tile's whole dQ over its own 64 keys (the same flops) so that the two need
// not meet. With each block reduced into L2 on its own (dbf9f68: 64 KB a CTA
// and tile instead of 32) the backward at D = 128, S = 4096 ran at 0.611x
// cuDNN (324.7 Tflop/s), D = 64 0.625x; with the blocks summed in shared
// memory one way (e0e135c: consumer 0 stores its block and goes on, consumer
// 1 adds its own and reduces the sum) 0.648x (345.5 Tflop/s), D = 64 0.658x,
// Nsight Compute showing the tensor pipe 40 % active (43 % here) and
// short-scoreboard and barrier stalls up. Both passed all 34 checks
// (results/h200/experiments/2026-12-02_dbf9f68_*, _e0e135c_*). So the order
// here stays.
//
// What the schedule lost instead was in the SASS (a48aaf4): P^T's mask,
// written as a select among the exponentials, was computed for every tile,
// masked or not, between the Q/dO wait and the first wgmma (about 270
// instructions a thread at D = 128). As a branch after the exponentials
// (below): D = 128, S = 4096 0.822x cuDNN (423 Tflop/s), causal 0.899x;
// D = 64 0.806x; GPT-2's case 0.955x (2026-12-03_a48aaf4_targets_attention.csv).
// Then three changes, measured together (5ff92c6): dK's A from registers
// (dS^T packed once, as P^T is for dV; 16 KB less shared memory read a
// tile), dK issued after dQ so that dQ's block is staged while dK runs, and
// the grid key-block-major (below). D = 128, S = 4096 0.912x cuDNN
// (471.9 Tflop/s), causal 0.950x; D = 64 0.988x, causal 1.058x; GPT-2's case
// 1.072x (2026-12-03_5ff92c6_targets_attention.csv, _gpt2_attention.csv).
// Without the grid order (6f1c744, a later call): D = 128 0.892x, D = 64
// 0.825x, GPT-2's case 0.962x; the order is most of D = 64's gain
// (docs/attention.md, Next).
//
// Shared memory: K, V (D/64 boxes of 128 keys x 128 B each); Q and dO, two
// stages of D/64 boxes of R rows; dS^T, two buffers of R/64 boxes of 128 keys
// x 64 rows; dQ's staging, two boxes of 64 rows x 32 fp32 per consumer; lse
// and Dl of two tiles. D = 64: 195 KB; D = 128: 193 KB.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

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

constexpr int kKeys = 128;  // keys per CTA: 64 per consumer warpgroup
constexpr int kThreads = 3 * kWarpgroup;
constexpr int kPairBarrier = 1;  // the consumers' meeting once per tile (0 is __syncthreads')
constexpr int kOwnBarrier = 2;   // + consumer: one warpgroup's dQ block staged, before its copy
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct BwdLayout {
    static constexpr int kRows = D == 64 ? 128 : 64;  // query rows per tile (D = 128: registers)
    static constexpr int kBoxes = D / kBoxCols;       // 64-column boxes of a K, V, Q or dO tile
    static constexpr int kKvBox = kKeys * kRowBytes;  // one box of K or V: 16 KB
    static constexpr int kRowBox = kRows * kRowBytes;  // one box of a Q or dO tile
    static constexpr int kDsBoxes = kRows / 64;        // dS^T: 64 query rows (128 B) per key and box
    static constexpr int kDsBox = kKeys * kRowBytes;
    static constexpr int kK = 0;
    static constexpr int kV = kK + kBoxes * kKvBox;
    static constexpr int kQ = kV + kBoxes * kKvBox;         // [stage][box]
    static constexpr int kDo = kQ + 2 * kBoxes * kRowBox;   // [stage][box]
    static constexpr int kDs = kDo + 2 * kBoxes * kRowBox;  // [buffer][box]
    static constexpr int kDqBox = kWgmmaM * kRowBytes;           // 64 rows x 32 fp32 columns of dQ
    static constexpr int kDq = kDs + 2 * kDsBoxes * kDsBox;      // [consumer][box]
    static constexpr int kStats = kDq + 2 * 2 * kDqBox;          // [buffer][lse log2 e | Dl][row] floats
    static constexpr int kBarriers = kStats + 2 * 2 * kRows * 4;
    static constexpr int kBytes = kBarriers + 64 + kSwizzleAtom;  // barriers, and room to align the base
    // The 64 x 64 block of the tile's dQ that consumer c computes: rows of
    // dS box kDqBox(c), columns of K box kDqKBox(c).
    static constexpr int dq_ds_box(int c) { return D == 64 ? c : 0; }
    static constexpr int dq_k_box(int c) { return D == 64 ? 0 : c; }
    static_assert(kKeys == 2 * kWgmmaM && (D == 64 ? kDsBoxes == 2 : kBoxes == 2), "one dQ block per consumer");
    static_assert(kBytes <= 227 * 1024, "the per-block shared-memory limit of sm_90");
};

struct BwdParams {
    const float* lse;  // [B, H, S], natural log
    const float* dl;   // [B, H, S]
    __nv_bfloat16 *dk, *dv;
    std::int64_t ldk, ldv;
    int seq, heads;
    float scale, scale_log2;
    bool causal;
};

// Operand descriptors from a shared-memory byte address (sm90.cuh's
// sw128_kmajor_desc and the N-major form of fa3_forward's V): a 128B-swizzled
// tile read K-major, or M- or N-major (along its 64-element rows) with
// `box_bytes` between 64-wide boxes, 8 rows of K 1024 bytes on.
__device__ __forceinline__ std::uint64_t k_major_desc(std::uint32_t addr) {
    return SmemDescriptor{.start_address = addr,
                          .leading_byte_offset = 16,
                          .stride_byte_offset = kSwizzleAtom,
                          .swizzle = Swizzle::b128}
        .encode();
}
__device__ __forceinline__ std::uint64_t mn_major_desc(std::uint32_t addr, int box_bytes) {
    return SmemDescriptor{.start_address = addr,
                          .leading_byte_offset = static_cast<std::uint32_t>(box_bytes),
                          .stride_byte_offset = kSwizzleAtom,
                          .swizzle = Swizzle::b128}
        .encode();
}
constexpr int kMnStep = 16 * kRowBytes;  // one k16 step of an M- or N-major operand: 16 rows

template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    fa3_backward_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                        const __grid_constant__ CUtensorMap map_v, const __grid_constant__ CUtensorMap map_do,
                        const __grid_constant__ CUtensorMap map_dq, const __grid_constant__ BwdParams p) {
#if RIGEL_SM90A_DEVICE
    using L = BwdLayout<D>;
    constexpr int R = L::kRows;
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = align_to_atom(smem_raw);
    auto* bars = reinterpret_cast<std::uint64_t*>(smem + L::kBarriers);
    std::uint64_t* kv_full = bars;
    std::uint64_t* q_full = bars + 1;   // [2]: Q and dO of a tile
    std::uint64_t* q_empty = bars + 3;  // [2]
    float* const stats = reinterpret_cast<float*>(smem + L::kStats);

    const int wg = static_cast<int>(threadIdx.x) / kWarpgroup;
    // CTA x: key block x % blocks of head x / blocks (heads of all batches in a row), so that the CTAs
    // running together are the key blocks of a few heads, which read the same Q and dO and add into the
    // same dQ rows while those are in the L2 (head-major, each wave held two key blocks of every head).
    const int blocks = (p.seq + kKeys - 1) / kKeys;
    const int bh = static_cast<int>(blockIdx.x) / blocks;
    const int head = bh % p.heads, batch = bh / p.heads;
    const int key0 = (static_cast<int>(blockIdx.x) % blocks) * kKeys;
    // Causal: rows before this CTA's first key see none of its keys (key0 is
    // a multiple of R, so the first tile starts at key0).
    const int first_tile = p.causal ? key0 / R : 0;
    const int tiles = (p.seq + R - 1) / R;

    if (threadIdx.x == 0) {
        mbar_init(kv_full, 1);
        for (int s = 0; s < 2; ++s) {
            mbar_init(&q_full[s], 1);
            mbar_init(&q_empty[s], 2);  // one arrival per consumer warpgroup
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    if (wg == 0) {
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) {
            const int col0 = head * D;
            mbar_arrive_expect_tx(kv_full, 2 * L::kBoxes * L::kKvBox);
            for (int b = 0; b < L::kBoxes; ++b) {
                tma_load_3d(smem + L::kK + b * L::kKvBox, &map_k, kv_full, col0 + b * kBoxCols, key0, batch);
                tma_load_3d(smem + L::kV + b * L::kKvBox, &map_v, kv_full, col0 + b * kBoxCols, key0, batch);
            }
            for (int j = first_tile; j < tiles; ++j) {
                const int n = j - first_tile, s = n % 2;
                mbar_wait(&q_empty[s], static_cast<std::uint32_t>(((n / 2) & 1) ^ 1));
                mbar_arrive_expect_tx(&q_full[s], 2 * L::kBoxes * L::kRowBox);
                for (int b = 0; b < L::kBoxes; ++b) {
                    tma_load_3d(smem + L::kQ + (s * L::kBoxes + b) * L::kRowBox, &map_q, &q_full[s],
                                col0 + b * kBoxCols, j * R, batch);
                    tma_load_3d(smem + L::kDo + (s * L::kBoxes + b) * L::kRowBox, &map_do, &q_full[s],
                                col0 + b * kBoxCols, j * R, batch);
                }
            }
        }
        return;
    }

    setmaxnreg_inc<240>();
    const int c = wg - 1;  // consumer: keys key0 + 64 c ...
    const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
    const int ct = static_cast<int>(threadIdx.x) - kWarpgroup;  // 0..255 over both consumers
    const int warp = t / 32, lane = t % 32;
    const int g = lane / 4, q4 = lane % 4;
    const int wkey0 = key0 + c * kWgmmaM;
    const int my_key = wkey0 + 16 * warp + g;  // and my_key + 8: this thread's accumulator rows
    const std::int64_t token0 = static_cast<std::int64_t>(batch) * p.seq;
    const std::int64_t head_rows = (static_cast<std::int64_t>(batch) * p.heads + head) * p.seq;

    // Row ct of a tile's lse (log2 domain) and Dl, read by thread ct < R;
    // rows past S get lse = +inf (so P = 0) and Dl = 0.
    static_assert(R <= 2 * kWarpgroup, "one row's statistics per consumer thread");
    // The loads' values are used only where they are stored (lse scaled to log2 there): an operation on
    // them right after the loads made the loading warps wait out the L2 round trip at the top of each
    // tile, and the rest of their warpgroup with them at its first wgmma (Nsight Compute's source page at
    // 60c3bb2: the FMUL by log2 e and that wgmma 6.5 % of the warps' samples). Measured at 9decfab: no
    // change beyond the noise (S = 4096, D = 128: 0.701x cuDNN, 0.707x at 0f2ff17; GPT-2 0.876x, 0.873x).
    const auto read_stats = [&](int j) {
        const int row = j * R + ct;
        float2 v = make_float2(INFINITY, 0.0f);
        if (ct < R && row < p.seq) v = make_float2(p.lse[head_rows + row], p.dl[head_rows + row]);
        return v;
    };
    const auto put_stats = [&](float2 v, int buf) {
        if (ct < R) stats[buf * 2 * R + ct] = v.x * kLog2e, stats[buf * 2 * R + R + ct] = v.y;
    };
    put_stats(read_stats(first_tile), 0);
    named_barrier_sync<2 * kWarpgroup>(kPairBarrier);

    float dk[D / 2] = {}, dv[D / 2] = {};
    const int key_offset = c * kWgmmaM * kRowBytes;  // this consumer's 64 keys inside a K or V box: 8 KB in
    mbar_wait(kv_full, 0);

    // The descriptors and the dS^T addresses are built from this address
    // inside the loop, which the compiler cannot prove constant: so it
    // recomputes them per tile rather than holding each k-step's value
    // (loop invariants) in registers across the whole loop.
    std::uint32_t base = smem_u32(smem);
    for (int j = first_tile; j < tiles; ++j) {
        asm volatile("" : "+r"(base));
        const int n = j - first_tile, s = n % 2, buf = n % 2;
        const int row0 = j * R;
        const std::uint32_t q_stage = base + L::kQ + s * L::kBoxes * L::kRowBox;
        const std::uint32_t do_stage = base + L::kDo + s * L::kBoxes * L::kRowBox;
        const std::uint32_t ds_addr = base + L::kDs + buf * L::kDsBoxes * L::kDsBox;
        const float* const slse = stats + buf * 2 * R;
        const float* const sdl = slse + R;
        // The next tile's statistics, read now and stored after this tile's
        // softmax, so that their L2 round trip hides behind the products.
        const float2 next_stats = j + 1 < tiles ? read_stats(j + 1) : float2{};
        mbar_wait(&q_full[s], static_cast<std::uint32_t>((n / 2) & 1));

        // S^T = K Q^T and dP^T = V dO^T: this consumer's 64 keys x the tile's R rows, over D, each its
        // own commit group (keys: this consumer's rows of K or V; rows: the stage's Q or dO).
        float st[R / 2], dpt[R / 2];
        const auto keys_by_rows = [&](float(&acc)[R / 2], std::uint32_t keys, std::uint32_t rows) {
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const int b = kk / 4, step = kk % 4;
                Wgmma<DType::bf16, R>::mma(acc, desc_k_step(k_major_desc(keys + b * L::kKvBox + key_offset), step),
                                           desc_k_step(k_major_desc(rows + b * L::kRowBox), step), kk > 0 ? 1u : 0u);
            }
            wgmma_commit();
        };
        // dV += P^T dO and dK += dS^T Q: A this consumer's 64 keys x the tile's R rows from registers, B
        // the stage's R x D tile of dO or Q (N-major), one commit group.
        const auto keys_by_stage = [&](float(&acc)[D / 2], const std::uint32_t(&a)[R / 16][4], std::uint32_t rows) {
            const std::uint64_t rows_n = mn_major_desc(rows, L::kRowBox);
#pragma unroll
            for (int kk = 0; kk < R / 16; ++kk)
                WgmmaRS<DType::bf16, D>::template mma<1>(acc, a[kk], desc_advance(rows_n, kk * kMnStep), 1u);
            wgmma_commit();
        };
        wgmma_fence();
        keys_by_rows(st, base + L::kK, q_stage);
        keys_by_rows(dpt, base + L::kV, do_stage);

        // P^T in place of S^T while dP^T is still being computed (accumulator
        // i: key my_key + 8 ((i / 2) % 2), tile row 8 (i / 4) + 2 q4 + i % 2),
        // then dS^T in place of dP^T.
        wgmma_wait<1>();
        fence_registers(st);
        // Tile rows 8 n8 + 2 q4 and + 1 of lse and Dl, one 8-byte load each.
        const auto* const slse2 = reinterpret_cast<const float2*>(slse);
        const auto* const sdl2 = reinterpret_cast<const float2*>(sdl);
#pragma unroll
        for (int n8 = 0; n8 < R / 8; ++n8) {
            const float2 l = slse2[4 * n8 + q4];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                st[4 * n8 + 2 * h] = fast_exp2(fmaf(st[4 * n8 + 2 * h], p.scale_log2, -l.x));
                st[4 * n8 + 2 * h + 1] = fast_exp2(fmaf(st[4 * n8 + 2 * h + 1], p.scale_log2, -l.y));
            }
        }
        // The masked tiles' P^T (keys past S; causal, keys after the row) to 0, in a branch of its own: written
        // as a select inside the loop above, ptxas computed all R / 2 masks of every tile, masked or not,
        // before the tile's first wgmma (about 270 instructions a thread at D = 128, with the predicates
        // packed into registers), so the tensor cores waited for them on every tile. Key my_key + 8 h lies
        // after row row0 + 8 (i / 4) + 2 q4 + i % 2 when 8 h - 8 (i / 4) - i % 2 > row0 + 2 q4 - my_key: a
        // comparison with an immediate per element.
        if (key0 + kKeys > p.seq || (p.causal && wkey0 + kWgmmaM - 1 > row0)) {
            const int diag = p.causal ? row0 + 2 * q4 - my_key : INT_MAX;
            const bool past[2] = {my_key >= p.seq, my_key + 8 >= p.seq};
#pragma unroll
            for (int i = 0; i < R / 2; ++i) {
                const int h = (i / 2) % 2;
                if (past[h] || 8 * h - 8 * (i / 4) - (i % 2) > diag) st[i] = 0.0f;
            }
        }
        std::uint32_t pa[R / 16][4];
        pack_p<R>(st, pa);
        wgmma_wait<0>();
        fence_registers(dpt);
#pragma unroll
        for (int n8 = 0; n8 < R / 8; ++n8) {
            const float2 dl = sdl2[4 * n8 + q4];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                dpt[4 * n8 + 2 * h] = st[4 * n8 + 2 * h] * (dpt[4 * n8 + 2 * h] - dl.x);
                dpt[4 * n8 + 2 * h + 1] = st[4 * n8 + 2 * h + 1] * (dpt[4 * n8 + 2 * h + 1] - dl.y);
            }
        }
        // dS^T in bf16 as the A fragments of dK += dS^T Q (this consumer's 64 keys, from registers as
        // P^T is for dV); word 2 n8 + h of them (fragment n8 / 2, register 2 (n8 % 2) + h) holds tile
        // rows 8 n8 + 2 q4 and + 1 of key my_key + 8 h, which the stores below put in shared memory too.
        std::uint32_t dsa[R / 16][4];
        pack_p<R>(dpt, dsa);
        // dV += P^T dO, A from registers, issued before dS^T goes to shared
        // memory, so that it runs under its stores and the consumers' meeting.
        wgmma_fence();
        keys_by_stage(dv, pa, do_stage);

        // dS^T to shared memory in bf16 for dQ, 128B-swizzled as TMA would
        // have written it: row `key` of a box, 16-byte chunk (row / 8) ^ (key % 8).
        // For tile row col = 8 n8 + 2 q4 and key = 64 c + 16 warp + g + 8 h:
        // box n8 / 8, chunk (n8 % 8) ^ g (key % 8 = g), byte 4 q4 in it; the
        // chunk's offset is (16 (n8 % 8)) ^ (16 g). Written so, the stores'
        // addresses are one XOR and an immediate from two per tile: ptxas
        // otherwise keeps all R / 4 of them across the loop and spills them,
        // reloading them from local memory every tile.
        const int g16 = 16 * g;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const std::uint32_t key_row =
                ds_addr + (c * kWgmmaM + 16 * warp + g + 8 * h) * kRowBytes + 4 * q4;  // key 0..127
#pragma unroll
            for (int n8 = 0; n8 < R / 8; ++n8) {
                const std::uint32_t at = key_row + (n8 / 8) * L::kDsBox + ((16 * (n8 % 8)) ^ g16);
                asm volatile("st.shared.b32 [%0], %1;" ::"r"(at), "r"(dsa[n8 / 2][2 * (n8 % 2) + h]) : "memory");
            }
        }
        fence_proxy_async_smem();
        if (t == 0) bulk_wait_read<0>();  // the last tile's dQ block has been read from the staging boxes
        if (j + 1 < tiles) put_stats(next_stats, buf ^ 1);
        named_barrier_sync<2 * kWarpgroup>(kPairBarrier);  // both halves of dS^T written, the staging free

        // This consumer's block of dQ = dS K (zeroed before the fence that
        // orders register writes before wgmma), then dK += dS^T Q with A from
        // registers, each its own group: dQ's block is staged and handed to
        // the copy engine while dK's product runs.
        float dq[kWgmmaM / 2] = {};
        wgmma_fence();
        const std::uint64_t ds_m = mn_major_desc(ds_addr + L::dq_ds_box(c) * L::kDsBox, L::kDsBox);
        const std::uint64_t k_n = mn_major_desc(base + L::kK + L::dq_k_box(c) * L::kKvBox, L::kKvBox);
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk)
            Wgmma<DType::bf16, kWgmmaM>::template mma<1, 1>(dq, desc_advance(ds_m, kk * kMnStep),
                                                            desc_advance(k_n, kk * kMnStep), kk > 0 ? 1u : 0u);
        wgmma_commit();
        keys_by_stage(dk, dsa, q_stage);
        wgmma_wait<1>();  // dV and dQ done
        fence_registers(dv);
        fence_registers(dq);

        // The block to the staging boxes, swizzled as TMA reads them: row r = 16 warp + g + 8 h, column
        // 8 n8 + 2 q4 in box n8 / 4, 16-byte chunk (2 (n8 % 4) + q4 / 2) ^ (r % 8), r % 8 = g; its offset
        // is (32 (n8 % 4)) ^ (16 (q4 / 2 ^ g)), so that each store's address is an XOR and an immediate.
        const std::uint32_t stage = base + L::kDq + c * 2 * L::kDqBox;
        const int chunk16 = 16 * ((q4 / 2) ^ g);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const std::uint32_t row_at = stage + (16 * warp + g + 8 * h) * kRowBytes + 8 * (q4 % 2);
#pragma unroll
            for (int n8 = 0; n8 < kWgmmaM / 8; ++n8) {
                const std::uint32_t at = row_at + (n8 / 4) * L::kDqBox + ((32 * (n8 % 4)) ^ chunk16);
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(at), "f"(dq[4 * n8 + 2 * h]),
                             "f"(dq[4 * n8 + 2 * h + 1])
                             : "memory");
            }
        }
        fence_proxy_async_smem();
        named_barrier_sync<kWarpgroup>(kOwnBarrier + c);  // the block staged
        if (t == 0) {
            // Rows past S are left out by the copy engine (the map's token extent).
            const int col = head * D + kBoxCols * L::dq_k_box(c), row = row0 + kWgmmaM * L::dq_ds_box(c);
            tma_reduce_add_3d(&map_dq, stage, col, row, batch);
            tma_reduce_add_3d(&map_dq, stage + L::kDqBox, col + kAccBoxCols, row, batch);
            bulk_commit();
        }
        wgmma_wait<0>();  // dK done: the stage's Q and dO are read
        fence_registers(dk);
        if (t == 0) mbar_arrive(&q_empty[s]);
    }
    if (t == 0) bulk_wait<0>();  // the last reductions done before the CTA's shared memory goes

    // dK = scale dS^T Q and dV in bf16, for this thread's keys inside the sequence.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int key = my_key + 8 * h;
        if (key >= p.seq) continue;
        __nv_bfloat16* dkr = p.dk + (token0 + key) * p.ldk + head * D;
        __nv_bfloat16* dvr = p.dv + (token0 + key) * p.ldv + head * D;
#pragma unroll
        for (int n8 = 0; n8 < D / 8; ++n8) {
            const int d = 8 * n8 + 2 * q4;
            *reinterpret_cast<std::uint32_t*>(dkr + d) =
                pack_bf16(dk[4 * n8 + 2 * h] * p.scale, dk[4 * n8 + 2 * h + 1] * p.scale);
            *reinterpret_cast<std::uint32_t*>(dvr + d) = pack_bf16(dv[4 * n8 + 2 * h], dv[4 * n8 + 2 * h + 1]);
        }
    }
#else
    (void)map_q, (void)map_k, (void)map_v, (void)map_do, (void)map_dq, (void)p;
    trap_without_sm90a("fa3 attention backward");
#endif
}

template <int D>
void launch(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
            cudaStream_t stream, Fa3BackwardMaps& maps) {
    using L = BwdLayout<D>;
    backward_prepare(d, a, dq_acc, dl, true, stream);
    allow_dynamic_smem<fa3_backward_kernel<D>>(L::kBytes);
    // The plan's desc never changes, so the pointers are the maps' whole key.
    if (maps.qp != a.q) maps.q = token_map(a.q, d, d.ldq, L::kRows), maps.qp = a.q;
    if (maps.kp != a.k) maps.k = token_map(a.k, d, d.ldk, kKeys), maps.kp = a.k;
    if (maps.vp != a.v) maps.v = token_map(a.v, d, d.ldv, kKeys), maps.vp = a.v;
    if (maps.dp != a.dout) maps.dout = token_map(a.dout, d, d.ldo, L::kRows), maps.dp = a.dout;
    if (maps.accp != dq_acc) maps.dq_acc = accumulator_map(dq_acc, d, kWgmmaM), maps.accp = dq_acc;
    const BwdParams p{.lse = a.lse,
                      .dl = dl,
                      .dk = static_cast<__nv_bfloat16*>(a.dk),
                      .dv = static_cast<__nv_bfloat16*>(a.dv),
                      .ldk = d.ldk,
                      .ldv = d.ldv,
                      .seq = static_cast<int>(d.seq),
                      .heads = static_cast<int>(d.heads),
                      .scale = d.scale,
                      .scale_log2 = d.scale * kLog2e,
                      .causal = d.causal};
    const auto grid = static_cast<unsigned>(d.batch * d.heads * ((d.seq + kKeys - 1) / kKeys));
    fa3_backward_kernel<D><<<grid, kThreads, L::kBytes, stream>>>(maps.q, maps.k, maps.v, maps.dout, maps.dq_acc, p);
    RIGEL_CUDA_CHECK_LAUNCH();
    backward_store_dq(d, a, dq_acc, stream);
}

}  // namespace

void fa3_backward(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
                  cudaStream_t stream, Fa3BackwardMaps& maps) {
    if (d.head_dim == 64)
        launch<64>(d, a, dq_acc, dl, stream, maps);
    else
        launch<128>(d, a, dq_acc, dl, stream, maps);
}

}  // namespace rigel::cuda::attention
