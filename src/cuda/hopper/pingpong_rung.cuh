// The ladder's ping-pong rungs (k39-k43): the library's ping-pong kernel
// (pingpong_gemm.cuh) writing the ladder's fp32 C, straight from the
// registers (PingPongStoreF32) or through shared memory and TMA stores
// (PingPongStoreF32Tma, k43), one CTA per SM, tile rows in groups of 8. k40's
// kernel has a narrow tail (G::kTailN > 0): the launch asks
// gemm/narrow_tail.hpp how many of the last tile columns to re-cut, and runs
// none where no re-cut evens the SMs' shares out by gemm::kMinGain.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/hopper/pingpong_gemm.cuh"
#include "cuda/hopper/rung_launch.cuh"
#include "gemm/narrow_tail.hpp"

namespace rigel::cuda::sm90 {

// The rungs' epilogue parameters: the fp32 C and the narrow tail's column count the kernel reads
// (k39's is 0), and for k40 the B map of kTailN-row boxes its narrow tiles load through (the
// kernel's producer takes it where the params have one), so that a narrow tile's stage brings the
// 104 rows of B it multiplies, not 128.
struct PingPongF32Params {
    float* c;
    int tail_cols;  // columns of narrow tiles after the wide ones (0: none)
};
struct PingPongF32NarrowBParams {
    float* c;
    int tail_cols;
    CUtensorMap map_b_tail;  // B (N x K) in boxes of kTailN rows
};

// This thread's fp32 pairs stored as they are (StoreF32), and the ping-pong kernel's end-of-kernel
// hook: nothing is in flight to wait for.
template <class P>
struct PingPongStoreF32 {
    using Params = P;
    static constexpr int kStagingBytes = 0;
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* /*staging*/) {
        store_accumulators<BN>(acc, p.c, m, n, row0, col0);
    }
    static __device__ __forceinline__ void drain(const Params&) {}
};

// k43's fp32 C through shared memory: each half of a tile (64 rows) goes out in boxes of 64 rows x 32
// floats (128 bytes, the 128B swizzle's span) through p.map_c, two boxes (16 KB, the staging region of
// each consumer) at a time. Each thread writes its accumulator pairs where the swizzle puts them (16-byte
// chunk c of row r at chunk c ^ (r % 8): a warp's 8-byte stores then fill every bank twice, the fewest
// passes 256 bytes take), the warpgroup meets, and one thread hands the boxes to the copy engine, which
// clips them at M and N. Before the staging region is written again, that thread waits until the copy
// engine has read it (wait_group.read), so a half's second pair of boxes waits on its first's read, not
// on its writes. Columns of a narrow tile past its last whole box (a 104-wide tile's last 8) are stored
// from the registers, as are whole launches whose C rows TMA cannot address (N not a multiple of 4:
// p.tma false). Named barriers 2 and 3, the epilogue's in the ping-pong kernel.
template <class P>
struct PingPongStoreF32Tma {
    using Params = P;
    static constexpr int kBoxCols = kRowBytes / 4;          // 32 floats
    static constexpr int kBoxBytes = kWgmmaM * kRowBytes;   // 64 rows x 128 bytes
    static constexpr int kPassBoxes = 2;
    static constexpr int kStagingBytes = kPassBoxes * kBoxBytes;
    static_assert(kStagingBytes % kSwizzleAtom == 0, "staging boxes start on swizzle atoms");

