// Attention's backward pass on mma.sync (the FlashAttention-2 algorithm):
// dQ, dK and dV from Q, K, V, O, dO and the forward's logsumexp, P
// recomputed tile by tile, no S x S matrix stored.
//
// Three launches:
//   1. Dl_i = dO_i . O_i per row (fp32, [B, H, S]), D / 8 lanes per row; and
//      the fp32 dQ accumulator zeroed by the same threads.
//   2. The main kernel: a CTA owns 64 keys of one head (4 warps of 16 keys),
//      holds their K and V in shared memory and their dK and dV accumulators
//      in registers, and walks the query tiles (64 rows at D = 64, 32 at
//      D = 128, Q and dO double-buffered by cp.async). Per tile, each warp
//      computes, for its 16 keys (so every product's rows are the warp's keys):
//        S^T  = K Q^T,  P^T = 2^(S^T scale log2e - lse log2e)   (masked keys: 0)
//        dP^T = V dO^T
//        dV  += P^T dO            (P^T in bf16, straight from the accumulators)
//        dS^T = P^T (dP^T - Dl)
//        dK  += dS^T Q            (dS^T in bf16)
//      then dS^T goes to shared memory, and the 4 warps, re-partitioned over
//      the tile's query rows, compute dQ_tile = dS K and add it into the fp32
//      accumulator with atomic adds.
//   3. dQ = scale x the accumulator, rounded to bf16.
//
// dQ by atomics: every key tile of a head contributes to every query row's
// dQ, and CTAs own key tiles (so that dK and dV, the larger sums, stay in
// registers and are written once). The fp32 adds from different CTAs land in
// an order that varies from run to run, so dQ's last bits may too; dK and dV
// are deterministic.
//
// The deterministic mode (Desc::deterministic) leaves dQ out of the main
// kernel and computes it in a pass of its own, query-stationary as the
// forward is: a CTA per 64 query rows walks the key tiles in order,
// recomputes S = Q K^T and dP = dO V^T for its rows, and keeps
// dQ += (P (dP - Dl)) K in registers; no two CTAs add into the same row, so
// every bit is fixed by the inputs. The price is the recomputation of S and
// dP: about 40 % more tensor work than the atomic mode.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/attention_kernels.cuh"
#include "cuda/attention/mma_sync_tiles.cuh"
#include "cuda/bf16x8.cuh"
#include "cuda/check.cuh"

