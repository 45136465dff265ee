// The ladder's ping-pong rungs (k39, k40): the library's ping-pong kernel
// (pingpong_gemm.cuh) writing the ladder's fp32 C straight from the
// registers, one CTA per SM, tile rows in groups of 8. k40's kernel has a
// narrow tail (G::kTailN > 0): the launch asks gemm/narrow_tail.hpp how many
// of the last tile columns to re-cut, and runs none where no re-cut evens the
// SMs' shares out by gemm::kMinGain.
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

template <class G>
void launch_pingpong_rung(const GemmProblem& p, const char* rung) {
    using Epi = PingPongStoreF32<std::conditional_t<(G::kTailN > 0), PingPongF32NarrowBParams, PingPongF32Params>>;
    constexpr int kSmem = pingpong_smem_bytes<G, Epi>;
    static TensorMapCache maps_a, maps_b, maps_b_tail;
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
    pingpong_kernel<G, Epi><<<grid, G::kThreads, kSmem, stream_of(p)>>>(*l.map_a, *l.map_b, params, l.m, l.n, l.k,
                                                                         l.tiles_m, wide_cols, G::kGroupM);
    RIGEL_CUDA_CHECK_LAUNCH();
}

}  // namespace rigel::cuda::sm90