    static __device__ __forceinline__ void prefetch(const Params& p) {
        if (p.tma) prefetch_tensor_map(&p.map_c);
    }

    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging) {
        if (!p.tma) return store_accumulators<BN>(acc, p.c, m, n, row0, col0);
        if (row0 >= m) return;  // the same for the whole warpgroup
        constexpr int kBoxes = BN / kBoxCols;
        constexpr int kPasses = (kBoxes + kPassBoxes - 1) / kPassBoxes;
        const int t = tid_x_here() % kWarpgroup;
        const int warp = t / 32, lane = t % 32, q = lane % 4;
        const bool issuer = t == 0;
        const int barrier = 1 + static_cast<int>(threadIdx.x) / kWarpgroup;
        // Row r = 16 warp + lane / 4 + 8 h of the half: r % 8 = lane / 4 for both h.
        const std::uint32_t x = static_cast<std::uint32_t>(lane / 4);
        const std::uint32_t row_at = smem_u32(staging) + static_cast<std::uint32_t>((16 * warp + lane / 4) * kRowBytes) +
                                     static_cast<std::uint32_t>((q % 2) * 8);
#pragma unroll
        for (int pass = 0; pass < kPasses; ++pass) {
            if (issuer) bulk_wait_read<0>();
            named_barrier_sync<kWarpgroup>(barrier);
#pragma unroll
            for (int bb = 0; bb < kPassBoxes; ++bb) {
                const int b = pass * kPassBoxes + bb;
                if (b >= kBoxes) break;
#pragma unroll
                for (int jj = 0; jj < kBoxCols / 8; ++jj) {  // the box's 8-column groups
                    const int j = 4 * b + jj;
                    const std::uint32_t chunk = (static_cast<std::uint32_t>(2 * jj + q / 2) ^ x) << 4;
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const std::uint32_t at = row_at + static_cast<std::uint32_t>(bb * kBoxBytes + 8 * h * kRowBytes) + chunk;
                        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(at), "f"(acc[4 * j + 2 * h]),
                                     "f"(acc[4 * j + 2 * h + 1])
                                     : "memory");
                    }
                }
            }
            fence_proxy_async_smem();
            named_barrier_sync<kWarpgroup>(barrier);
            if (issuer) {
#pragma unroll
                for (int bb = 0; bb < kPassBoxes; ++bb) {
                    const int b = pass * kPassBoxes + bb;
                    if (b >= kBoxes || col0 + kBoxCols * b >= n) break;  // boxes past N are not stored
                    tma_store_2d(&p.map_c, smem_u32(staging) + static_cast<std::uint32_t>(bb * kBoxBytes),
                                 col0 + kBoxCols * b, row0);
                }
                bulk_commit();
            }
        }
        // A narrow tile's columns past its whole boxes, from the registers.
        if constexpr (BN % kBoxCols != 0) {
            const int rows_left = m - row0;
            const int cols_left = n - col0;
#pragma unroll
            for (int j = kBoxes * kBoxCols / 8; j < BN / 8; ++j) {
                const int col = 8 * j + 2 * q;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = 16 * warp + lane / 4 + 8 * h;
                    if (r >= rows_left) continue;
                    float* const at = p.c + static_cast<std::int64_t>(row0 + r) * n + col0 + col;
                    if (col + 1 < cols_left) {  // N is a multiple of 4 here (p.tma), so the pair is aligned
                        *reinterpret_cast<float2*>(at) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                    } else if (col < cols_left) {
                        at[0] = acc[4 * j + 2 * h];
                    }
                }
            }
        }
    }
    // After the consumer's last tile: the copies have read the staging region before the CTA's shared
    // memory goes away; their writes to C are covered by the grid's completion.
    static __device__ __forceinline__ void drain(const Params& p) {
        if (p.tma && threadIdx.x % kWarpgroup == 0) bulk_wait_read<0>();
    }
};
struct PingPongF32TmaParams {
    float* c;
    int tail_cols;
    CUtensorMap map_b_tail;  // B (N x K) in boxes of kTailN rows
    CUtensorMap map_c;       // C in boxes of 64 rows x 32 floats, 128B swizzle (tma)
    bool tma;                // N a multiple of 4: C's rows are 16-byte multiples, as TMA needs
};

// Store: PingPongStoreF32 (k39-k42) or PingPongStoreF32Tma (k43, whose params always carry the narrow
// tail's B map: its kernels all have a tail).
template <class G, template <class> class Store = PingPongStoreF32>
void launch_pingpong_rung(const GemmProblem& p, const char* rung) {
    constexpr bool kTmaStore = std::is_same_v<Store<PingPongF32TmaParams>, PingPongStoreF32Tma<PingPongF32TmaParams>>;
    static_assert(!kTmaStore || G::kTailN > 0, "k43's params carry the narrow tail's map");
    using Epi = Store<std::conditional_t<
        kTmaStore, PingPongF32TmaParams,
        std::conditional_t<(G::kTailN > 0), PingPongF32NarrowBParams, PingPongF32Params>>>;
    constexpr int kSmem = pingpong_smem_bytes<G, Epi>;
    static TensorMapCache maps_a, maps_b, maps_b_tail, maps_c;
    static const int sms = [] {
        RIGEL_CUDA_CHECK(
            cudaFuncSetAttribute(pingpong_kernel<G, Epi>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
        return sm_count();
    }();
    const RungLaunch l = prepare_rung_launch<G>(p, maps_a, maps_b, sms, rung);
    int wide_cols = l.tiles_n, tail_cols = 0;
    if constexpr (G::kTailN > 0) {
        // The plan of the last shape, kept: the ladder's timed calls repeat one shape.
        static struct {
            int tiles_m = -1, n = -1;
            ::rigel::gemm::NarrowTail tail;
        } planned;
        if (planned.tiles_m != l.tiles_m || planned.n != l.n)
            planned = {l.tiles_m, l.n, ::rigel::gemm::plan_narrow_tail(l.tiles_m, l.n, G::kBN, G::kTailN, sms)};
        wide_cols = planned.tail.wide_cols;
        tail_cols = planned.tail.narrow_cols;
    }
    const std::int64_t tiles = static_cast<std::int64_t>(l.tiles_m) * (wide_cols + tail_cols);
    const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(tiles, sms));
    typename Epi::Params params{};
    params.c = static_cast<float*>(p.c);
    params.tail_cols = tail_cols;
    if constexpr (G::kTailN > 0) params.map_b_tail = maps_b_tail.get(p.b, G::kType, p.n, p.k, G::kTailN);
    if constexpr (kTmaStore) {
        params.tma = p.n % 4 == 0 && reinterpret_cast<std::uintptr_t>(p.c) % 16 == 0;
        if (params.tma) params.map_c = maps_c.get(p.c, DType::f32, p.m, p.n, p.n, kWgmmaM);
    }
    pingpong_kernel<G, Epi><<<grid, G::kThreads, kSmem, stream_of(p)>>>(*l.map_a, *l.map_b, params, l.m, l.n, l.k,
                                                                         l.tiles_m, wide_cols, G::kGroupM);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda::sm90