namespace rigel::cuda::attention {
namespace {

constexpr int kKeys = 64;  // keys per CTA
constexpr int kWarps = 4;  // 16 keys each
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct Bwd {
    static constexpr int kRows = D == 64 ? 64 : 32;  // query rows per tile (D = 128: registers)
    // dQ's warp tiles: 16 rows x 64 columns, kRows / 16 x D / 64 of them = 4.
    static constexpr int kDqRowTiles = kRows / 16;
    static_assert(kDqRowTiles * (D / 64) == kWarps);
    // Shared memory, bf16 elements: K, V; Q and dO twice; dS^T. Then lse and Dl (floats).
    static constexpr int kK = 0, kV = kKeys * D, kQ = 2 * kKeys * D, kDo = kQ + 2 * kRows * D,
                         kDs = kDo + 2 * kRows * D, kEnd = kDs + kKeys * kRows;
    static constexpr int kBytes = kEnd * 2 + 2 * kRows * 4;
};

struct BwdParams {
    const __nv_bfloat16 *q, *k, *v, *dout;
    const float* lse;
    const float* dl;
    float* dq_acc;  // [B S][H D] fp32 (the atomic mode)
    __nv_bfloat16 *dq, *dk, *dv;
    std::int64_t ldq, ldk, ldv, ldo;
    int seq, heads;
    float scale, scale_log2;
    bool causal;
};

// Where one head of one sequence starts in each input.
template <int D>
struct HeadView {
    std::int64_t token0;
    const __nv_bfloat16 *q, *k, *v, *dout;
    const float *lse, *dl;
    __device__ HeadView(const BwdParams& p, int batch, int head)
        : token0(static_cast<std::int64_t>(batch) * p.seq),
          q(p.q + token0 * p.ldq + head * D),
          k(p.k + token0 * p.ldk + head * D),
          v(p.v + token0 * p.ldv + head * D),
          dout(p.dout + token0 * p.ldo + head * D),
          lse(p.lse + (static_cast<std::int64_t>(batch) * p.heads + head) * p.seq),
          dl(p.dl + (static_cast<std::int64_t>(batch) * p.heads + head) * p.seq) {}
};

// ---- 1. Dl = rowsum(dO * O) ----------------------------------------------------

// D / 8 lanes per row, 16 bytes of O and of dO each. With `zero` set, each
// thread also zeroes the 8 floats of the dQ accumulator at the same place,
// [B S][H D] being the rows' order too, in place of a memset of its own.
template <int D>
__global__ void __launch_bounds__(256) dot_rows_kernel(const __nv_bfloat16* __restrict__ o,
                                                       const __nv_bfloat16* __restrict__ dout, std::int64_t ldo,
                                                       int seq, int heads, std::int64_t rows, float* __restrict__ dl,
                                                       float* __restrict__ zero) {
    constexpr int kLanes = D / 8;
    const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::int64_t row = thread / kLanes;
    const int part = static_cast<int>(thread % kLanes);
    // Lanes past the last row stay for the shuffles (a warp may hold rows on both sides of the end).
    const bool in = row < rows;
    // row = (b S + s) H + h: tokens outer, so neighbouring rows are the same token's heads.
    const std::int64_t token = in ? row / heads : 0;
    const int h = in ? static_cast<int>(row % heads) : 0;
    float sum = 0.0f;
    if (in) {
        const std::int64_t at = token * ldo + static_cast<std::int64_t>(h) * D + 8 * part;
        float a[8], b[8];
        load8(a, o + at);
        load8(b, dout + at);
#pragma unroll
        for (int i = 0; i < 8; ++i) sum = fmaf(a[i], b[i], sum);
    }
#pragma unroll
    for (int off = kLanes / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (!in) return;
    const std::int64_t bt = token / seq, s = token % seq;
    if (part == 0) dl[(bt * heads + h) * seq + s] = sum;
    if (zero != nullptr) {
        auto* z = reinterpret_cast<float4*>(zero + 8 * thread);
        z[0] = z[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

// ---- 3. dQ = scale x accumulator -------------------------------------------------

// Eight elements a thread: 32 bytes of the accumulator in, 16 bytes of dQ out.
__global__ void dq_store_kernel(const float* __restrict__ acc, __nv_bfloat16* __restrict__ dq, std::int64_t ldq,
                                int width, std::int64_t octets, float scale) {
    const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= octets) return;
    const std::int64_t e = 8 * i, token = e / width, col = e % width;
    const float4 lo = *reinterpret_cast<const float4*>(acc + e), hi = *reinterpret_cast<const float4*>(acc + e + 4);
    const float f[8] = {lo.x * scale, lo.y * scale, lo.z * scale, lo.w * scale,
                        hi.x * scale, hi.y * scale, hi.z * scale, hi.w * scale};
    store8(dq + token * ldq + col, f);
}

// ---- 2. the main kernel ----------------------------------------------------------

template <int D, bool WithDq>
__global__ void __launch_bounds__(kThreads) fa2_backward_kernel(const BwdParams p) {
    using B = Bwd<D>;
    constexpr int R = B::kRows;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    auto* sm = reinterpret_cast<__nv_bfloat16*>(smem_raw);
    __nv_bfloat16* sk = sm + B::kK;
    __nv_bfloat16* sv = sm + B::kV;
    __nv_bfloat16* sds = sm + B::kDs;
    auto* slse = reinterpret_cast<float*>(sm + B::kEnd);  // lse log2 e of the tile's rows (+inf past S)
    float* sdl = slse + R;

    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int g = lane / 4, t = lane % 4;
    const int head = static_cast<int>(blockIdx.x) % p.heads, batch = static_cast<int>(blockIdx.x) / p.heads;
    const int key0 = static_cast<int>(blockIdx.y) * kKeys;
    const int wkey0 = key0 + 16 * warp;  // this warp's keys

    const HeadView<D> hv(p, batch, head);
    const std::int64_t token0 = hv.token0;
    const __nv_bfloat16 *qh = hv.q, *kh = hv.k, *vh = hv.v, *doh = hv.dout;
    const float *lse_h = hv.lse, *dl_h = hv.dl;

    // Causal: rows before this CTA's first key see none of its keys.
    const int first_tile = p.causal ? key0 / R : 0;
    const int tiles = (p.seq + R - 1) / R;

    load_rows<D, kKeys, kThreads>(sk, kh, p.ldk, key0, p.seq);
    load_rows<D, kKeys, kThreads>(sv, vh, p.ldv, key0, p.seq);
    load_rows<D, R, kThreads>(sm + B::kQ, qh, p.ldq, first_tile * R, p.seq);
    load_rows<D, R, kThreads>(sm + B::kDo, doh, p.ldo, first_tile * R, p.seq);
    cp_async_commit();

    float dk[D / 8][4] = {}, dv[D / 8][4] = {};
    for (int it = first_tile; it < tiles; ++it) {
        const int buf = (it - first_tile) & 1;
        const int row0 = it * R;
        const __nv_bfloat16* sq = sm + B::kQ + buf * R * D;
        const __nv_bfloat16* sdo = sm + B::kDo + buf * R * D;
        if (it + 1 < tiles) {
            load_rows<D, R, kThreads>(sm + B::kQ + (buf ^ 1) * R * D, qh, p.ldq, row0 + R, p.seq);
            load_rows<D, R, kThreads>(sm + B::kDo + (buf ^ 1) * R * D, doh, p.ldo, row0 + R, p.seq);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        for (int i = static_cast<int>(threadIdx.x); i < R; i += kThreads) {
            const int row = row0 + i;
            slse[i] = row < p.seq ? lse_h[row] * kLog2e : INFINITY;  // P = 0 for rows past S
            sdl[i] = row < p.seq ? dl_h[row] : 0.0f;
        }
        __syncthreads();

        // S^T = K Q^T and dP^T = V dO^T: the warp's 16 keys x the tile's R rows.
        float st[R / 8][4] = {}, dpt[R / 8][4] = {};
        warp_product_abt<D, R, D>(st, sk, 16 * warp, sq, lane);
        warp_product_abt<D, R, D>(dpt, sv, 16 * warp, sdo, lane);

        // P^T and dS^T, in place of S^T and dP^T.
        const bool masked = key0 + kKeys > p.seq || (p.causal && wkey0 + 15 > row0);
#pragma unroll
        for (int nt = 0; nt < R / 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int col = nt * 8 + 2 * t + (e & 1);
                const int key = wkey0 + g + (e >> 1) * 8;
                float pv = fast_exp2(fmaf(st[nt][e], p.scale_log2, -slse[col]));
                if (masked && (key >= p.seq || (p.causal && key > row0 + col))) pv = 0.0f;
                st[nt][e] = pv;
                dpt[nt][e] = pv * (dpt[nt][e] - sdl[col]);
            }

        // dV += P^T dO and dK += dS^T Q (the A operands from the accumulators, in bf16).
        std::uint32_t pa[R / 16][4], dsa[R / 16][4];
        accumulators_to_a<R>(st, pa);
        accumulators_to_a<R>(dpt, dsa);
        warp_product_ab<R, D, D>(dv, pa, sdo, lane);
        warp_product_ab<R, D, D>(dk, dsa, sq, lane);

        if constexpr (WithDq) {
            // dS^T to shared memory for dQ.
#pragma unroll
            for (int nt = 0; nt < R / 8; ++nt)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    *reinterpret_cast<std::uint32_t*>(sds + swizzled<R>(16 * warp + g + 8 * h, nt * 8 + 2 * t)) =
                        pack_bf16(dpt[nt][2 * h], dpt[nt][2 * h + 1]);
            __syncthreads();

            // dQ_tile = dS K: warp tile 16 rows x 64 columns; dS read transposed from dS^T.
            {
                const int r0 = 16 * (warp % B::kDqRowTiles), c0 = 64 * (warp / B::kDqRowTiles);
                float dq[8][4] = {};
#pragma unroll
                for (int kk = 0; kk < kKeys / 16; ++kk) {
                    std::uint32_t a[4];
                    ldmatrix_x4_trans(a, smem_addr(sds + swizzled<R>(kk * 16 + (lane & 7) + ((lane >> 4) & 1) * 8,
                                                                     r0 + ((lane >> 3) & 1) * 8)));
#pragma unroll
                    for (int dp = 0; dp < 4; ++dp) {
                        std::uint32_t b[4];
                        ldmatrix_x4_trans(b, smem_addr(sk + swizzled<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                                        c0 + dp * 16 + (lane >> 4) * 8)));
                        mma_bf16(dq[2 * dp], a, b[0], b[1]);
                        mma_bf16(dq[2 * dp + 1], a, b[2], b[3]);
                    }
                }
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = row0 + r0 + g + 8 * h;
                    if (row >= p.seq) continue;
                    float* acc = p.dq_acc + ((token0 + row) * p.heads + head) * D + c0;
                    // A thread's two neighbouring columns in one 8-byte reduction
                    // (sm_90's vector atomicAdd, RED.E.ADD.F32x2 in SASS): half
                    // the reductions that two scalar adds would send to the L2.
#pragma unroll
                    for (int nt = 0; nt < 8; ++nt)
                        atomicAdd(reinterpret_cast<float2*>(acc + nt * 8 + 2 * t),
                                  make_float2(dq[nt][2 * h], dq[nt][2 * h + 1]));
                }
            }
        }  // WithDq
        __syncthreads();  // dS^T, lse, Dl and this tile's buffers are refilled next
    }

    // dK = scale dS^T Q and dV, rounded to bf16, for the warp's keys inside the sequence.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int key = wkey0 + g + 8 * h;
        if (key >= p.seq) continue;
        __nv_bfloat16* dkr = p.dk + (token0 + key) * p.ldk + head * D;
        __nv_bfloat16* dvr = p.dv + (token0 + key) * p.ldv + head * D;
#pragma unroll
        for (int nt = 0; nt < D / 8; ++nt) {
            const int d = nt * 8 + 2 * t;
            *reinterpret_cast<std::uint32_t*>(dkr + d) = pack_bf16(dk[nt][2 * h] * p.scale, dk[nt][2 * h + 1] * p.scale);
            *reinterpret_cast<std::uint32_t*>(dvr + d) = pack_bf16(dv[nt][2 * h], dv[nt][2 * h + 1]);
        }
    }
}

// ---- 4. the deterministic mode's dQ pass --------------------------------------------

constexpr int kDqRows = 64;  // query rows per CTA: 16 per warp

template <int D>
constexpr int dq_smem_bytes() {
    return (2 * kDqRows + 4 * kKeys) * D * 2;  // Q and dO, then K and V for two stages
}

template <int D>
__global__ void __launch_bounds__(kThreads) fa2_backward_dq_kernel(const BwdParams p) {
    extern __shared__ __align__(128) unsigned char smem[];
    auto* sq = reinterpret_cast<__nv_bfloat16*>(smem);
    __nv_bfloat16* sdo = sq + kDqRows * D;
    __nv_bfloat16* sk = sdo + kDqRows * D;  // stage s at sk + s * kKeys * D
    __nv_bfloat16* sv = sk + 2 * kKeys * D;

    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int g = lane / 4, t = lane % 4;
    const int head = static_cast<int>(blockIdx.x) % p.heads, batch = static_cast<int>(blockIdx.x) / p.heads;
    const int row0 = static_cast<int>(blockIdx.y) * kDqRows;
    const int warp_row0 = row0 + 16 * warp;
    const int key_end = p.causal ? min(p.seq, row0 + kDqRows) : p.seq;  // keys any row of the CTA sees
    const int key_tiles = (key_end + kKeys - 1) / kKeys;

    const HeadView<D> hv(p, batch, head);
    const std::int64_t token0 = hv.token0;
    const __nv_bfloat16 *qh = hv.q, *kh = hv.k, *vh = hv.v, *doh = hv.dout;
    const float *lse_h = hv.lse, *dl_h = hv.dl;

    load_rows<D, kDqRows, kThreads>(sq, qh, p.ldq, row0, p.seq);
    load_rows<D, kDqRows, kThreads>(sdo, doh, p.ldo, row0, p.seq);
    load_rows<D, kKeys, kThreads>(sk, kh, p.ldk, 0, p.seq);
    load_rows<D, kKeys, kThreads>(sv, vh, p.ldv, 0, p.seq);
    cp_async_commit();

    // This thread's two rows (g and g + 8 of the warp's 16): lse in the log2
    // domain (+inf past S: P = 0 there) and Dl.
    float lse_r[2], dl_r[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = warp_row0 + g + 8 * h;
        lse_r[h] = row < p.seq ? lse_h[row] * kLog2e : INFINITY;
        dl_r[h] = row < p.seq ? dl_h[row] : 0.0f;
    }

    float dq[D / 8][4] = {};
    for (int j = 0; j < key_tiles; ++j) {
        const int stage = j & 1;
        kv_ring_step<D, kKeys, kThreads>(sk, sv, kh, p.ldk, vh, p.ldv, j, key_tiles, p.seq);
        __syncthreads();
        const __nv_bfloat16* kt = sk + stage * kKeys * D;
        const __nv_bfloat16* vt = sv + stage * kKeys * D;
        const int key0 = j * kKeys;

        // S = Q K^T and dP = dO V^T: the warp's 16 rows x the tile's 64 keys.
        float s[kKeys / 8][4] = {}, dp[kKeys / 8][4] = {};
        warp_product_abt<D, kKeys, D>(s, sq, 16 * warp, kt, lane);
        warp_product_abt<D, kKeys, D>(dp, sdo, 16 * warp, vt, lane);

        // P and dS = P (dP - Dl), in place of dP; as the main kernel computes them.
        const bool masked = key0 + kKeys > p.seq || (p.causal && key0 + kKeys - 1 > warp_row0);
#pragma unroll
        for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = key0 + nt * 8 + 2 * t + (e & 1);
                const int h = e >> 1;
                float pv = fast_exp2(fmaf(s[nt][e], p.scale_log2, -lse_r[h]));
                if (masked && (key >= p.seq || (p.causal && key > warp_row0 + g + 8 * h))) pv = 0.0f;
                dp[nt][e] = pv * (dp[nt][e] - dl_r[h]);
            }

        // dQ += dS K: dS's accumulators as A fragments, K read as a keys x D tile.
        std::uint32_t dsa[kKeys / 16][4];
        accumulators_to_a<kKeys>(dp, dsa);
        warp_product_ab<kKeys, D, D>(dq, dsa, kt, lane);
        __syncthreads();  // every warp is done with this stage before it is refilled
    }

    // dQ = scale x the sum, rounded to bf16, for the warp's rows inside the sequence.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = warp_row0 + g + 8 * h;
        if (row >= p.seq) continue;
        __nv_bfloat16* dqr = p.dq + (token0 + row) * p.ldq + head * D;
#pragma unroll
        for (int nt = 0; nt < D / 8; ++nt)
            *reinterpret_cast<std::uint32_t*>(dqr + nt * 8 + 2 * t) =
                pack_bf16(dq[nt][2 * h] * p.scale, dq[nt][2 * h + 1] * p.scale);
    }
}

template <int D>
void launch(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
            cudaStream_t stream) {
    backward_prepare(d, a, dq_acc, dl, !d.deterministic, stream);
    constexpr int bytes = Bwd<D>::kBytes;
    const BwdParams p{.q = static_cast<const __nv_bfloat16*>(a.q),
                      .k = static_cast<const __nv_bfloat16*>(a.k),
                      .v = static_cast<const __nv_bfloat16*>(a.v),
                      .dout = static_cast<const __nv_bfloat16*>(a.dout),
                      .lse = a.lse,
                      .dl = dl,
                      .dq_acc = dq_acc,
                      .dq = static_cast<__nv_bfloat16*>(a.dq),
                      .dk = static_cast<__nv_bfloat16*>(a.dk),
                      .dv = static_cast<__nv_bfloat16*>(a.dv),
                      .ldq = d.ldq,
                      .ldk = d.ldk,
                      .ldv = d.ldv,
                      .ldo = d.ldo,
                      .seq = static_cast<int>(d.seq),
                      .heads = static_cast<int>(d.heads),
                      .scale = d.scale,
                      .scale_log2 = d.scale * kLog2e,
                      .causal = d.causal};
    const dim3 grid(static_cast<unsigned>(d.batch * d.heads), static_cast<unsigned>((d.seq + kKeys - 1) / kKeys));
    if (d.deterministic) {
        allow_dynamic_smem<fa2_backward_kernel<D, false>>(bytes);
        fa2_backward_kernel<D, false><<<grid, kThreads, bytes, stream>>>(p);
        RIGEL_CUDA_CHECK_LAUNCH();
        constexpr int dq_bytes = dq_smem_bytes<D>();
        allow_dynamic_smem<fa2_backward_dq_kernel<D>>(dq_bytes);
        const dim3 dq_grid(static_cast<unsigned>(d.batch * d.heads),
                           static_cast<unsigned>((d.seq + kDqRows - 1) / kDqRows));
        fa2_backward_dq_kernel<D><<<dq_grid, kThreads, dq_bytes, stream>>>(p);
        RIGEL_CUDA_CHECK_LAUNCH();
        return;
    }
    allow_dynamic_smem<fa2_backward_kernel<D, true>>(bytes);
    fa2_backward_kernel<D, true><<<grid, kThreads, bytes, stream>>>(p);
    RIGEL_CUDA_CHECK_LAUNCH();
    backward_store_dq(d, a, dq_acc, stream);
}

}  // namespace

