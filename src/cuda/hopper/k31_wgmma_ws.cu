// k31_wgmma_ws: warp specialization. The warps that load no longer compute,
// and the warps that compute no longer wait for loads or for each other.
// Kernel: warp_specialized.cuh, Schedule::one_tile_per_cta,
// Accumulation::tensor_core, 128 x 256 x 64 tiles (bf16, f16), 4 stages, one
// producer and 2 consumer warpgroups.
// Run alone: rigel ladder --backend cuda --rungs k31_wgmma_ws --dtype bf16 --sizes 4096
//
// Adds over k30: the CTA is split by role (warp_specialized.cuh). One producer
// warpgroup, of which one thread works, keeps a ring of 4 shared stages filled
// with TMA; two consumer warpgroups issue only wgmma. They meet on mbarriers, a
// "full" and an "empty" per stage, so no CTA-wide __syncthreads remains in the
// main loop: a consumer waits only for the bytes it needs, and the producer only
// for a stage that both consumers have finished reading. setmaxnreg moves the
// registers where they are used: the producer drops to 40 per thread, the
// consumers rise to 232, which pays for a 128 x 256 CTA tile, each consumer
// computing 64 x 256 with m64n256k16 (128 fp32 accumulators per thread).
// Why faster: (1) the tensor cores always have a queued wgmma group, since
// loads run 3-4 k-tiles ahead on their own thread; (2) m64n256 reads 10 KB of
// shared memory per 128 cycles of tensor-core work against k30's 12 KB per
// 128, and the 128 x 256 tile cuts global/L2 traffic per flop by a quarter
// against 128 x 128 (1/128 + 1/256 against 2/128).
// Bottleneck: one CTA per SM (192 KB of stages), so a CTA's prologue and its
// epilogue (128 x 256 fp32 stores) leave that SM's tensor cores idle; tiles
// run in launch order, M fastest, so at 8192^3 a wave of 132 CTAs touches all
// 64 tile rows of A but only 2-3 tile columns of B and rereads A every wave.
// Prediction: 550-650 Tflop/s in bf16 at 8192^3 (80-90 % of cuBLAS), f16 the
// same; weaker on small or ragged shapes (a 128 x 256 tile wastes more).
// Measured: README.md, "4096 x 4096 x 4096" and "Hopper rungs against cuBLAS
// across shapes", rows k31_wgmma_ws.
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/warp_specialized.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K31 = sm90::WarpSpecialized<T, 256, 4, sm90::Schedule::one_tile_per_cta, sm90::Accumulation::tensor_core>;

}  // namespace

void k31_wgmma_ws(const GemmProblem& p) {
    switch (p.type) {
        case DType::bf16: return sm90::launch_warp_specialized<K31<DType::bf16>>(p, "k31_wgmma_ws");
        case DType::f16: return sm90::launch_warp_specialized<K31<DType::f16>>(p, "k31_wgmma_ws");
        default: throw std::invalid_argument("k31_wgmma_ws takes bf16 and f16, not " + std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
