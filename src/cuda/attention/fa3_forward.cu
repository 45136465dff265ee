// Attention rung 3: the fused forward pass on wgmma and TMA, warp-specialized
// (the FlashAttention-3 design, without its two overlaps yet). What it adds
// over rung 2 (fa2, mma.sync): the products run on Hopper's warpgroup
// instructions, which rung 2's mma.sync cannot reach (the probes measured
// wgmma at about twice mma.sync's rate), and the tiles arrive by TMA, so no
// thread spends instructions on loads.
//
// A CTA owns 128 query rows of one head: three warpgroups.
//   producer (warpgroup 0, one thread): Q once, then K and V tiles of 128 keys
//     into a two-stage ring, each tile announced on its own mbarrier (K and V
//     separately, so S = Q K^T starts while V is still arriving) and refilled
//     when both consumers have released it.
//   consumers (warpgroups 1 and 2, 64 rows each), per key tile:
//     S = Q K^T       wgmma m64n128k16, A = Q and B = K both K-major in shared memory
//     mask, online softmax in registers (as rung 2: P = 2^(S scale log2e - m'))
//     O = O 2^(m - m') + P V   wgmma m64nDk16 with A = P from registers (the
//                     accumulator layout of two n8 columns is the A fragment of
//                     one k16 step), B = V N-major (imm-trans-b)
//   then O / l and lse, stored from the registers.
//
// Shared memory, all 128B-swizzled as TMA writes it: Q as D/64 boxes of
// 128 rows x 64 columns; each K stage as D/64 boxes of 128 keys x 64 columns
// (K-major, like Q); each V stage as D/64 boxes of 128 keys x 64 columns,
// which wgmma reads as an N-major B: the next 64 of N is one box further on
// (LBO), 8 keys are 1024 bytes (SBO), a k16 step is 16 key rows further on.
// The tensor maps are 3-dimensional (column, token, batch), so rows past a
// sequence's end are zero-filled by TMA rather than read from the next batch.
//
// Not yet here (FA3's remaining two steps): ping-pong scheduling of the two
// consumers (one's softmax under the other's products), and overlap of the
// softmax with the next tile's S = Q K^T inside a warpgroup.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/attention/attention_kernels.cuh"
#include "cuda/check.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/wgmma.cuh"

namespace rigel::cuda::attention {
namespace {

using namespace rigel::cuda::sm90;

constexpr int kRows = 128;       // query rows per CTA
constexpr int kKeys = 128;       // keys per K/V tile
constexpr int kStages = 2;
constexpr int kThreads = 3 * kWarpgroup;
constexpr int kBoxCols = 64;     // bf16 columns per 128-byte swizzled row
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int D>
struct Layout {
    static constexpr int kBoxes = D / kBoxCols;
    static constexpr int kQBox = kRows * kRowBytes;   // bytes of one Q box
    static constexpr int kKvBox = kKeys * kRowBytes;  // bytes of one K or V box
    static constexpr int kQ = 0;
    static constexpr int kK = kQ + kBoxes * kQBox;
    static constexpr int kV = kK + kStages * kBoxes * kKvBox;
    static constexpr int kBarriers = kV + kStages * kBoxes * kKvBox;
    static constexpr int kBytes = kBarriers + 64 + kSwizzleAtom;  // barriers, and room to align the base
};

struct Params {
    __nv_bfloat16* o;
    float* lse;
    std::int64_t ldo;
    int seq, heads;
    float scale_log2;
    bool causal;
};

__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int col, int row,
                                            int batch) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_u32(dst)),
        "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(batch), "r"(smem_u32(bar))
        : "memory");
}

__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
}

