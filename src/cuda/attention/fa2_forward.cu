// Attention rung 2: the fused forward pass on mma.sync (the FlashAttention-2
// design). What it adds over the decomposed path: the S x S scores never leave
// the SM. A CTA owns 128 query rows of one head and streams that head's keys
// and values through shared memory in tiles of 64; each warp keeps its rows'
// scores, running maxima, running sums and output accumulators in registers,
// and rescales the accumulators when a row's maximum grows (the online
// softmax). Memory traffic is Q, K, V read and O written, once per CTA.
//
// Per key tile, each warp (its m16 tiles of rows):
//   S  = Q K^T          mma.m16n8k16, A = Q from shared memory (ldmatrix),
//                       B = K rows as stored ([key][d] is the "col" operand)
//   mask                keys past S, and keys after the query when causal
//   m' = max(m, rowmax S), P = 2^(S scale log2e - m'), l = l 2^(m - m') + rowsum P
//   O  = O 2^(m - m') + P V   P's accumulator fragments are the A fragments of
//                       the next product (two n8 tiles make one k16 tile),
//                       rounded to bf16; B = V through ldmatrix.trans
// then O / l in bf16 and lse = (m + log2 l) ln 2, in natural units of the
// scaled scores.
//
// Shared memory: Q (128 x D), and two stages each of K and V (64 x D), bf16.
// Rows are stored with their 16-byte chunks XOR-swizzled by the row index
// (chunk c of row r at c ^ (r mod 8)), so the eight row addresses of an
// ldmatrix hit eight different bank groups. Tiles past the sequence's end
// are zero-filled by cp.async with a source size of 0; masked scores are
// -inf, so a zero key never contributes.
//
// Causal CTAs stop at the diagonal; they are numbered heaviest first (the last
// query tile, which reads every key tile, starts first) so the short ones fill
// the tail of the grid.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/attention_kernels.cuh"
#include "cuda/attention/mma_sync_tiles.cuh"
#include "cuda/check.cuh"

namespace rigel::cuda::attention {
namespace {

constexpr int kRows = 128;  // query rows per CTA
constexpr int kKeys = 64;   // keys per K/V tile

// A warp's rows: 2 m16 tiles at D = 64 (4 warps), where each K or V fragment
// read from shared memory then feeds two products; 1 at D = 128 (8 warps),
// where two tiles' accumulators (O alone is 128 registers) would spill.
template <int D>
struct Shape {
    static constexpr int kWarpTiles = D == 64 ? 2 : 1;
    static constexpr int kWarpRows = 16 * kWarpTiles;
    static constexpr int kWarps = kRows / kWarpRows;
    static constexpr int kThreads = 32 * kWarps;
};
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int D>
constexpr int smem_bytes() {
    return (kRows + 4 * kKeys) * D * 2;  // Q, then K and V for two stages
}

struct Params {
    const __nv_bfloat16* q;
    const __nv_bfloat16* k;
    const __nv_bfloat16* v;
    __nv_bfloat16* o;
    float* lse;
    std::int64_t ldq, ldk, ldv, ldo;
    int seq, heads;
    float scale_log2;  // scale * log2(e): scores go straight into exp2
    bool causal;
};

template <int D>
__global__ void __launch_bounds__(Shape<D>::kThreads) fa2_forward_kernel(const Params p) {
    constexpr int kWarpTiles = Shape<D>::kWarpTiles, kWarpRows = Shape<D>::kWarpRows;
    extern __shared__ __align__(128) unsigned char smem[];
    auto* sq = reinterpret_cast<__nv_bfloat16*>(smem);
    __nv_bfloat16* sk = sq + kRows * D;      // stage s at sk + s * kKeys * D
    __nv_bfloat16* sv = sk + 2 * kKeys * D;

    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int g = lane / 4, t = lane % 4;  // an accumulator fragment's row and column pair
    const int head = static_cast<int>(blockIdx.x) % p.heads, batch = static_cast<int>(blockIdx.x) / p.heads;
    const int tiles = static_cast<int>(gridDim.y);
    const int row0 = (p.causal ? tiles - 1 - static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.y)) * kRows;
    const int key_end = p.causal ? min(p.seq, row0 + kRows) : p.seq;  // keys any row of the CTA sees
    const int key_tiles = (key_end + kKeys - 1) / kKeys;

