// The ladder's ping-pong rungs (k39-k44): the library's ping-pong kernel
// (pingpong_gemm.cuh) writing the ladder's fp32 C, straight from the
// registers (PingPongStoreF32) or through shared memory and TMA stores
// (PingPongTmaStore, k43 and k44), one CTA per SM, tile rows in groups of 8. k40's
// kernel has a narrow tail (G::kTailN > 0): the launch asks
// gemm/narrow_tail.hpp how many of the last tile columns to re-cut, and runs
// none where no re-cut evens the SMs' shares out by gemm::kMinGain.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/hopper/pingpong_gemm.cuh"
#include "cuda/hopper/rung_launch.cuh"
#include "cuda/hopper/tma_store_f32.cuh"
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

struct PingPongF32TmaParams {
    float* c;
    int tail_cols;
    CUtensorMap map_b_tail;  // B (N x K) in boxes of kTailN rows
    CUtensorMap map_c;       // C in boxes of 64 rows x 32 floats, 128B swizzle (tma)
    bool tma;                // N a multiple of 4: C's rows are 16-byte multiples, as TMA needs
};
// The same for a kernel without a narrow tail (k44's 128 x 192 tiles): no B map of narrow boxes, which
// the kernel's producer would otherwise take for its narrow tiles.
struct PingPongF32TmaWideParams {
    float* c;
    int tail_cols;
    CUtensorMap map_c;
    bool tma;
};

// k43's fp32 C through shared memory and TMA stores (tma_store_f32.cuh), or, where C's rows are no
// multiple of 16 bytes (N not a multiple of 4: p.tma false), k42's stores from the registers. P: the
// params above, with the narrow tail's B map where the kernel has a tail (PingPongTmaStore<G>).
template <class P>
struct PingPongStoreF32TmaOf {
    using Params = P;
    static constexpr bool kTmaStore = true;
    static constexpr int kStagingBytes = kF32StagingBytes;
    static __device__ __forceinline__ void prefetch(const Params& p) {
        if (p.tma) prefetch_tensor_map(&p.map_c);
    }
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging) {
        if (!p.tma) return store_accumulators<BN>(acc, p.c, m, n, row0, col0);
        if (row0 >= m) return;  // the same for the whole warpgroup
        store_f32_tma<BN>(&p.map_c, acc, 1.0f, p.c, n, m, n, row0, col0, staging,
                          1 + static_cast<int>(threadIdx.x) / kWarpgroup);
    }
    static __device__ __forceinline__ void drain(const Params& p) {
        if (p.tma) store_f32_tma_drain();
    }
};

// k39-k42's store: from the registers, with the narrow tail's B map where the kernel has a tail.
template <class G>
using PingPongRegisterStore =
    PingPongStoreF32<std::conditional_t<(G::kTailN > 0), PingPongF32NarrowBParams, PingPongF32Params>>;
// k43's and k44's: through TMA stores, likewise.
template <class G>
using PingPongTmaStore =
    PingPongStoreF32TmaOf<std::conditional_t<(G::kTailN > 0), PingPongF32TmaParams, PingPongF32TmaWideParams>>;

// Epi: PingPongRegisterStore<G> (k39-k42) or PingPongTmaStore<G> (k43, k44).
template <class G, class Epi = PingPongRegisterStore<G>>
void launch_pingpong_rung(const GemmProblem& p, const char* rung) {
    constexpr bool kTmaStore = requires { Epi::kTmaStore; };
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

// k43's kernels (and k44's where it keeps 128 x 128 tiles): k42's with one ring stage fewer, the two
// 16 KB staging regions taking its 32 KB.
template <DType T>
struct TmaStoreTail {
    template <int TailN>
    using Kernel = PingPong<T, 6, Major::k, Major::k, 1, false, 128, 128, TailN>;
};

// k42's and k43's launch: the narrow tail's width chosen per shape by gemm::plan_tail_fit (104 or 64
// columns, whichever leaves the busiest SM the least work), each width its own kernel, Kernel<width>; the
// choice for the last shape kept (the ladder's timed calls repeat one shape). Each kernel's launch plans
// its own width's tail again (launch_pingpong_rung): the same plan.
// TmaStore: k43's PingPongTmaStore, else the registers' stores.
template <template <int> class Kernel, bool TmaStore = false>
void launch_tail_fit_rung(const GemmProblem& p, const char* rung) {
    const auto launch = [&]<int Width>() {
        using G = Kernel<Width>;
        launch_pingpong_rung<G, std::conditional_t<TmaStore, PingPongTmaStore<G>, PingPongRegisterStore<G>>>(p, rung);
    };
    static const int sms = sm_count();
    static struct {
        std::int64_t m = -1, n = -1;
        int narrow_bn = ::rigel::gemm::kTailTileN;
    } chosen;
    if (chosen.m != p.m || chosen.n != p.n)
        chosen = {p.m, p.n,
                  p.m > 0 && p.n > 0 ? ::rigel::gemm::plan_tail_fit(ceil_div(p.m, 128), p.n, 128, sms).narrow_bn
                                     : ::rigel::gemm::kTailTileN};
    if (chosen.narrow_bn == 64) return launch.template operator()<64>();
    launch.template operator()<::rigel::gemm::kTailTileN>();
}

}  // namespace rigel::cuda::sm90