template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    fa3_forward_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                       const __grid_constant__ CUtensorMap map_v, const Params p) {
#if RIGEL_SM90A_DEVICE
    using L = Layout<D>;
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = align_to_atom(smem_raw);
    auto* bars = reinterpret_cast<std::uint64_t*>(smem + L::kBarriers);
    std::uint64_t* q_full = bars;
    std::uint64_t* k_full = bars + 1;              // [kStages]
    std::uint64_t* v_full = k_full + kStages;      // [kStages]
    std::uint64_t* k_empty = v_full + kStages;     // [kStages]
    std::uint64_t* v_empty = k_empty + kStages;    // [kStages]

    const int wg = static_cast<int>(threadIdx.x) / kWarpgroup;
    const int head = static_cast<int>(blockIdx.x) % p.heads, batch = static_cast<int>(blockIdx.x) / p.heads;
    const int tiles = static_cast<int>(gridDim.y);
    const int row0 = (p.causal ? tiles - 1 - static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.y)) * kRows;
    const int key_end = p.causal ? min(p.seq, row0 + kRows) : p.seq;
    const int key_tiles = (key_end + kKeys - 1) / kKeys;

    if (threadIdx.x == 0) {
        mbar_init(q_full, 1);
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&k_full[s], 1);
            mbar_init(&v_full[s], 1);
            mbar_init(&k_empty[s], 2);  // one arrival per consumer warpgroup
            mbar_init(&v_empty[s], 2);
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    if (wg == 0) {
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) {
            const int col0 = head * D;
            mbar_arrive_expect_tx(q_full, L::kBoxes * L::kQBox);
            for (int b = 0; b < L::kBoxes; ++b)
                tma_load_3d(smem + L::kQ + b * L::kQBox, &map_q, q_full, col0 + b * kBoxCols, row0, batch);
            for (int j = 0; j < key_tiles; ++j) {
                const int s = j % kStages;
                const std::uint32_t free_parity = ((j / kStages) & 1) ^ 1;
                mbar_wait(&k_empty[s], free_parity);
                mbar_arrive_expect_tx(&k_full[s], L::kBoxes * L::kKvBox);
                for (int b = 0; b < L::kBoxes; ++b)
                    tma_load_3d(smem + L::kK + (s * L::kBoxes + b) * L::kKvBox, &map_k, &k_full[s],
                                col0 + b * kBoxCols, j * kKeys, batch);
                mbar_wait(&v_empty[s], free_parity);
                mbar_arrive_expect_tx(&v_full[s], L::kBoxes * L::kKvBox);
                for (int b = 0; b < L::kBoxes; ++b)
                    tma_load_3d(smem + L::kV + (s * L::kBoxes + b) * L::kKvBox, &map_v, &v_full[s],
                                col0 + b * kBoxCols, j * kKeys, batch);
            }
        }
        return;
    }

    setmaxnreg_inc<240>();
    const int c = wg - 1;  // consumer: rows row0 + 64 c ...
    const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
    const int warp = t / 32, lane = t % 32;
    const int g = lane / 4, q4 = lane % 4;
    const int wg_row0 = row0 + c * kWgmmaM;
    const int my_row = wg_row0 + 16 * warp + g;  // and my_row + 8

    float o[D / 2] = {};
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    mbar_wait(q_full, 0);
    for (int j = 0; j < key_tiles; ++j) {
        const int s = j % kStages;
        const std::uint32_t parity = (j / kStages) & 1;
        const int key0 = j * kKeys;

        // S = Q K^T over D / 16 k-steps, 4 per 64-column box.
        float sc[kKeys / 2];
        mbar_wait(&k_full[s], parity);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int b = kk / 4, step = kk % 4;
            const std::uint64_t dq =
                desc_k_step(sw128_kmajor_desc(smem + L::kQ + b * L::kQBox + c * kWgmmaM * kRowBytes), step);
            const std::uint64_t dk =
                desc_k_step(sw128_kmajor_desc(smem + L::kK + (s * L::kBoxes + b) * L::kKvBox), step);
            Wgmma<DType::bf16, kKeys>::mma(sc, dq, dk, kk > 0 ? 1u : 0u);
        }
        wgmma_commit();
        wgmma_wait<0>();
        fence_registers(sc);
        if (t == 0) mbar_arrive(&k_empty[s]);

        // Scale, mask, and the online softmax of this thread's two rows.
        const bool masked = key0 + kKeys > p.seq || (p.causal && key0 + kKeys - 1 > wg_row0);