    const std::int64_t token0 = static_cast<std::int64_t>(batch) * p.seq;
    const __nv_bfloat16* qh = p.q + token0 * p.ldq + head * D;
    const __nv_bfloat16* kh = p.k + token0 * p.ldk + head * D;
    const __nv_bfloat16* vh = p.v + token0 * p.ldv + head * D;

    load_rows<D, kRows, Shape<D>::kThreads>(sq, qh, p.ldq, row0, p.seq);
    cp_async_commit();
    load_rows<D, kKeys, Shape<D>::kThreads>(sk, kh, p.ldk, 0, p.seq);
    load_rows<D, kKeys, Shape<D>::kThreads>(sv, vh, p.ldv, 0, p.seq);
    cp_async_commit();

    float o[kWarpTiles][D / 8][4] = {};
    float m[kWarpTiles][2], l[kWarpTiles][2];  // per row (g, g + 8 of each m16 tile): log2-domain max, partial sum
#pragma unroll
    for (int mt = 0; mt < kWarpTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            m[mt][h] = -INFINITY;
            l[mt][h] = 0.0f;
        }
    const int warp_row0 = row0 + warp * kWarpRows;

    for (int j = 0; j < key_tiles; ++j) {
        const int stage = j & 1;
        kv_ring_step<D, kKeys, Shape<D>::kThreads>(sk, sv, kh, p.ldk, vh, p.ldv, j, key_tiles, p.seq);
        __syncthreads();
        const __nv_bfloat16* kt = sk + stage * kKeys * D;
        const __nv_bfloat16* vt = sv + stage * kKeys * D;
        const int key0 = j * kKeys;

        // S = Q K^T for the warp's 32 rows and the tile's 64 keys.
        float s[kWarpTiles][kKeys / 8][4] = {};
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            std::uint32_t a[kWarpTiles][4];
#pragma unroll
            for (int mt = 0; mt < kWarpTiles; ++mt)
                ldmatrix_x4(a[mt], smem_addr(sq + swizzled<D>(warp * kWarpRows + mt * 16 + (lane & 15),
                                                              kk * 16 + (lane >> 4) * 8)));
#pragma unroll
            for (int np = 0; np < kKeys / 16; ++np) {
                std::uint32_t b[4];
                ldmatrix_x4(b, smem_addr(kt + swizzled<D>(np * 16 + (lane & 7) + (lane >> 4) * 8,
                                                          kk * 16 + ((lane >> 3) & 1) * 8)));
#pragma unroll
                for (int mt = 0; mt < kWarpTiles; ++mt) {
                    mma_bf16(s[mt][2 * np], a[mt], b[0], b[1]);
                    mma_bf16(s[mt][2 * np + 1], a[mt], b[2], b[3]);
                }
            }
        }

        // Scale into the log2 domain; mask keys past the end, and after the query when causal.
        const bool masked = key0 + kKeys > p.seq || (p.causal && key0 + kKeys - 1 > warp_row0);
#pragma unroll
        for (int mt = 0; mt < kWarpTiles; ++mt)
#pragma unroll
            for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float x = s[mt][nt][e] * p.scale_log2;
                    if (masked) {
                        const int key = key0 + nt * 8 + 2 * t + (e & 1);
                        const int row = warp_row0 + mt * 16 + g + (e >> 1) * 8;
                        if (key >= p.seq || (p.causal && key > row)) x = -INFINITY;
                    }
                    s[mt][nt][e] = x;
                }