void backward_prepare(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc,
                      float* dl, bool zero_dq, cudaStream_t stream) {
    const std::int64_t rows = d.batch * d.seq * d.heads;
    const unsigned blocks = static_cast<unsigned>((rows * (d.head_dim / 8) + 255) / 256);
    const auto* o = static_cast<const __nv_bfloat16*>(a.o);
    const auto* dout = static_cast<const __nv_bfloat16*>(a.dout);
    const int seq = static_cast<int>(d.seq), heads = static_cast<int>(d.heads);
    float* zero = zero_dq ? dq_acc : nullptr;
    if (d.head_dim == 64)
        dot_rows_kernel<64><<<blocks, 256, 0, stream>>>(o, dout, d.ldo, seq, heads, rows, dl, zero);
    else
        dot_rows_kernel<128><<<blocks, 256, 0, stream>>>(o, dout, d.ldo, seq, heads, rows, dl, zero);
    RIGEL_CUDA_CHECK_LAUNCH();
}

void backward_store_dq(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a,
                       const float* dq_acc, cudaStream_t stream) {
    const int width = static_cast<int>(d.heads * d.head_dim);
    const std::int64_t octets = d.batch * d.seq * d.heads * d.head_dim / 8;
    dq_store_kernel<<<static_cast<unsigned>((octets + 255) / 256), 256, 0, stream>>>(
        dq_acc, static_cast<__nv_bfloat16*>(a.dq), d.ldq, width, octets, d.scale);
    RIGEL_CUDA_CHECK_LAUNCH();
}

void fa2_backward(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
                  cudaStream_t stream) {
    if (d.head_dim == 64)
        launch<64>(d, a, dq_acc, dl, stream);
    else
        launch<128>(d, a, dq_acc, dl, stream);
}

}  // namespace rigel::cuda::attention