#pragma unroll
        for (int i = 0; i < kKeys / 2; ++i) {
            float x = sc[i] * p.scale_log2;
            if (masked) {
                const int key = key0 + 8 * (i / 4) + 2 * q4 + (i % 2);
                const int row = my_row + 8 * ((i / 2) % 2);
                if (key >= p.seq || (p.causal && key > row)) x = -INFINITY;
            }
            sc[i] = x;
        }
        float rescale[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[h];
#pragma unroll
            for (int n8 = 0; n8 < kKeys / 8; ++n8) mx = fmaxf(mx, fmaxf(sc[4 * n8 + 2 * h], sc[4 * n8 + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx;
            rescale[h] = exp2f(m[h] - base);
            m[h] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int n8 = 0; n8 < kKeys / 8; ++n8)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float& x = sc[4 * n8 + 2 * h + e];
                    x = exp2f(x - base);
                    sum += x;
                }
            l[h] = l[h] * rescale[h] + sum;
        }
#pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] *= rescale[(i / 2) % 2];

        // P in bf16, as the A fragments of the k16 steps of P V.
        std::uint32_t pa[kKeys / 16][4];
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk) {
            pa[kk][0] = pack_bf16(sc[8 * kk + 0], sc[8 * kk + 1]);
            pa[kk][1] = pack_bf16(sc[8 * kk + 2], sc[8 * kk + 3]);
            pa[kk][2] = pack_bf16(sc[8 * kk + 4], sc[8 * kk + 5]);
            pa[kk][3] = pack_bf16(sc[8 * kk + 6], sc[8 * kk + 7]);
        }

        // O += P V, V N-major: 64 columns of D per box (LBO), 16 keys per k-step.
        mbar_wait(&v_full[s], parity);
        const std::uint64_t dv = SmemDescriptor{.start_address = smem_u32(smem + L::kV + s * L::kBoxes * L::kKvBox),
                                                .leading_byte_offset = static_cast<std::uint32_t>(L::kKvBox),
                                                .stride_byte_offset = kSwizzleAtom,
                                                .swizzle = Swizzle::b128}
                                     .encode();
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk)
            WgmmaRS<DType::bf16, D>::template mma<1>(o, pa[kk], desc_advance(dv, kk * 16 * kRowBytes), 1u);
        wgmma_commit();
        wgmma_wait<0>();
        fence_registers(o);
        if (t == 0) mbar_arrive(&v_empty[s]);
    }

    // O / l in bf16 and lse, straight from the registers (4-byte stores).
    __nv_bfloat16* oh = p.o + static_cast<std::int64_t>(batch) * p.seq * p.ldo + head * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float sum = l[h];
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
            p.lse[(static_cast<std::int64_t>(batch) * p.heads + head) * p.seq + row] = (m[h] + log2f(sum)) * kLn2;
    }
#else
    trap_without_sm90a("fa3 attention");
#endif
}

// A token-major tensor as TMA sees it: (column, token, batch), boxes of 64
// columns x `rows` tokens, 128B swizzle, zeros past a sequence's end.
CUtensorMap token_map(const void* base, const rigel::attention::Desc& d, std::int64_t ld, int rows) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d.heads * d.head_dim), static_cast<cuuint64_t>(d.seq),
                                static_cast<cuuint64_t>(d.batch)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * 2, static_cast<cuuint64_t>(d.seq * ld) * 2};
    const cuuint32_t box[3] = {kBoxCols, static_cast<cuuint32_t>(rows), 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(base), dims,
                                            strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                 ") for an attention operand of " + rigel::attention::shape_text(d));
    return map;
}

template <int D>
void launch(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream) {
    constexpr int bytes = Layout<D>::kBytes;
    static const bool configured = [] {
        RIGEL_CUDA_CHECK(cudaFuncSetAttribute(fa3_forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
        return true;
    }();
    (void)configured;
    const Params p{.o = static_cast<__nv_bfloat16*>(a.o),
                   .lse = a.lse,
                   .ldo = d.ldo,
                   .seq = static_cast<int>(d.seq),
                   .heads = static_cast<int>(d.heads),
                   .scale_log2 = d.scale * kLog2e,
                   .causal = d.causal};
    const dim3 grid(static_cast<unsigned>(d.batch * d.heads), static_cast<unsigned>((d.seq + kRows - 1) / kRows));
    fa3_forward_kernel<D><<<grid, kThreads, bytes, stream>>>(token_map(a.q, d, d.ldq, kRows), token_map(a.k, d, d.ldk, kKeys),
                                                            token_map(a.v, d, d.ldv, kKeys), p);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fa3_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream) {
    if (d.head_dim == 64)
        launch<64>(d, a, stream);
    else
        launch<128>(d, a, stream);
}

}  // namespace rigel::cuda::attention