        // Online softmax: the new row maxima (over the quad holding a row), the rescale, P.
#pragma unroll
        for (int mt = 0; mt < kWarpTiles; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = m[mt][h];
#pragma unroll
                for (int nt = 0; nt < kKeys / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                // A row with every key so far masked keeps -inf; subtract 0 then (its P is all 0).
                const float base = mx == -INFINITY ? 0.0f : mx;
                const float rescale = exp2f(m[mt][h] - base);
                m[mt][h] = mx;
                float sum = 0.0f;
#pragma unroll
                for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
                    for (int e = 2 * h; e < 2 * h + 2; ++e) {
                        s[mt][nt][e] = exp2f(s[mt][nt][e] - base);
                        sum += s[mt][nt][e];
                    }
                l[mt][h] = l[mt][h] * rescale + sum;
#pragma unroll
                for (int dt = 0; dt < D / 8; ++dt) {
                    o[mt][dt][2 * h] *= rescale;
                    o[mt][dt][2 * h + 1] *= rescale;
                }
            }

        // O += P V: P's fragments of n8 tiles 2kk and 2kk + 1 are the A fragment of k16 step kk.
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk) {
            std::uint32_t a[kWarpTiles][4];
#pragma unroll
            for (int mt = 0; mt < kWarpTiles; ++mt) {
                a[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                a[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                a[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                a[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; ++dp) {
                std::uint32_t b[4];
                ldmatrix_x4_trans(b, smem_addr(vt + swizzled<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                                dp * 16 + (lane >> 4) * 8)));
#pragma unroll
                for (int mt = 0; mt < kWarpTiles; ++mt) {
                    mma_bf16(o[mt][2 * dp], a[mt], b[0], b[1]);
                    mma_bf16(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
                }
            }
        }
        __syncthreads();  // every warp is done with this stage before it is refilled
    }

    // O / l into the warp's own rows of the Q tile (no other warp reads them), then out in 16-byte rows.
    __nv_bfloat16* staged = sq + warp * kWarpRows * D;
#pragma unroll
    for (int mt = 0; mt < kWarpTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l[mt][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.0f / sum;
            const int r = mt * 16 + g + h * 8;
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt)
                *reinterpret_cast<std::uint32_t*>(staged + swizzled<D>(r, dt * 8 + 2 * t)) =
                    pack_bf16(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
            const int row = warp_row0 + r;
            if (p.lse != nullptr && t == 0 && row < p.seq)
                p.lse[(static_cast<std::int64_t>(batch) * p.heads + head) * p.seq + row] =
                    (m[mt][h] + log2f(sum)) * kLn2;
        }
    __syncwarp();
    __nv_bfloat16* oh = p.o + token0 * p.ldo + head * D;
    constexpr int kChunks = D / 8;
    for (int i = lane; i < kWarpRows * kChunks; i += 32) {
        const int r = i / kChunks, c = i % kChunks;
        const int row = warp_row0 + r;
        if (row < p.seq)
            *reinterpret_cast<uint4*>(oh + static_cast<std::int64_t>(row) * p.ldo + c * 8) =
                *reinterpret_cast<const uint4*>(staged + swizzled<D>(r, c * 8));
    }
}

template <int D>
void launch(const Params& p, int batch, cudaStream_t stream) {
    constexpr int bytes = smem_bytes<D>();
    allow_dynamic_smem<fa2_forward_kernel<D>>(bytes);
    const dim3 grid(static_cast<unsigned>(batch * p.heads), static_cast<unsigned>((p.seq + kRows - 1) / kRows));
    fa2_forward_kernel<D><<<grid, Shape<D>::kThreads, bytes, stream>>>(p);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fa2_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream) {
    const Params p{.q = static_cast<const __nv_bfloat16*>(a.q),
                   .k = static_cast<const __nv_bfloat16*>(a.k),
                   .v = static_cast<const __nv_bfloat16*>(a.v),
                   .o = static_cast<__nv_bfloat16*>(a.o),
                   .lse = a.lse,
                   .ldq = d.ldq,
                   .ldk = d.ldk,
                   .ldv = d.ldv,
                   .ldo = d.ldo,
                   .seq = static_cast<int>(d.seq),
                   .heads = static_cast<int>(d.heads),
                   .scale_log2 = d.scale * kLog2e,
                   .causal = d.causal};
    if (d.head_dim == 64)
        launch<64>(p, static_cast<int>(d.batch), stream);
    else
        launch<128>(p, static_cast<int>(d.batch), stream);
}

}  // namespace rigel::cuda::attention
